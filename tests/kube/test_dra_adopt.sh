#!/bin/sh
# tests/kube/test_dra_adopt.sh: a pod uses a ResourceClaim allocated already (idle, or reserved for
# pods of another gang or scheduler) on its node, as kube-scheduler does (tests/kube/dra_adopt.py).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/dra_adopt.py
