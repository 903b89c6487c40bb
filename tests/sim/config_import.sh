# `gangsched config import-kueue`: Kueue v1beta1 and v1beta2 and Volcano Queue manifests (our
# copies of their documented shapes, tests/data/kueue-*.yaml and volcano-queues.yaml) become a
# configuration that `config check` accepts, each field mapped or commented; bad input names the
# file, line and column. Also `config check`'s per-cohort totals and its warning for quotas above
# the cluster.
. tests/sim/lib.inc
imp() { "$GS" config import-kueue "$@"; }
imp tests/data/kueue-v1beta1.yaml >"$TMP/a.yaml" 2>"$TMP/a.err" && ok "v1beta1 imported" || bad "v1beta1: $(cat "$TMP/a.err")"
"$GS" config check "$TMP/a.yaml" >"$TMP/a.chk" && ok "v1beta1 result passes config check" || bad "config check: $(cat "$TMP/a.chk")"
has() { grep -q -F -- "$2" "$1" && ok "$3" || bad "$3: '$2' not in $(basename "$1")"; }
has "$TMP/a.yaml" '- name: "team-a-cq"' "ClusterQueue -> queue"
has "$TMP/a.yaml" 'cohort: "team-ab"' "spec.cohort -> cohort"
has "$TMP/a.yaml" '"cpu": {nominal: "9", borrowingLimit: "1"}' "nominalQuota and borrowingLimit"
has "$TMP/a.yaml" '"nvidia.com/gpu": {nominal: "16", lendingLimit: "4"}' "lendingLimit"
has "$TMP/a.yaml" '"memory": {nominal: "36Gi"}' "quantities kept as written"
has "$TMP/a.yaml" 'ordering: StrictFIFO' "queueingStrategy -> ordering"
has "$TMP/a.yaml" 'withinQueue: LowerPriority' "withinClusterQueue -> withinQueue"
has "$TMP/a.yaml" 'reclaimWithinCohort: Any' "reclaimWithinCohort"
has "$TMP/a.yaml" 'weight: 2' "fairSharing.weight -> weight"
has "$TMP/a.yaml" '"instance-type": "on-demand"' "ResourceFlavor nodeLabels"
has "$TMP/a.yaml" "# ResourceFlavor spot: nodeTaints and tolerations are not mapped" "nodeTaints commented"
has "$TMP/a.yaml" "# stopPolicy Hold: run 'gangctl queue hold team-b-cq'" "stopPolicy commented with the gangctl command"
has "$TMP/a.yaml" "spec.flavorFungibility is not mapped (tests/data/kueue-v1beta1.yaml:" "unmapped field named with its line"
python3 - "$TMP/a.yaml" <<'PY' && ok "LocalQueues -> localQueues of their ClusterQueue's queue" || bad "localQueues: $(grep -A1 localQueues "$TMP/a.yaml")"
import sys
text = open(sys.argv[1]).read()
a = text.index('- name: "team-a-cq"'); b = text.index('- name: "team-b-cq"')
assert '- "team-a/user-queue"' in text[a:b], "team-a-cq"
assert '- "team-b/team-b-cq"' in text[b:], "team-b-cq"
PY
printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {namespace: x, name: lq}\nspec: {clusterQueue: elsewhere}\n' >"$TMP/lq.yaml"
imp "$TMP/lq.yaml" >"$TMP/lq.out" && grep -q "# LocalQueue x/lq: its ClusterQueue elsewhere is not among the inputs" "$TMP/lq.out" &&
    ok "a LocalQueue of a ClusterQueue not given: commented" || bad "lq without cq: $(cat "$TMP/lq.out")"
grep -q "namespaceSelector" "$TMP/a.yaml" && bad "namespaceSelector {} commented (it matches all, as gangsched)" || ok "namespaceSelector {} needs no comment"
# the nominal quotas survive: config check prints the same numbers
grep -q 'nvidia.com/gpu@on-demand: nominal 16, lend <=4' "$TMP/a.chk" && ok "check shows the imported quota" || bad "check: $(grep gpu "$TMP/a.chk")"

imp tests/data/kueue-v1beta2.yaml >"$TMP/b.yaml" 2>"$TMP/b.err" && ok "v1beta2 (a List) imported" || bad "v1beta2: $(cat "$TMP/b.err")"
"$GS" config check "$TMP/b.yaml" >"$TMP/b.chk" && ok "v1beta2 result passes config check" || bad "check b"
has "$TMP/b.yaml" 'cohort: "research"' "spec.cohortName -> cohort"
has "$TMP/b.yaml" 'parent: "root-cohort"' "Cohort spec.parentName -> parent"
has "$TMP/b.yaml" '{nominal: "0", borrowingLimit: "16", lendingLimit: "0"}' "Cohort quota with limits"
has "$TMP/b.yaml" "spec.admissionChecksStrategy is not mapped" "admission checks commented"
# a ResourceFlavor with no nodeLabels (Kueue's usual default-flavor) imports (it used to stop the
# import as "out of memory"); its resourceWeights (KEP-8902) map where a quota names the resource
python3 - "$TMP/b.yaml" <<'PY' && ok "ResourceFlavor resourceWeights -> flavors[].resourceWeights" || bad "resourceWeights: $(grep -B2 -A3 resourceWeights "$TMP/b.yaml")"
import sys
t = open(sys.argv[1]).read()
a = t.index('- name: "default-flavor"')
assert t[a:].startswith('- name: "default-flavor"\n    resourceWeights:\n      "nvidia.com/gpu": 8\n'), t[a:a+120]
assert 'nodeLabels' not in t[a:t.index('cohorts:')]
PY
has "$TMP/b.yaml" 'resourceWeights cpu "500m" is not mapped' "a weight on a resource no quota names commented"
grep -q 'default-flavor .*fair-share weights: nvidia.com/gpu 8' "$TMP/b.chk" && ok "config check prints the flavor's weights" || bad "weights not printed: $(grep -A2 '^flavors' "$TMP/b.chk")"
# per-cohort totals: root-cohort holds its own 8, research's 0, nlp's 32 and serving's 24
grep -q '^  cohort root-cohort (2 queues): nvidia.com/gpu@default-flavor 64$' "$TMP/b.chk" &&
    ok "config check: per-cohort total" || bad "totals: $(sed -n '/per cohort/,$p' "$TMP/b.chk")"
