#!/usr/bin/env python3
"""tests/kube/apicheck.py: wire-level checks of the fake API server (run by test_fakeapi.sh).

Owns: the behaviours a scheduler's client depends on, checked request by request against a
running fakeapi.py started with --kubelet --kubelet-delay 0.2 --grace-cap 1 --history 200
--bookmark-interval 0.5: authentication, binding conflicts, watch semantics and 410s, paging,
optimistic concurrency, status subresources, patches, eviction with budgets, the simulated
kubelet, fault injection and counters. Prints one ok/FAIL line per check; exit 1 on a failure.
Every wait is bounded.
Usage: apicheck.py KUBECONFIG
"""

import sys
import threading
import time

from kclient import Client

failures = 0
NS = "/api/v1/namespaces/default"
PG = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
VPG = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


def check(label, cond, detail=""):
    global failures
    if cond:
        print(f"ok   {label}")
    else:
        failures += 1
        print(f"FAIL {label} {detail}")


def pod(name, labels=None, annotations=None, extra_spec=None):
    spec = {"schedulerName": "gangsched",
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    spec.update(extra_spec or {})
    meta = {"name": name, "labels": labels or {}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def binding(name, node):
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def wait_for(fn, seconds=5.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    return fn()


def phase(c, name):
    code, p, _ = c.get(f"{NS}/pods/{name}")
    return p.get("status", {}).get("phase") if code == 200 else None


def json_patch_checks(c):
    """RFC 6902 as kube-apiserver applies it (evanphx/json-patch v4 behind handlers/patch.go):
    an index out of range or an unknown op is 422 Invalid with a fixed message, the object
    untouched; never clamped, never 400."""
    jp = "application/json-patch+json"
    fin = "/metadata/finalizers"
    code, g, _ = c.patch(f"{PG}/g1", [{"op": "add", "path": fin, "value": ["a.io/x", "a.io/y"]}],
                         jp)
    check("JSON patch add of a list", code == 200 and
          g["metadata"].get("finalizers") == ["a.io/x", "a.io/y"], g)
    rv = g["metadata"]["resourceVersion"]
    invalid = "the server rejected our request due to an error in our request"
    for label, ops in (("add past the end", [{"op": "add", "path": f"{fin}/3", "value": "z"}]),
                       ("add before the start", [{"op": "add", "path": f"{fin}/-4", "value": "z"}]),
                       ("remove past the end", [{"op": "remove", "path": f"{fin}/2"}]),
                       ("replace past the end", [{"op": "replace", "path": f"{fin}/2",
                                                  "value": "z"}]),
                       ("a non-numeric index", [{"op": "add", "path": f"{fin}/x", "value": "z"}]),
                       ("an unknown op", [{"op": "merge", "path": fin, "value": []}]),
                       ("an op without op", [{"path": fin, "value": []}]),
                       ("a path under a missing member", [{"op": "add", "path": "/spec/x/y",
                                                           "value": 1}])):
        code, st, _ = c.patch(f"{PG}/g1", ops, jp)
        check(f"JSON patch with {label} is 422 Invalid", code == 422 and
              st.get("reason") == "Invalid" and st.get("message") == invalid, (code, st))
    _, g, _ = c.get(f"{PG}/g1")
    check("a refused JSON patch leaves the object as it was",
          g["metadata"]["resourceVersion"] == rv and
          g["metadata"]["finalizers"] == ["a.io/x", "a.io/y"], g["metadata"])
    code, g, _ = c.patch(f"{PG}/g1", [{"op": "add", "path": f"{fin}/2", "value": "a.io/z"},
                                      {"op": "replace", "path": f"{fin}/-1", "value": "a.io/w"},
                                      {"op": "add", "path": f"{fin}/-1", "value": "a.io/v"},
                                      {"op": "remove", "path": f"{fin}/-4"}], jp)
    check("JSON patch: index len appends, negative indices count from the end",
          code == 200 and g["metadata"]["finalizers"] == ["a.io/y", "a.io/w", "a.io/v"], g)
    code, g, _ = c.patch(f"{PG}/g1", [{"op": "replace", "path": "/spec/scheduleTimeoutSeconds",
                                       "value": 30}], jp)
    check("JSON patch replace of a missing member sets it (json-patch v4)",
          code == 200 and g["spec"].get("scheduleTimeoutSeconds") == 30, (code, g))
    code, st, _ = c.patch(f"{PG}/g1", {"op": "remove", "path": fin}, jp)
    check("a JSON patch body that is not a list is 400 BadRequest",
          code == 400 and st.get("reason") == "BadRequest", (code, st))
    code, st, _ = c.patch(f"{PG}/g1", [{"op": "test", "path": "/spec/minMember", "value": 3}]
                          * 10001, jp)
    check("a JSON patch of more than 10,000 operations is 413", code == 413, code)
    code, g, _ = c.patch(f"{PG}/g1", [{"op": "remove", "path": fin}], jp)
    check("JSON patch remove of a member", code == 200 and "finalizers" not in g["metadata"], g)


def auth_checks(c, kc):
    """Authentication: 401 without a token or with a wrong one, /version public."""
    anon = Client(kc, token="")
    wrong = Client(kc, token="not-the-token")
    code, body, _ = anon.get("/api/v1/pods")
    check("401 without a token, as a Status", code == 401 and body.get("kind") == "Status"
          and body.get("reason") == "Unauthorized", (code, body))
    code, body, _ = wrong.get("/api/v1/pods")
    check("401 with a wrong token", code == 401, code)
    code, body, _ = anon.get("/version")
    check("/version is public and says 1.32", code == 200 and body.get("minor") == "32", body)
    code, body, _ = c.get("/api/v1/nodes")
    check("200 with the token", code == 200 and body.get("kind") == "NodeList", code)


def create_checks(c):
    """Create, AlreadyExists, generateName, missing namespace."""
    code, p, _ = c.post(f"{NS}/pods", pod("a0", {"gang": "a"}))
    check("create returns 201 with uid, resourceVersion, Pending",
          code == 201 and p["metadata"].get("uid") and p["metadata"].get("resourceVersion")
          and p["status"]["phase"] == "Pending", (code, p))
    code, st, _ = c.post(f"{NS}/pods", pod("a0"))
    check("second create is 409 AlreadyExists", code == 409 and st["reason"] == "AlreadyExists",
          st)
    gen = pod("")
    gen["metadata"] = {"generateName": "gen-"}
    code, p, _ = c.post(f"{NS}/pods", gen)
    check("generateName gives a name", code == 201 and p["metadata"]["name"].startswith("gen-"))
    gen["metadata"] = {"generateName": "g" * 70 + "-"}
    code, p, _ = c.post(f"{NS}/pods", gen)
    name = p["metadata"]["name"] if code == 201 else ""
    check("a long generateName is cut to 58 characters before the 5 random ones (upstream's "
          "SimpleNameGenerator)", len(name) == 63 and name.startswith("g" * 58), (code, name))
    if name:
        c.delete(f"{NS}/pods/{name}")
    code, st, _ = c.post("/api/v1/namespaces/nope/pods", pod("x"))
    check("create in a missing namespace is 404", code == 404 and "nope" in st["message"], st)


def binding_checks(c):
    """Binding: 201, then 409 for the same and for another node; scheduling gates."""
    code, st, _ = c.post(f"{NS}/pods/a0/binding", binding("a0", "node-1"))
    check("binding returns 201 Success", code == 201 and st.get("status") == "Success", st)
    code, p, _ = c.get(f"{NS}/pods/a0")
    check("binding sets spec.nodeName and PodScheduled=True",
          p["spec"].get("nodeName") == "node-1" and any(
              x["type"] == "PodScheduled" and x["status"] == "True"
              for x in p["status"]["conditions"]), p.get("spec"))
    code, st, _ = c.post(f"{NS}/pods/a0/binding", binding("a0", "node-1"))
    check("binding again to the same node is 409", code == 409 and
          "already assigned" in st["message"], st)
    code, st, _ = c.post(f"{NS}/pods/a0/binding", binding("a0", "node-2"))
    check("binding to another node is 409 Conflict", code == 409 and st["reason"] == "Conflict"
          and st["message"].startswith('Operation cannot be fulfilled on pods/binding "a0"'), st)
    c.post(f"{NS}/pods", pod("gated", extra_spec={"schedulingGates": [{"name": "wait"}]}))
    code, st, _ = c.post(f"{NS}/pods/gated/binding", binding("gated", "node-1"))
    check("binding a gated pod is 409", code == 409 and "schedulingGates" in st["message"], st)
    code, st, _ = c.post(f"{NS}/pods/a0/binding", binding("other", "node-1"))
    check("binding with a mismatched name is 400", code == 400, code)


def kubelet_checks(c):
    """The simulated kubelet: Running, the waiting reasons of start=, Pending, run-seconds."""
    check("kubelet: a bound pod becomes Running", wait_for(lambda: phase(c, "a0") == "Running"))
    for mode, want in (("fail", "CrashLoopBackOff"), ("errimagepull", "ErrImagePull")):
        name = f"k-{mode}"
        c.post(f"{NS}/pods", pod(name, annotations={"fake.gangsched.io/start": mode}))
        c.post(f"{NS}/pods/{name}/binding", binding(name, "node-2"))

        def waiting(n=name):
            _, p, _ = c.get(f"{NS}/pods/{n}")
            cs = p.get("status", {}).get("containerStatuses") or [{}]
            return cs[0].get("state", {}).get("waiting", {}).get("reason")
        check(f"kubelet: start={mode} gives a waiting {want}", wait_for(waiting) == want,
              waiting())
    c.post(f"{NS}/pods", pod("k-pending", annotations={"fake.gangsched.io/start": "pending"}))
    c.post(f"{NS}/pods/k-pending/binding", binding("k-pending", "node-2"))
    time.sleep(0.6)
    check("kubelet: start=pending stays Pending", phase(c, "k-pending") == "Pending")
    c.post(f"{NS}/pods", pod("k-run", annotations={"fake.gangsched.io/run-seconds": "0.3"}))
    c.post(f"{NS}/pods/k-run/binding", binding("k-run", "node-2"))
    check("kubelet: run-seconds ends in Succeeded",
          wait_for(lambda: phase(c, "k-run") == "Succeeded"))
    pod_table_checks(c)


def pod_row(c, name):
    """(cells, conditions) of pod name's row as a Table (printPod, fakeapi_table.py)."""
    code, t, _ = c.request("GET", f"{NS}/pods/{name}", headers={"Accept": TABLE})
    rows = t.get("rows") if code == 200 and isinstance(t, dict) else None
    return (rows[0]["cells"], rows[0].get("conditions")) if rows else ((code, t), None)


def pod_table_checks(c):
    """printPod's STATUS, READY and RESTARTS of the simulated kubelet's pods."""
    code, t, _ = c.request("GET", f"{NS}/pods?limit=2", headers={"Accept": TABLE})
    check("pods as a Table: printPod's columns, the wide ones at priority 1", code == 200 and
          [(h["name"], h["priority"]) for h in t["columnDefinitions"]] ==
          [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1),
           ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)] and
          len(t["rows"]) == 2 and t["metadata"].get("continue"), (code, t))
    cells, _ = pod_row(c, "k-fail")
    check("a crash-looping pod: CrashLoopBackOff, 3 restarts, not ready",
          cells[1:4] == ["0/1", "CrashLoopBackOff", "3"] and cells[6] == "node-2", cells)
    cells, _ = pod_row(c, "k-errimagepull")
    check("a pod whose image does not pull: ErrImagePull", cells[2] == "ErrImagePull", cells)
    cells, conds = pod_row(c, "k-run")
    check("an ended pod: Completed, 0/1, its row's condition Completed",
          cells[1:3] == ["0/1", "Completed"] and conds and conds[0]["type"] == "Completed" and
          conds[0]["reason"] == "Succeeded", (cells, conds))
    cells, _ = pod_row(c, "a0")
    check("a running pod: 1/1 Running, its node; no IP, nominated node nor readiness gates",
          cells[1:4] == ["1/1", "Running", "0"] and cells[5] == "<none>" and
          cells[7:] == ["<none>", "<none>"] and cells[6] != "<none>", cells)


def delete_checks(c):
    """Graceful delete of a bound pod: 200 (handlers/delete.go: 202 only with
    orphanDependents=false) with deletionTimestamp, gone after the capped grace; an unbound
    pod's at once."""
    code, p, _ = c.delete(f"{NS}/pods/k-pending", {"gracePeriodSeconds": 30})
    check("delete of a bound pod is graceful (200, deletionTimestamp)",
          code == 200 and p["metadata"].get("deletionTimestamp"), (code, p.get("metadata")))
    check("kubelet: the deleted pod disappears after the capped grace period",
          wait_for(lambda: c.get(f"{NS}/pods/k-pending")[0] == 404, 4))
    code, p, _ = c.delete(f"{NS}/pods/gated")
    check("delete of an unbound pod is immediate (200)", code == 200 and
          c.get(f"{NS}/pods/gated")[0] == 404, code)


def status_subresource_checks(c):
    """Status subresource: main updates keep status, /status keeps spec."""
    _, p, _ = c.get(f"{NS}/pods/a0")
    p["status"]["phase"] = "Failed"
    p["metadata"]["labels"]["touched"] = "yes"
    code, p2, _ = c.put(f"{NS}/pods/a0", p)
    check("PUT on a pod does not change its status", code == 200 and
          p2["status"]["phase"] == "Running" and p2["metadata"]["labels"].get("touched") == "yes",
          (code, p2.get("status", {}).get("phase")))
    p2["status"]["phase"] = "Failed"
    p2["metadata"]["labels"]["touched"] = "again"
    code, p3, _ = c.put(f"{NS}/pods/a0/status", p2)
    check("PUT on pods/status changes only status", code == 200 and
          p3["status"]["phase"] == "Failed" and p3["metadata"]["labels"]["touched"] == "yes",
          (code, p3.get("status", {}).get("phase")))
    code, p4, _ = c.patch(f"{NS}/pods/a0/status",
                          {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
                          "application/strategic-merge-patch+json")
    types = [x["type"] for x in p4["status"]["conditions"]]
    check("strategic merge on pods/status merges conditions by type",
          code == 200 and "PodScheduled" in types and
          [x["status"] for x in p4["status"]["conditions"] if x["type"] == "Ready"] == ["False"],
          types)


def lease_checks(c):
    """Optimistic concurrency on a Lease."""
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "gangsched"},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0}}
    code, l1, _ = c.post(LEASES, lease)
    check("lease created", code == 201, code)
    l1["spec"]["holderIdentity"] = "b"
    code, l2, _ = c.put(f"{LEASES}/gangsched", l1)
    check("lease update with the current resourceVersion succeeds",
          code == 200 and l2["spec"]["holderIdentity"] == "b" and
          int(l2["metadata"]["resourceVersion"]) > int(l1["metadata"]["resourceVersion"]), code)
    l1["spec"]["holderIdentity"] = "c"
    code, st, _ = c.put(f"{LEASES}/gangsched", l1)  # l1 carries the old resourceVersion
    check("lease update with a stale resourceVersion is 409 Conflict",
          code == 409 and st["reason"] == "Conflict" and "has been modified" in st["message"],
          st)
    code, l3, _ = c.put(f"{LEASES}/gangsched", l2)
    check("a no-op update keeps the resourceVersion", code == 200 and
          l3["metadata"]["resourceVersion"] == l2["metadata"]["resourceVersion"], code)


