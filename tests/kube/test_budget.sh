#!/bin/sh
# tests/kube/test_budget.sh: a cycle cut short by its time budget binds what it placed and the
# next goes on from there until every pod is bound (tests/kube/budget.py).
BIN=${BIN:-bin}
export BIN
exec timeout 200 python3 tests/kube/budget.py
