/* store/store.c: opening and closing the database, transactions, error mapping, the shared
 * statement helpers (meta keys and queues: store/meta.c).
 *
 * Owns: the open sequence (probe the file without SQLite, open, refuse what is not ours or too
 * new, quick_check, pragmas, migrate, prepare every statement once), the transaction state
 * machine of store_int.h, and the SQLite-to-SCHED_E* error mapping.
 *
 * Must not touch: any file but the database (and SQLite's PATH-wal / PATH-shm); an existing file
 * is never written before it has passed every check.
 */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sched/core/log.h"
#include "store/store_int.h"

/* ---- errors and helpers ------------------------------------------------------------------- */

int store__sql_fail(struct store *st, int rc, const char *what, struct sched_errbuf *eb)
{
    const char *msg = st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc);
    const char *path = st->path;
    int err;
    switch (rc & 0xff) {
    case SQLITE_FULL:
        err = sched_fail(eb, SCHED_EFULL, "disk full writing DB %s: %s: %s", path, what, msg);
        break;
    case SQLITE_READONLY:
        err = sched_fail(eb, SCHED_EIO, "database is read-only: %s: %s: %s", path, what, msg);
        break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        err = sched_fail(eb, SCHED_EIO, "corrupt database %s: %s: %s (use --rebuild-store)", path,
                         what, msg);
        break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        err = sched_fail(eb, SCHED_EIO,
                         "database %s is locked by another writer (only the leader writes): "
                         "%s: %s",
                         path, what, msg);
        break;
    case SQLITE_NOMEM:
        err = sched_fail(eb, SCHED_ENOMEM, "out of memory using database %s: %s", path, what);
        break;
    case SQLITE_CONSTRAINT:
        if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
            err = sched_fail(eb, SCHED_EEXIST, "database %s: %s: already recorded (%s)", path, what,
                             msg);
        else if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
            err = sched_fail(eb, SCHED_ENOENT, "database %s: %s: refers to a missing row (%s)",
                             path, what, msg);
        else
            err = sched_fail(eb, SCHED_EINVAL, "database %s: %s: rejected by the schema (%s)", path,
                             what, msg);
        break;
    case SQLITE_TOOBIG:
        err =
            sched_fail(eb, SCHED_EINVAL, "database %s: %s: value too large (%s)", path, what, msg);
        break;
    case SQLITE_CANTOPEN:
        err = sched_fail(eb, SCHED_EIO, "cannot open database %s: %s: %s", path, what, msg);
        break;
    case SQLITE_IOERR:
        err = sched_fail(eb, SCHED_EIO, "I/O error on database %s: %s: %s", path, what, msg);
        break;
    default:
        err = sched_fail(eb, SCHED_EIO, "database %s: %s: %s", path, what, msg);
        break;
    }
    /* SQLite rolls a transaction back by itself after some errors (disk full, I/O, no memory). */
    if (st->txn == TXN_OPEN && st->db && sqlite3_get_autocommit(st->db))
        st->txn = TXN_FAILED;
    return err;
}

int store__bad_row(struct store *st, struct sched_errbuf *eb, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return sched_fail(eb, SCHED_EINVAL, "corrupt database %s: %s (use --rebuild-store)", st->path,
                      what);
}

