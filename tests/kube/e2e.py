"""tests/kube/e2e.py: end-to-end tests of `gangsched run` against the fake API server.

Owns: starting the fake API server (TLS, token, simulated kubelet) and one or two scheduler
processes on loopback, creating nodes, PodGroups and pods through the API, and checking what a
user would see: gangs bound whole (distinct nodes, one rack, GPU ids), PodGroup status and
Events, gangs that wait with a readable reason, informers that list in pages when the server
refuses a streaming list (the WatchList gate off), the Volcano API, crash-and-restart in the middle
of a bind (no partial gang, nothing bound twice), leader election with fail-over, and every
injected fault survived. Every wait is bounded; processes are killed on exit.

Run by tests/kube/test_e2e.sh; prints "ok ..." / "FAIL ..." lines and exits 1 on any failure.
"""

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from kclient import Client  # noqa: E402

BIN = os.environ.get("BIN", "bin")
TMP = tempfile.mkdtemp(prefix="gangsched-e2e-")
failures = 0
failed = []  # labels of the failed checks, repeated at the end of the output
procs = []

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
cohorts:
  - name: all
queues:
  - name: team-a
    cohort: all
    quota:
      default:
        nvidia.com/gpu: 32
  - name: team-b
    cohort: all
"""


def ok(msg):
    print("ok   " + msg, flush=True)


def bad(msg):
    global failures
    failures += 1
    failed.append(msg[:300])
    print("FAIL " + msg, flush=True)


def check(label, cond, detail=""):
    if cond:
        ok(label)
    else:
        bad(label + (": " + detail if detail else ""))


def wait_for(fn, timeout=20.0, step=0.1):
    """Polls fn() until it returns a true value or the timeout passes; returns the last value."""
    end = time.time() + timeout
    v = fn()
    while not v and time.time() < end:
        time.sleep(step)
        v = fn()
    return v


CRDS = {"xk8s": "deploy/crds/scheduling.x-k8s.io_podgroups.yaml",
        "volcano": "deploy/crds/scheduling.volcano.sh_podgroups.yaml"}


def start_fake(grace_cap="0.5", crds=("xk8s", "volcano"), extra=()):
    """The server with the PodGroup CRDs of deploy/crds/ named in crds installed (the others
    are 404, as on a cluster without them)."""
    d = os.path.join(TMP, "fake")
    os.makedirs(d, exist_ok=True)
    port_file = os.path.join(d, "port")
    log = open(os.path.join(d, "log"), "w")
    p = subprocess.Popen([sys.executable, "tests/kube/fakeapi.py", "--port", "0",
                          "--port-file", port_file, "--kubeconfig-out",
                          os.path.join(d, "kubeconfig"), "--token", "e2e-token",
                          "--state-dir", d, "--kubelet", "--kubelet-delay", "0.2",
                          "--grace-cap", grace_cap] +
                         [x for k in crds for x in ("--load", CRDS[k])] + list(extra),
                         stdout=log, stderr=log)
    procs.append(p)
    if not wait_for(lambda: os.path.exists(port_file) and os.path.getsize(port_file) > 0):
        bad("the fake API server did not start")
        finish()
    return os.path.join(d, "kubeconfig")


def start_with_config(config, **kw):
    """start_fake(**kw), the scheduler config `config` and the operator token written to TMP;
    returns a Client of the server."""
    kubeconfig = start_fake(**kw)
    with open(os.path.join(TMP, "config.yaml"), "w") as f:
        f.write(config)
    with open(os.path.join(TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    return kubeconfig, Client(kubeconfig)


def start_one(config, node_name="gpu-1", **kw):
    """start_with_config(config, **kw), one 8-GPU node and a scheduler "sched" that leads:
    (kubeconfig, client, scheduler, its database path)."""
    kubeconfig, c = start_with_config(config, **kw)
    c.post("/api/v1/nodes", node(node_name, "r1"))
    db = os.path.join(TMP, "gangsched.db")
    s = Sched(kubeconfig, "sched", db)
    check("the scheduler leads", wait_for(s.leading, 20))
    return kubeconfig, c, s, db


class Sched:
    """One `gangsched run` process with its own log; all share one database file."""

    def __init__(self, kubeconfig, name, db, extra=()):
        self.name = name
        self.log_path = os.path.join(TMP, name + ".log")
        self.log = open(self.log_path, "w")
        self.port_file = os.path.join(TMP, name + ".port")
        self.p = subprocess.Popen([os.path.join(BIN, "gangsched"), "run", "--kubeconfig",
                                   kubeconfig, "--config", os.path.join(TMP, "config.yaml"),
                                   "--db", db, "--identity", name, "--lease-namespace",
                                   "default", "--cycle-ms", "50", "--listen", "127.0.0.1:0",
                                   "--port-file", self.port_file, "--token-file",
                                   os.path.join(TMP, "write.tok")] + list(extra), stdout=self.log,
                                  stderr=self.log)
        procs.append(self.p)

    def url(self):
        if not wait_for(lambda: os.path.exists(self.port_file), 10):
            return "http://127.0.0.1:1"
        with open(self.port_file) as f:
            return "http://127.0.0.1:%s" % f.read().strip()

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def leading(self):
        return "became leader" in self.text()

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


def http_get(url):
    """(status, body text) of a plain GET, bounded in time."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def gangctl(*args, token=False):
    cmd = [os.path.join(BIN, "gangctl")] + list(args)
    if token:
        cmd[1:1] = ["--token-file", os.path.join(TMP, "write.tok")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


def job(url, name, every=False):
    """The job row of default/NAME in `gangctl jobs -o json` (every: --all, finished ones too),
    or None."""
    rc, out = gangctl("--server", url, "jobs", "-o", "json", *(["--all"] if every else []))
    if rc != 0:
        return None
    for j in json.loads(out).get("jobs", []):
        if j.get("job") == "default/" + name:
            return j
    return None


def cycles(url):
    """Cycles the scheduler at url has run so far (the count of gangsched_cycle_cpu_seconds in
    /metrics: one per cycle, built or not), or -1."""
    st, text = http_get(url + "/metrics")
    for line in text.splitlines() if st == 200 else []:
        if line.startswith("gangsched_cycle_cpu_seconds_count"):
            return int(float(line.split()[-1]))
    return -1


def finish():
    for p in reversed(procs):  # schedulers first, so that they can release the Lease
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
    if failures:
        for name in sorted(os.listdir(TMP)):
            if name.endswith(".log"):
                print("---- " + name)
                with open(os.path.join(TMP, name)) as f:
                    print("".join(f.readlines()[-25:]))
        for f in failed:
            print("FAILED: " + f)
        print("%d check(s) failed" % failures)
        sys.exit(1)
    sys.exit(0)


def run(main_fn):
    """Runs a scenario script's main: a crash of the test itself is a failure, with its trace;
    every process it started is killed at the end."""
    try:
        main_fn()
    except Exception as exc:
        import traceback
        traceback.print_exc()
        bad("the test raised %r" % exc)
        finish()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def node(name, rack, gpus=8):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name,
                "network.topology.gangsched.io/rack": rack,
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
            "status": {"allocatable": {"cpu": "96", "memory": "1000Gi", "pods": "110",
                                       "nvidia.com/gpu": str(gpus)},
                       "capacity": {"cpu": "96", "memory": "1000Gi", "pods": "110",
                                    "nvidia.com/gpu": str(gpus)},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def podgroup(name, min_member, queue="team-a", volcano=False, ns="default"):
    if volcano:
        return ("/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups" % ns,
                {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": ns},
                 "spec": {"minMember": min_member, "queue": queue}})
    return ("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups" % ns,
            {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": ns,
                          "labels": {"gangsched.io/queue": queue}},
             "spec": {"minMember": min_member}})


def pod(name, group, gpus, volcano=False, ns="default"):
    meta = {"name": name, "namespace": ns}
    if volcano:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    elif group:
        meta["labels"] = {"scheduling.x-k8s.io/pod-group": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"schedulerName": "gangsched", "restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "trainer",
                                     "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def priority_class(c, value):
    """The name of a PriorityClass of `value`, made if missing. A real API server's Priority
    admission refuses a pod (or native PodGroup) that gives spec.priority without a class of
    that value: tests name a class in spec.priorityClassName, and admission fills
    spec.priority (0 needs no class: the priority when no globalDefault class exists)."""
    name = "prio-%s" % (str(value) if value >= 0 else "minus-%d" % -value)
    code, st, _ = c.post("/apis/scheduling.k8s.io/v1/priorityclasses",
                         {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                          "metadata": {"name": name}, "value": value})
    if code not in (201, 409):
        raise RuntimeError("creating PriorityClass %s: %s %s" % (name, code, st))
    return name


def with_priority(c, body, value):
    """body (a pod or a native PodGroup) at priority `value`, as priority_class says."""
    if value:
        body["spec"]["priorityClassName"] = priority_class(c, value)
    return body


def gang(c, name, n_pods, gpus, min_member=None, volcano=False):
    path, pg = podgroup(name, min_member or n_pods, volcano=volcano)
    c.post(path, pg)
    for i in range(n_pods):
        c.post("/api/v1/namespaces/default/pods", pod("%s-%d" % (name, i), name, gpus, volcano))


def pods_of(c, name):
    _, items, _ = c.get("/api/v1/namespaces/default/pods")
    return [p for p in items["items"] if p["metadata"]["name"].startswith(name + "-")]


def bound(c, name):
    """Members bound to a node and not being deleted."""
    return [p for p in pods_of(c, name)
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]


def kubectl_table(kubeconfig, *args):
    """The rows of `kubectl get ARGS` as the real kubectl prints the server's Table: one dict
    per row, header -> cell (a column's header may hold single spaces; a blank cell is "")."""
    r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "get"] + list(args),
                       capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    if not lines:
        return []
    heads = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", lines[0])]
    rows = []
    for ln in lines[1:]:
        row = {}
        for x, (a, h) in enumerate(heads):
            row[h] = ln[a:heads[x + 1][0] if x + 1 < len(heads) else None].strip()
        rows.append(row)
    return rows


def pg_status(c, name, volcano=False):
    path, _ = podgroup(name, 1, volcano=volcano)
    st, obj, _ = c.get(path + "/" + name)
    return obj.get("status", {}) if st == 200 else {}


def pg_annotations(c, name):
    """The annotations of scheduler-plugins PodGroup default/name ({} when absent)."""
    path, _ = podgroup(name, 1)
    st, obj, _ = c.get(path + "/" + name)
    return (obj.get("metadata", {}).get("annotations") or {}) if st == 200 else {}


def rfc3339(t):
    """Seconds since the epoch as the daemon writes its annotations (microseconds, UTC)."""
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def events_for(c, name):
    _, items, _ = c.get("/apis/events.k8s.io/v1/namespaces/default/events")
    return [e for e in items["items"] if e.get("regarding", {}).get("name") == name]


def first_rv(c, path, rv0, pred):
    """{name: resourceVersion of the first watch event on path since rv0 for which pred(object)
    gives that name} (the order in which the server committed writes)."""
    w = c.watch(path + "?watch=1&resourceVersion=%s&timeoutSeconds=1" % rv0)
    out = {}
    for ev in w.all():
        o = ev.get("object") or {}
        name = pred(o)
        if name and name not in out:
            out[name] = int(o["metadata"]["resourceVersion"])
    w.close()
    return out


def rack_of(node_name):
    return {"gpu-1": "r1", "gpu-2": "r1", "gpu-3": "r2", "gpu-4": "r2"}.get(node_name)


def start_cluster():
    """The fake API server with CONFIG and the operator token, four nodes in two racks and
    scheduler sched-a leading: (kubeconfig, client, scheduler, its database file). The server
    has the WatchList gate off, as kube-apiserver 1.33 has by default: every informer's streaming
    list is refused (422) and the daemon lists in pages, so this test runs the paged path and
    the others the streaming one."""
    kubeconfig = start_fake(extra=["--feature-gates", "WatchList=false"])
    with open(os.path.join(TMP, "config.yaml"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    c.post("/api/v1/nodes", node("gpu-1", "r1"))
    c.post("/api/v1/nodes", node("gpu-3", "r2"))
    c.post("/api/v1/nodes", node("gpu-2", "r1"))
    c.post("/api/v1/nodes", node("gpu-4", "r2"))
    db = os.path.join(TMP, "gangsched.db")
    a = Sched(kubeconfig, "sched-a", db)
    check("the scheduler becomes leader", wait_for(a.leading, 20))
    check("with the WatchList gate off, its informers list in pages (the streaming list refused)",
          "streaming list refused (HTTP 422" in a.text(), a.text()[-600:])
    if a.p.poll() is not None:
        bad("the scheduler exited: " + a.text()[-400:])
        finish()
    return kubeconfig, c, a, db


def bound_gang(c):
    """1. A 2-node gang is bound whole, in one rack, with GPU ids, status and an event."""
    gang(c, "train", 2, 8)
    got = wait_for(lambda: len(bound(c, "train")) == 2, 20)
    check("a 2 x 8-GPU gang is bound whole", got, "%d bound" % len(bound(c, "train")))
    b = bound(c, "train")
    nodes = sorted(p["spec"]["nodeName"] for p in b)
    check("on two distinct nodes of one rack", len(set(nodes)) == 2 and
          len({rack_of(n) for n in nodes}) == 1, str(nodes))
    ids = [p["metadata"].get("annotations", {}).get("gangsched.io/gpu-ids") for p in b]
    check("each pod carries gangsched.io/gpu-ids 0..7", ids == ["0,1,2,3,4,5,6,7"] * 2, str(ids))
    st = wait_for(lambda: pg_status(c, "train").get("phase") == "Running", 10)
    check("PodGroup phase Running with a Scheduled condition", st and
          pg_status(c, "train").get("conditions", [{}])[0].get("reason") == "Scheduled",
          json.dumps(pg_status(c, "train")))
    ev = wait_for(lambda: [e for e in events_for(c, "train") if e["reason"] == "Scheduled"], 10)
    check("an events.k8s.io Event Scheduled about the PodGroup", ev)
    if ev:
        e = ev[0]
        check("the Event has every required field",
              all(e.get(k) for k in ("eventTime", "reportingController", "reportingInstance",
                                     "action", "reason", "type", "note")), json.dumps(e))
    ran = wait_for(lambda: all(p.get("status", {}).get("phase") == "Running"
                               for p in pods_of(c, "train")), 10)
    check("the kubelet runs both pods", ran)


def unfit_gang(c):
    """2. A gang that cannot fit stays unbound with a readable reason."""
    gang(c, "huge", 2, 16)
    # a cycle may see it before its second pod (WaitingForPods): wait for the reason it keeps
    cond = wait_for(lambda: [x for x in pg_status(c, "huge").get("conditions", [])
                             if x.get("reason") == "Unschedulable"], 30)
    msg = cond[0].get("message", "") if cond else ""
    check("a gang that cannot fit has condition Unschedulable",
          cond and cond[0].get("reason") == "Unschedulable", json.dumps(cond))
    check("its message says which resource is short", "nvidia.com/gpu" in msg, msg)
    check("and none of its pods is bound", len(bound(c, "huge")) == 0)


def nodes_once_bound(c, gangs, timeout=20):
    """The node of the first bound pod of each of `gangs` once all have one (None for a gang
    still unbound after `timeout` seconds)."""
    wait_for(lambda: all(bound(c, g) for g in gangs), timeout)
    return [b[0]["spec"]["nodeName"] if b else None for b in (bound(c, g) for g in gangs)]


def pod_constraints(c):
    """2b. Required inter-pod anti-affinity is honoured (two pods of one gang that must not share
    a node go to two, where packing would use one), a DoNotSchedule topology spread that cannot
    hold keeps its gang waiting with the reason, a namespaceSelector selects the pods of the
    namespaces whose labels it names, preferred node affinity orders the nodes, and preferred pod
    anti-affinity and ScheduleAnyway spreads part a gang's pods."""
    path, pg = podgroup("anti", 2)
    c.post(path, pg)
    for i in range(2):
        p = pod("anti-%d" % i, "anti", 1)
        p["metadata"]["labels"]["app"] = "anti"
        p["spec"]["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "anti"}},
                "topologyKey": "kubernetes.io/hostname"}]}}
        c.post("/api/v1/namespaces/default/pods", p)
    got = wait_for(lambda: len(bound(c, "anti")) == 2, 20)
    nodes = sorted(p["spec"]["nodeName"] for p in bound(c, "anti"))
    check("a gang whose pods have required anti-affinity to each other is bound on two nodes",
          got and len(set(nodes)) == 2, str(nodes))
    path3, pg3 = podgroup("spr", 2)
    c.post(path3, pg3)
    for i in range(2):
        p = pod("spr-%d" % i, "spr", 1)
        p["metadata"]["labels"]["app"] = "spr"
        p["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "network.topology.gangsched.io/rack",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "spr"}}}]
        c.post("/api/v1/namespaces/default/pods", p)
    # rack r1 is full (train): both pods would go to r2, two more than r1's none
    cond = wait_for(lambda: [x for x in pg_status(c, "spr").get("conditions", [])
                             if x.get("reason") == "Unschedulable"], 30)
    msg = cond[0].get("message", "") if cond else ""
    check("a gang whose spread over racks cannot hold waits, and its reason names the spread",
          "topology spread" in msg and not bound(c, "spr"), msg)
    # namespaceSelector: pods labelled app=x, one per namespace team-a (gpu-3) and team-b
    # (gpu-4), bound by another scheduler; a term selecting team=a keeps off gpu-3 only, one
    # selecting team=b off gpu-4 only (packing alone would put both pods on one node)
    for t, n in (("a", "gpu-3"), ("b", "gpu-4")):
        c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                      "metadata": {"name": "team-" + t, "labels": {"team": t}}})
        c.post("/api/v1/namespaces/team-%s/pods" % t, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "x", "namespace": "team-" + t, "labels": {"app": "x"}},
            "spec": {"nodeName": n, "containers": [{"name": "main", "image": "web"}]}})
    nsel = []
    for t in ("a", "b"):
        path2, pg2 = podgroup("nsel-" + t, 1)
        c.post(path2, pg2)
        nsel.append(("nsel-" + t, path2))
        p = pod("nsel-%s-0" % t, "nsel-" + t, 1)
        p["spec"]["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "x"}},
                "topologyKey": "kubernetes.io/hostname",
                "namespaceSelector": {"matchLabels": {"team": t}}}]}}
        c.post("/api/v1/namespaces/default/pods", p)
    on = nodes_once_bound(c, ("nsel-a", "nsel-b"))
    check("a namespaceSelector keeps a pod off the nodes of the pods of the namespaces it selects",
          on == ["gpu-4", "gpu-3"], str(on))
    # preferred node affinity: two one-GPU pods, each preferring another r2 node by name
    # (matchFields), go one to each, where packing alone would put both on one node
    for t, n in (("a", "gpu-3"), ("b", "gpu-4")):
        path2, pg2 = podgroup("pref-" + t, 1)
        c.post(path2, pg2)
        nsel.append(("pref-" + t, path2))
        p = pod("pref-%s-0" % t, "pref-" + t, 1)
        p["spec"]["affinity"] = {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 60, "preference": {"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [n]}]}},
                {"weight": 40, "preference": {"matchExpressions": [
                    {"key": "network.topology.gangsched.io/rack", "operator": "In",
                     "values": ["r2"]}]}}]}}
        c.post("/api/v1/namespaces/default/pods", p)
    on = nodes_once_bound(c, ("pref-a", "pref-b"))
    check("preferred node affinity puts each pod on the node it prefers most",
          on == ["gpu-3", "gpu-4"], str(on))
    # preferred pod anti-affinity among a gang's own pods and a ScheduleAnyway spread: two
    # one-GPU pods go to two nodes, where packing alone would put both on one
    path2, pg2 = podgroup("soft", 2)
    c.post(path2, pg2)
    nsel.append(("soft", path2))
    for i in range(2):
        p = pod("soft-%d" % i, "soft", 1)
        p["metadata"]["labels"]["app"] = "soft"
        sel = {"matchLabels": {"app": "soft"}}
        p["spec"]["affinity"] = {"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                "labelSelector": sel, "topologyKey": "kubernetes.io/hostname"}}]}}
        p["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel}]
        c.post("/api/v1/namespaces/default/pods", p)
    wait_for(lambda: len(bound(c, "soft")) == 2, 20)
    nodes = sorted(p["spec"]["nodeName"] for p in bound(c, "soft"))
    check("pods that prefer apart from each other (preferred anti-affinity, ScheduleAnyway) "
          "are bound on two nodes", len(nodes) == 2 and len(set(nodes)) == 2, str(nodes))
    for t in ("a", "b"):
        c.delete("/api/v1/namespaces/team-%s/pods/x" % t, {"gracePeriodSeconds": 0})
    for name, pth in [("anti", path), ("spr", path3)] + nsel:
        for p in pods_of(c, name):
            c.delete("/api/v1/namespaces/default/pods/" + p["metadata"]["name"],
                     {"gracePeriodSeconds": 0})
        c.delete(pth + "/" + name)
    check("... and they are gone again",
          wait_for(lambda: not pods_of(c, "anti") and not pods_of(c, "spr")
                   and not any(pods_of(c, name) for name, _ in nsel), 10))


def below_min_member(c, a):
    """3. A gang below minMember waits for its pods, and gangctl jobs says so."""
    gang(c, "partial", 2, 1, min_member=3)
    cond = wait_for(lambda: [x for x in pg_status(c, "partial").get("conditions", [])
                             if "2 of minMember 3" in x.get("message", "")], 12)
    check("a gang below minMember waits with WaitingForPods",
          cond and cond[0].get("reason") == "WaitingForPods" and
          "2 of minMember 3" in cond[0].get("message", ""), json.dumps(cond))
    listed = wait_for(lambda: "default/partial" in gangctl("--server", a.url(), "jobs")[1], 10)
    rc, out = gangctl("--server", a.url(), "jobs")
    check("gangctl jobs lists the gang waiting for its pods, with the reason",
          listed and re.search(r"default/partial .*pending .*waiting: 2 of minMember 3 pods exist "
                               r"\(WaitingForPods\)", out), out)
    c.post("/api/v1/namespaces/default/pods", pod("partial-2", "partial", 1))
    check("and is bound once its third pod exists",
          wait_for(lambda: len(bound(c, "partial")) == 3, 20))
    # the Binding replaces PodScheduled as UpdatePodCondition does: the waiting reason goes
    sched = [x for p in pods_of(c, "partial") for x in p.get("status", {}).get("conditions", [])
             if x.get("type") == "PodScheduled"]
    check("its pods' PodScheduled is True, without the reason they waited for",
          len(sched) == 3 and all(x.get("status") == "True" and "reason" not in x and
                                  "message" not in x for x in sched), json.dumps(sched))
    rc, out = gangctl("--server", a.url(), "jobs", "-o", "json")
    row = [j for j in (json.loads(out).get("jobs", []) if rc == 0 else [])
           if j["job"] == "default/partial"]
    check("its job row then has its GPUs and no reason",
          row and row[0]["gpus"] == 3 and row[0]["why"] is None, out[:600])


def volcano_gang(c):
    """4. The Volcano API: membership by annotation, queue in the spec, status by PUT."""
    gang(c, "vc", 2, 2, volcano=True)
    check("a Volcano gang is bound whole", wait_for(lambda: len(bound(c, "vc")) == 2, 20))
    check("its PodGroup status is written (phase Running)",
          wait_for(lambda: pg_status(c, "vc", volcano=True).get("phase") == "Running", 10),
          json.dumps(pg_status(c, "vc", volcano=True)))


def http_endpoints(a, url):
    """The daemon's HTTP API at url: health, hang-ups, readiness, metrics."""
    check("/healthz answers 200", http_get(url + "/healthz")[0] == 200)
    # clients that hang up mid-answer (tests/tools/hangup.py) must not kill the scheduler with
    # SIGPIPE (exit 141 before it ignored the signal)
    hang = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "tools",
                                                        "hangup.py"), url.rsplit(":", 1)[1],
                           "40", "50", "/metrics"], capture_output=True, text=True, timeout=60)
    check("40 clients hanging up mid-answer leave the scheduler running and leading",
          hang.returncode == 0 and a.p.poll() is None and http_get(url + "/readyz")[0] == 200,
          "hangup: %s; scheduler exit %s" % (hang.stdout.strip(), a.p.poll()))
    check("/readyz answers 200 once synced and leading", http_get(url + "/readyz")[0] == 200,
          str(http_get(url + "/readyz")))
    st, text = http_get(url + "/metrics")
    check("/metrics has the daemon's families",
          st == 200 and "gangsched_binds_total{result=\"bound\"}" in text and
          "gangsched_cycle_duration_seconds_bucket" in text and "gangsched_leader 1" in text,
          text[:400])
    promtool = subprocess.run(["sh", "-c", "command -v promtool"], capture_output=True)
    if promtool.returncode == 0:
        r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=30)
        check("promtool check metrics accepts /metrics", r.returncode == 0, r.stdout + r.stderr)
    else:
        bad("promtool is not installed (make test-deps installs Debian's prometheus)")


