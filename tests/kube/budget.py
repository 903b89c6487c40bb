"""tests/kube/budget.py: a cycle cut short by its time budget (against the fake API server).

Owns: one scenario. 1,000 one-GPU replicas preferring apart wait on 125 idle 8-GPU nodes before
the scheduler starts, so its first cycle offers them all, and `--cycle-budget 1ms` lets the core try only the gangs it
reaches in a millisecond (one at least): the cycle says so (the log line and
gangsched_cycles_cut_short_total in /metrics), binds what it placed, and the next cycle, run at
once, goes on from there. Every pod ends bound, no node holds more than its 8 GPUs, and the
daemon keeps leading. The same bound keeps a leader's cycle short of its Lease's renew deadline
(sched/kube/driver.c cycle_budget); the core's side is test_cycle_starts
test_time_budget_cuts_the_cycle_short.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import check, http_get, wait_for  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: q
"""
# A measurement at scale (not in the test suite): BUDGET_NODES, BUDGET_PODS and BUDGET_FLAG
# ("" = no --cycle-budget: only the Lease's bound) change the scenario, BUDGET_WAIT_S its wait.
NODES = int(os.environ.get("BUDGET_NODES", 125))
PODS = int(os.environ.get("BUDGET_PODS", 1000))
FLAG = os.environ.get("BUDGET_FLAG", "1ms")
WAIT_S = float(os.environ.get("BUDGET_WAIT_S", 120))


def one_pod(i):
    """A replica of one Deployment: one GPU, preferring a node without another replica (each
    is scored against the nodes and the replicas placed before it: not a cheap gang)."""
    p = e2e.pod("p-%04d" % i, None, 1)
    p["metadata"]["labels"] = {"gangsched.io/queue": "q", "app": "serve"}
    p["spec"]["affinity"] = {"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": "serve"}},
            "topologyKey": "kubernetes.io/hostname"}}]}}
    return p


def cut_short(url):
    """gangsched_cycles_cut_short_total of the scheduler at url, or -1."""
    st, text = http_get(url + "/metrics")
    for line in text.splitlines() if st == 200 else []:
        if line.startswith("gangsched_cycles_cut_short_total"):
            return int(float(line.split()[-1]))
    return -1


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    for n in range(NODES):
        c.post("/api/v1/nodes", e2e.node("gpu-%03d" % n, "r%d" % (n // 8)))
    for i in range(PODS):
        c.post("/api/v1/namespaces/default/pods", one_pod(i))
    t0 = time.time()
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "gangsched.db"),
                  ["--cycle-budget", FLAG] if FLAG else [])
    check("the scheduler leads", wait_for(s.leading, 20))

    def placed():
        items = c.get("/api/v1/namespaces/default/pods")[1]["items"]
        return [p["spec"]["nodeName"] for p in items if p["spec"].get("nodeName")]
    done = wait_for(lambda: len(placed()) == PODS, WAIT_S, 0.5)
    nodes = placed()
    print("%d of %d pods bound in %.1f s" % (len(nodes), PODS, time.time() - t0))
    check("every pod is bound", done, "%d of %d" % (len(nodes), PODS))
    per_node = {}
    for n in nodes:
        per_node[n] = per_node.get(n, 0) + 1
    check("no node holds more than its 8 GPUs", max(per_node.values() or [0]) <= 8,
          str(sorted(per_node.items(), key=lambda kv: -kv[1])[:3]))
    cuts = cut_short(s.url())
    print("cycles cut short: %d" % cuts)
    check("the metric is served", cuts >= 0, "metric %d" % cuts)
    if FLAG:  # at scale without the flag a cycle may well fit the Lease's bound: measured only
        check("cycles were cut short by the budget", cuts >= 1, "metric %d" % cuts)
        check("the log says which and what is left",
              "cycle cut short by its time budget" in s.text())
    check("the scheduler is still running and leading",
          s.p.poll() is None and "stopped leading" not in s.text())
    print("\n".join(x for x in s.text().splitlines() if "cut short" in x))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
