# The HTTP API under a bounded loopback load (docs/api.md "Limits"): `gangsched serve` with its
# default limits while tests/tools/httpload holds 64 hostile connections (requests pipelined,
# answers never read) and 1,000 keep-alive clients (one request a second each), and times a
# health probe every 50 ms. Prints the figures; the bound asserted (1 s for the slowest probe)
# is generous on purpose: the measured figures are what docs/api.md quotes, this checks that no
# probe failed or stalled and that no keep-alive client lost its connection.
. tests/sim/lib.inc
LOAD="$BUILD/tests/httpload"
SECS=${GANGSCHED_LOAD_SECONDS:-10}
"$GS" simulate --no-progress --cluster hgx:4 --trace tests/data/trace-small.csv --db "$TMP/s.db" \
    >/dev/null 2>&1
[ -s "$TMP/s.db" ] || { bad "simulation wrote no database"; finish; }
"$GS" serve --db "$TMP/s.db" --listen 127.0.0.1:0 --port-file "$TMP/port" \
    --http-write-timeout 1000 >"$TMP/serve.log" 2>&1 &
SPID=$!
trap 'kill $SPID 2>/dev/null; wait $SPID 2>/dev/null; rm -rf "$TMP"' EXIT
i=0
while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$TMP/port" ] || { bad "serve did not start: $(cat "$TMP/serve.log")"; finish; }
if "$LOAD" "$(cat "$TMP/port")" 64 1000 "$SECS" 1000 >"$TMP/load.out" 2>&1; then
    ok "probes answered under load: $(tr '\n' ' ' <"$TMP/load.out")"
else
    bad "load: $(cat "$TMP/load.out")"
fi
kill -TERM $SPID
wait $SPID
expect_eq "serve exit after SIGTERM under load" "$?" 0
finish
