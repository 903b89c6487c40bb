# `gangsched serve` and `gangsched run` and signals (docs/api.md "Running it"). serve: SIGHUP is
# ignored (before: the default action ended the process, exit 129); the first SIGTERM stops the
# server and a second SIGTERM or a SIGINT while it finishes the reads in flight is ignored
# (before: closing libuv's signal handles restored the default action and the second SIGTERM
# ended it with exit 143). run (against tests/kube/fakeapi.py, on the simulation's database): the
# same for a second SIGTERM while it waits for the HTTP reads in flight (before: exit 143), and
# for a SIGHUP then (before: closing the configuration watcher's handle restored its default
# action, exit 129).
. tests/sim/lib.inc
"$GS" simulate --no-progress --db "$TMP/s.db" >/dev/null 2>&1
[ -s "$TMP/s.db" ] || { bad "simulation wrote no database"; finish; }
serve_start "$TMP/s.db"
kill -HUP $SPID
sleep 0.3
if kill -0 $SPID 2>/dev/null; then ok "serve still running after SIGHUP"; else
    wait $SPID
    bad "serve ended on SIGHUP (exit $?)"
    finish
fi
# 64 reads of 1,000 jobs a page queued on the workers: the shutdown waits for them (about 0.9 s
# here), long enough for the second SIGTERM and the SIGINT to arrive while it runs. Not pages of
# 10,000: those are built one at a time and the ones waiting end at once with 503 at the stop
# (64 of them: exit 0.16 s after SIGTERM).
cat >"$TMP/sig.py" <<'PY'
import os, signal, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(64):  # loopback, 64 connections, closed when this script ends
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /v1/jobs?limit=1000&all=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    socks.append(s)
time.sleep(0.05)
os.kill(pid, signal.SIGTERM)
time.sleep(0.1)
alive = os.path.exists("/proc/%d" % pid)
os.kill(pid, signal.SIGTERM)
time.sleep(0.05)
os.kill(pid, signal.SIGINT)
print("alive" if alive else "gone")
PY
state=$(python3 "$TMP/sig.py" "$PORT" $SPID 2>&1)
expect_eq "serve still shutting down at the second SIGTERM" "$state" alive
wait $SPID
expect_eq "serve exit after SIGTERM, SIGTERM, SIGINT" "$?" 0
cat >"$TMP/run.py" <<'PY'
import os, shutil, signal, socket, sys, time
sys.path.insert(0, "tests/kube")
import e2e  # noqa: E402
kubeconfig, c = e2e.start_with_config("apiVersion: gangsched.io/v1alpha1\n"
                                      "kind: SchedulerConfig\nqueues:\n  - name: q\n")
db = os.path.join(e2e.TMP, "g.db")
shutil.copy(sys.argv[1], db)  # the simulation's database: its reads of every job are slow
s = e2e.Sched(kubeconfig, "sig", db)
e2e.check("the daemon leads", e2e.wait_for(s.leading, 20), s.text()[-500:])
port = int(s.url().rsplit(":", 1)[1])
socks = []
for i in range(64):  # loopback, 64 connections: reads the shutdown waits for
    k = socket.create_connection(("127.0.0.1", port), timeout=5)
    k.sendall(b"GET /v1/jobs?limit=1000&all=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    socks.append(k)
time.sleep(0.05)
s.p.send_signal(signal.SIGTERM)
time.sleep(0.3)
alive = s.p.poll() is None
s.p.send_signal(signal.SIGTERM)
time.sleep(0.05)
if s.p.poll() is None:
    s.p.send_signal(signal.SIGINT)
time.sleep(0.05)
if s.p.poll() is None:  # a reload asked for while it shuts down (before: exit 129)
    s.p.send_signal(signal.SIGHUP)
try:
    rc = s.p.wait(90)  # the 64 reads finish first (slow under the sanitizers)
except Exception:
    rc = "still running"
e2e.check("the daemon still shutting down at the second SIGTERM", alive)
e2e.check("the daemon exits 0 after SIGTERM, SIGTERM, SIGINT, SIGHUP", rc == 0, str(rc))
e2e.finish()
PY
if BIN="$BIN" timeout 150 python3 "$TMP/run.py" "$TMP/s.db" >"$TMP/run.out" 2>&1; then
    ok "gangsched run: a second SIGTERM while it shuts down is ignored, exit 0"
else
    bad "gangsched run and a second SIGTERM: $(tail -n 30 "$TMP/run.out")"
fi
finish
