"""tests/kube/dra.py: `gangsched run` on a cluster whose GPUs exist only as DRA devices.

Owns: issue 17's DRA scenario. Four nodes without nvidia.com/gpu, each with a ResourceSlice of 8
gpu.nvidia.com devices (shaped like kwok's fixture, tests/data/kwok-dra/), kwok's DeviceClass,
a ResourceClaimTemplate of 8 GPUs; the fake API server plays kube-controller-manager's
resourceclaim controller (claims from templates, reservedFor cleanup). Checked: a gang whose pods
claim GPUs through the template is bound whole inside one rack, each claim carrying
status.allocation (8 distinct devices of its pod's node) and reservedFor its pod before the pod
was bound; the queue's GPU quota counts claimed GPUs (a second gang waits); deleting the first
gang releases its claims and the second gang starts; a claim gangsched cannot allocate
(a CEL selector) leaves its gang waiting with InvalidSpec. Every wait is bounded.
"""

import copy
import os
import sys

import yaml

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
        nvidia.com/gpu: 16
"""
NS = "/api/v1/namespaces/default/pods"
RES = "/apis/resource.k8s.io/v1"


def dra_node(name, rack):
    n = e2e.node(name, rack)
    for k in ("allocatable", "capacity"):
        n["status"][k].pop("nvidia.com/gpu")
    return n


def gpu_slice(node, uid):
    with open("tests/data/kwok-dra/resourceslice-kwok-node-0-2gpu-80Gi.yaml") as f:
        s = yaml.safe_load(f)
    dev = s["spec"]["devices"][0]
    s["metadata"] = {"name": node + "-gpu.nvidia.com"}
    s["spec"]["nodeName"] = node
    s["spec"]["pool"] = {"name": node, "generation": 1, "resourceSliceCount": 1}
    s["spec"]["devices"] = []
    for i in range(8):
        d = copy.deepcopy(dev)
        d["name"] = "gpu-%d" % i
        d["attributes"]["uuid"]["string"] = "GPU-%s-%d" % (uid, i)
        s["spec"]["devices"].append(d)
    return s


def template(name, count, cel=None):
    ex = {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": count}
    if cel:
        ex["selectors"] = [{"cel": {"expression": cel}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": ex}]}}}}


def template_pod(pod_name, group, tmpl, node=None):
    """A pod of PodGroup `group` whose one claim "gpus" comes from ResourceClaimTemplate
    `tmpl`, pinned to `node` by its hostname label when given."""
    p = e2e.pod(pod_name, group, 0)
    p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": tmpl}]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    if node:
        p["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return p


def gang(c, name, n, tmpl, priority=0):
    path, pg = e2e.podgroup(name, n)
    pg["metadata"]["annotations"] = {"gangsched.io/topology-required": "rack"}
    c.post(path, pg)
    for i in range(n):
        p = template_pod("%s-%d" % (name, i), name, tmpl)
        e2e.with_priority(c, p, priority)
        c.post(NS, p)


def claims_of(c, pod):
    _, items, _ = c.get(RES + "/namespaces/default/resourceclaims")
    return [x for x in items["items"] if any(
        o.get("name") == pod for o in x["metadata"].get("ownerReferences") or [])]


def claim_writes(c):
    """The writes of ResourceClaims (and their status) the server has answered so far (the
    fake's request counters by resource)."""
    by = c.get("/_fake/stats")[1].get("by_resource", {})
    return sum(n for k, n in by.items()
               if k.split(" ")[0] in ("patch", "update") and "resourceclaims" in k)


def start(config):
    """A fake API server with kwok's DeviceClass and the scheduler's config written: (kubeconfig,
    client)."""
    kubeconfig = e2e.start_fake(crds=("xk8s",))
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(config)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    with open("tests/data/kwok-dra/device-class.yaml") as f:
        c.post(RES + "/deviceclasses", yaml.safe_load(f))
    return kubeconfig, c


def dra_cluster():
    """Four DRA-only nodes in two racks with their ResourceSlices, the templates "eight" and
    "hopper", and the scheduler leading: (client, scheduler)."""
    kubeconfig, c = start(CONFIG)
    for i, (n, rack) in enumerate((("gpu-1", "r1"), ("gpu-2", "r1"), ("gpu-3", "r2"),
                                   ("gpu-4", "r2"))):
        c.post("/api/v1/nodes", dra_node(n, rack))
        c.post(RES + "/resourceslices", gpu_slice(n, "u%d" % i))
    c.post(RES + "/namespaces/default/resourceclaimtemplates", template("eight", 8))
    c.post(RES + "/namespaces/default/resourceclaimtemplates",
           template("hopper", 8, "device.attributes['gpu.nvidia.com'].architecture == 'Hopper'"))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))
    return c, s


