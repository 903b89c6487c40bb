# Elastic jobs in the simulator (trace column min_pods, sched/sim/elastic.c), as the daemon runs
# elastic gangs (tests/kube/elastic_preempt.py): a preemption takes members above min_pods
# alone, the job runs on, and the members join it again when they fit.
. tests/sim/lib.inc
CFG="$TMP/c.yaml"
printf 'apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\nqueues:\n  - name: team\n    preemption:\n      withinQueue: LowerPriority\n    quota:\n      default:\n        nvidia.com/gpu: 8\n' >"$CFG"
sim() { # NAME TRACE [CONFIG]: events in $TMP/NAME.jsonl, JSON in $TMP/NAME.json, jobs CSV
    "$GS" simulate --no-progress --json --policy gangsched --cluster hgx:1 --trace "$2" \
        --config "${3:-$CFG}" --events "$TMP/$1.jsonl" --jobs-out "$TMP/$1.jobs" \
        >"$TMP/$1.json" || bad "$1: simulate failed"
    "$EVCHECK" "$TMP/$1.jsonl" >/dev/null && ok "$1: event log checks" ||
        bad "$1: event check failed"
}
ev() { grep "\"type\":\"$2\"" "$TMP/$1.jsonl"; }
end_of() { awk -F, -v j="$2" '$1 == j { print $7 }' "$TMP/$1.jobs"; }
kpi() { "$JGET" "$TMP/$1.json" "policies/0/$2"; }

# 1. inference (serve: 4 pods of 2 GPUs, min_pods 2, spread): hi (2 GPUs, priority 10) takes one
#    member at 1000 s; it joins again when hi ends at 1600 s; serving loses nothing: 7200 s
sim inf tests/data/trace-elastic.csv
expect_eq "inference: one shrink, one member left" \
    "$(ev inf shrink | grep -c '"t":1000.000.*"left":\[{"node":"hgx-0000","gpus":\[6,7\]}\],"pods":3')" 1
expect_eq "inference: the member joins when hi ends" \
    "$(ev inf grow | grep -c '"t":1600.000.*"joined":\[{"node":"hgx-0000","gpus":\[6,7\]}\],"pods":4')" 1
expect_eq "inference: no whole eviction" "$(ev inf evict | wc -l)" 0
expect_eq "inference: serve ends on time" "$(end_of inf serve)" 7200.000
expect_eq "inference: hi starts at once" "$(awk -F, '$1 == "hi" { print $6 }' "$TMP/inf.jobs")" 1000.000
expect_eq "member preemptions" "$(kpi inf member_preemptions)" 1
expect_eq "members preempted" "$(kpi inf members_preempted)" 1
expect_eq "members rejoined" "$(kpi inf member_joins)" 1
expect_eq "whole preemptions" "$(kpi inf preemptions)" 0
expect_eq "nothing lost" "$(kpi inf gpu_hours_lost_to_preemption)" 0
expect_eq "submit names min_pods" "$(ev inf submit | grep -c '"job":"serve".*"min_pods":2')" 1
# GPU-hours: serve's 8 GPUs x 1000 s + 6 x 600 s + 8 x 5600 s and hi's 2 x 600 s = 16 h (16.33
# if serve were counted at 8 GPUs throughout)
expect_cmp "GPU-hours as the members came and went" "$(kpi inf per_queue/team/gpu_hours)" "==" 16

# 1b. what a tenant sees (--db, gangctl): while the member waits, the running job's line gives
#     its verdict (the decision log's newest row, under the job's name as the daemon writes it);
#     once it has joined ("placed"), nothing waits. Stopped after the 7th and the 8th events
#     (hi starts; hi ends and the member joins)
at_event() { # N [TRACE]: the jobs document after N events
    rm -f "$TMP/w.db"
    "$GS" simulate --no-progress --policy gangsched --cluster hgx:1 --config "$CFG" \
        --trace "${2:-tests/data/trace-elastic.csv}" --db "$TMP/w.db" --db-batch 1 \
        --stop-after-events "$1" >/dev/null 2>&1
    "$BIN/gangctl" --db "$TMP/w.db" jobs -o json >"$TMP/w.json" || bad "gangctl jobs failed"
}
at_event 7
expect_eq "members waiting: the running job says so" "$("$JGET" "$TMP/w.json" jobs/0/members_waiting)" true
expect_eq "members waiting: their verdict, since the shrink" \
    "$("$JGET" "$TMP/w.json" jobs/0/why) $("$JGET" "$TMP/w.json" jobs/0/reason_since_ms)" "quota 1000000"