def podgroup_checks(c):
    """PodGroups: /status on scheduler-plugins, none on Volcano; merge and JSON patch; 415."""
    pg = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
          "metadata": {"name": "g1"}, "spec": {"minMember": 2},
          "status": {"phase": "Running"}}
    code, g, _ = c.post(PG, pg)
    check("PodGroup create drops status (status subresource)", code == 201 and
          "status" not in g, g)
    code, g, _ = c.patch(f"{PG}/g1/status", {"status": {"phase": "Scheduling", "running": 1}},
                         "application/merge-patch+json")
    check("merge patch on podgroups/status", code == 200 and
          g["status"] == {"phase": "Scheduling", "running": 1}, g)
    code, g, _ = c.patch(f"{PG}/g1", [{"op": "test", "path": "/spec/minMember", "value": 2},
                                     {"op": "replace", "path": "/spec/minMember", "value": 3}],
                         "application/json-patch+json")
    check("JSON patch with a test op", code == 200 and g["spec"]["minMember"] == 3 and
          g["metadata"]["generation"] == 2, g)
    code, st, _ = c.patch(f"{PG}/g1", [{"op": "test", "path": "/spec/minMember", "value": 2}],
                          "application/json-patch+json")
    check("JSON patch whose test fails is 422", code == 422, code)
    json_patch_checks(c)
    code, st, _ = c.patch(f"{PG}/g1", {"spec": {"minMember": 4}},
                          "application/strategic-merge-patch+json")
    check("strategic merge patch on a CRD is 415", code == 415, code)
    vpg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
           "metadata": {"name": "v1"}, "spec": {"minMember": 2, "queue": "team-a"},
           "status": {"phase": "Pending"}}
    code, v, _ = c.post(VPG, vpg)
    check("Volcano PodGroup keeps status on create (no subresource)", code == 201 and
          v.get("status", {}).get("phase") == "Pending", v)
    code, _, _ = c.get(f"{VPG}/v1/status")
    check("Volcano podgroups/status does not exist (404)", code == 404, code)
    v["status"]["phase"] = "Running"
    code, v2, _ = c.put(f"{VPG}/v1", v)
    check("Volcano PodGroup status is written by PUT", code == 200 and
          v2["status"]["phase"] == "Running", code)
    # customResourceStrategy.PrepareForUpdate: without a status subresource every change but
    # metadata's bumps metadata.generation, the status's included
    check("a status PUT bumps generation without a status subresource",
          v2["metadata"]["generation"] == v["metadata"]["generation"] + 1, v2["metadata"])
    # structural defaulting: Volcano's CRD declares spec.queue default "default"
    code, g, _ = c.post(VPG, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                              "metadata": {"name": "vdflt"}, "spec": {"minMember": 1}})
    check("a CRD schema default is applied (Volcano spec.queue: default)",
          code == 201 and g["spec"].get("queue") == "default", (code, g))
    del v2["metadata"]["resourceVersion"]
    code, st, _ = c.put(f"{VPG}/v1", v2)
    check("a PUT of a custom object without resourceVersion is 422", code == 422 and
          "must be specified for an update" in st.get("message", ""), (code, st))


