#!/bin/sh
# tests/kube/test_elastic_preempt.sh: an elastic gang loses members to a preemption, down to its
# minMember, before it is evicted whole (tests/kube/elastic_preempt.py).
BIN=${BIN:-bin}
export BIN
exec timeout 300 python3 tests/kube/elastic_preempt.py