case "$("$JGET" "$TMP/w.json" jobs/0/reason)" in
"members waiting to rejoin: quota: 1 pod(s), 2 GPU(s); "*) ok "members waiting: the reason names them" ;;
*) bad "members waiting: reason $("$JGET" "$TMP/w.json" jobs/0/reason)" ;;
esac
"$BIN/gangctl" --db "$TMP/w.db" explain serve | grep -q "^Reason: *members waiting to rejoin" &&
    ok "explain shows the members' reason" || bad "explain shows no reason for the members"
at_event 8
expect_eq "joined: nothing waits" \
    "$("$JGET" "$TMP/w.json" jobs/0/members_waiting) $("$JGET" "$TMP/w.json" jobs/0/reason)" "false null"
expect_eq "joined: the log has placed, the members' verdict, placed" \
    "$(python3 -c "import sqlite3, sys; print(','.join(str(r[0]) for r in sqlite3.connect(
sys.argv[1]).execute(\"SELECT why FROM decisions WHERE gang = 'serve' ORDER BY id\")))" "$TMP/w.db")" \
    "0,7,0"

# 2. training (packing, a checkpoint every 600 s of work): every worker restarts from the last
#    checkpoint at each change. At 1000 s 600 s are saved (400 s x 8 GPUs lost); it runs at 6/8
#    speed, a checkpoint every 800 s, from 1000 s. The member may join within 800 s x 2/8 = 200 s
#    of one (gang_set_join): free at 1600 s, 600 s past, it waits for the checkpoint at 1800 s
#    and joins losing nothing; 6000 s of work at full speed: it ends at 7800 s
sed 's/^serve,0,7200,8,4,2,0,0,inference,team/train,0,7200,8,4,2,0,600,,team/' \
    tests/data/trace-elastic.csv >"$TMP/train.csv"
sim tr "$TMP/train.csv"
expect_eq "training: shrink and grow" "$(ev tr shrink | wc -l) $(ev tr grow | wc -l)" "1 1"
expect_eq "training: the member joins at the next checkpoint" "$(ev tr grow | grep -c '"t":1800.000')" 1
expect_eq "training: ends after its restart and slower run" "$(end_of tr train)" 7800.000
expect_cmp "training: work lost when the member left (3200 GPU-s)" \
    "$(kpi tr gpu_hours_lost_to_preemption)" "==" 0.88888888888888895
expect_eq "training: the loss split, as members left and joined (GPU-h)" \
    "$(printf '%.4f %.4f' "$(kpi tr gpu_hours_lost_at_shrink)" "$(kpi tr gpu_hours_lost_at_join)")" "0.8889 0.0000"
expect_eq "training: the events say what each change lost" \
    "$(ev tr shrink | grep -c '"lost_gpu_s":3200.000') $(ev tr grow | grep -c '"lost_gpu_s":0.000')" "1 1"
at_event 7 "$TMP/train.csv" # hi has ended at 1600 s: the member waits for the checkpoint
case "$("$JGET" "$TMP/w.json" jobs/0/reason)" in
"members waiting to rejoin: checkpoint: 1 pod(s), 2 GPU(s); new members of a training gang: joining restarts every worker from its last checkpoint, now 10m past (it checkpoints every 13m20s); they join within 3m20s after its next one") ok "training: the member's verdict says it waits for the checkpoint" ;;
*) bad "training: reason $("$JGET" "$TMP/w.json" jobs/0/reason)" ;;
esac
# 2b. hi ends at 1100 s, 100 s past the checkpoint, inside the window: it joins at once, losing
#     75 s of work (100 s at 6/8 speed) x 8 GPUs; 6600 s of work left again: it ends at 7700 s
sed 's/^hi,1000,600,/hi,1000,100,/' "$TMP/train.csv" >"$TMP/train2.csv"
sim tr2 "$TMP/train2.csv"
expect_eq "training, inside the window: joins at once, losing 600 GPU-s" \
    "$(ev tr2 grow | grep -c '"t":1100.000.*"lost_gpu_s":600.000')" 1
