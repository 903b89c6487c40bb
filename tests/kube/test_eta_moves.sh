#!/bin/sh
# tests/kube/test_eta_moves.sh: the daemon's decision rows follow a waiting gang's expected start
# when it moves by more than the log's slack, with the same verdict (tests/kube/eta_moves.py).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/eta_moves.py
