# Nodes registered by HAMi's device plugin in `simulate --nodes` (issue 18): the plugin
# advertises nvidia.com/gpu as devices x split count (40 for 4 GPUs split 10); the node offers the
# devices named in hami.io/node-nvidia-register (up to the first unhealthy one), so a 4-GPU job
# runs and a 5-GPU job is rejected; an unreadable register is refused naming file:line.
. tests/sim/lib.inc
node() { # NAME REGISTER
    printf -- '- metadata: {name: %s, annotations: {hami.io/node-nvidia-register: "%s"}}\n' "$1" "$2"
    printf -- '  status: {allocatable: {cpu: "96", memory: "1000Gi", pods: "110", nvidia.com/gpu: "40"}}\n'
}
dev() { # UUID INDEX HEALTHY
    printf 'GPU-%s,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,%s,%s,hami-core:' "$1" "$3" "$2"
}
{ echo "kind: NodeList"; echo "items:"
  node h1 "$(dev a 0 true)$(dev b 1 true)$(dev c 2 true)$(dev d 3 true)"
  node h2 "$(dev e 0 true)$(dev f 1 false)$(dev g 2 true)$(dev h 3 true)"; } >"$TMP/hami.yaml"
head -4 "$TMP/hami.yaml" >"$TMP/h1.yaml"
printf 'job_id,submission_time,duration,num_gpu\nfour,0,10,4\nfive,1,10,5\n' >"$TMP/t.csv"
"$GS" simulate --no-progress --nodes "$TMP/h1.yaml" --trace "$TMP/t.csv" --json \
    >"$TMP/out.json" 2>"$TMP/err" || bad "simulate on HAMi nodes failed: $(cat "$TMP/err")"
expect_eq "jobs started on one node of 4 registered devices (advertising 40)" \
    "$("$JGET" "$TMP/out.json" policies/0/started)" 1
expect_eq "the 5-device job is rejected" "$("$JGET" "$TMP/out.json" policies/0/rejected)" 1
# 8 x 1-device jobs: h1 takes 4, h2 only its device 0 (device 1 is unhealthy): 5 at once
printf 'job_id,submission_time,duration,num_gpu\n' >"$TMP/ones.csv"
for i in 1 2 3 4 5 6 7 8; do echo "j$i,0,100,1" >>"$TMP/ones.csv"; done
"$GS" simulate --no-progress --nodes "$TMP/hami.yaml" --trace "$TMP/ones.csv" \
    --jobs-out "$TMP/jobs.csv" >/dev/null 2>"$TMP/err" || bad "ones run failed: $(cat "$TMP/err")"
started0=$(awk -F, '$2 == "gangsched" && $6 == "0.000"' "$TMP/jobs.csv" | wc -l | tr -d ' ')
expect_eq "1-device jobs running at once (h1: 4, h2: 1)" "$started0" 5
{ echo "kind: NodeList"; echo "items:"; node bad "GPU-x,10,lots,100,T,0,true,0,hami-core"; } \
    >"$TMP/bad.yaml"
expect_fail "unreadable register" 1 \
    'bad.yaml:3:[0-9]*: node "bad".*annotation hami.io/node-nvidia-register: device 1: memory "lots"' -- \
    "$GS" simulate --no-progress --nodes "$TMP/bad.yaml" --trace "$TMP/t.csv"
finish
