# Outputs written whole or not at all, and inputs refused with their place (issue 21):
# --events/--jobs-out never created for a refused --db and never left partial; a full stdout
# fails the command; --jobs-out quotes CSV fields; duplicate job ids, non-UTF-8 ids, oversized
# traces, nodes with more than 32 GPUs, duplicate node names and bad gpu-islands annotations
# are refused naming file:line.
. tests/sim/lib.inc
T=tests/data/trace-small.csv
# ---- outputs ------------------------------------------------------------------------------
echo "not a database" >"$TMP/bad.db"
expect_fail "refused --db" 1 "bad.db" -- "$GS" simulate --no-progress --policy fifo --cluster hgx:2 \
    --trace $T --db "$TMP/bad.db" --events "$TMP/ev.jsonl" --jobs-out "$TMP/jobs.csv"
[ ! -e "$TMP/ev.jsonl" ] && [ ! -e "$TMP/jobs.csv" ] && ok "no output files for a refused --db" ||
    bad "a refused --db left output files: $(ls "$TMP")"
ls "$TMP" | grep -q tmp- && bad "temporary files left: $(ls "$TMP")" || ok "no temporary files left"
# a full disk, as a file-size limit (SIGXFSZ ignored: writes fail with EFBIG): exit 1, and
# neither the output nor its temporary file is left (before: a partial file, exit 0)
expect_fail "--events on a full disk" 1 "writing .*ev-full.jsonl" -- sh -c \
    "trap '' XFSZ; ulimit -f 8; exec \"$GS\" simulate --no-progress --cluster hgx:2 --trace $T --events \"$TMP/ev-full.jsonl\""
expect_fail "--jobs-out on a full disk" 1 "writing .*jobs-full.csv" -- sh -c \
    "trap '' XFSZ; ulimit -f 1; exec \"$GS\" simulate --no-progress --cluster hgx:2 --trace $T --jobs-out \"$TMP/jobs-full.csv\""
[ ! -e "$TMP/ev-full.jsonl" ] && [ ! -e "$TMP/jobs-full.csv" ] && ok "nothing left on a full disk" ||
    bad "partial outputs left on a full disk"
ls "$TMP" | grep -q tmp- && bad "temporary files left: $(ls "$TMP")" || ok "no temporary files left"
# --report as the other outputs (before: written in place, a killed or failed write left a partial
# page instead of the old one), under a file-size limit the simulator itself sets to a write
# error (SIGXFSZ ignored; before: killed by it, FILE.tmp-PID left); --jobs-out to /dev/full
# names the file and the cause
echo old >"$TMP/r.html"
echo old >"$TMP/j.csv"
expect_fail "--report under ulimit -f" 1 "writing .*r.html: File too large (nothing written)" -- sh -c \
    "ulimit -f 8; exec \"$GS\" simulate --no-progress --policy gangsched --report \"$TMP/r.html\""
expect_eq "--report: the old page kept" "$(cat "$TMP/r.html")" old
expect_fail "--jobs-out under ulimit -f" 1 "writing .*j.csv: File too large" -- sh -c \
    "ulimit -f 1; exec \"$GS\" simulate --no-progress --policy gangsched --jobs-out \"$TMP/j.csv\""
expect_eq "--jobs-out: the old file kept" "$(cat "$TMP/j.csv")" old
ls "$TMP" | grep -q tmp- && bad "temporary files left: $(ls "$TMP")" || ok "no temporary files left (file-size limit)"
if [ -w /dev/full ]; then
    expect_fail "--jobs-out /dev/full" 1 "policy gangsched: writing /dev/full: No space left on device" -- \
        "$GS" simulate --no-progress --policy gangsched --jobs-out /dev/full
    expect_fail "--report /dev/full" 1 "writing /dev/full: No space left on device" -- \
        "$GS" simulate --no-progress --policy gangsched --report /dev/full