def gangctl_reads(url):
    """gangctl jobs and explain against the daemon at url; one decision row per reason."""
    rc, out = gangctl("--server", url, "jobs", "-A")
    check("gangctl jobs -A lists the bound gang", rc == 0 and "default/train" in out, out)
    rc, out = gangctl("--server", url, "explain", "default/huge")
    check("gangctl explain says why a gang waits", rc == 0 and "nvidia.com/gpu" in out, out)
    rc, out = gangctl("--server", url, "explain", "default/huge", "-o", "json")
    try:
        doc = json.loads(out)
        decs = doc["decisions"]
    except (ValueError, KeyError):
        doc, decs = {}, []
    # its PodGroup and pods arrive one by one: a cycle may see the gang incomplete first (a
    # "waiting" row: another reason, the pods it waits for); then one row for its one reason,
    # however many cycles it waits (every cycle since has examined it)
    why = doc.get("job", {}).get("why")
    mine = [d for d in decs if d.get("why") == why]
    check("a gang waiting many cycles for one reason has one decision row, not one per cycle",
          rc == 0 and why and len(mine) == 1 and doc.get("decisions_total") == len(decs) and
          all(d.get("why") == "waiting" for d in decs if d.get("why") != why), out[:600])
    check("and jobs shows that reason (its newest row)", decs and decs[0].get("why") == why,
          out[:600])


