#!/bin/sh
# tests/kube/test_checkpoint_pods.sh: the checkpoint handshake of preemption for gangs asked on
# their pods (a Kueue pod group, a gang of one) and for Kubernetes' own PodGroups, by `gangsched
# run` against the fake API server (tests/kube/checkpoint_pods.py: answered on one pod, evicted at
# the deadline, a native PodGroup answered and not, resumed after a restart).
BIN=${BIN:-bin}
export BIN
exec timeout 300 python3 tests/kube/checkpoint_pods.py
