#!/bin/sh
# tests/kube/test_preload.sh: fakeapi.py --preload (the daemon benchmark's large clusters):
# 3 nodes and 1,200 running pods stored at start, served like a restarted kube-apiserver's
# (tests/kube/preload_check.py); a name given twice is refused at start.
. tests/kube/lib.inc
python3 - "$TMP/objs.json" "$TMP/dup.json" <<'PY'
import json, sys
lim = {"cpu": "1", "memory": "1Gi"}
nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-%d" % i},
          "status": {"allocatable": {"cpu": "8", "pods": "1000"}}} for i in range(3)]
pods = [{"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "p-%04d" % i, "namespace": "default"},
         "spec": {"nodeName": "n-%d" % (i // 400), "containers": [
             {"name": "c", "image": "x", "resources": {"requests": lim, "limits": lim}}]},
         "status": {"phase": "Running"}} for i in range(1200)]
json.dump({"apiVersion": "v1", "kind": "List", "items": nodes + pods}, open(sys.argv[1], "w"))
json.dump({"apiVersion": "v1", "kind": "List", "items": pods[:2] + pods[:1]},
          open(sys.argv[2], "w"))
PY
start_fake --plain --preload "$TMP/objs.json"
if (cd tests/kube && timeout 60 python3 preload_check.py "$KUBECONFIG" 3 1200); then
    ok "preloaded objects served like a restarted API server's"
else
    bad "preload checks (see the FAIL lines above)"
fi
if timeout 30 python3 tests/kube/fakeapi.py --plain --port 0 --preload "$TMP/dup.json" \
    >"$TMP/dup.log" 2>&1; then
    bad "a preload with a name given twice was accepted"
else
    expect_eq "a name given twice is refused" "$(grep -c "appears twice" "$TMP/dup.log")" 1
fi
finish
