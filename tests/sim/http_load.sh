# The HTTP API under a bounded loopback load (docs/api.md "Limits"): `gangsched serve` with its
# default limits while tests/tools/httpload holds 64 hostile connections (requests pipelined,
# answers never read) and 1,000 keep-alive clients (one request a second each), and times a
# health probe every 50 ms. Prints the figures; the bound asserted (1 s for the slowest probe)
# is generous on purpose: the measured figures are what docs/api.md quotes, this checks that no
# probe failed or stalled and that no keep-alive client lost its connection. Then the same for
# probes while clients read the API's routes and another process commits.
. tests/sim/lib.inc
LOAD="$BUILD/tests/httpload"
SECS=${GANGSCHED_LOAD_SECONDS:-10}
"$GS" simulate --no-progress --cluster hgx:4 --trace tests/data/trace-small.csv --db "$TMP/s.db" \
    >/dev/null 2>&1
[ -s "$TMP/s.db" ] || { bad "simulation wrote no database"; finish; }
serve_start "$TMP/s.db" --http-write-timeout 1000
if "$LOAD" "$PORT" 64 1000 "$SECS" 1000 >"$TMP/load.out" 2>&1; then
    ok "probes answered under load: $(tr '\n' ' ' <"$TMP/load.out")"
else
    bad "load: $(cat "$TMP/load.out")"
fi
kill -TERM $SPID
wait $SPID
expect_eq "serve exit after SIGTERM under load" "$?" 0
# Reads under load (tests/bench/http_reads.py --probe): four clients asking the read routes as
# fast as they are answered while another process commits every 100 ms, a probe every 50 ms.
# Every read answered 200, no probe failed, the slowest under the same generous 1 s.
if python3 tests/bench/http_reads.py --probe "$GS" "$TMP/s.db" "${GANGSCHED_READ_SECONDS:-3}" 100 \
    >"$TMP/reads.out" 2>&1; then
    line=$(grep '^reads ' "$TMP/reads.out")
    ok "reads under load: $line"
    expect_eq "reads not answered 200" "$(echo "$line" | sed -n 's/.*, \([0-9]*\) not 200).*/\1/p')" 0
    expect_eq "probes failed while reading" "$(echo "$line" | sed -n 's/.*failed \([0-9]*\),.*/\1/p')" 0
    expect_cmp "slowest probe while reading (ms)" \
        "$(echo "$line" | sed -n 's/.*max \([0-9.]*\) ms.*/\1/p')" "<" 1000
else
    bad "reads under load: $(cat "$TMP/reads.out")"
fi
finish