def queue_hold(c, url):
    """Holding a queue with gangctl (the token needed): its gangs wait with QueueHeld
    until it is resumed; an unknown queue is an error."""
    rc, out = gangctl("--server", url, "queue", "hold", "team-b")
    check("an operator write without a token is refused (exit 3)", rc == 3, out)
    rc, out = gangctl("--server", url, "queue", "hold", "team-b", token=True)
    check("gangctl queue hold team-b with the token", rc == 0, out)
    rc, out = gangctl("--server", url, "queues", "-o", "json")
    try:
        adm = {q["name"]: q.get("admission") for q in json.loads(out)["queues"]}
    except (ValueError, KeyError):
        adm = {}
    check("gangctl queues shows team-b held", adm.get("team-b") == "held" and
          adm.get("team-a") == "open", out[:400])
    c.post("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
           podgroup("heldjob", 1, queue="team-b")[1])
    c.post("/api/v1/namespaces/default/pods", pod("heldjob-0", "heldjob", 1))
    cond = wait_for(lambda: pg_status(c, "heldjob").get("conditions"), 10)
    check("a gang of a held queue waits with QueueHeld",
          cond and cond[0].get("reason") == "QueueHeld", json.dumps(cond))
    check("and is not bound", not bound(c, "heldjob"))
    held_row = wait_for(lambda: "default/heldjob" in gangctl("--server", url, "jobs", "-q",
                                                             "team-b")[1], 10)
    rc, out = gangctl("--server", url, "jobs", "-q", "team-b")
    check("gangctl jobs lists the gang of the held queue, REASON held",
          held_row and re.search(r"default/heldjob .*pending .*held: queue team-b is held",
                                 out), out)
    rc, out = gangctl("--server", url, "explain", "default/heldjob")
    check("gangctl explain finds it (not 404) and says why",
          rc == 0 and "Reason:       held:" in out, out)
    rc, out = gangctl("--server", url, "queues")
    check("gangctl queues: STATE held, the gang counted as pending",
          re.search(r"^team-b +held .* 1$", out, re.M), out)
    rc, out = gangctl("--server", url, "queue", "resume", "team-b", token=True)
    check("gangctl queue resume team-b", rc == 0, out)
    check("the gang is bound after the resume",
          wait_for(lambda: len(bound(c, "heldjob")) == 1, 20))
    rc, out = gangctl("--server", url, "queue", "hold", "nosuchqueue", token=True)
    check("holding an unknown queue: exit 1 and says so", rc == 1 and "nosuchqueue" in out, out)