fi
# SIGTERM mid-run: no FILE.tmp-PID left. The --events FIFO's reader never reads, so the run
# stalls with --jobs-out's temporary file open.
mkfifo "$TMP/stall"
sleep 30 <"$TMP/stall" &
RD=$!
"$GS" simulate --no-progress --cluster hgx:64 --trace sched/sim/data/itp/cluster07.csv \
    --events "$TMP/stall" --jobs-out "$TMP/term.csv" >/dev/null 2>&1 &
SP=$!
i=0
while ! ls "$TMP" | grep -q "term.csv.tmp-" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ls "$TMP" | grep -q "term.csv.tmp-" && ok "a stalled run has its temporary file open" || bad "no temporary file seen"
kill -TERM $SP
wait $SP
expect_eq "SIGTERM: the run dies of it" "$?" 143
kill $RD 2>/dev/null
wait $RD 2>/dev/null
ls "$TMP" | grep -q "term.csv" && bad "SIGTERM left: $(ls "$TMP" | grep term)" || ok "SIGTERM: no FILE.tmp-PID left"
# stdout on a full device: exit 1 with a message (before: exit 0)
if [ -w /dev/full ]; then
    expect_fail "table to /dev/full" 1 "writing standard output" -- sh -c \
        "\"$GS\" simulate --no-progress --cluster hgx:2 --trace $T >/dev/full"
    expect_fail "json to /dev/full" 1 "writing standard output" -- sh -c \
        "\"$GS\" simulate --no-progress --json --cluster hgx:2 --trace $T >/dev/full"
    expect_fail "policies to /dev/full" 1 "writing standard output" -- sh -c "\"$GS\" policies >/dev/full"
else
    bad "/dev/full not writable here"
fi
# a whole run: outputs appear with their final names only
"$GS" simulate --no-progress --policy fifo --cluster hgx:2 --trace $T --events "$TMP/ev.jsonl" \
    --jobs-out "$TMP/jobs.csv" >/dev/null 2>&1 && [ -s "$TMP/ev.jsonl" ] && [ -s "$TMP/jobs.csv" ] &&
    ok "outputs written" || bad "outputs not written"
# a path that is not a regular file is written in place, never renamed over: a symbolic link
# stays a link (its target gets the output), a FIFO is read by its reader
: >"$TMP/target.jsonl"
ln -s target.jsonl "$TMP/link.jsonl"
"$GS" simulate --no-progress --policy fifo --cluster hgx:2 --trace $T --events "$TMP/link.jsonl" \
    >/dev/null 2>&1 && [ -L "$TMP/link.jsonl" ] && [ -s "$TMP/target.jsonl" ] &&
    ok "--events through a symbolic link" || bad "--events through a symbolic link"
mkfifo "$TMP/fifo"
cat "$TMP/fifo" >"$TMP/from-fifo" &
"$GS" simulate --no-progress --policy fifo --cluster hgx:2 --trace $T --events "$TMP/fifo" >/dev/null 2>&1
wait
[ -p "$TMP/fifo" ] && cmp -s "$TMP/from-fifo" "$TMP/ev.jsonl" && ok "--events to a FIFO" ||
    bad "--events to a FIFO"
# CSV quoting: an id with a comma and a quote stays in its column
printf 'job_id,submission_time,duration,num_gpu\n"a,b ""x""",0,10,1\nplain,1,10,1\n' >"$TMP/q.csv"
"$GS" simulate --no-progress --policy fifo --cluster hgx:1 --trace "$TMP/q.csv" \
    --jobs-out "$TMP/q-jobs.csv" >/dev/null 2>&1 || bad "quoted-id run failed"
grep -q '^"a,b ""x""",fifo,q,' "$TMP/q-jobs.csv" && ok "--jobs-out quotes an id with a comma" ||
    bad "--jobs-out quoting: $(cat "$TMP/q-jobs.csv")"
