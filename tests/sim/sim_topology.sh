# Topology requests from trace columns (named after the PodGroup annotations): a required rack,
# tensor-parallel groups, slices inside racks, a TP group of 16 across 4 pods inside one NVL72
# clique. The checker verifies every start; the script checks where gangs landed.
. tests/sim/lib.inc
"$GS" simulate --no-progress --json --policy gangsched --cluster hgx:16,pcie:8,nvl72:1 \
    --trace tests/data/trace-topology.csv --events "$TMP/ev.jsonl" >"$TMP/out.json" ||
    bad "simulate failed"
expect_eq "all topology jobs completed" "$("$JGET" "$TMP/out.json" policies/0/completed)" 5
expect_eq "no tensor-parallel split" "$("$JGET" "$TMP/out.json" policies/0/tp_splits)" 0
"$EVCHECK" "$TMP/ev.jsonl" >/dev/null && ok "event log checks" || bad "event log check failed"
# the TP-16 gang: four 4-GPU pods, all on nodes of the NVL72 rack
line=$(grep '"type":"start"' "$TMP/ev.jsonl" | grep '"job":"nvl-tp16"')
n=$(printf '%s' "$line" | grep -o '"node":"nvl72-00-' | wc -l)
expect_eq "TP-16 pods inside the NVL72 clique" "$n" 4
# the rack-16 gang: both nodes in the first rack of 8 (hgx-0000..hgx-0007)
line=$(grep '"type":"start"' "$TMP/ev.jsonl" | grep '"job":"rack-16"')
n=$(printf '%s' "$line" | grep -o '"node":"hgx-000[0-7]"' | wc -l)
expect_eq "rack-16 inside one rack" "$n" 2
# an unknown level is an error naming the file, the line and the column
printf 'job_id,submission_time,duration,num_gpu,topology-required\nx,0,1,8,shelf\n' >"$TMP/bad.csv"
expect_fail "unknown topology level" 1 "bad.csv:2: column 'topology-required': unknown topology level 'shelf'" -- \
    "$GS" simulate --no-progress --trace "$TMP/bad.csv"
finish
