# Clients that hang up while `gangsched serve` is still answering them (tests/tools/hangup.py:
# pipelined requests, then a half-close or a reset without reading). The kernel answers the
# server's next write with EPIPE and, unless SIGPIPE is ignored, kills the process (exit 141):
# one browser closing a tab would take the API down, and with `gangsched run --listen` the
# scheduler (tests/kube/e2e.py checks the daemon the same way). The server must stay up, answer
# the next client, and exit 0 on SIGTERM.
. tests/sim/lib.inc
"$GS" simulate --no-progress --cluster hgx:4 --trace tests/data/trace-small.csv --db "$TMP/s.db" \
    >/dev/null 2>&1
[ -s "$TMP/s.db" ] || { bad "simulation wrote no database"; finish; }
serve_start "$TMP/s.db"
for route in /metrics /api/v1/jobs; do
    if python3 tests/tools/hangup.py "$PORT" 40 50 "$route" >"$TMP/hang.out" 2>&1; then
        ok "40 clients hung up on $route mid-answer"
    else
        bad "clients hanging up on $route: $(cat "$TMP/hang.out")"
    fi
done
if kill -0 $SPID 2>/dev/null; then ok "serve still running"; else
    wait $SPID
    bad "serve died (exit $?): $(tail -n 3 "$TMP/serve.log")"
    finish
fi
code=$(python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/healthz" % sys.argv[1], timeout=5).status)' \
    "$PORT" 2>&1)
expect_eq "the next client's /healthz" "$code" 200
serve_stop
finish
