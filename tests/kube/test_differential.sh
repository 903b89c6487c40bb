#!/bin/sh
# tests/kube/test_differential.sh: the differential test between the drivers
# (tests/kube/differential.py): each scenario tests/data/differential*.yaml runs through
# `gangsched run` against the fake API server and through `gangsched simulate` on the same
# timeline; both must make the same decisions, apart from the scenario's expected differences.
BIN=${BIN:-bin}
export BIN
rc=0
for s in tests/data/differential*.yaml; do
    echo "== $s"
    timeout 90 python3 tests/kube/differential.py "$s" || rc=1
done
exit $rc
