#!/bin/sh
# tests/kube/test_dra_held.sh: an allocated ResourceClaim's devices are in use on its node whoever
# reserves it, until deallocated (tests/kube/dra_held.py).
BIN=${BIN:-bin}
export BIN
exec timeout 90 python3 tests/kube/dra_held.py
