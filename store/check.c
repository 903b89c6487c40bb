/* store/check.c: the invariant check of a store (`gangsched store check DB`, and the check the
 * crash test runs after every resume).
 *
 * Owns: the definition of a consistent database (listed at store_verify() in store.h) and the
 * wording of its findings. It reads inside one read transaction, so that a writer committing
 * meanwhile cannot produce a false finding.
 *
 * Must not touch: the data (it never writes, and store_check() opens the file read-only).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_int.h"

struct finding {
    FILE *out;
    const char *path;
    uint32_t n;
};

static void report(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(struct finding *f, const char *fmt, ...)
{
    f->n++;
    if (!f->out)
        return;
    fprintf(f->out, "%s: ", f->path);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f->out, fmt, ap);
    va_end(ap);
    fputc('\n', f->out);
}

static const char *txt(sqlite3_stmt *s, int i)
{
    const char *t = store__col_text(s, i);
    return t ? t : "(null)";
}

/* ---- CHECK constraints -------------------------------------------------------------------------
 * PRAGMA integrity_check skips CHECK constraints on a read-only connection (SQLite 3.40; store
 * check opens the file read-only), so a file written with ignore_check_constraints, or by
 * another program, passed it. They are verified here row by row, from the file's own schema
 * (sqlite_schema): each table's CHECK (...) expressions, one scan per table. integrity_check's
 * own "CHECK constraint failed" lines (read-write connections) are left out: these say more. */

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || (unsigned char)c >= 0x80;
}

/* The position after a quoted string, identifier or comment starting at p, or p itself. */
static const char *skip_quoted(const char *p)
{
    char close = *p == '[' ? ']' : *p;
    if (*p == '\'' || *p == '"' || *p == '`' || *p == '[') {
        for (p++; *p; p++)
            if (*p == close) {
                if (close != ']' && p[1] == close) /* a doubled quote inside */
                    p++;
                else
                    return p + 1;
            }
        return p;
    }
    if (p[0] == '-' && p[1] == '-') {
        while (*p && *p != '\n')
            p++;
        return p;
    }
    if (p[0] == '/' && p[1] == '*') {
        const char *e = strstr(p + 2, "*/");
        return e ? e + 2 : p + strlen(p);
    }
    return p;
}

/* The next "CHECK (expr)" of a CREATE TABLE statement from *at: the expression's start and
 * length (parentheses balanced, quotes and comments skipped); false when there is none. */
