#!/usr/bin/env python3
"""tests/bench/kube_bench.py: `gangsched run` against the fake API server on loopback.

Owns: the daemon's speed targets (issue 7, "Speed") and how they are measured:
  1. start-up: 5,000 HGX nodes and 50,000 running pods of other schedulers already stored in the
     fake server (`--preload`, so creating them is not measured), plus 100 pending gangs of 8 pods;
     the time from starting `gangsched run` to the first bind the server records. Target < 3 s.
  2. throughput: 5,000 HGX nodes and 20,000 pending pods in 2,500 gangs of 8 (1 GPU each),
     preloaded; sustained pods bound per second = (pods - 1) / (last bind - first bind).
     Target >= 2,000 pods/s.
  3. (informational) the same 20,000 pods with the 50,000 running pods also present.
  4. scale (issue 16): case 1 on 50,000 HGX nodes with 500,000 running pods (10x both): start to
     first bind, target < 10 s; peak RSS of `gangsched run` (VmHWM), target < 2 GiB; the growth
     of both against case 1 (its RSS is printed too).
  5. idle (issue 16): 50,000 HGX nodes, 500,000 running pods and one gang that cannot fit (it
     waits, with its reason, every cycle); one fake server, the scheduler run twice on it: first
     with --kube-full-cycles (the baseline: the snapshot and placement state rebuilt for every
     node each cycle, a cycle forced every second), then as built. Per run: the scheduler's CPU
     per minute (from /proc) and its cycles per minute while nothing changes (a 20 s window after
     its first cycle), and the CPU of a cycle after one change (a running pod deleted; the
     daemon's gangsched_cycle_cpu_seconds over the cycles of the next 1.5 s, 5 changes).
     Printed with the ratio baseline : built. KBENCH_IDLE_NODES=5000 runs it at 5,000 nodes and
     50,000 pods; KBENCH_IDLE_WAITING=N makes the waiting gangs N.
  6. ours (informational): case 2's 2,500 gangs while 20,000 gangs of one pod of ours already
     run (4 per node, 1 GPU each, preloaded bound): what grows with the gangs the daemon runs
     (adopting them at its first cycle, each placement and each cycle beside them). The
     scheduler's CPU per bind is the figure to compare between builds.
  7. kubelet (informational): case 2 with the fake server's simulated kubelet starting each pod
     as soon as it is bound (--kubelet-delay 0), so that every pod's status changes once more
     after its bind, as in a real cluster: the binds per second beside that churn, the time from
     the last bind until every PodGroup shows running 8 and phase Running (the member counts and
     phases of sched/kube/driver_counts.c), and the PodGroup status writes per gang.
Nodes and running pods are stored with fakeapi.py --preload (as if the server had restarted on a
full cluster: no create per object, so loading 500,000 pods takes seconds, not minutes); the
server's list pages are its stored objects' JSON bytes joined, so listing costs it little.
The fake server runs in `--plain` mode; both processes share the machine's cores, so the CPU
seconds of each (from /proc, user + system) are printed too: the scheduler's CPU per bind shows
what it could do against a faster server. Rows are printed like tests/bench/bench.c's (value,
target, PASS/MISS, ratio against the target); a missed target prints MISS and the script still
exits 0; it exits 1 only when a run fails (a process dies, a bounded wait times out).

Usage: python3 tests/bench/kube_bench.py [--bin bin]
       [--only startup|throughput|mixed|scale|idle|ours|kubelet] [--keep]
  KBENCH_WRAP="perf record -g -o /tmp/perf.data" runs the scheduler under a profiler;
  KBENCH_IDLE_PERF=/tmp/perf.data profiles the idle case's cycles after a change alone;
  KBENCH_SCHED_ARGS="--kube-paged-lists" adds flags to `gangsched run` (cases 1 to 7).
Not a unit test: run by `make bench` only.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FAKE = os.path.join(ROOT, "tests", "kube", "fakeapi.py")

NODES = 5000
NODES_PER_RACK = 8
RACKS_PER_BLOCK = 4
BLOCKS_PER_ZONE = 32
EXISTING_PODS = 50000
GANGS = 2500
GANG_SIZE = 8
STARTUP_GANGS = 100

TARGET_FIRST_BIND_S = 3.0
# Issue 16: the daemon on a 50,000-node cluster with 500,000 running pods.
BIG_NODES = 50000
BIG_PODS = 500000
TARGET_BIG_FIRST_BIND_S = 10.0
TARGET_BIG_RSS_MB = 2048.0
TARGET_PODS_PER_S = 2000.0

CONFIG = """apiVersion: gangsched.io/v1alpha1
kind: SchedulerConfig
cohorts:
  - name: all
