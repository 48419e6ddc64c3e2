package linuxonly

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Off Linux, every lock and runtime package imports this package, which
// has no files there: the go command fails while loading the packages
// with one clear message, before the compiler could list undefined
// system calls. (go list only loads: it is fast on a busy machine.)
func TestOtherSystemsFailClearly(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	const self = "github.com/pvlock/pvlock/internal/linuxonly"
	for _, goos := range []string{"darwin", "windows"} {
		cmd := exec.Command(goTool, "list", "-e", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}} gofiles={{len .GoFiles}}",
			"github.com/pvlock/pvlock/ticket", "github.com/pvlock/pvlock/qspin",
			"github.com/pvlock/pvlock/kick", "github.com/pvlock/pvlock/pvlock")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("GOOS=%s go list: %v\n%s", goos, err, out)
		}
		imports := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			pkg, rest, _ := strings.Cut(line, " ")
			imports[pkg] = rest
		}
		for _, pkg := range []string{"ticket", "qspin", "kick", "pvlock"} {
			if !strings.Contains(" "+imports["github.com/pvlock/pvlock/"+pkg]+" ", " "+self+" ") {
				t.Errorf("GOOS=%s: %s does not import %s", goos, pkg, self)
			}
		}
		// No Go files: "build constraints exclude all Go files in ...".
		if !strings.HasSuffix(imports[self], "gofiles=0") {
			t.Errorf("GOOS=%s: %s has Go files there: %q", goos, self, imports[self])
		}
	}
}
