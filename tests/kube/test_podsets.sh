#!/bin/sh
# tests/kube/test_podsets.sh: `gangsched run` with a gang of 8 pod specs (bound whole, the
# largest pods first) and one of 9 (InvalidSpec) (tests/kube/podsets.py).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/podsets.py
