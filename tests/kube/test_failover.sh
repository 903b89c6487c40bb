#!/bin/sh
# tests/kube/test_failover.sh: a standby following the leader's store keeps the operators'
# actions and the history across a fail-over; a replica without --follow loses them
# (tests/kube/failover.py).
BIN=${BIN:-bin}
export BIN
exec timeout 200 python3 tests/kube/failover.py
