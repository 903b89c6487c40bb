# Several accelerator kinds in one cluster (config devices:, docs/config.md): two NVIDIA nodes and
# two Ascend nodes, the trace's `resource` column names a job's kind. An Ascend job goes only to
# Ascend nodes and an NVIDIA job only to NVIDIA nodes, each charged under its own resource name:
# queue npu has 16 huawei.com/Ascend910 and no NVIDIA quota, so an NVIDIA job there is rejected
# (quota-never); queue gpu has 8 nvidia.com/gpu, so its second 8-GPU job waits for the first
# although gpu-1 is free. Without quota, a third NVIDIA job waits for an NVIDIA node while both
# Ascend nodes are idle.
. tests/sim/lib.inc
cat >"$TMP/nodes.yaml" <<'YAML'
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-0}
  status: {allocatable: {cpu: "128", memory: 1024Gi, pods: "110", nvidia.com/gpu: "8"}}
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-1}
  status: {allocatable: {cpu: "128", memory: 1024Gi, pods: "110", nvidia.com/gpu: "8"}}
- apiVersion: v1
  kind: Node
  metadata: {name: npu-0}
  status: {allocatable: {cpu: "192", memory: 1024Gi, pods: "110", huawei.com/Ascend910: "8"}}
- apiVersion: v1
  kind: Node
  metadata: {name: npu-1}
  status: {allocatable: {cpu: "192", memory: 1024Gi, pods: "110", huawei.com/Ascend910: "8"}}
YAML
cp config/examples/two-kinds.yaml "$TMP/cfg.yaml"
printf 'job_id,submission_time,duration,num_gpu,queue,resource,gpus_per_pod\n' >"$TMP/t.csv"
printf 'n1,0,100,16,npu,huawei.com/Ascend910,8\ng1,0,100,8,gpu,,8\n' >>"$TMP/t.csv"
printf 'g2,0,100,8,gpu,,8\nx,0,100,8,npu,,8\n' >>"$TMP/t.csv"
start_of() { grep "\"type\":\"start\".*\"job\":\"$2\"" "$1" | sed 's/^{"t":\([0-9.]*\),.*/\1/'; }
nodes_of() { grep "\"type\":\"start\".*\"job\":\"$2\"" "$1" | grep -o '"node":"[a-z0-9-]*"' | sort -u | tr -d '\n'; }
"$GS" simulate --no-progress --json --policy gangsched --nodes "$TMP/nodes.yaml" \
    --config "$TMP/cfg.yaml" --trace "$TMP/t.csv" --events "$TMP/q.ev" >"$TMP/q.out" ||
    bad "simulate with two device kinds failed"
expect_eq "Ascend gang on both Ascend nodes" "$(nodes_of "$TMP/q.ev" n1)" '"node":"npu-0""node":"npu-1"'
expect_eq "Ascend gang starts at once" "$(start_of "$TMP/q.ev" n1)" 0.000
expect_eq "NVIDIA job on an NVIDIA node" "$(nodes_of "$TMP/q.ev" g1)" '"node":"gpu-0"'
expect_eq "second NVIDIA job waits for gpu's 8 nvidia.com/gpu" "$(start_of "$TMP/q.ev" g2)" 100.000
grep '"type":"reject".*"job":"x"' "$TMP/q.ev" | grep -q 'quota-never.*npu nvidia.com/gpu on default needs 8, nominal 0' &&
    ok "NVIDIA job in the Ascend-only queue: quota-never under nvidia.com/gpu" ||
    bad "NVIDIA job in the Ascend-only queue was not refused by quota"
expect_eq "JSON names both kinds" "$("$JGET" "$TMP/q.out" device/kinds/1/resource)/$("$JGET" "$TMP/q.out" device/kinds/1/unit)" \
    "huawei.com/Ascend910/NPU"
