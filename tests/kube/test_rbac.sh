#!/bin/sh
# tests/kube/test_rbac.sh: deploy/rbac.yaml grants exactly the requests gangsched makes
# (tests/kube/rbac_check.py). The requests come from the fake API server's log
# ($FAKEAPI_REQUEST_LOG) of the kube tests: tests/run.sh sets it before running them; run alone,
# this script runs the tests that between them make every request it grants (e2e, lifecycle,
# preemption, ComputeDomain, pod checkpoints, a lost bind answer's re-read of the pod, the native
# Workload API, CompositePodGroups, KEP-5004's claims) with a log of its own.
BIN=${BIN:-bin}
export BIN
if [ -z "$FAKEAPI_REQUEST_LOG" ] || ! grep -q 'gangsched/' "$FAKEAPI_REQUEST_LOG" 2>/dev/null; then
    FAKEAPI_REQUEST_LOG=$(mktemp)
    export FAKEAPI_REQUEST_LOG
    trap 'rm -f "$FAKEAPI_REQUEST_LOG"' EXIT
    for t in e2e lifecycle preempt computedomain checkpoint_pods bind_lost_answer native cpg dra_ext; do
        timeout 300 python3 tests/kube/$t.py >/dev/null 2>&1 || { echo "FAIL tests/kube/$t.py"; exit 1; }
    done
fi
python3 tests/kube/rbac_check.py deploy/rbac.yaml "$FAKEAPI_REQUEST_LOG"
