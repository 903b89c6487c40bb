"""tests/kube/crash.py: the gang invariant of `gangsched run` through crashes, fail-overs, late
and foreign Bindings, against the strict fake API server (held Bindings, foreign binds).

Owns: the scenarios of issue 14's defects 1-3 (a partial gang after a crash or a fail-over, a
Binding applied after recovery rolled its gang back, a member bound elsewhere by someone else)
and the crash-and-fail-over soak: the leader is SIGKILLed at random points while gangs are
being bound, some Bindings are held by the server and applied late, and a new leader starts on
the same database or (fail-over) on an empty one. After each point, once settled:
  - no gang has live bound members below its minMember;
  - no pod was bound twice (the server's successful Bindings = distinct pods bound);
  - no node holds more GPUs than it has, no GPU index is given to two pods;
  - `gangsched store check` passes on the database;
  - the GPU ledger in the database equals the GPUs of the running gangs.
Usage: crash.py [--points N] [--seed S] (N = 0: the defect scenarios only). Every wait is bounded.
"""

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bad, check, ok, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
"""
NS = "/api/v1/namespaces/default"
PG = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/gangsched"
NODES = {"gpu-%d" % i: "r%d" % ((i + 1) // 2) for i in range(1, 7)}
GPUS = 8


class Cluster:
    def __init__(self, kubeconfig):
        self.kc = kubeconfig
        self.c = Client(kubeconfig)
        self.sched = None
        self.n = 0

    def start(self, db):
        self.n += 1
        self.sched = e2e.Sched(self.kc, "crash-%d" % self.n, db)
        return self.sched

    def kill_and_release(self):
        """SIGKILL the leader; then give its Lease up as it would have done on a clean exit
        (holder "", leaseTransitions kept), so that the next leader takes over at once instead
        of after the 15 s lease duration (it counts a new term either way)."""
        self.sched.stop(signal.SIGKILL)
        st, lease, _ = self.c.get(LEASE)
        if st == 200:
            lease["spec"]["holderIdentity"] = ""
            lease["spec"]["leaseDurationSeconds"] = 1
            self.c.put(LEASE, lease)


def gang(c, name, n, gpus, min_member=None):
    c.post(PG, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": name, "labels": {"gangsched.io/queue": "team-a"}},
                "spec": {"minMember": min_member or n}})
    for i in range(n):
        c.post(NS + "/pods", e2e.pod("%s-%d" % (name, i), name, gpus))


def all_pods(c):
    st, items, _ = c.get(NS + "/pods")
    return items.get("items", []) if st == 200 else []


def gpus_of(p):
    lim = p["spec"]["containers"][0].get("resources", {}).get("limits", {})
    return int(lim.get("nvidia.com/gpu", "0"))


def live_bound(p):
    return (p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp") and
            p.get("status", {}).get("phase") not in ("Succeeded", "Failed"))


def held(c):
    return c.get("/_fake/held")[1].get("held", 0)


def violations(c, mins):
    """The invariant's breaches now: partial gangs, over-full nodes, shared GPU indices."""
    out = []
    pods = all_pods(c)
    by_group = {}
    for p in pods:
        g = p["metadata"].get("labels", {}).get("scheduling.x-k8s.io/pod-group")
        if g and live_bound(p):
            by_group.setdefault(g, []).append(p["metadata"]["name"])
    for g, members in sorted(by_group.items()):
        if len(members) < mins.get(g, 1):
            out.append("gang %s: %d bound of minMember %d (%s)" % (g, len(members), mins.get(g, 1),
                                                                   ",".join(sorted(members))))
    per_node, ids = {}, {}
    for p in pods:
        if not p["spec"].get("nodeName") or p.get("status", {}).get("phase") in ("Succeeded",
                                                                                 "Failed"):
            continue  # a deleting pod still holds its GPUs until it is gone
        n = p["spec"]["nodeName"]
        per_node[n] = per_node.get(n, 0) + gpus_of(p)
        for i in (p["metadata"].get("annotations", {}).get("gangsched.io/gpu-ids") or ""
                  ).split(","):
            if i:
                ids.setdefault((n, i), []).append(p["metadata"]["name"])
    for n, used in sorted(per_node.items()):
        if used > GPUS:
            out.append("node %s: %d GPUs of %d held" % (n, used, GPUS))
    for (n, i), who in sorted(ids.items()):
        if len(who) > 1:
            out.append("node %s GPU %s: %s" % (n, i, ",".join(who)))
    return out


