# Run-time estimates per user (trace column `user`, queue/estimate.h): one queue, two users of
# every shape, ana's jobs run about 10 minutes and ben's about 3 hours. Judged by their own
# runs, the start estimates err less (median and p90) and the queue waits less (reservations and
# backfill read the same estimates) than on the same trace without the column; a column whose
# cells are all empty is the same as none (the same decisions, byte for byte); the user is read
# as text (quoted, with spaces) and kept in the store's job rows.
. tests/sim/lib.inc
python3 - "$TMP" <<'PY'
import os, random, sys
r = random.Random(7)
rows, t = [], 0
for i in range(600):
    t += r.randint(60, 900)
    user, d = ("ana", r.randint(500, 700)) if r.random() < 0.5 else ('"ben b."', r.randint(9000, 11000))
    rows.append((t, d, r.choice([1, 2, 4, 8]), user))
for name, cell in (("users", lambda u: u), ("none", None), ("empty", lambda u: "")):
    os.mkdir("%s/%s" % (sys.argv[1], name))  # one file name: the queue is the file's stem
    with open("%s/%s/jobs.csv" % (sys.argv[1], name), "w") as f:
        f.write("submission_time,duration,num_gpu%s\n" % (",user" if cell else ""))
        for t, d, g, u in rows:
            f.write("%d,%d,%d%s\n" % (t, d, g, "," + cell(u) if cell else ""))
PY
for t in users none empty; do
    "$GS" simulate --no-progress --policy gangsched --cluster hgx:6 --trace "$TMP/$t/jobs.csv" \
        --json --jobs-out "$TMP/$t.jobs.csv" >"$TMP/$t.json" 2>"$TMP/$t.err" ||
        bad "simulate $t: $(head -3 "$TMP/$t.err")"
done
get() { "$JGET" "$TMP/$1.json" "policies/0/$2"; }
expect_cmp "median start-estimate error, per user against per queue" \
    "$(get users eta_median_rel_error)" "<" "$(get none eta_median_rel_error) - 0.05"
expect_cmp "p90 start-estimate error, per user against per queue" \
    "$(get users eta_p90_rel_error)" "<" "$(get none eta_p90_rel_error)"
expect_cmp "mean queue time, per user against per queue" \
    "$(get users mean_queue_s)" "<" "$(get none mean_queue_s)"
if cmp -s "$TMP/none.jobs.csv" "$TMP/empty.jobs.csv" && cmp -s "$TMP/none.json" "$TMP/empty.json"; then
    ok "empty user cells: the same run as no user column"
else
    bad "empty user cells changed the run"
fi
# the store keeps each job's user (jobs.user_name, schema 7): gangctl's JSON names it
"$GS" simulate --no-progress --policy gangsched --cluster hgx:6 --trace "$TMP/users/jobs.csv" \
    --db "$TMP/u.db" >/dev/null 2>"$TMP/db.err" || bad "simulate --db: $(head -3 "$TMP/db.err")"
"$BIN/gangctl" --db "$TMP/u.db" jobs --all -o json >"$TMP/jobs.json" 2>"$TMP/ctl.err" || bad "gangctl: $(head -3 "$TMP/ctl.err")"
expect_eq "users in the store, as gangctl shows them" "$(python3 -c "
import json, sys
print(sorted({j['user'] for j in json.load(open(sys.argv[1]))['jobs']}))" "$TMP/jobs.json")" "['ana', 'ben b.']"
expect_eq "gangctl jobs -u: that user's jobs only" \
    "$("$BIN/gangctl" --db "$TMP/u.db" jobs -A -u 'ben b.' -o json | grep -c '"user":.*"ben b."')" \
    "$("$BIN/gangctl" --db "$TMP/u.db" jobs -A -o json | grep -c '"user":.*"ben b."')"
expect_eq "gangctl jobs -u: none of the other's" \
    "$("$BIN/gangctl" --db "$TMP/u.db" jobs -A -u 'ben b.' -o json | grep -c '"user":.*"ana"')" 0
expect_eq "gangctl jobs -u for nobody" "$("$BIN/gangctl" --db "$TMP/u.db" jobs -A -u nobody)" \
    "no jobs of user nobody"
finish
