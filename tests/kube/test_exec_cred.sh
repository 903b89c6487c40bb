#!/bin/sh
# tests/kube/test_exec_cred.sh: exec credential plugins (client.authentication.k8s.io/v1, as
# client-go runs them: sched/kube/exec_cred.c) against the fake API server over TLS with its
# token. A plugin (a shell script counting its runs) gives the token: the client's first request
# succeeds with it; a plugin whose first answer the server refuses (401) is run again and the
# request retried once; one whose credential expires is run again when the next request starts;
# one that fails stops the client with the kubeconfig field and the exit status named; and the
# real kubectl, reading the same kubeconfig, runs the plugin and is let in too. A plugin run again
# runs beside the event loop (a slow one delays no timer), the requests held until it answers. A cluster's
# proxy-url (tests/kube/connect_proxy.py: HTTP CONNECT and SOCKS5, with or without a password)
# carries the client's connection and kubectl's, the userinfo's user and password given to the
# proxy, whatever no_proxy says; another scheme is refused naming the field; the environment's
# https_proxy leaves a loopback server direct, for both. Environment: BUILD.
. tests/kube/lib.inc
BUILD=${BUILD:-build}
P=$BUILD/tests/kubeprobe
[ -x "$P" ] || { bad "missing $P (make test-bins)"; finish; }
start_fake
PODS=/api/v1/namespaces/default/pods

# the plugin: counts its runs in $D/runs; STALE_FIRST: its first token is wrong; EXPIRES: the
# expirationTimestamp it gives; FAIL: exits 7; SLOW: seconds it takes from its second run on
cat >"$TMP/plugin.sh" <<'EOF'
#!/bin/sh
d=$(dirname "$0")
n=$(cat "$d/runs" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" >"$d/runs"
[ -n "${FAIL:-}" ] && { echo "plugin: no credentials here" >&2; exit 7; }
[ "$n" -ge 2 ] && [ -n "${SLOW:-}" ] && sleep "$SLOW"
tok=$TOKEN
[ "$n" -eq 1 ] && [ -n "${STALE_FIRST:-}" ] && tok=stale
exp=""
[ -n "${EXPIRES:-}" ] && exp=",\"expirationTimestamp\":\"$EXPIRES\""
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
printf '"status":{"token":"%s"%s}}\n' "$tok" "$exp"
EOF
chmod +x "$TMP/plugin.sh"

# kc NAME ENV-ENTRIES: the fake's kubeconfig, its token replaced by the plugin (a command
# relative to the kubeconfig's directory) with env TOKEN=test-token and the entries given
kc() {
    sed "s|^    token: test-token\$|    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin.sh\n      interactiveMode: Never\n      env:\n      - {name: TOKEN, value: test-token}$2|" \
        "$KUBECONFIG" >"$TMP/$1.kc"
}
runs() { cat "$TMP/runs" 2>/dev/null || echo 0; }

kc plain ""
rm -f "$TMP/runs"
timeout 30 "$P" request "$TMP/plain.kc" GET $PODS >"$TMP/plain.out" 2>&1
expect_eq "the plugin's token is sent: 200 at the first attempt" \
    "$(grep -oE 'status=[0-9]+ attempts=[0-9]+' "$TMP/plain.out" | head -1)" "status=200 attempts=1"
expect_eq "the plugin ran once" "$(runs)" 1

kc stale "\n      - {name: STALE_FIRST, value: x}"
rm -f "$TMP/runs"
timeout 30 "$P" request "$TMP/stale.kc" GET $PODS >"$TMP/stale.out" 2>&1
expect_eq "a 401 runs the plugin again and the request is retried with its new token" \
    "$(grep -oE 'status=[0-9]+' "$TMP/stale.out" | head -1) $(runs)" "status=200 2"
expect_eq "exec_runs counts the run after the first" \
    "$(grep -oE 'exec_runs=[0-9]+' "$TMP/stale.out")" "exec_runs=1"

# a credential that expires 2 s from now: the watch's requests after that run the plugin again
exp=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)
kc expiring "\n      - {name: EXPIRES, value: '$exp'}"
rm -f "$TMP/runs"
KUBEPROBE_WATCH_TIMEOUT=1 timeout 30 "$P" watch "$TMP/expiring.kc" $PODS 5 >"$TMP/exp.out" 2>&1
n=$(runs)
[ "$n" -ge 2 ] && ok "an expired credential runs the plugin again ($n runs in 5 s)" ||
    bad "an expired credential did not run the plugin again: $n runs; $(tail -3 "$TMP/exp.out")"
expect_eq "and no request was refused" "$(grep -c 'status=401' "$TMP/exp.out")" 0