n=$(python3 -c 'import csv,sys; r=list(csv.reader(open(sys.argv[1]))); print(len({len(x) for x in r}), r[1][0])' "$TMP/q-jobs.csv")
expect_eq "--jobs-out parses as CSV (one width, id intact)" "$n" '1 a,b "x"'
# ---- inputs ---------------------------------------------------------------------------------
printf 'job_id,submission_time,duration,num_gpu\na,0,10,1\nb,1,10,1\na,2,10,1\n' >"$TMP/dup.csv"
expect_fail "duplicate job id" 1 "dup.csv:4: job id 'a' is already used at .*dup.csv:2" -- \
    "$GS" simulate --no-progress --cluster hgx:1 --trace "$TMP/dup.csv"
printf 'job_id,submission_time,duration,num_gpu\nz,0,10,1\n' >"$TMP/one.csv"
expect_fail "duplicate job id across traces" 1 "one.csv:2: job id 'z' is already used at" -- \
    "$GS" simulate --no-progress --cluster hgx:1 --trace "$TMP/one.csv" --trace "$TMP/one.csv"
printf 'job_id,submission_time,duration,num_gpu\nbad\377id,0,10,1\n' >"$TMP/utf.csv"
expect_fail "non-UTF-8 job id" 1 "utf.csv:2: column 'job_id': .* is not UTF-8 text" -- \
    "$GS" simulate --no-progress --cluster hgx:1 --trace "$TMP/utf.csv" --events "$TMP/u.jsonl"
[ ! -e "$TMP/u.jsonl" ] && ok "no events file for a refused trace" || bad "events file left"
# a trace past the size limit is refused (1 GiB: read from a sparse file, not from memory)
truncate -s 1100M "$TMP/huge.csv"
expect_fail "oversized trace" 1 "larger than 1073741824 bytes" -- \
    "$GS" simulate --no-progress --cluster hgx:1 --trace "$TMP/huge.csv"
rm -f "$TMP/huge.csv"
node() { # NAME GPUS [ANNOTATION]
    printf -- '- metadata: {name: %s%s}\n  status: {allocatable: {nvidia.com/gpu: "%s"}}\n' \
        "$1" "${3:+, annotations: {gangsched.io/gpu-islands: \"$3\"\}}" "$2"
}
{ echo "kind: NodeList"; echo "items:"; node a 8; node b 33; } >"$TMP/n33.yaml"
expect_fail "33 GPUs" 1 'n33.yaml:6:[0-9]*: node "b": field status.allocatable: 33 GPUs; a node may have at most 32' -- \
    "$GS" simulate --no-progress --nodes "$TMP/n33.yaml" --trace $T
{ echo "kind: NodeList"; echo "items:"; node a 8; node b 8Ki; } >"$TMP/n8ki.yaml"
expect_fail "8Ki GPUs" 1 'node "b": field status.allocatable: 8192 GPUs' -- \
    "$GS" simulate --no-progress --nodes "$TMP/n8ki.yaml" --trace $T
{ echo "kind: NodeList"; echo "items:"; node a 8; node b 8; node a 8; } >"$TMP/ndup.yaml"
expect_fail "duplicate node name" 1 'ndup.yaml:7: node "a": duplicate node name (first at line 3)' -- \
    "$GS" simulate --no-progress --nodes "$TMP/ndup.yaml" --trace $T
python3 -c 'import json; print(json.dumps({"kind":"NodeList","items":[{"metadata":{"name":n},"status":{"allocatable":{"nvidia.com/gpu":"8"}}} for n in ("a","b","a")]}))' >"$TMP/ndup.json"
expect_fail "duplicate node name (JSON)" 1 'ndup.json: node "a" (items\[2\]): duplicate node name (first at items\[0\])' -- \
    "$GS" simulate --no-progress --nodes "$TMP/ndup.json" --trace $T
{ echo "kind: NodeList"; echo "items:"; node a 8; node b 8 "0-3;4-9"; } >"$TMP/nisl.yaml"
expect_fail "bad gpu-islands" 1 'nisl.yaml:5:[0-9]*: node "b": annotation gangsched.io/gpu-islands: .*GPU index 9 out of range' -- \
    "$GS" simulate --no-progress --nodes "$TMP/nisl.yaml" --trace $T
