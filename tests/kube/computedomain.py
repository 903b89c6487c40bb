"""tests/kube/computedomain.py: NVL72-style gangs through NVIDIA ComputeDomains (issue 17).

Owns: the ComputeDomain scenario. The cluster is what NVIDIA's DRA driver (k8s-dra-driver-gpu,
now kubernetes-sigs/dra-driver-nvidia-gpu) shows a scheduler: every node carries the clique
label nvidia.com/gpu.clique ("<cluster uuid>.<clique id>", set by the driver's kubelet plugin
or GPU feature discovery) and a ResourceSlice of driver compute-domain.nvidia.com, pool = the
node, with the devices channel-0 (type channel, id 0) and daemon (type daemon, id 0)
(cmd/compute-domain-kubelet-plugin: deviceinfo.go, driver.go computeDomainPublishedDevices).
The ComputeDomain CRD is installed only after gangsched starts (the informer lists 404, then
picks it up); this script plays the ComputeDomain controller: for each ComputeDomain it makes
the ResourceClaimTemplate spec.channel.resourceClaimTemplate.name with the one request
"channel" of DeviceClass compute-domain-default-channel.nvidia.com and the opaque
ComputeDomainChannelConfig carrying domainID = the ComputeDomain's uid
(templates/compute-domain-workload-claim-template.tmpl.yaml); the fake server plays the
resourceclaim controller (a claim per pod, garbage-collected with the pod).

Cliques: A (a1-a4, 2 of 4 GPUs used on each by another scheduler's pods), B (b1-b3, free: more
free GPUs than A, but only 3 channels), C (c1-c2). Checked:
  - a 4-pod gang (2 GPUs a pod) sharing a ComputeDomain lands whole in clique A, one pod per
    node (one channel device per node), although B has more free GPUs; each pod's channel claim
    is allocated channel-0 of its own node, with the claim's channel config copied into
    status.allocation.devices.config, and reserved for the pod before its Binding;
  - with b3 cordoned, a 3-pod gang of 4-GPU pods fits no clique's usable trays (B has 2 of 3,
    C has 2): it waits, no pod bound, the message naming the clique; a 2-pod gang fits;
  - uncordoning b3 lets the big gang start, whole in clique B;
  - a priority-100 ComputeDomain gang preempts the first one whole; its claims are gone with
    its pods, and the preemptor's claims get the same channel devices in clique A.
Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
    preemption: {withinQueue: LowerPriority}
    quota:
      default:
        nvidia.com/gpu: 64
"""
NS = "/api/v1/namespaces/default/pods"
RES = "/apis/resource.k8s.io/v1"
CD = "/apis/resource.nvidia.com/v1beta1/namespaces/default/computedomains"
CLIQUE = "nvidia.com/gpu.clique"
UUID = "9277d399-0674-44a9-b64e-d85bb19ce2b0"
NODES = {"a1": "1", "a2": "1", "a3": "1", "a4": "1", "b1": "2", "b2": "2", "b3": "2",
         "c1": "3", "c2": "3"}

# A reduced structural schema of computedomains.resource.nvidia.com (the upstream CRD declares
# spec.numNodes and spec.channel.{resourceClaimTemplate.name, allocationMode}, status.{status,
# nodes}); the server prunes by it as kube-apiserver does.
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "computedomains.resource.nvidia.com"},
    "spec": {
        "group": "resource.nvidia.com", "scope": "Namespaced",
        "names": {"kind": "ComputeDomain", "listKind": "ComputeDomainList",
                  "plural": "computedomains", "singular": "computedomain"},
        "versions": [{
            "name": "v1beta1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "numNodes": {"type": "integer"},
                    "channel": {"type": "object", "properties": {
                        "allocationMode": {"type": "string"},
                        "resourceClaimTemplate": {"type": "object", "properties": {
                            "name": {"type": "string"}}}}}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]}}


def node(name):
    n = e2e.node(name, "r" + NODES[name], gpus=4)
    n["metadata"]["labels"][CLIQUE] = "%s.%s" % (UUID, NODES[name])
    return n


