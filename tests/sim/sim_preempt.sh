# Preemption in the simulator: the checkpoint handshake with and without an answer, the work lost
# since the last checkpoint, and checkpoint-aware victims losing less than the blind baseline.
. tests/sim/lib.inc
# 1. handshake (checkpointGrace 2m): the job that checkpoints answers and loses nothing, the one
#    that never checkpoints is evicted at the end of the grace and loses its work
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:2 \
    --trace tests/data/trace-preempt.csv --config tests/data/preempt-handshake.yaml \
    --events "$TMP/h.jsonl" >"$TMP/h.json" || bad "handshake run failed"
"$EVCHECK" "$TMP/h.jsonl" >/dev/null && ok "handshake event log checks" || bad "event check failed"
expect_eq "checkpoint requests" "$(grep -c '"type":"checkpoint-request"' "$TMP/h.jsonl")" 2
grep '"type":"evict"' "$TMP/h.jsonl" | grep '"job":"low-ckpt"' | grep -q '"lost_gpu_s":0.000' &&
    ok "answered: nothing lost" || bad "the checkpointing job lost work"
grep '"type":"evict"' "$TMP/h.jsonl" | grep '"job":"low-nockpt"' |
    grep -q 'no checkpoint within the grace' && ok "no answer: evicted after the grace" ||
    bad "the silent job was not evicted at the end of the grace"
expect_eq "all completed" "$("$JGET" "$TMP/h.json" policies/0/completed)" 4
# 1b. a grace longer than the preemptor's 10-minute hold: the hold lasts as long as its victim's
#     handshake, so the cycle at 1,700 s (small arrives) takes no second victim for high-1
sed 's/checkpointGrace: 2m/checkpointGrace: 20m/' tests/data/preempt-handshake.yaml >"$TMP/long.yaml"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:2 \
    --trace tests/data/trace-handshake-long.csv --config "$TMP/long.yaml" \
    --events "$TMP/l.jsonl" >"$TMP/l.json" || bad "long-grace run failed"
expect_eq "long grace: one victim asked" "$(grep -c '"type":"checkpoint-request"' "$TMP/l.jsonl")" 1
expect_eq "long grace: one victim evicted" "$(grep -c '"type":"evict"' "$TMP/l.jsonl")" 1
# 2. no handshake: evicted at once, losing the work since the last periodic checkpoint
printf 'apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\nqueues:\n  - name: team\n    quota:\n      default:\n        nvidia.com/gpu: 16\n' >"$TMP/c.yaml"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:2 \
    --trace tests/data/trace-preempt.csv --config "$TMP/c.yaml" --events "$TMP/n.jsonl" \
    >"$TMP/n.json" || bad "run without handshake failed"
# low-ckpt ran 1000 s with a checkpoint every 600 s: 400 s x 8 GPUs lost
grep '"type":"evict"' "$TMP/n.jsonl" | grep '"job":"low-ckpt"' | grep -q '"lost_gpu_s":3200.000' &&
    ok "lost work = since the last checkpoint" || { bad "wrong lost work"; grep evict "$TMP/n.jsonl"; }
"$EVCHECK" "$TMP/n.jsonl" >/dev/null && ok "event log checks" || bad "event check failed"
# both low-priority jobs started at once, were evicted at 1000 s and 1010 s and waited again for
# the 600 s runs of high-1 and high-2: the queue time misses that, the wait counts it
expect_eq "low priority: first queue time" "$("$JGET" "$TMP/n.json" policies/0/per_priority/0/mean_queue_s)" 0
expect_eq "low priority: wait with re-waits" "$("$JGET" "$TMP/n.json" policies/0/per_priority/0/mean_wait_s)" 600
expect_eq "high priority: no wait" "$("$JGET" "$TMP/n.json" policies/0/per_priority/10/mean_wait_s)" 0
expect_eq "mean wait over all jobs" "$("$JGET" "$TMP/n.json" policies/0/mean_wait_s)" 300
# 3. checkpoint-aware victims lose less than the blind baseline, priorities seeded
"$GS" simulate --no-progress --json --policy gangsched --policy ckpt-blind --high-priority 0.33 \
    --events "$TMP/p.jsonl" >"$TMP/p.json" || bad "priority run failed"
"$EVCHECK" "$TMP/p.jsonl" >/dev/null && ok "priority run event log checks" || bad "event check failed"
aware=$("$JGET" "$TMP/p.json" policies/0/gpu_hours_lost_to_preemption)
blind=$("$JGET" "$TMP/p.json" policies/1/gpu_hours_lost_to_preemption)
expect_cmp "preemptions happened" "$("$JGET" "$TMP/p.json" policies/1/preemptions)" ">" 0
expect_cmp "checkpoint-aware loses less than blind" "$aware" "<" "$blind"
expect_eq "no quota violation" "$("$JGET" "$TMP/p.json" policies/0/quota_violations)" 0
# 4. a priority preemption that does not pay yet is taken up when it does, with nothing else
# happening: a cycle's wake-up, the instant the daemon runs a cycle at too. An 8-GPU job of
# priority 10 behind one of priority 0 that has run 4 h without a checkpoint pays after 4 h
# more (test_preempt.c); before, the simulator waited for the next event: the low job's end,
# 44 h later. Resumed from a crash at the eviction (the 4th event), the wake-up is not lost.
printf 'job_id,submission_time,duration,num_gpu,priority,checkpoint_interval\n%s\n%s\n' \
    "low,0,172800,8,0,0" "high,14400,3600,8,10,0" >"$TMP/quiet.csv"
QUIET="--no-progress --cluster hgx:1 --trace $TMP/quiet.csv --policy gangsched"
# shellcheck disable=SC2086
"$GS" simulate $QUIET --jobs-out "$TMP/quiet.jobs" >/dev/null || bad "quiet run failed"
expect_eq "quiet period: the preemption when it pays" \
    "$(awk -F, '$1 == "high" { print $6 }' "$TMP/quiet.jobs")" "28800.000"
# shellcheck disable=SC2086
"$GS" simulate $QUIET --db "$TMP/quiet.db" --db-batch 1 --stop-after-events 4 >/dev/null 2>&1
# shellcheck disable=SC2086
"$GS" simulate $QUIET --db "$TMP/quiet.db" --db-batch 1 --resume --jobs-out "$TMP/quiet2.jobs" \
    >/dev/null ||
    bad "quiet resume failed"
cmp -s "$TMP/quiet.jobs" "$TMP/quiet2.jobs" && ok "quiet period: resumed exactly" ||
    bad "quiet period: the resumed run differs: $(diff "$TMP/quiet.jobs" "$TMP/quiet2.jobs")"
finish
