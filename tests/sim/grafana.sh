# deploy/grafana/gangsched-dashboard.json: valid JSON, every query parses as PromQL (promtool
# check rules on a rules file made of them), and every metric it names is one gangsched exports:
# found in a live scrape of `gangsched serve` (the database and process families) or registered
# by the daemon (sched/kube/driver.c), and documented in docs/metrics.md.
. tests/sim/lib.inc
D=deploy/grafana/gangsched-dashboard.json
python3 - "$D" "$TMP" <<'PY' || bad "dashboard JSON"
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = []
def walk(p):
    for t in p.get("targets", []):
        exprs.append(t["expr"])
    for q in p.get("panels", []):
        walk(q)
for p in d["panels"]:
    walk(p)
assert d["uid"] and d["title"], "title and uid"
names = {v["name"] for v in d["templating"]["list"]}
assert {"datasource", "cluster_queue"} <= names, names
with open(sys.argv[2] + "/rules.yaml", "w") as f:
    f.write("groups:\n- name: dashboard\n  rules:\n")
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "5m").replace("$cluster_queue", ".*").replace("$job", ".*")
        f.write("  - record: dashboard:q%d\n    expr: %s\n" % (i, json.dumps(e)))
metrics = set()
for e in exprs:
    metrics |= {m for m in re.findall(r"\b((?:gangsched|process)_[a-z_]+)", e)}
open(sys.argv[2] + "/metrics.txt", "w").write("\n".join(sorted(metrics)) + "\n")
print("ok   dashboard: %d queries, %d metrics" % (len(exprs), len(metrics)))
PY
promtool check rules "$TMP/rules.yaml" >"$TMP/promtool.txt" 2>&1 && ok "every query parses (promtool check rules)" ||
    bad "promtool: $(cat "$TMP/promtool.txt")"
# a live scrape
"$GS" simulate --no-progress --policy gangsched --cluster hgx:4,pcie:2 --trace tests/data/trace-crash.csv \
    --db "$TMP/s.db" >/dev/null 2>&1 || bad "simulation"
"$GS" serve --db "$TMP/s.db" --listen 127.0.0.1:0 --port-file "$TMP/port" >"$TMP/serve.log" 2>&1 &
SPID=$!
i=0
while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
python3 - "$(cat "$TMP/port")" >"$TMP/scrape.txt" <<'PY'
import sys, urllib.request
sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=20).read().decode())
PY
kill $SPID
wait $SPID
while read -r m; do
    base=${m%_bucket}
    if grep -q "^# TYPE $base " "$TMP/scrape.txt"; then ok "$m: served"
    elif grep -q "\"$base\"" sched/kube/driver.c; then ok "$m: registered by the daemon"
    else bad "$m: no such family"; fi
    grep -q "\`$base\`" docs/metrics.md && ok "$m: documented" || bad "$m: not in docs/metrics.md"
done <"$TMP/metrics.txt"
finish
