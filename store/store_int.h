/* store/store_int.h: internals shared by the files of store/ (never included outside it).
 *
 * Owns: the layout of struct store, the list of prepared statements, and the helpers every
 * store file uses to bind, step, map SQLite errors to SCHED_E* codes with messages, and run a
 * write inside the caller's transaction or its own.
 *
 * Must not touch: anything outside store/.
 */
#ifndef STORE_STORE_INT_H
#define STORE_STORE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include "sched/core/err.h"
#include "store/store.h"

/* Every statement the store runs after open, prepared once by store_open() (schema.c holds the
 * SQL text), reset and unbound after each use, finalized by store_close(). */
#define STORE_STMT_MAP(XX)                                                                         \
    XX(BEGIN)                                                                                      \
    XX(BEGIN_READ)                                                                                 \
    XX(COMMIT)                                                                                     \
    XX(ROLLBACK)                                                                                   \
    XX(META_GET)                                                                                   \
    XX(META_PUT)                                                                                   \
    XX(META_PUT_MANY)                                                                              \
    XX(QUEUE_DELETE_ALL)                                                                           \
    XX(QUEUE_DELETE)                                                                               \
    XX(QUEUE_PUT)                                                                                  \
    XX(QUOTA_DELETE)                                                                               \
    XX(QUOTA_PUT)                                                                                  \
    XX(QUEUE_LIST)                                                                                 \
    XX(QUOTA_LIST)                                                                                 \
    XX(LEDGER_SET)                                                                                 \
    XX(LEDGER_GET)                                                                                 \
    XX(LEDGER_LIST)                                                                                \
    XX(RES_INSERT)                                                                                 \
    XX(RES_NODE_INSERT)                                                                            \
    XX(RES_DELETE)                                                                                 \
    XX(RES_DELETE_KIND)                                                                            \
    XX(RES_EXPIRE)                                                                                 \
    XX(RES_LIST)                                                                                   \
    XX(RES_NODES)                                                                                  \
    XX(JOURNAL_INTENT)                                                                             \
    XX(JOURNAL_PLACE)                                                                              \
    XX(JOURNAL_DONE)                                                                               \
    XX(JOURNAL_PENDING)                                                                            \
    XX(JOURNAL_PRUNE_CYCLES)                                                                       \
    XX(JOURNAL_PRUNE_ROWS)                                                                         \
    XX(PLACEMENT_RELEASE)                                                                          \
    XX(PLACEMENT_PODS)                                                                             \
    XX(PLACEMENT_RELEASE_POD)                                                                      \
    XX(PLACEMENT_LIST)                                                                             \
    XX(PLACEMENT_NEXT)                                                                             \
    XX(DECISION_ADD)                                                                               \
    XX(DECISION_PRUNE_CYCLES)                                                                      \
    XX(DECISION_PRUNE_ROWS)                                                                        \
    XX(DECISION_COUNT)                                                                             \
    XX(DECISION_LIST)                                                                              \
    XX(DECISION_LIST_GANG)                                                                         \
    XX(DECISION_LAST_GANG)                                                                         \
    XX(DECISION_SET_REASON)                                                                        \
    XX(DECISION_LATEST)                                                                            \
    XX(PREEMPT_ADD)                                                                                \
    XX(PREEMPT_LIST)                                                                               \
    XX(JOB_UPSERT)                                                                                 \
    XX(JOB_UPSERT_MANY)                                                                            \
    XX(JOB_GET)                                                                                    \
    XX(JOB_LIST)                                                                                   \
    XX(PROMISE_RESERVE)                                                                            \
    XX(PROMISE_CLEAR)                                                                              \
    XX(PROMISE_PROBATION)                                                                          \
    XX(PROMISE_LIST)                                                                               \
    XX(RESTART_PUT)                                                                                \
    XX(RAN_PUT)                                                                                    \
    XX(RESTART_LIST)                                                                               \
    XX(HIST_PUT)                                                                                   \
    XX(HIST_GET)                                                                                   \
    XX(HIST_LIST)                                                                                  \
    XX(ACTION_ADD)                                                                                 \
    XX(ACTION_DONE)                                                                                \
    XX(ACTION_LIST)                                                                                \
    XX(VIEW_NOW)                                                                                   \
    XX(VIEW_COUNTS)                                                                                \
    XX(VIEW_JOBS)                                                                                  \
    XX(VIEW_JOBS_LEFT)                                                                             \
    XX(VIEW_AHEAD)                                                                                 \
    XX(VIEW_RUNNING)                                                                               \
    XX(VIEW_LAST_DECISION)                                                                         \
    XX(VIEW_REQUEUE)                                                                               \
    XX(VIEW_PLACEMENTS)                                                                            \
    XX(VIEW_RESV)                                                                                  \
    XX(VIEW_RESV_LEFT)                                                                             \
    XX(VIEW_PREEMPTIONS)                                                                           \
    XX(CHECK_INTEGRITY)                                                                            \
    XX(CHECK_FOREIGN)                                                                              \
    XX(CHECK_LEDGER)                                                                               \
    XX(CHECK_RUNNING)                                                                              \
    XX(CHECK_ORPHANS)                                                                              \
    XX(CHECK_STALE)                                                                                \
    XX(CHECK_NOTES)

