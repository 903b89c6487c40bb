#!/bin/sh
# tests/bench/same_decisions.sh: proof that speed work changes no scheduling decision.
#
#   sh tests/bench/same_decisions.sh record DIR    run every case, keep the outputs in DIR
#   sh tests/bench/same_decisions.sh compare DIR   run again, compare byte for byte with DIR
#
# Cases: the default run (table and --json), each bundled ITP trace on the cluster size of the
# figures in docs/simulator.md, the seven ITP tenants with config/examples/itp-tenants.yaml and
# preemption (and with --policy private, each tenant alone on its slice), the topology, gang,
# preemption and failure test traces, cluster07 on hgx:1000 and a 2,000-gang burst
# (bench_scale --burst-csv, tests/bench/scale.c) on two clusters. Each case keeps
# the table or JSON on stdout, every event
# (--events: each start with its nodes and GPUs), the per-job CSV (--jobs-out) and stderr (one
# case explains a job: every verdict it got).
# Run from the repository root after `make all build/tests/bench_scale`; BIN overrides bin/.
set -u
mode=${1:-}
dir=${2:-}
[ "$mode" = record ] || [ "$mode" = compare ] || { echo "usage: $0 record|compare DIR" >&2; exit 2; }
[ -n "$dir" ] || { echo "usage: $0 record|compare DIR" >&2; exit 2; }
BIN=${BIN:-bin}
BUILD=${BUILD:-build} # for tests/bench_scale, the burst generator (make build/tests/bench_scale)
itp=sched/sim/data/itp
out=$dir
[ "$mode" = compare ] && out=$(mktemp -d)
mkdir -p "$out"
"$BUILD/tests/bench_scale" --burst-csv 2000 > "$out/burst2k.csv" || exit 1
fail=0
run() { # name, simulate args...
    name=$1; shift
    "$BIN/gangsched" simulate --no-progress --events "$out/$name.events" \
        --jobs-out "$out/$name.jobs" "$@" > "$out/$name.out" 2> "$out/$name.err"
    echo "exit $?" >> "$out/$name.out"
    if [ "$mode" = compare ]; then
        for f in out err events jobs; do
            if ! cmp -s "$dir/$name.$f" "$out/$name.$f"; then
                echo "DIFF $name.$f"; fail=1
            fi
        done
    fi
}
run default
run default-json --json
for c in cluster01:16 cluster02:24 cluster05:4 cluster07:64 cluster08:16 cluster09:8 cluster10:2; do
    run "${c%%:*}" --json --cluster "hgx:${c#*:}" --trace "$itp/${c%%:*}.csv"
done
run tenants --json --cluster hgx:96 --config config/examples/itp-tenants.yaml \
    --high-priority 0.33 --policy gangsched --policy ckpt-blind --policy fifo \
    --trace $itp/cluster01.csv --trace $itp/cluster02.csv --trace $itp/cluster05.csv \
    --trace $itp/cluster07.csv --trace $itp/cluster08.csv --trace $itp/cluster09.csv \
    --trace $itp/cluster10.csv
run tenants-private --json --cluster hgx:96 --config config/examples/itp-tenants.yaml \
    --policy private --trace $itp/cluster01.csv --trace $itp/cluster02.csv \
    --trace $itp/cluster05.csv --trace $itp/cluster07.csv --trace $itp/cluster08.csv \
    --trace $itp/cluster09.csv --trace $itp/cluster10.csv
run topology --json --cluster hgx:32,nvl72:2,pcie:8 --trace tests/data/trace-topology.csv
run gangs --json --cluster hgx:2 --trace tests/data/trace-gangs.csv
run preempt --json --cluster hgx:4 --trace tests/data/trace-preempt.csv
run failures --json --cluster hgx:64,pcie:16 --node-mtbf 200 --pod-start-failure-rate 0.02 \
    --trace $itp/cluster02.csv
run c07-1000 --json --cluster hgx:1000 --trace $itp/cluster07.csv
run burst --json --cluster hgx:200 --trace "$out/burst2k.csv"
run burst-explain --cluster hgx:200 --trace "$out/burst2k.csv" --policy gangsched \
    --explain burst-01500
run burst-nvl --json --cluster nvl72:4,hgx:100,pcie:40 --trace "$out/burst2k.csv"
if [ "$mode" = compare ]; then
    [ $fail = 0 ] && echo "same decisions: every case identical" && rm -rf "$out"
    [ $fail = 0 ] || echo "outputs kept in $out"
fi
exit $fail
