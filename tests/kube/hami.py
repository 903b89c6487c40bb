"""tests/kube/hami.py: `gangsched run` on nodes registered by HAMi's device plugin.

Owns: issue 18's HAMi daemon scenario. HAMi's device plugin advertises nvidia.com/gpu as devices
x split count (40 for 4 GPUs split 10) and names the devices in the node annotation
hami.io/node-nvidia-register (the nine-field form of HAMi's docs/develop/protocol.md). Checked:
a node offers its registered devices, not the split count (a pod asking 3 devices waits when no
node has 3 free devices, though every node advertises 40); devices past an unhealthy one are not
offered; a node whose register cannot be read offers none; a gang is bound whole with
gangsched.io/gpu-ids and HAMi's allocation (hami.io/vgpu-devices-to-allocate and
hami.io/vgpu-devices-allocated naming the UUIDs of exactly those indices, each device whole:
all its memory, 100 cores; hami.io/vgpu-node, hami.io/bind-phase allocating, hami.io/bind-time
and hami.io/vgpu-time) written in the Binding, one entry per container; a pod on a plain node gets no HAMi annotation; a pod asking for a HAMi
share (nvidia.com/gpumem) is placed on a device no whole pod holds, its allocation carrying its
memory (tests/kube/hami_share.py checks the shares' policies).
Bounded waits.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, pod, podgroup, wait_for  # noqa: E402

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
queues:
  - name: q
"""
PODS = "/api/v1/namespaces/default/pods"


def uuid(node, i):
    return "GPU-%s-%04d-89ac-b1a6-7b53aa24b0ec" % (node, i)


def register(node, healthy, mem=32768):
    return "".join("%s,10,%d,100,NVIDIA-Tesla V100-PCIE-32GB,0,%s,%d,hami-core:" %
                   (uuid(node, i), mem, "true" if h else "false", i)
                   for i, h in enumerate(healthy))


def hami_node(name, rack, register_value):
    body = e2e.node(name, rack, gpus=40)  # 4 devices x split count 10
    body["metadata"]["annotations"] = {"hami.io/node-nvidia-register": register_value,
                                       "hami.io/node-handshake-nvidia": "Reported_2026-01-01 "
                                       "00:00:00"}
    return body


def gang(c, name, n, gpus):
    c.post(*podgroup(name, n, queue="q"))
    for i in range(n):
        c.post(PODS, pod("%s-%d" % (name, i), name, gpus))


def ids(p):
    return [int(x) for x in p["metadata"]["annotations"]["gangsched.io/gpu-ids"].split(",")]


def expected_alloc(node, gpu_ids):
    return "".join("%s,NVIDIA,32768,100:" % uuid(node, i) for i in gpu_ids) + ";"