def cd_slice(node_name):
    """The compute-domain kubelet plugin's ResourceSlice of one node, as it publishes it."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": node_name + "-compute-domain.nvidia.com-x7k2q"},
            "spec": {"driver": "compute-domain.nvidia.com", "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "channel-0", "attributes": {
                         "type": {"string": "channel"}, "id": {"int": 0}}},
                         {"name": "daemon", "attributes": {
                             "type": {"string": "daemon"}, "id": {"int": 0}}}]}}


def compute_domain(c, name):
    """Creates a ComputeDomain and, as its controller does, its workload claim template."""
    st, obj, _ = c.post(CD, {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                             "metadata": {"name": name, "namespace": "default"},
                             "spec": {"numNodes": 0, "channel": {
                                 "resourceClaimTemplate": {"name": name + "-channel"}}}})
    uid = obj["metadata"]["uid"]
    c.post(RES + "/namespaces/default/resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name + "-channel", "namespace": "default",
                     "labels": {"resource.nvidia.com/computeDomain": uid,
                                "resource.nvidia.com/computeDomainTarget": "Workload"}},
        "spec": {"spec": {"devices": {
            "requests": [{"name": "channel", "exactly": {
                "deviceClassName": "compute-domain-default-channel.nvidia.com"}}],
            "config": [{"requests": ["channel"], "opaque": {
                "driver": "compute-domain.nvidia.com",
                "parameters": {"apiVersion": "resource.nvidia.com/v1beta1",
                               "kind": "ComputeDomainChannelConfig", "domainID": uid,
                               "allocationMode": "Single"}}}]}}}})
    return uid


def gang(c, name, n, gpus, domain, priority=0):
    path, pg = e2e.podgroup(name, n)
    c.post(path, pg)
    for i in range(n):
        p = e2e.pod("%s-%d" % (name, i), name, gpus)
        p["spec"]["resourceClaims"] = [{"name": "imex",
                                        "resourceClaimTemplateName": domain + "-channel"}]
        p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "imex"}]
        e2e.with_priority(c, p, priority)
        c.post(NS, p)


def filler(c, name, node_name):
    """Another scheduler's pod holding 2 GPUs of a node."""
    p = e2e.pod(name, None, 2)
    p["spec"]["schedulerName"] = "default-scheduler"
    p["spec"]["nodeName"] = node_name
    c.post(NS, p)


def claim_of(c, pod):
    st, items, _ = c.get(RES + "/namespaces/default/resourceclaims")
    return next((x for x in items["items"] if any(
        o.get("name") == pod for o in x["metadata"].get("ownerReferences") or [])), None)


def cliques(pods):
    return {NODES[p["spec"]["nodeName"]] for p in pods}


def channel_ok(c, p, uid):
    """The pod's claim holds channel-0 of the pod's node, the channel config, reservedFor it."""
    cl = claim_of(c, p["metadata"]["name"])
    st = (cl or {}).get("status") or {}
    dev = (st.get("allocation") or {}).get("devices") or {}
    node_name = p["spec"]["nodeName"]
    cfg = dev.get("config") or [{}]
    return (dev.get("results") == [{"request": "channel", "driver": "compute-domain.nvidia.com",
                                    "pool": node_name, "device": "channel-0"}] and
            cfg[0].get("source") == "FromClaim" and cfg[0].get("requests") == ["channel"] and
            cfg[0].get("opaque", {}).get("parameters", {}).get("domainID") == uid and
            st.get("reservedFor") == [{"resource": "pods", "name": p["metadata"]["name"],
                                       "uid": p["metadata"]["uid"]}])


