# The HTML report in a real browser: headless Chromium renders it (the DOM after parsing, and a
# screenshot whose structure is checked, never its pixels) with human labels, the preemption and
# quota rows, the per-queue section (usage against nominal quota, borrowing shaded, a queue-time
# CDF per queue) and the heat map by rack; two policies with equal series both stay visible.
# Chromium (Debian package chromium) is installed by `make test-deps`; the test fails without it.
. tests/sim/lib.inc
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
[ -n "$CHROME" ] || { bad "chromium not installed (make test-deps installs it)"; finish; }
browse() { # browse HTML OUT [SCALE SIZE]: --dump-dom to OUT.dom, a screenshot to OUT.png
    rm -rf "$TMP/profile"
    timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$TMP/profile" \
        --dump-dom "file://$1" >"$2.dom" 2>"$2.err"
    rm -rf "$TMP/profile"
    timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$TMP/profile" \
        --hide-scrollbars --force-device-scale-factor="${3:-0.5}" --window-size="${4:-1100,5600}" \
        --screenshot="$2.png" "file://$1" >>"$2.err" 2>&1
}
"$GS" simulate --no-progress --cluster hgx:4,pcie:2 --trace tests/data/trace-crash.csv --high-priority 0.33 \
    --json --report "$TMP/r.html" >"$TMP/r.json" || bad "simulation failed"
browse "$TMP/r.html" "$TMP/r"
[ -s "$TMP/r.dom" ] && ok "chromium rendered the report" || { bad "no DOM: $(tail -3 "$TMP/r.err")"; finish; }
count() { grep -o "$1" "$2" | wc -l | tr -d ' '; }
# sections, in order
order=$(grep -o '<h2>[^<]*</h2>' "$TMP/r.dom" | sed 's/<[^>]*>//g' | tr '\n' '|')
expect_eq "sections" "$order" "Summary|GPU utilisation over time|Gangs waiting over time|Queue time distribution|Queues|Placement by rack|"
# human labels with the JSON keys beside them; the rows the terminal table has
for label in "mean queue time" "preemptions (evictions)" "quota violations" "jobs never started" \
    "GPU-hours lost to preemption" "waited within nominal quota"; do
    grep -q "<th scope=\"row\">$label <span class=\"k\">" "$TMP/r.dom" && ok "label: $label" || bad "no row '$label'"
done
grep -q '<th scope="row">mean_queue_s</th>' "$TMP/r.dom" && bad "a raw key as a label" || ok "no raw keys as labels"
pre=$("$JGET" "$TMP/r.json" policies/0/preemptions)
expect_cmp "the run preempted" "$pre" ">" 0
grep -A1 'preemptions (evictions) <span' "$TMP/r.dom" | grep -q ">$pre<" && ok "preemptions row = --json ($pre)" ||
    bad "preemptions row: $(grep -A1 'preemptions (evictions)' "$TMP/r.dom" | head -2)"
# per queue: a table row per queue and policy, two charts per queue, nominal line, borrowing shade
nq=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['policies'][0]['per_queue']))" "$TMP/r.json")
expect_eq "queue table rows (queues x policies)" "$(count '<tr class="queue">' "$TMP/r.dom")" "$((nq * 2))"
expect_eq "queue sections" "$(count '<h3 class="queue">' "$TMP/r.dom")" "$nq"
expect_eq "nominal lines" "$(count 'class="nominal"' "$TMP/r.dom")" "$nq"
expect_eq "borrowing shades" "$(count 'clip-path="url(#borrow' "$TMP/r.dom")" "$nq"
for q in prod research; do
    nom=$("$JGET" "$TMP/r.json" "policies/0/per_queue/$q/nominal_gpus")
    grep -q "nominal $nom</text>" "$TMP/r.dom" && ok "$q: nominal $nom drawn" || bad "$q: no nominal $nom label"
    grep -q "<title>Queue time CDF of queue $q</title>" "$TMP/r.dom" && ok "$q: its queue-time CDF" || bad "$q: no CDF"
done
# charts: 3 overall + 2 per queue + a heat map per policy
expect_eq "svg charts" "$(count '<svg' "$TMP/r.dom")" "$((3 + 2 * nq + 2))"
expect_cmp "heat map cells" "$(count 'class="cell"' "$TMP/r.dom")" ">=" 2
grep -q '<title>[^<]*: [0-9.]*% of [0-9]* GPUs busy' "$TMP/r.dom" && ok "heat map cell titles" || bad "heat map titles"
# the screenshot: size, not blank, both policies' colours drawn
set -- $(python3 tests/tools/pngstat.py "$TMP/r.png" '#1f77b4' '#d62728')
expect_eq "screenshot width (half of 1100)" "$1" 550
expect_cmp "screenshot: ink share" "$3" ">" 0.02
expect_cmp "screenshot: ink share" "$3" "<" 0.5
expect_cmp "screenshot: rows with policy 1's colour" "$4" ">" 100
expect_cmp "screenshot: rows with policy 2's colour" "$5" ">" 100
# two identical policies: the second is dashed, so its colour still shows where they overlap
"$GS" simulate --no-progress --cluster hgx:4,pcie:2 --trace tests/data/trace-crash.csv --policy fifo --policy fifo \
    --report "$TMP/f.html" >/dev/null || bad "fifo twice failed"
browse "$TMP/f.html" "$TMP/f" 1 1000,1500 # full scale: the summary and the utilisation chart
grep -q 'stroke="#d62728" stroke-dasharray=' "$TMP/f.dom" && ok "second policy dashed" || bad "second policy not dashed"
set -- $(python3 tests/tools/pngstat.py "$TMP/f.png" '#1f77b4' '#d62728')
# drawn solid on top of each other, the first colour shows only in the legend (26 rows)
expect_cmp "equal series: the first still visible through the second" "$4" ">" 100
expect_cmp "equal series: the second visible" "$5" ">" 100
finish
