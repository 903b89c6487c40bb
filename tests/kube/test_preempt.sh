#!/bin/sh
# tests/kube/test_preempt.sh: whole-gang preemption by `gangsched run` against the fake API
# server (tests/kube/preempt.py: Eviction API, Preempted event, the preemptor's hold, no
# restart charged to the victim).
BIN=${BIN:-bin}
export BIN
exec timeout 300 python3 tests/kube/preempt.py