int store__exec(struct store *st, enum store__stmt id, int rc, int *changes)
{
    sqlite3_stmt *s = st->stmt[id];
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        while (rc == SQLITE_ROW)
            rc = sqlite3_step(s);
        if (rc == SQLITE_DONE) {
            rc = SQLITE_OK;
            if (changes)
                *changes = sqlite3_changes(st->db);
        }
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

int store__exec_rows(struct store *st, enum store__stmt one, enum store__stmt many, uint32_t n,
                     store__bind_row *bind, const void *rows)
{
    int per_row = sqlite3_bind_parameter_count(st->stmt[one]);
    int rc = SQLITE_OK;
    uint32_t i = 0;
    for (; rc == SQLITE_OK && n - i >= STORE__ROWS; i += STORE__ROWS) {
        for (uint32_t k = 0; k < STORE__ROWS; k++)
            bind(st, many, (int)k * per_row, i + k, rows, &rc);
        rc = store__exec(st, many, rc, NULL);
    }
    for (; rc == SQLITE_OK && i < n; i++) {
        bind(st, one, 0, i, rows, &rc);
        rc = store__exec(st, one, rc, NULL);
    }
    return rc;
}

void store_rebuild_hint(struct sched_errbuf *eb, const char *instead)
{
    static const char hint[] = " (use --rebuild-store)";
    char *at = eb ? strstr(eb->msg, hint) : NULL;
    if (!at)
        return;
    char rest[sizeof(eb->msg)];
    snprintf(rest, sizeof(rest), "%s", at + sizeof(hint) - 1);
    size_t used = (size_t)(at - eb->msg);
    snprintf(at, sizeof(eb->msg) - used, "%s%s%s%s", instead && *instead ? " (" : "",
             instead && *instead ? instead : "", instead && *instead ? ")" : "", rest);
}

int store_set_aside(const char *path, int open_rc, char *aside, size_t cap, struct sched_errbuf *eb)
{
    if (open_rc == 0 || !strstr(eb->msg, "--rebuild-store"))
        return open_rc;
    snprintf(aside, cap, "%s.broken-%lld", path, (long long)time(NULL));
    if (rename(path, aside) != 0)
        return sched_fail(eb, SCHED_EIO, "cannot move %s aside: %s", path, strerror(errno));
    static const char *const sfx[] = {"-wal", "-shm"};
    for (size_t k = 0; k < 2; k++) {
        char from[4200], to[4300];
        snprintf(from, sizeof(from), "%s%s", path, sfx[k]);
        snprintf(to, sizeof(to), "%s%s", aside, sfx[k]);
        (void)rename(from, to); /* absent is fine */
    }
    return 0;
}

void store__done(struct store *st, enum store__stmt id)
{
    sqlite3_reset(st->stmt[id]);
    sqlite3_clear_bindings(st->stmt[id]);
}

int store__each(struct store *st, enum store__stmt id, int rc, const char *what, store__row_fn *row,
                void *ctx, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = st->stmt[id];
    int err = 0;
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        if ((err = row(st, s, ctx, eb)) != 0)
            break;
    }
    if (!err && rc != SQLITE_OK && rc != SQLITE_DONE) {
        char w[96];
        snprintf(w, sizeof(w), "reading %s", what);
        err = store__sql_fail(st, rc, w, eb);
    }
    store__done(st, id);
    return err;
}

void store__b_text(struct store *st, enum store__stmt id, int i, const char *v, int *rc)
{
    if (*rc != SQLITE_OK)
        return;
    *rc = v ? sqlite3_bind_text(st->stmt[id], i, v, -1, SQLITE_STATIC)
            : sqlite3_bind_null(st->stmt[id], i);
}

void store__b_i64(struct store *st, enum store__stmt id, int i, int64_t v, int *rc)
{
    if (*rc == SQLITE_OK)
        *rc = sqlite3_bind_int64(st->stmt[id], i, v);
}

void store__b_opt(struct store *st, enum store__stmt id, int i, int64_t v, int64_t none, int *rc)
{
    if (*rc != SQLITE_OK)
        return;
    *rc = v == none ? sqlite3_bind_null(st->stmt[id], i) : sqlite3_bind_int64(st->stmt[id], i, v);
}

void store__b_double(struct store *st, enum store__stmt id, int i, double v, int *rc)
{
    if (*rc == SQLITE_OK)
        *rc = sqlite3_bind_double(st->stmt[id], i, v);
}

const char *store__col_text(sqlite3_stmt *s, int i)
{
    if (sqlite3_column_type(s, i) == SQLITE_NULL)
        return NULL;
    return (const char *)sqlite3_column_text(s, i);
}

int64_t store__col_opt(sqlite3_stmt *s, int i, int64_t none)
{
    if (sqlite3_column_type(s, i) == SQLITE_NULL)
        return none;
    return sqlite3_column_int64(s, i);
}