queues:
  - name: bench
    cohort: all
    quota:
      default:
        nvidia.com/gpu: 100000
"""

TICKS = os.sysconf("SC_CLK_TCK")
procs = []


def zone_name(z):
    letters, x = "", z + 1
    while x > 0:
        x -= 1
        letters = chr(ord("a") + x % 26) + letters
        x //= 26
    return "zone-" + letters


def nodes(n_nodes=NODES):
    """HGX nodes as sched/sim/nodes.c generates them (hgx:5000): 8 H100s, racks of 8 nodes,
    blocks of 4 racks, zones of 32 blocks."""
    out = []
    for i in range(n_nodes):
        rack = i // NODES_PER_RACK
        block = rack // RACKS_PER_BLOCK
        name = "hgx-%05d" % i
        res = {"cpu": "192", "memory": "2Ti", "pods": "110", "nvidia.com/gpu": "8"}
        out.append({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {
                        "kubernetes.io/hostname": name,
                        "topology.kubernetes.io/zone": zone_name(block // BLOCKS_PER_ZONE),
                        "network.topology.gangsched.io/block": "hgx-block-%02d" % block,
                        "network.topology.gangsched.io/rack": "hgx-rack-%03d" % rack,
                        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                        "nvidia.com/gpu.count": "8",
                        "nvidia.com/gpu.memory": "81559"}},
                    "status": {"allocatable": dict(res), "capacity": dict(res),
                               "conditions": [{"type": "Ready", "status": "True"}]}})
    return out


def existing_pods(n_nodes=NODES, n_pods=EXISTING_PODS):
    """Running pods of another scheduler, 10 per node: 1 CPU and 4 GiB each, the first two on
    every node also 1 GPU (2 of 8 GPUs used, 10 of 110 pods, 10 of 192 CPUs)."""
    out = []
    per_node = n_pods // n_nodes
    for i in range(n_pods):
        n, k = i // per_node, i % per_node
        lim = {"cpu": "1", "memory": "4Gi"}
        if k < 2:
            lim["nvidia.com/gpu"] = "1"
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "other-%06d" % i, "namespace": "default",
                                 "labels": {"app": "other"}},
                    "spec": {"schedulerName": "default-scheduler", "nodeName": "hgx-%05d" % n,
                             "restartPolicy": "Always",
                             "containers": [{"name": "main", "image": "svc",
                                             "resources": {"requests": dict(lim),
                                                           "limits": dict(lim)}}]},
                    "status": {"phase": "Running",
                               "conditions": [{"type": "Ready", "status": "True"}]}})
    return out


OURS_RUNNING = 20000


def our_running_pods(n_nodes=NODES, n_pods=OURS_RUNNING):
    """Running gangs of one pod of ours (queue bench, 1 GPU), n_pods // n_nodes per node, started
    an hour ago."""
    out = []
    per_node = n_pods // n_nodes
    for i in range(n_pods):
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "run-%06d" % i, "namespace": "default",
                                 "labels": {"gangsched.io/queue": "bench"},
                                 "creationTimestamp": "2026-01-01T00:00:00Z"},
                    "spec": {"schedulerName": "gangsched", "nodeName": "hgx-%05d" % (i // per_node),
                             "restartPolicy": "Never",
                             "containers": [{"name": "main", "image": "trainer",
                                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
                    "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                               "conditions": [{"type": "Ready", "status": "True"}]}})
    return out


def gangs(n_gangs):
    """PodGroups (scheduler-plugins) and their pending pods: n_gangs x 8 pods of 1 GPU."""
    out = []
    for g in range(n_gangs):
        name = "g%04d" % g
        out.append({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": "default",
                                 "labels": {"gangsched.io/queue": "bench"}},
                    "spec": {"minMember": GANG_SIZE}})
        for i in range(GANG_SIZE):
            out.append({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": "%s-%d" % (name, i), "namespace": "default",
                                     "labels": {"scheduling.x-k8s.io/pod-group": name}},
                        "spec": {"schedulerName": "gangsched", "restartPolicy": "Never",
                                 "containers": [{"name": "main", "image": "trainer",
                                                 "resources": {"limits": {
                                                     "nvidia.com/gpu": "1"}}}]}})
    return out


def write_list(path, items):
    """A v1 List of items, written one item at a time (500,000 pods are never all in memory)."""
    with open(path, "w") as f:
        f.write('{"apiVersion": "v1", "kind": "List", "items": [')
        for i, obj in enumerate(items):
            if i:
                f.write(",\n")
            json.dump(obj, f, separators=(",", ":"))
        f.write("]}\n")


def rss_peak_mb(pid):
    """The peak resident set (VmHWM) of a live process in MiB."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return float("nan")


