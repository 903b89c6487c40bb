"""tests/kube/checkpoint_pods.py: the checkpoint handshake of preemption for gangs without a
PodGroup the daemon may annotate and for Kubernetes' own PodGroups, by `gangsched run` against
the fake API server (docs/preemption.md "The checkpoint handshake", "A job without a PodGroup").

Owns: one 8-GPU node, a queue with an 8 s `checkpointGrace`, the fake API server serving
scheduling.k8s.io/v1beta1. (1) A Kueue pod group of two pods (no PodGroup object): both pods get
gangsched.io/checkpoint-requested and gangsched.io/checkpoint-deadline (request + grace), it
runs while it has not answered, one pod answers (gangsched.io/last-checkpoint after the request,
a merge patch of that pod alone) and the gang is evicted long before the deadline, the preemptor
bound. (2) A gang of one that never answers: evicted at the deadline, not before. (3) A native
v1beta1 PodGroup: the request on the PodGroup (a merge patch of its metadata), not on its pod;
answered on its pod, evicted before the deadline. (4) A native PodGroup that does not answer:
evicted at the deadline. (5) A restart in the middle of a Kueue group's handshake, one pod's
annotations removed while no daemon runs (as if it had stopped before that pod's write): the new
process resumes the handshake from the other pod, writes the request on the stripped pod again,
and evicts at the deadline, not before. Bounded waits.

Test-server behaviour relied on (tests/kube/fakeapi.py): merge patches of pods and of native
PodGroups as kube-apiserver applies them (application/merge-patch+json: RFC 7386 on the stored
object; metadata.annotations merged key by key, null removes a key).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import check, events_for, wait_for  # noqa: E402
from checkpoint import evictions, parse, rfc3339, running  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: q
    preemption: {withinQueue: LowerPriority, checkpointGrace: 8s}
"""
GRACE = 8.0
PODS = "/api/v1/namespaces/default/pods"
NPG = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"
MERGE = "application/merge-patch+json"
ASKED = "gangsched.io/checkpoint-requested"
UNTIL = "gangsched.io/checkpoint-deadline"
LAST = "gangsched.io/last-checkpoint"
WAIT = 60


def pod(c, name, gpus, priority, labels=None, annotations=None, group=None):
    """A pod of queue q (a Kueue pod group's member with labels/annotations, a native group's
    with group), priority from a PriorityClass."""
    body = e2e.pod(name, None, gpus)
    body["metadata"]["labels"] = dict({"gangsched.io/queue": "q"}, **(labels or {}))
    if annotations:
        body["metadata"]["annotations"] = annotations
    if group:
        body["spec"]["schedulingGroup"] = {"podGroupName": group}
    body["spec"]["terminationGracePeriodSeconds"] = 0
    e2e.with_priority(c, body, priority)
    c.post(PODS, body)


def kueue_group(c, name, priority=0):
    """A Kueue plain-pod group of two 4-GPU pods NAME-0 and NAME-1: no PodGroup object."""
    for i in range(2):
        pod(c, "%s-%d" % (name, i), 4, priority, {"kueue.x-k8s.io/pod-group-name": name},
            {"kueue.x-k8s.io/pod-group-total-count": "2"})


def native_group(c, name):
    """A native v1beta1 PodGroup NAME (minCount 1, queue q) and its 8-GPU pod NAME-0."""
    c.post(NPG, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": "default",
                              "labels": {"gangsched.io/queue": "q"}},
                 "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}})
    pod(c, name + "-0", 8, 0, group=name)


def ann(c, path):
    st, obj, _ = c.get(path)
    return (obj.get("metadata", {}).get("annotations") or {}) if st == 200 else {}


def pod_ann(c, name):
    return ann(c, PODS + "/" + name)


def asked(annotations):
    """(request, deadline) as seconds when both are there, else None."""
    a, u = annotations.get(ASKED), annotations.get(UNTIL)
    return (parse(a), parse(u)) if a and u else None