# --db: the ledger has each kind's use under its own name (stopped while both jobs run)
printf 'job_id,submission_time,duration,num_gpu,queue,resource,gpus_per_pod\n' >"$TMP/l.csv"
printf 'n1,0,1000000,16,npu,huawei.com/Ascend910,8\ng1,0,1000000,8,gpu,,8\n' >>"$TMP/l.csv"
"$GS" simulate --no-progress --policy gangsched --nodes "$TMP/nodes.yaml" --config "$TMP/cfg.yaml" \
    --trace "$TMP/l.csv" --db "$TMP/k.db" --db-batch 1 --stop-after-events 6 >/dev/null 2>&1
"$BIN/gangctl" --db "$TMP/k.db" quota -o json >"$TMP/k.json" || bad "gangctl quota on the db failed"
expect_eq "db: npu uses 16 huawei.com/Ascend910" \
    "$("$JGET" "$TMP/k.json" queues/1/name) $("$JGET" "$TMP/k.json" queues/1/quotas/0/resource) $("$JGET" "$TMP/k.json" queues/1/quotas/0/used)" \
    "npu huawei.com/Ascend910 16"
expect_eq "db: gpu uses 8 nvidia.com/gpu" \
    "$("$JGET" "$TMP/k.json" queues/0/name) $("$JGET" "$TMP/k.json" queues/0/quotas/0/resource) $("$JGET" "$TMP/k.json" queues/0/quotas/0/used)" \
    "gpu nvidia.com/gpu 8"
"$GS" store check "$TMP/k.db" >/dev/null && ok "db: store check passes" || bad "db: store check failed"
# no quota: kinds still never share nodes
sed '/^queues:/,$d' "$TMP/cfg.yaml" >"$TMP/free.yaml"
printf 'queues:\n  - name: t\n' >>"$TMP/free.yaml"
printf 'job_id,submission_time,duration,num_gpu,queue,resource,gpus_per_pod\n' >"$TMP/f.csv"
printf 'a,0,100,8,t,,8\nb,0,100,8,t,,8\nc,0,100,8,t,,8\nd,0,100,8,t,huawei.com/Ascend910,8\n' >>"$TMP/f.csv"
printf 'big,0,100,16,t,huawei.com/Ascend910,16\n' >>"$TMP/f.csv"
"$GS" simulate --no-progress --policy gangsched --nodes "$TMP/nodes.yaml" --config "$TMP/free.yaml" \
    --trace "$TMP/f.csv" --events "$TMP/f.ev" >"$TMP/f.out" 2>"$TMP/f.err" || bad "simulate without quota failed"
expect_eq "third NVIDIA job waits for an NVIDIA node" "$(start_of "$TMP/f.ev" c)" 100.000
grep '"type":"start"' "$TMP/f.ev" | grep '"job":"[abc]"' | grep -q '"node":"npu' &&
    bad "an NVIDIA job landed on an Ascend node" || ok "NVIDIA jobs only on NVIDIA nodes"
expect_eq "Ascend job on an Ascend node" "$(nodes_of "$TMP/f.ev" d)" '"node":"npu-0"'
grep '"type":"reject".*"job":"big"' "$TMP/f.ev" |
    grep -q '16 NPU(s); larger than the cluster can ever hold (huawei.com/Ascend910)' &&
    ok "a 16-NPU pod is refused in NPUs, naming huawei.com/Ascend910" ||
    { bad "the 16-NPU pod's reason"; grep '"job":"big"' "$TMP/f.ev"; }
grep -q "32 GPUs (nvidia.com/gpu, huawei.com/Ascend910)" "$TMP/f.out" &&
    ok "header names both kinds" || { bad "header does not name both kinds"; head -3 "$TMP/f.out"; }