def checkpoint_requests(c, url):
    """Operator checkpoint requests: the daemon patches the annotation onto the
    PodGroup, of either API (the patch verbs of deploy/rbac.yaml; tests/kube/test_rbac.sh)."""
    def ckpt_requested(name, volcano):
        path, _ = podgroup(name, 1, volcano=volcano)
        st, obj, _ = c.get(path + "/" + name)
        ann = (obj.get("metadata", {}).get("annotations") or {}) if st == 200 else {}
        return "gangsched.io/checkpoint-requested" in ann
    for name, volcano in (("train", False), ("vc", True)):
        rc, out = gangctl("--server", url, "checkpoint", "default/" + name, token=True)
        check("gangctl checkpoint default/%s" % name, rc == 0, out)
        check("the checkpoint request is annotated on PodGroup %s" % name,
              wait_for(lambda: ckpt_requested(name, volcano), 10))


def hot_reload(c, a):
    """Hot reload: a bad file is rejected and the scheduler keeps running; a good one applies."""
    cfg_path = os.path.join(TMP, "config.yaml")
    with open(cfg_path + ".tmp", "w") as f:
        f.write(CONFIG + "  - name: [not, a, name]\n")
    os.rename(cfg_path + ".tmp", cfg_path)
    check("a bad configuration file is rejected with its line and column",
          wait_for(lambda: re.search(r"rejected.*config\.yaml:\d+:\d+: ", a.text()), 10),
          a.text()[-600:])
    check("and the scheduler keeps running", a.p.poll() is None)
    with open(cfg_path + ".tmp", "w") as f:
        f.write(CONFIG + "  - name: team-c\n    cohort: all\n")
    os.rename(cfg_path + ".tmp", cfg_path)
    check("a good one is applied", wait_for(lambda: "configuration applied" in a.text(), 10))
    c.post(*podgroup("newq", 1, queue="team-c"))
    c.post("/api/v1/namespaces/default/pods", pod("newq-0", "newq", 1))
    check("a gang of the new queue is bound", wait_for(lambda: len(bound(c, "newq")) == 1, 15))