def node_affinity_checks(c):
    """A pod's node affinity is validated on create (validateNodeAffinity): a preferred term's
    weight outside 1..100 and a field selector on another field than metadata.name are 422
    naming the field; a valid pod with both kinds of terms is created."""
    na = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
              {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
          "preferredDuringSchedulingIgnoredDuringExecution": [
              {"weight": 0, "preference": {"matchExpressions": [
                  {"key": "zone", "operator": "In", "values": ["z1"]}]}}]}
    code, st, _ = c.post(f"{NS}/pods", pod("na0", extra_spec={"affinity": {"nodeAffinity": na}}))
    check("a preferred node affinity term of weight 0 is 422", code == 422 and
          "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
          "Invalid value: 0: must be in the range 1-100" in st.get("message", ""), st)
    na["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] = 100
    na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0][
        "key"] = "metadata.uid"
    code, st, _ = c.post(f"{NS}/pods", pod("na0", extra_spec={"affinity": {"nodeAffinity": na}}))
    check("a matchFields key other than metadata.name is 422", code == 422 and
          "nodeSelectorTerms[0].matchFields[0].key: Invalid value: \"metadata.uid\"" in
          st.get("message", ""), st)
    na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchFields"][0][
        "key"] = "metadata.name"
    code, st, _ = c.post(f"{NS}/pods", pod("na0", extra_spec={"affinity": {"nodeAffinity": na}}))
    check("a pod with valid required and preferred node affinity is created", code == 201, st)
    c.delete(f"{NS}/pods/na0", {"gracePeriodSeconds": 0})


