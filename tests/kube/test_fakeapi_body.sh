#!/bin/sh
# tests/kube/test_fakeapi_body.sh: request bodies read by the fake API server as kube-apiserver
# reads them (chunked decoding and its refusals, tests/kube/bodycheck.py), over TLS with a token.
. tests/kube/lib.inc
start_fake
if timeout 60 python3 tests/kube/bodycheck.py "$KUBECONFIG"; then
    ok "bodycheck"
else
    bad "bodycheck (see the FAIL lines above)"
    tail -n 20 "$TMP/fake/log"
fi
finish