def template_gang(c, s):
    """A gang claiming GPUs through a template: bound whole in one rack, each claim allocated
    and reserved for its pod before the pod's Binding; returns the gang's pods."""
    rv0 = c.get(NS)[1]["metadata"]["resourceVersion"]
    gang(c, "a", 2, "eight")
    ok = wait_for(lambda: len(e2e.bound(c, "a")) == 2, 20)
    pods = e2e.bound(c, "a")
    racks = {e2e.rack_of(p["spec"]["nodeName"]) for p in pods}
    check("a gang claiming DRA GPUs through a template is bound whole in one rack",
          ok and len(racks) == 1, s.text()[-1000:])
    devices = set()
    good = True
    for p in pods:
        cl = claims_of(c, p["metadata"]["name"])
        st = (cl[0].get("status") or {}) if cl else {}
        res = (st.get("allocation") or {}).get("devices", {}).get("results", [])
        rf = st.get("reservedFor") or []
        node = p["spec"]["nodeName"]
        good &= len(res) == 8 and all(r["pool"] == node and r["driver"] == "gpu.nvidia.com" and
                                      r["request"] == "gpus" for r in res)
        good &= rf == [{"resource": "pods", "name": p["metadata"]["name"],
                        "uid": p["metadata"]["uid"]}]
        devices |= {(r["pool"], r["device"]) for r in res}
    check("each pod's claim has status.allocation (8 devices of its node) and reservedFor the "
          "pod", good and len(devices) == 16, str([claims_of(c, p["metadata"]["name"])
                                                     for p in pods])[:800])
    bind_rv = e2e.first_rv(c, NS, rv0,
                           lambda o: o["spec"].get("nodeName") and o["metadata"]["name"])
    claim_rv = e2e.first_rv(c, RES + "/namespaces/default/resourceclaims", rv0, lambda o: next(
        (r["name"] for r in (o.get("status") or {}).get("reservedFor") or []), None))
    check("each claim was allocated and reserved before its pod's Binding",
          all(p["metadata"]["name"] in claim_rv and claim_rv[p["metadata"]["name"]] <
              bind_rv.get(p["metadata"]["name"], 0) for p in pods), "%s %s" % (claim_rv, bind_rv))
    return pods


def quota_counts_claims(c, s, pods):
    """The queue's quota counts claimed GPUs: a second gang waits until the first one's
    pods (`pods`) are deleted and their claims released."""
    gang(c, "b", 2, "eight")
    wait_for(lambda: e2e.pg_status(c, "b").get("phase") == "Pending", 10)
    e2e.time.sleep(1.5)
    notes = " ".join(e.get("note", "") for e in e2e.events_for(c, "b"))
    check("the queue's quota counts claimed GPUs: a second 16-GPU gang waits on quota",
          not e2e.bound(c, "b") and "quota" in notes, notes[:400] + s.text()[-600:])
    for p in pods:
        c.delete(NS + "/" + p["metadata"]["name"])
    check("deleting the first gang releases its claims", wait_for(
        lambda: not claims_of(c, "a-0") and not claims_of(c, "a-1"), 20))
    check("and the second gang is bound whole", wait_for(lambda: len(e2e.bound(c, "b")) == 2, 30),
          s.text()[-1000:])


def preemption(c, s):
    """Preemption on DRA GPUs: the quota is full with b; a priority-100 gang evicts b whole,
    b's claims are released, and the preemptor's claims get b's devices."""
    b_devices = {(r["pool"], r["device"]) for p in e2e.bound(c, "b")
                 for r in claims_of(c, p["metadata"]["name"])[0]["status"]["allocation"]
                 ["devices"]["results"]}
    gang(c, "hi", 2, "eight", priority=100)
    check("a higher-priority gang preempts the DRA gang whole and is bound whole",
          wait_for(lambda: len(e2e.bound(c, "hi")) == 2 and not e2e.bound(c, "b"), 40),
          s.text()[-1000:])
    hi_devices = set()
    for p in e2e.bound(c, "hi"):
        cl = claims_of(c, p["metadata"]["name"])
        hi_devices |= {(r["pool"], r["device"]) for r in
                       cl[0]["status"]["allocation"]["devices"]["results"]} if cl else set()
    check("the preemptor's claims hold 16 devices, the victim's claims are gone",
          len(hi_devices) == 16 and not any(claims_of(c, "b-%d" % i) for i in range(2)),
          "%s %s" % (sorted(hi_devices), sorted(b_devices)))


def cel_templates(c):
    """Templates with CEL selectors: every device is a Hopper, none an Ampere; a selector
    outside the subset is refused naming the field and column."""
    c.post(RES + "/namespaces/default/resourceclaimtemplates",
           template("ampere", 8, "device.attributes['gpu.nvidia.com'].architecture == 'Ampere'"))
    c.post(RES + "/namespaces/default/resourceclaimtemplates",
           template("macro", 8, "device.attributes.all(d, true)"))