# a plugin that takes 2 s to answer again runs beside the event loop, not on it: the loop's
# 100 ms tick is never late by much (run on the loop, it was late by the plugin's 2 s), and the
# requests wait for its answer rather than going out with the expired token
exp=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)
kc slow "\n      - {name: EXPIRES, value: '$exp'}\n      - {name: SLOW, value: '2'}"
rm -f "$TMP/runs"
KUBEPROBE_WATCH_TIMEOUT=1 timeout 30 "$P" watch "$TMP/slow.kc" $PODS 6 >"$TMP/slow.out" 2>&1
n=$(runs)
stall=$(grep -oE 'max_stall_ms=[0-9]+' "$TMP/slow.out" | cut -d= -f2)
[ "$n" -ge 2 ] && [ -n "$stall" ] && [ "$stall" -lt 1000 ] &&
    ok "a slow plugin run again does not stop the loop ($n runs, the loop at most ${stall} ms late)" ||
    bad "slow plugin: $n runs, max_stall_ms=${stall:-none}; $(tail -3 "$TMP/slow.out")"
expect_eq "and no request went out with the expired credential" \
    "$(grep -c 'status=401' "$TMP/slow.out")" 0

kc failing "\n      - {name: FAIL, value: x}"
timeout 30 "$P" request "$TMP/failing.kc" GET $PODS >"$TMP/fail.out" 2>&1
rc=$?
expect_eq "a failing plugin stops the client (exit 2)" "$rc" 2
grep -q "users\[0\].user.exec: command .*plugin.sh: exit status 7" "$TMP/fail.out" &&
    ok "naming the kubeconfig field, the command and its exit status" ||
    bad "message: $(cat "$TMP/fail.out")"