def free_cluster(c):
    """Deletes the gangs so far, freeing the cluster for what follows."""
    for name in ("train", "partial", "vc", "huge", "heldjob", "newq"):
        for p in pods_of(c, name):
            c.delete("/api/v1/namespaces/default/pods/" + p["metadata"]["name"],
                     {"gracePeriodSeconds": 0})
    wait_for(lambda: not any(pods_of(c, n) for n in ("train", "partial", "vc", "huge",
                                                     "heldjob", "newq")), 10)


def operator_reservation(c, url):
    """An operator reservation holds a node: nothing else lands there until it is
    deleted."""
    rc, out = gangctl("--server", url, "reserve", "add", "default/future", "gpu-4", token=True)
    check("gangctl reserve add default/future gpu-4", rc == 0, out)
    rc, out = gangctl("--server", url, "reservations", "-o", "json")
    try:
        rid = [r["id"] for r in json.loads(out)["reservations"] if r.get("kind") == "operator"]
    except (ValueError, KeyError):
        rid = []
    check("gangctl reservations lists it", len(rid) == 1, out[:400])
    c.post(*podgroup("intruder", 1))
    c.post("/api/v1/namespaces/default/pods",
           dict(pod("intruder-0", "intruder", 8),
                spec=dict(pod("intruder-0", "intruder", 8)["spec"],
                          nodeSelector={"kubernetes.io/hostname": "gpu-4"})))
    cond = wait_for(lambda: pg_status(c, "intruder").get("conditions"), 10)
    check("a gang that needs the reserved node waits", cond and not bound(c, "intruder"),
          json.dumps(cond))
    if rid:
        rc, out = gangctl("--server", url, "reserve", "delete", str(rid[0]), token=True)
        check("gangctl reserve delete", rc == 0, out)
    check("and is bound once the reservation is gone",
          wait_for(lambda: len(bound(c, "intruder")) == 1, 15))
    c.delete("/api/v1/namespaces/default/pods/intruder-0", {"gracePeriodSeconds": 0})
    wait_for(lambda: not pods_of(c, "intruder"), 10)


