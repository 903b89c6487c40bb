"""tests/kube/kinds.py: two accelerator kinds in one cluster (config devices:) with `gangsched run`.

Owns: issue 18's "a gang of Ascend devices goes through admission, quota, placement, preemption
and the daemon exactly as an NVIDIA gang does", for a cluster with both kinds. Two NVIDIA nodes
(8 nvidia.com/gpu) and two Ascend nodes (8 huawei.com/Ascend910, the resource name Huawei's
device plugin advertises); queue npu has 16 huawei.com/Ascend910, queue gpu 8 nvidia.com/gpu.
Checked: the Ascend gang (2 x 8) is bound on the two Ascend nodes with device indices in
gangsched.io/gpu-ids; the NVIDIA gang on an NVIDIA node; a second NVIDIA gang waits on gpu's
nvidia.com/gpu quota although an NVIDIA node is free; an NVIDIA gang in the Ascend-only queue is
never bound and its event names nvidia.com/gpu; deleting the first NVIDIA gang lets the second
start; gangctl shows each queue's use under its kind's name; the metrics name both kinds. Every wait is bounded.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import check, wait_for  # noqa: E402

ASCEND = "huawei.com/Ascend910"
with open(os.path.join(os.path.dirname(__file__), "..", "..", "config", "examples",
                       "two-kinds.yaml"), encoding="utf-8") as _f:
    CONFIG = _f.read()  # the example both this test and tests/sim/sim_kinds.sh run


def ascend_node(name):
    n = e2e.node(name, "r1")
    del n["metadata"]["labels"]["nvidia.com/gpu.product"]
    for k in ("allocatable", "capacity"):
        del n["status"][k]["nvidia.com/gpu"]
        n["status"][k][ASCEND] = "8"
    return n


def gang(c, name, n_pods, count, queue, resource):
    path, pg = e2e.podgroup(name, n_pods, queue=queue)
    c.post(path, pg)
    for i in range(n_pods):
        p = e2e.pod("%s-%d" % (name, i), name, count)
        p["spec"]["containers"][0]["resources"] = {"limits": {resource: str(count)}}
        c.post("/api/v1/namespaces/default/pods", p)


def nodes_of(c, name):
    return sorted(p["spec"]["nodeName"] for p in e2e.bound(c, name))


def notes(c, name, word):
    return " ".join(e.get("note", "") for e in e2e.events_for(c, name) if word in e.get("note", ""))


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    for n in ("gpu-1", "gpu-2"):
        c.post("/api/v1/nodes", e2e.node(n, "r1"))
    for n in ("npu-1", "npu-2"):
        c.post("/api/v1/nodes", ascend_node(n))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))

    gang(c, "asc", 2, 8, "npu", ASCEND)
    ok = wait_for(lambda: len(e2e.bound(c, "asc")) == 2, 20)
    check("the Ascend gang is bound on the two Ascend nodes",
          ok and nodes_of(c, "asc") == ["npu-1", "npu-2"],
          "%s %s" % (nodes_of(c, "asc"), s.text()[-800:]))
    ids = [p["metadata"].get("annotations", {}).get("gangsched.io/gpu-ids")
           for p in e2e.bound(c, "asc")]
    check("each Ascend pod has its device indices", ids == ["0,1,2,3,4,5,6,7"] * 2, str(ids))
    gang(c, "nv", 1, 8, "gpu", "nvidia.com/gpu")
    ok = wait_for(lambda: len(e2e.bound(c, "nv")) == 1, 20)
    check("the NVIDIA gang is bound on an NVIDIA node",
          ok and nodes_of(c, "nv")[0] in ("gpu-1", "gpu-2"), "%s %s" % (nodes_of(c, "nv"),
                                                                       s.text()[-800:]))
    gang(c, "nv2", 1, 8, "gpu", "nvidia.com/gpu")
    got = wait_for(lambda: notes(c, "nv2", "nvidia.com/gpu"), 15)
    check("a second NVIDIA gang waits on gpu's nvidia.com/gpu quota (an NVIDIA node is free)",
          got and "quota" in got and not e2e.bound(c, "nv2"), str(got)[:400])
    gang(c, "wrong", 1, 8, "npu", "nvidia.com/gpu")
    got = wait_for(lambda: notes(c, "wrong", "nvidia.com/gpu"), 15)
    check("an NVIDIA gang in the Ascend-only queue is refused by nvidia.com/gpu quota",
          got and "quota" in got and not e2e.bound(c, "wrong"), str(got)[:400])
    c.delete("/api/v1/namespaces/default/pods/nv-0")
    ok = wait_for(lambda: len(e2e.bound(c, "nv2")) == 1, 30)
    check("deleting the first NVIDIA gang lets the second start on an NVIDIA node",
          ok and nodes_of(c, "nv2")[0] in ("gpu-1", "gpu-2"), s.text()[-800:])
    check("the Ascend gang is untouched", nodes_of(c, "asc") == ["npu-1", "npu-2"])
    check("the NVIDIA gang of the Ascend-only queue is still not bound", not e2e.bound(c, "wrong"))
    rc, out = e2e.gangctl("--server", s.url(), "quota", "npu", "-o", "json")
    try:
        rows = json.loads(out)["queues"][0]["quotas"]
    except (ValueError, KeyError, IndexError):
        rows = []
    check("gangctl quota: npu uses its 16 huawei.com/Ascend910, counted under that name",
          rc == 0 and [(r["resource"], r["nominal"], r["used"]) for r in rows] ==
          [(ASCEND, 16, 16)], out[:600])
    rc, out = e2e.gangctl("--server", s.url(), "quota", "gpu", "-o", "json")
    try:
        rows = json.loads(out)["queues"][0]["quotas"]
    except (ValueError, KeyError, IndexError):
        rows = []
    check("gangctl quota: gpu uses 8 nvidia.com/gpu", rc == 0 and
          [(r["resource"], r["used"]) for r in rows] == [("nvidia.com/gpu", 8)], out[:600])
    st, body = e2e.http_get(s.url() + "/metrics")
    body = body.decode() if isinstance(body, bytes) else str(body)
    check("the metrics name both kinds",
          'gangsched_device_info{resource="nvidia.com/gpu",unit="GPU"} 1' in body and
          'gangsched_device_info{resource="huawei.com/Ascend910",unit="NPU"} 1' in body,
          "\n".join(ln for ln in body.splitlines() if "device_info" in ln))
    db = os.path.join(e2e.TMP, "g.db")
    r = subprocess.run([os.path.join(e2e.BIN, "gangsched"), "store", "check", db],
                       capture_output=True, text=True, timeout=30)
    check("store check: the ledger of both kinds matches the running jobs", r.returncode == 0,
          r.stdout + r.stderr)
    rc, out = e2e.gangctl("--db", db, "queues")
    rows = {ln.split()[0]: ln for ln in out.splitlines()[1:] if ln.strip()}
    check("gangctl queues offline counts the devices of every kind, in devices",
          rc == 0 and rows.get("npu", "").split()[5:9] == ["16", "device", "16", "device"] and
          rows.get("gpu", "").split()[5:9] == ["8", "device", "8", "device"], out[:600])
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
