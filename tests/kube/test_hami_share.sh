#!/bin/sh
# tests/kube/test_hami_share.sh: `gangsched run` places HAMi GPU shares (tests/kube/hami_share.py:
# binpack and spread per device, HAMi's allocation with the pod's memory and cores).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/hami_share.py
