# Failures in the simulator: planned outages and random node failures break the gangs on the
# failed node, which restart whole after the grace (never partial beyond it); failed starts use
# the retry budget, strike nodes and quarantine them; everything seeded and checked by evcheck.
. tests/sim/lib.inc
printf 'node,down,up\nhgx-0000,100,5000\nhgx-0001,200,300\n' >"$TMP/outages.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:2 \
    --trace tests/data/trace-gangs.csv --outages "$TMP/outages.csv" --failure-grace 20 \
    --events "$TMP/o.ev" >"$TMP/o.json" || bad "outage run failed"
"$EVCHECK" "$TMP/o.ev" >/dev/null && ok "outage event log checks" || bad "outage log check failed"
expect_eq "node failures" "$("$JGET" "$TMP/o.json" policies/0/node_failures)" 2
r=$("$JGET" "$TMP/o.json" policies/0/failure_restarts)
expect_cmp "gangs restarted after node failures" "$r" ">" 0
p=$("$JGET" "$TMP/o.json" policies/0/partial_gang_seconds)
expect_cmp "partial gangs at most the grace per failure" "$p" "<=" "$((20 * r))"
expect_cmp "recovery time measured" "$("$JGET" "$TMP/o.json" policies/0/mean_recovery_s)" ">" 0
grep -q '"type":"node-down"' "$TMP/o.ev" && grep -q '"type":"node-up"' "$TMP/o.ev" &&
    ok "node-down and node-up events" || bad "node events missing"
# random failures with every kind on the bundled workload: determinism and the invariants
for i in 1 2; do
    "$GS" simulate --no-progress --json --node-mtbf 500 --pod-start-failure-rate 0.05 \
        --seed 3 --events "$TMP/r$i.ev" >"$TMP/r$i.json" || bad "random failure run $i failed"
done
cmp -s "$TMP/r1.json" "$TMP/r2.json" && ok "failures are seeded: same run twice" ||
    bad "two runs with the same seed differ"
"$EVCHECK" "$TMP/r1.ev" >/dev/null && ok "random failure event log checks" || bad "log check failed"
expect_eq "every job completes" "$("$JGET" "$TMP/r1.json" policies/0/completed)" 4756
# the teardowns' lost_gpu_s add up to gpu_hours_lost_to_failures (events rounded to 1 ms)
lost_ev=$(grep '"type":"evict","policy":"gangsched"' "$TMP/r1.ev" | grep -E 'node failure|start failure' |
    sed -n 's/.*"lost_gpu_s":\([0-9.]*\).*/\1/p' | awk '{ s += $1 } END { printf "%.3f", s / 3600 }')
lost_json=$("$JGET" "$TMP/r1.json" policies/0/gpu_hours_lost_to_failures)
awk -v a="$lost_ev" -v b="$lost_json" 'BEGIN { d = a - b; exit !(a > 0 && d < 0.01 && d > -0.01) }' &&
    ok "teardown lost_gpu_s sum to the failure GPU-hours ($lost_ev)" ||
    bad "teardown lost_gpu_s sum $lost_ev, gpu_hours_lost_to_failures $lost_json"
expect_cmp "failed starts restarted" "$("$JGET" "$TMP/r1.json" policies/0/failure_restarts)" ">" 0
# a tight retry budget fails jobs; repeated failed starts quarantine nodes
"$GS" simulate --no-progress --json --policy gangsched --pod-start-failure-rate 0.6 \
    --max-restarts 1 --trace tests/data/trace-crash.csv --cluster hgx:4,pcie:2 \
    --events "$TMP/q.ev" >"$TMP/q.json" || bad "start-failure run failed"
"$EVCHECK" "$TMP/q.ev" >/dev/null && ok "start-failure event log checks" || bad "log check failed"
expect_cmp "retry budget exhausted" "$("$JGET" "$TMP/q.json" policies/0/failed_jobs)" ">" 0
expect_cmp "nodes quarantined" "$("$JGET" "$TMP/q.json" policies/0/quarantines)" ">" 0
grep -q 'retry budget exhausted' "$TMP/q.ev" && ok "failed jobs logged with the reason" ||
    bad "no reason for failed jobs"
# the strike goes to the node of the member that failed, not always to the first pod's: thirty
# 2-node gangs that always fail to start on hgx:2 get both nodes quarantined in turn
{ echo job_id,submission_time,duration,num_gpu; i=1; while [ $i -le 30 ]; do echo "g$i,0,100,16"; i=$((i + 1)); done; } >"$TMP/two.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:2 --trace "$TMP/two.csv" \
    --pod-start-failure-rate 1 --max-restarts 1 --events "$TMP/two.ev" >/dev/null || bad "2-node run failed"