def kubectl_example(c, kubeconfig):
    """A gang written as users write it, applied with the real kubectl (its default
    validation)."""
    kc = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "apply", "-f",
                         "deploy/examples/training-gang.yaml"], capture_output=True, text=True,
                        timeout=60)
    check("kubectl apply -f deploy/examples/training-gang.yaml", kc.returncode == 0,
          kc.stdout + kc.stderr)
    check("the kubectl-created gang is bound whole",
          wait_for(lambda: len(bound(c, "llm-train")) == 2, 20),
          str([p["spec"].get("nodeName") for p in pods_of(c, "llm-train")]))
    def kubectl_phase():
        r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "get",
                            "podgroups.scheduling.x-k8s.io", "llm-train", "-o",
                            "jsonpath={.status.phase}"], capture_output=True, text=True,
                           timeout=60)
        return r.stdout.strip() + r.stderr.strip()
    check("kubectl shows its PodGroup Running",
          wait_for(lambda: kubectl_phase() == "Running", 10, step=0.5), kubectl_phase())
    kc = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "delete", "-f",
                         "deploy/examples/training-gang.yaml", "--wait=false"],
                        capture_output=True, text=True, timeout=60)
    check("kubectl delete -f the example", kc.returncode == 0, kc.stdout + kc.stderr)
    wait_for(lambda: not pods_of(c, "llm-train"), 15)


