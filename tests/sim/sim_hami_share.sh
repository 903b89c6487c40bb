# GPU shares in HAMi's model through the simulator's cycle (issue 18): trace columns gpumem (MiB
# of each device) and gpucores (percent of each device) on nodes registered by HAMi's device plugin.
# Two shares binpacked onto one device and, under HAMi's default gpu policy (spread), onto two;
# a whole-device job takes the device no share holds; cores bound the shares per device; a gang
# of two shares starts whole or waits whole; a share larger than any device is rejected naming
# nvidia.com/gpumem; a queue's quota of nvidia.com/gpumem (MiB x devices) is never exceeded.
. tests/sim/lib.inc
dev() { # UUID INDEX
    printf 'GPU-%s,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true,%s,hami-core:' "$1" "$2"
}
{ echo "kind: NodeList"; echo "items:"
  printf -- '- metadata: {name: h1, annotations: {hami.io/node-nvidia-register: "%s"}}\n' \
      "$(dev a 0)$(dev b 1)"
  printf -- '  status: {allocatable: {cpu: "96", memory: "1000Gi", pods: "110", nvidia.com/gpu: "20"}}\n'
} >"$TMP/n.yaml"
cfg() { # QUEUE-EXTRA [HAMI-LINE]
    printf 'apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n%s\nqueues:\n  - name: t\n%s\n' \
        "${2:-}" "$1" >"$TMP/c.yaml"
}
run() { # TRACE-ROWS...: runs the gangsched policy, events in $TMP/ev, verdicts of w in $TMP/err
    printf 'job_id,submission_time,duration,num_gpu,gpus_per_pod,gpumem,gpucores\n' >"$TMP/t.csv"
    for row in "$@"; do echo "$row" >>"$TMP/t.csv"; done
    "$GS" simulate --no-progress --nodes "$TMP/n.yaml" --trace "$TMP/t.csv" --config "$TMP/c.yaml" \
        --policy gangsched --events "$TMP/ev" --explain w >"$TMP/out" 2>"$TMP/err" ||
        bad "simulate failed: $(cat "$TMP/err")"
}
gpus_of() { # JOB: "node:[devices]" of its start event(s)
    grep "\"type\":\"start\".*\"job\":\"$1\"" "$TMP/ev" | sed 's/.*"pods":\[//; s/\]}$//' |
        sed 's/{"node":"\([^"]*\)","gpus":\[\([^]]*\)\]}/\1:\2/g'
}
start_of() { grep "\"type\":\"start\".*\"job\":\"$1\"" "$TMP/ev" | sed 's/^{"t":\([0-9.]*\),.*/\1/'; }

cfg "" "hami: {gpuSchedulerPolicy: binpack}"
run "s1,0,100,1,1,8000,30" "s2,0,100,1,1,8000,30" "w,1,100,1,1,,"
expect_eq "binpack: share s1 on" "$(gpus_of s1)" "h1:0"
expect_eq "binpack: share s2 on the same device" "$(gpus_of s2)" "h1:0"
expect_eq "a whole-device job takes the device no share holds" "$(gpus_of w)" "h1:1"
expect_eq "... at once" "$(start_of w)" "1.000"

cfg ""
run "s1,0,100,1,1,8000,30" "s2,0,100,1,1,8000,30" "w,1,100,1,1,,"
expect_eq "spread (HAMi's default): s1 on" "$(gpus_of s1)" "h1:0"
expect_eq "spread: s2 on the other device" "$(gpus_of s2)" "h1:1"
expect_eq "the whole-device job waits for a device without shares" "$(start_of w)" "100.000"
# the same in one cycle: shares placed first hold both devices against the whole job behind them
run "s1,0,100,1,1,8000,30" "s2,0,100,1,1,8000,30" "w,0,100,1,1,,"
expect_eq "in one cycle, the whole-device job behind two spread shares waits" "$(start_of w)" "100.000"

# 60% cores each: one share per device; the third (w) waits for one to end
run "a,0,100,1,1,1000,60" "b,0,100,1,1,1000,60" "w,1,50,1,1,1000,60"
expect_eq "cores: third 60% share waits" "$(start_of w)" "100.000"
grep -q 'job=w: resources:.*nvidia.com/gpucores' "$TMP/err" ||
    bad "the wait of w names nvidia.com/gpucores: $(head -2 "$TMP/err")"

# a gang of two pods of one device and 20000 MiB each: one device has 20000 taken by r, so only
# one device could take a pod; the gang waits whole, then starts on both devices
run "r,0,100,1,1,20000,10" "w,1,10,2,1,20000,10"
expect_eq "a 2-pod share gang waits whole" "$(start_of w)" "100.000"
expect_eq "... then takes both devices" "$(gpus_of w)" "h1:0,h1:1"
expect_cmp "no pod of the gang started early" "$(grep -c '"job":"w"' "$TMP/ev")" "==" 3

