#!/usr/bin/env python3
"""tests/kube/preload_check.py: what fakeapi.py --preload stores (run by test_preload.sh).

Owns: the checks that preloaded nodes and pods look like objects a kube-apiserver restarted on a
full cluster serves: listed in pages of `limit` with continue tokens and one resourceVersion for
the whole list, each with its own uid, resourceVersion and creationTimestamp, pods with the
defaults of a create and their status kept; a watch from the list's version sees what follows;
a watch from a version before the preload gets an ERROR 410 (the window starts after them).
Usage: preload_check.py KUBECONFIG N_NODES N_PODS
"""

import sys

from kclient import Client

failed = 0


def check(what, cond, detail=""):
    global failed
    print(("ok   " if cond else "FAIL ") + what + ("" if cond else ": " + str(detail)))
    failed += 0 if cond else 1


def main():
    kc, n_nodes, n_pods = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    c = Client(kc)
    items, pages, cont, list_rv = [], 0, "", None
    while True:
        code, lst, _ = c.get("/api/v1/pods?limit=500" + ("&continue=" + cont if cont else ""))
        if code != 200:
            check("list pods page %d" % pages, False, code)
            return 1
        pages += 1
        items += lst["items"]
        meta = lst["metadata"]
        if list_rv is None:
            list_rv = meta["resourceVersion"]
        check("page %d keeps the list's resourceVersion" % pages,
              meta["resourceVersion"] == list_rv, meta["resourceVersion"])
        cont = meta.get("continue", "")
        if not cont:
            break
    check("all %d pods listed in %d pages of 500" % (n_pods, -(-n_pods // 500)),
          len(items) == n_pods and pages == -(-n_pods // 500), (len(items), pages))
    uids = {p["metadata"].get("uid") for p in items}
    rvs = {p["metadata"].get("resourceVersion") for p in items}
    check("each pod has its own uid and resourceVersion",
          len(uids) == n_pods and len(rvs) == n_pods and None not in uids | rvs)
    check("every resourceVersion is at most the list's",
          all(int(v) <= int(list_rv) for v in rvs))
    check("creationTimestamp set", all(p["metadata"].get("creationTimestamp") for p in items))
    p0 = items[0]
    check("a pod gets the defaults of a create",
          p0["spec"].get("terminationGracePeriodSeconds") == 30 and
          p0["status"].get("qosClass") == "Guaranteed", p0)
    check("the preloaded status is kept", all(p["status"]["phase"] == "Running" for p in items))
    code, nodes, _ = c.get("/api/v1/nodes")
    check("all %d nodes listed" % n_nodes, code == 200 and len(nodes["items"]) == n_nodes)
    code, sel, _ = c.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn-1")
    check("field selectors see preloaded pods", code == 200 and
          len(sel["items"]) == n_pods // n_nodes, len(sel.get("items", [])))
    w = c.watch("/api/v1/pods?watch=1&resourceVersion=1&timeoutSeconds=5")
    ev = w.next()
    w.close()
    check("a watch from before the preload gets ERROR 410",
          ev is not None and ev["type"] == "ERROR" and ev["object"]["code"] == 410, ev)
    w = c.watch("/api/v1/pods?watch=1&resourceVersion=%s&timeoutSeconds=5" % list_rv)
    code, _, _ = c.post("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "after"},
        "spec": {"containers": [{"name": "c", "image": "x"}]}})
    ev = w.next()
    w.close()
    check("a watch from the list's version sees the next create",
          code == 201 and ev is not None and ev["type"] == "ADDED" and
          ev["object"]["metadata"]["name"] == "after", ev)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