def injected_faults(c, a):
    """5. Faults: 500s, 429 with Retry-After on binds, a dropped watch, a 410 inside a watch,
    slow answers and conflicts on PodGroup writes."""
    c.post("/_fake/faults", [{"type": "error", "code": 500, "count": 3, "verb": "create",
                              "path": "/binding"},
                             {"type": "error", "code": 429, "retryAfter": 1, "count": 2,
                              "path": "/binding"},
                             {"type": "drop-watch", "afterEvents": 2, "count": 2},
                             {"type": "gone-watch", "count": 1},
                             {"type": "delay", "ms": 300, "count": 5, "path": "/pods"},
                             {"type": "conflict", "count": 3, "path": "/podgroups/"}])
    gang(c, "faulty", 2, 4)
    check("a gang is bound whole through 500s, 429s, dropped watches and a 410",
          wait_for(lambda: len(bound(c, "faulty")) == 2, 30),
          "%d bound" % len(bound(c, "faulty")))
    _, stats, _ = c.get("/_fake/stats")
    check("the injected faults fired", stats.get("faults_fired", 0) >= 5, json.dumps(stats)[:300])
    check("the scheduler is still running", a.p.poll() is None)
    check("transient bind errors were retried, not rolled back",
          "gang bind failed: gang=default/faulty" not in a.text())
    c.delete("/_fake/faults")


def unbindable_member(c):
    """A member that can never be bound: the bound ones are deleted, nothing partial
    survives."""
    c.post("/_fake/faults", {"type": "error", "code": 500, "count": -1,
                             "path": "/pods/permfail-1/binding"})
    gang(c, "permfail", 2, 1)
    cond = wait_for(lambda: [x for x in pg_status(c, "permfail").get("conditions", [])
                             if x.get("reason") == "FailedBinding"], 25)
    check("a gang with a member that cannot be bound says FailedBinding in its status", cond,
          json.dumps(pg_status(c, "permfail")))
    ev = wait_for(lambda: [e for e in events_for(c, "permfail")
                           if e["reason"] == "FailedBinding"], 5)
    check("a gang with a member that cannot be bound gets a FailedBinding event", ev,
          json.dumps(events_for(c, "permfail"))[:400])
    if ev:
        check("which names the pod and the error", "permfail-1" in ev[0]["note"] and
              "500" in ev[0]["note"], ev[0]["note"])
    check("and keeps no bound member", wait_for(lambda: not bound(c, "permfail"), 10),
          str([p["metadata"]["name"] for p in bound(c, "permfail")]))
    c.delete("/_fake/faults")
    for p in pods_of(c, "permfail") + pods_of(c, "faulty"):
        c.delete("/api/v1/namespaces/default/pods/" + p["metadata"]["name"],
                 {"gracePeriodSeconds": 0})


