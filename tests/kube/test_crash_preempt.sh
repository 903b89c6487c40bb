#!/bin/sh
# tests/kube/test_crash_preempt.sh: the gang invariant through crashes and fail-overs in the
# middle of preemptions (tests/kube/crash_preempt.py: rigid and elastic victims, with and without
# a checkpoint handshake, members joining, evictions and Bindings held and applied late):
# GANGSCHED_SOAK_POINTS kill points, 8 by default; `make soak` runs KUBE_POINTS of them.
BIN=${BIN:-bin}
export BIN
timeout 300 python3 tests/kube/crash_preempt.py --points "${GANGSCHED_SOAK_POINTS:-8}"
