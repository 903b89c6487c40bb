"""tests/kube/status_backlog.py: while the API server is slow to answer a pod's status write,
the daemon's next cycles add no other write saying the same thing.

A gang waits (minMember 2, one pod), so each cycle owes its pod PodScheduled=False with the
gang's reason. The fake API server answers that pod's status write only after 6 s (delay), and
nodes added meanwhile make cycles that find the pod still without its condition (the watch
shows it only after the answer). Before the fix every such cycle queued another write of the
same message (kube_client_replace only replaces a write still queued, not one sent): 100,000
waiting pods behind a slow API server meant a JSON body built and a write queued per pod per
cycle. Now a pod whose newest write in flight says the message gets none: one write in all.
Then the gang's reason changes (its second pod arrives but does not fit): one more write.
Built on tests/kube/e2e.py's helpers; every wait is bounded.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import check, node, pod, podgroup, wait_for  # noqa: E402


def patches(c):
    return c.get("/_fake/stats")[1]["by_resource"].get("patch pods/status", 0)


def condition(c, name):
    p = c.get("/api/v1/namespaces/default/pods/" + name)[1]
    for x in p.get("status", {}).get("conditions", []):
        if x["type"] == "PodScheduled":
            return x
    return None


def main():
    kubeconfig, c = e2e.start_with_config(e2e.CONFIG)
    c.post("/api/v1/nodes", node("gpu-0", "r1"))
    c.post("/_fake/faults", [{"type": "delay", "verb": "patch", "path": "/pods/w-0/status",
                              "ms": 6000}])
    s = e2e.Sched(kubeconfig, "d", os.path.join(e2e.TMP, "d.db"),
                  extra=["--leader-elect", "false"])
    url = s.url()
    path, pg = podgroup("w", 2)
    c.post(path, pg)
    c.post("/api/v1/namespaces/default/pods", pod("w-0", "w", 8))
    check("the daemon writes PodScheduled=False on the waiting pod",
          wait_for(lambda: patches(c) >= 1, 20), str(c.get("/_fake/stats")[1]["by_resource"]))
    t0, n0 = time.time(), e2e.cycles(url)
    for i in range(1, 4):  # cycles while that write is in flight
        c.post("/api/v1/nodes", node("gpu-%d" % i, "r1"))
        wait_for(lambda: e2e.cycles(url) > n0 + i - 1, 5, 0.05)
        time.sleep(0.3)
    n1 = e2e.cycles(url)
    check("three cycles ran while the write was in flight (%d, %.1f s)" % (n1 - n0,
                                                                           time.time() - t0),
          n1 - n0 >= 3 and time.time() - t0 < 5.5)
    check("the write lands: the pod shows PodScheduled=False, WaitingForPods",
          wait_for(lambda: (condition(c, "w-0") or {}).get("status") == "False", 15),
          str(condition(c, "w-0")))
    msg = (condition(c, "w-0") or {}).get("message", "")
    check("its message is the gang's reason (%s)" % msg,
          msg.startswith("WaitingForPods: 1 of minMember 2 pods exist"))
    n2 = e2e.cycles(url)
    c.post("/api/v1/nodes", node("gpu-9", "r2"))
    wait_for(lambda: e2e.cycles(url) > n2, 5, 0.05)
    time.sleep(1)
    check("one status write in all, none queued again by the later cycles (%d)" % patches(c),
          patches(c) == 1)
    c.post("/api/v1/namespaces/default/pods", pod("w-1", "w", 9))  # 9 GPUs: no node fits it
    check("the reason changes: one more write each (w-0 and w-1)",
          wait_for(lambda: (condition(c, "w-0") or {}).get("message", "") != msg and
                   condition(c, "w-1") is not None, 15) and patches(c) == 3,
          "%d writes, %s" % (patches(c), condition(c, "w-0")))
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
