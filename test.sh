#!/usr/bin/env bash
# pvlock's test command: installs what the tests need when it is missing
# (Debian packages: spin for the model checks, prometheus for the scrape
# test), then runs vet, a gofmt check, the cross builds for macOS and
# Windows, the portable (park-only) build's tests and the race-enabled test
# suite.
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v spin >/dev/null 2>&1 || need+=(spin)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	else
		echo "test.sh: missing ${need[*]}; install them (Debian: apt-get install ${need[*]})" >&2
	fi
fi

go vet ./...
# Files deleted in the work tree but still in git's index are left out.
gofiles=$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')
unformatted=$(for f in $gofiles; do if [ -e "$f" ]; then echo "$f"; fi; done | xargs -r gofmt -l)
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
# The Prometheus mixin: its rules load, and their unit tests pass.
promtool check rules mixin/rules/rules.yml mixin/alerts/alerts.yml
promtool test rules mixin/tests/*.yml
# Off Linux the locks, kick and the collector build with the portable,
# park-only code, and the vCPU runtime reports errors.ErrUnsupported: build
# and vet everything for macOS and Windows, and build for Apple silicon
# (internal/curg's arm64 assembly).
for goos in darwin windows; do
	GOOS=$goos go build ./...
	GOOS=$goos go vet ./...
done
GOOS=darwin GOARCH=arm64 go build ./...
# Short, bounded fuzzing of each fuzz target (their seed corpora also run in
# the suite below). The budgets are execution counts, about 5-10 s each
# here: Go 1.26's fuzz coordinator can report a spurious "context deadline
# exceeded" when a wall-clock -fuzztime ends on a loaded machine
# (go.dev/issue/75804); a count has no deadline to race. FUZZTIME overrides.
fuzz() { go test -run='^$' -fuzz="^$1\$" -fuzztime="${FUZZTIME:-$3}" "$2"; }
fuzz FuzzTicketWord ./ticket 80000x
fuzz FuzzTailEncoding ./qspin 600000x
fuzz FuzzParse ./bench/cmd/pvbench 150000x
fuzz FuzzParseTorture ./bench/cmd/pvbench 120000x

# The torture with the race windows widened (fault injection).
go test -race -count=1 -tags pvlock_faults ./bench/torture ./internal/faults
# The reader-writer torture at full size, 10^7 acquisitions (the race
# detector's run below does 10^6).
go test -count=1 -run '^TestTortureRW$' ./bench/torture

# The portable code that builds off Linux, run on Linux: the pvlock_portable
# tag selects the park-only halt/kick layer (no futexes, no gettid, no
# sched_yield); the vCPU runtime stays Linux's. Without -race, to keep CI
# short.
go test -count=1 -tags pvlock_portable ./kick ./ticket ./qspin ./pvlock/metrics

# The whole suite under the race detector.
go test -race -count=1 -timeout 15m ./...
