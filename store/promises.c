/* store/promises.c: what the job rows keep of one wait or one run besides the job: backfill-on-
 * probation promises (schema version 6), in-place restarts (version 9), and the time of the
 * submission's earlier runs (version 10).
 *
 * Owns: writing a waiting gang's first reservation, a running gang's promise, its last
 * in-place restart and its earlier runs' time on its job row, and listing the rows that have a
 * promise or a restart (validated: a bad time or state is a corrupt row). The rules that a row
 * leaving its wait or run drops them, and another submission the earlier runs, are the job
 * upsert's (schema.c JOB_UPSERT).
 *
 * Must not touch: the other columns of jobs (records.c), transactions (store.c's bracket).
 */
#include <stdint.h>
#include <string.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_int.h"

int store_job_reserve_put(struct store *st, const char *gang, int64_t reserve_first_ms,
                          struct sched_errbuf *eb)
{
    if (!gang)
        return sched_fail(eb, SCHED_EINVAL, "database %s: reservation: gang required", st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    store__b_text(st, STMT_PROMISE_RESERVE, 1, gang, &rc);
    store__b_opt(st, STMT_PROMISE_RESERVE, 2, reserve_first_ms, STORE_NO_TIME, &rc);
    rc = store__exec(st, STMT_PROMISE_RESERVE, rc, NULL);
    return store__wend(st, own, rc, "writing a job's first reservation", eb);
}

int store_job_probation_put(struct store *st, const char *gang, int64_t until_ms,
                            const char *for_gang, struct sched_errbuf *eb)
{
    if (!gang)
        return sched_fail(eb, SCHED_EINVAL, "database %s: probation: gang required", st->path);
    bool on = until_ms != STORE_NO_TIME && for_gang;
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    store__b_text(st, STMT_PROMISE_PROBATION, 1, gang, &rc);
    store__b_opt(st, STMT_PROMISE_PROBATION, 2, on ? until_ms : STORE_NO_TIME, STORE_NO_TIME, &rc);
    store__b_text(st, STMT_PROMISE_PROBATION, 3, on ? for_gang : NULL, &rc);
    rc = store__exec(st, STMT_PROMISE_PROBATION, rc, NULL);
    return store__wend(st, own, rc, "writing a job's promise", eb);
}

int store_job_promises_clear(struct store *st, const char *gang, struct sched_errbuf *eb)
{
    if (!gang)
        return sched_fail(eb, SCHED_EINVAL, "database %s: promises: gang required", st->path);
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    store__b_text(st, STMT_PROMISE_CLEAR, 1, gang, &rc);
    rc = store__exec(st, STMT_PROMISE_CLEAR, rc, NULL);
    return store__wend(st, own, rc, "dropping a job's promises", eb);
}

struct promise_each {
    store_promise_fn *fn;
    void *ctx;
};

/* A time column: NULL reads as STORE_NO_TIME; anything but an integer is a bad row. */
static bool time_col(sqlite3_stmt *s, int i, int64_t *out)
{
    int t = sqlite3_column_type(s, i);
    *out = t == SQLITE_NULL ? STORE_NO_TIME : sqlite3_column_int64(s, i);
    return t == SQLITE_NULL || t == SQLITE_INTEGER;
}

static int promise_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    const struct promise_each *pe = ctx;
    struct store_promise p = {.gang = store__col_text(s, 0),
                              .probation_for = store__col_text(s, 4)};
    const char *state = store__col_text(s, 1);
    int k = -1;
    for (int i = STORE_JOB_PENDING; state && i <= STORE_JOB_FAILED; i++)
        if (strcmp(state, store_job_state_name((enum store_job_state)i)) == 0)
            k = i;
    bool times = time_col(s, 2, &p.reserve_first_ms) && time_col(s, 3, &p.probation_until_ms) &&
                 time_col(s, 5, &p.submit_ms);
    if (!p.gang || k < 0 || !times || (p.probation_until_ms != STORE_NO_TIME && !p.probation_for))
        return store__bad_row(st, eb, "jobs: row \"%.80s\" has a bad promise",
                              p.gang ? p.gang : "(null)");
    p.state = (enum store_job_state)k;
    if (p.probation_until_ms == STORE_NO_TIME)
        p.probation_for = NULL;
    return pe->fn(pe->ctx, &p);
}

int store_promise_list(struct store *st, store_promise_fn *fn, void *ctx, struct sched_errbuf *eb)
{
    struct promise_each pe = {.fn = fn, .ctx = ctx};
    return store__each(st, STMT_PROMISE_LIST, SQLITE_OK, "the jobs' promises", promise_row, &pe,
                       eb);
}

/* Statement id (?1 the gang, ?2 the time) in a write of its own or the caller's transaction. */
static int put_time(struct store *st, enum store__stmt id, const char *gang, int64_t ms,
                    const char *what, struct sched_errbuf *eb)
{
    bool own;
    int err = store__wbegin(st, &own, eb);
    if (err)
        return err;
    int rc = SQLITE_OK;
    store__b_text(st, id, 1, gang, &rc);
    store__b_i64(st, id, 2, ms, &rc);
    rc = store__exec(st, id, rc, NULL);
    return store__wend(st, own, rc, what, eb);
}

int store_job_restart_put(struct store *st, const char *gang, int64_t restart_ms,
                          struct sched_errbuf *eb)
{
    if (!gang || restart_ms == STORE_NO_TIME)
        return sched_fail(eb, SCHED_EINVAL, "database %s: restart: gang and time required",
                          st->path);
    return put_time(st, STMT_RESTART_PUT, gang, restart_ms, "writing a job's restart", eb);
}

struct restart_each {
    store_restart_fn *fn;
    void *ctx;
};

static int restart_row(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb)
{
    const struct restart_each *re = ctx;
    const char *gang = store__col_text(s, 0);
    if (!gang || sqlite3_column_type(s, 1) != SQLITE_INTEGER)
        return store__bad_row(st, eb, "jobs: row \"%.80s\" has a bad restart_ms",
                              gang ? gang : "(null)");
    return re->fn(re->ctx, gang, sqlite3_column_int64(s, 1));
}

int store_restart_list(struct store *st, store_restart_fn *fn, void *ctx, struct sched_errbuf *eb)
{
    struct restart_each re = {.fn = fn, .ctx = ctx};
    return store__each(st, STMT_RESTART_LIST, SQLITE_OK, "the jobs' restarts", restart_row, &re,
                       eb);
}

int store_job_ran_put(struct store *st, const char *gang, int64_t ran_ms, struct sched_errbuf *eb)
{
    if (!gang || ran_ms < 0)
        return sched_fail(eb, SCHED_EINVAL,
                          "database %s: earlier runs: gang and a time of at least 0 required",
                          st->path);
    return put_time(st, STMT_RAN_PUT, gang, ran_ms, "writing a job's earlier runs", eb);
}
