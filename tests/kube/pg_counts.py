"""tests/kube/pg_counts.py: the member counts of PodGroups (status.running, succeeded, failed)
and the phases they move a group to, with `gangsched run` and the real kubectl reading them
through the CRDs' printer columns.

Owns: the daemon's side of driver_counts.c (docs/daemon.md, Status and events). Two 8-GPU
nodes. scheduler-plugins PodGroups: "done" (minMember 2), two 1-GPU pods that run 12 s (a
group's counts are written at most every 5 s); "pull", two pods whose image never pulls (the
fake kubelet leaves them Pending, ErrImagePull). Volcano PodGroups: "vc", two pods that keep
running; "vcdone", two pods that run 12 s; "vcc", two pods that keep running, whose first
PUT gets 409 Conflict (an injected fault, as when another write of the object landed first). Checked, as scheduler-plugins' PodGroup controller
and Volcano's scheduler move them: "done" is Running with running 2 while its pods run, then
succeeded 2, running 0 and phase Finished once they end, and `kubectl get podgroups` prints
those values in its columns; "pull" stays Scheduling (bound, no member running); "vc" shows
running 2 beside the phase Running and the Scheduled condition the daemon wrote (a PUT of the
whole object keeps both); "vcdone" ends Completed with succeeded 2; "vcc" gets its Running phase and Scheduled
condition written again after the 409; the counts of "done" were
written a bounded number of times. Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

RUN = "fake.gangsched.io/run-seconds"
START = "fake.gangsched.io/start"  # the fake kubelet's start mode (fakeapi_base.ANNOT_START)


def members(c, group, seconds, volcano=False, start=None):
    for k in range(2):
        p = e2e.pod("%s-%d" % (group, k), group, 1, volcano)
        p["metadata"].setdefault("annotations", {})[RUN] = str(seconds)
        if start:
            p["metadata"]["annotations"][START] = start
        code, body, _ = c.post("/api/v1/namespaces/default/pods", p)
        check("pod %s-%d is created" % (group, k), code == 201, str(body)[:200])


def kubectl_row(kubeconfig, resource, name):
    """The cells of name's row in `kubectl get RESOURCE NAME`, without the age ("-" blank)."""
    rows = e2e.kubectl_table(kubeconfig, resource, name)
    return [v or "-" for v in list(rows[0].values())[:-1]] if rows else []


def main():
    kubeconfig, c = e2e.start_with_config(e2e.CONFIG)
    for k in range(2):
        c.post("/api/v1/nodes", e2e.node("gpu-%d" % (k + 1), "r1"))
    path, pg = e2e.podgroup("done", 2)
    c.post(path, pg)
    members(c, "done", 12)  # longer than the 5 s between two writes of its counts
    path, pg = e2e.podgroup("vc", 2, volcano=True)
    c.post(path, pg)
    members(c, "vc", 600, volcano=True)
    path, pg = e2e.podgroup("pull", 2)
    c.post(path, pg)
    members(c, "pull", 600, start="errimagepull")
    path, pg = e2e.podgroup("vcdone", 2, volcano=True)
    c.post(path, pg)
    members(c, "vcdone", 12, volcano=True)
    path, pg = e2e.podgroup("vcc", 2, volcano=True)
    c.post(path, pg)
    members(c, "vcc", 600, volcano=True)
    c.post("/_fake/faults", [{"type": "conflict", "verb": "update", "path": "/podgroups/vcc"}])
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "gangsched.db"))
    check("the scheduler leads", wait_for(s.leading, 20))
    check("the five gangs are bound", wait_for(lambda: all(
        len(e2e.bound(c, g)) == 2 for g in ("done", "vc", "pull", "vcdone", "vcc")), 20))
    running = wait_for(lambda: e2e.pg_status(c, "done").get("running") == 2, 10, step=0.2)
    check("while its pods run, the PodGroup counts them", running, str(e2e.pg_status(c, "done")))
    running = wait_for(lambda: e2e.pg_status(c, "done").get("phase") == "Running", 5, step=0.2)
    check("and it is Running (minMember members run)", running, str(e2e.pg_status(c, "done")))
    ended = wait_for(lambda: e2e.pg_status(c, "done").get("succeeded") == 2, 30, step=0.5)
    st = e2e.pg_status(c, "done")
    check("once they end: succeeded 2, running 0, failed 0", ended and
          st.get("running") == 0 and st.get("failed", 0) == 0, str(st))
    check("and phase Finished", st.get("phase") == "Finished", str(st))
    row = kubectl_row(kubeconfig, "podgroups.scheduling.x-k8s.io", "done")
    check("kubectl get podgroups shows them (NAME PHASE MINMEMBER RUNNING SUCCEEDED FAILED)",
          row == ["done", "Finished", "2", "0", "2", "0"], str(row))
    vc = wait_for(lambda: e2e.pg_status(c, "vc", volcano=True).get("running") == 2, 10, step=0.2)
    st = e2e.pg_status(c, "vc", volcano=True)
    check("the Volcano PodGroup counts its running pods", vc, str(st))
    check("beside the phase and the condition the daemon wrote", st.get("phase") == "Running" and
          any(x.get("type") == "Scheduled" for x in st.get("conditions", [])), str(st))
    row = kubectl_row(kubeconfig, "podgroups.scheduling.volcano.sh", "vc")
    check("kubectl shows the Volcano row (NAME STATUS MINMEMBER RUNNING QUEUE)",
          row == ["vc", "Running", "2", "2", "team-a"], str(row))
    st = e2e.pg_status(c, "pull")
    check("a gang bound whose members never start is Scheduling, running 0",
          st.get("phase") == "Scheduling" and st.get("running", 0) == 0, str(st))
    row = kubectl_row(kubeconfig, "podgroups.scheduling.x-k8s.io", "pull")
    check("kubectl shows it so", row == ["pull", "Scheduling", "2", "-", "-", "-"], str(row))
    done = wait_for(lambda: e2e.pg_status(c, "vcdone", volcano=True).get("phase") == "Completed",
                    20, step=0.5)
    st = e2e.pg_status(c, "vcdone", volcano=True)
    check("a Volcano gang whose members all succeeded is Completed, succeeded 2",
          done and st.get("succeeded") == 2 and st.get("running", 0) == 0, str(st))
    def vcc_scheduled():
        st = e2e.pg_status(c, "vcc", volcano=True)
        return st.get("phase") == "Running" and any(
            x.get("type") == "Scheduled" for x in st.get("conditions", []))
    _, stats, _ = c.get("/_fake/stats")
    check("the first PUT of vcc's status was refused with 409", stats.get("conflicts", 0) >= 1,
          str(stats.get("conflicts")))
    check("its status is written again after the 409 (phase Running, Scheduled)",
          wait_for(vcc_scheduled, 10, step=0.2), str(e2e.pg_status(c, "vcc", volcano=True)))
    _, stats, _ = c.get("/_fake/stats")
    writes = stats.get("by_resource", {}).get("patch podgroups.scheduling.x-k8s.io/status", 0)
    check("the status of 'done' was written a bounded number of times", 0 < writes <= 8,
          str(writes))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