def pod_terms_checks(c):
    """A pod's inter-pod terms and spreads are validated on create (validatePodAffinityTerm,
    validateWeightedPodAffinityTerms, validateTopologySpreadConstraints): a preferred term's
    weight, a ScheduleAnyway spread with minDomains and a repeated {topologyKey,
    whenUnsatisfiable} are 422 naming the field; a valid pod with all of them is created."""
    term = {"labelSelector": {"matchLabels": {"app": "web"}},
            "topologyKey": "kubernetes.io/hostname"}
    aff = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 101, "podAffinityTerm": term}]}}
    code, st, _ = c.post(f"{NS}/pods", pod("pa0", extra_spec={"affinity": aff}))
    check("a preferred pod anti-affinity term of weight 101 is 422", code == 422 and
          "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
          ".weight: Invalid value: 101: must be in the range 1-100" in st.get("message", ""), st)
    aff["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] = 100
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": {"matchLabels": {"app": "web"}}, "minDomains": 2}]
    code, st, _ = c.post(f"{NS}/pods", pod("pa0", extra_spec={
        "affinity": aff, "topologySpreadConstraints": spread}))
    check("minDomains with ScheduleAnyway is 422", code == 422 and
          "spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use "
          "minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway" in
          st.get("message", ""), st)
    del spread[0]["minDomains"]
    spread.append(dict(spread[0]))
    code, st, _ = c.post(f"{NS}/pods", pod("pa0", extra_spec={
        "affinity": aff, "topologySpreadConstraints": spread}))
    check("a repeated {topologyKey, whenUnsatisfiable} is 422", code == 422 and
          'Duplicate value: "{zone, ScheduleAnyway}"' in st.get("message", ""), st)
    spread[1]["whenUnsatisfiable"] = "DoNotSchedule"
    code, st, _ = c.post(f"{NS}/pods", pod("pa0", extra_spec={
        "affinity": aff, "topologySpreadConstraints": spread}))
    check("a pod with preferred pod anti-affinity and both kinds of spread is created",
          code == 201, st)
    c.delete(f"{NS}/pods/pa0", {"gracePeriodSeconds": 0})


def event_checks(c):
    """events.k8s.io/v1 validation."""
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "a0.1"},
          "eventTime": "2025-01-01T00:00:00.000000Z", "reportingController": "gangsched.io/s",
          "reportingInstance": "s-0", "action": "Binding", "reason": "Scheduled",
          "type": "Normal", "regarding": {"kind": "Pod", "name": "a0", "namespace": "default"}}
    code, _, _ = c.post("/apis/events.k8s.io/v1/namespaces/default/events", ev)
    check("a complete events.k8s.io Event is created", code == 201, code)
    del ev["reportingController"]
    ev["metadata"]["name"] = "a0.2"
    code, st, _ = c.post("/apis/events.k8s.io/v1/namespaces/default/events", ev)
    check("an Event without reportingController is 422 Invalid", code == 422 and
          st["reason"] == "Invalid", st)
    code, t, _ = c.request("GET", f"{NS}/events/a0.1", headers={"Accept": TABLE})
    cells = t["rows"][0]["cells"] if code == 200 and t.get("rows") else (code, t)
    check("its core/v1 view as a Table (printEvent): ages from eventTime, kind/name, the "
          "reporting controller and instance, count 1", cells[1:7] ==
          ["Normal", "Scheduled", "pod/a0", "", "gangsched.io/s, s-0", ""] and
          cells[0] == cells[7] and cells[0].endswith("d") and cells[8:] == [1, "a0.1"], cells)


def eviction_checks(c):
    """Eviction with a PodDisruptionBudget."""
    for n in ("e0", "e1"):
        c.post(f"{NS}/pods", pod(n, {"app": "ev"}))
        c.post(f"{NS}/pods/{n}/binding", binding(n, "node-3"))
    wait_for(lambda: phase(c, "e0") == "Running" and phase(c, "e1") == "Running")
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "ev"},
           "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "ev"}}}}
    c.post("/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)
    evict = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "e0"}}
    code, st, _ = c.post(f"{NS}/pods/e0/eviction", evict)
    check("eviction that would violate the budget is 429", code == 429 and
          st["details"]["causes"][0]["reason"] == "DisruptionBudget", st)
    _, p, _ = c.get("/apis/policy/v1/namespaces/default/poddisruptionbudgets/ev")
    p["spec"]["minAvailable"] = 1
    c.put("/apis/policy/v1/namespaces/default/poddisruptionbudgets/ev", p)
    code, st, _ = c.post(f"{NS}/pods/e0/eviction", evict)
    check("eviction within the budget is 201", code == 201 and st["status"] == "Success", st)
    check("the evicted pod is gone after its grace period",
          wait_for(lambda: c.get(f"{NS}/pods/e0")[0] == 404, 4))


def watch_checks(c):
    """Watch: field selector transitions, bookmarks, timeout; returns the resourceVersion
    it started from."""
    _, lst, _ = c.get("/api/v1/pods?fieldSelector=spec.nodeName%3D")
    rv = lst["metadata"]["resourceVersion"]
    w = c.watch("/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3D&allowWatchBookmarks=true"
                f"&timeoutSeconds=2&resourceVersion={rv}")
    c.post(f"{NS}/pods", pod("w0"))
    c.post(f"{NS}/pods/w0/binding", binding("w0", "node-4"))
    evs = w.all()
    kinds = [(e["type"], e["object"]["metadata"].get("name")) for e in evs
             if e["type"] != "BOOKMARK"]
    check("a spec.nodeName= watch sees ADDED then DELETED when the pod is bound",
          kinds == [("ADDED", "w0"), ("DELETED", "w0")], kinds)
    check("the watch sent BOOKMARKs", any(e["type"] == "BOOKMARK" for e in evs))
    check("the watch ended cleanly at timeoutSeconds", w.ended and not w.broken)
    return rv


