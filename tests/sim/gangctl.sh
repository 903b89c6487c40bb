# gangctl offline (--db): every tenant command on a finished and on a stopped simulator database,
# cross-checked against the same run's --json summary, its --jobs-out CSV and `gangsched store
# check`; JSON and YAML output; exit codes for unknown names, operator commands, the HTTP API that
# is not built yet, bad flags and missing or corrupt databases; the kubectl-gang link.
. tests/sim/lib.inc
CTL="$BIN/gangctl"
ARGS="--no-progress --policy gangsched --cluster hgx:4,pcie:2 --trace tests/data/trace-crash.csv --high-priority 0.33"
# shellcheck disable=SC2086
"$GS" simulate $ARGS --db "$TMP/g.db" --json --jobs-out "$TMP/jobs.csv" >"$TMP/sim.json" ||
    { bad "simulation failed"; finish; }
# shellcheck disable=SC2086
"$GS" simulate $ARGS --db "$TMP/s.db" --stop-after-events 1500 --db-batch 16 >/dev/null 2>&1
"$GS" store check "$TMP/g.db" >/dev/null && ok "finished store consistent" || bad "store check g.db"
"$GS" store check "$TMP/s.db" >/dev/null && ok "stopped store consistent" || bad "store check s.db"
sum_before=$(cksum <"$TMP/g.db")

# count_json FILE: number of "job" entries in a jobs document
count_jobs() { "$JGET" "$1" jobs | grep -o '"job":' | wc -l | tr -d ' '; }
# rows FILE: table rows without the header
rows() { tail -n +2 "$1" | grep -c .; }

# ---- queues and quota on the finished run ------------------------------------------------------
"$CTL" --db "$TMP/g.db" queues >"$TMP/q.txt" && ok "queues runs" || bad "queues failed"
grep -q '^QUEUE *STATE *COHORT *WEIGHT *PRIORITY *NOMINAL *USED *RUNNING *PENDING$' "$TMP/q.txt" &&
    ok "queues header" || bad "queues header: $(head -1 "$TMP/q.txt")"
for q in prod research; do
    nominal=$("$JGET" "$TMP/sim.json" "policies/0/per_queue/$q/nominal_gpus")
    grep -q "^$q  *open  *all  *1  *0  *$nominal GPU  *0 GPU  *0  *0$" "$TMP/q.txt" &&
        ok "queues: $q nominal $nominal GPU, idle at the end" || bad "queues $q: $(grep "^$q" "$TMP/q.txt")"
    "$CTL" --db "$TMP/g.db" -o json queues >"$TMP/q.json"
    i=0; [ "$q" = research ] && i=1
    expect_eq "queues json: name $i" "$("$JGET" "$TMP/q.json" "queues/$i/name")" "$q"
    done=$(($("$JGET" "$TMP/q.json" "queues/$i/finished") + $("$JGET" "$TMP/q.json" "queues/$i/failed")))
    expect_eq "$q: finished+failed = simulate --json jobs" "$done" \
        "$("$JGET" "$TMP/sim.json" "policies/0/per_queue/$q/jobs")"
    expect_eq "$q: jobs = --jobs-out rows" "$done" \
        "$(awk -F, -v q="$q" 'NR > 1 && $3 == q' "$TMP/jobs.csv" | wc -l | tr -d ' ')"
    "$CTL" --db "$TMP/g.db" jobs -A -q "$q" >"$TMP/jq.txt"
    expect_eq "$q: jobs -A -q rows" "$(rows "$TMP/jq.txt")" "$done"
done
"$CTL" --db "$TMP/g.db" quota >"$TMP/quota.txt"
grep -q '^prod  *default  *nvidia.com/gpu  *33 GPU  *none  *none  *0 GPU  *0 GPU  *0 GPU  *48 GPU' "$TMP/quota.txt" &&
    ok "quota: prod 33 GPU nominal, could take the whole idle cohort (48 GPU)" ||
    bad "quota table: $(cat "$TMP/quota.txt")"
