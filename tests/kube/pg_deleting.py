"""tests/kube/pg_deleting.py: a PodGroup being deleted starts no gang.

A PodGroup with a deletionTimestamp stays while a finalizer keeps it: a native
scheduling.k8s.io group keeps the podgroup-protection finalizer while a pod that is not
Succeeded or Failed names it (the fake copies kube-controller-manager's podgroupprotection
controller), and any group may carry a finalizer of its owner. Its workload is going away, so
the daemon starts none of its pending pods (kube-scheduler 1.36/1.37 does not look at the
deletionTimestamp; the daemon does, docs/daemon.md), says why in an Event (PodGroupDeleting)
and the pods' PodScheduled condition, and writes no status to the group.

1. v1beta1 PodGroup of minCount 2 waiting with one pod; the group is deleted (kept by its
   protection finalizer); the second pod arrives: neither pod is bound, the group's
   resourceVersion does not move, an Event PodGroupDeleting about it; the pods deleted, the group
   goes.
2. scheduler-plugins PodGroup kept by a finalizer of its own, deleted, then its pod created: not
   bound, the same Event.
Every wait is bounded.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
import native  # noqa: E402
from e2e import check, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

NS = native.NS
HOLD_S = 3  # how long a pod must stay unbound (the daemon cycles every 50 ms)


def reasons(c, name):
    return [e.get("reason") for e in e2e.events_for(c, name)]


def sched_msg(c, name):
    p = c.get(NS + "/" + name)[1]
    for cond in (p.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return cond.get("message", "")
    return ""


def native_group(c, s):
    v = "v1beta1"
    c.post(native.pg_path(v), native.podgroup(v, "del", 2))
    c.post(NS, native.pod("del-0", 8, group="del"))
    check("1. a gang of minCount 2 with one pod waits (Event WaitingForPods)",
          wait_for(lambda: "WaitingForPods" in reasons(c, "del"), 20), str(reasons(c, "del")))
    code, g, _ = c.delete(native.pg_path(v, "del"))
    check("1. the deleted PodGroup stays, marked, kept by its protection finalizer",
          code == 200 and g["metadata"].get("deletionTimestamp") and
          c.get(native.pg_path(v, "del"))[0] == 200, (code, g.get("metadata")))
    check("1. the daemon says why it waits: Event PodGroupDeleting",
          wait_for(lambda: "PodGroupDeleting" in reasons(c, "del"), 10), str(reasons(c, "del")))
    rv = c.get(native.pg_path(v, "del"))[1]["metadata"]["resourceVersion"]
    c.post(NS, native.pod("del-1", 8, group="del"))
    time.sleep(HOLD_S)
    check("1. its second pod arrives (minCount met): neither pod is bound in %d s" % HOLD_S,
          not native.bound(c, "del-"), str([p["spec"].get("nodeName")
                                           for p in native.pods(c, "del-")]))
    check("1. the pods' PodScheduled condition names the deletion",
          "PodGroupDeleting" in sched_msg(c, "del-1"), sched_msg(c, "del-1"))
    rv2 = c.get(native.pg_path(v, "del"))[1]["metadata"]["resourceVersion"]
    check("1. no status written to the group being deleted (resourceVersion %s, then %s)"
          % (rv, rv2), rv == rv2)
    for i in range(2):
        c.delete(NS + "/del-%d" % i)
    check("1. its pods deleted, the group goes",
          wait_for(lambda: c.get(native.pg_path(v, "del"))[0] == 404, 10))


def xk8s_group(c, s):
    path, pg = e2e.podgroup("xd", 1, queue="default")
    pg["metadata"]["finalizers"] = ["example.com/keep"]
    c.post(path, pg)
    code, g, _ = c.delete(path + "/xd")
    check("2. a scheduler-plugins PodGroup with a finalizer of its own is only marked",
          code == 200 and g["metadata"].get("deletionTimestamp"), (code, g))
    c.post(NS, e2e.pod("xd-0", "xd", 8))
    check("2. its pod waits: Event PodGroupDeleting",
          wait_for(lambda: "PodGroupDeleting" in reasons(c, "xd"), 10), str(reasons(c, "xd")))
    time.sleep(HOLD_S)
    check("2. and is not bound in %d s" % HOLD_S,
          not e2e.bound(c, "xd"), str([p["spec"].get("nodeName") for p in e2e.pods_of(c, "xd")]))
    c.patch(path + "/xd", {"metadata": {"finalizers": None}}, native.MERGE)
    check("2. its finalizer removed, the group goes",
          wait_for(lambda: c.get(path + "/xd")[0] == 404, 10))


def main():
    e2e.TMP_ROOT = e2e.TMP
    c, s = native.start("pgdel", ["scheduling.k8s.io/v1beta1"], crds=("xk8s",))
    native_group(c, s)
    xk8s_group(c, s)
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
