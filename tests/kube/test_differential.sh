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
        timeout 120 python3 tests/kube/differential.py "$s" >"$out/$n.log" 2>&1
        echo $? >"$out/$n.rc"
    ) &
done
wait
rc=0
for s in tests/data/differential*.yaml; do
    n=$(basename "$s" .yaml)
    echo "== $s"
    cat "$out/$n.log"
    [ "$(cat "$out/$n.rc" 2>/dev/null)" = 0 ] || rc=1
done
exit $rc