expect_eq "training, inside the window: ends at 7700 s" "$(end_of tr2 train)" 7700.000
expect_eq "inference: its changes lose nothing" \
    "$(ev inf shrink | grep -c '"lost_gpu_s":0.000') $(ev inf grow | grep -c '"lost_gpu_s":0.000')" "1 1"

# 3. a preemptor needing more than the members above min_pods (6 GPUs > 2 members x 2): the
#    job is evicted whole, as a rigid one
sed 's/^hi,1000,600,2,/hi,1000,600,6,/' tests/data/trace-elastic.csv >"$TMP/whole.csv"
sim wh "$TMP/whole.csv"
expect_eq "too big for its members: whole eviction" "$(ev wh evict | grep -c '"job":"serve"')" 1
expect_eq "too big for its members: no shrink" "$(ev wh shrink | wc -l)" 0
expect_eq "whole: the job's preemption counts" "$(kpi wh preemptions)" 1
at_event 9 "$TMP/whole.csv" # serve started again at 1600 s (the row keeps its first start)
expect_eq "whole: started again, it is not checkpointing" \
    "$("$JGET" "$TMP/w.json" jobs/0/state) $("$JGET" "$TMP/w.json" jobs/0/why)" "running null"

# 4. checkpointGrace: the job is asked first, runs whole 30 s while it writes, then the member
#    leaves having saved everything
sed 's/withinQueue: LowerPriority/withinQueue: LowerPriority\n      checkpointGrace: 2m/' "$CFG" \
    >"$TMP/grace.yaml"
sim gr "$TMP/train.csv" "$TMP/grace.yaml"
expect_eq "handshake: asked once" "$(ev gr checkpoint-request | grep -c '"t":1000.000')" 1
expect_eq "handshake: the member leaves after the answer" \
    "$(ev gr shrink | grep -c '"t":1030.000.*after a requested checkpoint')" 1
expect_eq "handshake: hi starts when it left" \
    "$(awk -F, '$1 == "hi" { print $6 }' "$TMP/gr.jobs")" 1030.000
# 4a. ... and when hi ends at 1630 s, 600 s past the restart (a window of 200 s after each
#     checkpoint, every 800 s), the member would wait 200 s for the next; the grace (2 min) is
#     shorter: the job is asked to checkpoint (sched_verdict.ask_checkpoint), answers in 30 s
#     and the member joins then, losing nothing: 1030 s at full speed, 630 s at 6/8, the rest
#     (5697.5 s) at full speed from 1660 s: it ends at 7357.5 s (7400 s waiting for 1830 s)
expect_eq "join: the job is asked once, at 1630 s" \
    "$(ev gr checkpoint-request | grep -c '"t":1630.000.*"for":"join","members":1')" 1
expect_eq "join: it answers at 1660 s and the member joins then, losing nothing" \
    "$(ev gr checkpoint | grep -c '"t":1660.000') $(ev gr grow | grep -c '"t":1660.000.*"lost_gpu_s":0.000')" "1 1"
expect_eq "join: ends at 7357.5 s" "$(end_of gr train)" 7357.500
expect_eq "join: one checkpoint asked for a join, nothing lost" \
    "$(kpi gr join_checkpoint_requests) $(kpi gr gpu_hours_lost_to_preemption)" "1 0"
# 4a''. crash and resume at every event of that run: the request and its answer still to come
#     (stored with the job, JOIN_CKPT_TAG in sched/sim/persist.c) are resumed exactly
G="--no-progress --json --policy gangsched --cluster hgx:1 --db-batch 1 --config $TMP/grace.yaml --trace $TMP/train.csv"
# shellcheck disable=SC2086
"$GS" simulate $G --db "$TMP/gref.db" --jobs-out "$TMP/gref.csv" >"$TMP/gref.json" || bad "join: --db run failed"
same=0 pending=0
for n in 1 2 3 4 5 6 7 8 9 10 11; do
    rm -f "$TMP"/gs.db*
    # shellcheck disable=SC2086
    "$GS" simulate $G --db "$TMP/gs.db" --stop-after-events "$n" >/dev/null 2>&1
    python3 -c "import sqlite3, sys; sys.exit(0 if sqlite3.connect(sys.argv[1]).execute(
        \"SELECT count(*) FROM meta WHERE value LIKE '%joinckpt 1630000 1660000 0%'\").fetchone()[0] else 1)" \
        "$TMP/gs.db" && pending=$((pending + 1))
    # shellcheck disable=SC2086
    "$GS" simulate $G --db "$TMP/gs.db" --resume --jobs-out "$TMP/gs.csv" >"$TMP/gs.json" 2>/dev/null &&
        cmp -s "$TMP/gref.csv" "$TMP/gs.csv" && cmp -s "$TMP/gref.json" "$TMP/gs.json" && same=$((same + 1))
