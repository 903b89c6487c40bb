#!/bin/sh
# tests/kube/test_pg_conflict.sh: two APIs' PodGroups under one name with `gangsched run`: the
# refused one gets a Warning Event and becomes the gang when the owner is deleted
# (tests/kube/pg_conflict.py).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/pg_conflict.py