grep -q '^  cohort research (1 queue): nvidia.com/gpu@default-flavor 32$' "$TMP/b.chk" && ok "nested cohort total" || bad "research total"
"$GS" config check "$TMP/b.yaml" --cluster hgx:4 >"$TMP/b2.chk" || bad "check with a cluster failed"
grep -q '^warning: nominal nvidia.com/gpu quotas on flavor default-flavor add up to 64, above the 32 of its 4 nodes in hgx:4' "$TMP/b2.chk" &&
    ok "warning: quotas above the cluster" || bad "no warning: $(tail -3 "$TMP/b2.chk")"
"$GS" config check "$TMP/b.yaml" --cluster hgx:8 | grep -q '^warning' && bad "warning on a cluster large enough" || ok "no warning when the cluster holds the quotas"
"$GS" config check "$TMP/b.yaml" --nodes tests/data/nodes-tainted.yaml | grep -q 'above the 16 of its 2 nodes in tests/data/nodes-tainted.yaml' &&
    ok "--nodes: compared with a NodeList" || bad "--nodes comparison"

imp tests/data/volcano-queues.yaml >"$TMP/v.yaml" 2>"$TMP/v.err" && ok "Volcano imported" || bad "volcano: $(cat "$TMP/v.err")"
"$GS" config check "$TMP/v.yaml" >/dev/null && ok "Volcano result passes config check" || bad "check v"
has "$TMP/v.yaml" '"nvidia.com/gpu": {nominal: "16", borrowingLimit: "8", lendingLimit: "12"}' "deserved/capability/guarantee -> nominal/borrowingLimit/lendingLimit"
has "$TMP/v.yaml" 'weight: 3' "Volcano weight"
has "$TMP/v.yaml" '# Queue org is a parent queue: a cohort here' "parent queue -> cohort"
has "$TMP/v.yaml" 'cohort: "org"' "spec.parent -> cohort"
has "$TMP/v.yaml" "# reclaimable: false is not mapped" "reclaimable: false commented"
# several files at once
imp tests/data/kueue-v1beta1.yaml tests/data/kueue-v1beta2.yaml >"$TMP/ab.yaml" && "$GS" config check "$TMP/ab.yaml" >/dev/null &&
    ok "two files into one configuration" || bad "two files"

# bad input
printf 'apiVersion: kueue.x-k8s.io/v1alpha1\nkind: ClusterQueue\nmetadata: {name: x}\n' >"$TMP/old.yaml"
expect_fail "v1alpha1 refused" 1 "old.yaml:1:1: apiVersion kueue.x-k8s.io/v1alpha1: only kueue.x-k8s.io/v1beta1 and v1beta2" -- imp "$TMP/old.yaml"
printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: x\n' >"$TMP/broken.yaml"
expect_fail "broken YAML" 1 "broken.yaml:4:1:" -- imp "$TMP/broken.yaml"
printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: x}\nspec:\n  resourceGroups:\n  - flavors:\n    - name: f\n      resources:\n      - name: cpu\n' >"$TMP/noq.yaml"
expect_fail "resource without nominalQuota" 1 "noq.yaml:9:9: resources.*: name and nominalQuota are required" -- imp "$TMP/noq.yaml"
expect_fail "missing file" 1 "cannot read $TMP/none.yaml" -- imp "$TMP/none.yaml"
# what the loader refuses in the result is reported at the input file's place of the value
# (before: only at <imported>:LINE:COLUMN, a place in text the user never saw)
printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n  resourceGroups:\n  - flavors:\n    - name: f\n      resources:\n      - {name: nvidia.com/gpu, nominalQuota: -5}\n' >"$TMP/neg.yaml"
expect_fail "a negative quota at its input place" 1 "neg.yaml:9:46: the result does not load: queues\[2\].quota.f.nvidia.com/gpu.nominal: negative quantity \"-5\" (<imported>:" -- imp tests/data/kueue-v1beta1.yaml "$TMP/neg.yaml"
printf 'apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: "bad\\u0001name"\n' >"$TMP/ctl.yaml"
expect_fail "a control character in a name at its input place" 1 "ctl.yaml:4:9: the result does not load: queues\[.*\].name: " -- imp "$TMP/ctl.yaml"
expect_fail "no file" 2 "usage: gangsched config check" -- "$GS" config import-kueue
finish