def expired_version_checks(c, rv):
    """410: old versions really expire (history 200, trimmed to 200 when it passes 250:
    251 writes after rv always trim past it, whatever was written before)."""
    for i in range(130):
        c.patch(f"{NS}/pods/a0", {"metadata": {"labels": {"n": str(i)}}},
                "application/merge-patch+json")
        c.patch(f"{NS}/pods/a0", {"metadata": {"labels": {"m": str(i)}}},
                "application/merge-patch+json")
    w = c.watch(f"/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=2")
    evs = w.all()
    check("a watch from an expired resourceVersion gets HTTP 200 and an ERROR 410 event",
          w.status == 200 and len(evs) == 1 and evs[0]["type"] == "ERROR" and
          evs[0]["object"]["code"] == 410 and evs[0]["object"]["reason"] == "Expired",
          evs[:1])
    code, st, _ = c.get(f"/api/v1/pods?resourceVersion={rv}")
    check("a list at an expired resourceVersion without limit is served from the watch cache "
          "(200, at the latest version)", code == 200 and
          int(st["metadata"]["resourceVersion"]) > int(rv), (code, st.get("metadata")))
    code, st, _ = c.get(f"/api/v1/pods?resourceVersion={rv}&limit=5")
    check("with a limit it is exact, and the version expired: HTTP 410", code == 410 and
          st["reason"] == "Expired", (code, st))
    code, st, _ = c.get(f"/api/v1/pods?resourceVersion={rv}&resourceVersionMatch=Exact")
    check("resourceVersionMatch=Exact at an expired version: HTTP 410", code == 410, code)


def paging_checks(c):
    """Paging with limit and continue, across a compaction; field and label selectors."""
    code, l1, _ = c.get("/api/v1/namespaces/default/pods?limit=2")
    names = [p["metadata"]["name"] for p in l1["items"]]
    token = l1["metadata"].get("continue")
    while token:
        _, lx, _ = c.get(f"/api/v1/namespaces/default/pods?limit=2&continue={token}")
        names += [p["metadata"]["name"] for p in lx["items"]]
        token = lx["metadata"].get("continue")
    _, full, _ = c.get("/api/v1/namespaces/default/pods")
    check("limit/continue pages add up to the full list",
          names == [p["metadata"]["name"] for p in full["items"]] and len(names) > 2, names)
    c.patch(f"{NS}/pods/a0", {"metadata": {"labels": {"after": "list"}}},
            "application/merge-patch+json")
    c.post("/_fake/compact", {})
    code, _, _ = c.get(f"/api/v1/namespaces/default/pods?limit=2&continue="
                       f"{l1['metadata']['continue']}")
    check("a continue token from before a compaction is HTTP 410", code == 410, code)
    code, _, _ = c.get("/api/v1/pods?fieldSelector=spec.bogus%3Dx")
    check("an unsupported field selector is 400", code == 400, code)
    _, sel, _ = c.get("/api/v1/pods?labelSelector=app%20in%20(ev),app!%3Dzz")
    check("label selectors with in and !=",
          [p["metadata"]["name"] for p in sel["items"]] == ["e1"], sel.get("items"))


def fault_checks(c):
    """Fault injection: errors, Retry-After, delays, dropped and gone watches, conflicts."""
    c.request("DELETE", "/_fake/faults")
    c.post("/_fake/faults", {"faults": [{"type": "error", "code": 500, "count": 2,
                                         "path": "/nodes", "verb": "list"}]})
    codes = [c.get("/api/v1/nodes")[0] for _ in range(3)]
    check("error fault: 500 twice on matching requests, then 200", codes == [500, 500, 200],
          codes)
    c.post("/_fake/faults", {"type": "error", "code": 429, "retryAfter": 3})
    code, st, hdrs = c.get("/api/v1/namespaces")
    check("429 fault carries Retry-After", code == 429 and hdrs.get("Retry-After") == "3" and
          st["details"]["retryAfterSeconds"] == 3, (code, hdrs.get("Retry-After")))
    c.post("/_fake/faults", {"type": "delay", "ms": 300, "path": "/namespaces/default"})
    t0 = time.monotonic()
    c.get(f"{NS}/pods/a0")
    check("delay fault slows a matching request", time.monotonic() - t0 >= 0.3)
    c.post("/_fake/faults", {"type": "drop-watch", "afterEvents": 2})
    w = c.watch("/api/v1/pods?watch=1&timeoutSeconds=5")
    evs = w.all()
    check("drop-watch: the stream breaks after 2 events", len(evs) == 2 and w.broken,
          (len(evs), w.broken))
    c.post("/_fake/faults", {"type": "drop-watch", "afterSeconds": 0.3})
    t0 = time.monotonic()
    w = c.watch("/api/v1/nodes?watch=1&timeoutSeconds=5&resourceVersion=0")
    w.all()
    check("drop-watch afterSeconds: the stream breaks early",
          w.broken and time.monotonic() - t0 < 3)
    c.post("/_fake/faults", {"type": "gone-watch"})
    _, lst, _ = c.get("/api/v1/pods")
    w = c.watch(f"/api/v1/pods?watch=1&timeoutSeconds=5&resourceVersion="
                f"{lst['metadata']['resourceVersion']}")
    evs = w.all()
    check("gone-watch: the next watch gets ERROR 410", len(evs) == 1 and
          evs[0]["type"] == "ERROR" and evs[0]["object"]["code"] == 410, evs)
    c.post("/_fake/faults", {"type": "conflict", "path": "/leases/"})
    _, l4, _ = c.get(f"{LEASES}/gangsched")
    l4["spec"]["holderIdentity"] = "d"
    code1 = c.put(f"{LEASES}/gangsched", l4)[0]
    code2 = c.put(f"{LEASES}/gangsched", l4)[0]
    check("conflict fault: the next update is 409, the one after succeeds",
          (code1, code2) == (409, 200), (code1, code2))
    code, f, _ = c.get("/_fake/faults")
    check("all one-shot faults are spent", code == 200 and f["faults"] == [], f)


def counter_checks(c):
    """Counters and reset."""
    _, s, _ = c.get("/_fake/stats")
    check("stats count binds and bind conflicts", s["binds"] == 8 and s["bind_conflicts"] == 3,
          (s["binds"], s["bind_conflicts"]))
    check("stats count requests per verb and resource",
          s["by_resource"].get("create pods/binding", 0) >= 12 and
          s["by_resource"].get("update leases.coordination.k8s.io", 0) >= 4, s["by_resource"])
    check("stats count evictions and faults", s["evictions"] == 1 and
          s["evictions_blocked"] == 1 and s["faults_fired"] >= 7,
          (s["evictions"], s["evictions_blocked"], s["faults_fired"]))
    c.post("/_fake/reset", {})
    _, s2, _ = c.get("/_fake/stats")
    _, pods, _ = c.get("/api/v1/pods")
    check("reset empties the store and the counters", pods["items"] == [] and s2["binds"] == 0
          and s2["objects"]["namespaces"] == 4, (len(pods["items"]), s2["binds"]))


