#!/bin/sh
# tests/kube/test_client.sh: the Kubernetes API client (sched/kube) against the fake API server.
#
# Starts tests/kube/fakeapi.py (TLS with a bearer token, loopback only) and drives the client
# through build/tests/kubeprobe: requests with TLS and the token; a wrong token gives a clear 401;
# 500s and a 429 with Retry-After (seconds, and an HTTP date) are retried; an informer lists pods
# as a streaming list (WatchList: its first stream cut before its end is streamed again) and
# watches them, survives a dropped watch (reconnect), and after a 410 lists again and reports an
# object deleted meanwhile as a synthetic DELETED; asked to, it lists in pages of one; against a
# server with the WatchList gate off (422) it falls back to pages, as client-go's reflector does; two lease candidates elect one leader, and the other takes over after a
# release and after the leader stops renewing, within the lease duration.
# Every wait is bounded; the server and probes are killed on exit. Environment: BUILD.
set -u
BUILD=${BUILD:-build}
P=$BUILD/tests/kubeprobe
[ -x "$P" ] || { echo "missing $P (make test-bins)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing"; exit 1; }
D=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
    echo "FAIL: $*"
    for f in "$D"/*.out; do
        [ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }
    done
    echo "--- fake server log"
    tail -n 20 "$D/fake.log"
    exit 1
}
ok() { echo "ok   $*"; }

# waitfor FILE PATTERN SECONDS: true once a line of FILE matches the extended regex
waitfor() {
    i=0
    while [ "$i" -lt $(($3 * 10)) ]; do
        grep -Eq "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# start_fake NAME ARGS...: a fake API server (TLS, the token) whose port, kubeconfig and log are
# $D/NAME.port, $D/NAME.kc and $D/NAME.log; waits until it listens
start_fake() {
    n=$1
    shift
    python3 tests/kube/fakeapi.py --port 0 --port-file "$D/$n.port" --kubeconfig-out "$D/$n.kc" \
        --token "tok-$$" "$@" >"$D/$n.log" 2>&1 &
    pids="$pids $!"
    i=0
    while [ ! -s "$D/$n.port" ] || [ ! -s "$D/$n.kc" ]; do
        i=$((i + 1))
        [ "$i" -gt 150 ] && fail "fake API server $n did not start in 15 s"
        sleep 0.1
    done
}
start_fake fake --bookmark-interval 1
KC=$D/fake.kc
req() { timeout 30 "$P" request "$KC" "$@"; }
pod() { printf '{"metadata":{"name":"%s"},"spec":{"containers":[{"name":"c","image":"x"}]}}' "$1"; }
fault() { req POST /_fake/faults "$1" >/dev/null || fail "cannot add fault $1"; }
PODS=/api/v1/namespaces/default/pods

# ---- requests, TLS, token -----------------------------------------------------------------------
req POST $PODS "$(pod p1)" >"$D/r.out" || fail "create p1 over TLS with the token"
grep -q "status=201 attempts=1" "$D/r.out" || fail "create p1: $(head -1 "$D/r.out")"
ok "TLS with a bearer token"

sed "s/token: tok-$$/token: wrong/" "$KC" >"$D/kc-wrong"
timeout 30 "$P" request "$D/kc-wrong" GET $PODS >"$D/r.out" && fail "wrong token accepted"
grep -q "status=401 attempts=1 reason=Unauthorized error=Unauthorized" "$D/r.out" ||
    fail "wrong token: $(head -1 "$D/r.out")"
ok "wrong token: 401 Unauthorized, not retried"

# tokenFile: read at start; after a 401 it is read again and the request retried once
sed "s|token: tok-$$|tokenFile: tok|" "$KC" >"$D/kc-file"
echo "tok-$$" >"$D/tok"
timeout 30 "$P" request "$D/kc-file" GET $PODS >"$D/r.out" || fail "tokenFile: $(head -1 "$D/r.out")"
echo "stale" >"$D/tok"
timeout 30 "$P" request "$D/kc-file" GET $PODS >"$D/r.out" && fail "stale tokenFile accepted"
grep -q "status=401 attempts=2" "$D/r.out" || fail "401 with tokenFile: $(head -1 "$D/r.out")"
ok "tokenFile relative to the kubeconfig; a 401 re-reads it and retries once"

req GET /api/v1/namespaces/default/pods/nope >"$D/r.out" && fail "missing pod found"
grep -q 'status=404 attempts=1 reason=NotFound error=pods "nope" not found' "$D/r.out" ||
    fail "404: $(head -1 "$D/r.out")"
ok "404: the Status message and reason"

fault '{"type":"error","code":500,"count":2,"verb":"list","path":"/configmaps"}'
req GET /api/v1/namespaces/default/configmaps >"$D/r.out" || fail "500s not retried"
grep -q "status=200 attempts=3" "$D/r.out" || fail "500 retry: $(head -1 "$D/r.out")"
ok "two 500s retried (3 attempts)"

fault '{"type":"error","code":429,"count":1,"retryAfter":2,"verb":"list","path":"/secrets"}'
req GET /api/v1/namespaces/default/secrets >"$D/r.out" || fail "429 not retried"
grep -q "status=200 attempts=2" "$D/r.out" || fail "429 retry: $(head -1 "$D/r.out")"
t=$(sed -n '1s/^t=\([0-9]*\) .*/\1/p' "$D/r.out")
[ "$t" -ge 1900 ] || fail "429 with Retry-After: 2 retried after $t ms"
grep -q "throttled=1" "$D/r.out" || fail "429 not counted as throttled"
ok "429 with Retry-After 2 waited ${t} ms"