def ledger_gpus(db):
    try:
        con = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)
        try:
            row = con.execute("SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE resource = "
                              "'nvidia.com/gpu'").fetchone()
        finally:
            con.close()
        return int(row[0])
    except sqlite3.Error as e:
        return "error: %s" % e


def running_gpus(c):
    return sum(gpus_of(p) for p in all_pods(c) if live_bound(p) and
               p["metadata"].get("labels", {}).get("scheduling.x-k8s.io/pod-group"))


def store_check(db):
    r = subprocess.run([os.path.join(e2e.BIN, "gangsched"), "store", "check", db],
                       capture_output=True, text=True, timeout=60)
    return r.returncode == 0, r.stdout + r.stderr


def settled(c, mins):
    """Nothing in flight: no held Binding, no pod being deleted, the invariant holds."""
    if held(c):
        return False
    if any(p["metadata"].get("deletionTimestamp") for p in all_pods(c)):
        return False
    return not violations(c, mins)


def judge(cl, db, mins, label, stats_before):
    """Waits for the point to settle, then checks every part of the invariant."""
    c = cl.c

    def quiet():
        """Settled now and still 1 s later: a new leader's Bindings in flight (a gang 3 of 4
        bound for a few ms) are not a partial gang; a partial gang that stays is."""
        if not settled(c, mins):
            return False
        time.sleep(1.0)
        return settled(c, mins)
    wait_for(quiet, 30, 0.2)
    v = violations(c, mins)
    check(label + ": no partial gang, no node over its GPUs, no GPU shared", not v, "; ".join(v))
    _, s, _ = c.get("/_fake/stats")
    binds = s.get("binds", 0) - stats_before.get("binds", 0)
    distinct = s.get("bound_pods", 0) - stats_before.get("bound_pods", 0)
    check(label + ": no pod bound twice (Bindings applied = pods bound)", binds == distinct,
          "%d Bindings for %d pods" % (binds, distinct))
    want = running_gpus(c)
    got = wait_for(lambda: ledger_gpus(db) == running_gpus(c), 10, 0.3)
    check(label + ": the ledger equals the GPUs of the running gangs", got,
          "ledger %s, running %d" % (ledger_gpus(db), want))
    good, text = store_check(db)
    check(label + ": store check passes", good, text[-300:])
    return not v


def cleanup(c):
    for p in all_pods(c):
        c.delete(NS + "/pods/" + p["metadata"]["name"], {"gracePeriodSeconds": 0})
    st, pgs, _ = c.get(PG)
    for g in pgs.get("items", []) if st == 200 else []:
        c.delete(PG + "/" + g["metadata"]["name"])
    wait_for(lambda: not all_pods(c), 10)


def defect_partial_after_crash(cl, db, failover):
    """Defect 1: the leader dies with 2 of 4 Bindings done (the other two held by the server);
    the next leader (same database, or an empty one) must not leave 2 bound alone."""
    c = cl.c
    tag = "failover" if failover else "restart"
    name = "d1" + tag[0]
    before = c.get("/_fake/stats")[1]
    c.post("/_fake/faults", [{"type": "hold", "path": "/pods/%s-2/binding" % name},
                             {"type": "hold", "path": "/pods/%s-3/binding" % name}])
    gang(c, name, 4, 4)
    got = wait_for(lambda: held(c) == 2 and
                   len([p for p in all_pods(c) if p["metadata"]["name"].startswith(name) and
                        live_bound(p)]) == 2, 20)
    check("defect 1 (%s): 2 of 4 Bindings done, 2 held, when the leader is killed" % tag, got)
    cl.kill_and_release()
    new_db = db if not failover else cl.base_db + ".standby-%d" % cl.n
    s = cl.start(new_db)
    check("defect 1 (%s): the next leader takes over" % tag, wait_for(s.leading, 20))
    wait_for(lambda: "recovery:" in s.text(), 20)

    def fenced(pod):
        st, obj, _ = c.get(NS + "/pods/" + pod)
        return st == 200 and "gangsched.io/bind-fence" in obj["metadata"].get("annotations", {})
    # the fences must have landed first: a held Binding released before its pod's fence lands
    # may be applied (the gang then whole, which is no defect), and the check below would be a race
    check("defect 1 (%s): the next leader fenced the 2 pods whose Bindings are held" % tag,
          wait_for(lambda: fenced(name + "-2") and fenced(name + "-3"), 20))
    c.post("/_fake/release", {})  # the old leader's Bindings arrive now, after its successor
    ok_ = judge(cl, new_db, {name: 4}, "defect 1 (%s)" % tag, before)
    left = [p for p in all_pods(c) if p["metadata"]["name"].startswith(name) and live_bound(p)]
    check("defect 1 (%s): the gang is not bound at all (its 2 remaining pods wait)" % tag,
          not left, str([p["metadata"]["name"] for p in left]))
    cleanup(c)
    return ok_, new_db