done
expect_eq "join: resumed exactly after each of 11 events" "$same" 11
expect_cmp "join: some stops had the answer still to come" "$pending" ">=" 1
# 4a'''. inside the window too: hi ends at 1130 s, 100 s past the restart: joining then would
#     lose 100 s x 6 live GPUs (600 GPU-s), asking idles the member's 2 GPUs for the grace at
#     most (240 GPU-s): it asks, joins at 1160 s losing nothing, and the job ends at 7232.5 s
#     (7300 s joining at once)
sed 's/^hi,1000,600,/hi,1000,100,/' "$TMP/train.csv" >"$TMP/train3.csv"
sim gr3 "$TMP/train3.csv" "$TMP/grace.yaml"
expect_eq "join inside the window: asks at 1130 s, joins at 1160 s losing nothing" \
    "$(ev gr3 checkpoint-request | grep -c '"t":1130.000.*"for":"join"') $(ev gr3 grow | grep -c '"t":1160.000.*"lost_gpu_s":0.000')" "1 1"
expect_eq "join inside the window: ends at 7232.5 s" "$(end_of gr3 train)" 7232.500
# 4a'. a grace of 4 min is longer than the wait: no request, it joins at the checkpoint at 1830 s
sed 's/checkpointGrace: 2m/checkpointGrace: 4m/' "$TMP/grace.yaml" >"$TMP/grace4.yaml"
sim gr4 "$TMP/train.csv" "$TMP/grace4.yaml"
expect_eq "join, grace longer than the wait: no request, joins at 1830 s" \
    "$(ev gr4 checkpoint-request | grep -c '"for":"join"') $(ev gr4 grow | grep -c '"t":1830.000')" "0 1"

# 4b. a node fails: an elastic inference job that keeps min_pods live replaces only the members
#     lost with it (the daemon's rule, sched/engine/life.c), running on; a training one is torn
#     down whole. Both on hgx:2, hgx-0001 down from 1000 s to 4000 s, failure grace 30 s
printf 'node,down,up\nhgx-0001,1000,4000\n' >"$TMP/out.csv"
printf 'job_id,submission_time,duration,num_gpu,pods,min_pods,profile\n%s\n%s\n' \
    "serve,0,7200,8,4,2,inference" "train,0,7200,8,4,2," >"$TMP/nf.csv"
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:2 --trace "$TMP/nf.csv" \
    --outages "$TMP/out.csv" --events "$TMP/nf.jsonl" >"$TMP/nf.json" || bad "node failure run failed"
"$EVCHECK" "$TMP/nf.jsonl" >/dev/null && ok "nf: event log checks" || bad "nf: event check failed"
expect_eq "node failure: serve's two lost members replaced alone" \
    "$(ev nf shrink | grep -c '"t":1030.000.*"job":"serve".*lost members replaced.*"pods":2')" 1
expect_eq "node failure: serve never torn down" "$(ev nf evict | grep -c '"job":"serve"')" 0
expect_eq "node failure: train torn down whole" "$(ev nf evict | grep -c '"t":1030.000.*"job":"train"')" 1
expect_eq "node failure: serve's members join again" "$(ev nf grow | grep -c '"job":"serve".*"pods":4')" 1
expect_eq "members replaced" "$(kpi nf members_replaced)" 2
expect_eq "serve still ends on time" "$(ev nf finish | grep -c '"t":7200.000.*"job":"serve"')" 1

