#!/bin/sh
# tests/kube/test_fakeapi.sh: wire-level checks of the fake API server (tests/kube/apicheck.py)
# over TLS with a token, with the simulated kubelet, a 200-event watch history and fast bookmarks.
. tests/kube/lib.inc
start_fake --kubelet --kubelet-delay 0.2 --grace-cap 1 --history 200 --bookmark-interval 0.5 \
    --load deploy/crds/scheduling.x-k8s.io_podgroups.yaml --load deploy/crds/scheduling.volcano.sh_podgroups.yaml
if timeout 120 python3 tests/kube/apicheck.py "$KUBECONFIG"; then
    ok "apicheck"
else
    bad "apicheck (see the FAIL lines above)"
    tail -n 20 "$TMP/fake/log"
fi
# SIGTERM ends the server cleanly and keeps the store in the state directory
kill "$FAKE_PID"
i=0
while kill -0 "$FAKE_PID" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 "$FAKE_PID" 2>/dev/null; then bad "server still running 5 s after SIGTERM"
else ok "server stopped on SIGTERM"; FAKE_PID=""; fi
expect_eq "store saved on exit" "$(test -s "$TMP/fake/store.json" && echo yes)" yes
finish
