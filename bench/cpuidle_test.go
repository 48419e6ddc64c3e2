package bench

import (
	"strings"
	"testing"
)

const procStat = `cpu  300 10 200 5000 40 5 6 7 0 0
cpu0 100 5 100 2000 20 2 3 4 0 0
cpu1 200 5 100 3000 20 3 3 3 0 0
cpu12 1 1 1 1 1 1 1 1 0 0
intr 12345 0 0
ctxt 999
`

func TestParseProcStat(t *testing.T) {
	for _, c := range []struct {
		cpus        []int
		idle, total uint64
	}{
		{[]int{0}, 2000 + 20, 100 + 5 + 100 + 2000 + 20 + 2 + 3 + 4},
		{[]int{1}, 3000 + 20, 200 + 5 + 100 + 3000 + 20 + 3 + 3 + 3},
		{[]int{0, 1}, 5040, 2234 + 3334},
		{[]int{12}, 2, 8},
	} {
		got, err := parseProcStat(procStat, c.cpus)
		if err != nil || got.idle != c.idle || got.total != c.total {
			t.Errorf("CPUs %v: %+v, %v; want idle %d of %d", c.cpus, got, err, c.idle, c.total)
		}
	}
	if _, err := parseProcStat(procStat, []int{0, 2}); err == nil || !strings.Contains(err.Error(), "1 of the CPUs [0 2]") {
		t.Errorf("a CPU without its line: %v", err)
	}
	if _, err := parseProcStat("cpu0 1 2 x 4 5 6 7 8 0 0\n", []int{0}); err == nil || !strings.Contains(err.Error(), "cpu0: field 3") {
		t.Errorf("a malformed field: %v", err)
	}
}

func TestIdlePct(t *testing.T) {
	if p := (cpuTimes{idle: 25, total: 100}).idlePct(); p != 25 {
		t.Errorf("25 of 100 ticks: %v%%", p)
	}
	if p := (cpuTimes{}).idlePct(); p != -1 {
		t.Errorf("no time reported: %v, want -1", p)
	}
	if d := (cpuTimes{idle: 30, total: 110}).sub(cpuTimes{idle: 10, total: 10}); d != (cpuTimes{idle: 20, total: 100}) {
		t.Errorf("sub: %+v", d)
	}
}