char *store__scratch(struct store *st, size_t n)
{
    if (n <= st->scratch_cap)
        return st->scratch;
    size_t cap = st->scratch_cap ? st->scratch_cap : 256;
    while (cap < n)
        cap *= 2;
    char *p = realloc(st->scratch, cap);
    if (!p)
        return NULL;
    st->scratch = p;
    st->scratch_cap = cap;
    return p;
}

/* ---- transactions -------------------------------------------------------------------------- */

static void abort_txn(struct store *st, bool own)
{
    if (!sqlite3_get_autocommit(st->db))
        store__exec(st, STMT_ROLLBACK, SQLITE_OK, NULL);
    st->prune_due = false;
    st->txn = own ? TXN_NONE : TXN_FAILED;
}

int store__prune(struct store *st)
{
    int rc = SQLITE_OK;
    if (st->retain_cycles) {
        store__b_i64(st, STMT_DECISION_PRUNE_CYCLES, 1, st->retain_cycles, &rc);
        rc = store__exec(st, STMT_DECISION_PRUNE_CYCLES, rc, NULL);
        store__b_i64(st, STMT_JOURNAL_PRUNE_CYCLES, 1, st->retain_cycles, &rc);
        rc = store__exec(st, STMT_JOURNAL_PRUNE_CYCLES, rc, NULL);
    }
    if (st->retain_rows) {
        store__b_i64(st, STMT_DECISION_PRUNE_ROWS, 1, st->retain_rows, &rc);
        rc = store__exec(st, STMT_DECISION_PRUNE_ROWS, rc, NULL);
        store__b_i64(st, STMT_JOURNAL_PRUNE_ROWS, 1, st->retain_rows, &rc);
        rc = store__exec(st, STMT_JOURNAL_PRUNE_ROWS, rc, NULL);
    }
    return rc;
}

/* Ends the open transaction with COMMIT (after pruning when due); a cycle commit also records
 * commit_seq + 1. On error the transaction is rolled back and over. */
static int commit_txn(struct store *st, bool cycle, struct sched_errbuf *eb)
{
    int rc = SQLITE_OK;
    const char *what = "committing";
    if (st->prune_due) {
        rc = store__prune(st);
        what = "pruning the decision log";
    }
    if (rc == SQLITE_OK && cycle) {
        char seq[32];
        snprintf(seq, sizeof(seq), "%" PRId64, st->seq + 1);
        store__b_text(st, STMT_META_PUT, 1, "commit_seq", &rc);
        store__b_text(st, STMT_META_PUT, 2, seq, &rc);
        rc = store__exec(st, STMT_META_PUT, rc, NULL);
        what = "recording the commit sequence";
    }
    if (rc == SQLITE_OK) {
        rc = store__exec(st, STMT_COMMIT, SQLITE_OK, NULL);
        what = "committing";
    }
    if (rc != SQLITE_OK) {
        int err = store__sql_fail(st, rc, what, eb);
        abort_txn(st, true);
        return err;
    }
    st->prune_due = false;
    st->txn = TXN_NONE;
    if (cycle)
        st->seq++;
    return 0;
}

int store__wbegin(struct store *st, bool *own, struct sched_errbuf *eb)
{
    *own = false;
    if (st->txn == TXN_FAILED)
        return sched_fail(eb, SCHED_EIO,
                          "database %s: the transaction was rolled back after an earlier error; "
                          "call store_rollback() before writing again",
                          st->path);
    if (st->txn == TXN_OPEN)
        return 0;
    int rc = store__exec(st, STMT_BEGIN, SQLITE_OK, NULL);
    if (rc != SQLITE_OK)
        return store__sql_fail(st, rc, "starting a transaction", eb);
    st->txn = TXN_OPEN;
    *own = true;
    return 0;
}

int store__wfinish(struct store *st, bool own, int err, struct sched_errbuf *eb)
{
    if (err) {
        abort_txn(st, own);
        return err;
    }
    return own ? commit_txn(st, false, eb) : 0;
}

