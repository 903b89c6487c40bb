#!/bin/sh
# tests/kube/test_dra_mig.sh: MIG devices of NVIDIA's DRA driver allocated to gangs, with quota
# through quotaMapping (tests/kube/dra_mig.py).
BIN=${BIN:-bin}
export BIN
exec timeout 150 python3 tests/kube/dra_mig.py