"$CTL" --db "$TMP/g.db" quota research -o json >"$TMP/quota.json"
expect_eq "quota json: one queue" "$("$JGET" "$TMP/quota.json" queues/0/name)" research
expect_eq "quota json: nominal" "$("$JGET" "$TMP/quota.json" queues/0/quotas/0/nominal)" 15
expect_eq "quota json: no borrowing limit" "$("$JGET" "$TMP/quota.json" queues/0/quotas/0/borrowing_limit)" null
"$JGET" "$TMP/quota.json" queues/1 >/dev/null 2>&1 && bad "quota QUEUE lists other queues" || ok "quota QUEUE: only that queue"
share=$("$JGET" "$TMP/quota.json" queues/0/share)
expect_cmp "quota: fair-share history present" "$share" ">" 0

# ---- jobs, explain on the finished run ----------------------------------------------------------
"$CTL" --db "$TMP/g.db" jobs >"$TMP/j.txt"
expect_eq "jobs: nothing pending or running at the end" "$(cat "$TMP/j.txt")" "no pending or running jobs"
"$CTL" --db "$TMP/g.db" jobs -A -o json >"$TMP/all.json"
expect_eq "jobs -A json: every job" "$(count_jobs "$TMP/all.json")" "$("$JGET" "$TMP/sim.json" policies/0/jobs)"
first=$(awk -F, 'NR == 2 { print $1 }' "$TMP/jobs.csv")
submit=$(awk -F, 'NR == 2 { printf "%d", $5 * 1000 }' "$TMP/jobs.csv")
start=$(awk -F, 'NR == 2 { printf "%d", $6 * 1000 }' "$TMP/jobs.csv")
"$CTL" --db "$TMP/g.db" explain "$first" -o json >"$TMP/e.json" && ok "explain $first" || bad "explain $first failed"
expect_eq "explain: submit = --jobs-out" "$("$JGET" "$TMP/e.json" job/submit_ms)" "$submit"
expect_eq "explain: start = --jobs-out" "$("$JGET" "$TMP/e.json" job/start_ms)" "$start"
expect_eq "explain: state" "$("$JGET" "$TMP/e.json" job/state)" finished
# a job that was preempted: its victim records
victim=$("$CTL" --db "$TMP/g.db" jobs -A -o wide | awk 'NR > 1 && $12 > 0 { print $1; exit }')
"$CTL" --db "$TMP/g.db" jobs -A -o wide | head -1 | grep -q 'USER  *STATE.*PREEMPTIONS  *NODES  *QUEUED  *START  *REASON$' &&
    ok "jobs -o wide header" || bad "jobs -o wide header: $("$CTL" --db "$TMP/g.db" jobs -A -o wide | head -1)"
if [ -n "$victim" ]; then
    "$CTL" --db "$TMP/g.db" explain "$victim" >"$TMP/e.txt"
    grep -q "^Job: *$victim$" "$TMP/e.txt" && grep -q '^Preemptions ([1-9]' "$TMP/e.txt" &&
        grep -q ' victim ' "$TMP/e.txt" && ok "explain: preempted job lists its preemptions" ||
        bad "explain $victim: $(head -20 "$TMP/e.txt")"
    "$CTL" --db "$TMP/g.db" explain "$victim" -o json >"$TMP/v.json"
    expect_eq "explain json: victim role" "$("$JGET" "$TMP/v.json" preemptions/0/role)" victim
    # why it was evicted (store schema 5), in the JSON and as the table's KIND column
    kind=$("$JGET" "$TMP/v.json" preemptions/0/kind)
    case "$kind" in
    priority | reclaim | fair_share | overdue) ok "explain json: the preemption's kind ($kind)" ;;
    *) bad "explain json: preemption kind '$kind'" ;;
    esac
    grep -q "ROLE  *KIND  *OTHER JOB" "$TMP/e.txt" && grep -q " victim  *$kind " "$TMP/e.txt" &&
        ok "explain: the KIND column" || bad "explain: no KIND column: $(grep -A2 '^Preemptions' "$TMP/e.txt")"
    n=$("$JGET" "$TMP/v.json" job/preemptions)
    "$JGET" "$TMP/v.json" "preemptions/$((n - 1))/role" >/dev/null &&
        ok "explain: $n preemption record(s) = the job's count" || bad "explain: fewer records than $n"