int store__wend(struct store *st, bool own, int rc, const char *what, struct sched_errbuf *eb)
{
    int err = rc == SQLITE_OK ? 0 : store__sql_fail(st, rc, what, eb);
    return store__wfinish(st, own, err, eb);
}

int store_begin(struct store *st, struct sched_errbuf *eb)
{
    if (st->txn == TXN_OPEN)
        return sched_fail(eb, SCHED_EINVAL, "database %s: a transaction is already open", st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    return err;
}

int store_commit(struct store *st, struct sched_errbuf *eb)
{
    if (st->txn == TXN_NONE)
        return sched_fail(eb, SCHED_EINVAL, "database %s: no transaction to commit", st->path);
    if (st->txn == TXN_FAILED) {
        st->txn = TXN_NONE;
        return sched_fail(eb, SCHED_EIO,
                          "database %s: nothing committed: the transaction was rolled back after "
                          "an earlier error",
                          st->path);
    }
    return commit_txn(st, true, eb);
}

void store_rollback(struct store *st)
{
    if (st->txn != TXN_NONE)
        abort_txn(st, true);
}

bool store_in_txn(const struct store *st)
{
    return st->txn == TXN_OPEN;
}

int64_t store_commit_seq(const struct store *st)
{
    return st->seq;
}

int store_snapshot(struct store *st, unsigned char **out, size_t *len, struct sched_errbuf *eb)
{
    sqlite3_int64 n = 0;
    unsigned char *img = sqlite3_serialize(st->db, "main", &n, 0);
    if (!img || n < 100)
        return sched_fail(eb, img ? SCHED_EIO : SCHED_ENOMEM, "snapshot of %s: %s", st->path,
                          img ? "database too short" : sqlite3_errmsg(st->db));
    *out = img;
    *len = (size_t)n;
    return 0;
}

void store_snapshot_free(unsigned char *img)
{
    sqlite3_free(img);
}

const char *store_path(const struct store *st)
{
    return st->path;
}

int store_schema_version(const struct store *st)
{
    return st->schema_version;
}

/* ---- open and close ------------------------------------------------------------------------ */

void store_opts_default(struct store_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->retain_cycles = STORE_DEFAULT_RETAIN_CYCLES;
    o->retain_rows = STORE_DEFAULT_RETAIN_ROWS;
    o->busy_timeout_ms = STORE_DEFAULT_BUSY_MS;
}

enum file_kind { FILE_MISSING, FILE_EMPTY, FILE_SQLITE };

/* Looks at PATH without SQLite, so that nothing can be written to a file that is not ours. */
static int probe_file(const char *path, enum file_kind *kind, struct sched_errbuf *eb)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) {
            *kind = FILE_MISSING;
            return 0;
        }
        return sched_fail(eb, SCHED_EIO, "cannot access database %s: %s", path, strerror(errno));
    }
    if (!S_ISREG(sb.st_mode))
        return sched_fail(eb, SCHED_EIO, "cannot open database %s: not a regular file", path);
    if (sb.st_size == 0) {
        *kind = FILE_EMPTY;
        return 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sched_fail(eb, SCHED_EIO, "cannot read database %s: %s", path, strerror(errno));
    char hdr[16];
    ssize_t n = read(fd, hdr, sizeof(hdr));
    int saved = errno;
    close(fd);
    if (n < 0)
        return sched_fail(eb, SCHED_EIO, "cannot read database %s: %s", path, strerror(saved));
    if (n != (ssize_t)sizeof(hdr) || memcmp(hdr, "SQLite format 3", sizeof(hdr)) != 0)
        return sched_fail(eb, SCHED_EIO,
                          "corrupt database %s: file is not a database (no SQLite header in "
                          "its %lld bytes) (use --rebuild-store)",
                          path, (long long)sb.st_size);
    *kind = FILE_SQLITE;
    return 0;
}

