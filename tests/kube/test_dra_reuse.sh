#!/bin/sh
# tests/kube/test_dra_reuse.sh: a ResourceClaim allocated by someone else and reserved for nobody is
# reused on its node with its devices (tests/kube/dra_reuse.py).
BIN=${BIN:-bin}
export BIN
exec timeout 90 python3 tests/kube/dra_reuse.py
