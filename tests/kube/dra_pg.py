"""tests/kube/dra_pg.py: ResourceClaims of a native PodGroup (KEP-5729, gate
DRAWorkloadResourceClaims: alpha in 1.36, beta and off by default in 1.37), with `gangsched run`
on DRA-only nodes and v1beta1 PodGroups.

Owns: a PodGroup's spec.resourceClaims. What upstream does, read in kube-scheduler's
DynamicResources and k8s.io/dynamic-resource-allocation/resourceclaim (BindTo,
IsReservedForPod) and the resourceclaim controller's tests: a pod's claim whose
spec.resourceClaims entry equals one of its PodGroup's (same name, same claim or template) is
reserved for the PodGroup, one status.reservedFor entry {apiGroup: scheduling.k8s.io, resource:
podgroups, name, uid} for all its pods; a template's claim is made once for the PodGroup (owned
by it, named in its status and in each pod's); an entry that differs is the pod's own
reservation. Checked here: a template claim shared by a gang (made once, one entry, one node); a
later member joins with no write; a claim named directly by 260 pods (past the 256 pods a
reservedFor may list, the KEP's goal), written twice in all (finalizer, status), not per pod; a mixed claim (one PodGroup entry and one pod entry); a
refused Binding rolls the gang back and takes the PodGroup's entry out (PostFilter's
unreservePodGroupClaims: no pod of the group placed) before the retry binds it; the test API
server's validation of the fields; and, on a server without the gate, the fields dropped on
write as the registry's dropDisabledFields does.
Every wait is bounded.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import dra  # noqa: E402
import e2e  # noqa: E402
import native  # noqa: E402
from e2e import check, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

CLAIMS = dra.RES + "/namespaces/default/resourceclaims"
V = "v1beta1"
GATE = "DRAWorkloadResourceClaims"


def group(c, name, min_count, claims):
    pg = native.podgroup(V, name, min_count)
    pg["metadata"]["labels"] = {"gangsched.io/queue": "team-a"}
    pg["spec"]["resourceClaims"] = claims
    code, body, _ = c.post(native.pg_path(V), pg)
    check("PodGroup %s is created with its spec.resourceClaims" % name,
          code == 201 and body.get("spec", {}).get("resourceClaims") == claims, str(body)[:300])
    return body


def member(c, name, grp, entry):
    p = native.pod(name, 0, group=grp)
    p["spec"]["resourceClaims"] = [entry]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": entry["name"]}]}
    c.post(dra.NS, p)


def claim(c, name):
    st, body, _ = c.get(CLAIMS + "/" + name)
    return body if st == 200 else {}


def reserved(c, name):
    return sorted((r.get("apiGroup", ""), r.get("resource"), r.get("name"), r.get("uid"))
                  for r in (claim(c, name).get("status") or {}).get("reservedFor") or [])


def pg_ref(pg):
    return ("scheduling.k8s.io", "podgroups", pg["metadata"]["name"], pg["metadata"]["uid"])


def direct(c, name, count):
    body = dra.template(name, count)
    body["kind"] = "ResourceClaim"
    body["spec"] = body["spec"]["spec"]
    c.post(CLAIMS, body)


def start():
    e2e.TMP = os.path.join(e2e.TMP_ROOT, "dra-pg")
    os.makedirs(e2e.TMP, exist_ok=True)
    kubeconfig = e2e.start_fake(crds=(), extra=["--serve-api", "scheduling.k8s.io/" + V,
                                                "--feature-gates", GATE + "=true"])
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(dra.CONFIG.replace("nvidia.com/gpu: 16", "nvidia.com/gpu: 64"))
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    with open("tests/data/kwok-dra/device-class.yaml") as f:
        c.post(dra.RES + "/deviceclasses", dra.yaml.safe_load(f))
    for i, (n, rack) in enumerate((("gpu-1", "r1"), ("gpu-2", "r1"), ("gpu-3", "r2"),
                                   ("gpu-4", "r2"))):
        node = dra.dra_node(n, rack)
        if n == "gpu-4":  # room for the 260 pods of one node
            for k in ("allocatable", "capacity"):
                node["status"][k]["pods"] = "400"
        c.post("/api/v1/nodes", node)
        c.post(dra.RES + "/resourceslices", dra.gpu_slice(n, "u%d" % i))
    s = e2e.Sched(kubeconfig, "sched", os.path.join(e2e.TMP, "g.db"))
    check("the scheduler becomes leader", wait_for(s.leading, 20))
    return c, s


def template_claim(c, s):
    c.post(dra.RES + "/namespaces/default/resourceclaimtemplates", dra.template("four", 4))
    entry = {"name": "gpus", "resourceClaimTemplateName": "four"}
    group(c, "tpl", 3, [entry])
    for i in range(3):
        member(c, "tpl-%d" % i, "tpl", entry)
    ok = wait_for(lambda: len(native.bound(c, "tpl-")) == 3, 30)
    pods = native.bound(c, "tpl-")
    nodes = {p["spec"]["nodeName"] for p in pods}
    check("a gang whose 3 pods share their PodGroup's template claim is bound whole, on one "
          "node", ok and len(nodes) == 1, "%s %s" % (nodes, s.text()[-1500:]))
    _, items, _ = c.get(CLAIMS)
    made = [x for x in items["items"] if x["metadata"]["name"].startswith("tpl-gpus-")]
    owners = [o.get("kind") for x in made for o in x["metadata"].get("ownerReferences") or []]
    check("one claim is made for the PodGroup (owned by it), none for the pods",
          len(made) == 1 and owners == ["PodGroup"] and len(items["items"]) == 1,
          str([x["metadata"]["name"] for x in items["items"]]))
    name = made[0]["metadata"]["name"] if made else ""
    _, pg, _ = c.get(native.pg_path(V, "tpl"))
    check("the PodGroup's status.resourceClaimStatuses and each pod's name it",
          (pg.get("status") or {}).get("resourceClaimStatuses") ==
          [{"name": "gpus", "resourceClaimName": name}] and
          all((p.get("status") or {}).get("resourceClaimStatuses") ==
              [{"name": "gpus", "resourceClaimName": name}] for p in pods), str(pg)[:400])
    st = claim(c, name).get("status") or {}
    res = (st.get("allocation") or {}).get("devices", {}).get("results", [])
    node = next(iter(nodes)) if nodes else None
    check("the claim is allocated once: 4 devices of the pods' node",
          len(res) == 4 and {r["pool"] for r in res} == {node}, str(st)[:400])
    check("status.reservedFor is the PodGroup alone (apiGroup scheduling.k8s.io, resource "
          "podgroups, its name and uid), not the pods", reserved(c, name) == [pg_ref(pg)],
          "%s %s" % (reserved(c, name), pg_ref(pg)))

    member(c, "tpl-3", "tpl", entry)  # a later member of the elastic gang: minCount 3
    ok = wait_for(lambda: len(native.bound(c, "tpl-")) == 4, 30)
    late = [p for p in native.bound(c, "tpl-") if p["metadata"]["name"] == "tpl-3"]
    check("a later member joins the PodGroup's allocated claim on its node",
          ok and late and late[0]["spec"]["nodeName"] == node, s.text()[-800:])
    check("and nothing is written to the claim for it: the PodGroup is listed already "
          "(upstream's IsReservedForPod)", reserved(c, name) == [pg_ref(pg)] and
          (claim(c, name).get("status") or {}).get("allocation", {}).get("devices") ==
          st.get("allocation", {}).get("devices"), str(reserved(c, name)))
    check("the PodGroup's condition, True since the gang's bind, is not written again for the "
          "later member (no failed write logged)", "writing to podgroup" not in s.text(),
          s.text()[-600:])
    for i in range(4):
        c.delete(dra.NS + "/tpl-%d" % i)
    check("its pods gone, the claim is released (the claim controller: no pod of the PodGroup "
          "left)", wait_for(lambda: not reserved(c, name) and not
                            (claim(c, name).get("status") or {}).get("allocation"), 20),
          str(claim(c, name).get("status"))[:300])


def wide_claim(c, s):
    """260 pods of one PodGroup name one claim directly: a pod's reservation could list 256."""
    direct(c, "wide", 2)
    entry = {"name": "gpus", "resourceClaimName": "wide"}
    pg = group(c, "wide", 260, [entry])
    before = dra.claim_writes(c)
    for i in range(260):
        member(c, "wide-%03d" % i, "wide", entry)
    ok = wait_for(lambda: len(native.bound(c, "wide-")) == 260, 120)
    writes = dra.claim_writes(c) - before
    nodes = {p["spec"]["nodeName"] for p in native.bound(c, "wide-")}
    check("a gang of 260 pods naming one claim (more than the 256 entries reservedFor may hold) "
          "is bound whole on one node", ok and len(nodes) == 1,
          "%d bound %s %s" % (len(native.bound(c, "wide-")), nodes, s.text()[-800:]))
    check("the claim is reserved for its PodGroup: one entry", reserved(c, "wide") ==
          [pg_ref(pg)], str(reserved(c, "wide"))[:300])
    check("the claim is written once for the gang (its finalizer, then allocation and "
          "reservedFor), not once per consumer", writes <= 2, "%d writes" % writes)
    for i in range(260):
        c.delete(dra.NS + "/wide-%03d" % i)


