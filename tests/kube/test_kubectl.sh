#!/bin/sh
# tests/kube/test_kubectl.sh: the real kubectl against the fake API server, over TLS with a
# token and kubectl's default (strict) validation: get, create, apply twice, patch, label,
# delete, watch, the PodGroup APIs, `kubectl apply -k deploy/` with the examples, and 1.37's
# CompositePodGroup served behind its gate.
. tests/kube/lib.inc
if ! command -v kubectl >/dev/null; then
    bad "kubectl is not installed (make deps installs Debian's kubernetes-client)"
    finish
fi
start_fake --kubelet --kubelet-delay 0.2 --grace-cap 1 --load tests/data/nodes-small.json
K() { timeout 60 kubectl --cache-dir "$TMP/kcache" --request-timeout=20s "$@"; }
OUT="$TMP/out"

# version and discovery
K version -o json >"$OUT" 2>&1
expect_eq "server version seen by kubectl" \
    "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["serverVersion"]["gitVersion"])' "$OUT" 2>&1)" v1.32.0
K api-resources >"$OUT" 2>&1
expect_eq "api-resources lists no PodGroup API before the CRDs are installed" \
    "$(grep -c '^podgroups ' "$OUT")" 0
K apply -f deploy/crds/ >"$OUT" 2>&1
expect_eq "kubectl apply -f deploy/crds/" "$(grep -c ' created$' "$OUT")" 2
K api-resources >"$OUT" 2>&1
expect_eq "then api-resources lists both PodGroup APIs" \
    "$(grep -c '^podgroups .*scheduling\.\(x-k8s\.io\|volcano\.sh\)' "$OUT")" 2

# get nodes / pods as JSON
K get nodes -o json >"$OUT" 2>&1
want=$(python3 -c 'import json; print(len(json.load(open("tests/data/nodes-small.json"))["items"]))')
got=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$OUT" 2>&1)
expect_eq "kubectl get nodes -o json: the loaded nodes" "$got" "$want"
K cordon gpu-c-001 >/dev/null 2>&1
K get node gpu-c-001 >"$OUT" 2>&1
expect_eq "kubectl get node: printNode's columns, a cordoned node" \
    "$(awk 'NR == 1 {print $1, $2, $3, $4, $5} NR == 2 {print $1, $2, $3}' "$OUT")" \
    "$(printf 'NAME STATUS ROLES AGE VERSION\ngpu-c-001 Ready,SchedulingDisabled <none>')"
K uncordon gpu-c-001 >/dev/null 2>&1
K get node gpu-c-001 -o jsonpath='{.status.allocatable.nvidia\.com/gpu}' >"$OUT" 2>&1
expect_eq "node status survives loading (allocatable GPUs of gpu-c-001)" "$(cat "$OUT")" 16

cat >"$TMP/pod.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: worker-0
  labels: {app: demo}
spec:
  schedulerName: gangsched
  containers:
  - name: main
    image: busybox
    env: [{name: MODE, value: one}]
    resources: {limits: {nvidia.com/gpu: "8"}}
  - name: sidecar
    image: busybox
YAML
cat >"$TMP/pg.yaml" <<'YAML'
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: demo}
spec: {minMember: 2}
YAML

# create -f, then AlreadyExists
K create -f "$TMP/pod.yaml" >"$OUT" 2>&1
expect_eq "kubectl create -f" "$(cat "$OUT")" "pod/worker-0 created"
# kubectl's strict validation is the server's (fieldValidation=Strict): an unknown field of a
# built-in kind is refused with kube-apiserver's words
sed 's/^  schedulerName:/  schedulerNamez:/; s/name: worker-0/name: worker-z/' "$TMP/pod.yaml" \
    >"$TMP/podz.yaml"
K create -f "$TMP/podz.yaml" >"$OUT" 2>&1
expect_eq "kubectl create -f with an unknown field: strict decoding error" \
    "$(grep -c 'strict decoding error: unknown field "spec.schedulerNamez"' "$OUT")" 1
