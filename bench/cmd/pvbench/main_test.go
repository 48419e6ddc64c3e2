package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-oc", "0"}, {"-oc", "x"}, {"-oc", ""}, {"-locks", "nope"}, {"-locks", ""},
		{"-workload", "nope"}, {"-runs", "0"}, {"-duration", "-1s"}, {"-pin", "sideways"},
		{"-cpus", "a"}, {"extra"},
	} {
		if _, err := parse(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parse(%q) accepted", args)
		}
	}
	o, err := parse(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.factors) != 4 || strings.Join(o.locks, ",") != "native-ticket,pv-ticket,sync.Mutex" || o.runs < 3 {
		t.Fatalf("defaults %+v", o)
	}
}

func TestRunWritesTablesAndJSON(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "rows.json")
	cs := filepath.Join(dir, "rows.csv")
	var out, errOut bytes.Buffer
	err := run([]string{"-oc", "1,2", "-runs", "1", "-duration", "50ms", "-json", js, "-csv", cs}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	for _, want := range []string{"%improvement", "native-ticket", "pv-ticket", "sync.Mutex", "halts/1k"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Workload   string  `json:"workload"`
		Lock       string  `json:"lock"`
		Overcommit float64 `json:"overcommit"`
		OpsPerSec  float64 `json:"ops_per_sec"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || rows[0].Workload != "lockloop" || rows[5].Overcommit != 2 || rows[0].OpsPerSec <= 0 {
		t.Fatalf("JSON rows %+v", rows)
	}
	if _, err := os.Stat(cs); err != nil {
		t.Fatal(err)
	}
}
