# openb with FGD's method (--arrival fgd) on the excerpts of the real files, and the renamed
# accelerator in the simulator (device.resource): same figures as nvidia.com/gpu, named.
. tests/sim/lib.inc
N=tests/data/openb-nodes-excerpt.csv P=tests/data/openb-pods-excerpt.csv
"$GS" simulate --nodes $N --trace $P --arrival fgd --seeds 1-3 --json >"$TMP/o.json" 2>"$TMP/o.err" &&
    ok "openb run" || { bad "openb run failed"; cat "$TMP/o.err"; }
expect_eq "workload" "$("$JGET" "$TMP/o.json" workload)" openb-pods-excerpt
expect_eq "GPUs of the excerpt" "$("$JGET" "$TMP/o.json" total_gpus)" 100
expect_eq "three seeds" "$("$JGET" "$TMP/o.json" seeds/2/seed)" 3
expect_eq "policy fgd first" "$("$JGET" "$TMP/o.json" seeds/0/policies/0/name)" fgd
expect_eq "curve point 130" "$("$JGET" "$TMP/o.json" seeds/0/policies/0/allocation_curve/130/0)" 130
r=$("$JGET" "$TMP/o.json" mean/0/gpu_allocation_ratio_at_100)
expect_cmp "fgd at 100% arrived" "$r" ">" 50
expect_cmp "fgd at 100% arrived" "$r" "<=" 100
r=$("$JGET" "$TMP/o.json" mean/1/gpu_allocation_ratio_at_100)
expect_cmp "bestfit at 100% arrived" "$r" ">" 50
"$GS" simulate --nodes $N --trace $P --arrival fgd --seed 2 --policy fgd-plain --policy spread \
    --policy bestfit-plain --json >"$TMP/p.json" && ok "fgd-plain, spread, bestfit-plain run" ||
    bad "fgd-plain, spread and bestfit-plain"
expect_eq "second policy spread" "$("$JGET" "$TMP/p.json" seeds/0/policies/1/name)" spread
expect_eq "third policy bestfit-plain" "$("$JGET" "$TMP/p.json" seeds/0/policies/2/name)" bestfit-plain
# the published curves beside: bestfit-plain against 05-BestFit of a file with one row
{ printf 'workload,sc_policy,tune,seed,total_gpus'; for k in $(seq 0 130); do printf ",%s" $k; done
  printf '\nopenb-pods-excerpt,05-BestFit,1.3,42,100'; for k in $(seq 0 130); do printf ",%s" $((k > 90 ? 90 : k)); done
  echo; } >"$TMP/pub.csv"
"$GS" simulate --nodes $N --trace $P --arrival fgd --seed 2 --policy bestfit-plain \
    --published "$TMP/pub.csv" --json >"$TMP/q.json" && ok "published beside" || bad "published"
expect_eq "published policy" "$("$JGET" "$TMP/q.json" mean/0/published_policy)" 05-BestFit
expect_eq "published at 100" "$("$JGET" "$TMP/q.json" mean/0/published_at_100)" 90
# same seed, same figures; the table names both policies
"$GS" simulate --nodes $N --trace $P --arrival fgd --seed 2 --json >"$TMP/a.json"
"$GS" simulate --nodes $N --trace $P --arrival fgd --seed 2 --json >"$TMP/b.json"
cmp -s "$TMP/a.json" "$TMP/b.json" && ok "seeded: identical reruns" || bad "reruns differ"
"$GS" simulate --nodes $N --trace $P --arrival fgd --seed 2 >"$TMP/t.txt"
grep -q "at 100% arrived:  fgd" "$TMP/t.txt" && grep -q "bestfit" "$TMP/t.txt" && ok "table" ||
    { bad "table"; cat "$TMP/t.txt"; }