else
    bad "no preempted job found in jobs -A -o wide"
fi
evicted=$(awk -F, 'NR > 1 && $8 > 0' "$TMP/jobs.csv" | wc -l | tr -d ' ')
expect_eq "preempted jobs (jobs -A -o wide) = evicted in --jobs-out" \
    "$("$CTL" --db "$TMP/g.db" jobs -A -o wide | awk 'NR > 1 && $12 > 0' | wc -l | tr -d ' ')" "$evicted"

# ---- the stopped run: pending and running jobs, positions, top --------------------------------
"$CTL" --db "$TMP/s.db" queues -o json >"$TMP/sq.json"
pending=$("$JGET" "$TMP/sq.json" queues/0/pending)
running=$("$JGET" "$TMP/sq.json" queues/0/running)
expect_cmp "stopped run: prod has pending jobs" "$pending" ">" 0
"$CTL" --db "$TMP/s.db" jobs -q prod >"$TMP/sj.txt"
expect_eq "jobs -q prod: pending + running rows" "$(rows "$TMP/sj.txt")" "$((pending + running))"
expect_eq "jobs: pending rows" "$(grep -c ' pending ' "$TMP/sj.txt")" "$pending"
expect_eq "jobs: positions 1..N" "$(awk '$3 == "pending" { s += $5; n++ } END { print s }' "$TMP/sj.txt")" \
    "$((pending * (pending + 1) / 2))"
"$CTL" --db "$TMP/s.db" jobs -q prod -o json >"$TMP/sj.json"
expect_eq "jobs json: first is position 1" "$("$JGET" "$TMP/sj.json" jobs/0/position)" 1
expect_eq "jobs json: pending" "$("$JGET" "$TMP/sj.json" jobs/0/state)" pending
p1=$("$JGET" "$TMP/sj.json" jobs/0/job)
"$CTL" --db "$TMP/s.db" explain "$p1" >"$TMP/pe.txt"
grep -q '^Position: *1 in queue prod' "$TMP/pe.txt" && grep -q '^Waiting: ' "$TMP/pe.txt" &&
    ok "explain: pending job's position and wait" || bad "explain pending: $(head -12 "$TMP/pe.txt")"
grep -q '^Decisions (newest first' "$TMP/pe.txt" && ok "explain: decision section" || bad "no decisions section"
"$CTL" --db "$TMP/s.db" top -o json >"$TMP/top.json"
used=$(($("$JGET" "$TMP/sq.json" queues/0/used_gpus) + $("$JGET" "$TMP/sq.json" queues/1/used_gpus)))
expect_eq "top: used = sum of queues" "$("$JGET" "$TMP/top.json" used_gpus)" "$used"
expect_eq "top: placed = ledger (store check passed)" "$("$JGET" "$TMP/top.json" placed_gpus)" "$used"
"$JGET" "$TMP/top.json" nodes/0/node | grep -q -E '^(hgx|pcie)-' && ok "top: nodes listed" || bad "top: no nodes"
"$CTL" --db "$TMP/s.db" top >"$TMP/top.txt"
grep -q "^GPU usage by queue (ledger): $used GPU in use" "$TMP/top.txt" && grep -q '^NODE  *GPUS  *PODS  *JOBS' "$TMP/top.txt" &&
    ok "top table" || bad "top table: $(cat "$TMP/top.txt")"
"$CTL" --db "$TMP/s.db" reservations >"$TMP/r.txt" && ok "reservations runs" || bad "reservations failed"
"$CTL" --db "$TMP/s.db" reservations -o json >"$TMP/r.json"
"$JGET" "$TMP/r.json" reservations >/dev/null && ok "reservations json" || bad "reservations json"

