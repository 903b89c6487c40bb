#!/bin/sh
# tests/kube/test_kinds.sh: `gangsched run` with two accelerator kinds (config devices:): an
# Ascend gang and NVIDIA gangs on their own nodes, each under its own quota (tests/kube/kinds.py).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/kinds.py