/* Runs a one-off PRAGMA or query returning one integer. */
static int query_int(struct store *st, const char *sql, int64_t *v, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            *v = sqlite3_column_int64(s, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            *v = 0;
            rc = SQLITE_OK;
        }
    }
    int err = rc == SQLITE_OK ? 0 : store__sql_fail(st, rc, sql, eb);
    sqlite3_finalize(s);
    return err;
}

/* Runs a one-off PRAGMA that returns one text value into buf (may be empty). */
static int query_text(struct store *st, const char *sql, char *buf, size_t n,
                      struct sched_errbuf *eb)
{
    sqlite3_stmt *s = NULL;
    buf[0] = '\0';
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            const char *t = store__col_text(s, 0);
            snprintf(buf, n, "%s", t ? t : "");
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_OK;
        }
    }
    int err = rc == SQLITE_OK ? 0 : store__sql_fail(st, rc, sql, eb);
    sqlite3_finalize(s);
    return err;
}

/* PRAGMA quick_check: page structure, record formats, NOT NULL constraints, and CHECK
 * constraints on a read-write connection only: SQLite (3.40) skips them on a read-only one, so
 * a read-only open (gangctl --db) does not see a broken CHECK; `store check` verifies them with
 * queries of its own (check.c, check_constraints). */
static int quick_check(struct store *st, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, "PRAGMA quick_check(5)", -1, &s, NULL);
    char found[384] = "";
    size_t used = 0;
    bool ok = false;
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        const char *t = store__col_text(s, 0);
        if (t && strcmp(t, "ok") == 0) {
            ok = true;
            continue;
        }
        if (used < sizeof(found) - 1) {
            int w =
                snprintf(found + used, sizeof(found) - used, "%s%s", used ? "; " : "", t ? t : "?");
            used += w > 0 ? (size_t)w : 0;
        }
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE && rc != SQLITE_OK)
        return store__sql_fail(st, rc, "PRAGMA quick_check", eb);
    if (!ok || used)
        return sched_fail(eb, SCHED_EIO,
                          "corrupt database %s: PRAGMA quick_check: %s (use --rebuild-store)",
                          st->path, used ? found : "no result");
    return 0;
}

/* Refuses what is not a gangsched store of a version we know; *version receives user_version. */
static int inspect(struct store *st, int *version, struct sched_errbuf *eb)
{
    int64_t uv = 0, app = 0, objects = 0;
    int err = query_int(st, "PRAGMA user_version", &uv, eb);
    if (!err)
        err = query_int(st, "PRAGMA application_id", &app, eb);
    if (!err)
        err = query_int(st, "SELECT COUNT(*) FROM sqlite_master", &objects, eb);
    if (err)
        return err;
    if (uv == 0 && objects > 0)
        return sched_fail(eb, SCHED_EIO,
                          "database %s is an SQLite database but not a gangsched store "
                          "(user_version 0, %lld schema objects): refusing to touch it",
                          st->path, (long long)objects);
    if (uv != 0 && app != STORE_APP_ID)
        return sched_fail(eb, SCHED_EIO,
                          "database %s is not a gangsched store (application_id 0x%08llx, "
                          "expected 0x%08x): refusing to touch it",
                          st->path, (unsigned long long)(uint32_t)app, STORE_APP_ID);
    if (uv < 0 || uv > STORE_SCHEMA_VERSION)
        return sched_fail(eb, SCHED_EIO,
                          "database %s has schema version %lld, newer than this binary knows "
                          "(%d): run a newer gangsched, or start a new database with "
                          "--rebuild-store",
                          st->path, (long long)uv, STORE_SCHEMA_VERSION);
    err = (st->flags & STORE_CHECKED) ? 0 : quick_check(st, eb);
    if (err)
        return err;
    *version = (int)uv;
    return 0;
}

static int exec_pragma(struct store *st, const char *sql, struct sched_errbuf *eb)
{
    int64_t ignored;
    return query_int(st, sql, &ignored, eb);
}

