"""tests/kube/dra_amd.py: `gangsched run` with AMD GPUs published by AMD's DRA driver.

Owns: the accelerator's DRA identity beyond NVIDIA (sched/core/device.h device_dra). The config
names the device amd.com/gpu; two nodes without any device-plugin GPUs each publish one
ResourceSlice of driver gpu.amd.com shaped as ROCm's k8s-gpu-dra-driver documents its devices
(docs/driver-attributes.md of that repository: full GPUs `gpu-<card>-<render>` of attribute
type "amdgpu", partitions of type "amdgpu-partition", productName, numaNode, the standard
resource.kubernetes.io/pciBusID, capacity memory), and the DeviceClass its chart installs
(deviceclass.yaml: `device.driver == 'gpu.amd.com'`). Checked: a gang whose pods
claim gpu.amd.com devices through a template is bound whole, each claim allocated with 4 full
GPUs of its pod's node (driver gpu.amd.com, never a partition) before the Binding; the queue's
amd.com/gpu quota counts them; with every full GPU taken a 1-GPU claim waits although the
partitions are free (they are no whole GPUs); a claim of NVIDIA's class (kwok's DeviceClass)
waits with InvalidSpec: it selects none of the accelerator's devices. DeviceClasses: a claim
of an operator's class per GPU model waits while the class does not exist, then takes only
devices its CEL selector accepts (an MI300X node, not the MI250X one). Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dra  # noqa: E402
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
device: {resource: amd.com/gpu}
queues:
  - name: team-a
    quota:
      default:
        amd.com/gpu: 16
"""
NS, RES = dra.NS, dra.RES
DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": "gpu.amd.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.amd.com'"}}]}}


def amd_slice(node, k, product):
    """Four full GPUs of `product` and eight partitions of GPU 0 (as a CPX-partitioned GPU
    would publish them alongside)."""
    devs = []
    for i in range(4):
        devs.append({"name": "gpu-%d-%d" % (i, 128 + 8 * i), "attributes": {
            "type": {"string": "amdgpu"}, "productName": {"string": product},
            "numaNode": {"int": i // 2},
            "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (16 * k + i)}},
            "capacity": {"memory": {"value": "192Gi"}}})
    for j in range(8):
        devs.append({"name": "gpu-0-%d" % (200 + j), "attributes": {
            "type": {"string": "amdgpu-partition"}, "productName": {"string": product},
            "numaNode": {"int": 0},
            "resource.kubernetes.io/pciBusID": {"string": "0000:%02x:00.0" % (16 * k)}},
            "capacity": {"memory": {"value": "24Gi"}}})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": node + "-gpu.amd.com"},
            "spec": {"driver": "gpu.amd.com", "nodeName": node, "devices": devs,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}}}


def template(name, cls, count):
    t = dra.template(name, count)
    t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = cls
    return t


def allocated(c, pod):
    cl = dra.claims_of(c, pod)
    st = (cl[0].get("status") or {}) if cl else {}
    return (st.get("allocation") or {}).get("devices", {}).get("results", [])


