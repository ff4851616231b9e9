#!/usr/bin/env bash
# run.sh - the test run behind `make test` (after the ASan build and the unit
# test binaries are built): every cmocka binary build/asan/test/test_*, then
# `make format-check`, `make check-layout`, then each
# test/integration/*.test.mjs on Node 24.
# Each step runs in its own process group so nothing it starts outlives it.
# Ends with the line "N passed, N failed" and exits non-zero on any failure.
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
unset CMOCKA_MESSAGE_OUTPUT CMOCKA_XML_FILE

LOG_DIR=build/asan/test-logs
rm -rf "$LOG_DIR"
mkdir -p "$LOG_DIR"
export SEXTANT_TEST_LOGDIR="$PWD/$LOG_DIR"
SANITIZER_RE='ERROR: AddressSanitizer|runtime error:|LeakSanitizer'
UNIT_LIMIT_S=300         # one unit test binary
INTEGRATION_LIMIT_S=600  # one integration test file (each test: 120 s)

passed=0
failed=0
failures=()

pass() { passed=$((passed + $1)); }
fail() {
	failed=$((failed + $1))
	failures+=("$2")
}

# The process group of the step running now (killed on exit or interrupt).
group=
cleanup() {
	if [ -n "$group" ]; then
		kill -KILL -- "-$group" 2>/dev/null
	fi
	group=
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# Processes (pid and command line) in process group $1, read from /proc.
group_members() {
	local want=$1 f stat pid
	local -a fields
	for f in /proc/[0-9]*/stat; do
		stat=$(cat "$f" 2>/dev/null) || continue
		read -r -a fields <<<"${stat##*) }" # state ppid pgrp ...
		[ "${fields[2]:-}" = "$want" ] || continue
		pid=${f#/proc/}
		pid=${pid%/stat}
		echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
	done
}

# run_step LIMIT_S LOG CMD...: runs CMD in a new process group with a time
# limit, output to LOG; returns its exit status.  Processes it left behind
# are killed and counted as a failure.
run_step() {
	local limit=$1 log=$2 rc left
	shift 2
	setsid timeout -k 10 "$limit" "$@" >"$log" 2>&1 </dev/null &
	group=$!
	wait "$group"
	rc=$?
	left=$(group_members "$group")
	if [ -n "$left" ]; then
		fail 1 "$(basename "$log" .log): left processes behind: $left"
		echo "  left processes behind:"
		echo "$left" | sed 's/^/    /'
	fi
	cleanup
	[ "$rc" -eq 124 ] && echo "  timed out after ${limit}s"
	return "$rc"
}

# ---- unit tests (cmocka) -----------------------------------------------------
echo "== unit tests"
units=()
for bin in build/asan/test/test_*; do
	# Skip the -MMD .d files and anything else that is not a test binary.
	case "$bin" in *.*) continue ;; esac
	[ -f "$bin" ] && [ -x "$bin" ] && units+=("$bin")
done
[ "${#units[@]}" -eq 0 ] && fail 1 "unit: no test binaries in build/asan/test"
for bin in "${units[@]}"; do
	name=$(basename "$bin")
	log="$LOG_DIR/$name.log"
	start=$SECONDS
	run_step "$UNIT_LIMIT_S" "$log" "$bin"
	rc=$?
	took="$((SECONDS - start))s"
	# cmocka prints one summary per group: "[  PASSED  ] N test(s)." and
	# "[  FAILED  ] N test(s), listed below:".
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
	pass "$p"
	[ "$f" -gt 0 ] && fail "$f" "$name: $f failed test(s)"
	problem=
	if [ $((p + f)) -eq 0 ]; then
		problem="no cmocka summary (crashed?)"
	elif grep -Eq "$SANITIZER_RE" "$log"; then
		problem="sanitizer report"
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		problem="exit status $rc with no failed test (leak report?)"
	fi
	[ -n "$problem" ] && fail 1 "$name: $problem"
	if [ "$f" -gt 0 ] || [ -n "$problem" ]; then
		echo "-- $name ($took): FAILED ($p passed, $f failed${problem:+, $problem})"
		sed 's/^/   | /' "$log"
	else
		echo "-- $name ($took): $p passed"
	fi
done

# ---- format ------------------------------------------------------------------
echo "== format-check"
if run_step 120 "$LOG_DIR/format-check.log" make --no-print-directory format-check; then
	pass 1
	echo "-- format-check: ok"
else
	fail 1 "format-check"
	echo "-- format-check: FAILED"
	head -n 60 "$LOG_DIR/format-check.log" | sed 's/^/   | /'
fi

# ---- layout: who may include whom (scripts/check-layout.sh) -----------------
echo "== check-layout"
if run_step 60 "$LOG_DIR/check-layout.log" make --no-print-directory check-layout; then
	pass 1
	echo "-- check-layout: ok"
else
	fail 1 "check-layout"
	echo "-- check-layout: FAILED"
	head -n 60 "$LOG_DIR/check-layout.log" | sed 's/^/   | /'
fi

# ---- integration tests (node:test on Node 24) --------------------------------
# tap_count WORD FILE: N from the last "# WORD N" of node's TAP summary
# ("# pass N", "# fail N", "# cancelled N"); empty when there is none.
tap_count() { sed -n "s/^# $1 \([0-9]*\)$/\1/p" "$2" 2>/dev/null | tail -n 1; }

echo "== integration tests"
node=$(sh scripts/node.sh) || node=
for file in test/integration/*.test.mjs; do
	name=$(basename "$file" .test.mjs)
	if [ -z "$node" ]; then
		fail 1 "$name: no Node 24 (scripts/node.sh failed)"
		continue
	fi
	tap="$LOG_DIR/$name.tap"
	start=$SECONDS
	run_step "$INTEGRATION_LIMIT_S" "$LOG_DIR/$name.log" "$node" --test --test-timeout=120000 \
		--test-reporter=spec --test-reporter-destination=stdout \
		--test-reporter=tap --test-reporter-destination="$tap" "$file"
	rc=$?
	p=$(tap_count pass "$tap")
	f=$(tap_count fail "$tap")
	c=$(tap_count cancelled "$tap")
	echo "-- $name ($((SECONDS - start))s)"
	sed 's/^/   | /' "$LOG_DIR/$name.log"
	if [ -z "$p" ]; then
		fail 1 "$name: no test summary (exit status $rc)"
		continue
	fi
	pass "$p"
	[ "$((f + c))" -gt 0 ] && fail "$((f + c))" "$name: $f failed, $c cancelled"
	[ "$rc" -ne 0 ] && [ "$((f + c))" -eq 0 ] && fail 1 "$name: exit status $rc with no failed test"
done

# ---- sanitizer reports in any server's stderr --------------------------------
dirty=$(grep -lE "$SANITIZER_RE" "$LOG_DIR"/*.stderr 2>/dev/null)
if [ -n "$dirty" ]; then
	fail 1 "sanitizer reports in server stderr: $(tr '\n' ' ' <<<"$dirty")"
	for f in $dirty; do
		echo "-- sanitizer report in $f:"
		grep -E -A 12 "$SANITIZER_RE" "$f" | head -n 40 | sed 's/^/   | /'
	done
elif ls "$LOG_DIR"/*.stderr >/dev/null 2>&1; then
	pass 1
	echo "-- server stderr logs: no sanitizer report"
fi

echo
if [ "${#failures[@]}" -gt 0 ]; then
	echo "failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "logs: $LOG_DIR"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
