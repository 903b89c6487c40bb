# The HTTP API end to end: `gangsched serve` on a simulator database (loopback, port 0), gangctl
# against it (every tenant command's output equals offline mode's on the same file), operator
# writes recorded as actions, authorisation (no token, wrong token, read-only token on a write),
# malformed requests and oversized bodies (raw bytes through python3's socket module), and
# `promtool check metrics` on /metrics (promtool must be installed: `make test` installs it).
. tests/sim/lib.inc
CTL="$BIN/gangctl"
command -v promtool >/dev/null || { bad "promtool not installed (Debian package prometheus)"; finish; }
command -v python3 >/dev/null || { bad "python3 not installed"; finish; }
ARGS="--no-progress --policy gangsched --cluster hgx:4,pcie:2 --trace tests/data/trace-crash.csv --high-priority 0.33"
# shellcheck disable=SC2086
"$GS" simulate $ARGS --db "$TMP/s.db" --stop-after-events 1500 --db-batch 16 >/dev/null 2>&1
[ -s "$TMP/s.db" ] || { bad "simulation wrote no database"; finish; }
# a stopped run leaves its last commits in the WAL: copy it along
# a cpu quota and usage (the store keeps millicores; /metrics must say cores), in the database
# the offline and the remote answers both read
python3 -c "
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=10)
c.execute(\"INSERT OR REPLACE INTO queue_quota VALUES ('prod', 'default', 'cpu', 4000, 2500, NULL)\")
c.execute(\"INSERT OR REPLACE INTO ledger VALUES ('prod', 'default', 'cpu', 1500)\")
c.commit()" "$TMP/s.db"
cp "$TMP/s.db" "$TMP/served.db"
[ -f "$TMP/s.db-wal" ] && cp "$TMP/s.db-wal" "$TMP/served.db-wal"
echo "write-secret" >"$TMP/w.tok"
echo "read-secret" >"$TMP/r.tok"
serve_start "$TMP/served.db" --token-file "$TMP/w.tok" --read-token-file "$TMP/r.tok"
URL="http://127.0.0.1:$PORT"
ok "serve listening on port $PORT"

# ---- tenant commands: remote = offline -----------------------------------------------------
p1=$("$CTL" --db "$TMP/s.db" jobs -q prod -o json | "$JGET" /dev/stdin jobs/0/job 2>/dev/null)
[ -n "$p1" ] || p1=$("$CTL" --db "$TMP/s.db" jobs -o json | sed -n 's/.*"job":[^"]*"\([^"]*\)".*/\1/p' | head -1)
for fmt in table json yaml; do
    for cmd in "queues" "quota" "quota prod" "jobs" "jobs -A" "jobs -q prod" "top" "reservations" \
        "explain $p1" "explain $p1 --limit 3"; do
        # shellcheck disable=SC2086
        "$CTL" --db "$TMP/s.db" -o $fmt $cmd >"$TMP/off" 2>&1
        # shellcheck disable=SC2086
        timeout 20 "$CTL" --server "$URL" --token-file "$TMP/r.tok" -o $fmt $cmd >"$TMP/on" 2>&1
        if cmp -s "$TMP/off" "$TMP/on"; then ok "$cmd -o $fmt: remote = offline"; else
            bad "$cmd -o $fmt differs: $(diff "$TMP/off" "$TMP/on" | head -5)"; fi
    done
done
GANGSCHED_TOKEN=read-secret GANGSCHED_SERVER="$URL" timeout 20 "$CTL" queues >"$TMP/env.txt" &&
    "$CTL" --db "$TMP/s.db" queues | cmp -s - "$TMP/env.txt" && ok "GANGSCHED_SERVER and GANGSCHED_TOKEN" ||
    bad "environment variables"

# ---- errors and authorisation ---------------------------------------------------------------
expect_fail "unknown queue remote" 1 "queue 'nope' not found" -- "$CTL" --server "$URL" --token-file "$TMP/r.tok" quota nope
expect_fail "unknown job remote" 1 "job 'ns/nope' not found" -- "$CTL" --server "$URL" --token-file "$TMP/r.tok" explain ns/nope
expect_fail "read without a token" 3 "unauthorized (401)" -- "$CTL" --server "$URL" queues
echo wrong >"$TMP/bad.tok"
expect_fail "read with a wrong token" 3 "invalid bearer token" -- "$CTL" --server "$URL" --token-file "$TMP/bad.tok" queues
expect_fail "write without a token" 3 "unauthorized (401)" -- "$CTL" --server "$URL" queue hold prod
expect_fail "write with a wrong token" 3 "invalid bearer token" -- "$CTL" --server "$URL" --token-file "$TMP/bad.tok" queue hold prod
expect_fail "write with the read-only token" 3 "forbidden (403)" -- "$CTL" --server "$URL" --token-file "$TMP/r.tok" queue hold prod
expect_fail "hold an unknown queue" 1 "queue 'nope' not found" -- "$CTL" --server "$URL" --token-file "$TMP/w.tok" queue drain nope
expect_fail "checkpoint an unknown job" 1 "job 'ns/nope' not found" -- "$CTL" --server "$URL" --token-file "$TMP/w.tok" checkpoint ns/nope
expect_fail "delete an unknown reservation" 1 "reservation '999' not found" -- "$CTL" --server "$URL" --token-file "$TMP/w.tok" reserve delete 999

# ---- operator writes --------------------------------------------------------------------------
"$CTL" --server "$URL" --token-file "$TMP/w.tok" queue hold prod >"$TMP/h.txt" &&
    grep -q "hold of queue 'prod' requested (action 1, pending)" "$TMP/h.txt" && ok "queue hold" || bad "queue hold: $(cat "$TMP/h.txt")"
"$CTL" --server "$URL" --token-file "$TMP/w.tok" queue resume prod >/dev/null && ok "queue resume" || bad "queue resume"
"$CTL" --server "$URL" --token-file "$TMP/w.tok" -o json checkpoint "$p1" >"$TMP/c.json" &&
    expect_eq "checkpoint action" "$("$JGET" "$TMP/c.json" action/kind)" checkpoint
"$CTL" --server "$URL" --token-file "$TMP/w.tok" reserve add "$p1" hgx-0001 hgx-0002 >/dev/null && ok "reserve add" || bad "reserve add"
# the token file is re-read when it changes (a rotated Secret)
echo "rotated-secret" >"$TMP/w.tok.new" && mv "$TMP/w.tok.new" "$TMP/w.tok"
"$CTL" --server "$URL" --token-file "$TMP/w.tok" queue drain research >/dev/null && ok "rotated write token accepted" || bad "rotated token refused"
echo write-secret >"$TMP/old.tok"
expect_fail "old write token refused after rotation" 3 "invalid bearer token" -- "$CTL" --server "$URL" --token-file "$TMP/old.tok" queue hold prod
n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from operator_actions').fetchone()[0])" "$TMP/served.db")
expect_eq "operator actions recorded" "$n" 5

# ---- raw HTTP: malformed requests, limits, keep-alive, 404/405 -----------------------------------
cat >"$TMP/raw.py" <<'PY'
import socket, sys
port = int(sys.argv[1])
def ask(data, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError:
        pass
    s.close()
    return out
def status(resp):
    try:
        return int(resp.split(b" ", 2)[1])
    except Exception:
        return 0
cases = [
    ("garbage", b"\x00\x01GARBAGE\r\n\r\n", 400),
    ("bad version", b"GET /healthz HTTP/9\r\n\r\n", 400),
    ("bad header", b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n", 400),
    ("huge header", b"GET /healthz HTTP/1.1\r\nX-A: " + b"a" * 20000 + b"\r\n\r\n", 431),
    ("huge body", b"POST /v1/reservations HTTP/1.1\r\nContent-Length: 70000\r\n\r\n" + b"x" * 70000, 413),
    ("huge chunked body", b"POST /v1/reservations HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + (b"8000\r\n" + b"x" * 0x8000 + b"\r\n") * 3 + b"0\r\n\r\n", 413),
    ("bad percent", b"GET /v1/queues/%zz HTTP/1.1\r\n\r\n", 400),
    ("unknown route", b"GET /v2/nothing HTTP/1.1\r\n\r\n", 404),
    ("wrong method", b"PUT /v1/queues HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
    ("bad json body", b"POST /v1/reservations HTTP/1.1\r\nAuthorization: Bearer rotated-secret\r\nContent-Length: 5\r\n\r\n{nope", 400),
    ("healthz", b"GET /healthz HTTP/1.1\r\n\r\n", 200),
    ("readyz", b"GET /readyz HTTP/1.1\r\n\r\n", 200),
]
fails = 0
for name, data, want in cases:
    got = status(ask(data))
    print(("ok  " if got == want else "FAIL") + " raw %s: %d (want %d)" % (name, got, want))
    fails += got != want
# two requests on one connection (keep-alive, pipelined)
r = ask(b"GET /healthz HTTP/1.1\r\n\r\nGET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n")
n = r.count(b"HTTP/1.1 200")
print(("ok  " if n == 2 else "FAIL") + " keep-alive: %d answers on one connection" % n)
fails += n != 2
# a client that sends half a request and stalls gets 408 after the timeout; skipped (10 s)
sys.exit(1 if fails else 0)
PY
timeout 60 python3 "$TMP/raw.py" "$PORT" >"$TMP/raw.txt" 2>&1 && ok "raw HTTP cases" || bad "raw HTTP: $(grep -v '^ok' "$TMP/raw.txt")"
grep '^ok' "$TMP/raw.txt" | sed 's/^ok  /ok   /'

# ---- metrics --------------------------------------------------------------------------------------
python3 - "$PORT" >"$TMP/metrics.txt" <<'PY'
import sys, urllib.request
req = urllib.request.Request("http://127.0.0.1:%s/metrics" % sys.argv[1], headers={"Authorization": "Bearer read-secret"})
sys.stdout.write(urllib.request.urlopen(req, timeout=20).read().decode())
PY
promtool check metrics <"$TMP/metrics.txt" >"$TMP/promtool.txt" 2>&1 && ok "promtool check metrics" ||
    bad "promtool: $(cat "$TMP/promtool.txt")"
for m in gangsched_admission_wait_time_seconds_bucket gangsched_jobs gangsched_cluster_queue_resource_usage \
    gangsched_cluster_queue_nominal_quota gangsched_queue_share gangsched_http_requests_total \
    gangsched_build_info gangsched_admitted_workloads_total; do
    grep -q "^$m{" "$TMP/metrics.txt" && ok "metric $m" || bad "metric $m missing"
done
# Kueue's labels (cohort, cluster_queue) and Prometheus' base units: cpu in cores (4 per GPU here)
grep -q '^gangsched_cluster_queue_nominal_quota{cohort="all",cluster_queue="prod",flavor="default",resource="nvidia.com/gpu"} ' "$TMP/metrics.txt" &&
    ok "nominal quota: cohort and cluster_queue labels" || bad "nominal labels: $(grep nominal_quota "$TMP/metrics.txt" | head -2)"
# the cpu quota and usage added to the database before it was served
cp "$TMP/metrics.txt" "$TMP/metrics2.txt"
cpu_l='{cohort="all",cluster_queue="prod",flavor="default",resource="cpu"}'
grep -q -F "gangsched_cluster_queue_nominal_quota$cpu_l 4" "$TMP/metrics2.txt" && ok "cpu nominal in cores (4)" || bad "cpu nominal: $(grep -F "$cpu_l" "$TMP/metrics2.txt")"
grep -q -F "gangsched_cluster_queue_borrowing_limit$cpu_l 2.5" "$TMP/metrics2.txt" && ok "borrowing limit gauge (2.5 cores)" || bad "borrowing limit"
grep -q -F "gangsched_cluster_queue_resource_usage$cpu_l 1.5" "$TMP/metrics2.txt" && ok "cpu usage in cores (1.5)" || bad "cpu usage"
grep -q -F "gangsched_cluster_queue_lending_limit$cpu_l" "$TMP/metrics2.txt" && bad "a lending limit gauge without a limit" || ok "no lending limit gauge when unlimited"
for m in process_start_time_seconds process_cpu_seconds_total process_resident_memory_bytes process_open_fds; do
    grep -q "^$m [0-9]" "$TMP/metrics.txt" && ok "metric $m" || bad "metric $m missing"
done
grep -q '^gangsched_build_info{version="[0-9.]*"} 1$' "$TMP/metrics.txt" && ok "build_info" || bad "build_info"
grep -q '^gangsched_http_requests_total{method="GET",code="401"}' "$TMP/metrics.txt" && ok "401s counted" || bad "401s not counted"

# ---- token files: one reader (config_token_read) for serve and gangctl ----------------------------
printf ' \t rotated-secret \r\n' >"$TMP/w.tok.new" && mv "$TMP/w.tok.new" "$TMP/w.tok"
"$CTL" --server "$URL" --token-file "$TMP/w.tok" queue resume research >/dev/null &&
    ok "blanks around the token: serve and gangctl read the same token" || bad "token with blanks refused"
python3 -c "print('t' * 1500)" >"$TMP/w.tok.new" && mv "$TMP/w.tok.new" "$TMP/w.tok"
"$CTL" --server "$URL" --token-file "$TMP/w.tok" queue resume research >/dev/null &&
    ok "a 1,500-byte token (a service-account JWT) whole" || bad "1,500-byte token refused"
expect_fail "token file is a directory" 2 "token-file: cannot read $TMP: a directory, not a regular file" -- "$CTL" --server "$URL" --token-file "$TMP" queue hold prod
: >"$TMP/empty.tok"
expect_fail "empty token file" 2 "token file $TMP/empty.tok: no token on its first line" -- "$CTL" --server "$URL" --token-file "$TMP/empty.tok" queue hold prod
# a FIFO at the write token's path: every authorised request reads it; the server must not wait
# for a writer (before: the event loop stopped, this read timed out)
rm -f "$TMP/w.tok" && mkfifo "$TMP/w.tok"
timeout 10 "$CTL" --server "$URL" --token-file "$TMP/r.tok" queues >/dev/null &&
    ok "a FIFO as token file does not block the server" || bad "read with a FIFO as write token file: exit $?"
expect_fail "write with a FIFO as token file" 3 "forbidden (403)" -- timeout 10 "$CTL" --server "$URL" --token-file "$TMP/old.tok" queue hold prod
grep -q "cannot read $TMP/w.tok: a FIFO, not a regular file: requests needing its token are refused" "$TMP/serve.log" &&
    ok "serve logs the token file it cannot use" || bad "no log of the FIFO token file: $(tail -3 "$TMP/serve.log")"
rm -f "$TMP/w.tok"
# names with '.' and '..' segments reach their own route (before: curl folded them, so queue hold
# ../../x was POST /x/hold); an empty name is refused before any request
printf 'rotated-secret\n' >"$TMP/w.tok"
expect_fail "queue hold '..': queue '..'" 1 "queue '..' not found" -- "$CTL" --server "$URL" --token-file "$TMP/w.tok" queue hold ..
expect_fail "queue hold '../../x' stays under /v1/queues" 1 "no such route: POST /v1/queues/%2E%2E/%2E%2E/x/hold" -- "$CTL" --server "$URL" --token-file "$TMP/w.tok" queue hold ../../x
expect_fail "checkpoint '../../queues/prod': a job name" 1 "job '../../queues/prod' not found" -- "$CTL" --server "$URL" --token-file "$TMP/w.tok" checkpoint ../../queues/prod
expect_fail "queue hold ''" 2 "'' is not a name: it is empty" -- "$CTL" --server "$URL" --token-file "$TMP/w.tok" queue hold ""

# ---- shutdown ---------------------------------------------------------------------------------------
kill $SPID
i=0
while kill -0 $SPID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
kill -0 $SPID 2>/dev/null && bad "serve still running after SIGTERM" || { wait $SPID; expect_eq "serve exit on SIGTERM" "$?" 0; }
"$GS" store check "$TMP/served.db" >/dev/null && ok "served database consistent" || bad "store check"
finish