static int set_pragmas(struct store *st, const struct store_opts *opts, struct sched_errbuf *eb)
{
    int err = exec_pragma(st, "PRAGMA foreign_keys = ON", eb);
    if (err)
        return err;
    if (st->flags & STORE_READONLY)
        return exec_pragma(st, "PRAGMA query_only = ON", eb);
    char mode[32];
    err = query_text(st, "PRAGMA journal_mode = WAL", mode, sizeof(mode), eb);
    if (err)
        return err;
    if (strcmp(mode, "wal") != 0)
        return sched_fail(eb, SCHED_EIO, "database %s: cannot use WAL mode (journal mode is %s)",
                          st->path, mode);
    err = exec_pragma(st,
                      (st->flags & STORE_DURABLE) ? "PRAGMA synchronous = FULL"
                                                  : "PRAGMA synchronous = NORMAL",
                      eb);
    /* The writer's statement journals (the undo record of one multi-row statement, truncated
     * after it) stay in memory: spilled to a temporary file, they cost a write() per page. */
    if (!err)
        err = exec_pragma(st, "PRAGMA temp_store = MEMORY", eb);
    if (!err) {
        char sql[80];
        snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %lld",
                 (long long)STORE_DEFAULT_WAL_LIMIT_MIB * 1024 * 1024);
        err = exec_pragma(st, sql, eb);
    }
    if (!err && opts->max_bytes > 0) {
        int64_t page = 0;
        err = query_int(st, "PRAGMA page_size", &page, eb);
        if (!err) {
            char sql[80];
            int64_t pages = page > 0 ? opts->max_bytes / page : 0;
            snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %lld",
                     (long long)(pages > 0 ? pages : 1));
            err = exec_pragma(st, sql, eb);
        }
    }
    return err;
}

/* The multi-row statements and their single-row forms (store__exec_rows). */
static const enum store__stmt multi_row[][2] = {
    {STMT_META_PUT, STMT_META_PUT_MANY},
    {STMT_JOB_UPSERT, STMT_JOB_UPSERT_MANY},
};

static int prepare_all(struct store *st, struct sched_errbuf *eb)
{
    for (int i = 0; i < STMT_N; i++) {
        const char *sql = store__stmt_sql[i];
        if (!sql)
            return sched_fail(eb, SCHED_EINVAL, "store: statement %d has no SQL", i);
        int rc = sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[i], NULL);
        if (rc != SQLITE_OK)
            return sched_fail(eb, SCHED_EIO,
                              "corrupt database %s: its tables do not match schema version %d "
                              "(%s) (use --rebuild-store)",
                              st->path, st->schema_version, sqlite3_errmsg(st->db));
    }
    for (size_t k = 0; k < sizeof(multi_row) / sizeof(multi_row[0]); k++) {
        int one = sqlite3_bind_parameter_count(st->stmt[multi_row[k][0]]);
        int many = sqlite3_bind_parameter_count(st->stmt[multi_row[k][1]]);
        if (one < 1 || many != STORE__ROWS * one)
            return sched_fail(eb, SCHED_EINVAL, "store: statement %d binds %d parameters, not %d",
                              (int)multi_row[k][1], many, STORE__ROWS * one);
    }
    return 0;
}

