# Sourced by the lab's invocation scripts (run.sh, hostload.sh): run
# "$@" at the invocation's priority, $prio. "nice" runs it in a scheduler
# group of its own (a new session) at autogroup nice -20 and nice -20, so
# that other sessions' jobs do not share its CPUs evenly; anything else
# ("normal") runs it as users do, with no nice and no autogroup change.
run() {
	if [ "$prio" = nice ]; then
		setsid sh -c 'echo -20 > /proc/self/autogroup 2>/dev/null; exec nice -n -20 "$@"' sh "$@"
	else
		"$@"
	fi
}