static bool next_check(const char **at, const char **expr, size_t *len)
{
    const char *p = *at;
    while (*p) {
        const char *q = skip_quoted(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (!ident_char(*p)) {
            p++;
            continue;
        }
        const char *w = p;
        while (ident_char(*p))
            p++;
        if (p - w != 5 || strncasecmp(w, "check", 5) != 0)
            continue;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (*p != '(')
            continue;
        const char *start = ++p;
        int depth = 1;
        while (*p && depth > 0) {
            q = skip_quoted(p);
            if (q != p) {
                p = q;
                continue;
            }
            depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
            p++;
        }
        if (depth != 0)
            return false;
        *expr = start;
        *len = (size_t)(p - 1 - start);
        *at = p;
        return true;
    }
    return false;
}

/* One table: SELECT COALESCE(SUM(NOT (e1)), 0), ... FROM "t" and a finding per broken CHECK. */
static int check_table(struct store *st, const char *table, const char *sql, struct finding *f,
                       struct sched_errbuf *eb)
{
    char *q = NULL;
    size_t qlen = 0;
    FILE *m = open_memstream(&q, &qlen);
    if (!m)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    fputs("SELECT 0", m);
    const char *at = sql, *e = NULL;
    size_t n = 0;
    while (next_check(&at, &e, &n))
        fprintf(m, ", COALESCE(SUM(NOT (%.*s)), 0)", (int)n, e);
    fputs(" FROM \"", m);
    for (const char *c = table; *c; c++) { /* a quoted identifier: '"' doubled */
        if (*c == '"')
            fputc('"', m);
        fputc(*c, m);
    }
    fputc('"', m);
    if (fclose(m) != 0) {
        free(q);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    sqlite3_stmt *s = NULL;
    const char *tail = NULL;
    int rc = sqlite3_prepare_v2(st->db, q, -1, &s, &tail);
    if (rc == SQLITE_OK && tail && *tail) /* one statement, or the schema is not what it seems */
        rc = SQLITE_CORRUPT;
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        at = sql;
        for (int i = 1; next_check(&at, &e, &n); i++) {
            int64_t bad = sqlite3_column_int64(s, i);
            if (bad > 0)
                report(f, "CHECK constraint failed in %s: %" PRId64 " row%s break%s CHECK (%.*s)",
                       table, bad, bad == 1 ? "" : "s", bad == 1 ? "s" : "", (int)n, e);
        }
        rc = SQLITE_DONE;
    }
    sqlite3_finalize(s);
    free(q);
    if (rc == SQLITE_DONE)
        return 0;
    char what[160];
    snprintf(what, sizeof(what), "checking the CHECK constraints of table %s", table);
    return store__sql_fail(st, rc, what, eb);
}

static int check_constraints(struct store *st, struct finding *f, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db,
                                "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND "
                                "sql LIKE '%CHECK%' ORDER BY name",
                                -1, &s, NULL);
    int err = 0;
    while (!err && rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        err = check_table(st, txt(s, 0), txt(s, 1), f, eb);
    }
    sqlite3_finalize(s);
    if (!err && rc != SQLITE_DONE)
        err = store__sql_fail(st, rc, "reading the schema", eb);
    return err;
}

static int check_integrity(struct store *st, struct finding *f, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = store__s(st, STMT_CHECK_INTEGRITY);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        if (strcmp(txt(s, 0), "ok") != 0 &&
            strncmp(txt(s, 0), "CHECK constraint failed", 23) != 0) /* check_constraints */
            report(f, "integrity: %s", txt(s, 0));
    store__done(st, STMT_CHECK_INTEGRITY);
    if (rc != SQLITE_DONE)
        return store__sql_fail(st, rc, "PRAGMA integrity_check", eb);
    s = store__s(st, STMT_CHECK_FOREIGN);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        report(f, "foreign key: row %lld of %s refers to a missing row of %s",
               (long long)sqlite3_column_int64(s, 1), txt(s, 0), txt(s, 2));
    store__done(st, STMT_CHECK_FOREIGN);
    if (rc != SQLITE_DONE)
        return store__sql_fail(st, rc, "PRAGMA foreign_key_check", eb);
    return check_constraints(st, f, eb);
}

static int check_ledger(struct store *st, struct finding *f, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = store__s(st, STMT_CHECK_LEDGER);
    const char *dev = store_device(st); /* before the statement: it reads meta */
    int rc = sqlite3_bind_text(s, 1, dev, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) /* several device kinds: every kind's rows (meta 'device_kinds') */
        rc = sqlite3_bind_text(s, 2, st->kinds, -1, SQLITE_STATIC);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        report(f,
               "ledger mismatch: queue=%s flavor=%s %s: ledger %" PRId64
               ", admitted and running jobs %" PRId64,
               txt(s, 0), txt(s, 1), dev, (int64_t)sqlite3_column_int64(s, 2),
               (int64_t)sqlite3_column_int64(s, 3));
        rc = SQLITE_OK;
    }
    store__done(st, STMT_CHECK_LEDGER);
    return rc == SQLITE_DONE ? 0 : store__sql_fail(st, rc, "checking the ledger", eb);
}

