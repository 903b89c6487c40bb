#!/bin/sh
# tests/kube/test_lifecycle.sh: the gang lifecycle of `gangsched run` against the fake API server
# (tests/kube/lifecycle.py: start watchdog, failed member, NotReady node, retry budget, strikes
# and quarantine).
BIN=${BIN:-bin}
export BIN
exec timeout 240 python3 tests/kube/lifecycle.py