def defect_late_bind(cl, db):
    """Defect 2: a Binding in flight when the leader dies is applied after the new leader
    rolled its gang back and placed another gang: it must fail (the fence), not double-book."""
    c = cl.c
    before = c.get("/_fake/stats")[1]
    c.post("/_fake/faults", {"type": "hold", "path": "/pods/late-1/binding"})
    gang(c, "late", 2, 8)
    wait_for(lambda: held(c) == 1, 20)
    cl.kill_and_release()
    s = cl.start(db)
    check("defect 2: the restarted leader takes over", wait_for(s.leading, 20))
    wait_for(lambda: "recovered bind intent: gang=default/late" in s.text(), 20)
    # fill every node: the new leader places these on the GPUs the held Binding targets
    for i in range(6):
        gang(c, "fill%d" % i, 1, 8)
    wait_for(lambda: len([p for p in all_pods(c) if p["metadata"]["name"].startswith("fill")
                          and live_bound(p)]) >= 5, 20)
    c.post("/_fake/release", {})
    ok_ = judge(cl, db, {"late": 2}, "defect 2", before)
    _, st, _ = c.get("/_fake/stats")
    check("defect 2: the late Binding failed its resourceVersion precondition",
          "a Binding was applied late" not in s.text() and
          not [p for p in all_pods(c) if p["metadata"]["name"] == "late-1" and
               p["spec"].get("nodeName")], s.text()[-400:])
    cleanup(c)
    return ok_


def defect_foreign(cl, db):
    """Defect 3: a member is bound to another node by someone else between our decision and our
    Binding (409 already assigned): the whole gang goes, and comes back whole."""
    c = cl.c
    before = c.get("/_fake/stats")[1]
    c.post("/_fake/faults", {"type": "foreign-bind", "node": "gpu-6",
                             "path": "/pods/fb-1/binding"})
    gang(c, "fb", 2, 2)
    gone = wait_for(lambda: not [p for p in all_pods(c) if p["metadata"]["name"].startswith("fb-")
                                 and p["spec"].get("nodeName")], 20)
    check("defect 3: the foreign-bound member and the one we bound are both deleted", gone,
          str([(p["metadata"]["name"], p["spec"].get("nodeName")) for p in all_pods(c)]))
    time.sleep(0.5)  # a second delete of either would come now
    _, st, _ = c.get("/_fake/stats")
    dels = st.get("pod_deletes", 0) - before.get("pod_deletes", 0)
    with_uid = st.get("pod_deletes_uid", 0) - before.get("pod_deletes_uid", 0)
    check("defect 10: each is deleted once, with its uid as a precondition",
          dels == 2 and with_uid == 2, "%d deletes, %d with a uid" % (dels, with_uid))
    ev = wait_for(lambda: [e for e in e2e.events_for(c, "fb") if e["reason"] == "FailedBinding"],
                  10)
    check("defect 3: FailedBinding names the other node",
          ev and '"gpu-6" by someone else' in ev[0]["note"],
          json.dumps(ev)[:400])
    for i in range(2):  # its controller recreates the pods
        wait_for(lambda: not [p for p in all_pods(c) if p["metadata"]["name"] == "fb-%d" % i], 10)
        c.post(NS + "/pods", e2e.pod("fb-%d" % i, "fb", 2))
    check("defect 3: the recreated gang is bound whole",
          wait_for(lambda: len([p for p in all_pods(c) if p["metadata"]["name"].startswith("fb-")
                                and live_bound(p)]) == 2, 20))
    ok_ = judge(cl, db, {"fb": 2}, "defect 3", before)
    cleanup(c)
    return ok_


