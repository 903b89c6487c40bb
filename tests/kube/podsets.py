"""tests/kube/podsets.py: a gang of as many pod specs as Kueue's Workload podSets (8), with
`gangsched run`.

Owns: the daemon's side of GANG_MAX_SETS (docs/daemon.md, Pod sets). Eight 8-GPU nodes in two
racks. Gang "ray" has eight pod specs, one pod each of 1 to 7 GPUs (its worker groups) and four
of 8: 60 of the 64 GPUs, which fit only when the largest pods are placed first (in set order
the small ones spread over five nodes and leave three whole). Checked: every member is bound,
each with as many GPU indices in gangsched.io/gpu-ids as it asks for, no index of a node given
twice, the four 8-GPU pods on four nodes. Gang "wide" has nine specs (pods that differ in their
cpu request): it waits with an InvalidSpec event saying it has more than 8 different specs, and
none of it is bound; the real kubectl shows that event (kubectl get events) and where each
member went (kubectl get pods -o wide). Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

CONFIG = e2e.CONFIG.replace("nvidia.com/gpu: 32", "nvidia.com/gpu: 64")  # every GPU


def member(c, name, group, gpus, cpu=None):
    p = e2e.pod(name, group, gpus)
    if cpu:
        p["spec"]["containers"][0]["resources"]["limits"]["cpu"] = cpu
    code, body, _ = c.post("/api/v1/namespaces/default/pods", p)
    check("pod %s is created" % name, code == 201, str(body)[:200])


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    for k in range(8):
        c.post("/api/v1/nodes", e2e.node("gpu-%d" % (k + 1), "r%d" % (1 + k // 4)))
    # "wide" first: its refusal must not hold back "ray" behind it
    path, pg = e2e.podgroup("wide", 9)
    c.post(path, pg)
    for k in range(9):
        member(c, "wide-%d" % k, "wide", 0, cpu=str(k + 1))
    path, pg = e2e.podgroup("ray", 11)
    c.post(path, pg)
    want = {}
    for g in range(1, 8):  # worker groups of 1 to 7 GPUs, one pod each
        want["ray-w%d" % g] = g
    for k in range(4):  # and four pods of 8
        want["ray-x%d" % k] = 8
    for name, gpus in sorted(want.items()):
        member(c, name, "ray", gpus)
    db = os.path.join(e2e.TMP, "gangsched.db")
    s = e2e.Sched(kubeconfig, "sched", db)
    check("the scheduler leads", wait_for(s.leading, 20))
    ok = wait_for(lambda: len(e2e.bound(c, "ray")) == len(want), 30)
    b = e2e.bound(c, "ray")
    check("every member of the 8-spec gang is bound", ok, "%d of %d" % (len(b), len(want)))
    used = {}
    for p in b:
        name = p["metadata"]["name"]
        ids = p["metadata"].get("annotations", {}).get("gangsched.io/gpu-ids", "")
        idx = [int(x) for x in ids.split(",") if x != ""]
        check("%s has %d GPU indices" % (name, want[name]), len(idx) == want[name], ids)
        node = p["spec"]["nodeName"]
        for x in idx:
            check("GPU %d of %s is given once" % (x, node), (node, x) not in used,
                  "%s and %s" % (used.get((node, x)), name))
            used[(node, x)] = name
    whole = {p["spec"]["nodeName"] for p in b if want[p["metadata"]["name"]] == 8}
    check("the four 8-GPU pods are on four nodes", len(whole) == 4, str(sorted(whole)))
    refused = wait_for(lambda: [e for e in e2e.events_for(c, "wide")
                                if e["reason"] == "InvalidSpec"], 20)
    note = refused[0].get("note", "") if refused else ""
    check("the 9-spec gang waits with InvalidSpec", bool(refused))
    check("its event says it has more than 8 different specs",
          "more than 8 different specs" in note, note)
    check("and none of it is bound", len(e2e.bound(c, "wide")) == 0)
    rows = [r for r in e2e.kubectl_table(kubeconfig, "events")
            if r.get("REASON") == "InvalidSpec"]
    row = rows[0] if rows else {}
    check("kubectl get events shows it (TYPE, OBJECT, MESSAGE)", row.get("TYPE") == "Warning" and
          row.get("OBJECT") == "podgroup/wide" and
          "more than 8 different specs" in row.get("MESSAGE", ""), str(rows))
    rows = e2e.kubectl_table(kubeconfig, "pods", "-o", "wide")
    nodes = {r["NAME"]: r["NODE"] for r in rows}
    check("kubectl get pods -o wide shows each member's node",
          all(nodes.get(p["metadata"]["name"]) == p["spec"]["nodeName"] for p in b) and
          all(nodes.get("wide-%d" % k) == "<none>" for k in range(9)), str(nodes))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