def mixed_claim(c, s):
    """One pod lists the claim as its PodGroup does, the other under another name: the
    PodGroup's entry and that pod's own (BindTo: a mismatch is a pod reservation)."""
    direct(c, "mixed", 2)
    pg = group(c, "mix", 2, [{"name": "gpus", "resourceClaimName": "mixed"}])
    member(c, "mix-0", "mix", {"name": "gpus", "resourceClaimName": "mixed"})
    member(c, "mix-1", "mix", {"name": "other", "resourceClaimName": "mixed"})
    ok = wait_for(lambda: len(native.bound(c, "mix-")) == 2, 30)
    _, p1, _ = c.get(dra.NS + "/mix-1")
    want = sorted([pg_ref(pg), ("", "pods", "mix-1", p1["metadata"]["uid"])])
    check("a claim one pod names as its PodGroup does and one under another name is reserved "
          "for the PodGroup and for that pod", ok and reserved(c, "mixed") == want,
          "%s %s" % (reserved(c, "mixed"), s.text()[-600:]))
    for i in range(2):
        c.delete(dra.NS + "/mix-%d" % i)


def rollback(c, s):
    """Both Bindings refused: the gang rolls back whole, no pod of the group is placed, so the
    PodGroup's entry leaves the claim and the allocation goes; the retry binds it. (With one
    member bound, the entry stays: that pod uses the claim, as upstream's PostFilter keeps it
    while ScheduledPodsCount is above 0.)"""
    direct(c, "rb", 2)
    entry = {"name": "gpus", "resourceClaimName": "rb"}
    c.post("/_fake/faults", [{"type": "error", "code": 422, "count": 1, "path": "/rb-%d/binding"
                              % i, "message": "injected: binding refused"} for i in range(2)])
    pg = group(c, "rb", 2, [entry])
    for i in range(2):
        member(c, "rb-%d" % i, "rb", entry)
    ok = wait_for(lambda: len(native.bound(c, "rb-")) == 2, 40)
    check("a refused Binding rolls the gang back: no pod of the group is placed, so the "
          "PodGroup's reservedFor entry is taken out and the claim, reserved for nobody, is "
          "deallocated (PostFilter's unreservePodGroupClaims)",
          "resourceclaim deallocated after its gang rolled back: claim=default/rb" in s.text(),
          s.text()[-1500:])
    check("the retry binds the gang, the claim reserved for the PodGroup again",
          ok and reserved(c, "rb") == [pg_ref(pg)], "%s %s" % (reserved(c, "rb"),
                                                             s.text()[-800:]))