# the same as an HTTP date (now + 3 s, whole seconds: 2 to 3 s are left when it arrives)
fault '{"type":"error","code":429,"count":1,"retryAfter":3,"retryAfterForm":"date","verb":"list","path":"/secrets"}'
req GET /api/v1/namespaces/default/secrets >"$D/r.out" || fail "429 (date) not retried"
grep -q "status=200 attempts=2" "$D/r.out" || fail "429 (date) retry: $(head -1 "$D/r.out")"
t=$(sed -n '1s/^t=\([0-9]*\) .*/\1/p' "$D/r.out")
[ "$t" -ge 1900 ] || fail "429 with an HTTP-date Retry-After 3 s ahead retried after $t ms"
ok "429 with an HTTP-date Retry-After waited ${t} ms"

# ---- informer -----------------------------------------------------------------------------------
# In pages of one (a streaming list not asked for): two list requests, no streaming watch.
req POST $PODS "$(pod p0)" >/dev/null || fail "create p0"
lists() { req GET /_fake/stats | tr -d ' \n' | sed -n "s/.*\"$1pods\":\([0-9]*\).*/\1/p"; }
l0=$(lists list)
KUBEPROBE_PAGED=1 KUBEPROBE_PAGE=1 timeout 30 "$P" watch "$KC" /api/v1/pods 20 "$D/stop-p" >"$D/paged.out" 2>"$D/paged.err" &
pids="$pids $!"
waitfor "$D/paged.out" "SYNCED" 10 || fail "no SYNCED in pages"
grep -q "ADDED default/p1 " "$D/paged.out" && grep -q "ADDED default/p0 " "$D/paged.out" ||
    fail "p0 and p1 not listed in pages"
touch "$D/stop-p"
waitfor "$D/paged.out" "STATS" 10 || fail "paged probe did not stop"
grep -q "paged_lists=1 streamed_lists=0 " "$D/paged.out" || fail "paged: $(grep STATS "$D/paged.out")"
[ $(($(lists list) - ${l0:-0})) -ge 2 ] || fail "pages of one: $(($(lists list) - ${l0:-0})) list requests"
ok "list in pages of one: p0 and p1 ADDED, SYNCED, no streaming list"

