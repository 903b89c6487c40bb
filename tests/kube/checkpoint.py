"""tests/kube/checkpoint.py: the checkpoint handshake of preemption by `gangsched run` against
the fake API server (docs/preemption.md, docs/daemon.md "Preemption").

Owns: one 8-GPU node (two from case 2), a queue with `checkpointGrace`. (1) A victim that
answers: the daemon writes gangsched.io/checkpoint-requested and gangsched.io/checkpoint-deadline
(request + grace) on its PodGroup with a CheckpointRequested Event, sending the write again when
the API server refuses it, leaves the victim running (and so in `gangctl jobs`, charged to its
queue) and the preemptor unbound while it has not answered, and evicts it through the Eviction API as soon as its gangsched.io/last-checkpoint is
after the request (long before the grace ends); the preemptor is bound; `gangctl explain` shows
the preemption's kind. (2) A restart during a
handshake: the new process resumes it from the annotations, restores the preemptor's hold (no
second victim is taken for it meanwhile, and the freed node is its) and evicts the victim that
never answers at the deadline, not before. (3) An operator's `checkpoint` action (a request
without a deadline) evicts nothing. (4) Annotations written by hand on a running gang while the
daemon leads start no handshake (they are read at the first cycle as leader only). (5) A victim
whose job ends by itself during its grace is finished at its end, its preemption not counted,
and nothing is evicted. Bounded waits.

Test-server behaviour relied on (tests/kube/fakeapi.py): the refused annotation write of case 1
is an injected 409 Conflict on the PodGroup's merge patch, which kube-apiserver answers when its
own retries of a patch on conflicting updates run out (staging/src/k8s.io/apiserver
pkg/endpoints/handlers/patch.go, maxRetryWhenPatchConflicts); a validating admission webhook's
denial is a 4xx as well, and neither is retried by the daemon's HTTP client (4xx: final).
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, events_for, pod, podgroup, wait_for  # noqa: E402
from e2e import parse_rfc3339 as parse, rfc3339  # noqa: E402
from e2e import pg_annotations as annotations  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: q
    preemption: {withinQueue: LowerPriority, checkpointGrace: %s}
"""
PG = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/"
WAIT = 60


def gang(c, name, priority, annotations=None):
    path, pg = podgroup(name, 1, queue="q")
    if annotations:
        pg["metadata"]["annotations"] = annotations
    c.post(path, pg)
    body = pod(name + "-0", name, 8)
    e2e.with_priority(c, body, priority)
    body["spec"]["terminationGracePeriodSeconds"] = 0
    c.post("/api/v1/namespaces/default/pods", body)




def running(c, name):
    return [p for p in bound(c, name) if p.get("status", {}).get("phase") == "Running"]


def evictions(c):
    return c.get("/_fake/stats")[1].get("evictions", 0)


def queue_used(url):
    """GPUs charged to queue q (`gangctl queues`: the ledger), or None."""
    rc, out = e2e.gangctl("--server", url, "queues", "-o", "json")
    qs = [q for q in json.loads(out).get("queues", []) if q.get("name") == "q"] if rc == 0 else []
    return qs[0].get("used_gpus") if qs else None


def preempt(c, victim, preemptor, label, before=None):
    """victim (priority 0) runs, then (after before(), if given) preemptor (priority 100)
    arrives: the evictions before it, and the victim's annotations once they carry a checkpoint
    deadline ({} if never)."""
    gang(c, victim, 0)
    check(label, wait_for(lambda: running(c, victim), WAIT))
    ev0 = evictions(c)
    if before:
        before()
    gang(c, preemptor, 100)
    ann = wait_for(lambda: annotations(c, victim).get("gangsched.io/checkpoint-deadline") and
                   annotations(c, victim), WAIT) or {}
    return ev0, ann


