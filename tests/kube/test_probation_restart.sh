#!/bin/sh
# tests/kube/test_probation_restart.sh: a backfill-on-probation promise kept across a restart of
# `gangsched run` (tests/kube/probation_restart.py).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/probation_restart.py
