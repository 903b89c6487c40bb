#!/bin/sh
# tests/kube/test_bind_status_race.sh: a Binding sent while the daemon's own status write of the
# pod is in flight waits for its answer: no 409 from the resourceVersion precondition
# (tests/kube/bind_status_race.py).
BIN=${BIN:-bin}
export BIN
exec timeout 90 python3 tests/kube/bind_status_race.py