def main():
    kubeconfig, c = dra.start(CONFIG)
    c.post(RES + "/deviceclasses", DEVICE_CLASS)
    for k, (n, product) in enumerate((("amd-1", "MI300X"), ("amd-2", "MI250X"))):
        c.post("/api/v1/nodes", dra.dra_node(n, "r1"))
        c.post(RES + "/resourceslices", amd_slice(n, k, product))
    for name, cls, count in (("four", "gpu.amd.com", 4), ("one", "gpu.amd.com", 1),
                             ("nv", "gpu.nvidia.com", 1), ("mi300x", "mi300x.example.com", 1)):
        c.post(RES + "/namespaces/default/resourceclaimtemplates", template(name, cls, count))
    s = e2e.Sched(kubeconfig, "sched-amd", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))

    dra.gang(c, "a", 2, "four")
    check("a gang claiming gpu.amd.com devices through a template is bound whole",
          wait_for(lambda: len(e2e.bound(c, "a")) == 2, 20), s.text()[-1000:])
    pods = e2e.bound(c, "a")
    results = {p["metadata"]["name"]: allocated(c, p["metadata"]["name"]) for p in pods}
    good = all(len(r) == 4 and all(x["driver"] == "gpu.amd.com" and
                                   x["pool"] == p["spec"]["nodeName"] and
                                   int(x["device"].split("-")[2]) < 200 for x in r)
               for p, r in ((p, results[p["metadata"]["name"]]) for p in pods))
    check("each claim is allocated 4 full GPUs of its pod's node (driver gpu.amd.com, no "
          "partition)", good and len({p["spec"]["nodeName"] for p in pods}) == 2, str(results))

    for p in pods:  # one single-pod gang pinned to each node instead, freed one at a time
        c.delete(NS + "/" + p["metadata"]["name"])
    wait_for(lambda: not e2e.pods_of(c, "a"), 20)
    for name, node in (("x1", "amd-1"), ("x2", "amd-2")):
        path, pg = e2e.podgroup(name, 1)
        c.post(path, pg)
        c.post(NS, dra.template_pod(name + "-0", name, "four", node))
    check("a 4-GPU pod pinned to each node is bound",
          wait_for(lambda: e2e.bound(c, "x1") and e2e.bound(c, "x2"), 20), s.text()[-600:])

    dra.gang(c, "b", 1, "one")
    e2e.time.sleep(2.0)
    notes = " ".join(e.get("note", "") for e in e2e.events_for(c, "b"))
    check("with every full GPU taken a 1-GPU claim waits though the partitions are free",
          not e2e.bound(c, "b") and "insufficient amd.com/gpu" in notes,
          notes[:400] + s.text()[-600:])

    dra.gang(c, "n", 1, "nv")
    ok = wait_for(lambda: [e for e in e2e.events_for(c, "n") if e["reason"] == "InvalidSpec"],
                  20)
    check("a claim of NVIDIA's DeviceClass waits with InvalidSpec: it selects none of the "
          "accelerator's devices", ok and "deviceclass gpu.nvidia.com selects none of the "
          "accelerator's whole devices (driver gpu.amd.com)" in ok[0].get("note", ""),
          str(ok)[:400])

    dra.gang(c, "m", 1, "mi300x")
    ok = wait_for(lambda: [e for e in e2e.events_for(c, "m")
                           if "does not exist" in e.get("note", "")], 20)
    check("a claim of a DeviceClass that does not exist waits, saying so",
          ok and ok[0]["reason"] == "WaitingForResourceClaim" and not e2e.bound(c, "m"),
          str(ok)[:400])
    c.post(RES + "/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "mi300x.example.com"},
        "spec": {"selectors": [{"cel": {"expression":
                 "device.driver == 'gpu.amd.com' && "
                 "device.attributes['gpu.amd.com'].productName == 'MI300X'"}}]}})
    c.delete(NS + "/x2-0")  # the MI250X node frees first
    check("once amd-2 is free the 1-GPU claim gets a full GPU there",
          wait_for(lambda: e2e.bound(c, "b") and len(allocated(c, "b-0")) == 1 and
                   allocated(c, "b-0")[0]["driver"] == "gpu.amd.com", 30), s.text()[-800:])
    e2e.time.sleep(2.0)
    check("the claim of the MI300X class, created since, does not take amd-2's MI250X GPUs",
          not e2e.bound(c, "m"), str(allocated(c, "m-0")))
    c.delete(NS + "/x1-0")
    ok = wait_for(lambda: e2e.bound(c, "m") and allocated(c, "m-0"), 30)
    res = allocated(c, "m-0")
    check("and takes an MI300X GPU of amd-1 once one is free",
          ok and e2e.bound(c, "m")[0]["spec"]["nodeName"] == "amd-1" and len(res) == 1 and
          res[0]["pool"] == "amd-1", str(res) + s.text()[-600:])
    rc, out = e2e.gangctl("--server", s.url(), "quota", "team-a")
    row = next((ln.split() for ln in out.splitlines() if "amd.com/gpu" in ln), [])
    check("gangctl quota shows the queue's amd.com/gpu: 2 used of 16", rc == 0 and
          row[3:4] == ["16"] and row[6:7] == ["2"], out)
    s.stop()
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
