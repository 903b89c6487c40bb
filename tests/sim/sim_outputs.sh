# The other outputs: HTML report, --explain history, CLI help and version, gangctl placeholder.
. tests/sim/lib.inc
"$GS" simulate --no-progress --cluster hgx:2 --trace tests/data/trace-gangs.csv \
    --report "$TMP/r.html" --explain big-1 >"$TMP/out" 2>"$TMP/explain" || bad "report run failed"
n=$(grep -o "<svg" "$TMP/r.html" | wc -l)
expect_cmp "report charts" "$n" ">=" 3
grep -q "gangsched" "$TMP/r.html" && grep -q "fifo" "$TMP/r.html" && ok "report names policies" ||
    bad "report lacks policy names"
grep -q "<script" "$TMP/r.html" && bad "report must not need scripts" || ok "report has no scripts"
grep -q "job=big-1: placed" "$TMP/explain" && ok "explain shows the placement" || bad "explain lacks placement"
grep -E -q "job=big-1: (resources|quota)" "$TMP/explain" && ok "explain shows why it waited" ||
    { bad "explain lacks a waiting reason"; cat "$TMP/explain"; }
# repeats collapse into one line; no line follows an identical one
grep -q "job=big-1: \.\.\. x[0-9]* until t=[0-9]*s$" "$TMP/explain" && ok "explain: repeats collapsed" ||
    bad "explain: no collapsed repeats: $(head -5 "$TMP/explain")"
dups=$(sed 's/^t=[0-9]*s //' "$TMP/explain" | uniq -d | wc -l | tr -d ' ')
expect_eq "explain: consecutive identical lines" "$dups" 0
expect_fail "--explain an unknown job" 2 "no job 'nope' in the trace" -- \
    "$GS" simulate --no-progress --cluster hgx:2 --trace tests/data/trace-gangs.csv --explain nope
"$GS" version | grep -q "^gangsched " && ok "version" || bad "version"
# a trace file named all.csv makes a queue "all": the generated cohort takes another name
head -n 20 tests/data/trace-small.csv >"$TMP/all.csv"
sed 's/^a0/b0/' "$TMP/all.csv" >"$TMP/b.csv" # same jobs, other ids (ids are unique)
"$GS" simulate --no-progress --json --trace "$TMP/all.csv" --trace "$TMP/b.csv" >"$TMP/all.json" 2>"$TMP/all.err" &&
    ok "a queue called all" || bad "a queue called all: $(cat "$TMP/all.err")"
expect_eq "queue all: every job completes" "$("$JGET" "$TMP/all.json" policies/0/per_queue/all/jobs)" 19
"$GS" policies | grep -q "^fifo" && ok "policies list" || bad "policies list"
"$GS" simulate --help | grep -q -- "--trace FILE" && ok "simulate --help" || bad "simulate --help"
"$BIN/gangctl" --help >/dev/null && ok "gangctl --help" || bad "gangctl --help"
expect_fail "gangctl without a database" 2 "use --db FILE" -- "$BIN/gangctl" quota
finish