def chunked_body_check(c):
    """A chunked request body (as kubectl create --raw sends)."""
    c.post(f"{NS}/pods", pod("raw0"))
    conn = c.connect()
    conn.putrequest("POST", f"{NS}/pods/raw0/binding")
    for k, v in c.headers("application/json", {"Transfer-Encoding": "chunked"}).items():
        conn.putheader(k, v)
    conn.endheaders()
    data = b'{"apiVersion":"v1","kind":"Binding","metadata":{"name":"raw0"},' \
           b'"target":{"kind":"Node","name":"node-9"}}'
    for part in (data[:20], data[20:]):
        conn.send(b"%x\r\n%s\r\n" % (len(part), part))
    conn.send(b"0\r\n\r\n")
    r = conn.getresponse()
    r.read()
    check("a chunked request body is accepted", r.status == 201, r.status)
    conn.close()


def main(kc):
    """Every check in order against the server of kubeconfig kc; 1 if any failed."""
    c = Client(kc)
    auth_checks(c, kc)
    create_checks(c)
    binding_checks(c)
    kubelet_checks(c)
    delete_checks(c)
    status_subresource_checks(c)
    lease_checks(c)
    podgroup_checks(c)
    event_checks(c)
    node_affinity_checks(c)
    pod_terms_checks(c)
    eviction_checks(c)
    rv = watch_checks(c)
    expired_version_checks(c, rv)
    paging_checks(c)
    fault_checks(c)
    counter_checks(c)
    chunked_body_check(c)
    crd_checks(c, kc)
    upstream_checks(c)
    print(f"{failures} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


def crd(path):
    import yaml
    with open(path) as f:
        return yaml.safe_load(f)


def crd_checks(c, kc):
    """Custom resources served only while their CRD is installed; structural pruning;
    Bindings held and applied late; a pod bound by someone else first."""
    # after the reset no CRD is installed: 404 for the group, and discovery does not list it
    code, _, _ = c.get(PG)
    check("podgroups are 404 while no CRD serves them", code == 404, code)
    _, groups, _ = c.get("/apis")
    names = [g["name"] for g in groups.get("groups", [])]
    check("discovery does not list an uninstalled group", "scheduling.x-k8s.io" not in names,
          names)
    code, _, _ = c.get("/apis/scheduling.x-k8s.io")
    check("/apis/GROUP of an uninstalled group is 404", code == 404, code)
    up = crd("deploy/crds/scheduling.x-k8s.io_podgroups.yaml")
    # the upstream shape: deploy/crds adds status.conditions, scheduler-plugins' CRD has none
    up["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"][
        "properties"].pop("conditions")
    code, _, _ = c.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", up)
    check("installing the scheduler-plugins CRD (upstream shape)", code == 201, code)
    _, groups, _ = c.get("/apis")
    check("then discovery lists it", "scheduling.x-k8s.io" in
          [g["name"] for g in groups.get("groups", [])], groups)
    code, _, _ = c.get(VPG)
    check("and Volcano's, not installed, stays 404", code == 404, code)
    code, g, _ = c.post(PG, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                             "metadata": {"name": "pr"},
                             "spec": {"minMember": 2, "bogus": 1}})
    check("create prunes a spec field the schema does not declare", code == 201 and
          "bogus" not in g["spec"] and g["spec"]["minMember"] == 2, g)
    code, g, _ = c.patch(f"{PG}/pr/status", {"status": {
        "phase": "Pending", "conditions": [{"type": "Scheduled", "status": "False"}]}},
        "application/merge-patch+json")
    check("a status write keeps the declared phase and prunes undeclared conditions (200)",
          code == 200 and g["status"] == {"phase": "Pending"}, (code, g))
    table_checks(c)
    _, s, _ = c.get("/_fake/stats")
    check("what was pruned is reported", any(".status.conditions" in x and "pr" in x
                                             for x in s.get("pruned_fields", [])),
          s.get("pruned_fields"))
    code, _, _ = c.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                          "podgroups.scheduling.x-k8s.io")
    check("deleting the CRD", code == 200, code)
    code, _, _ = c.get(f"{PG}/pr")
    check("takes its objects and its paths away", code == 404, code)

    # a Binding held by the server and applied late, after its client gave up
    c.post(f"{NS}/pods", pod("late"))
    _, p0, _ = c.get(f"{NS}/pods/late")
    c.post("/_fake/faults", {"type": "hold", "path": "/pods/late/binding"})
    b = binding("late", "node-1")
    b["metadata"]["resourceVersion"] = p0["metadata"]["resourceVersion"]
    out = {}

    def send():
        c2 = Client(kc, timeout=30)
        out["r"] = c2.post(f"{NS}/pods/late/binding", b)
    t = threading.Thread(target=send)
    t.start()
    check("a held Binding is waiting", wait_for(lambda: c.get("/_fake/held")[1].get("held") == 1))
    check("and not applied yet", not c.get(f"{NS}/pods/late")[1]["spec"].get("nodeName"))
    c.patch(f"{NS}/pods/late", {"metadata": {"annotations": {"fence": "1"}}},
            "application/merge-patch+json")
    c.post("/_fake/release", {})
    t.join(10)
    code, st = out.get("r", (0, {}, None))[:2]
    check("released after a write to the pod, its resourceVersion precondition fails (409)",
          code == 409 and "Precondition failed: ResourceVersion in precondition" in
          st.get("message", ""), (code, st))
    c.post("/_fake/faults", {"type": "hold", "ms": 300, "path": "/pods/late/binding"})
    code, st, _ = c.post(f"{NS}/pods/late/binding", binding("late", "node-1"))
    check("a hold with ms applies the Binding after that time", code == 201, (code, st))

    # another scheduler binds the pod between our decision and our Binding
    c.post(f"{NS}/pods", pod("raced"))
    c.post("/_fake/faults", {"type": "foreign-bind", "node": "node-7",
                             "path": "/pods/raced/binding"})
    code, st, _ = c.post(f"{NS}/pods/raced/binding", binding("raced", "node-1"))
    check("foreign-bind: 409 already assigned to the other node", code == 409 and
          'pod raced is already assigned to node "node-7"' in st.get("message", ""), st)



TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def table_checks(c):
    """Server-side printing of a custom resource (fakeapi_table.py), on PodGroup pr of the
    upstream scheduler-plugins CRD: Name, then its additionalPrinterColumns."""
    code, t, _ = c.request("GET", PG, headers={"Accept": f"{TABLE},application/json"})
    heads = [h["name"] for h in t.get("columnDefinitions", [])] if code == 200 else t
    check("a list asked as a Table: Name and the CRD's printer columns", code == 200 and
          t.get("kind") == "Table" and t.get("apiVersion") == "meta.k8s.io/v1" and heads ==
          ["Name", "Phase", "MinMember", "Running", "Succeeded", "Failed", "Age"], (code, t))
    cells = t["rows"][0]["cells"] if code == 200 and t.get("rows") else []
    check("its row: the name, the phase, minMember, null for counts not written, an age",
          cells[:6] == ["pr", "Pending", 2, None, None, None] and cells[6].endswith("s"), cells)
    obj = t["rows"][0].get("object", {}) if cells else {}
    check("the row's object is PartialObjectMetadata by default",
          obj.get("kind") == "PartialObjectMetadata" and obj["metadata"]["name"] == "pr", obj)
    code, t, _ = c.request("GET", f"{PG}/pr?includeObject=Object",
                           headers={"Accept": "application/json;as=Table;v=v1beta1;"
                                              "g=meta.k8s.io"})
    check("one object as a v1beta1 Table with includeObject=Object", code == 200 and
          t.get("apiVersion") == "meta.k8s.io/v1beta1" and len(t.get("rows", [])) == 1 and
          t["rows"][0]["object"].get("kind") == "PodGroup", (code, t))
    code, t, _ = c.request("GET", f"{PG}?includeObject=Bogus", headers={"Accept": TABLE})
    check("includeObject of another value: 400", code == 400 and
          t.get("message") == 'unrecognized includeObject value: "Bogus"', (code, t))
    code, t, _ = c.request("GET", PG, headers={"Accept": f"application/json,{TABLE}"})
    check("plain JSON first in Accept: a list", code == 200 and t.get("kind") == "PodGroupList",
          (code, t))


PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


def upstream_checks(c):
    """Priority admission, unknown fields, Lease rules, list options, exact lists, Binding
    names (the upstream rules docs/test-api-server.md lists)."""
    priority_checks(c)
    finalizer_checks(c)
    unknown_field_checks(c)
    lease_rule_checks(c)
    list_option_checks(c)
    exact_list_checks(c)
    binding_rule_checks(c)


def priority_checks(c):
    """Priority admission (plugin/pkg/admission/priority) and the system PriorityClasses."""
    code, st, _ = c.post(f"{NS}/pods", pod("prio-raw", extra_spec={"priority": 100}))
    check("a pod giving spec.priority without a class is 403 from Priority admission",
          code == 403 and st["reason"] == "Forbidden" and "the integer value of priority (100) "
          "must not be provided in pod spec; priority admission controller computed 0" in
          st["message"], (code, st))
    code, st, _ = c.post(f"{NS}/pods", pod("prio-none", extra_spec={"priorityClassName": "x"}))
    check("a pod naming a missing PriorityClass is 403", code == 403 and
          "no PriorityClass with name x was found" in st["message"], (code, st))
    c.post(PCS, {"metadata": {"name": "high"}, "value": 1000})
    code, p, _ = c.post(f"{NS}/pods", pod("prio-high", extra_spec={"priorityClassName": "high"}))
    check("priorityClassName resolves to the class's value and preemption policy",
          code == 201 and p["spec"]["priority"] == 1000 and
          p["spec"]["preemptionPolicy"] == "PreemptLowerPriority", (code, p.get("spec")))
    code, p, _ = c.post(f"{NS}/pods", pod("prio-same", extra_spec={"priorityClassName": "high",
                                                                   "priority": 1000}))
    check("a spec.priority equal to the class's value is accepted", code == 201, code)
    code, st, _ = c.post(PCS, {"metadata": {"name": "huge"}, "value": 1000000001})
    check("a user PriorityClass above 1e9 is 422", code == 422, (code, st))
    c.post(PCS, {"metadata": {"name": "dflt"}, "value": 7, "globalDefault": True})
    code, st, _ = c.post(PCS, {"metadata": {"name": "dflt2"}, "value": 8, "globalDefault": True})
    check("a second globalDefault PriorityClass is 403", code == 403 and
          "PriorityClass dflt is already marked as default" in st["message"], (code, st))
    code, p, _ = c.post(f"{NS}/pods", pod("prio-dflt"))
    check("a pod without a class gets the globalDefault class", code == 201 and
          p["spec"]["priority"] == 7 and p["spec"]["priorityClassName"] == "dflt",
          (code, p.get("spec")))
    code, st, _ = c.put(f"{PCS}/high", dict(c.get(f"{PCS}/high")[1], value=5))
    check("a PriorityClass's value is immutable (422)", code == 422, (code, st))
    c.delete(f"{PCS}/dflt")
    # the system classes every cluster has (AddSystemPriorityClasses, SystemPriorityClasses())
    sys_pcs = {x["metadata"]["name"]: (x["value"], x.get("globalDefault", False),
                                       x.get("preemptionPolicy"))
               for x in c.get(PCS)[1]["items"] if x["metadata"]["name"].startswith("system-")}
    check("system-node-critical (2000001000) and system-cluster-critical (2000000000) exist",
          sys_pcs == {"system-node-critical": (2000001000, False, "PreemptLowerPriority"),
                      "system-cluster-critical": (2000000000, False, "PreemptLowerPriority")},
          sys_pcs)
    code, p, _ = c.post(f"{NS}/pods", pod("prio-sys", extra_spec={
        "priorityClassName": "system-cluster-critical"}))
    check("a pod naming system-cluster-critical gets priority 2000000000",
          code == 201 and p["spec"]["priority"] == 2000000000, (code, p.get("spec")))
    code, st, _ = c.delete(f"{PCS}/system-node-critical")
    check("a system PriorityClass cannot be deleted (403)", code == 403 and
          "this is a system priority class and cannot be deleted" in st["message"], (code, st))
    code, st, _ = c.post(PCS, {"metadata": {"name": "system-mine"}, "value": 5})
    check("another 'system-' PriorityClass is 422", code == 422 and
          "system-mine is not a known system priority class" in st["message"], (code, st))


