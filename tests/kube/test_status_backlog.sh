#!/bin/sh
# tests/kube/test_status_backlog.sh: cycles that run while a pod's status write waits for its
# answer add no other write saying the same (tests/kube/status_backlog.py).
BIN=${BIN:-bin}
export BIN
exec timeout 90 python3 tests/kube/status_backlog.py
