"""tests/kube/eta_users.py: the daemon learns run times per user (gangsched.io/user on the
PodGroup; queue/estimate.h) against the fake API server.

Owns: one scenario on one 8-GPU node, one queue. Two users run four 8-GPU gangs each, ended by
themselves (ben's after about 1 s, ana's after about 5 s): each job row names its user. Then a
gang waits behind a running gang of each user in turn: it is expected to start when that user's
runs end (about 5 s after ana's gang started, about 1 s after ben's), not at a run time of the
queue's; after a restart the same, from the users the store's job rows keep. Every wait is
bounded; the margins allow a loaded machine a second or two.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, job, podgroup, pod, wait_for  # noqa: E402
from checkpoint import running  # noqa: E402
from eta import CONFIG, succeed  # noqa: E402

RUN_S = {"ana": 5.0, "ben": 1.0}


def user_gang(c, name, user):
    path, pg = podgroup(name, 1)
    pg["metadata"]["annotations"] = {"gangsched.io/user": user}
    c.post(path, pg)
    c.post("/api/v1/namespaces/default/pods", pod(name + "-0", name, 8))


def run_to_end(c, url, name, user):
    """A gang of user's that runs RUN_S[user] seconds and ends by itself."""
    user_gang(c, name, user)
    check("%s's gang %s is bound" % (user, name), wait_for(lambda: bound(c, name), 15))
    check("... and runs", wait_for(lambda: running(c, name), 15))
    time.sleep(RUN_S[user])
    succeed(c, name + "-0")
    check("... and finished", wait_for(
        lambda: (job(url, name, every=True) or {}).get("state") == "finished", 15))


def expected_lead(c, url, running_user, runner, waiter, waiter_user):
    """runner (of running_user) is bound now; waiter queues behind it: its expected start,
    seconds after runner's start."""
    user_gang(c, runner, running_user)
    check("%s's gang %s is bound" % (running_user, runner), wait_for(lambda: bound(c, runner), 15))
    t0 = time.time()
    check("... and runs", wait_for(lambda: running(c, runner), 15))
    user_gang(c, waiter, waiter_user)
    j = wait_for(lambda: (job(url, waiter) or {}).get("expected_start_ms"), 15)
    check("%s waits with an expected start" % waiter, j is not None, json.dumps(job(url, waiter)))
    return (j / 1000.0 - t0) if j else None


def behind_each_user(c, url, tag):
    """A gang waits behind ana's, then behind ben's: expected at their own users' run times.
    tag: the gangs' name prefix and the checks' label."""
    lead = expected_lead(c, url, "ana", tag + "a-run", tag + "b-wait", "ben")
    check("%s behind ana's gang: expected about %g s after its start (ana's runs)" %
          (tag, RUN_S["ana"]), lead is not None and 3.5 < lead < 8.0, "%s s" % lead)
    succeed(c, tag + "a-run-0")
    check("%s the waiting gang starts once ana's ended" % tag,
          wait_for(lambda: bound(c, tag + "b-wait"), 15))
    c.delete("/api/v1/namespaces/default/pods/%sb-wait-0" % tag, {"gracePeriodSeconds": 0})
    check("the node is free", wait_for(lambda: not bound(c, tag + "b-wait"), 15))
    lead = expected_lead(c, url, "ben", tag + "b-run", tag + "a-wait", "ana")
    check("%s behind ben's gang: expected about %g s after its start (ben's runs)" %
          (tag, RUN_S["ben"]), lead is not None and -1.0 < lead < 2.8, "%s s" % lead)
    succeed(c, tag + "b-run-0")
    check("%s the waiting gang starts once ben's ended" % tag,
          wait_for(lambda: bound(c, tag + "a-wait"), 15))
    c.delete("/api/v1/namespaces/default/pods/%sa-wait-0" % tag, {"gracePeriodSeconds": 0})
    check("the node is free", wait_for(lambda: not bound(c, tag + "a-wait"), 15))


def main():
    kubeconfig, c, s, db = e2e.start_one(CONFIG)
    url = s.url()
    for k in range(4):
        run_to_end(c, url, "ana%d" % k, "ana")
        run_to_end(c, url, "ben%d" % k, "ben")
    rows = [job(url, "%s%d" % (u, k), every=True) or {} for u in ("ana", "ben") for k in range(4)]
    check("each job row names its user", [r.get("user") for r in rows] == ["ana"] * 4 + ["ben"] * 4,
          json.dumps([r.get("user") for r in rows]))
    behind_each_user(c, url, "p1-")
    check("the scheduler stops", s.stop() == 0)
    s = e2e.Sched(kubeconfig, "sched2", db)
    check("a new scheduler leads", wait_for(s.leading, 30))
    behind_each_user(c, s.url(), "p2-")
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