enum store__stmt {
#define STORE_STMT_ENUM(name) STMT_##name,
    STORE_STMT_MAP(STORE_STMT_ENUM)
#undef STORE_STMT_ENUM
        STMT_N
};

/* schema.c */
extern const char *const store__stmt_sql[STMT_N];
/* Brings a database at schema `from` (0 = empty) to STORE_SCHEMA_VERSION in one transaction.
 * On error the transaction is rolled back: the file is as it was. */
int store__migrate(struct store *st, int from, struct sched_errbuf *eb);

enum store__txn {
    TXN_NONE = 0, /* autocommit */
    TXN_OPEN,     /* a transaction is open (the caller's, or a write function's own) */
    TXN_FAILED,   /* the caller's transaction was rolled back by a failed write */
};

struct store {
    char *path;
    sqlite3 *db;
    sqlite3_stmt *stmt[STMT_N];
    unsigned flags;
    int schema_version;
    enum store__txn txn;
    bool prune_due; /* decisions or completed intents were written in this transaction */
    int64_t seq;    /* committed cycle transactions (meta commit_seq) */
    uint32_t retain_cycles;
    uint32_t retain_rows;
    char device[320]; /* the accelerator's resource name (meta 'device'), once read */
    char unit[16];    /* its unit word (meta 'device_unit') */
    bool device_read; /* device and unit hold the meta values (or the defaults) */
    char kinds[2600]; /* every device kind, comma-separated (meta 'device_kinds'), "" for one */
    char *scratch;    /* strings returned by *_get functions */
    size_t scratch_cap;
};

/* Maps an SQLite result code (with the connection's message) to a SCHED_E* code and a message
 * "...PATH...: <what>: <sqlite message>"; marks the caller's transaction failed when SQLite
 * rolled it back on its own. */
int store__sql_fail(struct store *st, int rc, const char *what, struct sched_errbuf *eb);

/* Write bracket. wbegin: inside the caller's transaction nothing happens (*own = false);
 * outside, BEGIN IMMEDIATE (*own = true); refuses while a failed transaction waits for
 * store_rollback(). wend: `rc` is the SQLite result of the work (SQLITE_OK, or an error mapped
 * with `what`); wfinish: `err` is a SCHED_E* code already described in eb (0 = success). On
 * error they roll back (the whole caller's transaction too); on success an own transaction is
 * committed (pruning first when due). */
int store__wbegin(struct store *st, bool *own, struct sched_errbuf *eb);
int store__wend(struct store *st, bool own, int rc, const char *what, struct sched_errbuf *eb);
int store__wfinish(struct store *st, bool own, int err, struct sched_errbuf *eb);

