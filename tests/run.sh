#!/bin/sh
# tests/run.sh: runs every test and prints one summary line CI can read: "N passed, N failed".
#
# Counts each cmocka test case, each fuzz-corpus replay, each simulator scenario script and each
# fake-API-server test script (tests/kube/test_*.sh).
# Environment: BUILD (objects and test binaries, default build), BIN (gangsched, default bin).
# Run from the repository root (make test does).
BUILD=${BUILD:-build}
BIN=${BIN:-bin}
export BUILD BIN
pass=0
fail=0
failed=""
log=$(mktemp)
recap=$(mktemp) # the last lines of each failure again, printed just before the summary
trap 'rm -f "$log" "$recap"' EXIT

report_fail() {
    fail=$((fail + $2))
    failed="$failed $1"
    echo "---- FAILED: $1 (last lines of its output)"
    tail -n 40 "$log"
    { echo "---- FAILED: $1 (its last lines again)"; tail -n 12 "$log"; } >>"$recap"
}

# cmocka binaries: count their test cases.
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    if "$t" >"$log" 2>&1; then
        n=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        pass=$((pass + ${n:-1}))
        echo "ok   $name (${n:-1} tests)"
    else
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | head -n 1)
        pass=$((pass + ${p:-0}))
        report_fail "$name" "${f:-1}"
    fi
done

# Fuzz corpora, replayed through the harnesses without the fuzzer.
for r in "$BUILD"/tests/fuzz_*_replay; do
    [ -x "$r" ] || continue
    name=$(basename "$r" _replay)
    corpus=tests/fuzz/corpus/${name#fuzz_}
    if "$r" "$corpus" >"$log" 2>&1; then
        pass=$((pass + 1))
        echo "ok   $name corpus ($(tail -n 1 "$log"))"
    else
        report_fail "$name corpus" 1
    fi
done

# Scripts that print what they check and exit non-zero on a failure; $1 prefixes their names.
run_scripts() {
    prefix=$1
    shift
    for s in "$@"; do
        [ -f "$s" ] || continue
        name=$prefix$(basename "$s" .sh)
        if sh "$s" >"$log" 2>&1; then
            pass=$((pass + 1))
            echo "ok   $name"
        else
            report_fail "$name" 1
        fi
    done
}

# Scenario scripts driving bin/gangsched.
run_scripts "" tests/sim/*.sh
# Tests against the fake Kubernetes API server (tests/kube/fakeapi.py), the real kubectl included.
# The fake server logs every request to $FAKEAPI_REQUEST_LOG; test_rbac.sh (last) checks the
# requests gangsched made against deploy/rbac.yaml.
FAKEAPI_REQUEST_LOG=$(mktemp)
export FAKEAPI_REQUEST_LOG
trap 'rm -f "$log" "$recap" "$FAKEAPI_REQUEST_LOG"' EXIT
run_scripts kube/ tests/kube/test_*.sh

echo
# A reader of only the end of this output (a CI log cut to its tail) still sees why.
cat "$recap"
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
