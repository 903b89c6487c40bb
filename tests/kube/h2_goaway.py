"""tests/kube/h2_goaway.py: HTTP/2 GOAWAY from the API server, as kube-apiserver sends it (its
--goaway-chance filter and its graceful shutdown, through Go's HTTP/2 server: NO_ERROR,
last-stream-id = the highest stream it has seen, open streams run to their end), through
tests/kube/h2front.js. The daemon leads (leader election on) the whole time.

0. A leader's Lease requests, its other requests and its watches ride one session.
1. Two Bindings are held by the fake server (in flight on session 1) when session 1 gets a
   graceful GOAWAY: released, both are answered on session 1 and the gang is bound; the next
   gang's Binding goes on a new session, none on session 1 after its GOAWAY (the front refuses
   and counts any stream above last-stream-id). 1b: the GOAWAY of --goaway-chance, right after
   a Lease renewal's answer: later renewals go on a new session, a later gang is bound.
2. goaway-refuse: the front answers the next Binding with GOAWAY below its stream id and
   RST_STREAM REFUSED_STREAM (the stream was not processed: RFC 9113 section 6.8): the Binding
   is sent again on a new session and the gang is bound.
3. Every session gets a GOAWAY and is closed 1 s later with its watches still open (kube-apiserver
   closing what is left at its shutdown timeout): the watches start again on a new session, a
   gang created afterwards is bound.
Throughout: every pod bound exactly once (fake server: binds == bound pods == pods created,
no Binding conflict), leadership never lost, the daemon alive. Every wait is bounded.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import e2e  # noqa: E402
from e2e import bound, check, gang, node, wait_for  # noqa: E402
import h2util  # noqa: E402

BOUND_S = 15


def fake_stats(c):
    return c.get("/_fake/stats")[1]


def renewal_moved(front):
    """A Lease renewal on another session than the one of the last GOAWAY (the front's log)."""
    lines = front.text().splitlines()
    gone = [i for i, x in enumerate(lines) if ": GOAWAY last-stream-id" in x]
    if not gone:
        return False
    sess = lines[gone[-1]].split("session ", 1)[1].split(":", 1)[0]
    return any("/leases/" in x and "session %s stream" % sess not in x
               for x in lines[gone[-1] + 1:])


def blind_resends(front):
    """Bindings of a pod forwarded to the server twice without a GET of that pod in between
    (a refused stream, logged right after its POST line, was never forwarded: not counted)."""
    lines = [x.split("h2front: ", 1)[-1].split(" ", 1)[-1] for x in front.text().splitlines()]
    sent, out = set(), []
    for i, x in enumerate(lines):
        if ": POST " in x and x.endswith("/binding"):
            key = x.split(": POST", 1)[0]
            pod = x.rsplit("/pods/", 1)[1][:-len("/binding")]
            if any(y == key + ": refused, not forwarded" for y in lines[i + 1:i + 4]):
                continue
            if pod in sent:
                out.append("%s: Binding forwarded again (%s)" % (pod, key))
            sent.add(pod)
        elif ": GET /api/v1/namespaces/default/pods/" in x:
            sent.discard(x.rsplit("/pods/", 1)[1])
    return out


def main():
    front, c = h2util.start()
    for i in range(6):
        c.post("/api/v1/nodes", node("gpu-%d" % i, "r1"))
    s = e2e.Sched(front.kubeconfig, "d", os.path.join(e2e.TMP, "d.db"),
                  extra=["--log-level", "debug"])
    check("the daemon leads", wait_for(s.leading, 20))
    gang(c, "one", 1, 1)
    check("a gang is bound through the HTTP/2 front",
          wait_for(lambda: len(bound(c, "one")) == 1, 20))
    st = front.stats()
    check("a leader's requests, Lease included, and its watches ride one session (%d)"
          % st["sessions_opened"], st["sessions_opened"] == 1, str(st["sessions"]))
    pods = 1

    # 1. graceful GOAWAY with two Bindings in flight
    c.post("/_fake/faults", {"type": "hold", "verb": "create", "path": "/binding", "count": 2})
    gang(c, "two", 2, 1)
    pods += 2
    check("two Bindings held by the server (in flight on session 1)",
          wait_for(lambda: c.get("/_fake/held")[1]["held"] == 2, 15))
    front.fault({"type": "goaway"})
    time.sleep(0.5)
    c.post("/_fake/release", {})
    check("1. released after the GOAWAY, both are answered on session 1: the gang is bound",
          wait_for(lambda: len(bound(c, "two")) == 2, BOUND_S))
    gang(c, "three", 1, 1)
    pods += 1
    check("1. a gang created after the GOAWAY is bound",
          wait_for(lambda: len(bound(c, "three")) == 1, BOUND_S))
    st = front.stats()
    check("1. its requests went on a new session (%d sessions opened in all) and no stream was "
          "started on a session after its GOAWAY (%d refused)"
          % (st["sessions_opened"], st["refused"]),
          st["sessions_opened"] >= 2 and st["refused"] == 0, str(st["sessions"]))

    # 1b. --goaway-chance: the GOAWAY right after a response's headers (the next Lease renewal's)
    g1 = st["goaways_sent"]
    front.fault({"type": "goaway-after", "path": "/leases/"})
    check("1b. a GOAWAY follows a Lease renewal's answer (as --goaway-chance sends it)",
          wait_for(lambda: front.stats()["goaways_sent"] == g1 + 1, 10))
    check("1b. the next renewal goes on another session", wait_for(lambda: renewal_moved(front), 10),
          front.text()[-3000:])
    gang(c, "three-b", 1, 1)
    pods += 1
    check("1b. a gang created afterwards is bound",
          wait_for(lambda: len(bound(c, "three-b")) == 1, BOUND_S))
    st = front.stats()

    # 2. a Binding refused (not processed) by a GOAWAY below it
    ga0 = st["goaways_sent"]
    front.fault({"type": "goaway-refuse", "path": "/binding"})
    gang(c, "four", 1, 1)
    pods += 1
    check("2. a Binding refused by GOAWAY + REFUSED_STREAM is sent again: the gang is bound",
          wait_for(lambda: len(bound(c, "four")) == 1, BOUND_S))
    st = front.stats()
    check("2. the front refused it (%d refused, %d GOAWAYs, %d sessions)"
          % (st["refused"], st["goaways_sent"], st["sessions_opened"]),
          st["refused"] == 1 and st["goaways_sent"] == ga0 + 1, str(st["sessions"]))

    # 3. every session closed after its GOAWAY, watches included
    n0 = st["sessions_opened"]
    front.fault({"type": "goaway", "closeAfterMs": 1000})
    check("3. the sessions are closed",
          wait_for(lambda: front.stats()["sessions_open"] == 0 or
                   front.stats()["sessions_opened"] > n0, 10))
    time.sleep(1.5)
    gang(c, "five", 1, 1)
    pods += 1
    check("3. a gang created after every connection closed is bound (watches started again)",
          wait_for(lambda: len(bound(c, "five")) == 1, BOUND_S))
    st = front.stats()
    check("3. on a new session (%d opened)" % st["sessions_opened"],
          st["sessions_opened"] > n0, str(st["sessions"]))

    fs = fake_stats(c)
    check("every pod bound exactly once: %d pods, %d Bindings applied, %d pods bound"
          % (pods, fs["binds"], fs["bound_pods"]),
          fs["binds"] == pods and fs["bound_pods"] == pods,
          str({k: fs[k] for k in ("binds", "bound_pods", "bind_conflicts", "codes")}))
    blind = blind_resends(front)
    check("no Binding the server received was sent again blindly (%d refused by 409, each "
          "followed by a read-back of the pod; the daemon's own status write no longer races "
          "it: tests/kube/test_bind_status_race.sh)"
          % fs["bind_conflicts"], not blind, "\n".join(blind))
    lost = [x for x in s.text().splitlines() if "stopped leading" in x]
    check("leadership never lost", not lost, "\n".join(lost))
    check("the daemon is alive", s.p.poll() is None)
    e2e.finish()


if __name__ == "__main__":
    e2e.run(main)
