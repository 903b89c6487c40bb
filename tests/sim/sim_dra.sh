# DRA-only nodes (GPUs only as ResourceSlice devices) schedule exactly like extended-resource
# nodes: the same trace on tests/data/nodes-dra.yaml (Nodes and ResourceSlices in one List) and on
# tests/data/nodes-ext.json (the same nodes with nvidia.com/gpu: 8) gives the same result; kwok's
# fixture slices (tests/data/kwok-dra/) give a node its GPUs from a second --nodes file; without
# them the node has none; with device amd.com/gpu AMD's full GPUs count, its partitions and
# NVIDIA's devices do not; NVIDIA's MIG devices count per profile (nvidia.com/mig-1g.10gb).
. tests/sim/lib.inc
for f in nodes-dra.yaml nodes-ext.json; do
    "$GS" simulate --no-progress --json --seed 3 --policy gangsched --nodes "tests/data/$f" \
        --trace tests/data/trace-gangs.csv --events "$TMP/$f.ev" >"$TMP/$f.out" ||
        bad "simulate on $f failed"
    "$EVCHECK" "$TMP/$f.ev" >/dev/null && ok "$f: event log checks" || bad "$f: event log check failed"
done
expect_cmp "jobs completed on DRA-only nodes" "$("$JGET" "$TMP/nodes-dra.yaml.out" policies/0/completed)" ">" 0
for k in completed started rejected mean_queue_s gpu_utilization makespan_s; do
    expect_eq "DRA-only nodes = extended-resource nodes: $k" \
        "$("$JGET" "$TMP/nodes-dra.yaml.out" policies/0/$k)" \
        "$("$JGET" "$TMP/nodes-ext.json.out" policies/0/$k)"
done
cmp -s "$TMP/nodes-dra.yaml.ev" "$TMP/nodes-ext.json.ev" && ok "identical event logs" ||
    bad "the event logs differ"
# kwok's fixture: a node without GPUs gets 2 from the slice given in another file
cat >"$TMP/node.yaml" <<'YAML'
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: kwok-node-0, uid: aaaa-bbbb-cccc-dddd}
  status: {allocatable: {cpu: "32", memory: 256Gi, pods: "110"}}
YAML
printf 'job_id,submission_time,duration,num_gpu\na,0,10,2\nb,0,10,2\n' >"$TMP/t.csv"
"$GS" simulate --no-progress --json --policy gangsched --nodes "$TMP/node.yaml" \
    --nodes tests/data/kwok-dra/resourceslice-kwok-node-0-2gpu-80Gi.yaml --trace "$TMP/t.csv" \
    >"$TMP/k.out" || bad "simulate with kwok's slice failed"
expect_eq "kwok node with its slice: both 2-GPU jobs ran" "$("$JGET" "$TMP/k.out" policies/0/completed)" 2
expect_eq "one after the other (2 GPUs)" "$("$JGET" "$TMP/k.out" policies/0/makespan_s)" 20
"$GS" simulate --no-progress --json --policy gangsched --nodes "$TMP/node.yaml" --trace "$TMP/t.csv" \
    >"$TMP/k0.out"
expect_eq "without the slice: no GPUs, both rejected" "$("$JGET" "$TMP/k0.out" policies/0/rejected)" 2
# a broken slice is an error naming the file, line and field
printf 'apiVersion: v1\nkind: List\nitems:\n- kind: ResourceSlice\n  metadata: {name: s}\n  spec: {driver: gpu.nvidia.com}\n' >"$TMP/bad.yaml"
expect_fail "slice without a pool" 1 "bad.yaml:4:3: items.0.: resourceslice s: spec.pool.name: missing" -- \
    "$GS" simulate --no-progress --nodes "$TMP/node.yaml" --nodes "$TMP/bad.yaml" --trace "$TMP/t.csv"
