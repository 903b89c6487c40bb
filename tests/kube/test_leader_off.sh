#!/bin/sh
# tests/kube/test_leader_off.sh: `gangsched run --leader-elect false` schedules, and its /metrics
# says it leads; SIGTERM drains its writes before the exit (tests/kube/leader_off.py).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/leader_off.py
