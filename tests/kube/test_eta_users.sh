#!/bin/sh
# tests/kube/test_eta_users.sh: the daemon's run times learned per user (gangsched.io/user), before
# and after a restart (tests/kube/eta_users.py).
BIN=${BIN:-bin}
export BIN
exec timeout 240 python3 tests/kube/eta_users.py
