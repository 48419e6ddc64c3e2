package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress draws a one-line progress bar on a terminal; on anything else
// (a pipe, a file, a test's buffer) it prints one line per finished cell.
type progress struct {
	w           io.Writer
	fd          int
	on          bool
	done, total int
	start       time.Time
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.on, p.fd = true, int(f.Fd())
	}
	return p
}

// show draws the bar with the cell being measured now.
func (p *progress) show(label string) {
	if !p.on {
		return
	}
	width, _, err := term.GetSize(p.fd)
	if err != nil || width <= 0 {
		width = 80
	}
	fmt.Fprintf(p.w, "\r%s", renderBar(p.done, p.total, label, time.Since(p.start), width))
}

// step counts one finished cell.
func (p *progress) step() { p.done++ }

// cellDone reports a finished cell (after step) with a short result, as a
// line of its own when the output is not a terminal.
func (p *progress) cellDone(label, result string) {
	if p.on {
		return
	}
	eta := (time.Since(p.start) / time.Duration(max(1, p.done)) * time.Duration(p.total-p.done)).Round(time.Second)
	fmt.Fprintf(p.w, "pvbench: [%d/%d] %s: %s (%v elapsed, ETA %v)\n",
		p.done, p.total, label, result, time.Since(p.start).Round(time.Second), eta)
}

// finish erases the bar.
func (p *progress) finish() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// renderBar formats "[=====>      ] 12/36 pv-ticket 2x  ETA 1m5s" to fit in
// width columns.
func renderBar(done, total int, label string, elapsed time.Duration, width int) string {
	eta := "?"
	if done > 0 {
		eta = (elapsed / time.Duration(done) * time.Duration(total-done)).Round(time.Second).String()
	}
	tail := fmt.Sprintf(" %d/%d %s  ETA %s", done, total, label, eta)
	barWidth := width - len(tail) - 3
	if barWidth < 10 {
		barWidth = 10
	}
	fill := 0
	if total > 0 {
		fill = barWidth * done / total
	}
	bar := strings.Repeat("=", fill)
	if fill < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-fill-1)
	}
	line := "[" + bar + "]" + tail
	if len(line) > width-1 && width > 1 {
		line = line[:width-1]
	}
	return line
}