expect_cmp "quarantines of the first pod's node" "$(grep '"type":"quarantine"' "$TMP/two.ev" | grep -c hgx-0000)" ">" 0
expect_cmp "quarantines of the second pod's node" "$(grep '"type":"quarantine"' "$TMP/two.ev" | grep -c hgx-0001)" ">" 0
# a start that fails never completes, however short the job (regression)
printf 'job_id,submission_time,duration,num_gpu\nshort,0,10,1\n' >"$TMP/short.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:1 --trace "$TMP/short.csv" \
    --pod-start-failure-rate 1 --max-restarts 0 >"$TMP/s.json" || bad "short-job run failed"
expect_eq "a failed start does not complete" "$("$JGET" "$TMP/s.json" policies/0/completed)" 0
expect_eq "and fails with its budget" "$("$JGET" "$TMP/s.json" policies/0/failed_jobs)" 1
# random failures end with the work even when a gang can never be placed (regression)
printf 'job_id,submission_time,duration,num_gpu,topology-required\nok,0,100,8,\nstuck,0,100,16,node\n' >"$TMP/stuck.csv"
if timeout 60 "$GS" simulate --no-progress --policy gangsched --cluster hgx:3 --trace "$TMP/stuck.csv" \
    --node-mtbf 1 >/dev/null 2>&1; then ok "node failures stop when no work can progress"
else bad "simulation with node failures did not end"; fi
# a node that fails while only waiting gangs are left is still repaired: the 16-GPU gang, torn
# down by the failure of one node, runs again once both are back (seed 5: the second node fails
# while the gang waits; the run ended with it never finished, its node never repaired)
printf 'job_id,submission_time,duration,num_gpu\na,0,3600,8\ng,0,3600,16\n' >"$TMP/rep.csv"
timeout 60 "$GS" simulate --no-progress --json --policy gangsched --cluster hgx:2 --trace "$TMP/rep.csv" \
    --node-mtbf 2 --repair 1 --seed 5 --events "$TMP/rep.ev" >"$TMP/rep.json" || bad "repair run failed"
expect_eq "a gang waiting for a repair completes" "$("$JGET" "$TMP/rep.json" policies/0/completed)" 2
"$EVCHECK" "$TMP/rep.ev" >/dev/null && ok "repair event log checks" || bad "repair log check failed"
# a checkpoint after a member was lost saves nothing: checkpoints every 10 s, the node fails at
# 25 s, the teardown is at 55 s: 20 s saved, 35 s of 8 GPUs lost (the checkpoints at 30 s to 50 s
# were taken by a partial gang and counted as saved)
printf 'job_id,submission_time,duration,num_gpu,checkpoint_interval\nck,0,1000,8,10\n' >"$TMP/ck.csv"
printf 'node,down,up\nhgx-0000,25,26\n' >"$TMP/ck-out.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:1 --trace "$TMP/ck.csv" \
    --outages "$TMP/ck-out.csv" --failure-grace 30 --events "$TMP/ck.ev" >/dev/null || bad "checkpoint run failed"
expect_eq "work lost since the last checkpoint before the failure" \
    "$(sed -n 's/.*node failure.*"lost_gpu_s":\([0-9.]*\).*/\1/p' "$TMP/ck.ev")" 280.000
# a failure at time 0 counts in the recovery time: the first start fails at 0, the restart after
# the 300 s start timeout and the 60 s backoff comes 360 s after it
printf 'job_id,submission_time,duration,num_gpu\nz,0,10,1\n' >"$TMP/zero.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:1 --trace "$TMP/zero.csv" \
    --pod-start-failure-rate 1 --max-restarts 1 >"$TMP/zero.json" || bad "time-0 run failed"
expect_eq "recovery from a failure at time 0" "$("$JGET" "$TMP/zero.json" policies/0/mean_recovery_s)" 360
# a random failure of a node in a planned outage is skipped, and the node's next one drawn: after
# the outage (0 to 10,000 s) the node fails again (it never did: its random failures had stopped)
printf 'job_id,submission_time,duration,num_gpu,checkpoint_interval\nj,0,3600,8,60\n' >"$TMP/po.csv"
printf 'node,down,up\nhgx-0000,0,10000\n' >"$TMP/po-out.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:1 --trace "$TMP/po.csv" \
    --outages "$TMP/po-out.csv" --node-mtbf 1 --repair 0.01 --seed 1 >"$TMP/po.json" || bad "outage+mtbf run failed"
expect_cmp "random failures go on after an outage" "$("$JGET" "$TMP/po.json" policies/0/node_failures)" ">" 1
# a node is down while an outage or a random failure holds it: the repair of a random failure
# (25 s + 1 h) that falls in an outage (600 s to 20,000 s) does not end the outage (it did)
printf 'node,down,up\nhgx-0000,600,20000\n' >"$TMP/ho-out.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:1 --trace "$TMP/po.csv" \
    --outages "$TMP/ho-out.csv" --node-mtbf 0.01 --repair 1 --seed 1 --events "$TMP/ho.ev" >/dev/null ||
    bad "repair-in-outage run failed"
expect_eq "the first node-up is the outage's end" \
    "$(grep -o '"t":[0-9.]*,"type":"node-up"' "$TMP/ho.ev" | head -1 | sed 's/"t":\([0-9.]*\),.*/\1/')" 20000.000