def cpu_s(pid):
    """User + system CPU seconds of a process (and its reaped children) so far."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(fields[i]) for i in (11, 12)) / TICKS
    except (OSError, IndexError, ValueError):
        return float("nan")


def wait_for(fn, timeout, step=0.02):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(step)
    return fn()


def stop(p, timeout=10):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Failed(Exception):
    pass


def settled(port):
    """Whether every PodGroup shows all its members running and phase Running."""
    with urllib.request.urlopen("http://127.0.0.1:%d/apis/scheduling.x-k8s.io/v1alpha1/"
                                "namespaces/default/podgroups" % port, timeout=30) as r:
        items = json.loads(r.read())["items"]
    return all((g.get("status") or {}).get("phase") == "Running" and
               (g.get("status") or {}).get("running") == GANG_SIZE for g in items)


def run_case(args, tmp, label, preloads, loads, expect_binds, timeout, kubelet=False):
    """Starts the fake server with `preloads` (nodes and pods stored as if already in etcd, see
    fakeapi.py --preload) and `loads` (created), then the scheduler; waits for expect_binds
    binds (and with kubelet, the simulated kubelet starting pods at once, until every PodGroup
    shows them running). Returns a dict of measurements."""
    d = os.path.join(tmp, label)
    os.makedirs(d)
    port_file = os.path.join(d, "port")
    kc = os.path.join(d, "kubeconfig")
    cmd = [sys.executable, FAKE, "--plain", "--port", "0", "--port-file", port_file,
           "--kubeconfig-out", kc, "--bookmark-interval", "60",
           "--load", os.path.join(ROOT, "deploy", "crds", "scheduling.x-k8s.io_podgroups.yaml")]
    for path in preloads:
        cmd += ["--preload", path]
    for path in loads:
        cmd += ["--load", path]
    if kubelet:
        cmd += ["--kubelet", "--kubelet-delay", "0"]
    flog = open(os.path.join(d, "fake.log"), "w")
    t_load = time.time()
    fake = subprocess.Popen(cmd, stdout=flog, stderr=flog)
    procs.append(fake)
    if not wait_for(lambda: os.path.exists(port_file) and os.path.getsize(port_file) > 0, 600,
                    0.1):
        raise Failed("%s: the fake API server did not start" % label)
    if fake.poll() is not None:
        raise Failed("%s: the fake API server exited" % label)
    load_s = time.time() - t_load
    with open(port_file) as f:
        port = int(f.read())

    def stats():
        with urllib.request.urlopen("http://127.0.0.1:%d/_fake/stats" % port, timeout=30) as r:
            return json.loads(r.read())

    cfg = os.path.join(d, "config.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    fake_cpu0 = cpu_s(fake.pid)
    slog = open(os.path.join(d, "sched.log"), "w")
    t0 = time.time()
    wrap = os.environ.get("KBENCH_WRAP", "").split()  # e.g. "perf record -g -o FILE"
    sched = subprocess.Popen(wrap + [os.path.join(args.bin, "gangsched"), "run", "--kubeconfig", kc,
                              "--config", cfg, "--db", os.path.join(d, "gangsched.db"),
                              "--leader-elect", "false", "--listen", "127.0.0.1:0",
                              "--kube-qps", "20000",
                              "--kube-burst", "20000", "--log-level",
                              os.environ.get("KBENCH_LOG_LEVEL", "warn")] +
                             os.environ.get("KBENCH_SCHED_ARGS", "").split(),
                             stdout=slog, stderr=slog)
    procs.append(sched)
    st = {}

    def progressed():
        nonlocal st
        if sched.poll() is not None:
            raise Failed("%s: gangsched run exited with %s" % (label, sched.returncode))
        st = stats()
        return st["binds"] >= expect_binds

    end = time.time() + timeout
    last, last_change = -1, time.time()
    while time.time() < end:
        if progressed():
            break
        if st["binds"] != last:
            last, last_change = st["binds"], time.time()
        elif time.time() - last_change > (30 if last > 0 else 180):
            # before the first bind the daemon lists everything: at 50,000 nodes on a loaded
            # machine that alone can take more than 30 s
            raise Failed("%s: no bind for %d s (%d of %d bound)" %
                         (label, 30 if last > 0 else 180, last, expect_binds))
        time.sleep(0.1)
    else:
        raise Failed("%s: %d of %d bound after %d s" % (label, st["binds"], expect_binds,
                                                         timeout))
    settle_s = None
    if kubelet:
        t_bound = time.time()
        if not wait_for(lambda: settled(port), timeout, 0.5):
            raise Failed("%s: PodGroups not all Running %d s after the last bind" %
                         (label, timeout))
        settle_s = time.time() - t_bound
        st = stats()
    sched_cpu, fake_cpu = cpu_s(sched.pid), cpu_s(fake.pid) - fake_cpu0
    rss_mb = rss_peak_mb(sched.pid)
    stop(sched)
    stop(fake)
    first, lastb = st["first_bind_time"], st["last_bind_time"]
    n = st["binds"]
    return {"load_s": load_s, "first_bind_s": first - t0, "bind_span_s": lastb - first,
            "binds": n, "pods_per_s": (n - 1) / (lastb - first) if lastb > first else 0.0,
            "sched_cpu_s": sched_cpu, "fake_cpu_s": fake_cpu, "wall_s": lastb - t0,
            "rss_mb": rss_mb, "settle_s": settle_s,
            "requests": st["requests"], "by_resource": st["by_resource"]}


def row(name, value, target, ok, ratio):
    status = "-" if ok is None else ("PASS" if ok else "MISS")
    print("%-56s %-24s %-10s %-6s %s" % (name, value, target, status, ratio), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("BIN", "bin"))
    ap.add_argument("--only", choices=["startup", "throughput", "mixed", "scale", "idle", "ours",
                                       "kubelet"])
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="gangsched-kbench-")
    fail = False
    try:
        sys.stderr.write("kube bench: generating objects in %s\n" % tmp)
        f_nodes, f_other = os.path.join(tmp, "nodes.json"), os.path.join(tmp, "other.json")
        f_gangs, f_few = os.path.join(tmp, "gangs.json"), os.path.join(tmp, "few.json")
        f_big_nodes, f_big_other = (os.path.join(tmp, "nodes-big.json"),
                                    os.path.join(tmp, "other-big.json"))
        f_ours = os.path.join(tmp, "ours.json")
        if args.only != "scale":
            write_list(f_nodes, nodes())
            write_list(f_other, existing_pods())
            write_list(f_gangs, gangs(GANGS))
        if args.only in (None, "ours"):
            write_list(f_ours, our_running_pods())
        if args.only != "idle":
            write_list(f_few, gangs(STARTUP_GANGS))
        print("gangsched kube bench: %d CPU(s) online, fake API server --plain on loopback; "
              "CPU = user+system s of each process" % os.cpu_count())
        print("%-56s %-24s %-10s %-6s %s" % ("measurement", "value", "target", "result",
                                              "ratio"))
        cases = []
        if args.only in (None, "startup"):
            cases.append(("startup", [f_nodes, f_other], [f_few], STARTUP_GANGS * GANG_SIZE))
        if args.only in (None, "throughput"):
            cases.append(("throughput", [f_nodes], [f_gangs], GANGS * GANG_SIZE))
        if args.only in (None, "mixed"):
            cases.append(("mixed", [f_nodes, f_other], [f_gangs], GANGS * GANG_SIZE))
        if args.only in (None, "ours"):
            cases.append(("ours", [f_nodes, f_ours], [f_gangs], GANGS * GANG_SIZE))
        if args.only in (None, "kubelet"):
            cases.append(("kubelet", [f_nodes], [f_gangs], GANGS * GANG_SIZE))
        if args.only in (None, "scale"):
            cases.append(("scale", [f_big_nodes, f_big_other], [f_few],
                          STARTUP_GANGS * GANG_SIZE))
        results = {}
        for label, preloads, loads, expect in cases:
            if label == "scale":
                sys.stderr.write("kube bench: generating %d nodes and %d pods\n" %
                                 (BIG_NODES, BIG_PODS))
                write_list(f_big_nodes, nodes(BIG_NODES))
                write_list(f_big_other, existing_pods(BIG_NODES, BIG_PODS))
            sys.stderr.write("kube bench: %s (loading the fake server)\n" % label)
            try:
                r = run_case(args, tmp, label, preloads, loads, expect, 600,
                             kubelet=label == "kubelet")
            except Failed as e:
                fail = True
                row("%s: FAILED" % label, str(e)[:60], "-", False, "-")
                continue
            results[label] = r
            report(label, r)
            if args.keep:
                sys.stderr.write("kube bench: %s by resource: %s\n" %
                                 (label, json.dumps(r["by_resource"])))
        if args.only in (None, "idle"):
            try:
                idle_case(args, tmp, (f_big_nodes, f_big_other))
            except Failed as e:
                fail = True
                row("idle: FAILED", str(e)[:60], "-", False, "-")
        if "startup" in results and "scale" in results:
            a, b = results["startup"], results["scale"]
            row("16 growth 50,000 : 5,000 nodes, first bind / RSS",
                "%.1fx / %.1fx" % (b["first_bind_s"] / a["first_bind_s"],
                                   b["rss_mb"] / a["rss_mb"]), "-", None,
                "10x the nodes and pods")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
                p.wait()
        if args.keep:
            sys.stderr.write("kube bench: kept %s\n" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if fail else 0


IDLE_WINDOW_S = 20.0
IDLE_CHANGES = 5
IDLE_CHANGE_WINDOW_S = 1.5


def http(port, method, path, timeout=30):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


def cycle_metrics(port):
    """(cycles run, CPU seconds of all of them) from the scheduler's /metrics
    (gangsched_cycle_cpu_seconds); (0, 0.0) while /metrics does not answer (503 until the caches
    have synced)."""
    try:
        text = http(port, "GET", "/metrics").decode()
    except OSError:
        return 0, 0.0
    n, s = 0, 0.0
    for line in text.splitlines():
        if line.startswith("gangsched_cycle_cpu_seconds_count"):
            n = int(float(line.split()[-1]))
        elif line.startswith("gangsched_cycle_cpu_seconds_sum"):
            s = float(line.split()[-1])
    return n, s


def idle_run(args, d, kc, api_port, label, extra, first_pod):
    """One scheduler run of the idle case; returns (process CPU s per minute while nothing
    changes, cycles per minute meanwhile, CPU s of a cycle after a change)."""
    cfg = os.path.join(d, "config.yaml")
    pf = os.path.join(d, "port-%s" % label)
    log = open(os.path.join(d, "sched-%s.log" % label), "w")
    sched = subprocess.Popen([os.path.join(args.bin, "gangsched"), "run", "--kubeconfig", kc,
                              "--config", cfg, "--db", os.path.join(d, "%s.db" % label),
                              "--leader-elect", "false", "--listen", "127.0.0.1:0",
                              "--port-file", pf, "--kube-qps", "20000", "--kube-burst", "20000",
                              "--log-level", "warn"] + extra, stdout=log, stderr=log)
    procs.append(sched)
    try:
        if not wait_for(lambda: os.path.exists(pf) and os.path.getsize(pf) > 0, 60, 0.1):
            raise Failed("idle %s: no HTTP port" % label)
        with open(pf) as f:
            port = int(f.read())
        if not wait_for(lambda: sched.poll() is None and cycle_metrics(port)[0] >= 1, 300, 0.2):
            raise Failed("idle %s: no cycle within 300 s" % label)
        time.sleep(3)
        n0 = cycle_metrics(port)[0]
        c0, t0 = cpu_s(sched.pid), time.time()
        time.sleep(IDLE_WINDOW_S)
        span = time.time() - t0
        idle_rate = (cpu_s(sched.pid) - c0) / span
        idle_cycles = (cycle_metrics(port)[0] - n0) * 60.0 / span
        cycles, cpu = 0, 0.0
        prof = None  # KBENCH_IDLE_PERF=FILE: perf record -g of the changes' cycles alone
        if os.environ.get("KBENCH_IDLE_PERF"):
            prof = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-p", str(sched.pid),
                                     "-o", os.environ["KBENCH_IDLE_PERF"]],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        for k in range(IDLE_CHANGES):
            n0, s0 = cycle_metrics(port)
            t0 = time.time()
            http(api_port, "DELETE", "/api/v1/namespaces/default/pods/other-%06d" % (first_pod + k))
            if not wait_for(lambda: cycle_metrics(port)[0] > n0, 30, 0.05):
                raise Failed("idle %s: no cycle after a change" % label)
            time.sleep(max(0.0, t0 + IDLE_CHANGE_WINDOW_S - time.time()))
            n1, s1 = cycle_metrics(port)
            cycles, cpu = cycles + n1 - n0, cpu + s1 - s0
        if prof:
            prof.send_signal(signal.SIGINT)
            prof.wait()
        if sched.poll() is not None:
            raise Failed("idle %s: gangsched run exited" % label)
        return idle_rate * 60.0, idle_cycles, cpu / max(1, cycles)
    finally:
        stop(sched)


def idle_case(args, tmp, big_files):
    """big_files: the scale case's nodes and pods files (reused at 50,000 nodes when written)."""
    n_nodes = int(os.environ.get("KBENCH_IDLE_NODES", BIG_NODES))
    n_pods = n_nodes * 10
    d = os.path.join(tmp, "idle")
    os.makedirs(d)
    f_nodes, f_other = os.path.join(d, "nodes.json"), os.path.join(d, "other.json")
    f_wait = os.path.join(d, "wait.json")
    if n_nodes == BIG_NODES and all(os.path.exists(f) for f in big_files):
        f_nodes, f_other = big_files
    else:
        sys.stderr.write("kube bench: idle, generating %d nodes and %d pods\n" %
                         (n_nodes, n_pods))
        write_list(f_nodes, nodes(n_nodes))
        write_list(f_other, existing_pods(n_nodes, n_pods))
    # one gang of 8 pods of 9 GPUs: no 8-GPU node fits one, it waits (KBENCH_IDLE_WAITING gangs
    # of them: what a cycle costs beside a backlog)
    wait = gangs(int(os.environ.get("KBENCH_IDLE_WAITING", 1)))
    for o in wait:
        if o["kind"] == "Pod":
            o["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "9"
    write_list(f_wait, wait)
    port_file, kc = os.path.join(d, "port"), os.path.join(d, "kubeconfig")
    cmd = [sys.executable, FAKE, "--plain", "--port", "0", "--port-file", port_file,
           "--kubeconfig-out", kc, "--bookmark-interval", "60",
           "--load", os.path.join(ROOT, "deploy", "crds", "scheduling.x-k8s.io_podgroups.yaml"),
           "--preload", f_nodes, "--preload", f_other, "--load", f_wait]
    flog = open(os.path.join(d, "fake.log"), "w")
    fake = subprocess.Popen(cmd, stdout=flog, stderr=flog)
    procs.append(fake)
    try:
        if not wait_for(lambda: os.path.exists(port_file) and os.path.getsize(port_file) > 0,
                        600, 0.1):
            raise Failed("idle: the fake API server did not start")
        with open(port_file) as f:
            api_port = int(f.read())
        with open(os.path.join(d, "config.yaml"), "w") as f:
            f.write(CONFIG)
        modes = [("baseline", ["--kube-full-cycles", "true"]), ("built", [])]
        if os.environ.get("KBENCH_IDLE_MODES") == "built":  # a binary without the baseline flag
            modes = modes[1:]
        out = {}
        for i, (label, extra) in enumerate(modes):
            out[label] = idle_run(args, d, kc, api_port, label, extra, i * 1000)
            row("16 idle %s, %d nodes: CPU/min, cycles/min" % (label, n_nodes),
                "%.2f s / %.0f" % (out[label][0], out[label][1]), "-", None, "nothing changes")
            row("16   %s: CPU of a cycle after one change" % label,
                "%.1f ms" % (1000 * out[label][2]), "-", None, "one pod deleted, mean of %d" %
                IDLE_CHANGES)
        if len(out) == 2:
            a, b = out["baseline"], out["built"]
            row("16 idle ratio baseline : built, CPU/min / cycle",
                "%.0fx / %.1fx" % (a[0] / max(b[0], 1e-3), a[2] / max(b[2], 1e-6)), "-", None,
                "same fake server, same cluster")
    finally:
        stop(fake)


def report(label, r):
    """The rows of one case."""
    per_bind_ms = 1000.0 * r["sched_cpu_s"] / max(1, r["binds"])
    if label == "startup":
        row("7a start to first bind, %d nodes, %d pods listed" % (NODES, EXISTING_PODS),
            "%.2f s" % r["first_bind_s"], "< %.0f s" % TARGET_FIRST_BIND_S,
            r["first_bind_s"] < TARGET_FIRST_BIND_S,
            "%.2fx target" % (r["first_bind_s"] / TARGET_FIRST_BIND_S))
        row("    peak RSS of gangsched run", "%.0f MiB" % r["rss_mb"], "-", None, "-")
    elif label == "scale":
        row("16 start to first bind, %d nodes, %d pods listed" % (BIG_NODES, BIG_PODS),
            "%.2f s" % r["first_bind_s"], "< %.0f s" % TARGET_BIG_FIRST_BIND_S,
            r["first_bind_s"] < TARGET_BIG_FIRST_BIND_S,
            "%.2fx target" % (r["first_bind_s"] / TARGET_BIG_FIRST_BIND_S))
        row("16 peak RSS of gangsched run, same", "%.0f MiB" % r["rss_mb"],
            "< %.0f MiB" % TARGET_BIG_RSS_MB, r["rss_mb"] < TARGET_BIG_RSS_MB,
            "%.2fx target" % (r["rss_mb"] / TARGET_BIG_RSS_MB))
    else:
        name = "7b pods bound/s, %d gangs x %d on %d nodes" % (GANGS, GANG_SIZE, NODES)
        if label == "mixed":
            name = "  same, %d other pods running (info)" % EXISTING_PODS
        elif label == "ours":
            name = "  same, %d gangs of ours running (info)" % OURS_RUNNING
        elif label == "kubelet":
            name = "  same, the kubelet starting each pod at once (info)"
        row(name, "%.0f pods/s" % r["pods_per_s"], ">= %.0f" % TARGET_PODS_PER_S,
            r["pods_per_s"] >= TARGET_PODS_PER_S if label == "throughput" else None,
            "%.2fx target (%.2f s span)" % (r["pods_per_s"] / TARGET_PODS_PER_S,
                                            r["bind_span_s"]))
        row("    first bind after", "%.2f s" % r["first_bind_s"], "-", None, "-")
    if r.get("settle_s") is not None:
        writes = r["by_resource"].get("patch podgroups.scheduling.x-k8s.io/status", 0)
        row("    every PodGroup Running, running %d, after" % GANG_SIZE,
            "%.2f s" % r["settle_s"], "-", None, "from the last bind")
        row("    PodGroup status writes", "%d" % writes, "-", None,
            "%.2f per gang" % (writes / GANGS))
    row("    CPU gangsched run / fake server",
        "%.2f / %.2f s" % (r["sched_cpu_s"], r["fake_cpu_s"]), "-", None,
        "%.3f ms gangsched CPU/bind" % per_bind_ms)
    row("    API requests (all kinds)", "%d" % r["requests"], "-", None,
        "%.2f per bind" % (r["requests"] / max(1, r["binds"])))


if __name__ == "__main__":
    sys.exit(main())
