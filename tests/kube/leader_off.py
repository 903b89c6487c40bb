"""tests/kube/leader_off.py: `gangsched run --leader-elect false` against the fake API server: the
only replica schedules at once, and /metrics says so (gangsched_leader 1; it read 0 before), with
gangctl listing the bound gang. Built on tests/kube/e2e.py's helpers; every wait is bounded.
"""

import os
import sys

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
    e2e.finish()


if __name__ == "__main__":
    main()