# 4c. the members join next to those that run: on hgx:16 (racks of 8 nodes) e runs on two nodes
#     of rack 1, the rest of the cluster is full; hi takes one of e's members; at 2000 s one
#     node frees in each rack: the member joins in rack 1 (hgx-0015), where a gang free to go
#     anywhere would take the lowest free node, hgx-0007 in rack 0 (test_cycle.c
#     test_joining_members_go_next_to_the_running_ones)
{
    echo "job_id,submission_time,duration,num_gpu,pods,min_pods,priority,checkpoint_interval"
    for i in 0 1 2 3 4 5 6; do echo "fill$i,0,100000,8,1,,20,"; done
    echo "fill7,0,2000,8,1,,20,"
    echo "e,10,50000,16,2,1,0,0" # no checkpoints: its member joins at once (gang_set_join)
    for i in 8 9 10 11 12; do echo "fill$i,15,100000,8,1,,20,"; done
    echo "fill13,15,1985,8,1,,20,"
    echo "hi,20,50000,8,1,,10,"
} >"$TMP/near.csv"
printf 'apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\nqueues:\n  - name: near\n    preemption:\n      withinQueue: LowerPriority\n' >"$TMP/near.yaml"
"$GS" simulate --no-progress --policy gangsched --cluster hgx:16 --trace "$TMP/near.csv" \
    --config "$TMP/near.yaml" --events "$TMP/near.jsonl" >/dev/null || bad "near run failed"
expect_eq "e runs in rack 1" "$(ev near start | grep -c '"job":"e".*hgx-0008.*hgx-0009')" 1
expect_eq "the member joins in its rack" \
    "$(ev near grow | grep -c '"t":2000.000.*"job":"e".*"joined":\[{"node":"hgx-0015"')" 1

# 4d. members join during a member handshake: el (5 GPUs as 2 + 2 + 1: two pod sets) runs on
#     hgx-0001; p1 takes its member a2 (set 0, hgx-0001 GPUs 5-6) at 220 s; p2 asks for its
#     1-GPU member b (set 1, hgx-0001 GPU 7) at 230 s with a grace of 2 min; f2 ends at 280 s
#     and a2 joins on hgx-0000 then (set 0: before b in member order). At 350 s b leaves, as the
#     daemon names it; before, the handshake's end was lost with the join (the job ran on,
#     marked as leaving, no victim again) and the member asked for was counted by its old place
#     (a2 would have left)
cat >"$TMP/hs.csv" <<'EOF'
job_id,submission_time,duration,num_gpu,pods,min_pods,priority,checkpoint_interval,profile,queue
f0,0,7200,5,,,20,0,,team
f2,0,280,3,,,20,0,,team
f1,0,7200,3,,,20,0,,team
el,1,7200,5,3,1,0,0,inference,team
p1,100,1000,2,,,10,0,,team
p2,230,600,1,,,10,0,,team
EOF
sed 's/nvidia.com\/gpu: 8/nvidia.com\/gpu: 16/' "$TMP/grace.yaml" >"$TMP/grace16.yaml"
"$GS" simulate --no-progress --policy gangsched --cluster hgx:2 --trace "$TMP/hs.csv" \
    --config "$TMP/grace16.yaml" --events "$TMP/hs.jsonl" >/dev/null || bad "handshake join run failed"
"$EVCHECK" "$TMP/hs.jsonl" >/dev/null && ok "hs: event log checks" || bad "hs: event check failed"
expect_eq "hs: b is asked at 230 s, a2 joins at 280 s on hgx-0000" \
    "$(ev hs checkpoint-request | grep -c '"t":230.000.*"job":"el"') $(ev hs grow | grep -c '"t":280.000.*"joined":\[{"node":"hgx-0000","gpus":\[6,7\]}\],"pods":3')" "1 1"
expect_eq "hs: the grace ends at 350 s and b leaves, not the member that joined" \
    "$(ev hs shrink | grep -c '"t":350.000.*"left":\[{"node":"hgx-0001","gpus":\[7\]}\],"pods":2')" 1

