"""tests/kube/dra_shared.py: a ResourceClaim shared by the pods of a gang (KEP-4381), with
`gangsched run` on DRA-only nodes.

Owns: issue 17's shared claims. A claim made directly (resourceClaimName, 4 GPUs) named by the
three pods of one gang: its first status write refused, every consumer's bind fails and the
gang's retry binds it, the claim written once per attempt (not per consumer); it is allocated once, status.reservedFor lists all three pods,
every pod lands on the node of the allocation's nodeSelector; the queue's quota counts its 4
devices once (an 8-GPU gang still fits the 16-GPU quota); deleting consumers leaves the claim
allocated to the others until the last one goes (the fake API server plays the resourceclaim
controller); a claim named by pods of two gangs waits with InvalidSpec; members of an elastic
gang that come after the others are bound join their allocated claim, one or two at a time
(status.reservedFor gets each; the allocation, immutable once set, is not written again).
Every wait is bounded.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dra  # noqa: E402
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

CLAIMS = dra.RES + "/namespaces/default/resourceclaims"
FIN = "resource.kubernetes.io/delete-protection"


def claim(name, count):
    c = dra.template(name, count)
    c["kind"] = "ResourceClaim"
    c["spec"] = c["spec"]["spec"]
    return c


def sharing_gang(c, name, n, claim_name, min_member=None, pods_first=False):
    """A gang of n pods naming claim_name. pods_first: the pods, then (once the scheduler has
    seen every one of them waiting for their PodGroup) the PodGroup, so that the gang is whole
    in the first cycle that may place it, whatever the load: with minMember below n, a cycle
    that saw only minMember of them would place those alone."""
    path, pg = e2e.podgroup(name, min_member or n)
    if not pods_first:
        c.post(path, pg)
    for i in range(n):
        claim_pod(c, "%s-%d" % (name, i), name, claim_name)
    if pods_first:
        check("the scheduler sees the %d pods of %s waiting for their PodGroup" % (n, name),
              wait_for(lambda: all(not_scheduled(c, "%s-%d" % (name, i)) for i in range(n)), 30))
        c.post(path, pg)


def claim_pod(c, pod_name, group, claim_name):
    p = e2e.pod(pod_name, group, 0)
    p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": claim_name}]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    c.post(dra.NS, p)


def not_scheduled(c, pod_name):
    """Whether the scheduler wrote PodScheduled=False on the pod (it has it in its cache)."""
    st, p, _ = c.get(dra.NS + "/" + pod_name)
    conds = (p.get("status") or {}).get("conditions") or [] if st == 200 else []
    return any(x.get("type") == "PodScheduled" and x.get("status") == "False" for x in conds)


def status(c, name):
    return c.get(CLAIMS + "/" + name)[1].get("status") or {}


def main():
    kubeconfig, c = dra.start(dra.CONFIG)
    for i, (n, rack) in enumerate((("gpu-1", "r1"), ("gpu-2", "r1"), ("gpu-3", "r2"),
                                   ("gpu-4", "r2"))):
        c.post("/api/v1/nodes", dra.dra_node(n, rack))
        c.post(dra.RES + "/resourceslices", dra.gpu_slice(n, "u%d" % i))
    c.post(dra.RES + "/namespaces/default/resourceclaimtemplates", dra.template("eight", 8))
    c.post(CLAIMS, claim("shared", 4))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))

    # minMember 2: one consumer may go without the gang being torn down (the next check reads
    # the claim after one is deleted; with minMember 3 the teardown raced it); its pods first
    # the claim's first status write is refused: every consumer's bind takes that answer
    c.post("/_fake/faults", [{"type": "error", "code": 422, "count": 1, "verb": "patch",
                              "path": "/resourceclaims/shared/status",
                              "message": "injected: claim write refused"}])
    before = dra.claim_writes(c)
    sharing_gang(c, "sh", 3, "shared", min_member=2, pods_first=True)
    ok = wait_for(lambda: len(e2e.bound(c, "sh")) == 3, 30)
    writes = dra.claim_writes(c) - before
    pods = e2e.bound(c, "sh")
    nodes = {p["spec"]["nodeName"] for p in pods}
    check("the claim's refused write fails the gang's bind whole (no consumer goes on alone)",
          "3 of 3 pods could not be bound" in s.text() and "claim write refused" in s.text(),
          s.text()[-1000:])
    check("a gang whose 3 pods share one ResourceClaim is bound whole, on one node, at the "
          "retry", ok and len(nodes) == 1, "%s %s" % (nodes, s.text()[-1000:]))
    check("the claim is written once per attempt, not once per consumer (finalizer, refused "
          "status, status)", writes <= 3, "%d writes" % writes)
    st = status(c, "shared")
    res = (st.get("allocation") or {}).get("devices", {}).get("results", [])
    node = next(iter(nodes)) if nodes else None
    sel = (st.get("allocation") or {}).get("nodeSelector", {}).get("nodeSelectorTerms", [])
    check("the claim is allocated once: 4 devices of that node, its nodeSelector naming it",
          len(res) == 4 and {r["pool"] for r in res} == {node} and len({r["device"] for r in res})
          == 4 and sel and sel[0]["matchFields"][0]["values"] == [node], str(st)[:600])
    check("the claim carries the finalizer resource.kubernetes.io/delete-protection, put there "
          "before its allocation was written", FIN in finalizers(c, "shared"),
          str(finalizers(c, "shared")))
    want = sorted((p["metadata"]["name"], p["metadata"]["uid"]) for p in pods)
    got = sorted((r.get("name"), r.get("uid")) for r in st.get("reservedFor") or [])
    check("status.reservedFor lists every consumer pod", got == want, "%s %s" % (got, want))

    dra.gang(c, "q", 1, "eight")
    check("the shared devices count once against the quota: an 8-GPU gang fits 16 - 4",
          wait_for(lambda: len(e2e.bound(c, "q")) == 1, 20), s.text()[-800:])

    c.delete(dra.NS + "/sh-0")
    check("a consumer gone: reservedFor lists the two others, the claim stays allocated",
          wait_for(lambda: len(status(c, "shared").get("reservedFor") or []) == 2 and
                   status(c, "shared").get("allocation"), 20), str(status(c, "shared"))[:400])
    c.delete(dra.NS + "/sh-1")
    c.delete(dra.NS + "/sh-2")
    check("the last consumer gone: the claim is released",
          wait_for(lambda: not status(c, "shared").get("reservedFor") and
                   not status(c, "shared").get("allocation"), 20), str(status(c, "shared"))[:400])
    check("and its finalizer removed by the claim controller", wait_for(
        lambda: FIN not in finalizers(c, "shared"), 10), str(finalizers(c, "shared")))

    sharing_gang(c, "x1", 1, "across")  # both pods first, so one cycle sees both consumers
    sharing_gang(c, "x2", 1, "across")
    e2e.time.sleep(0.5)
    c.post(CLAIMS, claim("across", 2))
    ok = wait_for(lambda: [e for e in e2e.events_for(c, "x1") if e["reason"] == "InvalidSpec"],
                  20)
    check("a claim shared by pods of two gangs waits with InvalidSpec naming both",
          ok and "shared by pods of several gangs" in ok[0].get("note", ""), str(ok)[:400])
    check("and neither is bound", not e2e.bound(c, "x1") and not e2e.bound(c, "x2"))

    # an elastic gang: a member that comes after the others are bound joins their claim
    c.post(CLAIMS, claim("late", 2))
    sharing_gang(c, "el", 2, "late")
    check("a gang of two sharing a claim is bound", wait_for(lambda: len(e2e.bound(c, "el")) == 2,
                                                             60))
    # two more members at once (one bind when a cycle sees both): each appends itself to
    # reservedFor; the allocation, immutable once set, is left as it is
    claim_pod(c, "el-2", "el", "late")
    claim_pod(c, "el-3", "el", "late")

    def joined():
        pods = e2e.bound(c, "el")
        uids = {r.get("uid") for r in status(c, "late").get("reservedFor") or []}
        return (len(pods) == 4 and len({p["spec"]["nodeName"] for p in pods}) == 1 and
                uids == {p["metadata"]["uid"] for p in pods})
    check("two more members join it: bound on the claim's node, added to reservedFor",
          wait_for(joined, 60), "pods %s, reservedFor %s" % (
              [(p["metadata"]["name"], p["spec"]["nodeName"]) for p in e2e.bound(c, "el")],
              [r.get("name") for r in status(c, "late").get("reservedFor") or []]))
    # a consumer that terminated (phase Failed) is released like a deleted one (syncClaim's
    # isPodDone), the others keep the allocation
    st, p3, _ = c.get(dra.NS + "/el-3")
    p3["status"]["phase"] = "Failed"
    c.put(dra.NS + "/el-3/status", p3)
    check("a consumer that failed leaves reservedFor, the claim stays allocated to the others",
          wait_for(lambda: len(status(c, "late").get("reservedFor") or []) == 3 and
                   "el-3" not in [r.get("name") for r in status(c, "late").get("reservedFor")
                                  or []] and status(c, "late").get("allocation"), 10),
          str(status(c, "late").get("reservedFor")))

    deleting_claim(c, s)
    status_validation(c)
    check("the scheduler is still running", s.p.poll() is None)
    e2e.finish()


def finalizers(c, name):
    return c.get(CLAIMS + "/" + name)[1].get("metadata", {}).get("finalizers") or []


def deleting_claim(c, s):
    """A claim being deleted (kept by another finalizer) is not allocated: its gang waits with
    the reason kube-scheduler gives; the API server refuses a new reservedFor entry on it."""
    doomed = claim("doomed", 1)
    doomed["metadata"]["finalizers"] = ["example.com/keep"]
    c.post(CLAIMS, doomed)
    c.delete(CLAIMS + "/doomed")
    sharing_gang(c, "dg", 1, "doomed")
    def said():
        notes = [e.get("note", "") for e in e2e.events_for(c, "dg")]
        return [n for n in notes if "is being deleted" in n]
    ok = wait_for(said, 20)
    check("a gang naming a claim being deleted waits: \"resourceclaim ... is being deleted\"",
          ok and not e2e.bound(c, "dg") and not status(c, "doomed").get("allocation"),
          str([e.get("note") for e in e2e.events_for(c, "dg")])[:600])


def status_validation(c):
    """The fake's claim status validation (validateResourceClaimStatusUpdate,
    validateAllocationResult): what kube-apiserver answers 422."""
    c.post(CLAIMS, claim("v", 2))
    ok_res = {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "gpu-1", "device": "gpu-0"}
    sel = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                   "values": ["gpu-1"]}]}]}
    cases = [("a request the claim does not have", dict(ok_res, request="other"), sel,
              "must be the name of a request"),
             ("a device name that is no DNS label", dict(ok_res, device="GPU_0"), sel,
              "RFC 1123 label"),
             ("a driver name that is no DNS subdomain", dict(ok_res, driver="Gpu!"), sel,
              "RFC 1123 subdomain"),
             ("a pool name with an invalid segment", dict(ok_res, pool="gpu-1/-x"), sel,
              "RFC 1123 subdomain"),
             ("33 results", [dict(ok_res, device="gpu-%d" % i) for i in range(33)], sel,
              "must have at most 32 items"),
             ("a field selector with two values", ok_res,
              {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                       "values": ["a", "b"]}]}]},
              "must be only one value")]
    for what, res, ns, want in cases:
        results = res if isinstance(res, list) else [res]
        st, body, _ = c.patch(CLAIMS + "/v/status", {"status": {"allocation": {
            "devices": {"results": results}, "nodeSelector": ns}}}, "application/merge-patch+json")
        check("a claim allocation with %s is refused (422)" % what,
              st == 422 and want in json.dumps(body), "%s %s" % (st, json.dumps(body)[:300]))
    st, _, _ = c.patch(CLAIMS + "/v/status", {"status": {"allocation": {
        "devices": {"results": [ok_res]}, "nodeSelector": sel}, "reservedFor": [
            {"resource": "pods", "name": "a", "uid": "u-a"}]}}, "application/merge-patch+json")
    check("a valid allocation with a consumer is accepted", st == 200, str(st))
    keep = claim("v2", 1)
    keep["metadata"]["finalizers"] = ["example.com/keep"]
    c.post(CLAIMS, keep)
    c.patch(CLAIMS + "/v2/status", {"status": {"allocation": {
        "devices": {"results": [ok_res]}, "nodeSelector": sel}, "reservedFor": [
            {"resource": "pods", "name": "a", "uid": "u-a"}]}}, "application/merge-patch+json")
    c.delete(CLAIMS + "/v2")
    st, body, _ = c.patch(CLAIMS + "/v2/status", {"status": {"reservedFor": [
        {"resource": "pods", "name": "a", "uid": "u-a"},
        {"resource": "pods", "name": "b", "uid": "u-b"}]}}, "application/merge-patch+json")
    check("a claim being deleted takes no new reservedFor entry (422)",
          st == 422 and "new entries may not be added" in json.dumps(body),
          "%s %s" % (st, json.dumps(body)[:300]))
    st, _, _ = c.patch(CLAIMS + "/v2/status", {"status": {"reservedFor": []}}, "application/merge-patch+json")
    check("but may lose one", st == 200, str(st))


if __name__ == "__main__":
    e2e.run(main)