expect_fail "kubectl create -f of an existing pod" 1 AlreadyExists -- K create -f "$TMP/pod.yaml"
K get pods -A -o json >"$OUT" 2>&1
expect_eq "kubectl get pods -A -o json" \
    "$(python3 -c 'import json,sys; print([p["metadata"]["name"] for p in json.load(open(sys.argv[1]))["items"]])' "$OUT" 2>&1)" \
    "['worker-0']"

# apply twice (second unchanged), then a change: a strategic merge patch of one container
K apply -f "$TMP/pg.yaml" >"$OUT" 2>&1
expect_eq "kubectl apply (new PodGroup)" "$(cat "$OUT")" "podgroup.scheduling.x-k8s.io/demo created"
K apply -f "$TMP/pg.yaml" >"$OUT" 2>&1
expect_eq "kubectl apply again" "$(cat "$OUT")" "podgroup.scheduling.x-k8s.io/demo unchanged"
sed 's/minMember: 2/minMember: 3/' "$TMP/pg.yaml" >"$TMP/pg3.yaml"
K apply -f "$TMP/pg3.yaml" >"$OUT" 2>&1
expect_eq "kubectl apply of a change" "$(cat "$OUT")" "podgroup.scheduling.x-k8s.io/demo configured"
expect_eq "the change is stored" "$(K get pg.scheduling.x-k8s.io demo -o jsonpath='{.spec.minMember}')" 3
K apply -f "$TMP/pod.yaml" >/dev/null 2>&1
K apply -f "$TMP/pod.yaml" >"$OUT" 2>&1
expect_eq "kubectl apply of the created pod, twice" "$(cat "$OUT")" "pod/worker-0 unchanged"
sed 's/value: one/value: two/' "$TMP/pod.yaml" >"$TMP/pod2.yaml"
K apply -f "$TMP/pod2.yaml" >"$OUT" 2>&1
expect_eq "kubectl apply of a changed container env" "$(cat "$OUT")" "pod/worker-0 configured"
expect_eq "strategic merge kept both containers, env changed" \
    "$(K get pod worker-0 -o jsonpath='{.spec.containers[*].name} {.spec.containers[0].env[0].value}')" \
    "main sidecar two"

# patch and label
K patch pg.scheduling.x-k8s.io demo --type=merge -p '{"spec":{"minMember":4}}' >"$OUT" 2>&1
expect_eq "kubectl patch --type=merge" "$(K get pg.scheduling.x-k8s.io demo -o jsonpath='{.spec.minMember}')" 4
expect_fail "strategic patch on a CRD is refused" 1 "UnsupportedMediaType\|unknown format\|415" -- \
    K patch pg.scheduling.x-k8s.io demo --type=strategic -p '{"spec":{"minMember":5}}'
K label pod worker-0 team=a >/dev/null 2>&1
expect_eq "kubectl label" "$(K get pods -l team=a -o name)" "pod/worker-0"
expect_eq "field selector through kubectl" \
    "$(K get pods --field-selector spec.schedulerName=gangsched,spec.nodeName= -o name)" "pod/worker-0"

# PodGroup APIs by full name and short name
K get podgroups.scheduling.x-k8s.io -o name >"$OUT" 2>&1
expect_eq "kubectl get podgroups.scheduling.x-k8s.io" "$(cat "$OUT")" "podgroup.scheduling.x-k8s.io/demo"
# server-side printing (fakeapi_table.py): the CRD's printer columns; a value the object does
# not have is null, which kubectl prints blank (shown "-" by cells() below, a space in a cell
# "_"), an age in seconds as "S"
cells() {
    python3 -c '
import re, sys
lines = open(sys.argv[1]).read().splitlines()
starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
for ln in lines:
    out = []
    for k, a in enumerate(starts):
        v = ln[a:starts[k + 1] if k + 1 < len(starts) else None].strip()
        out.append("S" if re.fullmatch(r"\d+s", v) else (v.replace(" ", "_") or "-"))
    print(" ".join(out))' "$1"
}
K get podgroups.scheduling.x-k8s.io >"$OUT" 2>&1
expect_eq "kubectl get podgroups: the CRD's printer columns" "$(cells "$OUT")" \
    "$(printf 'NAME PHASE MINMEMBER RUNNING SUCCEEDED FAILED AGE\ndemo - 4 - - - S')"