static void running_done(struct finding *f, const char *gang, int64_t gpus, int64_t held,
                         uint32_t pods)
{
    if (!pods)
        report(f, "running job %s has no placed pods", gang);
    else if (held != gpus)
        report(f, "running job %s: %" PRId64 " GPUs, but its %u placed pods hold %" PRId64, gang,
               gpus, pods, held);
}

static int check_running(struct store *st, struct finding *f, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = store__s(st, STMT_CHECK_RUNNING);
    char *gang = NULL; /* the job being summed (rows come sorted by gang) */
    int64_t gpus = 0, held = 0;
    uint32_t pods = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *g = txt(s, 0);
        if (!gang || strcmp(g, gang) != 0) {
            if (gang)
                running_done(f, gang, gpus, held, pods);
            free(gang);
            gang = strdup(g);
            if (!gang) {
                rc = SQLITE_NOMEM;
                break;
            }
            gpus = sqlite3_column_int64(s, 1);
            held = 0;
            pods = 0;
        }
        if (sqlite3_column_type(s, 2) != SQLITE_NULL) {
            int64_t mask = sqlite3_column_int64(s, 2);
            if (mask < 0 || mask > UINT32_MAX)
                report(f, "running job %s: a placed pod has GPU mask %" PRId64, gang, mask);
            else
                held += __builtin_popcount((uint32_t)mask);
            pods++;
        }
    }
    if (gang && rc == SQLITE_DONE)
        running_done(f, gang, gpus, held, pods);
    free(gang);
    store__done(st, STMT_CHECK_RUNNING);
    if (rc != SQLITE_DONE)
        return store__sql_fail(st, rc, "checking running jobs", eb);

    s = store__s(st, STMT_CHECK_ORPHANS);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        report(f, "%lld placed pods of job %s, which is %s", (long long)sqlite3_column_int64(s, 1),
               txt(s, 0), sqlite3_column_type(s, 2) == SQLITE_NULL ? "not recorded" : txt(s, 2));
    store__done(st, STMT_CHECK_ORPHANS);
    return rc == SQLITE_DONE ? 0 : store__sql_fail(st, rc, "checking placed pods", eb);
}

/* What the job rows keep of a wait or run (store/promises.c): times are integers, a promise
 * names the gang it was made to, a restart belongs to a job in its run (admitted or running:
 * the job upsert drops it when the row leaves its run), and the time of earlier runs is a
 * whole number of milliseconds, not negative. */
/* A column's typeof() that a time may have: none, or a whole number of ms. */
static bool time_type(const char *type)
{
    return !strcmp(type, "null") || !strcmp(type, "integer");
}

static int check_notes(struct store *st, struct finding *f, struct sched_errbuf *eb)
{
    sqlite3_stmt *s = store__s(st, STMT_CHECK_NOTES);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *reserve = txt(s, 2), *until = txt(s, 3), *restart = txt(s, 5), *ran = txt(s, 6);
        if (!time_type(reserve) || !time_type(until))
            report(f,
                   "job %s: its backfill promise has a %s reserve_first_ms and a %s "
                   "probation_until_ms (times are integers)",
                   txt(s, 0), reserve, until);
        else if (strcmp(until, "null") != 0 && sqlite3_column_int(s, 4))
            report(f, "job %s: its backfill promise names no gang (probation_for)", txt(s, 0));
        if (!time_type(restart))
            report(f, "job %s: its restart_ms is %s (times are integers)", txt(s, 0), restart);
        else if (strcmp(restart, "null") != 0 && strcmp(txt(s, 1), "running") != 0 &&
                 strcmp(txt(s, 1), "admitted") != 0)
            report(f, "job %s is %s, but has an in-place restart (restart_ms)", txt(s, 0),
                   txt(s, 1));
        if (!time_type(ran))
            report(f, "job %s: its ran_ms is %s (times are integers)", txt(s, 0), ran);
        else if (sqlite3_column_int(s, 7))
            report(f, "job %s: its ran_ms is negative", txt(s, 0));
    }
    store__done(st, STMT_CHECK_NOTES);
    return rc == SQLITE_DONE ? 0 : store__sql_fail(st, rc, "checking the jobs' promises", eb);
}