# 4e. a node fails during a member handshake: s (6 replicas of 2 GPUs, min_pods 2) spreads over
#     hgx:3; hi asks for its member on hgx-0000 at 100 s (grace 2 min); hgx-0001 fails at 110 s
#     and its two replicas are replaced alone at 140 s. The handshake goes on (before, the loss
#     ended it and the job ran on whole, marked as leaving): at 220 s the member leaves, s runs
#     with 3. With min_pods 4 the member cannot leave once two are lost: the handshake is
#     dropped and s never runs below 4 (the daemon's rule, shrink_due in driver_shrink.c)
cat >"$TMP/nl.csv" <<'EOF'
job_id,submission_time,duration,num_gpu,pods,min_pods,priority,checkpoint_interval,profile,queue
s,0,7200,12,6,2,0,0,inference,team
f0,1,7200,4,,,0,0,,team
f1,2,7200,4,,,20,0,,team
f2,3,7200,4,,,20,0,,team
hi,100,600,2,,,10,0,,team
EOF
printf 'node,down,up\nhgx-0001,110,4000\n' >"$TMP/nl-out.csv"
sed 's/nvidia.com\/gpu: 8/nvidia.com\/gpu: 24/' "$TMP/grace.yaml" >"$TMP/grace24.yaml"
nl_run() { # NAME TRACE
    "$GS" simulate --no-progress --policy gangsched --cluster hgx:3 --trace "$2" \
        --config "$TMP/grace24.yaml" --outages "$TMP/nl-out.csv" --events "$TMP/$1.jsonl" \
        >/dev/null || bad "$1: simulate failed"
    "$EVCHECK" "$TMP/$1.jsonl" >/dev/null && ok "$1: event log checks" || bad "$1: event check failed"
}
nl_run nl "$TMP/nl.csv"
expect_eq "node lost in a handshake: two replicas replaced, then the member asked for leaves" \
    "$(ev nl shrink | grep -c '"t":140.000.*"pods":4') $(ev nl shrink | grep -c '"t":220.000.*"left":\[{"node":"hgx-0000","gpus":\[2,3\]}\],"pods":3')" "1 1"
sed 's/^s,0,7200,12,6,2,/s,0,7200,12,6,4,/' "$TMP/nl.csv" >"$TMP/nl4.csv"
nl_run nl4 "$TMP/nl4.csv"
expect_eq "min_pods 4: replaced at 140 s, the handshake dropped, never below 4" \
    "$(ev nl4 shrink | grep -c '"t":140.000.*"pods":4') $(ev nl4 shrink | grep -vc '"pods":4')" "1 0"

# 5. rigid traces show none of it; min_pods equal to the pods is rigid
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:1 \
    --trace tests/data/trace-preempt.csv >"$TMP/rigid.json" || bad "rigid run failed"
grep -q member_preemptions "$TMP/rigid.json" && bad "a rigid trace reports member preemptions" ||
    ok "a rigid trace has no elastic KPIs"
sed 's/^serve,0,7200,8,4,2,/serve,0,7200,8,4,4,/' tests/data/trace-elastic.csv >"$TMP/four.csv"
sim four "$TMP/four.csv"
expect_eq "min_pods = pods: rigid, evicted whole" "$(ev four evict | wc -l) $(ev four shrink | wc -l)" "1 0"

# 5b. crash and resume with --db (as tests/sim/sim_crash.sh): 300 jobs, 60 % elastic, members
#     taken, waiting, joining and asked to checkpoint at the crash; every resume ends every job
#     exactly as the uninterrupted run, with the same KPIs and decision log
A="--no-progress --json --policy gangsched --cluster hgx:8 --db-batch 16 --config tests/data/elastic-crash.yaml --trace tests/data/trace-elastic-crash.csv"
# shellcheck disable=SC2086
"$GS" simulate $A --db "$TMP/ref.db" --jobs-out "$TMP/ref.csv" >"$TMP/ref.json" ||
    bad "elastic --db run failed"
# shellcheck disable=SC2086
"$GS" simulate $A --jobs-out "$TMP/mem.csv" >"$TMP/mem.json"
cmp -s "$TMP/ref.csv" "$TMP/mem.csv" && cmp -s "$TMP/ref.json" "$TMP/mem.json" &&
    ok "elastic: persisting changes no result" || bad "elastic: --db changed the results"
expect_cmp "elastic: members were taken" "$("$JGET" "$TMP/ref.json" policies/0/member_preemptions)" ">" 10
ref_check=$("$GS" store check "$TMP/ref.db" | sed -n 's/.* \([0-9]*\) decisions)$/\1/p')
resumed=0
for n in 150 450 750 1050 1350 1650; do
    rm -f "$TMP"/c.db*
    # shellcheck disable=SC2086
    "$GS" simulate $A --db "$TMP/c.db" --stop-after-events "$n" >/dev/null 2>&1
    # shellcheck disable=SC2086
    "$GS" simulate $A --db "$TMP/c.db" --resume --jobs-out "$TMP/c.csv" >"$TMP/c.json" 2>"$TMP/err" ||
        { bad "elastic: resume after $n events: $(cat "$TMP/err")"; continue; }
    check=$("$GS" store check "$TMP/c.db" | sed -n 's/.* \([0-9]*\) decisions)$/\1/p')
    if cmp -s "$TMP/ref.csv" "$TMP/c.csv" && cmp -s "$TMP/ref.json" "$TMP/c.json" &&
        [ "$check" = "$ref_check" ]; then
        resumed=$((resumed + 1))
    else
        bad "elastic: resumed after $n events differs"; diff "$TMP/ref.csv" "$TMP/c.csv" | head -3
    fi