# ---- --resume of a finished run changes nothing (before: commit_seq grew by one each time) --
seq() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select value from meta where key=?", ("commit_seq",)).fetchone()[0])' "$1"; }
"$GS" simulate --no-progress --policy gangsched --cluster hgx:2 --trace $T --db "$TMP/r.db" >"$TMP/r1" 2>&1 ||
    bad "run for --resume: $(cat "$TMP/r1")"
s1=$(seq "$TMP/r.db")
"$GS" simulate --no-progress --policy gangsched --cluster hgx:2 --trace $T --db "$TMP/r.db" --resume >"$TMP/r2" 2>&1 ||
    bad "--resume of a finished run: $(cat "$TMP/r2")"
"$GS" simulate --no-progress --policy gangsched --cluster hgx:2 --trace $T --db "$TMP/r.db" --resume >"$TMP/r3" 2>&1
expect_eq "commit_seq after two --resume of a finished run" "$(seq "$TMP/r.db")" "$s1"
cmp -s "$TMP/r1" "$TMP/r3" && ok "a resumed finished run prints the same results" || bad "results differ after --resume"
"$GS" store check "$TMP/r.db" >/dev/null 2>&1 && ok "store check after --resume" || bad "store check after --resume"
# ---- --rebuild-store never moves a locked database aside (it is another writer's) ----------
python3 - "$TMP/r.db" "$TMP/locked" <<'PY' &
import sqlite3, sys, time, os
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
open(sys.argv[2], "w").close()
time.sleep(8)
c.execute("ROLLBACK")
PY
LPID=$!
i=0
while [ ! -e "$TMP/locked" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
expect_fail "--rebuild-store on a locked database" 1 "locked by another writer" -- \
    "$GS" simulate --no-progress --policy gangsched --cluster hgx:2 --trace $T --db "$TMP/r.db" --rebuild-store
[ -f "$TMP/r.db" ] && ! ls "$TMP" | grep -q "r.db.broken" && ok "the locked database stays in place" ||
    bad "the locked database was moved: $(ls "$TMP")"
kill $LPID 2>/dev/null
wait $LPID 2>/dev/null
# ---- cohort depth -----------------------------------------------------------------------------
chain() { # N FILE: a chain of N cohorts, the queue trace-small at the bottom
    { echo "apiVersion: gangsched.io/v1alpha1"; echo "kind: SchedulerConfig"; echo "cohorts:"
      i=0
      while [ $i -lt "$1" ]; do
          echo "  - name: c$i"
          [ $i -gt 0 ] && echo "    parent: c$((i - 1))"
          [ $i -eq 0 ] && printf '    quota:\n      default:\n        nvidia.com/gpu: 64\n'
          i=$((i + 1))
      done
      printf 'queues:\n  - name: trace-small\n    cohort: c%d\n' $(($1 - 1))
      printf '    quota:\n      default:\n        nvidia.com/gpu: 8\n'; } >"$2"
}
chain 1000 "$TMP/deep.yaml"
expect_fail "1,000-level cohort chain" 1 "deep.yaml:[0-9]*:[0-9]*: cohorts\[32\].parent: cohort 'c32' is 33 levels deep under root cohort 'c0' (at most 32)" -- \
    "$GS" config check "$TMP/deep.yaml"
chain 32 "$TMP/d32.yaml"
"$GS" config check "$TMP/d32.yaml" >/dev/null 2>&1 && ok "32-level chain accepted" || bad "32-level chain refused"
timeout 60 "$GS" simulate --no-progress --json --config "$TMP/d32.yaml" --cluster hgx:2 --trace $T \
    >"$TMP/d32.json" 2>"$TMP/d32.err" || bad "32-level chain simulation: $(cat "$TMP/d32.err")"
# as many jobs complete as without any quota (two never fit 16 GPUs)
expect_eq "32-level chain: jobs completed" "$("$JGET" "$TMP/d32.json" policies/0/completed)" 17
finish
