#!/bin/sh
# tests/kube/test_pg_deleting.sh: a PodGroup being deleted (kept by a finalizer) starts none of its
# pending pods; an Event and the pods' condition say why (tests/kube/pg_deleting.py).
BIN=${BIN:-bin}
export BIN
exec timeout 90 python3 tests/kube/pg_deleting.py
