#!/bin/sh
# tests/kube/test_elastic.sh: an elastic gang's later member joins the running gang
# (tests/kube/elastic.py).
BIN=${BIN:-bin}
export BIN
exec timeout 300 python3 tests/kube/elastic.py