# As a streaming list, the first stream cut after one event (before its end): streamed again
# whole; watches time out every 3 s.
fault '{"type":"drop-watch","afterEvents":1,"count":1,"path":"/pods"}'
l0=$(lists list)
KUBEPROBE_WATCH_TIMEOUT=3 timeout 90 "$P" watch "$KC" /api/v1/pods 80 "$D/stop" >"$D/watch.out" 2>"$D/watch.err" &
pids="$pids $!"
waitfor "$D/watch.out" "SYNCED" 10 || fail "no initial SYNCED"
grep -q "ADDED default/p1 " "$D/watch.out" || fail "p1 not listed"
grep -q "ADDED default/p0 " "$D/watch.out" || fail "p0 not listed"
grep -q "streaming list ended before its initial events did" "$D/watch.err" ||
    fail "the cut stream: $(cat "$D/watch.err")"
[ "$(lists list)" = "$l0" ] || fail "a streaming list made list requests ($l0 -> $(lists list))"
ok "streaming list: cut before its end, streamed again; p0 and p1 ADDED, SYNCED, no LIST"
req POST $PODS "$(pod p2)" >/dev/null || fail "create p2"
waitfor "$D/watch.out" "ADDED default/p2 " 10 || fail "watch: no ADDED p2"
req POST $PODS "$(pod p3)" >/dev/null || fail "create p3"
waitfor "$D/watch.out" "ADDED default/p3 " 10 || fail "watch: no ADDED p3 after the dropped watch"
req DELETE $PODS/p3 >/dev/null || fail "delete p3"
waitfor "$D/watch.out" "DELETED default/p3 " 10 || fail "watch: no DELETED p3"
ok "watch: ADDED and DELETED events, across a dropped watch"

# 410: the watch is kept down by errors while p2 is deleted and the history compacted; the next
# watch gets ERROR 410, the informer relists and reports p2 as deleted (synthetic).
fault '{"type":"error","code":500,"count":2,"verb":"watch","path":"/pods"}'
i=0
until req GET /_fake/faults | grep -q '"count": *1'; do
    i=$((i + 1))
    [ "$i" -gt 100 ] && fail "the watch did not hit the injected error"
    sleep 0.1
done
req DELETE $PODS/p2 >/dev/null || fail "delete p2"
req POST /_fake/compact >/dev/null || fail "compact"
waitfor "$D/watch.out" "DELETED default/p2 " 15 || fail "no DELETED p2 after the 410"
waitfor "$D/watch.out" "SYNCED.*" 1
[ "$(grep -c SYNCED "$D/watch.out")" -ge 2 ] || fail "no second SYNCED (relist)"
first_sync=$(grep -n SYNCED "$D/watch.out" | sed -n '1s/:.*//p')
second_sync=$(grep -n SYNCED "$D/watch.out" | sed -n '2s/:.*//p')
del=$(grep -n "DELETED default/p2 " "$D/watch.out" | sed 's/:.*//')
[ "$del" -gt "$first_sync" ] && [ "$del" -lt "$second_sync" ] ||
    fail "DELETED p2 is not part of the relist (lines $first_sync $del $second_sync)"
ok "410: relist with a synthetic DELETED p2"
sleep 4 # at least one clean watch timeout
touch "$D/stop"
waitfor "$D/watch.out" "STATS" 10 || fail "watch probe did not stop"
st=$(grep STATS "$D/watch.out")
relists=$(echo "$st" | sed 's/.*relists=\([0-9]*\).*/\1/')
reconnects=$(echo "$st" | sed 's/.*reconnects=\([0-9]*\).*/\1/')
[ "$relists" -ge 1 ] || fail "relists=$relists"
[ "$reconnects" -ge 3 ] || fail "reconnects=$reconnects"
echo "$st" | grep -q "paged_lists=0 streamed_lists=2 stream_refused=0" ||
    fail "the streaming lists (the first and after the 410): $st"
grep -q "malformed" "$D/watch.err" && fail "malformed events: $(cat "$D/watch.err")"
ok "informer counters: relists=$relists reconnects=$reconnects"

