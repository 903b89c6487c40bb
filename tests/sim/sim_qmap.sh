# MIG slices consume fractional GPU quota (config quotaMapping, docs/config.md): a mixed-strategy
# MIG node (14 x 1g.10gb, 4 x 3g.40gb) and a queue of 2 GPUs where a 1g slice counts 1/7 GPU
# and a 3g slice 3/7. Jobs a (7 x 1g = 1 GPU), c (2 x 1g) and d (1 x 1g) start at once
# (10/7 GPUs); b (3 x 3g = 9/7 GPUs) would make 19/7 > 2 and waits for them to end. Without
# the mapping MIG slices have no quota, and all four start at once. Then quota per DeviceClass on
# DRA-only nodes.
. tests/sim/lib.inc
cat >"$TMP/nodes.yaml" <<'YAML'
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: mig-0, labels: {nvidia.com/mig.strategy: mixed}}
  status:
    allocatable: {cpu: "128", memory: 1024Gi, pods: "110", nvidia.com/mig-1g.10gb: "14",
                  nvidia.com/mig-3g.40gb: "4"}
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-0}
  status: {allocatable: {cpu: "128", memory: 1024Gi, pods: "110", nvidia.com/gpu: "8"}}
YAML
cat >"$TMP/plain.yaml" <<'YAML'
apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: t
    quota: {default: {nvidia.com/gpu: 2}}
YAML
cp "$TMP/plain.yaml" "$TMP/mapped.yaml"
cat >>"$TMP/mapped.yaml" <<'YAML'
quotaMapping:
  - resource: nvidia.com/mig-1g.10gb
    quotaResource: nvidia.com/gpu
    weight: 1/7
  - resource: nvidia.com/mig-3g.40gb
    quotaResource: nvidia.com/gpu
    weight: 3/7
YAML
printf 'job_id,submission_time,duration,num_gpu,queue,resource,gpus_per_pod\n' >"$TMP/t.csv"
printf 'a,0,100,7,t,nvidia.com/mig-1g.10gb,1\nb,0,100,3,t,nvidia.com/mig-3g.40gb,1\n' >>"$TMP/t.csv"
printf 'c,0,100,2,t,nvidia.com/mig-1g.10gb,1\nd,0,100,1,t,nvidia.com/mig-1g.10gb,1\n' >>"$TMP/t.csv"
start_of() { grep "\"type\":\"start\".*\"job\":\"$2\"" "$1" | sed 's/^{"t":\([0-9.]*\),.*/\1/'; }
for cfg in mapped plain; do
    "$GS" simulate --no-progress --json --policy gangsched --nodes "$TMP/nodes.yaml" \
        --config "$TMP/$cfg.yaml" --trace "$TMP/t.csv" --events "$TMP/$cfg.ev" >"$TMP/$cfg.out" ||
        bad "simulate with $cfg config failed"
    expect_eq "$cfg: all four jobs completed" "$("$JGET" "$TMP/$cfg.out" policies/0/completed)" 4
done
for j in a c d; do
    expect_eq "mapped: $j starts at once" "$(start_of "$TMP/mapped.ev" $j)" 0.000
done
expect_eq "mapped: b (9/7 GPU) waits for 10/7 GPU to end" "$(start_of "$TMP/mapped.ev" b)" 100.000
expect_eq "mapped: makespan" "$("$JGET" "$TMP/mapped.out" policies/0/makespan_s)" 200
expect_eq "plain: b starts at once (no quota on MIG slices)" "$(start_of "$TMP/plain.ev" b)" 0.000
# the slices never take a whole GPU: gpu-0 holds no pod of these jobs
grep '"type":"start"' "$TMP/mapped.ev" | grep -q '"node":"gpu-0"' && bad "a MIG job landed on the GPU node" ||
    ok "MIG jobs only on the MIG node"
# quota per DeviceClass: on DRA-only nodes a job's GPUs are claimed devices of gpu.nvidia.com;
# mapped to example.com/dra-gpu (8), two 8-GPU jobs run one after the other although the
# queue's nvidia.com/gpu quota (64) would take both
cat >"$TMP/cls.yaml" <<'YAML'
apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: t
    quota: {default: {nvidia.com/gpu: 64, example.com/dra-gpu: 8}}
quotaMapping:
  - {deviceClass: gpu.nvidia.com, quotaResource: example.com/dra-gpu}
YAML
printf 'job_id,submission_time,duration,num_gpu,queue\nx,0,100,8,t\ny,0,100,8,t\n' >"$TMP/c.csv"
"$GS" simulate --no-progress --json --policy gangsched --nodes tests/data/nodes-dra.yaml \
    --config "$TMP/cls.yaml" --trace "$TMP/c.csv" --events "$TMP/cls.ev" >"$TMP/cls.out" ||
    bad "simulate with a DeviceClass mapping failed"
expect_eq "DeviceClass quota: y waits for x" "$(start_of "$TMP/cls.ev" y)" 100.000
sed 's/example.com\/dra-gpu: 8/example.com\/dra-gpu: 16/' "$TMP/cls.yaml" >"$TMP/cls16.yaml"
"$GS" simulate --no-progress --json --policy gangsched --nodes tests/data/nodes-dra.yaml \
    --config "$TMP/cls16.yaml" --trace "$TMP/c.csv" --events "$TMP/cls16.ev" >/dev/null ||
    bad "simulate with 16 example.com/dra-gpu failed"
expect_eq "with 16 example.com/dra-gpu both start at once" "$(start_of "$TMP/cls16.ev" y)" 0.000
# a bad resource cell names the file and line
printf 'job_id,submission_time,duration,num_gpu,queue,resource\nz,0,1,1,t,not a name\n' >"$TMP/bad.csv"
expect_fail "bad resource cell" 1 "bad.csv:2: column 'resource':" -- \
    "$GS" simulate --no-progress --nodes "$TMP/nodes.yaml" --config "$TMP/mapped.yaml" \
    --trace "$TMP/bad.csv"
finish
