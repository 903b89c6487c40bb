#!/bin/sh
# tests/kube/test_hami.sh: `gangsched run` on nodes registered by HAMi's device plugin
# (tests/kube/hami.py: devices from hami.io/node-nvidia-register, HAMi's allocation annotations
# written in the Binding next to gangsched.io/gpu-ids).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/hami.py