K label pg.scheduling.x-k8s.io demo team=a >/dev/null 2>&1
K get pods worker-0 >"$OUT" 2>&1
expect_eq "kubectl get pods: a pending pod (READY counts its containers)" "$(cells "$OUT")" \
    "$(printf 'NAME READY STATUS RESTARTS AGE\nworker-0 0/2 Pending 0 S')"
K get pg.scheduling.x-k8s.io -A --show-labels >"$OUT" 2>&1
expect_eq "all namespaces, labels: the namespace and labels from the row's object metadata" \
    "$(cells "$OUT")" \
    "$(printf 'NAMESPACE NAME PHASE MINMEMBER RUNNING SUCCEEDED FAILED AGE LABELS\ndefault demo - 4 - - - S team=a')"

# watch: kubectl get pods -w sees a pod created meanwhile
K get pods -w -o name --request-timeout=15s >"$TMP/watch.out" 2>&1 &
wpid=$!
i=0
while ! grep -q worker-0 "$TMP/watch.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sed 's/worker-0/worker-1/' "$TMP/pod.yaml" | K create -f - >/dev/null 2>&1
i=0
while ! grep -q worker-1 "$TMP/watch.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
expect_eq "kubectl get pods -w prints the new pod" "$(grep -c 'pod/worker-1' "$TMP/watch.out")" 1

# delete: an unbound pod at once; a bound, running pod after its (capped) grace period
K delete pod worker-1 >"$OUT" 2>&1
expect_eq "kubectl delete (unbound pod)" "$(cat "$OUT")" 'pod "worker-1" deleted'
printf '%s' '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"worker-0"},"target":{"kind":"Node","name":"node-a"}}' \
    >"$TMP/binding.json"
K create --raw /api/v1/namespaces/default/pods/worker-0/binding -f "$TMP/binding.json" >"$OUT" 2>&1
expect_eq "kubectl create --raw of a Binding" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$OUT" 2>&1)" Success
i=0
while [ "$(K get pod worker-0 -o jsonpath='{.status.phase}')" != Running ] && [ $i -lt 50 ]; do
    sleep 0.1; i=$((i + 1)); done
expect_eq "the simulated kubelet runs the bound pod" "$(K get pod worker-0 -o jsonpath='{.status.phase}')" Running
K get pod worker-0 -o wide >"$OUT" 2>&1
expect_eq "kubectl get pod -o wide: printPod's columns, its node" "$(cells "$OUT")" \
    "$(printf 'NAME READY STATUS RESTARTS AGE IP NODE NOMINATED_NODE READINESS_GATES\nworker-0 2/2 Running 0 S <none> node-a <none> <none>')"
start=$(date +%s)
K delete pod worker-0 --timeout=20s >"$OUT" 2>&1
expect_eq "kubectl delete (bound pod, waits for the kubelet)" "$(cat "$OUT")" 'pod "worker-0" deleted'
expect_cmp "deleted within the capped grace period" "$(( $(date +%s) - start ))" "<=" 10
expect_fail "the deleted pod is gone" 1 NotFound -- K get pod worker-0

# the deploy/ kustomization and the examples
K apply -k deploy/ >"$OUT" 2>&1
expect_eq "kubectl apply -k deploy/: objects created (the CRDs were applied above)" \
    "$(grep -c ' created$' "$OUT")" \
    "$(K kustomize deploy/ | grep '^kind: ' | grep -vc CustomResourceDefinition)"
K apply -k deploy/ >"$OUT" 2>&1
expect_eq "kubectl apply -k deploy/ again: all unchanged" "$(grep -vc ' unchanged$' "$OUT")" 0
expect_eq "Deployment has two replicas" \
    "$(K -n gangsched-system get deployment gangsched -o jsonpath='{.spec.replicas}')" 2
expect_eq "ClusterRole grants pods/binding create" \
    "$(K get clusterrole gangsched -o jsonpath='{.rules[?(@.resources[0]=="pods/binding")].verbs}')" '["create"]'