"$EVCHECK" "$TMP/ho.ev" >/dev/null && ok "repair-in-outage event log checks" || bad "repair-in-outage log check failed"
# a gang preempted while broken (its node failed at 100 s, preempted at 120 s within the 60 s
# grace) is watched afresh on its next run: its node's next failure (400 s) tears it down at 460 s
printf 'job_id,submission_time,duration,num_gpu,priority\nlow,0,1000,8,0\nhigh,120,100,8,10\n' >"$TMP/pb.csv"
printf 'node,down,up\nhgx-0000,100,101\nhgx-0000,400,401\n' >"$TMP/pb-out.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:1 --trace "$TMP/pb.csv" \
    --outages "$TMP/pb-out.csv" --failure-grace 60 --events "$TMP/pb.ev" >/dev/null || bad "preempted-broken run failed"
expect_eq "a preempted broken gang is torn down by its next failure" \
    "$(grep '"job":"low"' "$TMP/pb.ev" | grep -c '"t":460.000,"type":"evict".*node failure')" 1
# a restart after a failure pays the restart cost and keeps the first start: failure at 10 s,
# teardown at 15 s, 50 s restart cost + 100 s of work again: finish at 165 s, first start 0
printf 'job_id,submission_time,duration,num_gpu,restart_cost\nj,0,100,8,50\n' >"$TMP/rc.csv"
printf 'node,down,up\nhgx-0000,10,11\n' >"$TMP/rc-out.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:1 --trace "$TMP/rc.csv" \
    --outages "$TMP/rc-out.csv" --failure-grace 5 --jobs-out "$TMP/rc.jobs" >/dev/null || bad "restart-cost run failed"
expect_eq "restart cost paid, first start kept" "$(sed -n 2p "$TMP/rc.jobs" | cut -d, -f6,7)" "0.000,165.000"
# an outage keeps its own end with --node-mtbf too (no random repair 1 h after its start)
printf 'job_id,submission_time,duration,num_gpu\nj,0,20000,8\n' >"$TMP/oe.csv"
printf 'node,down,up\nhgx-0000,100,10000\n' >"$TMP/oe-out.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:2 --trace "$TMP/oe.csv" \
    --outages "$TMP/oe-out.csv" --node-mtbf 100000 --repair 1 --events "$TMP/oe.ev" >/dev/null || bad "outage-end run failed"
expect_eq "the outage's node comes back at its end only" \
    "$(grep '"type":"node-up"' "$TMP/oe.ev" | grep -o '"t":[0-9.]*' | tr '\n' ' ')" '"t":10000.000 '
expect_fail "failures and --db" 2 "cannot be combined with --db" -- \
    "$GS" simulate --no-progress --policy gangsched --node-mtbf 5 --db "$TMP/x.db"
printf 'node,down,up\nnope,1,2\n' >"$TMP/bad.csv"
expect_fail "outage of an unknown node" 1 "bad.csv:2: column 'node'" -- \
    "$GS" simulate --no-progress --outages "$TMP/bad.csv"
# the clock counts milliseconds: an outage ending within the millisecond it starts is refused
# (it was read as one that ends when it starts; found by the fuzzer)
printf 'node,down,up\nhgx-0000,100,100.0004\n' >"$TMP/bad.csv"
expect_fail "outage shorter than a millisecond" 1 "bad.csv:2: column 'up': not a time after 'down' (to the millisecond)" -- \
    "$GS" simulate --no-progress --outages "$TMP/bad.csv"
# the retry delay doubles up to the queue's lifecycle.backoffMax (config.md): 600 s, 1200 s,
# 2400 s by default (1h), 600 s, 900 s, 900 s under 15m
printf 'job_id,submission_time,duration,num_gpu\nj,0,100,1\n' >"$TMP/bk.csv"
for cap in "" ", backoffMax: 15m"; do
    { printf 'apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\nqueues:\n'
      printf '  - name: bk\n    lifecycle: {maxRestarts: 3%s}\n' "$cap"; } >"$TMP/bk.yaml"
    "$GS" simulate --no-progress --policy gangsched --cluster hgx:1 --trace "$TMP/bk.csv" \
        --config "$TMP/bk.yaml" --pod-start-failure-rate 1 --max-restarts 3 --restart-backoff 600 \
        --events "$TMP/bk.ev" >/dev/null || bad "backoff run failed"
    gaps=$(grep -o '"t":[0-9.]*,"type":"[a-z]*"' "$TMP/bk.ev" | grep -E 'evict|submit' |
        sed 's/"t":\([0-9.]*\),"type":"\([a-z]*\)"/\2 \1/' |
        awk '$1 == "evict" { e = $2 } $1 == "submit" && e != "" { printf "%d ", $2 - e }')
    if [ -z "$cap" ]; then want="600 1200 2400 "; else want="600 900 900 "; fi
    expect_eq "retry delays under backoffMax '${cap#, backoffMax: }'" "$gaps" "$want"
done
finish