def touched_before_binding(cl, db):
    """A pod written between our decision and our Binding (a label here; our own status write
    or a controller elsewhere): the Binding's resourceVersion precondition fails, the daemon
    reads the pod back and binds it with its new version: the gang is bound whole, no
    rollback."""
    c = cl.c
    before = c.get("/_fake/stats")[1]
    c.post("/_fake/faults", {"type": "hold", "path": "/pods/tb-1/binding"})
    gang(c, "tb", 2, 1)
    wait_for(lambda: held(c) == 1, 20)
    c.patch(NS + "/pods/tb-1", {"metadata": {"labels": {"touched": "yes"}}},
            "application/merge-patch+json")
    c.post("/_fake/release", {})
    check("a member written before its Binding is bound with its new version, the gang whole",
          wait_for(lambda: len([p for p in all_pods(c) if p["metadata"]["name"].startswith("tb-")
                                and live_bound(p)]) == 2, 20))
    check("without a rollback", "gang bind failed: gang=default/tb" not in cl.sched.text(),
          cl.sched.text()[-400:])
    judge(cl, db, {"tb": 2}, "touched before binding", before)
    cleanup(c)


def next_leader(cl, db, rnd, failover, suffix, what):
    """Kills the leader and starts the next one, on db or (failover) on the empty base_db +
    suffix; the held requests land before it starts (half the time) or after its recovery.
    Returns it and its database ((None, database) when none leads)."""
    cl.kill_and_release()
    # the rules that caught nothing yet go: the held requests are the dead leader's only (a
    # rule left would hold the new leader's own Binding until its client times out)
    cl.c.delete("/_fake/faults")
    early = rnd.random() < 0.5
    if early:  # the held requests land before the next leader starts
        cl.c.post("/_fake/release", {})
    new_db = db if not failover else cl.base_db + suffix
    s = cl.start(new_db)
    if not wait_for(s.leading, 20):
        bad("%s: no new leader" % what)
        return None, new_db
    wait_for(lambda: "recovery:" in s.text(), 20)
    if not early:
        time.sleep(rnd.uniform(0.0, 0.5))
        cl.c.post("/_fake/release", {})
    return s, new_db


def soak_point(cl, db, rnd, i, failover, summary):
    """One kill point: gangs created, some Bindings held, the leader killed after a random
    delay, a new leader on the same or an empty database, held Bindings released early or
    late."""
    c = cl.c
    before = c.get("/_fake/stats")[1]
    mins, faults = {}, []
    for g in range(rnd.randint(2, 4)):
        name = "s%d-%d" % (i, g)
        n = rnd.randint(1, 4)
        mins[name] = n
        gpus = rnd.choice([1, 2, 4, 8])
        for k in range(n):
            if rnd.random() < 0.25:
                faults.append({"type": "hold", "path": "/pods/%s-%d/binding" % (name, k)})
        gang(c, name, n, gpus)
    if faults:
        c.post("/_fake/faults", faults)
    time.sleep(rnd.uniform(0.0, 0.8))
    s, new_db = next_leader(cl, db, rnd, failover, ".fo-%d" % i, "soak point %d" % i)
    if not s:
        return False, new_db
    label = "soak point %d (%s)" % (i, "fail-over" if failover else "same db")
    good = judge(cl, new_db, mins, label, before)
    summary["points"] += 1
    summary["failover" if failover else "same"] += 1
    summary["held"] += len(faults)
    summary["bad"] += 0 if good else 1
    cleanup(c)
    return good, new_db


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=0)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--skip-defects", action="store_true")
    args = ap.parse_args()
    kubeconfig = e2e.start_fake(grace_cap="0.3")
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    cl = Cluster(kubeconfig)
    for n, rack in sorted(NODES.items()):
        cl.c.post("/api/v1/nodes", e2e.node(n, rack, GPUS))
    db = cl.base_db = os.path.join(e2e.TMP, "gangsched.db")
    s = cl.start(db)
    check("the first scheduler becomes leader", wait_for(s.leading, 20))
    if not args.skip_defects:
        defect_foreign(cl, db)
        touched_before_binding(cl, db)
        defect_late_bind(cl, db)
        _, db = defect_partial_after_crash(cl, db, failover=False)
        _, db = defect_partial_after_crash(cl, db, failover=True)
    rnd = random.Random(args.seed)
    summary = {"points": 0, "same": 0, "failover": 0, "held": 0, "bad": 0}
    t0 = time.time()
    for i in range(args.points):
        failover = i % 2 == 1
        _, db = soak_point(cl, db, rnd, i, failover, summary)
    if args.points:
        summary["seconds"] = round(time.time() - t0, 1)
        summary["seed"] = args.seed
        print("soak: " + json.dumps(summary), flush=True)
        check("soak: zero points with a partial gang, a double bind or an over-full node",
              summary["bad"] == 0, json.dumps(summary))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
