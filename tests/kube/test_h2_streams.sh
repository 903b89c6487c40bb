#!/bin/sh
# tests/kube/test_h2_streams.sh: the daemon over HTTP/2 through tests/kube/h2front.js
# (tests/kube/h2_streams.py; needs node, Debian package nodejs: make deps installs it, and the test
# fails without it).
BIN=${BIN:-bin}
export BIN
exec timeout 120 python3 tests/kube/h2_streams.py
