# Taints on a real GPU cluster's nodes: a run whose jobs tolerate nothing warns (naming the taint
# and the fix) and counts the jobs that never started; --tolerate and the trace's tolerations
# column let them run; a bad toleration is an error naming the file, line and column.
. tests/sim/lib.inc
N=tests/data/nodes-tainted.yaml
T=tests/data/trace-small.csv
total=$(($(grep -c . "$T") - 1))
"$GS" simulate --no-progress --json --nodes "$N" --trace "$T" --policy gangsched >"$TMP/a.json" 2>"$TMP/a.err" ||
    bad "untolerated run failed: $(cat "$TMP/a.err")"
grep -q "warning: $total of $total jobs fit no node" "$TMP/a.err" && ok "warning: every job fits no node" ||
    bad "no fit warning: $(cat "$TMP/a.err")"
grep -q "taint nvidia.com/gpu=present:NoSchedule on 2 of 2 nodes" "$TMP/a.err" &&
    grep -q -- "--tolerate nvidia.com/gpu=present:NoSchedule" "$TMP/a.err" && ok "warning names the taint and the fix" ||
    bad "warning text: $(cat "$TMP/a.err")"
expect_eq "nothing completes" "$("$JGET" "$TMP/a.json" policies/0/completed)" 0
ns=$("$JGET" "$TMP/a.json" policies/0/never_started)
rj=$("$JGET" "$TMP/a.json" policies/0/rejected)
expect_eq "never started + rejected = every job" "$((ns + rj))" "$total"
expect_cmp "never-started jobs counted" "$ns" ">" 0
"$GS" simulate --no-progress --nodes "$N" --trace "$T" --policy gangsched 2>/dev/null |
    grep -q "^jobs never started  *$ns$" && ok "summary row: jobs never started" || bad "summary lacks never started"

# the default tolerations
"$GS" simulate --no-progress --json --nodes "$N" --trace "$T" --policy gangsched \
    --tolerate 'nvidia.com/gpu=present:NoSchedule' >"$TMP/b.json" 2>"$TMP/b.err" || bad "tolerated run failed"
grep -q "fit no node" "$TMP/b.err" && grep -q "taint" "$TMP/b.err" && bad "warning despite --tolerate: $(cat "$TMP/b.err")" ||
    ok "--tolerate: no taint warning"
expect_eq "--tolerate: never started" "$("$JGET" "$TMP/b.json" policies/0/never_started)" 0
expect_cmp "--tolerate: jobs complete" "$("$JGET" "$TMP/b.json" policies/0/completed)" ">" 0
"$GS" simulate --no-progress --json --nodes "$N" --trace "$T" --policy gangsched --tolerate 'nvidia.com/gpu:NoSchedule' \
    >"$TMP/c.json" 2>/dev/null
expect_eq "Exists toleration (key:Effect)" "$("$JGET" "$TMP/c.json" policies/0/completed)" "$("$JGET" "$TMP/b.json" policies/0/completed)"
"$GS" simulate --no-progress --json --nodes "$N" --trace "$T" --policy gangsched --tolerate 'other=x:NoSchedule' \
    >"$TMP/d.json" 2>"$TMP/d.err"
expect_eq "a toleration of another taint: nothing completes" "$("$JGET" "$TMP/d.json" policies/0/completed)" 0
grep -q "in addition to the current --tolerate" "$TMP/d.err" && ok "warning mentions the current --tolerate" || bad "d.err: $(cat "$TMP/d.err")"

# the trace's tolerations column: half the jobs tolerate the taint, the column wins over --tolerate
awk -F, 'NR == 1 { print $0 ",tolerations"; next }
         { print $0 "," (NR % 2 ? "nvidia.com/gpu=present:NoSchedule" : "") }' "$T" >"$TMP/t.csv"
"$GS" simulate --no-progress --json --nodes "$N" --trace "$TMP/t.csv" --policy gangsched >"$TMP/e.json" 2>"$TMP/e.err"
tolerating=$(awk -F, 'NR > 1 && NR % 2' "$T" | wc -l | tr -d ' ')
grep -q "warning: $((total - tolerating)) of $total jobs fit no node" "$TMP/e.err" &&
    ok "column: the jobs without it still warned about" || bad "column warning: $(cat "$TMP/e.err")"
expect_cmp "column: tolerating jobs complete" "$("$JGET" "$TMP/e.json" policies/0/completed)" ">" 0
awk -F, 'NR == 1 { print $0 ",tolerations"; next } { print $0 ",spot:Exists" }' "$T" >"$TMP/bad.csv"
expect_fail "bad tolerations column" 2 "bad.csv:2: column 'tolerations': 'spot:Exists': effect 'Exists'" -- \
    "$GS" simulate --no-progress --nodes "$N" --trace "$TMP/bad.csv"
expect_fail "bad --tolerate" 2 "--tolerate: '=x': an entry needs a key" -- \
    "$GS" simulate --no-progress --nodes "$N" --trace "$T" --tolerate '=x'
finish
