#!/usr/bin/env python3
"""tests/kube/lease_deadline.py: a leader whose renewals stall stops leading at its renew
deadline, before a standby may take the Lease: never two leaders, and no Binding from the old one.

Owns: a leader `a` (--kube-max-inflight 2) and a standby `b` against the fake API server, with
the Lease timing of `gangsched run` (lease 15 s, renew deadline 10 s, retry 2 s).
  1. The in-flight limit full of Bindings the server holds unanswered (fault hold, a slow API
     server): a's renewals must not wait behind them. For 12 s (more than the renew deadline) a
     keeps renewing the Lease and b stays standby.
  2. Then one renewal of a's is not answered (fault delay on the Lease update for 40 s, an
     overloaded or partitioned API server). a must stop leading (its own deadline timer, the
     request cut at what is left of the deadline) at most 10 s after its last renewal was sent,
     with its two queued Bindings never sent, and only then b may lead (15 s after it saw that
     renewal). Prints the gap between a's step-down and b's takeover from their logs.
  3. SIGTERM to the new leader b with two Bindings held 3 s: b finishes them, then releases
     the Lease, and a third candidate leads well before the 15 s lease (sigterm_with_binds).
  4. The leader s3 frozen 11 s (SIGSTOP) while a pod delete waits for its retry: resumed past
     its deadline, it stops without sending the delete (no_write_past_deadline).
Before the fix, phase 1 deposed a (its renewal queued behind the Bindings) and phase 2 left a
leading until the renewal's 30 s client timeout: 17 s of two leaders were measured.

Run by tests/kube/test_lease_deadline.sh; "ok ..." / "FAIL ..." lines; exit 1 on any failure.
Bounded: about 75 s; every wait has a timeout.
"""

import datetime
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import TMP, Sched, bound, check, gang, node, wait_for  # noqa: E402
from kclient import Client  # noqa: E402

LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/gangsched"


def lease_spec(c):
    st, obj, _ = c.get(LEASE)
    return obj.get("spec", {}) if st == 200 else {}


def bindings_received(c):
    """Binding requests the server has received (held ones included)."""
    st, s, _ = c.get("/_fake/stats")
    return sum(v for k, v in s.get("by_resource", {}).items() if "binding" in k)


def log_time(sched, pattern):
    """Unix time (s) of the first log line of sched containing pattern, or None. Log lines
    start with ts=YYYY-MM-DDTHH:MM:SSZ (UTC, whole seconds)."""
    for line in sched.text().splitlines():
        if pattern in line and line.startswith("ts="):
            stamp = line[3:].split(" ", 1)[0].rstrip("Z")
            dt = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S")
            return dt.replace(tzinfo=datetime.timezone.utc).timestamp()
    return None