def start():
    """The fake server, one node, a scheduler with a 60 s grace: (kubeconfig, client, scheduler,
    database, config file)."""
    kubeconfig = e2e.start_fake()
    cfg = os.path.join(e2e.TMP, "config.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG % "60s")
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    c.post("/api/v1/nodes", e2e.node("gpu-1", "r1"))
    db = os.path.join(e2e.TMP, "gangsched.db")
    s = e2e.Sched(kubeconfig, "sched", db)
    check("the scheduler leads", wait_for(s.leading, 20))
    return kubeconfig, c, s, db, cfg


def answered(c, s):
    """(1) a victim that answers; the API server refuses the first two writes of its PodGroup's
    annotations (not its status': those come whenever the cycle writes them)."""
    def refuse():
        c.post("/_fake/faults", {"type": "error", "code": 409, "verb": "patch",
                                 "path": "/podgroups/low", "notPath": "/status", "count": 2})
    ev0, ann = preempt(c, "low", "high", "the victim runs", refuse)
    check("a refused checkpoint request is sent again",
          "checkpoint request write failed: gang=default/low status=409" in s.text() and
          c.get("/_fake/faults")[1].get("faults") == [], s.text()[-800:])
    asked = ann.get("gangsched.io/checkpoint-requested")
    until = ann.get("gangsched.io/checkpoint-deadline")
    check("the victim's PodGroup carries the request and its deadline (request + 60 s)",
          asked and until and abs(parse(until) - parse(asked) - 60) < 0.01, str(ann))
    check("a CheckpointRequested Event names the kind of preemption and the preemptor",
          wait_for(lambda: [e for e in events_for(c, "low")
                            if e["reason"] == "CheckpointRequested" and
                            e["note"].startswith("preempted by default/high: asked to checkpoint")],
                   WAIT), str([e["reason"] for e in events_for(c, "low")]))
    check("while it has not answered, it runs and the preemptor waits",
          not wait_for(lambda: evictions(c) > ev0 or bound(c, "high"), 2.0) and
          running(c, "low"))
    row = e2e.job(s.url(), "low") or {}
    check("... and gangctl shows it running (why: checkpointing), not yet preempted, its GPUs "
          "charged to its queue",
          row.get("state") == "running" and row.get("why") == "checkpointing" and
          row.get("preemptions") == 0 and queue_used(s.url()) == 8,
          "%s used=%s" % (row, queue_used(s.url())))
    t_answer = time.time()
    c.patch(PG + "low", {"metadata": {"annotations": {
        "gangsched.io/last-checkpoint": rfc3339(parse(asked) + 0.5)}}},
        "application/merge-patch+json")
    check("once its last checkpoint is after the request, it is evicted through the Eviction API",
          wait_for(lambda: evictions(c) > ev0, WAIT))
    check("... well before the grace ends (%.1f s after the answer)" % (time.time() - t_answer),
          time.time() - t_answer < 30)
    check("its Preempted Event says it checkpointed",
          wait_for(lambda: [e for e in events_for(c, "low") if e["reason"] == "Preempted" and
                            "after a requested checkpoint" in e["note"]], WAIT),
          str([e.get("note") for e in events_for(c, "low")]))
    check("the preemptor is bound", wait_for(lambda: bound(c, "high"), WAIT))
    check("once evicted, gangctl shows the victim pending, preempted once",
          wait_for(lambda: (e2e.job(s.url(), "low") or {}).get("state") == "pending" and
                   (e2e.job(s.url(), "low") or {}).get("preemptions") == 1, WAIT),
          str(e2e.job(s.url(), "low")))
    st, text = e2e.http_get(s.url() + "/metrics")
    check("the metric counts an answered handshake",
          'gangsched_checkpoint_handshakes_total{outcome="answered"} 1' in text,
          "\n".join(l for l in text.splitlines() if "checkpoint" in l))
    rc, out = e2e.gangctl("--server", s.url(), "explain", "default/low")
    check("gangctl explain says why the victim was evicted (KIND priority)",
          rc == 0 and any(l.split()[2:4] == ["victim", "priority"] for l in out.splitlines()
                          if len(l.split()) > 4), out)


def restarted(kubeconfig, c, s, db, cfg):
    """(2) a restart during a handshake: resumed from the annotations, the preemptor's hold
    restored, evicted at the deadline. A second node runs "other" (priority 50, which the
    preemptor outranks), protected by a minimum run time of 3 s when the first victim is
    chosen and not after: it is not taken as a second victim while the first one leaves.
    Returns the scheduler that runs at its end."""
    for name in ("low", "high"):
        c.delete("/api/v1/namespaces/default/pods/%s-0" % name, {"gracePeriodSeconds": 0})
        c.delete(PG + name)
    check("the node is free again", wait_for(lambda: not bound(c, "low") and
                                             not bound(c, "high"), WAIT))
    s.stop()
    with open(cfg, "w") as f:
        f.write(CONFIG % "8s")
    c.post("/api/v1/nodes", e2e.node("gpu-2", "r1"))
    s = e2e.Sched(kubeconfig, "sched2", db)
    check("a scheduler with an 8 s grace leads", wait_for(s.leading, 30))
    gang(c, "other", 50, {"gangsched.io/min-runtime": "3s"})
    check("another gang runs on the second node", wait_for(lambda: running(c, "other"), WAIT))
    ev0, ann = preempt(c, "old", "new", "the second victim runs")
    until = parse(ann.get("gangsched.io/checkpoint-deadline", rfc3339(0)))
    old_node = (bound(c, "old") or [{}])[0].get("spec", {}).get("nodeName")
    s.stop()
    s = e2e.Sched(kubeconfig, "sched3", db)
    check("a new process leads during the handshake", wait_for(s.leading, 30))
    check("it resumes the handshake from the annotations, with its preemptor from the store",
          wait_for(lambda: "checkpoint handshake resumed: gang=default/old" in s.text() and
                   "preemptor=default/new" in s.text(), WAIT), s.text()[-800:])
    check("the victim is not evicted before its deadline",
          not wait_for(lambda: evictions(c) > ev0, max(0.0, until - time.time() - 1.0)))
    check("... nor is a second victim asked for the same preemptor meanwhile",
          "gangsched.io/checkpoint-requested" not in annotations(c, "other") and
          running(c, "other"), str(annotations(c, "other")))
    check("it is evicted at the deadline", wait_for(lambda: evictions(c) > ev0, WAIT))
    check("... not before it (%.2f s after)" % (time.time() - until), time.time() >= until - 0.5)
    check("its Preempted Event says it did not checkpoint, naming the preemptor",
          wait_for(lambda: [e for e in events_for(c, "old") if e["reason"] == "Preempted" and
                            "no checkpoint within the grace by default/new" in e["note"]], WAIT),
          str([e.get("note") for e in events_for(c, "old")]))
    check("the preemptor is bound on the node the victim left",
          wait_for(lambda: [p for p in bound(c, "new")
                            if p.get("spec", {}).get("nodeName") == old_node], WAIT),
          str(old_node))
    check("and the other gang was never evicted", evictions(c) == ev0 + 1 and
          running(c, "other"))
    return s


def operator_request(c, s):
    """(3) an operator's checkpoint request evicts nothing."""
    ev0 = evictions(c)
    rc, out = e2e.gangctl("--server", s.url(), "checkpoint", "default/new", token=True)
    check("the operator's checkpoint action is accepted", rc == 0, out)
    check("the request is written, without a deadline",
          wait_for(lambda: annotations(c, "new").get("gangsched.io/checkpoint-requested"), WAIT)
          and "gangsched.io/checkpoint-deadline" not in annotations(c, "new"),
          str(annotations(c, "new")))
    check("and nothing is evicted",
          not wait_for(lambda: evictions(c) > ev0, 3.0) and bound(c, "new"))


def written_by_hand(c, s):
    """(4) a request and a deadline written by hand on a running gang while the daemon leads:
    no handshake (the annotations are read at the first cycle as leader only)."""
    ev0, now = evictions(c), time.time()
    c.patch(PG + "other", {"metadata": {"annotations": {
        "gangsched.io/checkpoint-requested": rfc3339(now),
        "gangsched.io/checkpoint-deadline": rfc3339(now + 2)}}}, "application/merge-patch+json")
    check("annotations written by hand during its tenure evict nothing",
          not wait_for(lambda: evictions(c) > ev0, 5.0) and running(c, "other") and
          "checkpoint handshake resumed: gang=default/other" not in s.text())


def ends_in_grace(c, s):
    """(5) a victim whose job ends by itself during its grace: finished at that time, its
    preemption not counted (it was never evicted), the preemptor bound on the node it freed."""
    ev0 = evictions(c)
    gang(c, "top", 200)
    check("the lowest gang is asked to checkpoint for the new one",
          wait_for(lambda: [e for e in events_for(c, "other")
                            if e["reason"] == "CheckpointRequested" and "default/top" in
                            e["note"]], WAIT), str([e["reason"] for e in events_for(c, "other")]))
    t_end = time.time()
    c.patch("/api/v1/namespaces/default/pods/other-0/status", {"status": {
        "phase": "Succeeded", "containerStatuses": [{
            "name": "main", "ready": False, "restartCount": 0, "image": "trainer", "imageID": "",
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}},
        "application/merge-patch+json")
    row = wait_for(lambda: (lambda j: j if j and j.get("state") == "finished" else None)(
        e2e.job(s.url(), "other", every=True)), WAIT) or e2e.job(s.url(), "other", every=True)
    fin = (row or {}).get("finish_ms")
    check("the victim that ended in its grace is finished, at its end, not preempted",
          row and row.get("state") == "finished" and isinstance(fin, int) and
          abs(fin / 1000.0 - t_end) < 10 and row.get("preemptions") == 0, str(row))
    check("... nothing was evicted and the preemptor is bound",
          wait_for(lambda: bound(c, "top"), WAIT) and evictions(c) == ev0)


def main():
    kubeconfig, c, s, db, cfg = start()
    answered(c, s)
    s = restarted(kubeconfig, c, s, db, cfg)
    operator_request(c, s)
    written_by_hand(c, s)
    ends_in_grace(c, s)
    check("the scheduler is still running", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
