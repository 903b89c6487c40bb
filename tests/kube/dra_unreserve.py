"""tests/kube/dra_unreserve.py: a gang whose Binding fails after its ResourceClaims were written,
with `gangsched run` on DRA-only nodes.

Owns: the daemon's Unreserve (kube-scheduler's DynamicResources Unreserve). A gang of two pods,
each naming its own ResourceClaim of 8 GPUs (a whole node): the Binding of the second is held
1.5 s and then refused (an injected 422), after its claim was protected (finalizer
resource.kubernetes.io/delete-protection), allocated on node A and reserved for it. Meanwhile
node A is cordoned. The gang rolls back: the first pod, bound, is deleted (the test puts it back,
as its controller would); the second pod's reservedFor entry is removed and the claim, reserved
for nobody, deallocated by the daemon. The retry places the second pod on another node: its
claim ends allocated there, reserved for it alone, still protected. Without the Unreserve the
retry writes a different allocation onto the claim still allocated on A and gets 422 (the
allocation is immutable) at every attempt. Then a claim an earlier attempt left allocated on the
cordoned node and reserved for a pending pod: the new node's write is refused, the rollback
unreserves and deallocates it, the next attempt binds the pod elsewhere. Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dra  # noqa: E402
import e2e  # noqa: E402
from dra_shared import CLAIMS, FIN, claim  # noqa: E402
from e2e import check, wait_for  # noqa: E402


def member(c, i):
    p = e2e.pod("u-%d" % i, "u", 0)
    p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "u-c%d" % i}]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    c.post(dra.NS, p)


def get_claim(c, name):
    return c.get(CLAIMS + "/" + name)[1]


def alloc_node(cl):
    """The node of the claim's allocation (its nodeSelector's one matchFields value)."""
    terms = ((cl.get("status") or {}).get("allocation") or {}).get("nodeSelector", {}).get(
        "nodeSelectorTerms") or [{}]
    mf = terms[0].get("matchFields") or [{}]
    return (mf[0].get("values") or [None])[0]


def left_over(c, s, cordoned):
    """A claim an earlier attempt left allocated on a node now cordoned and reserved for the
    pod (a process that stopped between its claim write and its Binding): the write for the new
    node is refused (422, the allocation is immutable), the rollback unreserves and deallocates
    the claim (it was reserved for the pod), and the next attempt binds the pod."""
    cl = claim("lo-c", 8)
    cl["metadata"]["finalizers"] = [FIN]
    c.post(CLAIMS, cl)
    p = e2e.pod("lo-0", "lo", 0)
    p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "lo-c"}]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    c.post(dra.NS, p)
    uid = c.get(dra.NS + "/lo-0")[1]["metadata"]["uid"]
    st, _, _ = c.patch(CLAIMS + "/lo-c/status", {"status": {
        "allocation": {"devices": {"results": [
            {"request": "gpus", "driver": "gpu.nvidia.com", "pool": cordoned,
             "device": "gpu-%d" % i} for i in range(8)]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [cordoned]}]}]}},
        "reservedFor": [{"resource": "pods", "name": "lo-0", "uid": uid}]}},
        "application/merge-patch+json")
    check("a claim left allocated on the cordoned node, reserved for a pending pod", st == 200,
          str(st))
    path, pg = e2e.podgroup("lo", 1)
    c.post(path, pg)
    ok = wait_for(lambda: e2e.bound(c, "lo"), 30)
    cl = get_claim(c, "lo-c")
    node = ok[0]["spec"]["nodeName"] if ok else None
    check("the pod is bound elsewhere after one refused attempt, its claim allocated there and "
          "reserved for it", ok and node != cordoned and alloc_node(cl) == node and
          [r.get("uid") for r in (cl.get("status") or {}).get("reservedFor") or []] == [uid],
          "%s %s %s %s" % (node, str(cl.get("status"))[:300], [
              e.get("note") for e in e2e.events_for(c, "lo")][-2:], s.text()[-1000:]))


def main():
    kubeconfig, c = dra.start(dra.CONFIG.replace("nvidia.com/gpu: 16", "nvidia.com/gpu: 32"))
    for i, (n, rack) in enumerate((("gpu-1", "r1"), ("gpu-2", "r1"), ("gpu-3", "r2"),
                                   ("gpu-4", "r2"))):
        c.post("/api/v1/nodes", dra.dra_node(n, rack))
        c.post(dra.RES + "/resourceslices", dra.gpu_slice(n, "u%d" % i))
    for i in range(2):
        c.post(CLAIMS, claim("u-c%d" % i, 8))
    # the second member's Binding: held 1.5 s, then refused (a definite failure, no retry)
    c.post("/_fake/faults", [{"type": "delay", "ms": 1500, "count": 1, "path": "/u-1/binding"},
                             {"type": "error", "code": 422, "count": 1, "path": "/u-1/binding",
                              "message": "injected: binding refused"}])
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))
    path, pg = e2e.podgroup("u", 2)
    c.post(path, pg)
    for i in range(2):
        member(c, i)

    first = wait_for(lambda: alloc_node(get_claim(c, "u-c1")), 20)
    cl = get_claim(c, "u-c1")
    pod1 = c.get(dra.NS + "/u-1")[1]
    check("before the Binding: the claim is protected, allocated on a node, reserved for the pod",
          first and FIN in (cl["metadata"].get("finalizers") or []) and
          [r.get("uid") for r in cl["status"].get("reservedFor") or []] ==
          [pod1.get("metadata", {}).get("uid")], str(cl)[:600])
    # node A cordoned while the Binding is held: the retry has to go elsewhere
    c.patch("/api/v1/nodes/%s" % first, {"spec": {"unschedulable": True}},
            "application/merge-patch+json")

    # the rollback deletes the bound member; the test puts it back, as its controller would
    gone = wait_for(lambda: c.get(dra.NS + "/u-0")[0] == 404, 20)
    check("the gang rolled back: its bound member was deleted", gone, s.text()[-800:])
    member(c, 0)

    def placed():
        pods = e2e.bound(c, "u")
        return len(pods) == 2 and pods
    ok = wait_for(placed, 30)
    nodes = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in ok or []}
    check("the retry binds the gang, the second pod on another node than the first attempt's",
          ok and nodes.get("u-1") not in (None, first), "%s first=%s %s" % (
              nodes, first, s.text()[-1200:]))
    cl = get_claim(c, "u-c1")
    res = ((cl.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results",
                                                                                   [])
    pod1 = c.get(dra.NS + "/u-1")[1]
    check("its claim ends allocated on the new node (8 devices of it), reserved for it alone, "
          "still protected",
          alloc_node(cl) == nodes.get("u-1") and len(res) == 8 and
          {r["pool"] for r in res} == {nodes.get("u-1")} and
          [r.get("uid") for r in cl["status"].get("reservedFor") or []] ==
          [pod1.get("metadata", {}).get("uid")] and FIN in (cl["metadata"].get("finalizers") or []),
          str(cl)[:800])
    cl0 = get_claim(c, "u-c0")
    pod0 = c.get(dra.NS + "/u-0")[1]
    check("the other claim is reserved for the re-created first pod only",
          [r.get("uid") for r in (cl0.get("status") or {}).get("reservedFor") or []] ==
          [pod0.get("metadata", {}).get("uid")], str(cl0.get("status"))[:400])
    check("the daemon deallocated the claim it had allocated for the failed attempt",
          "resourceclaim deallocated after its gang rolled back: claim=default/u-c1" in s.text(),
          s.text()[-800:])
    left_over(c, s, first)
    check("the scheduler is still running", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
