#!/bin/sh
# tests/sim/evcheck_selftest.sh: proves the event-log checker (tests/tools/evcheck.c) works.
#
# Owns: running "$BUILD/tests/evcheck" on tests/data/events-good.jsonl (must pass, exit 0) and on
# every tests/data/events-bad-*.jsonl (must fail with exit 1 and a stderr message naming the
# expected line and problem). Prints one "ok"/"FAIL" line per file; exits non-zero on any failure.
# Run from the repository root; BUILD defaults to "build".

BUILD=${BUILD:-build}
EVCHECK="$BUILD/tests/evcheck"
DATA=$(dirname "$0")/../data
TMP=${TMPDIR:-/tmp}/evcheck_selftest.$$
fails=0
trap 'rm -f "$TMP.out" "$TMP.err"' EXIT
trap 'exit 130' HUP INT TERM

if [ ! -x "$EVCHECK" ]; then
    echo "FAIL evcheck_selftest: $EVCHECK not built"
    exit 1
fi

# Expected first violation of each bad log: file name, line number, words from the message.
expect() {
    case "$1" in
    events-bad-overcommit.jsonl) echo "5 overcommitted" ;;
    events-bad-gpu-range.jsonl) echo "3 out of range" ;;
    events-bad-partial-gang.jsonl) echo "3 partial gang" ;;
    events-bad-time-backwards.jsonl) echo "4 time goes backwards" ;;
    events-bad-finish-unknown.jsonl) echo "5 finish of unknown job" ;;
    events-bad-unknown-node.jsonl) echo "3 unknown node" ;;
    events-bad-malformed.jsonl) echo "3 malformed JSON" ;;
    events-bad-start-unsubmitted.jsonl) echo "2 never submitted" ;;
    events-bad-double-start.jsonl) echo "4 already running" ;;
    events-bad-duplicate-gpu.jsonl) echo "3 listed twice" ;;
    events-bad-gpu-count.jsonl) echo "3 16 submitted" ;;
    events-bad-evict-not-running.jsonl) echo "5 not running" ;;
    events-bad-shrink-below-min.jsonl) echo "4 below its min_pods" ;;
    events-bad-shrink-not-held.jsonl) echo "5 does not hold" ;;
    events-bad-grow-overcommit.jsonl) echo "4 listed twice" ;;
    events-bad-shrink-rigid.jsonl) echo "4 not elastic" ;;
    *) echo "" ;;
    esac
}

run() {
    "$EVCHECK" "$1" >"$TMP.out" 2>"$TMP.err"
}

good="$DATA/events-good.jsonl"
run "$good"
rc=$?
if [ "$rc" -eq 0 ] && grep -q ': OK$' "$TMP.out" && [ ! -s "$TMP.err" ]; then
    echo "ok   evcheck $(basename "$good")"
else
    echo "FAIL evcheck $(basename "$good"): exit $rc, expected 0"
    sed 's/^/     /' "$TMP.err" "$TMP.out"
    fails=$((fails + 1))
fi

nbad=0
for f in "$DATA"/events-bad-*.jsonl; do
    [ -e "$f" ] || continue
    nbad=$((nbad + 1))
    name=$(basename "$f")
    want=$(expect "$name")
    if [ -z "$want" ]; then
        echo "FAIL evcheck $name: no expected line listed in $0"
        fails=$((fails + 1))
        continue
    fi
    line=${want%% *}
    words=${want#* }
    run "$f"
    rc=$?
    if [ "$rc" -ne 1 ]; then
        echo "FAIL evcheck $name: exit $rc, expected 1"
        sed 's/^/     /' "$TMP.err" "$TMP.out"
        fails=$((fails + 1))
    elif ! grep -F ":$line: " "$TMP.err" | grep -q -F "$words"; then
        echo "FAIL evcheck $name: no message for line $line containing '$words'"
        sed 's/^/     /' "$TMP.err"
        fails=$((fails + 1))
    else
        echo "ok   evcheck $name (line $line)"
    fi
done

if [ "$nbad" -lt 6 ]; then
    echo "FAIL evcheck: only $nbad bad logs in $DATA"
    fails=$((fails + 1))
fi

# Usage and I/O errors exit 2.
"$EVCHECK" >/dev/null 2>&1
rc=$?
if [ "$rc" -eq 2 ]; then echo "ok   evcheck usage"; else
    echo "FAIL evcheck usage: exit $rc, expected 2"
    fails=$((fails + 1))
fi
"$EVCHECK" "$DATA/does-not-exist.jsonl" >/dev/null 2>&1
rc=$?
if [ "$rc" -eq 2 ]; then echo "ok   evcheck missing file"; else
    echo "FAIL evcheck missing file: exit $rc, expected 2"
    fails=$((fails + 1))
fi

[ "$fails" -eq 0 ] || exit 1
exit 0
