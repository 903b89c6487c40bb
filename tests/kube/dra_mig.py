"""tests/kube/dra_mig.py: MIG devices through DRA with `gangsched run` (sched/kube/mig.h).

Owns: the static-MIG scenario of NVIDIA's DRA driver. Two DRA-only nodes (rack r1), each with
one ResourceSlice of gpu.nvidia.com holding 7 MIG devices of profile 1g.10gb on its GPU 0 and 2 of
profile 3g.40gb on its GPU 1, named and attributed as the driver publishes them (type "mig",
profile, parentUUID; names gpu-<minor>-mig-<profile without dots>-<profile id>-<placement>), and
the driver's DeviceClass mig.nvidia.com (type == 'mig'). The queue's quota is 3 nvidia.com/gpu;
quotaMapping counts a 1g.10gb slice as 1/7 GPU and a 3g.40gb as 3/7. Checked: a gang of two pods
claiming 3 slices of 1g.10gb each is bound, each claim allocated 3 distinct 1g.10gb devices of its
pod's node before its Binding; a gang of four pods claiming a 3g.40gb slice each is bound with
every 3g.40gb device (18/7 GPU in use); a second 1g.10gb gang (6/7 more) waits on quota and is
bound once the 3g.40gb gang is gone, no device of it given twice; a claim of "any MIG device" (no
selector) is given the commonest profile while it has room (1g.10gb), and a claim of two such
devices the other profile once one 1g.10gb device is left; a firstAvailable MIG claim whose first
subrequest (7g.80gb) no device passes is given its second (3g.40gb), its result naming
"gpus/big"; whole-GPU claims find no GPU. Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dra  # noqa: E402
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: team-a
    quota:
      default:
        nvidia.com/gpu: 3
quotaMapping:
  - resource: nvidia.com/mig-1g.10gb
    quotaResource: nvidia.com/gpu
    weight: 1/7
  - resource: nvidia.com/mig-3g.40gb
    quotaResource: nvidia.com/gpu
    weight: 3/7
"""
# NVIDIA's chart: deviceclass-mig.yaml
MIG_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
             "metadata": {"name": "mig.nvidia.com"},
             "spec": {"selectors": [{"cel": {"expression":
                                             "device.driver == 'gpu.nvidia.com' && "
                                             "device.attributes['gpu.nvidia.com'].type == 'mig'"}}]}}
CLAIMS = dra.RES + "/namespaces/default/resourceclaims"


def mig_device(node, minor, profile, pid, start):
    return {"name": "gpu-%d-mig-%s-%d-%d" % (minor, profile.replace(".", ""), pid, start),
            "attributes": {"type": {"string": "mig"}, "profile": {"string": profile},
                           "parentUUID": {"string": "GPU-%s-%d" % (node, minor)},
                           "uuid": {"string": "MIG-%s-%d-%d-%d" % (node, minor, pid, start)},
                           "productName": {"string": "NVIDIA A100-SXM4-80GB"},
                           "architecture": {"string": "Ampere"}},
            "capacity": {"memory": {"value": "10Gi" if profile == "1g.10gb" else "40Gi"}}}


