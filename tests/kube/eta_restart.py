"""tests/kube/eta_restart.py: a run that ended while no scheduler was running teaches no run time
(against the fake API server).

Owns: one scenario on two 8-GPU nodes. A gang runs; the scheduler stops; the gang's pod
Succeeds (what the kubelet writes) while none runs; a new scheduler finds its job row still
`running` and the gang gone: the row becomes `finished` without a finish time (the end was not
seen; the time it was noticed would count the downtime as run time). A gang then waits behind a
running one: with nothing learned, its expected start is "run times unknown", in that process
and in the next one (which learns the store's finished jobs at its first cycle). A gang that
process found running and then saw end keeps its finish time. Every wait is bounded.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, gangctl, wait_for  # noqa: E402
from eta import CONFIG, new_gang, succeed  # noqa: E402


def job(url, name):
    return e2e.job(url, name, every=True)  # finished ones too


def phase(c, name):
    st, p, _ = c.get("/api/v1/namespaces/default/pods/" + name)
    return p.get("status", {}).get("phase") if st == 200 else None


def main():
    kubeconfig, c, s, db = e2e.start_one(CONFIG)
    url = s.url()
    new_gang(c, "first", 8)
    check("the first gang is bound", wait_for(lambda: bound(c, "first"), 15))
    check("its job row is running",
          wait_for(lambda: (job(url, "first") or {}).get("state") == "running", 15),
          json.dumps(job(url, "first")))
    check("the fake kubelet started it", wait_for(lambda: phase(c, "first-0") == "Running", 15),
          phase(c, "first-0"))
    check("the scheduler stops", s.stop() == 0)

    succeed(c, "first-0")  # ends while no scheduler runs
    check("it ended", phase(c, "first-0") == "Succeeded", phase(c, "first-0"))
    time.sleep(1.5)  # the downtime the noticed time would count as run time
    c.post("/api/v1/nodes", e2e.node("gpu-2", "r1"))
    s = e2e.Sched(kubeconfig, "sched2", db)
    check("a second scheduler leads", wait_for(s.leading, 30))
    url = s.url()
    row = wait_for(lambda: (job(url, "first") or {}).get("state") == "finished" and
                   job(url, "first"), 15) or job(url, "first")
    check("the row left running is finished", (row or {}).get("state") == "finished",
          json.dumps(row))
    check("without a finish time (its end was not seen)", row and row.get("finish_ms") is None,
          json.dumps(row))
    rc, out = gangctl("--server", url, "jobs", "--all")
    line = [x for x in out.splitlines() if "default/first" in x]
    check("gangctl jobs lists it", rc == 0 and line, out)

    new_gang(c, "blocker", 8)  # two nodes: one for the blocker, the other for `busy`
    new_gang(c, "busy", 8)
    check("two gangs run", wait_for(lambda: bound(c, "blocker") and bound(c, "busy"), 15))
    new_gang(c, "waits", 8)
    j = wait_for(lambda: (job(url, "waits") or {}).get("expected_start"), 15)
    check("nothing learned: run times unknown", j and "run times unknown" in j,
          json.dumps(job(url, "waits")))

    check("the second scheduler stops", s.stop() == 0)
    s = e2e.Sched(kubeconfig, "sched3", db)
    check("a third scheduler leads", wait_for(s.leading, 30))
    url = s.url()
    j = wait_for(lambda: (job(url, "waits") or {}).get("expected_start"), 15)
    check("the store's finished jobs teach nothing either: run times unknown",
          j and "run times unknown" in j, json.dumps(job(url, "waits")))
    # a gang this process found running and then saw end keeps its finish time
    check("the busy gang runs under the third scheduler",
          wait_for(lambda: (job(url, "busy") or {}).get("state") == "running", 30))
    succeed(c, "busy-0")
    row = wait_for(lambda: (job(url, "busy") or {}).get("state") == "finished" and
                   job(url, "busy"), 30) or job(url, "busy")
    check("a run whose end this process saw is finished with its finish time",
          row and row.get("finish_ms") is not None, json.dumps(row))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