# ---- why each job waits: REASON, held queues, lent quota, a preempted job's current wait ------
"$CTL" --db "$TMP/s.db" explain "$p1" -o json >"$TMP/r1e.json"
reason=$("$JGET" "$TMP/sj.json" jobs/0/reason)
expect_eq "jobs: reason = explain's newest decision" "$reason" "$("$JGET" "$TMP/r1e.json" decisions/0/reason)"
awk 'NR == 2' "$TMP/sj.txt" | grep -q -F "   $reason" && ok "jobs table: REASON column" ||
    bad "REASON column: $(head -2 "$TMP/sj.txt")"
head -1 "$TMP/sj.txt" | grep -q 'FINISHED  *START  *REASON$' && ok "jobs header ends with START, REASON" || bad "jobs header: $(head -1 "$TMP/sj.txt")"
# the text is current: its figures are the ledger's now, not the first cycle's
used=$("$JGET" "$TMP/sq.json" queues/0/used_gpus)
# (since issue 19 the first pending prod job may wait behind its queue's starving gang, which
# holds the queue: "blocked", naming that gang; a quota reason carries the ledger's figures)
case "$reason" in
blocked:*) echo "$reason" | grep -q "behind .* of its queue" && ok "reason: blocked behind its queue's starving gang" ||
    bad "blocked reason: '$reason'" ;;
*) echo "$reason" | grep -q "used $used," && ok "reason figures current (used $used)" || bad "stale reason: '$reason', used $used" ;;
esac
grep -E -q "^Reason: *(quota|blocked): " "$TMP/pe.txt" && ok "explain: Reason line" || bad "explain: no Reason line"
# lent quota: research lends what prod borrows, and can take it back (a run stopped earlier,
# while prod borrows)
"$GS" simulate $ARGS --db "$TMP/l.db" --stop-after-events 1200 --db-batch 16 >/dev/null 2>&1
"$CTL" --db "$TMP/l.db" queues -o json >"$TMP/lqs.json"
"$CTL" --db "$TMP/l.db" quota research -o json >"$TMP/lq.json"
borrowed=$("$JGET" "$TMP/lqs.json" queues/0/borrowed_gpus)
expect_cmp "stopped run: prod borrows" "$borrowed" ">" 0
expect_eq "research LENT = prod's borrowed" "$("$JGET" "$TMP/lq.json" queues/0/quotas/0/lent)" "$borrowed"
expect_eq "research AVAILABLE includes the lent quota (nominal - used)" \
    "$("$JGET" "$TMP/lq.json" queues/0/quotas/0/available)" \
    "$(($("$JGET" "$TMP/lq.json" queues/0/quotas/0/nominal) - $("$JGET" "$TMP/lq.json" queues/0/quotas/0/used)))"
"$CTL" --db "$TMP/l.db" quota | grep -q "^research .* $borrowed GPU  *[0-9]* GPU  *[0-9.]*$" &&
    ok "quota table: LENT column" || bad "quota table: $("$CTL" --db "$TMP/l.db" quota)"