def crash_mid_bind(c, kubeconfig, a, db):
    """6. Crash in the middle of a bind, then restart: no partial gang, nothing bound twice;
    returns the restarted scheduler."""
    _, stats, _ = c.get("/_fake/stats")
    binds_before = stats.get("binds", 0)
    c.post("/_fake/faults", {"type": "delay", "ms": 1500, "count": 1, "path": "/binding"})
    gang(c, "crash", 2, 8)
    wait_for(lambda: "crash" in a.text() or bound(c, "crash"), 5)
    time.sleep(0.5)
    a.stop(signal.SIGKILL)
    n_mid = len(bound(c, "crash"))
    c.delete("/_fake/faults")
    a2 = Sched(kubeconfig, "sched-a2", db)
    check("a restarted scheduler becomes leader after the Lease expires",
          wait_for(a2.leading, 30))
    def settled():
        n = len(bound(c, "crash"))
        alive = len(pods_of(c, "crash"))
        return alive > 0 and n == alive
    wait_for(settled, 20)
    n_bound, n_alive = len(bound(c, "crash")), len(pods_of(c, "crash"))
    check("after the crash the gang is whole or not bound at all (%d bound mid-crash)" % n_mid,
          n_bound in (0, n_alive), "%d of %d pods bound" % (n_bound, n_alive))
    _, stats, _ = c.get("/_fake/stats")
    check("no pod was bound twice (Bindings applied = distinct pods bound; the old leader's "
          "late Binding fails its resourceVersion precondition)",
          stats.get("binds", 0) == stats.get("bound_pods", 0), json.dumps(stats)[:300])
    check("binds sent = pods bound", stats.get("binds", 0) - binds_before == n_bound,
          "%d binds for %d pods" % (stats.get("binds", 0) - binds_before, n_bound))
    # it logs the recovery after its informers have synced, which can come after "became
    # leader" and after the pods look settled (they may all have been bound before the crash)
    check("the restarted scheduler resolved the open intent",
          n_mid == 0 or wait_for(lambda: "recovered bind intent" in a2.text(), 20),
          a2.text()[-500:])
    check("store check passes after the crash",
          subprocess.run([os.path.join(BIN, "gangsched"), "store", "check", db],
                         capture_output=True).returncode == 0)
    return a2


def leader_election(c, kubeconfig, db, a2):
    """7. Leader election: a standby does nothing, takes over when the leader (a2)
    goes; returns the new leader."""
    b2 = Sched(kubeconfig, "sched-b", db)
    time.sleep(3)
    check("a second replica stays standby while the leader renews", not b2.leading())
    check("and never opens the database for writing", "takes over" not in b2.text(),
          b2.text()[-300:])
    rc = a2.stop(signal.SIGTERM)
    check("the leader exits 0 on SIGTERM (binds drained, Lease released)", rc == 0, str(rc))
    check("the standby takes over", wait_for(b2.leading, 20))
    gang(c, "after", 1, 8)
    check("the new leader binds", wait_for(lambda: len(bound(c, "after")) == 1, 20))
    _, lease, _ = c.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/gangsched")
    check("the Lease names the new holder with leaseTransitions counted",
          lease.get("spec", {}).get("holderIdentity") == "sched-b" and
          lease["spec"].get("leaseTransitions", 0) >= 2, json.dumps(lease.get("spec")))
    return b2


def corrupt_database(c, kubeconfig, b2):
    """8. A corrupt database: the daemon stops with the store's message, unless
    --rebuild-store true, which keeps the file aside and schedules on a new one."""
    check("the leader exits 0 on SIGTERM", b2.stop(signal.SIGTERM) == 0)
    broken = os.path.join(TMP, "broken.db")
    with open(broken, "wb") as f:
        f.write(b"SQLite format 3\x00" + os.urandom(8192))
    c1 = Sched(kubeconfig, "sched-c", broken)
    wait_for(lambda: c1.p.poll() is not None, 30)
    check("a corrupt database stops the daemon (exit 1) naming the file and --rebuild-store",
          c1.p.poll() == 1 and broken in c1.text() and "--rebuild-store" in c1.text(),
          "%s: %s" % (c1.p.poll(), c1.text()[-400:]))
    d1 = Sched(kubeconfig, "sched-d", broken, extra=["--rebuild-store", "true"])
    check("with --rebuild-store true a new leader starts on a new store",
          wait_for(d1.leading, 30) and d1.p.poll() is None, d1.text()[-400:])
    gang(c, "rebuilt", 1, 8)
    check("and binds", wait_for(lambda: len(bound(c, "rebuilt")) == 1, 20))
    kept = [f for f in os.listdir(TMP) if f.startswith("broken.db.broken-")]
    check("the corrupt file is kept as broken.db.broken-TIME and the log says so",
          kept and "kept_as=" in d1.text(), "%s %s" % (kept, d1.text()[-300:]))
    check("the new store passes store check",
          subprocess.run([os.path.join(BIN, "gangsched"), "store", "check", broken],
                         capture_output=True).returncode == 0)


def main():
    """The scenario's phases in order on one cluster."""
    kubeconfig, c, a, db = start_cluster()
    bound_gang(c)
    unfit_gang(c)
    pod_constraints(c)
    below_min_member(c, a)
    volcano_gang(c)
    url = a.url()
    http_endpoints(a, url)
    gangctl_reads(url)
    queue_hold(c, url)
    checkpoint_requests(c, url)
    hot_reload(c, a)
    free_cluster(c)
    operator_reservation(c, url)
    kubectl_example(c, kubeconfig)
    injected_faults(c, a)
    unbindable_member(c)
    a2 = crash_mid_bind(c, kubeconfig, a, db)
    b2 = leader_election(c, kubeconfig, db, a2)
    corrupt_database(c, kubeconfig, b2)
    finish()


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
