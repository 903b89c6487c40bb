#!/bin/sh
# tests/kube/test_watch_stall.sh: a nodes watch that goes silent (a proxy that lost its upstream)
# is abandoned by the informer's watchdog and a node added meanwhile is scheduled onto
# (tests/kube/watch_stall.py).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/watch_stall.py