def mig_slice(node):
    devs = [mig_device(node, 0, "1g.10gb", 19, i) for i in range(7)]
    devs += [mig_device(node, 1, "3g.40gb", 9, s) for s in (0, 4)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": node + "-gpu.nvidia.com"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devs}}


def mig_template(name, count, profile=None, cls="mig.nvidia.com"):
    t = dra.template(name, count, "device.attributes['gpu.nvidia.com'].profile == '%s'" % profile
                     if profile else None)
    t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = cls
    return t


def results(c, pod):
    cl = dra.claims_of(c, pod)
    st = (cl[0].get("status") or {}) if cl else {}
    return (st.get("allocation") or {}).get("devices", {}).get("results", [])


def profile_of(device):
    return "1g.10gb" if "-mig-1g10gb-" in device else "3g.40gb" if "-mig-3g40gb-" in device \
        else None


def allocated(c, gang, n, profile, count):
    """The gang's pods are bound and each one's claim holds `count` distinct devices of
    `profile` on its node; returns the set of (pool, device) or None."""
    pods = e2e.bound(c, gang)
    if len(pods) != n:
        return None
    devices = set()
    for p in pods:
        res = results(c, p["metadata"]["name"])
        if len(res) != count or not all(r["pool"] == p["spec"]["nodeName"] and
                                        r["driver"] == "gpu.nvidia.com" and r["request"] == "gpus"
                                        and profile_of(r["device"]) == profile for r in res):
            return None
        devices |= {(r["pool"], r["device"]) for r in res}
    return devices if len(devices) == n * count else None


def main():
    kubeconfig, c = dra.start(CONFIG)
    c.post(dra.RES + "/deviceclasses", MIG_CLASS)
    for n in ("mig-1", "mig-2"):
        c.post("/api/v1/nodes", dra.dra_node(n, "r1"))
        c.post(dra.RES + "/resourceslices", mig_slice(n))
    tmpl = dra.RES + "/namespaces/default/resourceclaimtemplates"
    c.post(tmpl, mig_template("one-g", 3, "1g.10gb"))
    c.post(tmpl, mig_template("three-g", 1, "3g.40gb"))
    c.post(tmpl, mig_template("any-mig", 1))
    c.post(tmpl, dra.template("whole", 1))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))

    rv0 = c.get(dra.NS)[1]["metadata"]["resourceVersion"]
    path, pg = e2e.podgroup("a", 2)
    c.post(path, pg)
    for i in range(2):  # both on one node: their devices are picked at once
        c.post(dra.NS, dra.template_pod("a-%d" % i, "a", "one-g", node="mig-2"))
    a = wait_for(lambda: allocated(c, "a", 2, "1g.10gb", 3), 30)
    check("a gang claiming 3 MIG slices of 1g.10gb per pod is bound, each claim allocated 3 "
          "distinct 1g.10gb devices of its pod's node", a,
          str([results(c, "a-%d" % i) for i in range(2)])[:600] + s.text()[-800:])
    bind_rv = e2e.first_rv(c, dra.NS, rv0,
                           lambda o: o["spec"].get("nodeName") and o["metadata"]["name"])
    claim_rv = e2e.first_rv(c, CLAIMS, rv0, lambda o: next(
        (r["name"] for r in (o.get("status") or {}).get("reservedFor") or []), None))
    check("each MIG claim was allocated and reserved before its pod's Binding",
          all(claim_rv.get(p, 1 << 62) < bind_rv.get(p, 0) for p in ("a-0", "a-1")),
          "%s %s" % (claim_rv, bind_rv))

    dra.gang(c, "b", 4, "three-g")
    b = wait_for(lambda: allocated(c, "b", 4, "3g.40gb", 1), 30)
    check("a gang of four pods claiming a 3g.40gb slice each is bound with every 3g.40gb device "
          "(18/7 GPU of quota in use)", b and len(b) == 4,
          str(results(c, "b-0")) + s.text()[-800:])

    dra.gang(c, "c", 2, "one-g")
    wait_for(lambda: e2e.pg_status(c, "c").get("phase") == "Pending", 10)
    got = wait_for(lambda: " ".join(e.get("note", "") for e in e2e.events_for(c, "c")
                                    if "quota" in e.get("note", "")), 20)
    check("a second 1g.10gb gang (6/7 GPU more) waits on the queue's GPU quota through "
          "quotaMapping", got and not e2e.bound(c, "c"), str(got)[:400] + s.text()[-600:])
    for i in range(4):
        c.delete(dra.NS + "/b-%d" % i)
    cc = wait_for(lambda: allocated(c, "c", 2, "1g.10gb", 3), 40)
    check("once the 3g.40gb gang is gone the second gang is bound", cc, s.text()[-800:])
    check("no MIG device is given twice (12 distinct 1g.10gb devices, at most 7 per node)",
          a and cc and not (a & cc) and
          all(sum(1 for d in a | cc if d[0] == n) <= 7 for n in ("mig-1", "mig-2")),
          "%s %s" % (sorted(a or ()), sorted(cc or ())))

    dra.gang(c, "d", 1, "any-mig")
    d = wait_for(lambda: allocated(c, "d", 1, "1g.10gb", 1), 30)
    check("a claim of any MIG device is given the commonest profile (1g.10gb), a free device",
          d and a and cc and not (d & (a | cc)), str(results(c, "d-0")) + s.text()[-800:])
    c.post(tmpl, mig_template("any-mig2", 2))
    dra.gang(c, "f", 1, "any-mig2")
    f = wait_for(lambda: allocated(c, "f", 1, "3g.40gb", 2), 30)
    check("a claim of two of any MIG device, one 1g.10gb device being left, is given two "
          "3g.40gb devices", f, str(results(c, "f-0")) + s.text()[-800:])

    c.delete(dra.NS + "/f-0")  # its two 3g.40gb devices free again
    fa = mig_template("prefer", 1)
    req = fa["spec"]["spec"]["devices"]["requests"][0]
    req.pop("exactly")
    req["firstAvailable"] = [
        {"name": "huge", "deviceClassName": "mig.nvidia.com", "selectors": [{"cel": {
            "expression": "device.attributes['gpu.nvidia.com'].profile == '7g.80gb'"}}]},
        {"name": "big", "deviceClassName": "mig.nvidia.com", "selectors": [{"cel": {
            "expression": "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}}]}]
    c.post(tmpl, fa)
    dra.gang(c, "e", 1, "prefer")
    e = wait_for(lambda: e2e.bound(c, "e") and results(c, "e-0"), 30)
    check("a firstAvailable MIG claim whose first subrequest no device passes is given the "
          "next: a 3g.40gb device, its result naming request/subrequest",
          e and len(e) == 1 and e[0]["request"] == "gpus/big" and
          profile_of(e[0]["device"]) == "3g.40gb" and e[0]["pool"] == e2e.bound(c, "e")[0][
              "spec"]["nodeName"], str(e) + s.text()[-800:])
    path, pg = e2e.podgroup("k", 1)
    c.post(path, pg)
    kp = e2e.pod("k-0", "k", 0)
    kp["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": "1"}}
    c.post(dra.NS, kp)
    ev = wait_for(lambda: [e for e in e2e.events_for(c, "k") if e["type"] == "Warning"], 20)
    ok = e2e.bound(c, "k")
    check("a pod asking a MIG profile in its containers is not bound where the profile's devices "
          "are DRA devices (kubelet would give it none): it waits", ev and not ok,
          str(ok)[:300] + s.text()[-600:])
    dra.gang(c, "w", 1, "whole")
    ok = wait_for(lambda: [e for e in e2e.events_for(c, "w") if e["type"] == "Warning"], 20)
    check("a whole-GPU claim is not given MIG devices: it waits", ok and not e2e.bound(c, "w"),
          str(ok)[:400])
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
