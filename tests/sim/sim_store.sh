# The simulator's store from the outside: a corrupt file is refused and never replaced silently,
# --rebuild-store keeps it aside, a second run on a used file needs --resume, and the check
# command reports a healthy store.
. tests/sim/lib.inc
ARGS="--no-progress --policy gangsched --trace tests/data/trace-small.csv"
printf 'garbage that is not SQLite: %0100d' 0 >"$TMP/bad.db"
cp "$TMP/bad.db" "$TMP/bad.copy"
# shellcheck disable=SC2086
expect_fail "corrupt database refused" 1 "corrupt database $TMP/bad.db" -- "$GS" simulate $ARGS --db "$TMP/bad.db"
cmp -s "$TMP/bad.db" "$TMP/bad.copy" && ok "corrupt file untouched" || bad "corrupt file was changed"
"$GS" store check "$TMP/bad.db" >"$TMP/out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "corrupt database $TMP/bad.db" "$TMP/out" && ok "check of a corrupt file: exit 2" ||
    bad "check of a corrupt file: exit $rc: $(cat "$TMP/out")"
# shellcheck disable=SC2086
"$GS" simulate $ARGS --db "$TMP/bad.db" --rebuild-store >/dev/null 2>"$TMP/err" &&
    ok "--rebuild-store starts a new store" || bad "--rebuild-store failed: $(cat "$TMP/err")"
ls "$TMP"/bad.db.broken-* >/dev/null 2>&1 && ok "old file kept aside" || bad "old file not kept"
cmp -s "$TMP"/bad.db.broken-* "$TMP/bad.copy" && ok "kept file intact" || bad "kept file changed"
"$GS" store check "$TMP/bad.db" >/dev/null && ok "rebuilt store consistent" || bad "rebuilt store check"
# shellcheck disable=SC2086
expect_fail "a used store needs --resume" 1 "already holds a simulation" -- "$GS" simulate $ARGS --db "$TMP/bad.db"
# shellcheck disable=SC2086
expect_fail "another simulation in the store" 1 "holds another simulation" -- "$GS" simulate $ARGS --cluster hgx:2 --db "$TMP/bad.db" --resume
# the same arguments but a trace whose bytes changed since the crash: refused, naming the file
cp tests/data/trace-small.csv "$TMP/t.csv"
"$GS" simulate --no-progress --policy gangsched --trace "$TMP/t.csv" --db "$TMP/t.db" \
    --stop-after-events 5 >/dev/null 2>&1
"$GS" simulate --no-progress --policy gangsched --trace "$TMP/t.csv" --db "$TMP/t.db" --resume \
    >"$TMP/t1.out" 2>&1 && ok "unchanged inputs resume" || bad "resume failed: $(cat "$TMP/t1.out")"
"$GS" simulate --no-progress --policy gangsched --trace "$TMP/t.csv" --db "$TMP/t2.db" \
    --stop-after-events 5 >/dev/null 2>&1
sed "s/,3600,8\$/,3601,8/" "$TMP/t.csv" >"$TMP/t.new" && mv "$TMP/t.new" "$TMP/t.csv"
expect_fail "changed trace refused on resume" 1 "input file $TMP/t.csv changed since the run was saved" -- "$GS" simulate --no-progress --policy gangsched --trace "$TMP/t.csv" --db "$TMP/t2.db" --resume
expect_fail "two policies with --db" 2 "exactly one --policy" -- "$GS" simulate --no-progress --policy gangsched --policy fifo --db "$TMP/x.db"
"$GS" store check "$TMP/none.db" >"$TMP/out" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "$TMP/none.db does not exist" "$TMP/out" && ok "check of a missing file: exit 2" ||
    bad "check of a missing file: exit $rc: $(cat "$TMP/out")"
# A store on a read-only filesystem (a read-only bind mount in a private mount namespace: needs
# root and unshare -m; said and not counted where they are missing): SQLite answers
# SQLITE_CANTOPEN there (EROFS on PATH-shm), which store check and gangctl --db now read as
# immutable when no PATH-wal exists (before: "unable to open database file", exit 2); with a
# PATH-wal they refuse, naming it.
mkdir "$TMP/ro" "$TMP/rw"
"$GS" simulate --no-progress --policy gangsched --trace "$TMP/t.csv" --db "$TMP/ro/run.db" >/dev/null 2>&1
cp "$TMP/ro/run.db" "$TMP/rw/run.db" # a reader leaves PATH-shm behind: read a copy
"$BIN/gangctl" --db "$TMP/rw/run.db" queues >"$TMP/rw.txt" 2>&1
[ ! -e "$TMP/ro/run.db-shm" ] && [ ! -e "$TMP/ro/run.db-wal" ] && ok "a closed store: the main file alone" ||
    bad "side files left: $(ls "$TMP/ro")"
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
    ro() { unshare -m sh -c "mount --bind '$TMP/ro' '$TMP/ro' && mount -o remount,ro,bind '$TMP/ro' && $*"; }
    ro "touch '$TMP/ro/x'" 2>/dev/null && bad "the bind mount is writable" || ok "read-only bind mount"
    ro "'$GS' store check '$TMP/ro/run.db'" >"$TMP/out" 2>&1 &&
        grep -q "run.db: consistent" "$TMP/out" && ok "store check on a read-only filesystem" ||
        bad "store check on a read-only filesystem: $(cat "$TMP/out")"
    ro "'$BIN/gangctl' --db '$TMP/ro/run.db' queues" >"$TMP/ro.txt" 2>&1
    cmp -s "$TMP/rw.txt" "$TMP/ro.txt" && ok "gangctl --db on a read-only filesystem" ||
        bad "gangctl --db on a read-only filesystem: $(cat "$TMP/ro.txt")"
    : >"$TMP/ro/run.db-wal"
    ro "'$GS' store check '$TMP/ro/run.db'" >"$TMP/out" 2>&1
    rc=$?
    [ "$rc" = 2 ] && grep -q "its write-ahead log $TMP/ro/run.db-wal needs a shared-memory file" "$TMP/out" &&
        ok "with a -wal file: refused, naming it (exit 2)" || bad "with a -wal file: exit $rc: $(cat "$TMP/out")"
else
    echo "SKIP read-only filesystem checks: need root and unshare -m"
fi
finish
