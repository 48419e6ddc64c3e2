package examples

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// TestREADMESnippetsBuild extracts every Go block of the README; each must
// be a complete program, which go vet (and so the compiler) must accept.
func TestREADMESnippetsBuild(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatch(readme, -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d Go blocks in README.md, want at least the Use, VM and metrics snippets", len(blocks))
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the README's snippets: %v", err)
	}
	// Inside the module, so that the snippets import this checkout of
	// pvlock; a directory starting with "." is outside ./... patterns.
	tmp, err := os.MkdirTemp(".", ".readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	var dirs []string
	for i, b := range blocks {
		src := string(b[1])
		if !strings.HasPrefix(src, "package main\n") {
			t.Errorf("README Go block %d is not a complete program (package main):\n%s", i+1, src)
			continue
		}
		dir := filepath.Join(tmp, fmt.Sprintf("block%d", i+1))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), b[1], 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, "./"+filepath.ToSlash(dir))
	}
	// One go vet for all blocks (it compiles them); its messages name the
	// block's directory, block<N>, N counting the README's Go blocks.
	if out, err := exec.Command(goTool, append([]string{"vet"}, dirs...)...).CombinedOutput(); err != nil {
		t.Errorf("README Go blocks do not build: %v\n%s", err, out)
	}
	if out, err := exec.Command(filepath.Join(filepath.Dir(goTool), "gofmt"), "-l", tmp).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("README Go blocks not gofmt-formatted: %v\n%s", err, out)
	}
}
