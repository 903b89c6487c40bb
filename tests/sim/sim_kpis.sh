# The KPIs of --json recomputed from the event log by an independent replay (tests/tools/kpicheck.py,
# the definitions of docs/metrics.md written a second time): queue times and their percentiles,
# completion times, utilisation, makespan, multi-node gangs, preemptions, per queue, on runs with
# borrowing, preemption, checkpoint-aware victims, failures and a retry budget running out.
. tests/sim/lib.inc
checked() {
    label=$1
    shift
    if ! "$GS" simulate --no-progress --json --events "$TMP/ev.jsonl" "$@" >"$TMP/out.json" 2>"$TMP/err"; then
        bad "$label: simulate failed: $(head -3 "$TMP/err")"
        return
    fi
    if python3 tests/tools/kpicheck.py "$TMP/ev.jsonl" "$TMP/out.json" >"$TMP/check" 2>&1; then
        ok "$label: $(tail -n 1 "$TMP/check")"
    else
        bad "$label: the JSON and the events disagree"
        head -n 20 "$TMP/check"
    fi
}
T=sched/sim/data/itp
checked "default run, gangsched and fifo"
checked "priorities, three policies" --cluster hgx:4,pcie:2 --trace tests/data/trace-crash.csv \
    --high-priority 0.33 --policy gangsched --policy ckpt-blind --policy fifo
checked "random failures" --node-mtbf 500 --pod-start-failure-rate 0.05 --seed 3
checked "retry budget exhausted" --policy gangsched --pod-start-failure-rate 0.6 --max-restarts 1 \
    --trace tests/data/trace-crash.csv --cluster hgx:4,pcie:2
checked "seven tenants with quotas" --cluster hgx:96 --config config/examples/itp-tenants.yaml \
    --trace $T/cluster01.csv --trace $T/cluster02.csv --trace $T/cluster05.csv \
    --trace $T/cluster07.csv --trace $T/cluster08.csv --trace $T/cluster09.csv \
    --trace $T/cluster10.csv
# the checker itself: a figure changed by one second is caught, naming it
"$GS" simulate --no-progress --json --events "$TMP/ev.jsonl" --cluster hgx:8 \
    --trace tests/data/trace-small.csv >"$TMP/out.json" || bad "small run failed"
python3 - "$TMP/out.json" "$TMP/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["policies"][0]["mean_queue_s"] += 1
json.dump(d, open(sys.argv[2], "w"))
PY
expect_fail "kpicheck catches a wrong mean queue" 1 "gangsched.mean_queue_s: the events give" -- \
    python3 tests/tools/kpicheck.py "$TMP/ev.jsonl" "$TMP/bad.json"
finish