def direct_claim(c, s):
    """A claim made directly (resourceClaimName), used by a lone pod once the preemptor's
    pods are gone."""
    for p in e2e.bound(c, "hi"):
        c.delete(NS + "/" + p["metadata"]["name"])
    claim = template("direct", 2)
    claim["kind"] = "ResourceClaim"
    claim["spec"] = claim["spec"]["spec"]
    c.post(RES + "/namespaces/default/resourceclaims", claim)
    solo = e2e.pod("solo-0", None, 0)
    solo["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "direct"}]
    c.post(NS, solo)
    def direct_done():
        st = (c.get(RES + "/namespaces/default/resourceclaims/direct")[1].get("status") or {})
        res = (st.get("allocation") or {}).get("devices", {}).get("results", [])
        return e2e.bound(c, "solo") and len(res) == 2 and st.get("reservedFor")
    check("a pod with a ResourceClaim made directly is bound and its claim allocated",
          wait_for(direct_done, 20), s.text()[-600:])
    c.delete(NS + "/solo-0")
    check("its reservation is released when the pod is gone", wait_for(lambda: not (
        c.get(RES + "/namespaces/default/resourceclaims/direct")[1].get("status") or {})
        .get("reservedFor"), 20))


def cel_selectors(c, s):
    """Gangs whose claims select by CEL: Hopper (every device) bound, Ampere (none)
    unschedulable, a selector outside the subset InvalidSpec."""
    gang(c, "sel", 2, "hopper")
    check("a gang whose claims select Hopper GPUs by CEL is bound whole",
          wait_for(lambda: len(e2e.bound(c, "sel")) == 2, 30), s.text()[-800:])
    gang(c, "amp", 1, "ampere")
    ok = wait_for(lambda: [e for e in e2e.events_for(c, "amp") if e["type"] == "Warning"], 20)
    check("a claim selecting Ampere GPUs (none exist) waits unschedulable", ok and
          not e2e.bound(c, "amp"), str(ok)[:400])
    gang(c, "mac", 1, "macro")
    ok = wait_for(lambda: [e for e in e2e.events_for(c, "mac") if e["reason"] == "InvalidSpec"],
                  20)
    check("a selector outside the CEL subset waits with InvalidSpec naming field and column",
          ok and "selectors[0].cel.expression: column" in ok[0].get("note", ""), str(ok)[:400])
    check("and is not bound", not e2e.bound(c, "mac"))


def allocation_mode_all(c, s):
    """allocationMode All: a pod gets every GPU of a node."""
    for p in e2e.bound(c, "sel"):
        c.delete(NS + "/" + p["metadata"]["name"])
    whole = template("whole", 1)
    ex = whole["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    ex["allocationMode"] = "All"
    del ex["count"]
    c.post(RES + "/namespaces/default/resourceclaimtemplates", whole)
    gang(c, "all", 1, "whole")
    def all_done():
        b = e2e.bound(c, "all")
        cl = claims_of(c, "all-0")
        res = ((cl[0].get("status") or {}).get("allocation") or {}).get("devices", {}).get(
            "results", []) if cl else []
        return b and len(res) == 8 and {r["pool"] for r in res} == {b[0]["spec"]["nodeName"]}
    check("a claim with allocationMode All gets every GPU device of its pod's node",
          wait_for(all_done, 30), s.text()[-800:])


def first_available(c, s):
    """firstAvailable (DRAPrioritizedList, on by default since 1.34): an Ampere alternative
    first, a Hopper one second, 2 devices each: the pod is bound and its claim's results name
    the Hopper subrequest ("gpus/hopper"); a claim whose alternatives ask different counts waits
    with InvalidSpec naming the field."""
    for p in e2e.bound(c, "all"):
        c.delete(NS + "/" + p["metadata"]["name"])
    def alt(name, arch, count):
        return {"name": name, "deviceClassName": "gpu.nvidia.com", "count": count, "selectors": [
            {"cel": {"expression": "device.attributes['gpu.nvidia.com'].architecture == '%s'"
                     % arch}}]}
    for name, alts in (("pick", [alt("ampere", "Ampere", 2), alt("hopper", "Hopper", 2)]),
                       ("uneven", [alt("ampere", "Ampere", 4), alt("hopper", "Hopper", 2)])):
        c.post(RES + "/namespaces/default/resourceclaims",
               {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpus", "firstAvailable": alts}]}}})
        p = e2e.pod(name + "-0", None, 0)
        p["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": name}]
        c.post(NS, p)

    def picked():
        st = c.get(RES + "/namespaces/default/resourceclaims/pick")[1].get("status") or {}
        res = (st.get("allocation") or {}).get("devices", {}).get("results", [])
        return e2e.bound(c, "pick") and [r["request"] for r in res] == ["gpus/hopper"] * 2
    check("a claim whose first alternative (Ampere) no node has is allocated its second "
          "(Hopper): results name the subrequest gpus/hopper", wait_for(picked, 30),
          s.text()[-800:])
    ok = wait_for(lambda: [e for e in e2e.events_for(c, "uneven-0") if e["reason"] ==
                           "InvalidSpec"], 20)
    check("alternatives of different counts wait with InvalidSpec naming the field",
          ok and "firstAvailable[1]: count: 2 where the first subrequest asks 4" in
          ok[0].get("note", ""), str(ok)[:400])


def main():
    """The scenario's phases in order on one cluster."""
    c, s = dra_cluster()
    pods = template_gang(c, s)
    quota_counts_claims(c, s, pods)
    preemption(c, s)
    cel_templates(c)
    direct_claim(c, s)
    cel_selectors(c, s)
    allocation_mode_all(c, s)
    first_available(c, s)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