done
expect_eq "elastic: resumed exactly at every stop (jobs, KPIs, $ref_check decisions)" "$resumed" 6

# 5c. flavors: e runs on the H100 node (flavor h100), hi takes a member, and when the L40S node
#     frees first the member joins there, charged to flavor l40s; the quota ledger stays exact
#     (no violation, a consistent store, nothing charged at the end) and a resume right after the
#     join ends as the uninterrupted run
cat >"$TMP/fl.yaml" <<'YAML'
apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
flavors:
  - name: h100
    nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
  - name: l40s
    nodeLabels: {nvidia.com/gpu.product: NVIDIA-L40S}
queues:
  - name: team
    preemption: {withinQueue: LowerPriority}
    quota:
      h100: {nvidia.com/gpu: 8}
      l40s: {nvidia.com/gpu: 8}
YAML
printf 'job_id,submission_time,duration,num_gpu,pods,min_pods,priority,queue\n%s\n%s\n%s\n' \
    "e,0,7200,8,4,2,0,team" "f,1,1500,8,1,,20,team" "hi,1000,600,2,1,,10,team" >"$TMP/fl.csv"
FL="--no-progress --json --policy gangsched --cluster hgx:1,pcie:1 --trace $TMP/fl.csv --config $TMP/fl.yaml --db-batch 1"
# shellcheck disable=SC2086
"$GS" simulate $FL --events "$TMP/fl.jsonl" --db "$TMP/fl.db" --jobs-out "$TMP/fl.jobs" \
    >"$TMP/fl.json" || bad "flavors run failed"
expect_eq "flavors: the member joins on the L40S node" \
    "$(ev fl grow | grep -c '"t":1501.000.*"job":"e".*"joined":\[{"node":"pcie-0000"')" 1
expect_eq "flavors: no quota violation" "$(kpi fl quota_violations)" 0
"$GS" store check "$TMP/fl.db" >/dev/null && ok "flavors: store consistent" || bad "flavors: store check"
expect_eq "flavors: nothing charged at the end" \
    "$("$BIN/gangctl" --db "$TMP/fl.db" queues | awk '$1 == "team" { print $8, $9 }')" "0 GPU"
rm -f "$TMP"/c.db*
# shellcheck disable=SC2086
"$GS" simulate $FL --db "$TMP/c.db" --stop-after-events 10 >/dev/null 2>&1
# committed at 1501 s: e's three members and hi on the H100 node, e's fourth on the L40S one
expect_eq "flavors: each member charged to its own flavor" "$(python3 -c "
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(' '.join('%s=%d' % r for r in c.execute('SELECT flavor, amount FROM ledger ORDER BY flavor')))
" "$TMP/c.db")" "h100=8 l40s=2"
# shellcheck disable=SC2086
"$GS" simulate $FL --db "$TMP/c.db" --resume --jobs-out "$TMP/c.jobs" >"$TMP/c.json" &&
    cmp -s "$TMP/fl.jobs" "$TMP/c.jobs" && cmp -s "$TMP/fl.json" "$TMP/c.json" &&
    ok "flavors: resumed exactly after the join" || bad "flavors: resume differs"

# 5d. --elastic F: multi-pod jobs without a min_pods cell become elastic with probability F,
#     min_pods = half their pods rounded up; seeded, and on a stream of its own (the priorities
#     --high-priority gives do not move). The crash trace with its min_pods cells emptied but
#     e0's (32 GPUs, 4 pods, min_pods 2, kept as it is)
awk -F, -v OFS=, 'NR > 1 && $1 != "e0" { $6 = "" } { print }' tests/data/trace-elastic-crash.csv \
    >"$TMP/noel.csv"
