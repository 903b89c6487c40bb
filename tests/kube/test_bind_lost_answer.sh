#!/bin/sh
# tests/kube/test_bind_lost_answer.sh: a Binding applied by the server whose answer was lost (the
# connection reset) is retried, fails its resourceVersion precondition, and is counted bound by us:
# the gang stays bound whole, no member deleted (tests/kube/bind_lost_answer.py).
BIN=${BIN:-bin}
export BIN
exec timeout 90 python3 tests/kube/bind_lost_answer.py