# AMD's DRA driver (gpu.amd.com): with device amd.com/gpu its full GPUs (type amdgpu) are the
# node's GPUs, its partitions (amdgpu-partition) are not; NVIDIA's slices then count for nothing
cat >"$TMP/amd.yaml" <<'YAML'
apiVersion: v1
kind: List
items:
- kind: ResourceSlice
  metadata: {name: kwok-node-0-gpu.amd.com}
  spec:
    driver: gpu.amd.com
    nodeName: kwok-node-0
    pool: {name: kwok-node-0, generation: 1, resourceSliceCount: 1}
    devices:
    - {name: gpu-0-128, attributes: {type: {string: amdgpu}}}
    - {name: gpu-1-136, attributes: {type: {string: amdgpu}}}
    - {name: gpu-0-129, attributes: {type: {string: amdgpu-partition}}}
    - {name: gpu-0-130, attributes: {type: {string: amdgpu-partition}}}
YAML
printf 'apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\ndevice: {resource: amd.com/gpu}\nqueues: [{name: t}, {name: t3}]\n' >"$TMP/amdcfg.yaml"
printf 'job_id,submission_time,duration,num_gpu\na,0,10,2\nb,0,10,2\nc,0,10,3\n' >"$TMP/t3.csv"
"$GS" simulate --no-progress --json --policy gangsched --config "$TMP/amdcfg.yaml" \
    --nodes "$TMP/node.yaml" --nodes "$TMP/amd.yaml" --trace "$TMP/t3.csv" >"$TMP/amd.out" ||
    bad "simulate with AMD's slice failed"
expect_eq "AMD slice: both 2-GPU jobs ran" "$("$JGET" "$TMP/amd.out" policies/0/completed)" 2
expect_eq "one after the other (2 full GPUs; partitions are not GPUs)" "$("$JGET" "$TMP/amd.out" policies/0/makespan_s)" 20
expect_eq "the 3-GPU job is rejected" "$("$JGET" "$TMP/amd.out" policies/0/rejected)" 1
"$GS" simulate --no-progress --json --policy gangsched --config "$TMP/amdcfg.yaml" \
    --nodes "$TMP/node.yaml" --nodes tests/data/kwok-dra/resourceslice-kwok-node-0-2gpu-80Gi.yaml \
    --trace "$TMP/t.csv" >"$TMP/amd0.out"
expect_eq "device amd.com/gpu: NVIDIA's slice gives no GPUs (nothing starts)" "$("$JGET" "$TMP/amd0.out" policies/0/started)" 0
# NVIDIA's static MIG devices (type mig) count per profile as the device plugin's mixed strategy
# names them, as the daemon counts them (sched/kube/mig.h): 7 devices of 1g.10gb on kwok-node-0
cat >"$TMP/mig.yaml" <<'YAML'
apiVersion: v1
kind: List
items:
- kind: ResourceSlice
  metadata: {name: kwok-node-0-gpu.nvidia.com}
  spec:
    driver: gpu.nvidia.com
    nodeName: kwok-node-0
    pool: {name: kwok-node-0, generation: 1, resourceSliceCount: 1}
    devices:
YAML
for i in 0 1 2 3 4 5 6; do
    printf '    - {name: gpu-0-mig-1g10gb-19-%d, attributes: {type: {string: mig}, profile: {string: 1g.10gb}}}\n' "$i" >>"$TMP/mig.yaml"
done
printf 'job_id,submission_time,duration,num_gpu,resource,gpus_per_pod\n' >"$TMP/tm.csv"
printf 'a,0,10,4,nvidia.com/mig-1g.10gb,4\nb,0,10,4,nvidia.com/mig-1g.10gb,4\n' >>"$TMP/tm.csv"
printf 'c,0,10,1,nvidia.com/mig-3g.40gb,1\nd,0,10,1,,1\n' >>"$TMP/tm.csv"
"$GS" simulate --no-progress --json --policy gangsched --nodes "$TMP/node.yaml" \
    --nodes "$TMP/mig.yaml" --trace "$TMP/tm.csv" >"$TMP/mig.out" || bad "simulate with MIG devices failed"
expect_eq "MIG devices: both 4-slice jobs of 1g.10gb ran" "$("$JGET" "$TMP/mig.out" policies/0/completed)" 2
expect_eq "one after the other (7 slices)" "$("$JGET" "$TMP/mig.out" policies/0/makespan_s)" 20
expect_eq "a 3g.40gb job and a whole-GPU job are rejected (no such devices)" "$("$JGET" "$TMP/mig.out" policies/0/rejected)" 2
finish