def partial_rollback(c, s):
    """One Binding refused, the other done: the bound member is deleted (the gang starts whole)
    and the PodGroup's entry stays while that pod may use the claim (PostFilter keeps it while
    ScheduledPodsCount is above 0); the member made again (as its Job would), the gang is bound
    again, the claim reserved for the PodGroup."""
    direct(c, "rp", 2)
    entry = {"name": "gpus", "resourceClaimName": "rp"}
    c.post("/_fake/faults", [{"type": "error", "code": 422, "count": 1, "path": "/rp-1/binding",
                              "message": "injected: binding refused"}])
    pg = group(c, "rp", 2, [entry])
    for i in range(2):
        member(c, "rp-%d" % i, "rp", entry)
    check("one member bound, the other refused: the bound one is deleted",
          wait_for(lambda: "pod=default/rp-0 why=partial gang rolled back" in s.text(), 30),
          s.text()[-800:])
    wait_for(lambda: c.get(dra.NS + "/rp-0")[0] == 404, 30)
    member(c, "rp-0", "rp", entry)
    check("the member made again, the gang is bound whole, the claim reserved for the PodGroup",
          wait_for(lambda: len(native.bound(c, "rp-")) == 2 and reserved(c, "rp") ==
                   [pg_ref(pg)], 60), "%s %s" % (reserved(c, "rp"), s.text()[-1500:]))


