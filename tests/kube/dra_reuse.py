"""tests/kube/dra_reuse.py: a ResourceClaim allocated by someone else and reserved for nobody is
reused on its node, as kube-scheduler's DynamicResources plugin does.

Upstream (pkg/scheduler/framework/plugins/dynamicresources): an allocated claim keeps its
allocation; Filter passes only the nodes its nodeSelector matches ("resourceclaim not available
on the node" elsewhere), PreBind adds the pod to status.reservedFor and writes no allocation.
Here: a claim of 2 GPUs allocated on node gpu-3 (devices gpu-5, gpu-6; no finalizer: left by a
previous scheduler), its pod is bound to gpu-3 with exactly those GPUs (gangsched.io/gpu-ids
5,6), the claim reserved for it with its allocation unchanged; before the fix the pod waited
("allocated to another consumer"). A gang placed in the same cycle on gpu-3 never gets GPU 5 or
6. Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dra  # noqa: E402
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

CLAIMS = dra.RES + "/namespaces/default/resourceclaims"


def idle_claim(c):
    claim = dra.template("left", 2)
    claim["kind"] = "ResourceClaim"
    claim["spec"] = claim["spec"]["spec"]
    code, obj, _ = c.post(CLAIMS, claim)
    status = {"allocation": {
        "devices": {"results": [{"request": "gpus", "driver": "gpu.nvidia.com", "pool": "gpu-3",
                                 "device": "gpu-%d" % g} for g in (5, 6)]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["gpu-3"]}]}]}}}
    code, obj, _ = c.patch(CLAIMS + "/left/status", {"status": status},
                           "application/merge-patch+json")
    return code, obj


def main():
    kubeconfig, c = dra.start(dra.CONFIG.replace("nvidia.com/gpu: 16", "nvidia.com/gpu: 32"))
    for i, (n, rack) in enumerate((("gpu-1", "r1"), ("gpu-2", "r1"), ("gpu-3", "r2"),
                                   ("gpu-4", "r2"))):
        c.post("/api/v1/nodes", dra.dra_node(n, rack))
        c.post(dra.RES + "/resourceslices", dra.gpu_slice(n, "u%d" % i))
    code, obj = idle_claim(c)
    check("a claim allocated on gpu-3 (gpu-5, gpu-6) and reserved for nobody",
          code == 200 and not obj["status"].get("reservedFor"), (code, obj))
    alloc0 = obj["status"]["allocation"]
    c.post(dra.RES + "/namespaces/default/resourceclaimtemplates", dra.template("six", 6))
    # both pods exist before the scheduler starts, so its first cycle places them together:
    # the pod reusing the claim, and a pod of 6 GPUs held to gpu-3 by a nodeSelector (gpu-3 is
    # then full: 2 + 6 of 8), which must not get gpu-5 or gpu-6
    path, pg = e2e.podgroup("r", 1)
    c.post(path, pg)
    p = e2e.pod("r-0", "r", 0)
    p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "left"}]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    c.post(dra.NS, p)
    path, pg = e2e.podgroup("o", 1)
    c.post(path, pg)
    o = e2e.pod("o-0", "o", 0)
    o["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "six"}]
    o["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    o["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "gpu-3"}
    c.post(dra.NS, o)
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"),
                  extra=["--log-level", "debug"])
    check("the scheduler becomes leader", wait_for(s.leading, 20))
    check("the pod is bound to the claim's node gpu-3",
          wait_for(lambda: [x["spec"].get("nodeName") for x in e2e.bound(c, "r")] == ["gpu-3"],
                   20), s.text()[-1500:])
    pod = c.get(dra.NS + "/r-0")[1]
    ids = pod["metadata"].get("annotations", {}).get("gangsched.io/gpu-ids")
    check("with the claim's GPUs: gangsched.io/gpu-ids %s" % ids, ids == "5,6", str(ids))
    st = c.get(CLAIMS + "/left")[1]["status"]
    check("the claim is reserved for the pod, its allocation unchanged",
          [r["uid"] for r in st.get("reservedFor") or []] == [pod["metadata"]["uid"]] and
          st.get("allocation") == alloc0, str(st))
    check("the 6-GPU pod is bound to gpu-3 too",
          wait_for(lambda: [x["spec"].get("nodeName") for x in e2e.bound(c, "o")] == ["gpu-3"],
                   20), s.text()[-1500:])
    oid = c.get(dra.NS + "/o-0")[1]["metadata"].get("annotations", {}).get("gangsched.io/gpu-ids")
    mine = [x for x in c.get(CLAIMS)[1]["items"] if x["metadata"]["name"] != "left"]
    devs = sorted(r["device"] for x in mine for r in
                  ((x.get("status") or {}).get("allocation") or {}).get("devices", {})
                  .get("results", []))
    check("with the other 6 GPUs (gpu-ids %s, its claim's devices %s)" % (oid, devs),
          oid == "0,1,2,3,4,7" and devs == ["gpu-%d" % g for g in (0, 1, 2, 3, 4, 7)],
          s.text()[-1500:])
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
