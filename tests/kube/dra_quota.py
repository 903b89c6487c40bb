"""tests/kube/dra_quota.py: quota per DeviceClass (config quotaMapping) with `gangsched run`.

Owns: issue 17's "quota counts claimed devices per DeviceClass". Two DRA-only nodes (8
gpu.nvidia.com devices each, rack r1) and one device-plugin node (8 nvidia.com/gpu, rack r2);
the queue has 8 nvidia.com/gpu and 8 example.com/dra-gpu, and quotaMapping counts the devices of
DeviceClass gpu.nvidia.com as example.com/dra-gpu. Checked: a gang claiming 8 devices is bound
on a DRA node (claimed devices need DRA devices); a second 8-device gang waits on quota naming
example.com/dra-gpu; a gang of 8 device-plugin GPUs is bound at the same time (the claimed
devices left the nvidia.com/gpu count: without the mapping 8 + 8 > 8 would block it); deleting
the first gang lets the second start. Every wait is bounded.
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
        nvidia.com/gpu: 8
        example.com/dra-gpu: 8
quotaMapping:
  - deviceClass: gpu.nvidia.com
    quotaResource: example.com/dra-gpu
    weight: 1
"""


def main():
    kubeconfig, c = dra.start(CONFIG)
    for i, n in enumerate(("gpu-1", "gpu-2")):
        c.post("/api/v1/nodes", dra.dra_node(n, "r1"))
        c.post(dra.RES + "/resourceslices", dra.gpu_slice(n, "u%d" % i))
    c.post("/api/v1/nodes", e2e.node("gpu-3", "r2"))
    c.post(dra.RES + "/namespaces/default/resourceclaimtemplates", dra.template("eight", 8))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))

    dra.gang(c, "a", 1, "eight")
    ok = wait_for(lambda: len(e2e.bound(c, "a")) == 1, 20)
    node = e2e.bound(c, "a")[0]["spec"]["nodeName"] if ok else None
    check("a gang claiming 8 devices of the counted class is bound on a DRA node",
          node in ("gpu-1", "gpu-2"), "%s %s" % (node, s.text()[-800:]))
    dra.gang(c, "b", 1, "eight")
    wait_for(lambda: e2e.pg_status(c, "b").get("phase") == "Pending", 10)
    got = wait_for(lambda: " ".join(e.get("note", "") for e in e2e.events_for(c, "b")
                                    if "example.com/dra-gpu" in e.get("note", "")), 15)
    check("the queue's example.com/dra-gpu quota stops a second 8-device gang",
          got and not e2e.bound(c, "b") and "quota" in got, str(got)[:400] + s.text()[-600:])
    e2e.gang(c, "p", 1, 8)
    check("8 device-plugin GPUs still fit the 8 nvidia.com/gpu (claimed devices count only as "
          "example.com/dra-gpu)", wait_for(lambda: len(e2e.bound(c, "p")) == 1, 20),
          s.text()[-800:])
    check("b still waits", not e2e.bound(c, "b"))
    c.delete(dra.NS + "/a-0")
    check("deleting the first gang lets the second start",
          wait_for(lambda: len(e2e.bound(c, "b")) == 1, 30), s.text()[-800:])
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
