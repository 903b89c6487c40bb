# Crash and resume: a simulation persisted with --db is killed at many points (the simulator's own
# abrupt --stop-after-events, and SIGKILL from here at random moments), then resumed with --resume;
# every job must end exactly as in an uninterrupted run (start, finish, evictions, placement), and
# the store must pass its consistency check after every resume. GANGSCHED_CRASH_POINTS sets how
# many points of each kind (default 10, so 20 in all); make soak runs hundreds.
. tests/sim/lib.inc
POINTS=${GANGSCHED_CRASH_POINTS:-10}
# --db-batch 16: a commit every 16 instants, so that kills land between many commits
ARGS="--no-progress --policy gangsched --cluster hgx:4,pcie:2 --trace tests/data/trace-crash.csv --high-priority 0.33 --db-batch 16"
# shellcheck disable=SC2086
"$GS" simulate $ARGS --db "$TMP/ref.db" --jobs-out "$TMP/ref.csv" --events "$TMP/ref.ev" >/dev/null ||
    { bad "reference run failed"; finish; }
"$EVCHECK" "$TMP/ref.ev" >/dev/null && ok "reference event log checks" || bad "reference log check failed"
"$GS" store check "$TMP/ref.db" >"$TMP/ref.check" && ok "reference store consistent" || bad "reference store check"
# "..., N decisions)": the decision log of a resumed run must have the same rows
decisions() { sed -n 's/.* \([0-9-]*\) decisions)$/\1/p' "$1"; }
ref_decisions=$(decisions "$TMP/ref.check")
expect_cmp "reference run logged decisions" "${ref_decisions:-0}" ">" 0
# the whole decision log, row by row (its ids aside)
dec_dump() {
    python3 -c "import sqlite3, sys
for r in sqlite3.connect(sys.argv[1]).execute('SELECT cycle, ts_ms, gang, why, reason, eta_ms, eta FROM decisions ORDER BY id'):
    print(r)" "$1"
}
dec_dump "$TMP/ref.db" >"$TMP/ref.dec"
# a reason's new figures are written once per transaction (db_text_keep in sched/sim/persist.c):
# a commit per instant must log the same rows with the same texts and times
# shellcheck disable=SC2086
"$GS" simulate ${ARGS%--db-batch 16} --db-batch 1 --db "$TMP/b1.db" >/dev/null 2>&1 && dec_dump "$TMP/b1.db" >"$TMP/b1.dec" &&
    cmp -s "$TMP/ref.dec" "$TMP/b1.dec" && ok "the decision log is the same with a commit per instant" ||
    bad "the decision log differs with a commit per instant"
# shellcheck disable=SC2086
"$GS" simulate $ARGS --jobs-out "$TMP/mem.csv" >/dev/null
cmp -s "$TMP/ref.csv" "$TMP/mem.csv" && ok "persisting changes no result" || bad "--db changed the results"
total=$(grep -c -E '"type":"(submit|start|finish|evict|reject)"' "$TMP/ref.ev")
resume_and_compare() {
    label=$1
    # shellcheck disable=SC2086
    if ! "$GS" simulate $ARGS --db "$TMP/c.db" --resume --jobs-out "$TMP/c.csv" >/dev/null 2>"$TMP/err"; then
        bad "$label: resume failed: $(cat "$TMP/err")"; return
    fi
    if ! "$GS" store check "$TMP/c.db" >"$TMP/check" 2>&1; then
        bad "$label: store check after resume: $(head -3 "$TMP/check")"; return
    fi
    if cmp -s "$TMP/ref.csv" "$TMP/c.csv"; then ok "$label: resumed exactly"
    else bad "$label: results differ"; diff "$TMP/ref.csv" "$TMP/c.csv" | head -4; fi
    n_dec=$(decisions "$TMP/check")
    # texts and expected starts too: a waiting job's first verdict after the resume is told a
    # repeat by its newest row's text (resumed_repeat in sched/sim/persist.c)
    dec_dump "$TMP/c.db" >"$TMP/c.dec"
    [ "$n_dec" = "$ref_decisions" ] && cmp -s "$TMP/ref.dec" "$TMP/c.dec" &&
        ok "$label: decision log as uninterrupted ($n_dec rows, the same texts)" ||
        bad "$label: decision log has $n_dec rows, uninterrupted $ref_decisions, or other texts"
}
i=1
while [ "$i" -le "$POINTS" ]; do
    n=$(( (total * i) / (POINTS + 1) ))
    rm -f "$TMP"/c.db*
    # shellcheck disable=SC2086
    "$GS" simulate $ARGS --db "$TMP/c.db" --stop-after-events "$n" >/dev/null 2>&1
    rc=$?
    [ "$rc" -eq 75 ] || bad "stop after $n events: exit $rc, want 75"
    resume_and_compare "stopped after $n of $total events"
    i=$((i + 1))