expect_eq "ConfigMap carries the configuration" \
    "$(K -n gangsched-system get configmaps -o jsonpath='{.items[0].data.config\.yaml}' | grep -c 'name: team-a')" 1
expect_eq "both PodGroup CRDs are installed" "$(K get crd -o name | sort | tr '\n' ' ')" \
    "customresourcedefinition.apiextensions.k8s.io/podgroups.scheduling.volcano.sh customresourcedefinition.apiextensions.k8s.io/podgroups.scheduling.x-k8s.io "
K apply -f deploy/examples/ >"$OUT" 2>&1
expect_eq "kubectl apply -f deploy/examples/" "$(grep -c ' created$' "$OUT")" 6
expect_eq "the gang's pods carry the pod-group label" \
    "$(K get pods -l scheduling.x-k8s.io/pod-group=llm-train -o name | wc -l)" 2
expect_eq "the Volcano PodGroup" "$(K get podgroups.scheduling.volcano.sh vc-train -o jsonpath='{.spec.queue}')" team-a
K get podgroups.scheduling.volcano.sh vc-train >"$OUT" 2>&1
expect_eq "the Volcano PodGroup's printer columns" "$(cells "$OUT")" \
    "$(printf 'NAME STATUS MINMEMBER RUNNING QUEUE AGE\nvc-train - 2 - team-a S')"
expect_eq "the deploy configuration passes config check" \
    "$("$GS" config check deploy/gangsched-config.yaml 2>&1 | head -n 1)" "deploy/gangsched-config.yaml: valid"

# 1.37's CompositePodGroup: served only with scheduling.k8s.io/v1alpha3 and its feature gate, as
# kube-apiserver serves it (--runtime-config and --feature-gates CompositePodGroup=true)
stop_fake
start_fake --serve-api scheduling.k8s.io/v1alpha3
expect_fail "without the CompositePodGroup gate kubectl finds no compositepodgroups" 1 \
    "doesn't have a resource type" -- K get compositepodgroups
stop_fake
start_fake --serve-api scheduling.k8s.io/v1alpha3 --feature-gates CompositePodGroup=true
K api-resources >"$OUT" 2>&1
expect_eq "with it api-resources lists compositepodgroups in scheduling.k8s.io/v1alpha3" \
    "$(grep -c '^compositepodgroups .*scheduling\.k8s\.io/v1alpha3 .*true .*CompositePodGroup' "$OUT")" 1
cat >"$TMP/cpg.yaml" <<'EOF2'
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {name: train, namespace: default}
spec:
  workloadRef: {workloadName: train, templateName: cpg}
  schedulingPolicy: {gang: {minGroupCount: 2}}
  schedulingConstraints: {topology: [{key: topology.kubernetes.io/zone}]}
EOF2
K apply -f "$TMP/cpg.yaml" >"$OUT" 2>&1
expect_eq "kubectl apply of a CompositePodGroup" "$(cat "$OUT")" \
    "compositepodgroup.scheduling.k8s.io/train created"
expect_eq "its minGroupCount as stored" \
    "$(K get compositepodgroup train -o jsonpath='{.spec.schedulingPolicy.gang.minGroupCount}')" 2
sed 's/minGroupCount: 2/minGroupCount: 3/' "$TMP/cpg.yaml" >"$TMP/cpg3.yaml"
expect_fail "its schedulingPolicy is immutable (+k8s:immutable)" 1 \
    'spec.schedulingPolicy: Invalid value: "null": field is immutable' -- K apply -f "$TMP/cpg3.yaml"
sed 's/^  workloadRef.*//; s/name: train,/name: noref,/' "$TMP/cpg.yaml" >"$TMP/cpg4.yaml"
expect_fail "workloadRef is required" 1 'spec.workloadRef: Required value' -- K apply -f "$TMP/cpg4.yaml"
sed 's/^spec:/spec:\n  disruptionMode: {all: {}}/; s/name: train,/name: dm,/' "$TMP/cpg.yaml" >"$TMP/cpg5.yaml"
expect_fail "an unknown spec field is refused under kubectl's strict validation" 1 \
    'unknown field "spec.disruptionMode"' -- K apply -f "$TMP/cpg5.yaml"
finish