def main():
    kubeconfig = e2e.start_fake(crds=("xk8s",))
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    for n in NODES:
        c.post("/api/v1/nodes", node(n))
        c.post(RES + "/resourceslices", cd_slice(n))
    for n in ("a1", "a2", "a3", "a4"):
        filler(c, "fill-" + n, n)
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))
    check("the ComputeDomain CRD is not served before it is installed",
          c.get(CD)[0] == 404)
    c.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    check("the CRD is served once installed", wait_for(lambda: c.get(CD)[0] == 200, 5))

    rv0 = c.get(NS)[1]["metadata"]["resourceVersion"]
    # the first write to a claim (its finalizer, before the allocation) answered 409 as when the
    # claim changed since it was read: the scheduler reads it again and goes on (bindClaim's
    # RetryOnConflict)
    c.post("/_fake/faults", {"type": "conflict", "count": 1, "verb": "patch",
                             "path": "/resourceclaims/"})
    uid = compute_domain(c, "train")
    gang(c, "train", 4, 2, "train")
    ok = wait_for(lambda: len(e2e.bound(c, "train")) == 4, 30)
    pods = e2e.bound(c, "train")
    check("a 4-pod ComputeDomain gang is bound whole in clique A (B has more free GPUs but 3 "
          "channels), one pod per node",
          ok and cliques(pods) == {"1"} and len({p["spec"]["nodeName"] for p in pods}) == 4,
          str([p["spec"]["nodeName"] for p in pods]) + s.text()[-1500:])
    check("each channel claim holds channel-0 of its pod's node, the channel config "
          "(domainID) and reservedFor the pod", all(channel_ok(c, p, uid) for p in pods),
          str([claim_of(c, p["metadata"]["name"]) for p in pods])[:1200])

    bind_rv = e2e.first_rv(c, NS, rv0,
                           lambda o: o["spec"].get("nodeName") and o["metadata"]["name"])
    claim_rv = e2e.first_rv(c, RES + "/namespaces/default/resourceclaims", rv0, lambda o: next(
        (r["name"] for r in (o.get("status") or {}).get("reservedFor") or []), None))
    check("each channel claim was allocated before its pod's Binding",
          all(claim_rv.get(p["metadata"]["name"], 1 << 60) <
              bind_rv.get(p["metadata"]["name"], 0) for p in pods), "%s %s" % (claim_rv, bind_rv))

    # 16 of 18 trays, scaled down: b3 cordoned, so clique B has 2 usable trays of 3 and C has 2;
    # a gang of 3 trays' worth fits no clique and waits; a 2-tray gang fits
    c.patch("/api/v1/nodes/b3", {"spec": {"unschedulable": True}},
            "application/merge-patch+json")
    compute_domain(c, "big")
    gang(c, "big", 3, 4, "big")
    wait_for(lambda: e2e.pg_status(c, "big").get("phase") == "Pending", 10)
    def big_note():
        return " ".join(e.get("note", "") for e in e2e.events_for(c, "big"))
    got = wait_for(lambda: "clique %s." % UUID in big_note(), 15)
    check("a gang too big for any clique's usable trays waits, the reason naming the clique",
          got and not e2e.bound(c, "big") and "no single domain" in big_note(),
          big_note()[:600] + s.text()[-800:])
    compute_domain(c, "small")
    gang(c, "small", 2, 4, "small")
    ok = wait_for(lambda: len(e2e.bound(c, "small")) == 2, 20)
    check("a 2-tray ComputeDomain gang fits in one clique meanwhile",
          ok and len(cliques(e2e.bound(c, "small"))) == 1 and not e2e.bound(c, "big"),
          s.text()[-800:])
    for p in e2e.bound(c, "small"):
        c.delete(NS + "/" + p["metadata"]["name"])
    wait_for(lambda: not e2e.pods_of(c, "small"), 15)
    c.patch("/api/v1/nodes/b3", {"spec": {"unschedulable": False}},
            "application/merge-patch+json")
    ok = wait_for(lambda: len(e2e.bound(c, "big")) == 3, 30)
    check("with b3 usable again the big gang starts whole in clique B",
          ok and cliques(e2e.bound(c, "big")) == {"2"}, s.text()[-800:])

    # preemption: a priority-100 gang needs clique A's 4 channels, which "train" holds
    channels = {(claim_of(c, p["metadata"]["name"]) or {}).get("status", {}).get(
        "allocation", {}).get("devices", {}).get("results", [{}])[0].get("pool") for p in pods}
    uid_hi = compute_domain(c, "hi")
    gang(c, "hi", 4, 2, "hi", priority=100)
    ok = wait_for(lambda: len(e2e.bound(c, "hi")) == 4 and not e2e.bound(c, "train"), 40)
    check("a priority-100 ComputeDomain gang preempts the first one whole and is bound in A",
          ok and cliques(e2e.bound(c, "hi")) == {"1"}, s.text()[-1000:])
    check("the victim's channel claims are released (gone with its pods)",
          wait_for(lambda: not any(claim_of(c, "train-%d" % i) for i in range(4)), 15))
    hi = e2e.bound(c, "hi")
    check("the preemptor's claims hold the same nodes' channel-0",
          all(channel_ok(c, p, uid_hi) for p in hi) and
          {p["spec"]["nodeName"] for p in hi} == channels, str(channels))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