done
# SIGKILL at random moments (the run takes well under a second: kill within it)
i=1
seed=$$
while [ "$i" -le "$POINTS" ]; do
    rm -f "$TMP"/c.db*
    seed=$(( (seed * 1103515245 + 12345) % 2147483648 ))
    delay=$(awk -v s="$seed" 'BEGIN { srand(s); printf "%.3f", 0.01 + rand() * 0.25 }')
    # shellcheck disable=SC2086
    "$GS" simulate $ARGS --db "$TMP/c.db" >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    resume_and_compare "SIGKILL after ${delay}s"
    i=$((i + 1))
done
# Backfill on probation across a stop (tests/data/trace-probation.csv): big (24 GPUs) starves and
# holds a reservation expected to start at 12 s; s declares 1 s, is backfilled on probation
# until then and never ends; when x1 ends at 20 s, big evicts s (overdue) and starts. A run
# stopped while s's promise is pending must keep it: every stop point, resumed, ends exactly as
# the uninterrupted run (before the promises were saved, stops between s's start and x1's end
# ran big at 100 s instead).
PARGS="--no-progress --policy gangsched --cluster hgx:4 --config tests/data/probation-crash.yaml --trace tests/data/trace-probation.csv --db-batch 1"
# shellcheck disable=SC2086
"$GS" simulate $PARGS --db "$TMP/pref.db" --jobs-out "$TMP/pref.csv" --events "$TMP/pref.ev" >/dev/null ||
    bad "probation reference run failed"
grep -q '"job":"s".*"probation_until":12.000' "$TMP/pref.ev" && ok "probation: s backfilled on probation" ||
    bad "probation: s was not put on probation"
grep -q '"type":"evict".*"job":"s".*overdue backfill evicted by big' "$TMP/pref.ev" &&
    ok "probation: big evicts s, overdue" || bad "probation: no overdue eviction"
# its decision row says the promise, in the daemon's words (sched_placed_format)
python3 -c "import sqlite3, sys; sys.exit(0 if sqlite3.connect(sys.argv[1]).execute(
\"SELECT COUNT(*) FROM decisions WHERE gang = 's' AND why = 0 AND reason = 'placed on probation: \"
\"backfilled ahead of big''s reservation on the promise to end by t=12s; after that, big may \"
\"evict it'\").fetchone()[0] == 1 else 1)" "$TMP/pref.db" &&
    ok "probation: the decision log says s's promise" || bad "probation: no promise in the decision log"
ptotal=$(grep -c -E '"type":"(submit|start|finish|evict|reject)"' "$TMP/pref.ev")
n=1
while [ "$n" -lt "$ptotal" ]; do
    rm -f "$TMP"/p.db*
    # shellcheck disable=SC2086
    "$GS" simulate $PARGS --db "$TMP/p.db" --stop-after-events "$n" >/dev/null 2>&1
    # shellcheck disable=SC2086
    if ! "$GS" simulate $PARGS --db "$TMP/p.db" --resume --jobs-out "$TMP/p.csv" >/dev/null 2>"$TMP/err"; then
        bad "probation, stopped after $n events: resume failed: $(cat "$TMP/err")"
    elif cmp -s "$TMP/pref.csv" "$TMP/p.csv"; then ok "probation, stopped after $n of $ptotal events: resumed exactly"
    else bad "probation, stopped after $n events: results differ"; diff "$TMP/pref.csv" "$TMP/p.csv" | head -4; fi
    n=$((n + 1))
done
# a damaged promise field is refused, naming the row and the field (s is job 3, j:3)
rm -f "$TMP"/p.db*
# shellcheck disable=SC2086
"$GS" simulate $PARGS --db "$TMP/p.db" --stop-after-events 8 >/dev/null 2>&1
python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n = db.execute("update meta set value = replace(value, \" promise 0 12000 2\", \" promise 0 12000 x\") where key = \"j:3\"").rowcount
db.commit()
sys.exit(0 if n == 1 else 1)' "$TMP/p.db" || bad "probation: no j:3 row to damage"
# shellcheck disable=SC2086
expect_fail "probation: a damaged promise is refused" 1 "meta j:3: field promise" -- \
    "$GS" simulate $PARGS --db "$TMP/p.db" --resume
finish