EL="--no-progress --json --policy gangsched --cluster hgx:8 --config tests/data/elastic-crash.yaml --trace $TMP/noel.csv --high-priority 0.33 --seed 3"
elastic_run() { # NAME F
    # shellcheck disable=SC2086
    "$GS" simulate $EL --elastic "$2" --events "$TMP/$1.jsonl" --jobs-out "$TMP/$1.jobs" \
        >"$TMP/$1.json" ||
        bad "--elastic $2: simulate failed"
}
elastic_run el0 0
elastic_run el6 0.6
elastic_run el6b 0.6
elastic_run el1 1
submits() { # NAME: "job pods min_pods" of each job's first submit (not its requeues)
    python3 -c "
import json, sys
seen = set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e['type'] == 'submit' and e['job'] not in seen:
        seen.add(e['job'])
        print(e['job'], e['pods'], e.get('min_pods', '-'))
" "$TMP/$1.jsonl"
}
multi=$(submits el0 | awk '$2 > 1' | wc -l)
expect_eq "--elastic 0: only e0 is elastic" "$(kpi el0 elastic_jobs)" 1
expect_eq "--elastic 1: every multi-pod job ($multi)" "$(kpi el1 elastic_jobs)" "$multi"
expect_eq "--elastic 1: min_pods is half the pods rounded up, e0's cell kept" \
    "$(submits el1 | awk '$2 > 1 && $3 != ($1 == "e0" ? 2 : int(($2 + 1) / 2))' | wc -l) $(submits el1 | awk '$2 == 1 && $3 != "-"' | wc -l)" "0 0"
n6=$(kpi el6 elastic_jobs)
expect_eq "--elastic 0.6: the event log's min_pods agree with elastic_jobs" \
    "$(submits el6 | awk '$3 != "-"' | wc -l)" "$n6"
expect_cmp "--elastic 0.6: more than 40 % of the multi-pod jobs" "$((n6 * 100))" ">" "$((multi * 40))"
expect_cmp "--elastic 0.6: fewer than 80 %" "$((n6 * 100))" "<" "$((multi * 80))"
cmp -s "$TMP/el6.json" "$TMP/el6b.json" && ok "--elastic: the same seed, the same run" ||
    bad "--elastic: two runs of one seed differ"
prios() { awk -F, 'NR > 1 { print $1, $4 }' "$TMP/$1.jobs" | sort; }
expect_cmp "--high-priority gave priority 10 to jobs of priority 0" \
    "$(prios el0 | grep -c ' 10$')" ">" "$(awk -F, 'NR > 1 && $7 == 10' "$TMP/noel.csv" | wc -l)"
expect_eq "--elastic: --high-priority's choices do not move" "$(prios el0 | md5sum)" "$(prios el6 | md5sum)"
expect_cmp "--elastic 0.6: members taken alone" "$(kpi el6 member_preemptions)" ">" "$(kpi el0 member_preemptions)"
# every GPU-second lost to preemption is in some evict, shrink or grow event (rounded to 1 ms)
expect_eq "--elastic 0.6: evict, shrink and grow events add up to the KPI" \
    "$(grep -E '"type":"(evict|shrink|grow)"' "$TMP/el6.jsonl" |
        sed -n 's/.*"lost_gpu_s":\([0-9.]*\).*/\1/p' | awk '{ s += $1 } END { printf "%.2f", s / 3600 }')" \
    "$(printf '%.2f' "$(kpi el6 gpu_hours_lost_to_preemption)")"

# 6. bad input names the place; what is not simulated is refused
printf 'submission_time,duration,num_gpu,pods,min_pods\n0,10,8,4,5\n' >"$TMP/bad.csv"
expect_fail "min_pods above pods" 1 "bad.csv:2: column 'min_pods': job bad:2: 5 is more than its 4 pods" -- \
    "$GS" simulate --no-progress --cluster hgx:1 --trace "$TMP/bad.csv"
printf 'submission_time,duration,num_gpu,pods,min_pods\n0,10,8,4,0\n' >"$TMP/zero.csv"
expect_fail "min_pods 0" 1 "zero.csv:2: column 'min_pods'" -- \
    "$GS" simulate --no-progress --cluster hgx:1 --trace "$TMP/zero.csv"
printf 'submission_time,duration,num_gpu,pods,min_pods,tp-size\n0,10,8,4,2,4\n' >"$TMP/tp.csv"
expect_fail "min_pods with slices" 1 "neither slices" -- \
    "$GS" simulate --no-progress --cluster nvl72:1 --trace "$TMP/tp.csv"
expect_fail "--elastic above 1" 2 "--elastic '1.5': expected a number from 0 to 1" -- \
    "$GS" simulate --elastic 1.5
finish
