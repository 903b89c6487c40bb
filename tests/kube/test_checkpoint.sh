#!/bin/sh
# tests/kube/test_checkpoint.sh: the checkpoint handshake of preemption by `gangsched run`
# against the fake API server (tests/kube/checkpoint.py: answered, resumed after a restart and
# evicted at the deadline, an operator's request evicts nothing).
BIN=${BIN:-bin}
export BIN
exec timeout 300 python3 tests/kube/checkpoint.py
