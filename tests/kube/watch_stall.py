"""tests/kube/watch_stall.py: a watch that goes silent (no bytes, no FIN) does not freeze the
daemon's cache.

The failure copied: a proxy or load balancer between the daemon and kube-apiserver loses its
upstream but keeps the daemon's connection open, so the nodes watch delivers nothing more and
never ends; TCP keepalive is answered by the proxy. Before the watchdog a node added after the
stall stayed unseen for good (measured: 701 s, a gang that fits only on it never bound, nothing
logged). The fake API server's stall-watch fault plays the proxy: the daemon's first
nodes watch stalls after 3 s of bookmarks (every 0.5 s; kube-apiserver's watch cache sends one a
minute). With --kube-watch-idle 2s the daemon must abandon it (logged: nothing received although
bookmarks came before), watch again from its resourceVersion, see a node added after the stall
and bind a gang that fits only there, within 15 s. Healthy watches are never abandoned over five
idle periods (only the stalled one is logged): those with bookmarks flowing, and those of types
this test never writes (Volcano PodGroups, ResourceClaims, ResourceSlices), to which the fake
server, like kube-apiserver's watch cache, sends no bookmark at all; their watches are not started
again (a watchdog that held every watch to the idle bound once any watch got a bookmark abandoned
them every 2 s: 13 abandoned instead of 1). Then the bounds that hold without bookmarks, on an informer of build/tests/kubeprobe
(its own client, which has seen none; the bookmark ending a streaming list's initial events does
not count): a watch stalled before its response headers is abandoned
after watch_idle (1 s), one stalled right after them 1 s (min(30 s, watch_idle)) past the
timeoutSeconds=2 it asked for; a pod created after the stalls is seen.
Built on tests/kube/e2e.py's helpers; every wait is bounded.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, gang, node, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

IDLE_S = 2
BOUND_S = 15  # 2 s idle, then a backoff of 0.8 s to 1 s, then the cycle


# Resource types the daemon watches that this test never writes: the fake server (as
# kube-apiserver's watch cache) sends their watches no BOOKMARK at all.
QUIET = ("podgroups.scheduling.volcano.sh", "resourceclaims.resource.k8s.io",
         "resourceslices.resource.k8s.io")
QUIET_PERIODS = 5


def stats(c):
    return c.get("/_fake/stats")[1]


def watch_counts(c):
    """Watches started so far, by "watch RESOURCE"."""
    return {k: v for k, v in stats(c)["by_resource"].items() if k.startswith("watch ")}


def main():
    kubeconfig = e2e.start_fake(extra=["--bookmark-interval", "0.5"])
    with open(os.path.join(e2e.TMP, "config.yaml"), "w") as f:
        f.write(e2e.CONFIG)
    with open(os.path.join(e2e.TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    c.post("/api/v1/nodes", node("gpu-1", "r1"))
    c.post("/_fake/faults", {"type": "stall-watch", "verb": "watch", "path": "/api/v1/nodes",
                             "afterSeconds": 3})
    s = e2e.Sched(kubeconfig, "d", os.path.join(e2e.TMP, "d.db"),
                  extra=["--leader-elect", "false", "--kube-watch-idle", "%ds" % IDLE_S,
                         "--log-level", "debug"])
    gang(c, "one", 1, 8)
    check("a gang on the first node is bound", wait_for(lambda: len(bound(c, "one")) == 1, 20))
    check("the nodes watch stalls after 3 s of bookmarks",
          wait_for(lambda: stats(c)["watch_stalls"] >= 1, 20))
    t0 = time.time()
    c.post("/api/v1/nodes", node("gpu-2", "r1"))
    gang(c, "two", 1, 8)
    got = wait_for(lambda: len(bound(c, "two")) == 1, BOUND_S)
    took = time.time() - t0
    check("a node added after the stall is seen and a gang that fits only there is bound "
          "within %d s (%.1f s)" % (BOUND_S, took), got)
    lines = [x for x in s.text().splitlines() if "connection abandoned" in x]
    check("the stall logged: nothing received although bookmarks came before",
          len(lines) == 1 and "/api/v1/nodes: nothing received for" in lines[0], "\n".join(lines))
    watches0 = watch_counts(c)
    quiet = sorted(k for k in watches0 if k.split(" ", 1)[1] in QUIET)
    time.sleep(QUIET_PERIODS * IDLE_S)
    lines = [x for x in s.text().splitlines() if "connection abandoned" in x]
    check("no healthy watch abandoned over %d idle periods of %d s, bookmarked or quiet (%d "
          "abandoned in all)" % (QUIET_PERIODS, IDLE_S, len(lines)), len(lines) == 1,
          "\n".join(lines))
    watches1 = watch_counts(c)
    check("the quiet types (no event since the server started, so no bookmark) were watched "
          "and not watched again: %s" % ", ".join("%s %d->%d" % (k, watches0[k], watches1[k])
                                                 for k in quiet),
          len(quiet) >= 2 and all(watches1[k] == watches0[k] for k in quiet),
          str(sorted(watches1.items())))
    check("the daemon is alive", s.p.poll() is None)
    stall_line = 'gangsched_kube_watch_events_total{kind="stalls"} 1'
    check("/metrics counts the stall (%s)" % stall_line,
          wait_for(lambda: stall_line in e2e.http_get(s.url() + "/metrics")[1], 5),
          "\n".join(x for x in e2e.http_get(s.url() + "/metrics")[1].splitlines()
                    if "watch_events" in x))
    past_deadline(c, kubeconfig)
    e2e.finish()


def past_deadline(c, kubeconfig):
    probe = os.path.join(os.environ.get("BUILD", "build"), "tests", "kubeprobe")
    if not os.access(probe, os.X_OK):
        e2e.bad("missing %s (make test-bins)" % probe)
        return
    c.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": "probe"}})
    c.post("/_fake/faults", {"faults": [
        {"type": "stall-watch", "verb": "watch", "path": "/namespaces/probe/pods",
         "beforeHeaders": True},
        {"type": "stall-watch", "verb": "watch", "path": "/namespaces/probe/pods",
         "afterSeconds": 0}]})
    out_path, err_path = (os.path.join(e2e.TMP, "probe" + x) for x in (".out", ".log"))
    env = dict(os.environ, KUBEPROBE_WATCH_TIMEOUT="2", KUBEPROBE_WATCH_IDLE="1000")
    p = subprocess.Popen([probe, "watch", kubeconfig, "/api/v1/namespaces/probe/pods", "30"],
                         stdout=open(out_path, "w"), stderr=open(err_path, "w"), env=env)
    e2e.procs.append(p)

    def text(path):
        with open(path) as f:
            return f.read()
    # the first streaming list stalls before its headers, the second right after its initial
    # events (SYNCED): the pod created next comes only once that watch is abandoned
    check("the probe's watch stalls", wait_for(
        lambda: stats(c)["watch_stalls"] >= 2 and "SYNCED" in text(out_path), 10),
        "%s %s %s" % (stats(c)["watch_stalls"], text(out_path), text(err_path)))
    t0 = time.time()
    pod = e2e.pod("late-0", "late", 1)
    pod["metadata"]["namespace"] = "probe"
    st, body, _ = c.post("/api/v1/namespaces/probe/pods", pod)
    check("the pod is created", st == 201, "%s %s" % (st, body))
    got = wait_for(lambda: "ADDED probe/late-0" in text(out_path), 10)
    check("watches stalled before their headers and past timeoutSeconds + min(30 s, idle) are "
          "abandoned and the pod created after the stalls is seen (%.1f s)" % (time.time() - t0),
          got, text(err_path))
    check("logged: no response within the bound, then still open past its timeoutSeconds",
          "probe/pods: no response within 1000 ms: connection abandoned" in text(err_path) and
          "still open 3 s after it started (timeoutSeconds=2): connection abandoned" in
          text(err_path), text(err_path))
    p.terminate()
    p.wait(5)


if __name__ == "__main__":
    e2e.run(main)
