"""tests/kube/bind_status_race.py: the daemon's own PodScheduled status write never fails its
Binding.

The race copied (1 run in 4 of tests/kube/test_h2_goaway.sh before the fix): a gang waits for its
second pod, so the daemon writes PodScheduled=False on the first (a PATCH of pods/status); the
second pod arrives and the gang is bound before that write is answered. The Binding carries the
pod's resourceVersion as a precondition (for the daemon's fences); the status write changes that
version, so the Binding fails with 409 and the daemon reads the pod back and binds again.

Made deterministic with the fake API server's faults: the status write waits 3 s before it is
applied (delay) and the first pod's Binding is applied 5 s after it arrives (hold with ms), so a
Binding sent while the status write is in flight is applied after it and fails its precondition.
With the fix the Binding waits for the status write's answer and carries the version it made:
no 409, the pod bound at once. Built on tests/kube/e2e.py's helpers; every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, node, pod, podgroup, wait_for  # noqa: E402


def stats(c):
    return c.get("/_fake/stats")[1]


def main():
    kubeconfig, c = e2e.start_with_config(e2e.CONFIG)
    for i in range(2):
        c.post("/api/v1/nodes", node("gpu-%d" % i, "r1"))
    c.post("/_fake/faults", [
        {"type": "delay", "verb": "patch", "path": "/pods/r-0/status", "ms": 3000},
        {"type": "hold", "verb": "create", "path": "/pods/r-0/binding", "ms": 5000}])
    s = e2e.Sched(kubeconfig, "d", os.path.join(e2e.TMP, "d.db"),
                  extra=["--leader-elect", "false", "--log-level", "debug"])
    path, pg = podgroup("r", 2)
    c.post(path, pg)
    c.post("/api/v1/namespaces/default/pods", pod("r-0", "r", 8))
    check("the daemon writes PodScheduled=False on the first pod (the gang waits for its second)",
          wait_for(lambda: stats(c)["by_resource"].get("patch pods/status", 0) >= 1, 20),
          str(stats(c)["by_resource"]))
    c.post("/api/v1/namespaces/default/pods", pod("r-1", "r", 8))
    check("the gang is bound whole", wait_for(lambda: len(bound(c, "r")) == 2, 30),
          str(stats(c)))
    st = stats(c)
    check("no Binding refused by its resourceVersion precondition (bind_conflicts=%d, HTTP 409s "
          "answered=%d), 2 Bindings applied (%d)"
          % (st["bind_conflicts"], st["codes"].get("409", 0), st["binds"]),
          st["bind_conflicts"] == 0 and st["codes"].get("409", 0) == 0 and st["binds"] == 2,
          str(st))
    p0 = c.get("/api/v1/namespaces/default/pods/r-0")[1]
    conds = {x["type"]: x["status"] for x in p0.get("status", {}).get("conditions", [])}
    check("the bound pod shows PodScheduled=True, not the waiting gang's False (%s)" % conds,
          conds.get("PodScheduled") == "True", str(p0.get("status")))
    check("logged: the Binding waited for the status write",
          "bind waits for the pod's status write: pod=default/r-0" in s.text())
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
