"""tests/kube/h2util.py: starts tests/kube/h2front.js (the HTTP/2 front of the fake API server)
for the tests/kube/h2_*.py scenarios and reads its counters.

Owns: running `node tests/kube/h2front.js` beside e2e.start_fake's server (same certificates,
a kubeconfig of its own that points at the front), its control endpoint (stats, faults), and a
loud failure when `node` is missing (make deps installs Debian's nodejs): never a skip.
Every wait is bounded.
"""

import json
import os
import shutil
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402


class Front:
    def __init__(self, fake_kubeconfig, max_streams=None):
        node = shutil.which("node") or shutil.which("nodejs")
        if not node:
            e2e.bad("node (Debian package nodejs) is not installed: `make deps` installs it; "
                    "the HTTP/2 tests cannot run without it")
            e2e.finish()
        d = os.path.dirname(fake_kubeconfig)
        with open(os.path.join(d, "port")) as f:
            upstream = f.read().strip()
        self.kubeconfig = os.path.join(d, "kubeconfig-h2")
        port_file = os.path.join(d, "h2.port")
        cmd = [node, "tests/kube/h2front.js", "--upstream", upstream, "--cert-dir", d,
               "--kubeconfig-in", fake_kubeconfig, "--kubeconfig-out", self.kubeconfig,
               "--port-file", port_file]
        if max_streams:
            cmd += ["--max-streams", str(max_streams)]
        cmd.append("--verbose")  # every stream logged: the log is shown when a check fails
        self.log_path = os.path.join(e2e.TMP, "h2front.log")
        self.p = subprocess.Popen(cmd, stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT)
        e2e.procs.insert(0, self.p)  # stopped after the schedulers (e2e.finish: reversed)
        if not e2e.wait_for(lambda: os.path.exists(port_file) and os.path.getsize(port_file) > 0,
                            15):
            e2e.bad("the HTTP/2 front did not start: " + self.text())
            e2e.finish()
        with open(port_file) as f:
            ports = json.load(f)
        self.port, self.control = ports["port"], ports["control"]
        e2e.ok("HTTP/2 front on 127.0.0.1:%d (control %d) before the fake server on %s"
               % (self.port, self.control, upstream))

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.control, path), data=data,
                                     method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read().decode())

    def stats(self):
        return self._call("GET", "/stats")

    def fault(self, f):
        return self._call("POST", "/fault", f)


def start(max_streams=None):
    """The fake API server with bookmarks every 0.5 s and the daemon's files
    (e2e.start_with_config), and its HTTP/2 front: (front, client of the fake server over
    HTTP/1.1, not through the front). Shared by the h2_*.py scenarios."""
    fake_kc, client = e2e.start_with_config(e2e.CONFIG, extra=["--bookmark-interval", "0.5"])
    return Front(fake_kc, max_streams=max_streams), client
