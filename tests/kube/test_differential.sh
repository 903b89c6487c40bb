#!/bin/sh
# tests/kube/test_differential.sh: the differential test between the drivers
# (tests/kube/differential.py): each scenario tests/data/differential*.yaml runs through
# `gangsched run` against the fake API server and through `gangsched simulate` on the same
# timeline; both must make the same decisions, apart from the scenario's expected differences.
# The scenarios run side by side (each with its own server, daemon and ports; they mostly wait
# out deadlines), their outputs are printed one after another.
BIN=${BIN:-bin}
export BIN
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for s in tests/data/differential*.yaml; do
    n=$(basename "$s" .yaml)
    (
        timeout 180 python3 tests/kube/differential.py "$s" >"$out/$n.log" 2>&1
        echo $? >"$out/$n.rc"
    ) &
done
wait
# Passing scenarios first, failing ones last (their FAILED lines end the output, where a log cut
# to its tail shows them), then the names of those that failed.
rc=0
bad=""
for s in tests/data/differential*.yaml; do
    n=$(basename "$s" .yaml)
    if [ "$(cat "$out/$n.rc" 2>/dev/null)" = 0 ]; then
        echo "== $s"
        cat "$out/$n.log"
    else
        bad="$bad $s"
    fi
done
for s in $bad; do
    n=$(basename "$s" .yaml)
    echo "== $s (FAILED, exit $(cat "$out/$n.rc" 2>/dev/null))"
    cat "$out/$n.log"
    rc=1
done
[ -z "$bad" ] || echo "failed scenarios:$bad"
exit $rc
