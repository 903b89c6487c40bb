#!/bin/sh
# tests/kube/test_lease_deadline.sh: a leader whose renewals stall (held behind slow Bindings, or
# unanswered) stops at its renew deadline, before the standby takes over, and binds nothing
# after it (tests/kube/lease_deadline.py).
BIN=${BIN:-bin}
export BIN
exec timeout 150 python3 tests/kube/lease_deadline.py
