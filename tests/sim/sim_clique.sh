# NVL72 cliques with unusable trays (docs/kubernetes.md, "16 of 18 trays"): two cliques of 18
# four-GPU trays, two trays of each down until t=3600. A 72-GPU gang requiring one clique waits
# (32 usable trays in the cluster, 16 per clique: never spread over two), its reason naming the
# level and the nearest clique; a 64-GPU gang (16 trays) starts at once inside one clique; the
# 72-GPU gang starts when the trays come back, all 18 pods in one clique.
. tests/sim/lib.inc
printf 'node,down,up\nnvl72-00-16,0,3600\nnvl72-00-17,0,3600\nnvl72-01-16,0,3600\nnvl72-01-17,0,3600\n' \
    >"$TMP/out.csv"
printf 'job_id,submission_time,duration,num_gpu,gpus_per_pod,topology-required\nfull-72,10,600,72,4,clique\nsmall-64,20,600,64,4,clique\n' \
    >"$TMP/t.csv"
"$GS" simulate --no-progress --policy gangsched --cluster nvl72:2 --trace "$TMP/t.csv" \
    --outages "$TMP/out.csv" --events "$TMP/ev.jsonl" --explain full-72 >"$TMP/out.txt" \
    2>"$TMP/err.txt" || bad "simulate failed"
"$EVCHECK" "$TMP/ev.jsonl" >/dev/null && ok "event log checks" || bad "event log check failed"
start() { grep '"type":"start"' "$TMP/ev.jsonl" | grep "\"job\":\"$1\""; }
small=$(start small-64)
expect_eq "the 64-GPU gang starts at once" "$(printf '%s' "$small" | grep -c '"t":20.000')" 1
n0=$(printf '%s' "$small" | grep -o '"node":"nvl72-00-' | wc -l)
n1=$(printf '%s' "$small" | grep -o '"node":"nvl72-01-' | wc -l)
expect_eq "its 16 pods inside one clique" "$((n0 == 16 || n1 == 16))" 1
full=$(start full-72)
expect_eq "the 72-GPU gang starts only when the trays are back" \
    "$(printf '%s' "$full" | grep -c '"t":3600.000')" 1
n0=$(printf '%s' "$full" | grep -o '"node":"nvl72-00-' | wc -l)
n1=$(printf '%s' "$full" | grep -o '"node":"nvl72-01-' | wc -l)
expect_eq "its 18 pods inside one clique" "$((n0 == 18 || n1 == 18))" 1
grep -q 't=10s policy=gangsched job=full-72: topology: 18 pod(s), 72 GPU(s); 32/36 nodes fit one pod: 4 not ready; no single domain of the required level holds the whole gang; best clique 5f0c2b9e-7d41-4a63-9e8a-1c2d3b4a5f60.[01] holds 16 of 18 pods now' \
    "$TMP/out.txt" "$TMP/err.txt" && ok "the wait names the required level and the nearest clique" ||
    bad "wait reason: $(grep 'job=full-72' "$TMP/out.txt" "$TMP/err.txt" | head -2)"
finish