# a job pending again after a preemption: its current wait, no STARTED
"$CTL" --db "$TMP/s.db" jobs -A -o json >"$TMP/sa.json"
rq=$(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for j in d['jobs']:
    if j['state'] == 'pending' and j['requeued_ms'] is not None:
        print(j['job'], j['waiting_ms'], j['requeued_ms'], d['now_ms']); break" "$TMP/sa.json")
if [ -n "$rq" ]; then
    set -- $rq
    expect_eq "requeued job: waiting = now - last preemption" "$2" "$(($4 - $3))"
    "$CTL" --db "$TMP/s.db" jobs -A | awk -v j="$1" '$1 == j { print $7 }' | grep -q '^-$' &&
        ok "requeued job: STARTED '-'" || bad "requeued job shows a start"
    "$CTL" --db "$TMP/s.db" explain "$1" | grep -q '^Waiting: .*(since its last preemption)' &&
        ok "explain: waiting since the last preemption" || bad "explain requeued: $("$CTL" --db "$TMP/s.db" explain "$1" | head -14)"
else
    bad "no pending job with a preemption in the stopped run"
fi
# a held queue: STATE column, and its pending jobs say why
cp "$TMP/s.db" "$TMP/h.db"; [ -f "$TMP/s.db-wal" ] && cp "$TMP/s.db-wal" "$TMP/h.db-wal"
python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(\"INSERT INTO operator_actions(ts_ms, kind, target, state, done_ms) VALUES (1, 'hold', 'prod', 'applied', 1)\"); c.commit()" "$TMP/h.db"
"$CTL" --db "$TMP/h.db" queues | grep -q '^prod  *held  *all ' && ok "queues: STATE held" || bad "queues state: $("$CTL" --db "$TMP/h.db" queues)"
"$CTL" --db "$TMP/h.db" jobs -q prod -o json >"$TMP/hj.json"
expect_eq "held queue: job why" "$("$JGET" "$TMP/hj.json" jobs/0/why)" held
"$CTL" --db "$TMP/h.db" explain "$p1" | grep -q "^Reason: *held: queue prod is held by an operator" &&
    ok "explain: held queue reason" || bad "explain held: $("$CTL" --db "$TMP/h.db" explain "$p1" | head -6)"

# ---- output formats ----------------------------------------------------------------------------
"$CTL" --db "$TMP/s.db" queues -o yaml >"$TMP/q.yaml"
grep -q '^queues:$' "$TMP/q.yaml" && grep -q '^- name: prod$' "$TMP/q.yaml" &&
    grep -q '^  cohort: all$' "$TMP/q.yaml" && ok "yaml output" || bad "yaml: $(head -5 "$TMP/q.yaml")"
"$CTL" --db "$TMP/s.db" explain "$p1" -o yaml >"$TMP/e.yaml"
grep -q "^  job: \"$p1\"$\|^  job: $p1$" "$TMP/e.yaml" && ok "yaml: job id" || bad "yaml explain: $(head -3 "$TMP/e.yaml")"
if grep -q '^ *reason: .*: ' "$TMP/e.yaml"; then
    grep '^ *reason: .*: ' "$TMP/e.yaml" | grep -v -q "^ *reason: [\"']" && bad "yaml: reason with ': ' not quoted" ||
        ok "yaml: reasons quoted"
fi
"$CTL" --db "$TMP/s.db" queues -o wide | head -1 | grep -q 'BORROWED  *LENT  *ADMITTED  *FINISHED  *FAILED  *SHARE$' &&
    ok "queues -o wide: more columns" || bad "queues -o wide header"
"$CTL" --db "$TMP/s.db" jobs -o wide | head -1 | grep -q 'NODES  *QUEUED  *START  *REASON$' && ok "jobs -o wide: nodes" || bad "jobs -o wide header"
"$CTL" --db "$TMP/s.db" quota >"$TMP/c.txt"
grep -q "$(printf '\033')" "$TMP/c.txt" && bad "colour in piped output" || ok "no colour when not a terminal"
# database text never reaches the terminal as a control: C1 CSI (U+009B, UTF-8 C2 9B), a raw 0x9B
# byte (CSI to an 8-bit terminal) and ESC each print as one '?'; other UTF-8 stays (before: C1
# and the raw byte passed through)
cp "$TMP/g.db" "$TMP/c1.db"
python3 -c "
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
g = c.execute(\"SELECT gang FROM jobs WHERE state = 'finished' ORDER BY gang LIMIT 1\").fetchone()[0]
c.execute(\"UPDATE jobs SET gang = CAST(x'6e732fc29b33316d41fe9b427ec3a9421b5b32' AS TEXT) WHERE gang = ?\", (g,))
c.commit()" "$TMP/c1.db"
"$CTL" --db "$TMP/c1.db" jobs -A >"$TMP/c1.txt"
python3 -c "
import sys
b = open(sys.argv[1], 'rb').read()
sys.exit(0 if b'ns/?31mA??B~\xc3\xa9B?[2' in b and b'\x9b' not in b and b'\x1b' not in b else 1)" "$TMP/c1.txt" &&
    ok "C1 controls, stray bytes and ESC print as '?'" || bad "controls in table output: $(grep -a 'ns/' "$TMP/c1.txt" | head -2 | od -c | head -3)"
"$BIN/kubectl-gang" --db "$TMP/s.db" quota >"$TMP/k.txt"
cmp -s "$TMP/c.txt" "$TMP/k.txt" && ok "kubectl-gang = gangctl" || bad "kubectl-gang differs"

# ---- errors and exit codes -------------------------------------------------------------------------
expect_fail "unknown queue (quota)" 1 "queue 'nope' not found" -- "$CTL" --db "$TMP/g.db" quota nope
expect_fail "unknown queue (jobs -q)" 1 "queue 'nope' not found" -- "$CTL" --db "$TMP/g.db" jobs -q nope
expect_fail "unknown job" 1 "job 'ns/nope' not found" -- "$CTL" --db "$TMP/g.db" explain ns/nope
expect_fail "queue hold offline" 2 "needs a running scheduler (--server); not available offline" -- "$CTL" --db "$TMP/g.db" queue hold prod
expect_fail "reserve offline" 2 "not available offline" -- "$CTL" --db "$TMP/g.db" reserve add x n1
expect_fail "checkpoint offline" 2 "not available offline" -- "$CTL" checkpoint ns/pg
echo some-token >"$TMP/t.tok"
expect_fail "--server unreachable" 2 "cannot reach the scheduler at http://127.0.0.1:1" -- "$CTL" --server http://127.0.0.1:1 --token-file "$TMP/t.tok" queues
expect_fail "GANGSCHED_SERVER unreachable" 2 "cannot reach the scheduler" -- env GANGSCHED_SERVER=http://127.0.0.1:1 "$CTL" jobs
expect_fail "--server not a URL" 2 "needs an http:// or https:// URL" -- "$CTL" --server 127.0.0.1:1 jobs
expect_fail "--db and --server" 2 "not both" -- "$CTL" --db "$TMP/g.db" --server http://127.0.0.1:1 jobs
expect_fail "no --db" 2 "use --db FILE" -- "$CTL" queues
expect_fail "bad flag" 2 "unknown flag '--frob'" -- "$CTL" --db "$TMP/g.db" --frob queues
expect_fail "bad output format" 2 "-o 'xml': expected one of table, wide, json, yaml" -- "$CTL" --db "$TMP/g.db" -o xml queues
expect_fail "-q on quota" 2 "applies to jobs only" -- "$CTL" --db "$TMP/g.db" quota -q prod
expect_fail "--db without a value" 2 "needs a value" -- "$CTL" queues --db
expect_fail "unknown command" 2 "unknown command 'frob'" -- "$CTL" --db "$TMP/g.db" frob
expect_fail "explain without a job" 2 "explain needs a job" -- "$CTL" --db "$TMP/g.db" explain
expect_fail "missing database" 2 "$TMP/none.db does not exist" -- "$CTL" --db "$TMP/none.db" queues
printf 'garbage that is not SQLite: %0100d' 0 >"$TMP/bad.db"
expect_fail "corrupt database" 2 "corrupt database $TMP/bad.db" -- "$CTL" --db "$TMP/bad.db" queues
grep -q "use --rebuild-store" "$TMP/err" && bad "gangctl told to use --rebuild-store, a flag it lacks" ||
    ok "no '--rebuild-store' advice to gangctl (names who has it)"
expect_fail "store check: corrupt" 2 "simulator and the scheduler can start a new store" -- sh -c '"$1" store check "$2" >&2' sh "$GS" "$TMP/bad.db"
"$GS" store --help >"$TMP/sh.txt" && grep -q '^usage: gangsched store check DB' "$TMP/sh.txt" && ok "store --help: exit 0" || bad "store --help"
"$GS" store check --help >/dev/null && ok "store check --help: exit 0" || bad "store check --help"
expect_fail "store without a subcommand" 2 "usage: gangsched store check DB" -- "$GS" store
"$CTL" --help >"$TMP/h.txt" && grep -q '^usage: gangctl' "$TMP/h.txt" && ok "--help" || bad "--help"
"$CTL" --version | grep -q '^gangctl [0-9]' && ok "--version" || bad "--version: $("$CTL" --version 2>&1)"
"$BIN/kubectl-gang" --version | grep -q '^kubectl gang [0-9]' && ok "kubectl gang --version" || bad "kubectl gang --version"
"$CTL" --db "$TMP/s.db" --no-headers queues >"$TMP/nh.txt"
expect_eq "--no-headers: one row per queue" "$(wc -l <"$TMP/nh.txt" | tr -d ' ')" 2
grep -q '^QUEUE' "$TMP/nh.txt" && bad "--no-headers printed a header" || ok "--no-headers: no header"
timeout 3 "$CTL" --db "$TMP/s.db" -w --watch-interval 1 queues >"$TMP/w.txt"
expect_eq "--watch: ran until stopped (timeout's exit)" "$?" 124
n=$(grep -c '^QUEUE' "$TMP/w.txt")
expect_cmp "--watch: the table again every second" "$n" ">=" 2
grep -q '^Every 1s: gangctl --db .* queues   [0-9-]*T' "$TMP/w.txt" && ok "--watch: header line" || bad "--watch header: $(head -1 "$TMP/w.txt")"
expect_fail "--watch on an operator command" 2 "applies to the tenant commands" -- "$CTL" --server http://127.0.0.1:1 -w queue hold prod
expect_fail "--watch-interval 0" 2 "--watch-interval '0': expected a duration" -- "$CTL" --db "$TMP/s.db" -w --watch-interval 0 queues
"$CTL" jobs --help >"$TMP/h.txt" && grep -q 'submission order' "$TMP/h.txt" && ok "jobs --help" || bad "jobs --help"
"$CTL" >/dev/null 2>&1; expect_eq "no command: exit" "$?" 2
# flags: did you mean, given twice, --watch-interval with a unit
expect_fail "flag misspelt" 2 "unknown flag '--outptu' (did you mean --output?)" -- "$CTL" --db "$TMP/g.db" --outptu json queues
expect_fail "flag given twice" 2 "flag --db given twice" -- "$CTL" --db "$TMP/g.db" --db "$TMP/g.db" queues
timeout 3 "$CTL" --db "$TMP/s.db" -w --watch-interval 1500ms queues >"$TMP/w2.txt"
grep -q '^Every 1.5s: gangctl' "$TMP/w2.txt" && ok "--watch-interval 1500ms" || bad "--watch-interval 1500ms: $(head -1 "$TMP/w2.txt")"
# a full standard output: a non-zero exit and the reason, never a silent success
if [ -w /dev/full ]; then
    expect_fail "table to /dev/full" 2 "writing standard output: No space left on device" -- sh -c "\"$CTL\" --db \"$TMP/g.db\" queues >/dev/full"
    expect_fail "json to /dev/full" 2 "writing standard output" -- sh -c "\"$CTL\" --db \"$TMP/g.db\" -o json jobs -A >/dev/full"
    expect_fail "yaml to /dev/full" 2 "writing standard output" -- sh -c "\"$CTL\" --db \"$TMP/g.db\" -o yaml quota >/dev/full"
    expect_fail "--help to /dev/full" 2 "writing standard output" -- sh -c "\"$CTL\" --help >/dev/full"
    expect_fail "completion to /dev/full" 2 "writing standard output" -- sh -c "\"$CTL\" completion bash >/dev/full"
    expect_fail "--version to /dev/full" 2 "writing standard output" -- sh -c "\"$CTL\" --version >/dev/full"
else
    bad "/dev/full not writable here"
fi
expect_eq "database unchanged by gangctl" "$(cksum <"$TMP/g.db")" "$sum_before"
finish
