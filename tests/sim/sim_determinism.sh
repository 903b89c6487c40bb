# Same input, same output: two runs give byte-identical results and event logs.
. tests/sim/lib.inc
for i in 1 2; do
    "$GS" simulate --no-progress --json --events "$TMP/ev$i.jsonl" --cluster hgx:6,pcie:2 \
        --trace tests/data/trace-gangs.csv --trace tests/data/trace-small.csv >"$TMP/out$i.json" ||
        bad "run $i failed"
done
cmp -s "$TMP/out1.json" "$TMP/out2.json" && ok "identical JSON" || bad "JSON differs between runs"
cmp -s "$TMP/ev1.jsonl" "$TMP/ev2.jsonl" && ok "identical event logs" || bad "event logs differ"
# The order of --policy flags does not change a policy's result.
"$GS" simulate --no-progress --json --policy fifo --policy gangsched --cluster hgx:6,pcie:2 \
    --trace tests/data/trace-gangs.csv --trace tests/data/trace-small.csv >"$TMP/out3.json"
expect_eq "gangsched result independent of policy order" \
    "$("$JGET" "$TMP/out3.json" policies/1/mean_queue_s)" "$("$JGET" "$TMP/out1.json" policies/0/mean_queue_s)"
finish