def finalizer_checks(c):
    """ValidateNoNewFinalizers: no finalizer may be added to an object being deleted."""
    cm = "/api/v1/namespaces/default/configmaps"
    c.post(cm, {"metadata": {"name": "fin", "finalizers": ["example.com/a"]}})
    c.delete(f"{cm}/fin")
    code, st, _ = c.patch(f"{cm}/fin", {"metadata": {"finalizers": ["example.com/a",
                                                                    "example.com/b"]}},
                          "application/merge-patch+json")
    check("a finalizer added to an object being deleted is 422", code == 422 and
          st["message"] == 'ConfigMap "fin" is invalid: metadata.finalizers: Forbidden: no new '
          'finalizers can be added if the object is being deleted, found new finalizers '
          '[]string{"example.com/b"}', (code, st))
    code, st, _ = c.patch(f"{cm}/fin", {"metadata": {"finalizers": []}},
                          "application/merge-patch+json")
    check("removing its finalizers is allowed, and the object goes",
          code == 200 and c.get(f"{cm}/fin")[0] == 404, (code, st))


def unknown_field_checks(c):
    """Unknown fields of built-in kinds: Strict 400, Warn (the default) a Warning
    header, Ignore silent; dropped in both."""
    body = pod("uf", extra_spec={"containerz": []})
    code, st, _ = c.post(f"{NS}/pods?fieldValidation=Strict", body)
    check("Strict: an unknown field of a built-in kind is 400 strict decoding error",
          code == 400 and st["message"] == 'Pod in version "v1" cannot be handled as a Pod: '
          'strict decoding error: unknown field "spec.containerz"', (code, st))
    code, p, h = c.post(f"{NS}/pods", body)
    check("no fieldValidation is Warn: created, the field dropped, a Warning header",
          code == 201 and "containerz" not in p["spec"] and
          h.get("Warning") == '299 - "unknown field \\"spec.containerz\\""', (code, h))
    body["metadata"]["name"] = "uf2"
    code, p, h = c.post(f"{NS}/pods?fieldValidation=Ignore", body)
    check("Ignore: dropped silently", code == 201 and "containerz" not in p["spec"] and
          "Warning" not in h, (code, h))


def lease_rule_checks(c):
    """Leases: PUT needs a resourceVersion; leaseDurationSeconds > 0; MicroTime has 6
    digits."""
    lease = {"metadata": {"name": "l2"}, "spec": {"holderIdentity": "a",
                                                  "leaseDurationSeconds": 15}}
    code, l2, _ = c.put(f"{LEASES}/l2", lease)
    check("a PUT creates a missing Lease (201)", code == 201, (code, l2))
    l2["metadata"].pop("resourceVersion", None)
    code, st, _ = c.put(f"{LEASES}/l2", l2)
    check("a Lease PUT without resourceVersion is 422 (AllowUnconditionalUpdate false)",
          code == 422 and "metadata.resourceVersion: Invalid value: 0x0: must be specified for "
          "an update" in st["message"], (code, st))
    lease = {"metadata": {"name": "l3"}, "spec": {"leaseDurationSeconds": 0}}
    code, st, _ = c.post(LEASES, lease)
    check("leaseDurationSeconds 0 is 422 must be greater than 0", code == 422 and
          "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0" in st["message"],
          (code, st))
    lease["spec"] = {"leaseDurationSeconds": 5, "renewTime": "2026-01-01T00:00:00.123Z"}
    code, st, _ = c.post(LEASES, lease)
    check("a MicroTime with 3 fraction digits is 400", code == 400 and
          "cannot be handled as a Lease" in st["message"], (code, st))
    lease["spec"]["renewTime"] = "2026-01-01T00:00:00.123456Z"
    check("with 6 it is accepted", c.post(LEASES, lease)[0] == 201)


def list_option_checks(c):
    """List and watch options (ValidateListOptions): 422 Invalid on
    ListOptions.meta.k8s.io."""
    w = c.watch("/api/v1/pods?watch=1&sendInitialEvents=true&timeoutSeconds=1")
    w.all()
    check("sendInitialEvents without resourceVersionMatch=NotOlderThan is 422", w.status == 422,
          w.status)
    code, st, _ = c.get("/api/v1/pods?resourceVersionMatch=Exact")
    check("resourceVersionMatch without resourceVersion is 422", code == 422 and
          'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden' in
          st["message"], (code, st))


def exact_list_checks(c):
    """An exact list shows the state at that version, not the latest."""
    _, before, _ = c.get(f"{NS}/pods")
    c.patch(f"{NS}/pods/prio-high", {"metadata": {"labels": {"later": "yes"}}},
            "application/merge-patch+json")
    c.delete(f"{NS}/pods/prio-same")
    rv = before["metadata"]["resourceVersion"]
    code, l, _ = c.get(f"{NS}/pods?resourceVersion={rv}&resourceVersionMatch=Exact")
    items = {p["metadata"]["name"]: p for p in l.get("items", [])}
    check("resourceVersionMatch=Exact lists the objects as they were at that version",
          code == 200 and l["metadata"]["resourceVersion"] == rv and "prio-same" in items and
          "later" not in (items.get("prio-high", {})["metadata"].get("labels") or {}),
          (code, sorted(items)))
    code, st, _ = c.get(f"{NS}/pods?resourceVersion=99999999&resourceVersionMatch=NotOlderThan")
    check("a resourceVersion not reached yet is 504 Too large resource version", code == 504 and
          "Too large resource version" in st["message"], (code, st))


def binding_rule_checks(c):
    """Binding: an empty metadata.name is 400; a failed precondition is a conflict on
    "pods"."""
    code, st, _ = c.post(f"{NS}/pods/prio-high/binding",
                         {"apiVersion": "v1", "kind": "Binding", "metadata": {},
                          "target": {"kind": "Node", "name": "node-1"}})
    check("a Binding with an empty metadata.name is 400", code == 400 and
          "name in URL does not match name in Binding object" in st["message"], (code, st))
    b = binding("prio-high", "node-1")
    b["metadata"]["uid"] = "not-its-uid"
    code, st, _ = c.post(f"{NS}/pods/prio-high/binding", b)
    check("a Binding's failed uid precondition reads as the storage error",
          code == 409 and st["message"].startswith(
              'Operation cannot be fulfilled on pods "prio-high": StorageError: invalid object, '
              'Code: 4, Key: /registry/pods/default/prio-high, ResourceVersion: 0, '
              'AdditionalErrorMsg: Precondition failed: UID in precondition: not-its-uid'),
          (code, st))
    code, st, _ = c.delete(f"{NS}/pods/prio-high", {"preconditions": {"uid": "x"}})
    check("so does a delete's", code == 409 and "StorageError: invalid object, Code: 4" in
          st["message"], (code, st))
    code, st, _ = c.delete(f"{NS}/pods/prio-high", {"gracePeriodSeconds": 0,
                                                    "orphanDependents": False})
    check("a delete done at once is 200 even with orphanDependents=false", code == 200, code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
