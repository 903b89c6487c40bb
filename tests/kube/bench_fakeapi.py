#!/usr/bin/env python3
"""tests/kube/bench_fakeapi.py: requests per second of the fake API server on loopback.

Owns: starting fakeapi.py in --plain mode (or TLS with --tls), creating N pods, binding them
and reading them back over --conns keep-alive connections (one thread each), with one watch open on
all pods meanwhile, and printing the rate of each phase. The client runs in the same machine
and in Python, so the numbers are a floor for what a C client gets. Not part of make test.
Usage: python3 tests/kube/bench_fakeapi.py [--pods 5000] [--conns 4] [--tls]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kclient import Client  # noqa: E402


def run_phase(label, clients, n, make):
    """make(client, i) issues request i; returns the rate."""
    errors = []

    def worker(k):
        c = clients[k]
        for i in range(k, n, len(clients)):
            code = make(c, i)
            if code >= 300:
                errors.append(code)
    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.monotonic() - t0
    print(f"{label:<28} {n:>7} requests  {dt:6.2f} s  {n / dt:8.0f} req/s"
          + (f"  ({len(errors)} errors: {errors[:3]})" if errors else ""))
    return n / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=5000)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--tls", action="store_true")
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="fakebench-")
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = [sys.executable, os.path.join(here, "fakeapi.py"), "--port", "0", "--port-file",
           f"{d}/port", "--kubeconfig-out", f"{d}/kc", "--token", "bench"]
    if not args.tls:
        cmd.append("--plain")
    srv = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(f"{d}/port"):
                break
            time.sleep(0.05)
        clients = [Client(f"{d}/kc") for _ in range(args.conns)]
        w = clients[0].watch("/api/v1/pods?watch=1&timeoutSeconds=600", timeout=600)
        seen = [0]

        def drain():
            while w.next() is not None:
                seen[0] += 1
        threading.Thread(target=drain, daemon=True).start()
        ns = "/api/v1/namespaces/default/pods"

        def create(c, i):
            return c.post(ns, {"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": f"p{i}", "labels": {"gang": str(i // 8)}},
                               "spec": {"schedulerName": "gangsched", "containers": [
                                   {"name": "c", "image": "x",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})[0]

        def bind(c, i):
            return c.post(f"{ns}/p{i}/binding", {
                "apiVersion": "v1", "kind": "Binding", "metadata": {"name": f"p{i}"},
                "target": {"kind": "Node", "name": f"node-{i // 8}"}})[0]

        def get(c, i):
            return c.get(f"{ns}/p{i}")[0]
        print(f"fake API server, {'TLS' if args.tls else 'plain HTTP'}, {args.conns} "
              f"keep-alive connections, one watch on all pods")
        run_phase("create pods", clients, args.pods, create)
        run_phase("bind pods", clients, args.pods, bind)
        run_phase("get pods", clients, args.pods, get)
        t0 = time.monotonic()
        code, lst, _ = clients[0].get("/api/v1/pods?limit=500")
        print(f"{'list 500 of ' + str(args.pods) + ' pods':<28} {'1':>7} request   "
              f"{time.monotonic() - t0:6.3f} s")
        end = time.monotonic() + 10
        while seen[0] < 2 * args.pods and time.monotonic() < end:
            time.sleep(0.05)
        print(f"watch events received: {seen[0]} of {2 * args.pods}")
    finally:
        srv.terminate()
        srv.wait(10)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
