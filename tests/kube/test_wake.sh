#!/bin/sh
# tests/kube/test_wake.sh: the daemon runs a cycle when time alone may change its decisions (the
# core's wake_ms), not once a second while a gang waits under a preempting policy
# (tests/kube/wake.py).
BIN=${BIN:-bin}
export BIN
exec timeout 150 python3 tests/kube/wake.py