/* Records who writes the database from now on. */
static int record_writer(struct store *st, const struct store_opts *opts, struct sched_errbuf *eb)
{
    char self[64];
    const char *writer = opts->writer_id;
    if (!writer || !*writer) {
        snprintf(self, sizeof(self), "pid:%ld", (long)getpid());
        writer = self;
    }
    const char *prev = NULL;
    int err = store_meta_get(st, "writer", &prev, eb);
    if (err == 0 && strcmp(prev, writer) != 0)
        LOG_INFO("store", "database %s: writer %s takes over from %s", st->path, writer, prev);
    else if (err != 0 && err != SCHED_ENOENT)
        return err;
    bool own;
    err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    err = store_meta_put(st, "writer", writer, eb);
    if (!err) {
        /* The time comes from SQLite's clock: the store reads no clock itself. */
        int64_t ignored;
        err = query_int(st,
                        "INSERT INTO meta(key, value) "
                        "VALUES ('opened_at', strftime('%Y-%m-%dT%H:%M:%SZ', 'now')) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        &ignored, eb);
    }
    return store__wfinish(st, own, err, eb);
}

/* "file:PATH?immutable=1" with PATH percent-encoded; NULL on out of memory. */
static char *immutable_uri(const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(path);
    char *uri = malloc(3 * n + 32);
    if (!uri)
        return NULL;
    char *o = uri;
    memcpy(o, "file:", 5);
    o += 5;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/._-~", *p)) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    memcpy(o, "?immutable=1", 13);
    return uri;
}

/* A reader that may not create PATH-shm (it cannot write the directory) cannot read a WAL
 * database the usual way: SQLite answers SQLITE_READONLY to the first read, or SQLITE_CANTOPEN
 * on a read-only filesystem (EROFS: a read-only mount, a snapshot). Without PATH-wal
 * the main file holds every commit and no writer has the database open (an open writer keeps
 * PATH-wal), so it is read as immutable. With PATH-wal present, its commits would be missed:
 * refuse instead. */
static int open_reader(struct store *st, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, "SELECT COUNT(*) FROM sqlite_master", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    sqlite3_finalize(s);
    if ((rc & 0xff) != SQLITE_READONLY && (rc & 0xff) != SQLITE_CANTOPEN)
        return 0; /* readable, or an error inspect() reports */
    size_t n = strlen(st->path) + 5;
    char *wal = malloc(n);
    if (!wal)
        return sched_fail(eb, SCHED_ENOMEM, "store_open %s: out of memory", st->path);
    snprintf(wal, n, "%s-wal", st->path);
    struct stat sb;
    bool has_wal = stat(wal, &sb) == 0;
    free(wal);
    if (has_wal)
        return sched_fail(eb, SCHED_EIO,
                          "database is read-only: %s: its write-ahead log %s-wal needs a "
                          "shared-memory file this process cannot create (read it as the "
                          "scheduler's user, or where the filesystem is writable)",
                          st->path, st->path);
    char *uri = immutable_uri(st->path);
    if (!uri)
        return sched_fail(eb, SCHED_ENOMEM, "store_open %s: out of memory", st->path);
    sqlite3_close(st->db);
    st->db = NULL;
    rc = sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    free(uri);
    if (rc != SQLITE_OK)
        return store__sql_fail(st, rc, "opening read-only", eb);
    sqlite3_extended_result_codes(st->db, 1);
    LOG_DEBUG("store", "database %s: no write access to its directory: reading it as immutable",
              st->path);
    return 0;
}

int store_open(const char *path, unsigned flags, const struct store_opts *opts, struct store **out,
               struct sched_errbuf *eb)
{
    if (!path || !*path || !out)
        return sched_fail(eb, SCHED_EINVAL, "store_open: no database path");
    if (flags & ~(unsigned)(STORE_CREATE | STORE_READONLY | STORE_DURABLE | STORE_CHECKED))
        return sched_fail(eb, SCHED_EINVAL, "store_open %s: unknown flags 0x%x", path, flags);
    if ((flags & STORE_READONLY) && (flags & (STORE_CREATE | STORE_DURABLE)))
        return sched_fail(eb, SCHED_EINVAL,
                          "store_open %s: STORE_READONLY excludes STORE_CREATE and STORE_DURABLE",
                          path);
    if ((flags & STORE_CHECKED) && !(flags & STORE_READONLY))
        return sched_fail(eb, SCHED_EINVAL, "store_open %s: STORE_CHECKED needs STORE_READONLY",
                          path);
    struct store_opts defaults;
    if (!opts) {
        store_opts_default(&defaults);
        opts = &defaults;
    }
    if (opts->max_bytes < 0)
        return sched_fail(eb, SCHED_EINVAL, "store_open %s: negative max_bytes", path);

    enum file_kind kind;
    int err = probe_file(path, &kind, eb);
    if (err)
        return err;
    if (kind == FILE_MISSING && !(flags & STORE_CREATE))
        return sched_fail(eb, SCHED_ENOENT, "database %s does not exist", path);
    if (kind == FILE_EMPTY && !(flags & STORE_CREATE))
        return sched_fail(eb, SCHED_ENOENT, "database %s is an empty file (never initialized)",
                          path);

    struct store *st = calloc(1, sizeof(*st));
    if (!st)
        return sched_fail(eb, SCHED_ENOMEM, "store_open %s: out of memory", path);
    st->path = strdup(path);
    if (!st->path) {
        free(st);
        return sched_fail(eb, SCHED_ENOMEM, "store_open %s: out of memory", path);
    }
    st->flags = flags;
    st->retain_cycles = opts->retain_cycles;
    st->retain_rows = opts->retain_rows;

    int oflags = (flags & STORE_READONLY)
                     ? SQLITE_OPEN_READONLY
                     : SQLITE_OPEN_READWRITE | ((flags & STORE_CREATE) ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &st->db, oflags, NULL);
    if (rc != SQLITE_OK) {
        err = store__sql_fail(st, rc, "opening", eb);
        goto out_close;
    }
    sqlite3_extended_result_codes(st->db, 1);
    sqlite3_busy_timeout(st->db,
                         opts->busy_timeout_ms > 0 ? opts->busy_timeout_ms : STORE_DEFAULT_BUSY_MS);
    if (flags & STORE_READONLY) {
        err = open_reader(st, eb);
        if (err)
            goto out_close;
    } else if (sqlite3_db_readonly(st->db, "main") == 1) {
        err = sched_fail(eb, SCHED_EIO,
                         "database is read-only: %s: this process cannot write the file or its "
                         "directory (fix the permissions, or open it read-only)",
                         path);
        goto out_close;
    }

    int version = 0;
    if (kind == FILE_SQLITE) {
        err = inspect(st, &version, eb);
        if (err)
            goto out_close;
    }
    st->schema_version = version;
    if ((flags & STORE_READONLY) && version < STORE_SCHEMA_VERSION) {
        err = sched_fail(eb, SCHED_EIO,
                         "database %s has schema version %d and needs migrating to %d: open it "
                         "read-write once (the scheduler does) before reading it",
                         path, version, STORE_SCHEMA_VERSION);
        goto out_close;
    }
    err = set_pragmas(st, opts, eb);
    if (err)
        goto out_close;
    if (version < STORE_SCHEMA_VERSION) {
        if (version > 0)
            LOG_INFO("store", "database %s: migrating schema from version %d to %d", path, version,
                     STORE_SCHEMA_VERSION);
        err = store__migrate(st, version, eb);
        if (err)
            goto out_close;
    }
    err = prepare_all(st, eb);
    if (err)
        goto out_close;
    int64_t seq = 0;
    err = store_meta_get_i64(st, "commit_seq", &seq, eb);
    if (err == SCHED_ENOENT)
        err = 0;
    else if (!err && seq < 0)
        err = store__bad_row(st, eb, "meta: negative commit_seq %" PRId64, seq);
    if (err)
        goto out_close;
    st->seq = seq;
    if (!(flags & STORE_READONLY)) {
        err = record_writer(st, opts, eb);
        if (err)
            goto out_close;
    }
    *out = st;
    return 0;

out_close:
    store_close(st);
    return err;
}

void store_close(struct store *st)
{
    if (!st)
        return;
    if (st->db) {
        if (st->txn == TXN_OPEN && st->stmt[STMT_ROLLBACK]) {
            LOG_WARN("store", "database %s closed with an open transaction: rolled back", st->path);
            store__exec(st, STMT_ROLLBACK, SQLITE_OK, NULL);
        }
        for (int i = 0; i < STMT_N; i++)
            sqlite3_finalize(st->stmt[i]);
        if (sqlite3_close(st->db) != SQLITE_OK) {
            LOG_ERROR("store", "database %s: close: %s", st->path, sqlite3_errmsg(st->db));
            sqlite3_close_v2(st->db);
        }
    }
    free(st->scratch);
    free(st->path);
    free(st);
}