# the cluster's proxy-url: every connection goes through the CONNECT proxy
python3 tests/kube/connect_proxy.py "$TMP/proxy.port" "$TMP/proxy.log" &
PROXY_PID=$!
i=0
while [ ! -s "$TMP/proxy.port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sed "s|^    server: \(.*\)\$|    server: \1\n    proxy-url: http://127.0.0.1:$(cat "$TMP/proxy.port")|" \
    "$TMP/plain.kc" >"$TMP/proxied.kc"
timeout 30 "$P" request "$TMP/proxied.kc" GET $PODS >"$TMP/proxied.out" 2>&1
expect_eq "with proxy-url the request goes through the proxy" \
    "$(grep -oE 'status=[0-9]+' "$TMP/proxied.out" | head -1) $(grep -c CONNECT "$TMP/proxy.log")" \
    "status=200 1"
# the environment's https_proxy, read as client-go reads it: a loopback server is never proxied
# (curl alone would), and a proxy the kubeconfig names wins over it
n=$(grep -c CONNECT "$TMP/proxy.log")
https_proxy=http://127.0.0.1:1 HTTPS_PROXY=http://127.0.0.1:1 ALL_PROXY=http://127.0.0.1:1 \
    timeout 30 "$P" request "$TMP/plain.kc" GET $PODS >"$TMP/envproxy.out" 2>&1
expect_eq "https_proxy set: a loopback server is reached directly, as client-go reaches it" \
    "$(grep -oE 'status=[0-9]+' "$TMP/envproxy.out" | head -1) $(grep -c CONNECT "$TMP/proxy.log")" \
    "status=200 $n"
https_proxy=http://127.0.0.1:1 timeout 30 "$P" request "$TMP/proxied.kc" GET $PODS \
    >"$TMP/envproxy2.out" 2>&1
expect_eq "and the kubeconfig's proxy-url wins over it" \
    "$(grep -oE 'status=[0-9]+' "$TMP/envproxy2.out" | head -1) $(grep -c CONNECT "$TMP/proxy.log")" \
    "status=200 $((n + 1))"
sed "s|proxy-url: http|proxy-url: ftp|" "$TMP/proxied.kc" >"$TMP/badproxy.kc"
timeout 30 "$P" request "$TMP/badproxy.kc" GET $PODS >"$TMP/badproxy.out" 2>&1
grep -q "clusters\[0\].cluster.proxy-url: the scheme must be http, https or socks5" \
    "$TMP/badproxy.out" && ok "a proxy-url of another scheme is refused naming the field" ||
    bad "proxy-url ftp: $(cat "$TMP/badproxy.out")"

# a proxy that asks for credentials (the same script, AUTH alice:s3cret): SOCKS5 with RFC 1929
# username/password and HTTP CONNECT with Proxy-Authorization, both from the proxy-url's userinfo
: >"$TMP/aproxy.log"
python3 tests/kube/connect_proxy.py "$TMP/aproxy.port" "$TMP/aproxy.log" alice:s3cret &
APROXY_PID=$!
i=0
while [ ! -s "$TMP/aproxy.port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ap=$(cat "$TMP/aproxy.port")
# pkc NAME URL: the plain kubeconfig with proxy-url URL
pkc() { sed "s|^    server: \(.*\)\$|    server: \1\n    proxy-url: $2|" "$TMP/plain.kc" >"$TMP/$1.kc"; }
# via NAME URL KIND WHAT: a request through proxy-url URL is answered 200 through one more KIND
# tunnel of the proxy (its log)
via() {
    pkc "$1" "$2"
    before=$(grep -c "^$3 " "$TMP/aproxy.log")
    timeout 30 "$P" request "$TMP/$1.kc" GET $PODS >"$TMP/$1.out" 2>&1
    expect_eq "$4" "$(grep -oE 'status=[0-9]+' "$TMP/$1.out" | head -1) \
$(($(grep -c "^$3 " "$TMP/aproxy.log") - before))" "status=200 1"
}
# refused NAME URL PATTERN WHAT: a request through proxy-url URL fails, PATTERN in the proxy's
# log or the client's output
refused() {
    pkc "$1" "$2"
    timeout 30 "$P" request "$TMP/$1.kc" GET $PODS >"$TMP/$1.out" 2>&1
    cat "$TMP/aproxy.log" "$TMP/$1.out" | grep -q "$3" && ! grep -q "status=200" "$TMP/$1.out" &&
        ok "$4" || bad "$4: $(head -2 "$TMP/$1.out")"
}
via socks "socks5://alice:s3cret@127.0.0.1:$ap" SOCKS5 \
    "a socks5 proxy-url with a user and password: through the SOCKS5 proxy, authenticated"
refused socksbad "socks5://alice:wrong@127.0.0.1:$ap" "DENIED SOCKS5 user alice" \
    "a wrong SOCKS5 password is refused by the proxy and the request fails"
via httpauth "http://alice:s3cret@127.0.0.1:$ap" CONNECT \
    "an http proxy-url with a user and password: CONNECT with Proxy-Authorization"
refused httpnoauth "http://127.0.0.1:$ap" 407 \
    "without the password the proxy's 407 fails the request, named"
# no_proxy naming the server does not turn proxy-url off (client-go's http.ProxyURL ignores it)
before=$(grep -c "^CONNECT " "$TMP/aproxy.log")
NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost timeout 30 "$P" request \
    "$TMP/httpauth.kc" GET $PODS >"$TMP/noproxy.out" 2>&1
expect_eq "no_proxy naming the server leaves proxy-url in force" \
    "$(grep -oE 'status=[0-9]+' "$TMP/noproxy.out" | head -1) \
$(($(grep -c "^CONNECT " "$TMP/aproxy.log") - before))" "status=200 1"

if command -v kubectl >/dev/null; then
    K() { timeout 60 kubectl --kubeconfig "$1" --cache-dir "$TMP/kcache" get --raw $PODS; }
    n=$(grep -c CONNECT "$TMP/proxy.log")
    if K "$TMP/proxied.kc" >"$TMP/kubectl-proxy.out" 2>&1; then
        m=$(grep -c CONNECT "$TMP/proxy.log")
        [ "$m" -gt "$n" ] && ok "kubectl takes the same proxy-url ($((m - n)) tunnels)" ||
            bad "kubectl did not go through the proxy"
    else
        bad "kubectl with proxy-url: $(tail -3 "$TMP/kubectl-proxy.out")"
    fi
    for k in socks httpauth; do
        before=$(grep -cE '^(SOCKS5|CONNECT) ' "$TMP/aproxy.log")
        if NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost \
            K "$TMP/$k.kc" >"$TMP/kubectl-$k.out" 2>&1; then
            after=$(grep -cE '^(SOCKS5|CONNECT) ' "$TMP/aproxy.log")
            [ "$after" -gt "$before" ] &&
                ok "kubectl takes the same $k proxy-url with its password, no_proxy or not" ||
                bad "kubectl did not go through the $k proxy"
        else
            bad "kubectl with the $k proxy: $(tail -3 "$TMP/kubectl-$k.out")"
        fi
    done
    if https_proxy=http://127.0.0.1:1 HTTPS_PROXY=http://127.0.0.1:1 \
        K "$TMP/plain.kc" >"$TMP/kubectl-env.out" 2>&1; then
        ok "kubectl reaches the loopback server directly with https_proxy set, as gangsched"
    else
        bad "kubectl with https_proxy: $(tail -3 "$TMP/kubectl-env.out")"
    fi
    rm -f "$TMP/runs"
    if timeout 60 kubectl --kubeconfig "$TMP/plain.kc" --cache-dir "$TMP/kcache" \
        get --raw $PODS >"$TMP/kubectl.out" 2>&1; then
        ok "kubectl runs the same plugin and is let in ($(runs) run)"
    else
        bad "kubectl with the plugin: $(tail -3 "$TMP/kubectl.out")"
    fi
else
    bad "kubectl is not installed (make deps installs Debian's kubernetes-client)"
fi
kill "$PROXY_PID" "$APROXY_PID" 2>/dev/null
finish