# larger than any device: rejected, naming the resource
run "w,0,10,1,1,40000,10"
grep -q 'job=w: never-fits.*nvidia.com/gpumem' "$TMP/err" ||
    bad "a 40000 MiB share is never-fits naming nvidia.com/gpumem: $(head -2 "$TMP/err")"

# quota: 16000 MiB of gpumem (a share pod of N devices counts N x gpumem): two 8000 MiB shares at
# once, the third waits; a 2-device pod of 8000 counts 16000
cfg "    quota: {default: {nvidia.com/gpumem: 16000}}"
run "a,0,100,1,1,8000,10" "b,0,100,1,1,8000,10" "w,1,100,1,1,8000,10"
expect_eq "quota of 16000 MiB: the third 8000 MiB share waits" "$(start_of w)" "100.000"
run "a,0,100,1,1,8000,10" "w,1,100,2,2,8000,10"
expect_eq "a 2-device share of 8000 counts 16000 MiB" "$(start_of w)" "100.000"

# bad cells name the file, line and column
printf 'job_id,submission_time,duration,num_gpu,gpucores\nx,0,10,1,150\n' >"$TMP/bad.csv"
expect_fail "gpucores above 100" 1 "bad.csv:2: column 'gpucores'" -- \
    "$GS" simulate --no-progress --nodes "$TMP/n.yaml" --trace "$TMP/bad.csv"
printf 'job_id,submission_time,duration,num_gpu,gpumem\nx,0,10,0,1000\n' >"$TMP/bad.csv"
expect_fail "a share of no device" 1 "bad.csv:2: job x: gpumem/gpucores share GPUs" -- \
    "$GS" simulate --no-progress --nodes "$TMP/n.yaml" --trace "$TMP/bad.csv"

# backfill on probation (docs/preemption.md): four nodes of 8 registered devices; x1 and x2
# declare 12 s, x3 holds half of h3, and big (24 devices) starves with a reservation on h1, h2
# and h4. A share started meanwhile on h3 gets no promise (evicting it frees no whole device big
# could use); a whole-device job of the same queue started after it does.
{ echo "kind: NodeList"; echo "items:"
  for n in 1 2 3 4; do
      reg=""
      for d in 0 1 2 3 4 5 6 7; do reg="$reg$(dev "$n$d" "$d")"; done
      printf -- '- metadata: {name: h%s, annotations: {hami.io/node-nvidia-register: "%s"}}\n' "$n" "$reg"
      printf -- '  status: {allocatable: {cpu: "96", memory: "1000Gi", pods: "110", nvidia.com/gpu: "80"}}\n'
  done
} >"$TMP/n4.yaml"
probation_config "" >"$TMP/p.yaml"
probation_trace gpumem "s,4,1000,1,1,1,1,8000,q" >"$TMP/p.csv"
"$GS" simulate --no-progress --nodes "$TMP/n4.yaml" --trace "$TMP/p.csv" --config "$TMP/p.yaml" \
    --policy gangsched --events "$TMP/pev" >/dev/null 2>"$TMP/err" || bad "simulate failed: $(cat "$TMP/err")"
probation_checks "$TMP/pev" s "the share s"
# GPU shares are never preemption victims (docs/preemption.md, "Choosing victims": the trial
# frees whole GPUs, a share frees one only as the last on it): a whole-device job of priority 100
# waits for the first share to end rather than evict one.
cfg ""
printf 'job_id,submission_time,duration,num_gpu,gpus_per_pod,gpumem,gpucores,priority\n%s\n%s\n%s\n' \
    "s1,0,5000,1,1,8000,30,0" "s2,0,9000,1,1,8000,30,0" "w,1,100,1,1,,,100" >"$TMP/t.csv"
"$GS" simulate --no-progress --nodes "$TMP/n.yaml" --trace "$TMP/t.csv" --config "$TMP/c.yaml" \
    --policy gangsched --events "$TMP/pev" >/dev/null 2>"$TMP/err" ||
    bad "shares and priority: simulate failed: $(cat "$TMP/err")"
expect_eq "shares are never preemption victims" "$(grep -c '"type":"evict"' "$TMP/pev")" 0
expect_eq "... the whole-device job starts when the first share ends" \
    "$(grep '"type":"start".*"job":"w"' "$TMP/pev" | sed 's/^{"t":\([0-9.]*\),.*/\1/')" "5000.000"
finish
