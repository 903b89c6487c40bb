#!/bin/sh
# tests/kube/test_eta_restart.sh: a run that ended while no scheduler was running is closed
# without a finish time and teaches no run time (tests/kube/eta_restart.py).
BIN=${BIN:-bin}
export BIN
exec timeout 150 python3 tests/kube/eta_restart.py
