#!/bin/sh
# tests/kube/test_pg_counts.sh: `gangsched run` writes PodGroups' member counts (running,
# succeeded, failed) and phase Finished, and the real kubectl prints them (tests/kube/pg_counts.py).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/pg_counts.py