static int check_journal(struct store *st, struct finding *f, struct sched_errbuf *eb)
{
    int64_t seq = 0;
    int err = store_meta_get_i64(st, "commit_seq", &seq, eb);
    if (err == SCHED_ENOENT)
        report(f, "meta: commit_seq is missing");
    else if (err)
        return err;
    sqlite3_stmt *s = store__s(st, STMT_CHECK_STALE);
    int rc = sqlite3_bind_int64(s, 1, seq);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        report(f,
               "bind intent of gang %s pod %lld (cycle %lld, commit %lld) is still open after "
               "commit %" PRId64,
               txt(s, 0), (long long)sqlite3_column_int64(s, 1),
               (long long)sqlite3_column_int64(s, 3), (long long)sqlite3_column_int64(s, 2), seq);
        rc = SQLITE_OK;
    }
    store__done(st, STMT_CHECK_STALE);
    return rc == SQLITE_DONE ? 0 : store__sql_fail(st, rc, "checking the bind journal", eb);
}

static int verify(struct store *st, struct finding *f, struct sched_errbuf *eb)
{
    bool own = st->txn == TXN_NONE;
    if (st->txn == TXN_FAILED)
        return sched_fail(eb, SCHED_EIO,
                          "database %s: the transaction was rolled back after an earlier error; "
                          "call store_rollback() first",
                          st->path);
    if (own) {
        int rc = store__exec(st, STMT_BEGIN_READ, SQLITE_OK, NULL);
        if (rc != SQLITE_OK)
            return store__sql_fail(st, rc, "starting a read transaction", eb);
    }
    int err = check_integrity(st, f, eb);
    if (!err)
        err = check_ledger(st, f, eb);
    if (!err)
        err = check_running(st, f, eb);
    if (!err)
        err = check_notes(st, f, eb);
    if (!err)
        err = check_journal(st, f, eb);
    if (own)
        store__exec(st, STMT_COMMIT, SQLITE_OK, NULL); /* ends a read: cannot lose anything */
    return err;
}

int store_verify(struct store *st, FILE *out, struct sched_errbuf *eb)
{
    struct finding f = {out, st->path, 0};
    int err = verify(st, &f, eb);
    if (err)
        return err;
    return f.n ? 1 : 0;
}

int store_check(const char *path, FILE *out)
{
    struct sched_errbuf eb = {{0}};
    struct store *st = NULL;
    int err = store_open(path, STORE_READONLY, NULL, &st, &eb);
    if (err) {
        store_rebuild_hint(&eb, "the simulator and the scheduler can start a new store: "
                                "--rebuild-store");
        if (out)
            fprintf(out, "%s\n", eb.msg);
        return err;
    }
    struct finding f = {out, st->path, 0};
    err = verify(st, &f, &eb);
    if (out) {
        store_rebuild_hint(&eb, "the simulator and the scheduler can start a new store: "
                                "--rebuild-store");
        if (err)
            fprintf(out, "%s\n", eb.msg);
        else if (f.n)
            fprintf(out, "%s: %u problem%s found\n", path, f.n, f.n == 1 ? "" : "s");
        else {
            int64_t n_dec = 0;
            if (store_decision_count(st, &n_dec, &eb) != 0)
                n_dec = -1;
            fprintf(out,
                    "%s: consistent (schema version %d, %" PRId64 " cycle commits, %" PRId64
                    " decisions)\n",
                    path, st->schema_version, st->seq, n_dec);
        }
    }
    store_close(st);
    if (err)
        return err;
    return f.n ? 1 : 0;
}

int store_check_main(const char *path, FILE *out)
{
    int r = store_check(path, out);
    return r == 0 ? 0 : r == 1 ? 1 : 2;
}
