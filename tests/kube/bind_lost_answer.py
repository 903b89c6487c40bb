"""tests/kube/bind_lost_answer.py: a Binding that landed but whose answer was lost keeps its gang
bound whole.

The failure copied: the connection to kube-apiserver is cut (a proxy restarted, a TCP reset)
after the server committed a Binding and before its answer arrived. The client sees a transport
error and sends the Binding again; it carries the pod's resourceVersion as a precondition, and
the pod's version moved when the first attempt bound it, so the retry gets 409 "Precondition
failed: ResourceVersion". The daemon reads the pod back and finds it on the node it chose, with
its uid and GPU indices: bound by us. Before the fix it counted such a pod as bound by someone
else, rolled the gang back and deleted its members, the pod it had just bound among them.
The fake API server's lose-answer fault plays the cut on the first Binding of the gang. Then the
converse: a pod bound by someone else to the very node we chose, without our GPU indices, is
still foreign (its gang rolled back).
Built on tests/kube/e2e.py's helpers; every wait is bounded.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, gang, node, pods_of, wait_for  # noqa: E402

N_PODS = 3


def stats(c):
    return c.get("/_fake/stats")[1]


def main():
    kubeconfig, c = e2e.start_with_config(e2e.CONFIG)
    for i in range(N_PODS):
        c.post("/api/v1/nodes", node("gpu-%d" % i, "r1"))
    c.post("/_fake/faults", {"type": "lose-answer", "verb": "create", "path": "/binding"})
    s = e2e.Sched(kubeconfig, "d", os.path.join(e2e.TMP, "d.db"),
                  extra=["--leader-elect", "false", "--log-level", "debug"])
    gang(c, "g", N_PODS, 8)
    check("the first Binding was applied and its answer lost",
          wait_for(lambda: stats(c)["answers_lost"] == 1, 20), str(stats(c)))
    uids = {}
    check("the gang is bound whole (%d pods)" % N_PODS,
          wait_for(lambda: len(bound(c, "g")) == N_PODS, 20),
          str([(p["metadata"]["name"], p["spec"].get("nodeName")) for p in pods_of(c, "g")]))
    for p in pods_of(c, "g"):
        uids[p["metadata"]["name"]] = p["metadata"]["uid"]
    time.sleep(3)  # a rollback would delete members now
    st = stats(c)
    now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in bound(c, "g")}
    check("still bound whole 3 s later, the same pods (uids unchanged)", now == uids,
          "%s vs %s" % (now, uids))
    check("no pod deleted (pod_deletes=%d), %d Bindings applied (the lost one among them), the "
          "retry refused by its precondition (bind_conflicts=%d)"
          % (st["pod_deletes"], st["binds"], st["bind_conflicts"]),
          st["pod_deletes"] == 0 and st["binds"] == N_PODS and st["bind_conflicts"] == 1, str(st))
    text = s.text()
    check("logged: gang bound, no gang bind failed",
          "gang bound: gang=default/g pods=%d" % N_PODS in text and "gang bind failed" not in text,
          "\n".join(x for x in text.splitlines() if "gang bind" in x or "someone else" in x))
    foreign_same_node(c, s)
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


def foreign_same_node(c, s):
    """Another scheduler binds our pod to the very node we chose, between our decision and our
    Binding: the pod read back is on our node but without our gangsched.io/gpu-ids, so it is
    still bound by someone else (its GPUs are not the ones we counted) and rolled back."""
    before = stats(c)["pod_deletes"]
    c.post("/api/v1/nodes", node("gpu-9", "r1"))  # the only node with free GPUs now
    c.post("/_fake/faults", {"type": "foreign-bind", "node": "gpu-9", "path": "/pods/f-0/binding"})
    gang(c, "f", 1, 8)
    check("a pod bound by someone else to our node first, without our GPU indices, is foreign: "
          "deleted",
          wait_for(lambda: stats(c)["pod_deletes"] == before + 1, 20), str(stats(c)))
    check("logged: bound to node gpu-9 by someone else",
          wait_for(lambda: 'bound to node \\"gpu-9\\" by someone else' in s.text()
                   or 'bound to node "gpu-9" by someone else' in s.text(), 5),
          "\n".join(x for x in s.text().splitlines() if "gang bind" in x))


if __name__ == "__main__":
    e2e.run(main)
