# Every simulator run below writes its event log, and the independent checker replays it:
# no node over capacity at any instant, no GPU held twice, every gang started whole.
. tests/sim/lib.inc
run_checked() {
    label=$1
    shift
    if ! "$GS" simulate --no-progress --json --events "$TMP/ev.jsonl" "$@" >"$TMP/out.json" 2>"$TMP/err"; then
        bad "$label: simulate failed"; cat "$TMP/err"; return
    fi
    if "$EVCHECK" "$TMP/ev.jsonl" >"$TMP/check" 2>&1; then ok "$label: $(tail -n 1 "$TMP/check")"
    else bad "$label: event check failed"; head -n 20 "$TMP/check"; fi
    starts=$(grep -c '"type":"start"' "$TMP/ev.jsonl")
    expect_cmp "$label: starts logged" "$starts" ">" 0
}
run_checked "default"
run_checked "mixed cluster" --cluster nvl72:1,pcie:4,hgx:8 --policy gangsched --policy fifo
run_checked "gangs and priorities" --cluster hgx:4,pcie:2 --trace tests/data/trace-gangs.csv
run_checked "NodeList YAML" --nodes tests/data/nodes-small.yaml --trace tests/data/trace-small.csv
run_checked "two tenants" --cluster hgx:8 --trace tests/data/trace-small.csv --trace tests/data/trace-gangs.csv
# the JSON of the two-tenant run has one per_queue entry per trace file
"$JGET" "$TMP/out.json" policies/0/per_queue/trace-small >/dev/null && \
    "$JGET" "$TMP/out.json" policies/0/per_queue/trace-gangs >/dev/null && ok "queue per file" ||
    bad "queues are not named after the trace files"
finish