expect_fail "arrival unknown" 2 "known arrivals: fgd" -- "$GS" simulate --arrival poisson --nodes $N --trace $P
expect_fail "arrival without nodes" 2 "needs --nodes" -- "$GS" simulate --arrival fgd --trace $P
expect_fail "bad seeds" 2 "expected A-B" -- "$GS" simulate --arrival fgd --nodes $N --trace $P --seeds 9-3
expect_fail "openb nodes without --arrival" 1 "openb node list: add --arrival fgd" -- "$GS" simulate --no-progress --nodes $N
expect_fail "openb pods without --arrival" 1 "openb pod list: add --arrival fgd" -- "$GS" simulate --no-progress --trace $P
expect_fail "NodeList for openb" 1 "not an openb node list" -- "$GS" simulate --arrival fgd --nodes tests/data/trace-small.csv --trace $P

# the accelerator renamed: the same run on amd.com/gpu nodes gives the same figures
sed 's#nvidia.com/gpu"#amd.com/gpu"#g' tests/data/nodes-small.json >"$TMP/amd.json"
printf 'apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\ndevice: {resource: amd.com/gpu}\nqueues:\n  - name: trace-small\n    quota: {default: {amd.com/gpu: 40}}\n' >"$TMP/amd.yaml"
sed 's#amd.com/gpu#nvidia.com/gpu#g; /^device:/d' "$TMP/amd.yaml" >"$TMP/nv.yaml"
"$GS" simulate --no-progress --json --config "$TMP/nv.yaml" --nodes tests/data/nodes-small.json \
    --trace tests/data/trace-small.csv >"$TMP/nv.out"
"$GS" simulate --no-progress --json --config "$TMP/amd.yaml" --nodes "$TMP/amd.json" \
    --trace tests/data/trace-small.csv >"$TMP/amd.out"
expect_eq "device named in the JSON" "$("$JGET" "$TMP/amd.out" device/resource)" amd.com/gpu
expect_eq "completed jobs as nvidia" "$("$JGET" "$TMP/amd.out" policies/0/completed)" \
    "$("$JGET" "$TMP/nv.out" policies/0/completed)"
expect_eq "mean queue time as nvidia" "$("$JGET" "$TMP/amd.out" policies/0/mean_queue_s)" \
    "$("$JGET" "$TMP/nv.out" policies/0/mean_queue_s)"
expect_eq "utilization as nvidia" "$("$JGET" "$TMP/amd.out" policies/0/gpu_utilization)" \
    "$("$JGET" "$TMP/nv.out" policies/0/gpu_utilization)"
"$GS" simulate --no-progress --nodes "$TMP/amd.json" --trace tests/data/trace-small.csv >"$TMP/w.out" 2>"$TMP/w.err"
grep -q "no node of 5 has the device resource nvidia.com/gpu; extended resources the nodes have: amd.com/gpu" "$TMP/w.err" &&
    ok "warning names the resources found" || { bad "no-device warning"; cat "$TMP/w.err"; }
# the store records the device: gangctl counts in its unit
sed 's#nvidia.com/gpu"#huawei.com/Ascend910"#g' tests/data/nodes-small.json >"$TMP/asc.json"
sed 's#amd.com/gpu#huawei.com/Ascend910#g' "$TMP/amd.yaml" >"$TMP/asc.yaml"
"$GS" simulate --no-progress --config "$TMP/asc.yaml" --nodes "$TMP/asc.json" \
    --trace tests/data/trace-small.csv --policy gangsched --db "$TMP/asc.db" >"$TMP/asc.out" 2>&1 ||
    { bad "Ascend run with --db"; cat "$TMP/asc.out"; }
grep -q "40 NPUs (huawei.com/Ascend910)" "$TMP/asc.out" && ok "header names the NPUs" || bad "header"
"$BIN/gangctl" --db "$TMP/asc.db" queues | grep -q "40 NPU" && ok "gangctl queues in NPU" ||
    bad "gangctl queues unit"
"$BIN/gangctl" --db "$TMP/asc.db" quota trace-small | grep -q "huawei.com/Ascend910 *40 NPU" &&
    ok "gangctl quota names the device" || bad "gangctl quota"
"$BIN/gangctl" --db "$TMP/asc.db" jobs --all | head -1 | grep -q "NPUS" && ok "jobs column NPUS" ||
    bad "jobs column"
finish
