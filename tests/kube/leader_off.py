"""tests/kube/leader_off.py: `gangsched run --leader-elect false` against the fake API server: the
only replica schedules at once, and /metrics says so (gangsched_leader 1; it read 0 before), with
gangctl listing the bound gang. Then SIGTERM while a write waits for its retry: the PodGroup
status of a gang that does not fit is refused once (503, Retry-After 2 s); the daemon drains its
writes before it exits, as it does with leader election (at most 5 s), so the status lands.
Before, without leader election, SIGTERM stopped at once and the write was lost.
Built on tests/kube/e2e.py's helpers; every wait is bounded.
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, podgroup, pod, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
"""


def main():
    kubeconfig = e2e.start_fake()
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    c.post("/api/v1/nodes", e2e.node("gpu-1", "r1"))
    s = e2e.Sched(kubeconfig, "alone", os.path.join(e2e.TMP, "gangsched.db"),
                  extra=["--leader-elect", "false"])
    c.post(*podgroup("solo", 1, queue="team-a"))
    c.post("/api/v1/namespaces/default/pods", pod("solo-0", "solo", 1))
    check("the only replica schedules without a Lease", wait_for(lambda: len(bound(c, "solo")) == 1, 20))
    st, text = e2e.http_get(s.url() + "/metrics")
    check("/metrics: gangsched_leader 1 with --leader-elect false",
          st == 200 and "\ngangsched_leader 1\n" in text, text[:300])
    rc, out = e2e.gangctl("--server", s.url(), "jobs")
    check("gangctl jobs lists the gang running", rc == 0 and "default/solo" in out and "running" in out, out)
    sigterm_drains(c, s)
    e2e.finish()


def fired(c):
    return c.get("/_fake/stats")[1].get("faults_fired", 0)


def sigterm_drains(c, s):
    """SIGTERM right after the status write of gang `big` (2 pods of 8 GPUs: no room) was refused
    with 503 and Retry-After 2: its retry is sent before the exit, and the exit is clean."""
    f0 = fired(c)
    c.post("/_fake/faults", {"type": "error", "code": 503, "retryAfter": 2, "count": 1,
                             "path": "/podgroups/big/status"})
    path, pg = podgroup("big", 2, queue="team-a")
    c.post(path, pg)
    for i in range(2):
        c.post("/api/v1/namespaces/default/pods", pod("big-%d" % i, "big", 8))
    check("the status write of gang big is refused once (503, Retry-After 2)",
          wait_for(lambda: fired(c) > f0, 20), s.text()[-600:])
    t0 = time.time()
    s.p.send_signal(signal.SIGTERM)
    try:
        s.p.wait(15)
    except Exception:  # noqa: BLE001 (bounded: killed below)
        s.p.kill()
        s.p.wait()
    took = time.time() - t0
    st, obj, _ = c.get("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/big")
    status = obj.get("status") or {} if st == 200 else {}
    print("SIGTERM with a status write waiting for its retry (Retry-After 2 s): exited after "
          "%.1f s, code %s; PodGroup big status: %s" % (took, s.p.returncode, status))
    check("exit 0 on SIGTERM", s.p.returncode == 0, s.text()[-600:])
    check("the refused status write was sent again before the exit (writes drained)",
          bool(status), str(obj)[:400])
    check("the drain waited for the retry, within its 5 s bound", 1.0 <= took < 7.0,
          "%.1f s" % took)


if __name__ == "__main__":
    main()