def main():
    kubeconfig = e2e.start_fake()
    with open(os.path.join(TMP, "config.yaml"), "w") as f:
        f.write(e2e.CONFIG)
    with open(os.path.join(TMP, "write.tok"), "w") as f:
        f.write("operator-secret\n")
    c = Client(kubeconfig)
    for n, rack in (("gpu-1", "r1"), ("gpu-2", "r1")):
        c.post("/api/v1/nodes", node(n, rack))
    flags = ["--kube-max-inflight", "2"]
    a = Sched(kubeconfig, "sched-a", os.path.join(TMP, "a.db"), flags)
    check("a leads", wait_for(a.leading, 20), a.text()[-400:])
    b = Sched(kubeconfig, "sched-b", os.path.join(TMP, "b.db"), flags)
    check("b stands by", wait_for(lambda: "started:" in b.text(), 10) and not b.leading())

    # 1. the server holds every Binding of a's: 2 fill the in-flight limit, 2 wait for a slot
    c.post("/_fake/faults", {"type": "hold", "ms": 120000, "count": 2, "path": "/binding"})
    gang(c, "slow", 4, 4)
    check("the in-flight limit fills with held Bindings",
          wait_for(lambda: bindings_received(c) == 2, 15), str(bindings_received(c)))
    t1 = time.time()
    time.sleep(12)
    spec = lease_spec(c)
    age = time.time() - e2e_time(spec.get("renewTime"))
    print("after 12 s of held Bindings: holder=%s renewTime %.1f s ago; a running: %s"
          % (spec.get("holderIdentity"), age, a.p.poll() is None))
    check("a keeps renewing while its Bindings are held (renewals bypass the in-flight limit)",
          a.p.poll() is None and spec.get("holderIdentity") == "sched-a" and age < 5,
          "%s, renewed %.1f s ago, a's exit code %s" % (spec, age, a.p.poll()))
    check("b still stands by", not b.leading(), b.text()[-400:])
    check("the queued Bindings are still queued (in-flight limit 2)", bindings_received(c) == 2,
          str(bindings_received(c)))

    # 2. the next renewal is not answered for 40 s
    before = lease_spec(c).get("renewTime")
    c.post("/_fake/faults", {"type": "delay", "ms": 40000, "count": 1, "verb": "update",
                             "path": "/leases/"})
    check("a's next renewal is held", wait_for(
        lambda: not [f for f in c.get("/_fake/stats")[1].get("faults", [])
                     if f.get("type") == "delay"], 5))
    t2 = time.time()
    # who leads, sampled every 0.1 s: a's exit and b's takeover, in this process's clock
    a_exit = b_lead = None
    n_bind = None
    end = t2 + 30
    while time.time() < end and (a_exit is None or b_lead is None):
        now = time.time()
        if a_exit is None and a.p.poll() is not None:
            a_exit = now
            n_bind = bindings_received(c)
        if b_lead is None and b.leading():
            b_lead = now
        time.sleep(0.1)
    rel = lambda t: "+%.1f s" % (t - t2) if t else "never"  # noqa: E731
    print("renewal held at t=0 (after %.1f s of held Bindings): a exited %s, b led %s"
          % (t2 - t1, rel(a_exit), rel(b_lead)))
    t_stop, t_lead = log_time(a, "stopped leading"), log_time(b, "became leader")
    if t_stop and t_lead:
        print("logs (whole seconds): a stopped leading %s, b became leader %s: %.0f s without "
              "a leader" % (rel(t_stop), rel(t_lead), t_lead - t_stop))
    check("a stops leading within the renew deadline (10 s) and exits",
          a_exit is not None and a_exit - t2 < 11.5, rel(a_exit) + ": " + a.text()[-600:])
    check("a's log says why: renew deadline passed",
          "stopped leading: renew deadline passed" in a.text(), a.text()[-600:])
    check("a sent none of its queued Bindings", n_bind == 2, str(n_bind))
    check("b takes over", b_lead is not None, b.text()[-400:])
    check("no two leaders: a had stopped before b led",
          a_exit is not None and b_lead is not None and a_exit < b_lead,
          "a exited %s, b led %s" % (rel(a_exit), rel(b_lead)))
    c.post("/_fake/release", {})
    s3 = sigterm_with_binds(c, kubeconfig, flags, b)
    no_write_past_deadline(c, s3)
    e2e.finish()


def fired(c):
    return c.get("/_fake/stats")[1].get("faults_fired", 0)


