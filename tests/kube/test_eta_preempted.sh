#!/bin/sh
# tests/kube/test_eta_preempted.sh: a gang that ran more than once (preempted, started again,
# across a change of leader) teaches the time of all its runs (tests/kube/eta_preempted.py).
BIN=${BIN:-bin}
export BIN
exec timeout 150 python3 tests/kube/eta_preempted.py
