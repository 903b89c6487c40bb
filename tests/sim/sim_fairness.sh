# Issue 19 end to end: --policy private (each queue alone on a slice of its nominal quota, never
# above it; with one queue the same as gangsched), the KPIs multinode_mean_queue_s (per policy and
# per queue) and eta_*_rel_error in --json, and the refusals of private (--db, gangsched run).
. tests/sim/lib.inc
ARGS="--no-progress --json --cluster hgx:4,pcie:2 --trace tests/data/trace-crash.csv"
# shellcheck disable=SC2086
"$GS" simulate $ARGS --policy gangsched --policy fifo --policy private >"$TMP/p.json" 2>"$TMP/p.err" ||
    { bad "three policies: $(cat "$TMP/p.err")"; finish; }
expect_eq "third policy" "$("$JGET" "$TMP/p.json" policies/2/name)" private
for q in prod research; do
    expect_eq "private $q: same jobs" "$("$JGET" "$TMP/p.json" policies/2/per_queue/$q/jobs)" \
        "$("$JGET" "$TMP/p.json" policies/0/per_queue/$q/jobs)"
    expect_eq "private $q: same nominal" "$("$JGET" "$TMP/p.json" policies/2/per_queue/$q/nominal_gpus)" \
        "$("$JGET" "$TMP/p.json" policies/0/per_queue/$q/nominal_gpus)"
    # alone on its slice a queue can never borrow
    expect_cmp "private $q: at most its nominal" \
        "$("$JGET" "$TMP/p.json" policies/2/per_queue/$q/max_usage_gpus)" "<=" \
        "$("$JGET" "$TMP/p.json" policies/2/per_queue/$q/nominal_gpus)"
    m=$("$JGET" "$TMP/p.json" policies/0/per_queue/$q/multinode_mean_queue_s)
    expect_cmp "per_queue $q multinode_mean_queue_s" "$m" ">=" 0
done
for p in 0 1 2; do
    expect_cmp "policy $p multinode_mean_queue_s" \
        "$("$JGET" "$TMP/p.json" policies/$p/multinode_mean_queue_s)" ">=" 0
done
# the start-time KPIs: relative errors of the gangs that waited over 10 minutes and got one
expect_cmp "eta_covered <= eta_waited" "$("$JGET" "$TMP/p.json" policies/0/eta_covered)" "<=" \
    "$("$JGET" "$TMP/p.json" policies/0/eta_waited)"
expect_cmp "gangsched gave estimates" "$("$JGET" "$TMP/p.json" policies/0/eta_covered)" ">" 0
expect_cmp "eta_median_rel_error <= p90" "$("$JGET" "$TMP/p.json" policies/0/eta_median_rel_error)" \
    "<=" "$("$JGET" "$TMP/p.json" policies/0/eta_p90_rel_error)"
# one queue: its slice is the whole cluster, so private is gangsched
"$GS" simulate --no-progress --json --cluster hgx:2 --trace tests/data/trace-small.csv \
    --policy gangsched --policy private >"$TMP/one.json" || bad "one queue, private"
expect_eq "one queue: private = gangsched (mean queue)" \
    "$("$JGET" "$TMP/one.json" policies/1/mean_queue_s)" "$("$JGET" "$TMP/one.json" policies/0/mean_queue_s)"
# ... in every figure: merging one run must change none (p95 JCT, racks, fragmentation, start
# estimates were once left at 0)
python3 - "$TMP/one.json" <<'PY' && ok "one queue: every figure of private is gangsched's" ||
import json, sys
g, p = json.load(open(sys.argv[1]))["policies"]
diff = [k for k in g if k not in ("name", "series") and g[k] != p.get(k)]
if diff:
    sys.exit("differ: " + ", ".join("%s %r/%r" % (k, g[k], p.get(k)) for k in diff))
PY
    bad "one queue: private differs from gangsched"
