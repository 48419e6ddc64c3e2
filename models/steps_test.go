package models

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The protocol steps link each model to the Go code it models. A step is
// marked "// step: <name>" on a line of its own in the Go code and
// "/* step: <name> */" in the model; TestModelSteps checks that the two
// ordered lists agree, so a step renamed, added, removed or moved in one
// and not in the other fails the test.

// modelFiles lists, for each model, the Go files it models, in the order
// the model's steps follow them (paths from the repository root).
var modelFiles = map[string][]string{
	"ticket.pml":  {"kick/waiter.go", "ticket/lock.go"},
	"qspin.pml":   {"kick/waiter.go", "qspin/pv.go", "qspin/slowpath.go", "qspin/lock.go"},
	"gate.pml":    {"kick/waiter.go", "internal/lockcore/gate.go"},
	"qrwlock.pml": {"kick/waiter.go", "qspin/rwlock.go", "qspin/rwlock_slow.go"},
}

var (
	goStepRe    = regexp.MustCompile(`^\s*// step: ([a-z0-9-]+)\s*$`)
	modelStepRe = regexp.MustCompile(`/\* step: ([a-z0-9-]+) \*/`)
	ifRe        = regexp.MustCompile(`^\s*#\s*(ifdef|ifndef|if|elif|else|endif)\b(.*)$`)
)

// goSteps returns the steps marked in the Go source src, in order.
func goSteps(src string) []string {
	var steps []string
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		if m := goStepRe.FindStringSubmatch(sc.Text()); m != nil {
			steps = append(steps, m[1])
		}
	}
	return steps
}

// modelSteps returns the steps marked in the model src as spin compiles
// it with no -D switch: mutant (MUT_) and variant (ALT_) branches are left
// out. It understands the conditionals the models use: #ifdef, #ifndef,
// #if defined(X), #elif defined(X), #else and #endif, with nothing defined
// but the guarded size constants.
func modelSteps(src string) ([]string, error) {
	type frame struct{ parent, taken, on bool }
	var stack []frame
	on := true
	var steps []string
	sc := bufio.NewScanner(strings.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := ifRe.FindStringSubmatch(line); m != nil {
			switch m[1] {
			case "ifdef", "if":
				stack = append(stack, frame{parent: on, taken: false})
				on = false
			case "ifndef":
				stack = append(stack, frame{parent: on, taken: true})
			case "elif":
				if len(stack) == 0 {
					return nil, fmt.Errorf("line %d: #elif without #if", n)
				}
				on = false // nothing is defined: no #elif condition holds
			case "else":
				if len(stack) == 0 {
					return nil, fmt.Errorf("line %d: #else without #if", n)
				}
				f := &stack[len(stack)-1]
				on = f.parent && !f.taken
				f.taken = true
			case "endif":
				if len(stack) == 0 {
					return nil, fmt.Errorf("line %d: #endif without #if", n)
				}
				on = stack[len(stack)-1].parent
				stack = stack[:len(stack)-1]
			}
			if m[1] == "ifndef" {
				on = stack[len(stack)-1].parent
			}
			continue
		}
		if !on {
			continue
		}
		for _, m := range modelStepRe.FindAllStringSubmatch(line, -1) {
			steps = append(steps, m[1])
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("%d unterminated #if", len(stack))
	}
	return steps, nil
}

// codeSteps returns the steps of a model's Go files, in order.
func codeSteps(t *testing.T, files []string) []string {
	t.Helper()
	var steps []string
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, goSteps(string(src))...)
	}
	return steps
}

// compareSteps reports the first difference between the model's and the
// code's step lists.
func compareSteps(model, code []string) error {
	for i := 0; i < len(model) || i < len(code); i++ {
		switch {
		case i >= len(model):
			return fmt.Errorf("step %d: the code has %q, the model has no more steps", i+1, code[i])
		case i >= len(code):
			return fmt.Errorf("step %d: the model has %q, the code has no more steps", i+1, model[i])
		case model[i] != code[i]:
			return fmt.Errorf("step %d: the model has %q, the code %q", i+1, model[i], code[i])
		}
	}
	return nil
}

func TestModelSteps(t *testing.T) {
	for model, files := range modelFiles {
		t.Run(model, func(t *testing.T) {
			src, err := os.ReadFile(model)
			if err != nil {
				t.Fatal(err)
			}
			ms, err := modelSteps(string(src))
			if err != nil {
				t.Fatal(err)
			}
			cs := codeSteps(t, files)
			if len(ms) < 10 {
				t.Fatalf("the model marks only %d steps: %v", len(ms), ms)
			}
			if err := compareSteps(ms, cs); err != nil {
				t.Fatalf("%s and %s disagree: %v\nmodel: %v\ncode:  %v",
					model, strings.Join(files, ", "), err, ms, cs)
			}
			// Every mutant names a step of its model.
			for _, c := range checks() {
				if c.model == model && c.step != "" && !slices.Contains(ms, c.step) {
					t.Errorf("%s breaks step %q, which %s does not mark", c.name, c.step, model)
				}
			}
		})
	}
}

// TestModelStepsCatchDrift checks that the comparison fails when a step is
// renamed, dropped or moved in the code only.
func TestModelStepsCatchDrift(t *testing.T) {
	files := modelFiles["qspin.pml"]
	code := codeSteps(t, files)
	src, err := os.ReadFile(filepath.Join("..", "qspin/pv.go"))
	if err != nil {
		t.Fatal(err)
	}
	pv := string(src)
	if !strings.Contains(pv, "// step: head-arm\n") {
		t.Fatal("qspin/pv.go does not mark step head-arm")
	}
	renamed := goSteps(strings.Replace(pv, "// step: head-arm\n", "// step: head-arm-renamed\n", 1))
	if slices.Equal(renamed, goSteps(pv)) {
		t.Fatal("renaming a step did not change the code's list")
	}
	if compareSteps(code, code) != nil {
		t.Fatal("equal lists compared unequal")
	}
	drifted := [][]string{
		slices.Concat(code[:3], []string{"renamed"}, code[4:]),
		slices.Concat(code[:3], code[4:]),
		slices.Concat(code[:3], code[4:5], code[3:4], code[5:]),
	}
	for _, d := range drifted {
		if compareSteps(code, d) == nil {
			t.Errorf("drift not caught: %v", d)
		}
	}
	// The preprocessor leaves mutant branches out and keeps #else ones.
	got, err := modelSteps("#ifdef MUT_X\n/* step: a */\n#elif defined(MUT_Y)\n/* step: b */\n#else\n/* step: c */\n#endif\n#ifndef MUT_Z\n/* step: d */\n#else\n/* step: e */\n#endif\n")
	if err != nil || !slices.Equal(got, []string{"c", "d"}) {
		t.Fatalf("modelSteps = %v, %v; want [c d]", got, err)
	}
}