def check_hami(p, label):
    a = p["metadata"].get("annotations", {})
    node = p["spec"]["nodeName"]
    want = expected_alloc(node, ids(p))
    now = time.time()
    check(label + ": hami.io/vgpu-devices-to-allocate names the UUIDs of its gpu-ids, each "
          "device whole", a.get("hami.io/vgpu-devices-to-allocate") == want,
          "%r vs %r" % (a.get("hami.io/vgpu-devices-to-allocate"), want))
    check(label + ": hami.io/vgpu-devices-allocated the same, vgpu-node its node, bind-phase "
          "allocating, bind-time and vgpu-time now",
          a.get("hami.io/vgpu-devices-allocated") == want and
          a.get("hami.io/vgpu-node") == node and a.get("hami.io/bind-phase") == "allocating" and
          abs(int(a.get("hami.io/bind-time", "0")) - now) < 60 and
          a.get("hami.io/vgpu-time") == a.get("hami.io/bind-time"), str(a))


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    c.post("/api/v1/nodes", hami_node("h1", "r1", register("h1", [True] * 4)))
    # device 2 unhealthy: devices 0 and 1 offered
    c.post("/api/v1/nodes", hami_node("h2", "r1", register("h2", [True, True, False, True])))
    c.post("/api/v1/nodes", hami_node("h3", "r1", "GPU-x,10,notanumber,100,T,0,true,0,hami-core"))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler leads", wait_for(s.leading, 20))

    gang(c, "pair", 2, 2)
    check("a gang of two 2-device pods is bound whole",
          wait_for(lambda: len(bound(c, "pair")) == 2, 20), s.text()[-1500:])
    got = bound(c, "pair")
    for p in got:
        check_hami(p, "pair member " + p["metadata"]["name"])
    used = [(p["spec"]["nodeName"], i) for p in got for i in ids(p)]
    check("its pods hold distinct devices, on h1 or h2 only, h2's within devices 0-1",
          len(set(used)) == 4 and all(n in ("h1", "h2") for n, _ in used) and
          all(i < 2 for n, i in used if n == "h2"), str(used))

    # 4 devices of h1 + 2 of h2 = 6, 4 taken: no node has 3 free devices (each advertises 40)
    c.post(PODS, pod("three-0", None, 3))
    time.sleep(2.0)
    st, p3, _ = c.get(PODS + "/three-0")
    check("a pod asking 3 devices waits: the split count is not devices, h2's devices past the "
          "unhealthy one and h3's unreadable register offer nothing",
          st == 200 and not p3["spec"].get("nodeName"), str(p3.get("spec", {}).get("nodeName")))
    check("the live node with an unreadable register is reported",
          "hami.io/node-nvidia-register: device 1: memory" in s.text(), s.text()[-800:])

    c.post(PODS, pod("two-0", None, 2))
    check("a pod asking 2 devices takes the 2 left",
          wait_for(lambda: bound(c, "two"), 15), s.text()[-800:])
    two = bound(c, "two")
    if two:
        check_hami(two[0], "two-0")
        used2 = used + [(two[0]["spec"]["nodeName"], i) for i in ids(two[0])]
        check("no device is given twice", len(set(used2)) == 6, str(used2))

    c.post("/api/v1/nodes", e2e.node("plain", "r2", gpus=8))
    c.delete(PODS + "/three-0")
    c.post(PODS, pod("plain-0", None, 8))
    check("a pod on a plain node is bound", wait_for(lambda: bound(c, "plain"), 15))
    pl = bound(c, "plain")
    check("a pod on a node without HAMi's register gets gpu-ids and no HAMi annotation",
          pl and "gangsched.io/gpu-ids" in pl[0]["metadata"]["annotations"] and
          not any(k.startswith("hami.io/") for k in pl[0]["metadata"]["annotations"]),
          str(pl and pl[0]["metadata"]["annotations"]))
    # several containers: one allocation entry each, devices in index order (HAMi's plugin
    # serves each container the next entry with devices and checks the count)
    c.post("/api/v1/nodes", hami_node("h4", "r1", register("h4", [True] * 4)))
    multi = pod("multi-0", None, 1)
    main_ctr = multi["spec"]["containers"][0]
    multi["spec"]["containers"] = [
        {"name": "sidecar", "image": "proxy"}, main_ctr,
        {"name": "second", "image": "trainer",
         "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
    c.post(PODS, multi)
    check("a pod of three containers asking 1 + 2 devices is bound",
          wait_for(lambda: bound(c, "multi"), 15), s.text()[-800:])
    mb = bound(c, "multi")
    if mb:
        a = mb[0]["metadata"]["annotations"]
        g = ids(mb[0])
        want = ";%s,NVIDIA,32768,100:;%s,NVIDIA,32768,100:%s,NVIDIA,32768,100:;" % (
            uuid("h4", g[0]), uuid("h4", g[1]), uuid("h4", g[2]))
        check("its allocation has an entry per container: none, 1 device, 2 devices",
              mb[0]["spec"]["nodeName"] == "h4" and
              a.get("hami.io/vgpu-devices-to-allocate") == want,
              "%r vs %r" % (a.get("hami.io/vgpu-devices-to-allocate"), want))

    # a HAMi share (gpumem) is placed on a device no whole pod holds (h4's last one), its
    # allocation carrying the pod's memory and no core limit (0: HAMi's default)
    share = pod("share-0", None, 1)
    share["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = "3000"
    c.post(PODS, share)
    check("a pod asking nvidia.com/gpumem is bound", wait_for(lambda: bound(c, "share"), 15),
          s.text()[-800:])
    sh = bound(c, "share")
    if sh and mb:
        used3 = set(ids(mb[0]))
        g = ids(sh[0])
        a = sh[0]["metadata"]["annotations"].get("hami.io/vgpu-devices-to-allocate")
        check("... on h4's device no whole pod holds, with 3000 MiB and 0 cores",
              sh[0]["spec"]["nodeName"] == "h4" and len(g) == 1 and g[0] not in used3 and
              a == "%s,NVIDIA,3000,0:;" % uuid("h4", g[0]), "%s %s" % (g, a))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
