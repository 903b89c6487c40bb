# The bundled default simulation: both policies, every documented key, and the properties the
# foundation promises (gangs start whole, gangsched never splits an NVLink island, and beats the
# FIFO baseline on queue time and rack spread on this workload).
. tests/sim/lib.inc
"$GS" simulate --no-progress --json >"$TMP/d.json" || { bad "simulate --json exited $?"; finish; }
expect_eq "policy 0" "$("$JGET" "$TMP/d.json" policies/0/name)" gangsched
expect_eq "policy 1" "$("$JGET" "$TMP/d.json" policies/1/name)" fifo
for p in 0 1; do
    for k in name jobs completed mean_queue_s p50_queue_s p95_queue_s p99_queue_s mean_jct_s \
        p95_jct_s gpu_utilization makespan_s tp_splits mean_racks_per_multinode_gang preemptions \
        gpu_hours_lost_to_preemption quota_violations fragmentation per_queue; do
        "$JGET" "$TMP/d.json" "policies/$p/$k" >/dev/null || bad "policy $p lacks key $k"
    done
    jobs=$("$JGET" "$TMP/d.json" policies/$p/jobs)
    expect_eq "policy $p completed all jobs" "$("$JGET" "$TMP/d.json" policies/$p/completed)" "$jobs"
    expect_eq "policy $p quota violations" "$("$JGET" "$TMP/d.json" policies/$p/quota_violations)" 0
    for q in research prod; do
        for k in jobs mean_queue_s p95_queue_s gpu_hours; do
            "$JGET" "$TMP/d.json" "policies/$p/per_queue/$q/$k" >/dev/null || bad "per_queue $q lacks $k"
        done
    done
    u=$("$JGET" "$TMP/d.json" policies/$p/gpu_utilization)
    expect_cmp "policy $p utilization in (0,1]" "$u" ">" 0
    expect_cmp "policy $p utilization <= 1" "$u" "<=" 1
done
expect_eq "jobs in the bundled trace" "$("$JGET" "$TMP/d.json" policies/0/jobs)" 4756
expect_eq "gangsched tp_splits" "$("$JGET" "$TMP/d.json" policies/0/tp_splits)" 0
expect_cmp "fifo splits islands" "$("$JGET" "$TMP/d.json" policies/1/tp_splits)" ">" 0
expect_cmp "mean queue: gangsched < fifo" "$("$JGET" "$TMP/d.json" policies/0/mean_queue_s)" "<" \
    "$("$JGET" "$TMP/d.json" policies/1/mean_queue_s)"
expect_cmp "p95 queue: gangsched < fifo" "$("$JGET" "$TMP/d.json" policies/0/p95_queue_s)" "<" \
    "$("$JGET" "$TMP/d.json" policies/1/p95_queue_s)"
expect_cmp "racks per gang: gangsched < fifo" \
    "$("$JGET" "$TMP/d.json" policies/0/mean_racks_per_multinode_gang)" "<" \
    "$("$JGET" "$TMP/d.json" policies/1/mean_racks_per_multinode_gang)"
expect_cmp "utilization: gangsched >= fifo" "$("$JGET" "$TMP/d.json" policies/0/gpu_utilization)" \
    ">=" "$("$JGET" "$TMP/d.json" policies/1/gpu_utilization)"
# The table form is readable and names both policies.
"$GS" simulate --no-progress >"$TMP/table.txt" || bad "table run failed"
grep -q "mean queue time" "$TMP/table.txt" && grep -q "gangsched" "$TMP/table.txt" &&
    grep -q "fifo" "$TMP/table.txt" && ok "table output" || bad "table output incomplete"
finish
