#!/bin/sh
# tests/kube/test_eta.sh: the daemon's start-time estimates learned from finished gangs
# (tests/kube/eta.py: no estimate before any finish, then `gangctl jobs` START from the run
# learned).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/eta.py
