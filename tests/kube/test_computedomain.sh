#!/bin/sh
# tests/kube/test_computedomain.sh: NVL72-style gangs through NVIDIA ComputeDomains
# (tests/kube/computedomain.py): one clique per gang, IMEX channel claims allocated before the
# Bindings, a gang too big for any clique's usable trays waiting, preemption releasing channels.
BIN=${BIN:-bin}
export BIN
timeout 240 python3 tests/kube/computedomain.py