def validation(c):
    """The PodGroup strategy's checks of the gated fields (scheduling/v1beta1 tags)."""
    def refused(claims, what, text):
        pg = native.podgroup(V, "bad", 1)
        pg["spec"]["resourceClaims"] = claims
        code, st, _ = c.post(native.pg_path(V), pg)
        check("a PodGroup with %s is refused (422 naming the field)" % what,
              code == 422 and text in st.get("message", ""), (code, st.get("message")))
    refused([{"name": "c%d" % i, "resourceClaimName": "x"} for i in range(5)], "5 claims",
            "spec.resourceClaims: Too many: 5: must have at most 4 items")
    refused([{"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "y"}],
            "both references", "spec.resourceClaims[0]: Invalid value: must specify exactly one")
    refused([{"name": "A", "resourceClaimName": "x"}], "a name that is no DNS label",
            "spec.resourceClaims[0].name: Invalid value")
    group(c, "val", 1, [{"name": "a", "resourceClaimName": "x"}])
    code, st, _ = c.patch(native.pg_path(V, "val") + "/status",
                          {"status": {"resourceClaimStatuses": [{"name": "b"}]}}, native.MERGE)
    check("a status entry whose name is none of the spec's is refused", code == 422 and
          "must match the name of an entry in `spec.resourceClaims`" in st.get("message", ""),
          (code, st.get("message")))
    code, st, _ = c.patch(native.pg_path(V, "val"), {"spec": {"resourceClaims": []}},
                          native.MERGE)
    check("spec.resourceClaims is immutable", code == 422 and "immutable" in
          st.get("message", ""), (code, st.get("message")))


def gate_off():
    """Without the gate a real server drops the fields on write (dropDisabledFields)."""
    e2e.TMP = os.path.join(e2e.TMP_ROOT, "dra-pg-off")
    os.makedirs(e2e.TMP, exist_ok=True)
    c = Client(e2e.start_fake(crds=(), extra=["--serve-api", "scheduling.k8s.io/" + V]))
    pg = native.podgroup(V, "off", 2)
    pg["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": "x"}]
    code, body, _ = c.post(native.pg_path(V), pg)
    check("without DRAWorkloadResourceClaims a PodGroup's spec.resourceClaims is dropped on "
          "create", code == 201 and "resourceClaims" not in body.get("spec", {}), str(body)[:300])
    code, body, _ = c.patch(native.pg_path(V, "off") + "/status",
                            {"status": {"resourceClaimStatuses": [{"name": "gpus"}]}},
                            native.MERGE)
    check("and status.resourceClaimStatuses on a status write", code == 200 and
          "resourceClaimStatuses" not in (body.get("status") or {}), str(body)[:300])


def main():
    e2e.TMP_ROOT = e2e.TMP
    c, s = start()
    template_claim(c, s)
    mixed_claim(c, s)
    rollback(c, s)
    partial_rollback(c, s)
    wide_claim(c, s)
    validation(c)
    s.stop()
    gate_off()
    e2e.finish()


if __name__ == "__main__":
    main()