# preemption: with every node busy, a high-priority Ascend job evicts an Ascend job, never an
# NVIDIA one (freeing NVIDIA devices would not seat it)
printf 'job_id,submission_time,duration,num_gpu,queue,resource,gpus_per_pod,priority\n' >"$TMP/p.csv"
printf 'g1,0,7200,8,t,,8,0\ng2,0,7200,8,t,,8,0\n' >>"$TMP/p.csv"
printf 'a1,0,7200,8,t,huawei.com/Ascend910,8,0\na2,0,7200,8,t,huawei.com/Ascend910,8,0\n' >>"$TMP/p.csv"
printf 'hi,100,600,8,t,huawei.com/Ascend910,8,10\n' >>"$TMP/p.csv"
"$GS" simulate --no-progress --policy gangsched --nodes "$TMP/nodes.yaml" --config "$TMP/free.yaml" \
    --trace "$TMP/p.csv" --events "$TMP/p.ev" >/dev/null || bad "simulate with preemption failed"
victims=$(grep '"type":"evict"' "$TMP/p.ev" | grep -o '"job":"[a-z0-9]*"' | sort -u | tr -d '\n')
expect_eq "the high-priority Ascend job evicts one Ascend job" "$victims" '"job":"a1"'
expect_eq "and starts at once on an Ascend node" "$(start_of "$TMP/p.ev" hi)/$(nodes_of "$TMP/p.ev" hi)" \
    '100.000/"node":"npu-0"'
# nodes with none of the configured devices: the warning names both and what the nodes have
cat >"$TMP/amd.yaml" <<'YAML'
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: amd-0}
  status: {allocatable: {cpu: "128", memory: 1024Gi, pods: "110", amd.com/gpu: "8"}}
YAML
"$GS" simulate --no-progress --policy gangsched --nodes "$TMP/amd.yaml" --config "$TMP/free.yaml" \
    --trace "$TMP/f.csv" >"$TMP/w.out" 2>"$TMP/w.err"
grep -q "no node of 1 has the device resource nvidia.com/gpu, huawei.com/Ascend910; extended resources the nodes have: amd.com/gpu" \
    "$TMP/w.err" "$TMP/w.out" && ok "warning names both devices and amd.com/gpu" ||
    { bad "no warning naming both devices"; cat "$TMP/w.err"; }
# a bad devices list names the place
printf 'apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\ndevices:\n  - {resource: amd.com/gpu}\n  - {resource: amd.com/gpu}\n' >"$TMP/dup.yaml"
expect_fail "device listed twice" 1 "dup.yaml:5:5: devices\[1\]: device \"amd.com/gpu\" is listed twice" -- \
    "$GS" simulate --no-progress --nodes "$TMP/nodes.yaml" --config "$TMP/dup.yaml" --trace "$TMP/f.csv"
# backfill on probation (docs/preemption.md): big (24 NVIDIA GPUs) starves and holds a
# reservation on three NVIDIA nodes, expected at 12 s. An Ascend gang started meanwhile gets no
# promise (big could never use its node), an NVIDIA one of the same queue does.
{ echo "kind: List"; echo "items:"
  for n in gpu-0 gpu-1 gpu-2 gpu-3 npu-0; do
      r=nvidia.com/gpu
      [ "$n" = npu-0 ] && r=huawei.com/Ascend910
      printf -- '- kind: Node\n  metadata: {name: %s}\n  status: {allocatable: {cpu: "128", memory: 1024Gi, pods: "110", %s: "8"}}\n' "$n" "$r"
  done
} >"$TMP/p.yaml"
probation_config "devices:\n  - {resource: nvidia.com/gpu}\n  - {resource: huawei.com/Ascend910}\n" >"$TMP/pc.yaml"
probation_trace resource "n,4,1000,8,8,1,1,huawei.com/Ascend910,q" >"$TMP/p.csv"
"$GS" simulate --no-progress --policy gangsched --nodes "$TMP/p.yaml" --config "$TMP/pc.yaml" \
    --trace "$TMP/p.csv" --events "$TMP/p.ev" >/dev/null 2>"$TMP/err" || bad "probation run failed: $(cat "$TMP/err")"
probation_checks "$TMP/p.ev" n "the Ascend gang n"
finish