def free_node(c, *names):
    for name in names:
        for p in e2e.pods_of(c, name):
            c.delete(PODS + "/" + p["metadata"]["name"], {"gracePeriodSeconds": 0})
    check("the node is free again", wait_for(lambda: not any(e2e.pods_of(c, n) for n in names),
                                             WAIT))


def preemptor(c, name):
    """A gang of one (8 GPUs, priority 100) that only preemption lets in."""
    pod(c, name + "-0", 8, 100)


def answer_on_pod(c, s, ev0):
    """(1) a Kueue group: asked on both pods, answered on one, evicted before the deadline."""
    kueue_group(c, "kq")
    check("(1) the Kueue pod group runs", wait_for(lambda: len(running(c, "kq")) == 2, WAIT))
    preemptor(c, "hi")
    both = wait_for(lambda: all(asked(pod_ann(c, "kq-%d" % i)) for i in range(2)), WAIT)
    a0, a1 = asked(pod_ann(c, "kq-0")) or (0, 0), asked(pod_ann(c, "kq-1")) or (0, 0)
    check("(1) both pods carry the request and its deadline (request + %g s), the same" % GRACE,
          both and a0 == a1 and abs(a0[1] - a0[0] - GRACE) < 0.01,
          "%s %s" % (pod_ann(c, "kq-0"), pod_ann(c, "kq-1")))
    def told(pod):  # a group without an object: its Events are about each of its pods
        return [e for e in events_for(c, pod) if e["reason"] == "CheckpointRequested" and
                "default/hi-0" in e["note"] and "on its pods" in e["note"]]
    check("(1) a CheckpointRequested Event on each pod names the preemptor and says it is asked "
          "on its pods", wait_for(lambda: told("kq-0") and told("kq-1"), WAIT),
          str([e.get("note") for e in events_for(c, "kq-0")]))
    check("(1) while it has not answered, it runs and the preemptor waits",
          not wait_for(lambda: evictions(c) > ev0 or e2e.bound(c, "hi"), 2.0) and
          len(running(c, "kq")) == 2)
    t_answer = time.time()
    c.patch(PODS + "/kq-1", {"metadata": {"annotations": {LAST: rfc3339(a0[0] + 0.5)}}}, MERGE)
    check("(1) once one pod's last checkpoint is after the request, both are evicted",
          wait_for(lambda: evictions(c) >= ev0 + 2, WAIT))
    check("(1) ... before the deadline (%.1f s after the answer, %.1f s before the deadline)" %
          (time.time() - t_answer, a0[1] - time.time()), time.time() < a0[1] - 1.0)
    check("(1) the preemptor is bound", wait_for(lambda: e2e.bound(c, "hi"), WAIT))
    check("(1) the log names the handshake answered",
          "checkpoint handshake over: gang=default/kq outcome=answered" in s.text(),
          s.text()[-600:])


def timeout_one_pod(c, s, ev0):
    """(2) a gang of one that never answers: evicted at its deadline."""
    pod(c, "solo-0", 8, 0)
    check("(2) a gang of one runs", wait_for(lambda: running(c, "solo"), WAIT))
    preemptor(c, "hi2")
    t = wait_for(lambda: asked(pod_ann(c, "solo-0")), WAIT)
    check("(2) its pod carries the request", t, str(pod_ann(c, "solo-0")))
    until = t[1] if t else time.time()
    check("(2) it is not evicted before its deadline",
          not wait_for(lambda: evictions(c) > ev0, max(0.0, until - time.time() - 1.0)))
    check("(2) it is evicted at the deadline", wait_for(lambda: evictions(c) > ev0, WAIT))
    check("(2) ... not before it (%.2f s after)" % (time.time() - until),
          time.time() >= until - 0.5)
    check("(2) the preemptor is bound", wait_for(lambda: e2e.bound(c, "hi2"), WAIT))


