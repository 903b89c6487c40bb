#!/usr/bin/env python3
"""tests/kube/failover.py: what a fail-over loses, with and without a standby that follows.

Owns: a leader and a standby, each with its own database file (the Deployment's emptyDir); the
standby runs with --follow LEADER_URL --follow-interval 300, copying the leader's store through
the HTTP API (sched/http/follow.c). The leader schedules a gang and takes operator actions (a
queue held), then is killed with SIGKILL; the standby takes over with the followed store and
must still hold the queue. Then that leader is killed too, and a replica WITHOUT --follow takes
over on a fresh file: the hold and the history are gone, as they were for every fail-over
before. The fair-share history goes across the fail-over with the followed store and goes on
from where the old leader left it. Prints the figures (commit_seq, decisions, actions, history
rows) of each store.

Run by tests/kube/test_failover.sh; "ok ..." / "FAIL ..." lines; exit 1 on any failure.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import TMP, Sched, bound, check, gang, gangctl, node, wait_for  # noqa: E402
from kclient import Client  # noqa: E402


def figures(db):
    """Counts of what the store keeps for the next leader."""
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        q = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
        f = {"commit_seq": int(q("select value from meta where key='commit_seq'")),
             "decisions": q("select count(*) from decisions"),
             "actions": q("select count(*) from operator_actions"),
             "fair_share": q("select count(*) from fair_share"),
             "jobs": q("select count(*) from jobs")}
        con.close()
        return f
    except sqlite3.Error as exc:
        return {"error": str(exc)}


def history(db, queue):
    """(share, updated_ms) of the queue's fair_share row, or None."""
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        row = con.execute("select share, updated_ms from fair_share where queue = ?",
                          (queue,)).fetchone()
        con.close()
        return row
    except sqlite3.Error:
        return None


def admission(url, queue):
    rc, out = gangctl("--server", url, "queues", "-o", "json")
    try:
        return {q["name"]: q.get("admission") for q in json.loads(out)["queues"]}.get(queue)
    except (ValueError, KeyError):
        return None


def main():
    kubeconfig = e2e.start_fake()
    with open(os.path.join(TMP, "config.yaml"), "w") as f:
        f.write(e2e.CONFIG)
    with open(os.path.join(TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    for n, rack in (("gpu-1", "r1"), ("gpu-2", "r1")):
        c.post("/api/v1/nodes", node(n, rack))
    db_a, db_b, db_c = (os.path.join(TMP, x + ".db") for x in ("a", "b", "c"))
    a = Sched(kubeconfig, "sched-a", db_a)
    check("replica a leads", wait_for(a.leading, 20))
    b = Sched(kubeconfig, "sched-b", db_b,
              ["--follow", a.url(), "--follow-interval", "300"])
    gang(c, "train", 2, 8)
    check("a gang is bound by the leader", wait_for(lambda: len(bound(c, "train")) == 2, 20))
    rc, out = gangctl("--server", a.url(), "queue", "hold", "team-b", token=True)
    check("the leader holds queue team-b", rc == 0, out)
    check("the hold is applied", wait_for(lambda: admission(a.url(), "team-b") == "held", 10))
    n0 = b.text().count("followed the leader's store")
    check("the standby follows the leader's store",
          wait_for(lambda: b.text().count("followed the leader's store") >= n0 + 2, 10),
          b.text()[-400:])
    check("the standby stays standby", not b.leading())
    check("a standby does not serve its store (503: only the leader does)",
          e2e.http_get(b.url() + "/v1/store/snapshot")[0] == 503)
    a.stop(signal.SIGKILL)
    at_kill = figures(db_a)
    check("the standby takes over", wait_for(b.leading, 40), b.text()[-400:])
    check("it adopts the followed store", wait_for(
        lambda: "adopted the followed store" in b.text(), 20), b.text()[-600:])
    check("the hold survives the fail-over",
          wait_for(lambda: admission(b.url(), "team-b") == "held", 20),
          str(admission(b.url(), "team-b")))
    adopted = figures(db_b)
    print("figures: leader at SIGKILL %s" % json.dumps(at_kill))
    print("figures: standby after takeover (followed) %s" % json.dumps(adopted))
    check("the new leader's store has the old leader's history",
          adopted.get("actions", 0) >= at_kill.get("actions", 0)
          and adopted.get("jobs", 0) >= at_kill.get("jobs", 0), json.dumps(adopted))
    # the fair-share history: the old leader wrote a row per queue; the new one restores them
    # and integrates the time since with what it sees running (train, half of team-a's quota),
    # so its first rows are above 0 where a replica on an empty file starts at 0
    check("the old leader wrote the fair-share history", at_kill.get("fair_share", 0) >= 2,
          json.dumps(at_kill))
    check("the new leader restores it",
          wait_for(lambda: "fair-share history restored: queues=%d" % at_kill.get("fair_share")
                   in b.text(), 20), b.text()[-600:])
    check("and integrates the fail-over's gap with what runs (team-a's history > 0)",
          wait_for(lambda: (history(db_b, "team-a") or (0, 0))[0] > 0, 20),
          str(history(db_b, "team-a")))
    # before: a replica without --follow takes over on its own (empty) file
    b.stop(signal.SIGKILL)
    cc = Sched(kubeconfig, "sched-c", db_c)
    check("a replica without --follow takes over", wait_for(cc.leading, 40))
    check("it starts with the hold lost (the old behaviour)",
          wait_for(lambda: admission(cc.url(), "team-b") == "open", 20),
          str(admission(cc.url(), "team-b")))
    check("it starts without fair-share history (team-a's row at 0)",
          wait_for(lambda: history(db_c, "team-a") is not None, 20)
          and history(db_c, "team-a")[0] == 0, str(history(db_c, "team-a")))
    print("figures: replica without --follow after takeover %s" % json.dumps(figures(db_c)))
    # in a pod: POD_NAME is the identity and POD_NAMESPACE the Lease's namespace (downward API)
    cc.stop(signal.SIGKILL)
    c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": "sched-ns"}})
    log = open(os.path.join(TMP, "sched-pod.log"), "w")
    env = dict(os.environ, POD_NAME="gangsched-7d9f-x2k4q", POD_NAMESPACE="sched-ns")
    p = subprocess.Popen([os.path.join(e2e.BIN, "gangsched"), "run", "--kubeconfig", kubeconfig,
                          "--config", os.path.join(TMP, "config.yaml"), "--db",
                          os.path.join(TMP, "d.db"), "--listen", ""], env=env, stdout=log,
                         stderr=log)
    e2e.procs.append(p)

    def holder():
        st, lease, _ = c.get("/apis/coordination.k8s.io/v1/namespaces/sched-ns/leases/gangsched")
        return lease.get("spec", {}).get("holderIdentity") if st == 200 else None
    check("POD_NAME and POD_NAMESPACE are the identity and the Lease's namespace",
          wait_for(lambda: holder() == "gangsched-7d9f-x2k4q", 20), str(holder()))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