/* Steps a statement that returns no rows to completion, then resets it and clears its
 * bindings; *changes (may be NULL) receives the rows changed. `rc` is the result of binding:
 * when it is an error the statement is only reset. Returns the SQLite result. */
int store__exec(struct store *st, enum store__stmt id, int rc, int *changes);
/* Rows per execution of a *_MANY statement (schema.c: STORE_ROWS_32). */
#define STORE__ROWS 32
/* Binds row `i` of the caller's rows to statement `id`, its parameters from base + 1 on. */
typedef void store__bind_row(struct store *st, enum store__stmt id, int base, uint32_t i,
                             const void *rows, int *rc);
/* Writes n rows: STORE__ROWS at a time through `many` (the rows of statement `one`, repeated),
 * the rest one at a time through `one`. Stops at the first error and returns its SQLite result
 * (SQLITE_OK when all were written). */
int store__exec_rows(struct store *st, enum store__stmt one, enum store__stmt many, uint32_t n,
                     store__bind_row *bind, const void *rows);
/* Resets and unbinds a statement after a query. */
void store__done(struct store *st, enum store__stmt id);
/* One row of a list query: decodes the row under s (a malformed one is store__bad_row) and
 * hands it to the caller's callback; non-zero stops the walk and is returned. */
typedef int store__row_fn(struct store *st, sqlite3_stmt *s, void *ctx, struct sched_errbuf *eb);
/* Steps query `id` (parameters bound already; `rc` is the result of binding) and calls row for
 * each row until it returns non-zero. A step error is reported as "reading <what>". Resets and
 * unbinds the statement. Returns 0 or a SCHED_E* code described in eb. */
int store__each(struct store *st, enum store__stmt id, int rc, const char *what, store__row_fn *row,
                void *ctx, struct sched_errbuf *eb);
static inline sqlite3_stmt *store__s(struct store *st, enum store__stmt id)
{
    return st->stmt[id];
}

/* Binders: do nothing once *rc is an error, so a sequence of binds needs one check. */
void store__b_text(struct store *st, enum store__stmt id, int i, const char *v, int *rc);
void store__b_i64(struct store *st, enum store__stmt id, int i, int64_t v, int *rc);
/* STORE_NO_TIME / STORE_NO_LIMIT (the `none` value) binds NULL. */
void store__b_opt(struct store *st, enum store__stmt id, int i, int64_t v, int64_t none, int *rc);
void store__b_double(struct store *st, enum store__stmt id, int i, double v, int *rc);

/* Column readers that validate instead of trusting the file. col_text: NULL for SQL NULL;
 * col_opt: `none` for NULL. */
const char *store__col_text(sqlite3_stmt *s, int i);
int64_t store__col_opt(sqlite3_stmt *s, int i, int64_t none);

/* A row that fails validation: SCHED_EINVAL "corrupt database PATH: TABLE: ... (use
 * --rebuild-store)". */
int store__bad_row(struct store *st, struct sched_errbuf *eb, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Grows the scratch buffer to n bytes; NULL on out of memory. */
char *store__scratch(struct store *st, size_t n);

/* The list functions' row readers over another query of the same columns (parameters bound
 * already on statement `id`; `rc` the result of binding): store_job_list's, and so on. */
int store__job_query(struct store *st, enum store__stmt id, int rc, store_job_fn *fn, void *ctx,
                     struct sched_errbuf *eb);
int store__placement_query(struct store *st, enum store__stmt id, int rc, store_placement_fn *fn,
                           void *ctx, struct sched_errbuf *eb);
int store__reservation_query(struct store *st, enum store__stmt id, int rc,
                             store_reservation_fn *fn, void *ctx, struct sched_errbuf *eb);
int store__preemption_query(struct store *st, enum store__stmt id, int rc, store_preemption_fn *fn,
                            void *ctx, struct sched_errbuf *eb);

/* Prunes the decision log and completed journal entries by the retention settings (inside the
 * current transaction). Returns the SQLite result. */
int store__prune(struct store *st);

#endif
