"""tests/kube/hami_share.py: `gangsched run` places HAMi GPU shares onto devices.

Owns: issue 18's share scenario in the daemon. Pods ask nvidia.com/gpu (devices), nvidia.com/gpumem
(MiB of each device) and nvidia.com/gpucores (percent of each device), as HAMi's users write them;
nodes carry HAMi's register (hami.io/node-nvidia-register, two 32768 MiB devices split 10).
Checked: two share pods with hami.io/gpu-scheduler-policy: binpack go to one device, two without
it (HAMi's default policy, spread) to two devices of another node; each Binding carries
gangsched.io/gpu-ids and HAMi's allocation naming that device's UUID with the pod's own memory and
cores ("uuid,NVIDIA,4000,25:;"); a whole-device pod then takes the binpack node's free device and
no device holding a share; a share larger than any device waits naming nvidia.com/gpumem.
The API server's part (the Binding's annotations copied onto the pod in the same write, as the
pods/binding subresource does) is the fake server's (tests/kube/fakeapi_store.py, Store.bind).
Bounded waits.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, pod, wait_for  # noqa: E402
from hami import CONFIG, PODS, hami_node, ids, register, uuid  # noqa: E402


def share_pod(name, rack, mem, cores, policy=None):
    p = pod(name, None, 1)
    lim = p["spec"]["containers"][0]["resources"]["limits"]
    lim["nvidia.com/gpumem"] = str(mem)
    lim["nvidia.com/gpucores"] = str(cores)
    p["spec"]["nodeSelector"] = {"network.topology.gangsched.io/rack": rack}
    if policy:
        p["metadata"]["annotations"] = {"hami.io/gpu-scheduler-policy": policy}
    return p


def alloc(p):
    return p["metadata"].get("annotations", {}).get("hami.io/vgpu-devices-to-allocate")


def main():
    kubeconfig, c = e2e.start_with_config(CONFIG)
    c.post("/api/v1/nodes", hami_node("b1", "rb", register("b1", [True] * 2)))
    c.post("/api/v1/nodes", hami_node("s1", "rs", register("s1", [True] * 2)))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler leads", wait_for(s.leading, 20))

    for name in ("bp-0", "bp-1"):
        c.post(PODS, share_pod(name, "rb", 4000, 25, "binpack"))
    check("two binpack share pods are bound",
          wait_for(lambda: len(bound(c, "bp")) == 2, 20), s.text()[-1500:])
    bp = bound(c, "bp")
    if len(bp) == 2:
        check("binpack: both on one device of b1",
              [ids(p) for p in bp] == [[0], [0]] and
              all(p["spec"]["nodeName"] == "b1" for p in bp), str([ids(p) for p in bp]))
        want = "%s,NVIDIA,4000,25:;" % uuid("b1", 0)
        check("HAMi's allocation names that device with the pod's share (4000 MiB, 25 cores)",
              all(alloc(p) == want for p in bp), str([alloc(p) for p in bp]))

    for name in ("sp-0", "sp-1"):
        c.post(PODS, share_pod(name, "rs", 4000, 25))
    check("two share pods under the default policy are bound",
          wait_for(lambda: len(bound(c, "sp")) == 2, 20), s.text()[-1500:])
    sp = bound(c, "sp")
    if len(sp) == 2:
        got = sorted(ids(p)[0] for p in sp)
        check("spread (HAMi's default gpu policy): on two devices of s1", got == [0, 1] and
              all(p["spec"]["nodeName"] == "s1" for p in sp), str(got))
        check("each allocation names its own device's UUID",
              all(alloc(p) == "%s,NVIDIA,4000,25:;" % uuid("s1", ids(p)[0]) for p in sp),
              str([alloc(p) for p in sp]))

    whole = pod("whole-0", None, 1)
    whole["spec"]["nodeSelector"] = {"network.topology.gangsched.io/rack": "rb"}
    c.post(PODS, whole)
    check("a whole-device pod is bound", wait_for(lambda: bound(c, "whole"), 15),
          s.text()[-800:])
    w = bound(c, "whole")
    if w:
        check("... on b1's device 1, not the device holding the shares, whole (32768 MiB, 100)",
              ids(w[0]) == [1] and alloc(w[0]) == "%s,NVIDIA,32768,100:;" % uuid("b1", 1),
              "%s %s" % (ids(w[0]), alloc(w[0])))

    c.post(PODS, share_pod("big-0", "rs", 40000, 10))

    def big_msg():
        st, o, _ = c.get(PODS + "/big-0")
        for cond in (o.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return cond.get("message")
        return None
    msg = wait_for(big_msg, 15)
    print("     its message: %s" % msg)
    check("a share larger than any device waits unbound, naming nvidia.com/gpumem",
          not bound(c, "big") and msg and "nvidia.com/gpumem" in msg, str(msg))
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