def native(c, s, ev0, answers):
    """(3) a native PodGroup answered on its pod, (4) one that does not answer."""
    tag, name, hi = ("(3)", "ng", "hi3") if answers else ("(4)", "nt", "hi4")
    native_group(c, name)
    check(tag + " a native PodGroup's gang runs", wait_for(lambda: running(c, name), WAIT))
    preemptor(c, hi)
    t = wait_for(lambda: asked(ann(c, NPG + "/" + name)), WAIT)
    check(tag + " its PodGroup carries the request and its deadline, its pod does not",
          t and abs(t[1] - t[0] - GRACE) < 0.01 and ASKED not in pod_ann(c, name + "-0"),
          "%s %s" % (ann(c, NPG + "/" + name), pod_ann(c, name + "-0")))
    until = t[1] if t else time.time()
    if answers:
        c.patch(PODS + "/%s-0" % name,
                {"metadata": {"annotations": {LAST: rfc3339(t[0] + 0.5 if t else 0)}}}, MERGE)
        check(tag + " answered on its pod, it is evicted before the deadline",
              wait_for(lambda: evictions(c) > ev0, WAIT) and time.time() < until - 1.0,
              "%.1f s before it" % (until - time.time()))
    else:
        check(tag + " it is not evicted before its deadline",
              not wait_for(lambda: evictions(c) > ev0, max(0.0, until - time.time() - 1.0)))
        check(tag + " it is evicted at the deadline", wait_for(lambda: evictions(c) > ev0, WAIT)
              and time.time() >= until - 0.5, "%.2f s after it" % (time.time() - until))
    check(tag + " the preemptor is bound", wait_for(lambda: e2e.bound(c, hi), WAIT))


def restart(c, s, kubeconfig, db, ev0):
    """(5) a restart in the middle of a Kueue group's handshake."""
    kueue_group(c, "kr")
    check("(5) a Kueue pod group runs", wait_for(lambda: len(running(c, "kr")) == 2, WAIT))
    preemptor(c, "hr")
    check("(5) both pods carry the request",
          wait_for(lambda: all(asked(pod_ann(c, "kr-%d" % i)) for i in range(2)), WAIT))
    until = asked(pod_ann(c, "kr-0"))[1]
    s.stop()
    c.patch(PODS + "/kr-1", {"metadata": {"annotations": {ASKED: None, UNTIL: None}}}, MERGE)
    check("(5) one pod's request removed while no daemon runs", ASKED not in pod_ann(c, "kr-1"))
    s = e2e.Sched(kubeconfig, "sched2", db)
    check("(5) a new process leads during the handshake", wait_for(s.leading, 30))
    check("(5) it resumes the handshake from the pods, with its preemptor from the store",
          wait_for(lambda: "checkpoint handshake resumed: gang=default/kr on=pods" in s.text() and
                   "preemptor=default/hr-0" in s.text(), WAIT), s.text()[-800:])
    check("(5) the pod that lacked it gets the request again, with the same deadline",
          wait_for(lambda: asked(pod_ann(c, "kr-1")) == asked(pod_ann(c, "kr-0")), WAIT),
          str(pod_ann(c, "kr-1")))
    check("(5) it is not evicted before its deadline",
          not wait_for(lambda: evictions(c) > ev0, max(0.0, until - time.time() - 1.0)))
    check("(5) it is evicted at the deadline", wait_for(lambda: evictions(c) >= ev0 + 2, WAIT)
          and time.time() >= until - 0.5, "%.2f s after it" % (time.time() - until))
    check("(5) the preemptor is bound", wait_for(lambda: e2e.bound(c, "hr"), WAIT))
    return s


def main():
    kubeconfig, c, s, db = e2e.start_one(
        CONFIG, extra=["--serve-api", "scheduling.k8s.io/v1beta1"])
    answer_on_pod(c, s, evictions(c))
    free_node(c, "hi")
    timeout_one_pod(c, s, evictions(c))
    free_node(c, "hi2")
    native(c, s, evictions(c), True)
    free_node(c, "hi3")
    native(c, s, evictions(c), False)
    free_node(c, "hi4")
    s = restart(c, s, kubeconfig, db, evictions(c))
    check("the scheduler is still running", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
