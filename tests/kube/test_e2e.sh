#!/bin/sh
# tests/kube/test_e2e.sh: `gangsched run` end to end against the fake API server (tests/kube/e2e.py:
# gangs bound whole with status and events, waiting gangs with reasons, both PodGroup APIs,
# injected faults, crash in the middle of a bind, leader election and fail-over, a corrupt
# database with and without --rebuild-store).
BIN=${BIN:-bin}
export BIN
exec timeout 240 python3 tests/kube/e2e.py