# A server with the WatchList gate off answers the streaming list 422: listed in pages from then on.
start_fake gateoff --feature-gates WatchList=false
timeout 30 "$P" request "$D/gateoff.kc" POST $PODS "$(pod q0)" >/dev/null || fail "create q0"
timeout 30 "$P" watch "$D/gateoff.kc" /api/v1/pods 20 "$D/stop2" >"$D/gate.out" 2>"$D/gate.err" &
pids="$pids $!"
waitfor "$D/gate.out" "SYNCED" 10 || fail "no SYNCED with the WatchList gate off"
grep -q "ADDED default/q0 " "$D/gate.out" || fail "q0 not listed with the gate off"
grep -qF 'streaming list refused (HTTP 422: ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled): listing in pages' "$D/gate.err" ||
    fail "the refusal: $(cat "$D/gate.err")"
timeout 30 "$P" request "$D/gateoff.kc" POST $PODS "$(pod q1)" >/dev/null || fail "create q1"
waitfor "$D/gate.out" "ADDED default/q1 " 10 || fail "no watch after the paged fallback"
touch "$D/stop2"
waitfor "$D/gate.out" "STATS" 10 || fail "gate probe did not stop"
grep -q "paged_lists=1 streamed_lists=0 stream_refused=1" "$D/gate.out" ||
    fail "gate off: $(grep STATS "$D/gate.out")"
ok "WatchList gate off: the 422 names the gate, listed in pages, then watched"

# ---- leader election ----------------------------------------------------------------------------
lead_w() { sed -n "s/^t=[0-9]* w=\([0-9]*\) $2 $3\$/\1/p" "$1" | head -1; }
KUBEPROBE_LEASE=le1 timeout 30 "$P" lease "$KC" a 5 release >"$D/a.out" 2>&1 &
pids="$pids $!"
waitfor "$D/a.out" "LEADING a" 5 || fail "candidate a never led"
KUBEPROBE_LEASE=le1 timeout 30 "$P" lease "$KC" b 10 stop >"$D/b.out" 2>&1 &
pids="$pids $!"
waitfor "$D/a.out" "RELEASED a" 10 || fail "a did not release"
waitfor "$D/b.out" "LEADING b" 5 || fail "b did not take over after the release"
rel=$(lead_w "$D/a.out" RELEASED a)
bl=$(lead_w "$D/b.out" LEADING b)
# (a prints RELEASED when the answer arrives: b may read the released lease a moment earlier)
[ $((bl + 300)) -ge "$rel" ] || fail "b led at $bl before a released at $rel"
[ $((bl - rel)) -le 1500 ] || fail "b took $((bl - rel)) ms to take over after the release"
ok "lease: a led alone, b took over $((bl - rel)) ms after the release"
grep -q LOST "$D/a.out" && fail "a reported LOST"

KUBEPROBE_LEASE=le2 timeout 30 "$P" lease "$KC" c 4 stop >"$D/c.out" 2>&1 &
pids="$pids $!"
waitfor "$D/c.out" "LEADING c" 5 || fail "candidate c never led"
KUBEPROBE_LEASE=le2 timeout 30 "$P" lease "$KC" d 14 release >"$D/d.out" 2>&1 &
pids="$pids $!"
waitfor "$D/c.out" "STOPPED c" 10 || fail "c did not stop"
waitfor "$D/d.out" "LEADING d" 8 || fail "d did not take over after c stopped renewing"
cs=$(lead_w "$D/c.out" STOPPED c)
dl=$(lead_w "$D/d.out" LEADING d)
# c's last renewal is at most one retry period (+20 % jitter) before it stopped; d may need one
# more retry period to notice the expiry.
[ "$dl" -ge "$cs" ] || fail "d led at $dl while c still renewed (stopped at $cs)"
[ $((dl - cs)) -le 4500 ] || fail "d took $((dl - cs)) ms after c stopped (lease 3 s)"
ok "lease: d took over $((dl - cs)) ms after c stopped renewing (lease 3 s)"
# under make san, a probe that leaked or misbehaved says so on stderr
grep -l "Sanitizer\|runtime error" "$D"/*.out "$D"/*.err 2>/dev/null && fail "sanitizer reports"
echo "all kube client checks passed"