def no_write_past_deadline(c, s3):
    """4. A pod delete of the leader s3's waits for its retry (503, Retry-After 1 s) when s3 is
    frozen (SIGSTOP) for 11 s, past its renew deadline: the process sleeping through it, as a
    loop kept busy by a long cycle does. Resumed (SIGCONT), every timer due runs in the same loop
    pass: the deadline's step-down and the retry's pump. The delete must never reach the server
    (each attempt spends one fault: faults_fired counts them). Before the fix only Bindings were
    gated: the retry was started by the pump and written by curl in the pass whose uv_stop had
    just been asked, after the deadline."""
    c.post("/api/v1/nodes", node("gpu-4", "r2"))
    gang(c, "doomed", 2, 1)
    check("gang doomed runs", wait_for(lambda: len(bound(c, "doomed")) == 2 and all(
        p.get("status", {}).get("phase") == "Running" for p in bound(c, "doomed")), 15))
    c.post("/_fake/faults", {"type": "error", "code": 503, "retryAfter": 1, "count": 20,
                             "verb": "delete", "path": "/pods/doomed-"})
    f0 = fired(c)
    c.patch("/api/v1/namespaces/default/pods/doomed-1/status",
            {"status": {"phase": "Failed", "containerStatuses": [{
                "name": "main", "ready": False, "restartCount": 0, "image": "trainer",
                "imageID": "", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}},
            "application/merge-patch+json")
    check("s3 deletes the gang's pods (refused: 503, retry after 1 s)",
          wait_for(lambda: fired(c) > f0, 10, step=0.02), str(fired(c) - f0))
    s3.p.send_signal(signal.SIGSTOP)
    time.sleep(0.5)  # attempts already on their way arrive
    f1 = fired(c)
    time.sleep(11)
    s3.p.send_signal(signal.SIGCONT)
    check("s3 stops at its passed deadline", wait_for(lambda: s3.p.poll() is not None, 5),
          s3.text()[-600:])
    time.sleep(1)
    f2 = fired(c)
    print("pod deletes received: %d before the freeze, %d after the deadline (s3 exit code %s)"
          % (f1 - f0, f2 - f1, s3.p.poll()))
    check("no delete of s3's reached the server after its deadline", f2 == f1,
          "%d delete attempts after it" % (f2 - f1))


def held(c):
    return c.get("/_fake/stats")[1].get("held", 0)


def sigterm_with_binds(c, kubeconfig, flags, b):
    """3. SIGTERM to the leader b while the server holds two of its Bindings for 3 s: the binds
    finish, b's writes drain, then b releases the Lease (holder "", 1 s), so the standby `s3`
    leads at its next try (retry 2 s) instead of waiting out the lease (15 s). Before the fix b
    stopped when its binds finished without releasing: s3 led about 15 s after b's last renewal."""
    c.post("/api/v1/nodes", node("gpu-3", "r2"))
    s3 = Sched(kubeconfig, "sched-c", os.path.join(TMP, "c.db"), flags)
    check("s3 stands by", wait_for(lambda: "started:" in s3.text(), 10) and not s3.leading())
    h0 = held(c)
    c.post("/_fake/faults", {"type": "hold", "ms": 3000, "count": 2, "path": "/binding"})
    gang(c, "late", 2, 4)
    check("b's two Bindings are held", wait_for(lambda: held(c) >= h0 + 2, 15), str(held(c)))
    t0 = time.time()
    b.p.send_signal(signal.SIGTERM)
    b_exit = s3_lead = None
    while time.time() < t0 + 25 and (b_exit is None or s3_lead is None):
        if b_exit is None and b.p.poll() is not None:
            b_exit = time.time() - t0
        if s3_lead is None and s3.leading():
            s3_lead = time.time() - t0
        time.sleep(0.1)
    fmt = lambda t: "+%.1f s" % t if t is not None else "never"  # noqa: E731
    print("SIGTERM to b with 2 Bindings held 3 s: b exited %s (code %s), s3 led %s"
          % (fmt(b_exit), b.p.poll(), fmt(s3_lead)))
    check("b exits cleanly after its binds", b_exit is not None and b.p.poll() == 0,
          b.text()[-600:])
    check("b released the Lease", "released by sched-b" in b.text(), b.text()[-600:])
    check("s3 leads well before the lease's 15 s (binds 3 s + retry 2 s)",
          s3_lead is not None and s3_lead < 9, fmt(s3_lead) + ": " + s3.text()[-400:])
    check("the held Bindings landed (b's binds finished, not abandoned)",
          len(bound(c, "late")) == 2, str(len(bound(c, "late"))))
    return s3


def e2e_time(micro):
    """Unix time of a MicroTime (2026-01-02T03:04:05.678901Z); 0 when missing."""
    if not micro:
        return 0.0
    dt = datetime.datetime.strptime(micro.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
    return dt.replace(tzinfo=datetime.timezone.utc).timestamp()


if __name__ == "__main__":
    e2e.run(main)