# two queues: the merged figures are over both runs, and --jobs-out has each job's row
# shellcheck disable=SC2086
"$GS" simulate $ARGS --policy private --jobs-out "$TMP/jobs.csv" >"$TMP/pj.json" ||
    bad "private --jobs-out"
expect_eq "private --jobs-out: a row per job" "$(grep -c ',private,' "$TMP/jobs.csv")" \
    "$("$JGET" "$TMP/pj.json" policies/0/jobs)"
expect_cmp "private: p95 completion time" "$("$JGET" "$TMP/pj.json" policies/0/p95_jct_s)" ">" 0
# one makespan over the queues' runs: first submission of any to last finish of any (the runs'
# spans differ; the longest one alone was reported before)
span=$(awk -F, 'NR > 1 && $7 != "" { if (min == "" || $5 < min) min = $5; if ($7 > max) max = $7 }
    END { printf "%d", max - min }' "$TMP/jobs.csv")
expect_eq "private: makespan spans every queue's run" \
    "$("$JGET" "$TMP/pj.json" policies/0/makespan_s)" "$span"
expect_cmp "private: start estimates covered" "$("$JGET" "$TMP/pj.json" policies/0/eta_covered)" \
    "<=" "$("$JGET" "$TMP/pj.json" policies/0/eta_waited)"
expect_fail "private cannot be persisted" 2 "cannot persist --policy private" -- \
    "$GS" simulate --no-progress --cluster hgx:2 --trace tests/data/trace-small.csv \
    --policy private --db "$TMP/x.db"
"$GS" policies | grep -q "^private" && ok "policies lists private" || bad "policies lacks private"
expect_fail "the daemon refuses private" 1 "a simulator baseline only" -- \
    timeout 10 "$GS" run --policy private --config config/examples/itp-tenants.yaml --db "$TMP/d.db"
# A gang that must borrow the quota another queue uses within its nominal quota gets no
# starvation reservation for that wait: b (nominal 8 of hgx:2's 16 GPUs) keeps running and borrows
# a's idle 8 while a's 16-GPU gang cannot start, and the gang starts once b's last job is done.
# Before, the gang held both nodes with no expected start: b was kept to 8 GPUs (4 h mean queue)
# and the gang itself started 8 h later (78,300 s against 49,500 s).
{
    echo "job_id,submission_time,duration,num_gpu,queue"
    echo "big,1800,3600,16,a"
    i=0
    while [ $i -lt 40 ]; do echo "b$i,$((i * 900)),14400,1,b"; i=$((i + 1)); done
} >"$TMP/borrow.csv"
printf '%s\n' "apiVersion: gangsched.io/v1alpha1" "kind: SchedulerConfig" "cohorts: [{name: c}]" \
    "queues:" "  - {name: a, cohort: c, quota: {default: {nvidia.com/gpu: 8}}}" \
    "  - {name: b, cohort: c, quota: {default: {nvidia.com/gpu: 8}}}" >"$TMP/borrow.yaml"
"$GS" simulate --no-progress --json --cluster hgx:2 --trace "$TMP/borrow.csv" \
    --config "$TMP/borrow.yaml" --policy gangsched --events "$TMP/borrow.ev" \
    --jobs-out "$TMP/borrow.jobs" >"$TMP/borrow.json" || bad "borrowing quota wait: simulate"
expect_eq "borrowing quota wait: no reservation" "$(grep -c '"type":"reserve"' "$TMP/borrow.ev")" 0
expect_eq "borrowing quota wait: the lender's queue does not wait" \
    "$("$JGET" "$TMP/borrow.json" policies/0/per_queue/b/mean_queue_s)" 0
last_b=$(awk -F, '$3 == "b" && $7 > m { m = $7 } END { printf "%d", m }' "$TMP/borrow.jobs")
big=$(awk -F, '$1 == "big" { printf "%d", $6 }' "$TMP/borrow.jobs")
expect_eq "borrowing quota wait: the gang starts when the lender's last job ends" "$big" "$last_b"
finish
