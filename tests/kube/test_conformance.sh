#!/bin/sh
# tests/kube/test_conformance.sh: `gangsched run` against the strict fake API server on a
# cluster with only some PodGroup CRDs (tests/kube/conformance.py: Volcano only, then the upstream
# scheduler-plugins CRD installed later; reasons on pods, PodGroups and Events; the real kubectl
# describe) and through crashes, fail-overs, late and foreign Bindings (tests/kube/crash.py with a
# short soak: GANGSCHED_SOAK_POINTS kill points, 8 by default; `make soak` runs hundreds).
BIN=${BIN:-bin}
export BIN
rc=0
timeout 180 python3 tests/kube/conformance.py || rc=1
timeout 300 python3 tests/kube/crash.py --points "${GANGSCHED_SOAK_POINTS:-8}" || rc=1
exit $rc
