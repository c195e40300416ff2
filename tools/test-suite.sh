#!/usr/bin/env bash
# make pytest: the suite in two passes (docs/testing.md, "Two passes"), each pass's failures
# run once more by themselves (tests/support/reruns.py).
#
#   tools/test-suite.sh PYTEST WORKERS MAX_RERUNS
#
# 1. `-m alone`, one process;
# 2. `-m "not alone"` on WORKERS pytest-xdist workers (0: one process).
# Both run whatever the other's outcome. A pass whose tests failed (pytest's exit 1) with
# MAX_RERUNS failures or fewer runs those again, one process, nothing else running: the run
# passes when they all pass, and they are listed as "passed when run again". More failures,
# or any other exit (an error collecting, an interruption), fail the run as they are.
set -uo pipefail
pytest=$1 workers=$2 max_reruns=$3
lists=$(mktemp -d)
trap 'rm -rf "$lists"' EXIT

# PASS_NAME FAILED_LIST PYTEST_ARGS...: the pass's exit status, after its reruns
run_pass() {
	local name=$1 failed=$2
	shift 2
	local status=0
	GW_TEST_FAILED_FILE=$failed "$pytest" "$@" || status=$?
	[ "$status" -eq 1 ] || return "$status"
	echo # pytest's last line may lack its newline (a message printed at exit)
	local count
	count=$(grep -c . "$failed")
	if [ "$count" -eq 0 ] || [ "$count" -gt "$max_reruns" ]; then
		echo "*** $name: $count failed; more than $max_reruns (or none listed) are not run again"
		return 1
	fi
	echo "*** $name: $count failed; run again by themselves:"
	sed 's/^/***   /' "$failed"
	local modules
	modules=$(sed 's/::.*//' "$failed" | sort -u)
	# shellcheck disable=SC2086  # one argument per module path (no spaces in test paths)
	if GW_TEST_RERUN_FILE=$failed "$pytest" -p no:cacheprovider $modules; then
		echo "*** $name: passed when run again by themselves (failed under the pass's load):"
		sed 's/^/***   /' "$failed"
		return 0
	fi
	echo "*** $name: failed again by themselves"
	return 1
}

alone=0 rest=0
run_pass "first pass (alone)" "$lists/alone" -m alone --durations=15 || alone=$?
run_pass "second pass (not alone)" "$lists/rest" -m "not alone" -n "$workers" --dist loadgroup \
	--durations=15 || rest=$?
[ "$alone" -eq 0 ] || exit "$alone"
exit "$rest"
