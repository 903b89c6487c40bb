/* store/store.h: the SQLite store: what the scheduler persists so that it can resume after a
 * crash without losing a decision or binding a pod twice.
 *
 * Owns: the database file PATH (with PATH-wal and PATH-shm, SQLite's write-ahead log and its
 * index) and the only SQLite connection of the process to it: the schema and its versioned
 * migrations (PRAGMA user_version), the prepared statements, transactions, the retention of the
 * decision log and of completed bind-journal entries, and the invariant check behind
 * `gangsched store check DB`.
 *
 * Must not touch: scheduling (it records decisions, it never makes them), the cluster, the
 * drivers' in-memory state, any file but its own database. The store never replaces, truncates
 * or "repairs" a file it cannot read: a corrupt, foreign or too-new database is refused with a
 * message naming the path, and the file is left byte for byte as it was. Rebuilding is the
 * driver's job (--rebuild-store: move the file away, create a new one, fill it from the cluster).
 *
 * Memory management: store_open() returns a store owning its connection and statements;
 * store_close() releases them. Strings passed in are borrowed for the length of the call (SQLite
 * copies what it keeps). Strings passed out are borrowed: in a list callback, until the callback
 * returns; from a *_get function, until the next call on the same store.
 *
 * Threads: one store is used by one thread. The database is written by one process only (the
 * leader); other processes may open it STORE_READONLY at any time (WAL readers never block the
 * writer and see the last committed cycle).
 *
 * Errors: every function returns 0 or a negative SCHED_E* code and writes a message naming the
 * database path into `eb` (which may be NULL):
 *   SCHED_EFULL   "disk full writing DB PATH: ..." (the disk, or the size cap of opts.max_bytes)
 *   SCHED_EIO     "database is read-only: PATH: ...", "corrupt database PATH: ... (use
 *                 --rebuild-store)", "database PATH is locked by another writer", I/O errors
 *   SCHED_ENOENT  missing file without STORE_CREATE; a *_get of an absent key
 *   SCHED_EEXIST  a second open intent for the same pod; a pod placed twice
 *   SCHED_EINVAL  bad arguments, constraint violations, a row read back that fails validation
 *                 (rows are validated, never asserted on)
 *   SCHED_ERANGE  a ledger amount that would go negative or overflow
 *   SCHED_ENOMEM  out of memory
 * A failed write rolls back the whole transaction it was part of (see Transactions), so the
 * database always holds whole cycles, and the store stays usable.
 *
 * Transactions: every write function runs inside a transaction. Between store_begin() and
 * store_commit() it joins that transaction (the driver opens one per scheduling cycle, or per
 * batch of events); outside it opens and commits its own. After a failed write inside
 * store_begin() the transaction is already rolled back; later writes fail until the driver
 * calls store_rollback() (or store_commit(), which then reports that nothing was committed).
 * Each store_commit() is a "cycle commit" and increases meta commit_seq by one; bind intents
 * record the commit_seq of the transaction that wrote them.
 *
 * Durability: WAL mode with synchronous=NORMAL by default. A commit is then atomic and survives
 * the process being killed at any instruction (SIGKILL, abort, OOM kill: the WAL frames are in
 * the kernel's page cache when COMMIT returns), which is the failure the simulator's crash test
 * produces. Only an operating-system crash or power loss may lose the last few commits, and
 * never corrupts the file. A driver that acts on the outside world after a commit (the
 * Kubernetes driver sends Binding requests after committing their intents) opens with
 * STORE_DURABLE: synchronous=FULL syncs the WAL at every commit, so an intent can never be lost
 * after its bind was sent. One sync per cycle is cheap for the daemon and would dominate a
 * 60-day simulator replay, hence the flag. docs/store.md has the details.
 *
 * Schema, version 1 (docs/store.md is the long form; times are milliseconds of the driver's
 * clock, simulated time in the simulator; resources in base units of sched/core/res.h; NULL
 * time columns read back as STORE_NO_TIME):
 *
 *   meta(key TEXT PK, value TEXT)                  -- free key/value; keys the store writes:
 *       created_at      UTC time the file was created (ISO 8601)
 *       writer          writer id of the last read-write open (opts.writer_id)
 *       opened_at       UTC time of that open
 *       commit_seq      number of cycle commits (store_commit) so far
 *       config_version  applied config's version: FNV-1a hash of its bytes, 16 hex digits
 *       config_path     where it was loaded from
 *       config_text     its full YAML text (a resume reloads exactly what was applied)
 *     drivers add their own (the simulator: its clock and event position, see docs/store.md).
 *   queues(name TEXT PK, cohort TEXT NULL, weight REAL > 0, priority INTEGER)
 *                                                  -- the applied config's queues
 *   queue_quota(queue -> queues.name ON DELETE CASCADE, flavor TEXT, resource TEXT,
 *               nominal INTEGER >= 0, borrowing_limit INTEGER NULL, lending_limit INTEGER NULL;
 *               PK(queue, flavor, resource))   -- NULL limit = no limit
 *   ledger(queue TEXT, flavor TEXT, resource TEXT, amount INTEGER >= 0; PK(queue, flavor,
 *          resource))                             -- usage admitted per queue, flavor and resource
 *   reservations(id INTEGER PK, kind 'starvation'|'preemptor'|'operator', gang TEXT,
 *                created_ms INTEGER, expires_ms INTEGER NULL = until deleted,
 *                expected_start_ms INTEGER NULL = unknown)
 *   reservation_nodes(reservation -> reservations.id ON DELETE CASCADE, ord INTEGER, node TEXT;
 *                     PK(reservation, ord))       -- held nodes, in the caller's order
 *   bind_journal(id INTEGER PK, seq INTEGER, cycle INTEGER, gang TEXT, pod_index INTEGER >= 0,
 *                pod TEXT, node TEXT, gpu_mask INTEGER 0..2^32-1,
 *                state 'intent'|'bound'|'rolled_back', intent_ms INTEGER, done_ms INTEGER NULL)
 *       seq: commit_seq of the cycle transaction that recorded the intent (see store_check);
 *       at most one open intent per (gang, pod_index) (a partial unique index)
 *   placements(gang TEXT, pod_index INTEGER, pod TEXT, node TEXT, gpu_mask INTEGER,
 *              bound_ms INTEGER; PK(gang, pod_index))  -- pods bound now, from the journal
 *   decisions(id INTEGER PK, cycle INTEGER, ts_ms INTEGER, gang TEXT, why INTEGER, reason TEXT,
 *             eta_ms INTEGER NULL, eta TEXT NULL)  -- eta*: version 3, the expected start
 *       why: enum sched_why (stable codes); reason: sched_verdict_format() text; bounded by
 *       opts.retain_cycles and opts.retain_rows
 *   preemptions(id INTEGER PK, cycle INTEGER, ts_ms INTEGER, victim TEXT, preemptor TEXT,
 *               gpus INTEGER >= 0, lost_work_gpu_s REAL >= 0, cost REAL)
 *   jobs(gang TEXT PK, gang_id INTEGER NULL, queue TEXT, flavor TEXT NULL, gpus INTEGER >= 0,
 *        state 'pending'|'admitted'|'running'|'finished'|'failed', submit_ms INTEGER,
 *        admit_ms, start_ms, finish_ms INTEGER NULL, preemptions INTEGER >= 0,
 *        restarts INTEGER >= 0)                   -- admitted and running jobs name a flavor
 *   fair_share(queue TEXT PK, share REAL >= 0, updated_ms INTEGER)
 *                                                  -- decayed historical share (queue_decay)
 * Version 2 adds:
 *   operator_actions(id INTEGER PK, ts_ms INTEGER, kind 'hold'|'resume'|'drain'|'reserve'|
 *                    'unreserve'|'checkpoint', target TEXT, detail TEXT NULL, actor TEXT NULL,
 *                    state 'pending'|'applied'|'rejected', done_ms INTEGER NULL, note TEXT NULL)
 *       requests of operators (the HTTP API's writes) for the scheduler to apply: target is the
 *       queue, the job, or the reservation id; detail is the caller's JSON text (reserve: the
 *       nodes)
 * Version 4 adds (for the HTTP API's per-route reads, store/views_query.c):
 *   jobs.state_rank INTEGER (virtual: pending 0 .. failed 4), indexes jobs_list(queue,
 *   state_rank, submit_ms, gang), jobs_latest (a job's latest time), preemptions_victim(victim,
 *   ts_ms), preemptions_preemptor(preemptor);
 *   job_counts(queue TEXT, state TEXT, n INTEGER; PK(queue, state)) -- jobs per queue and
 *       state, kept by triggers on jobs
 * Version 5 adds:
 *   preemptions.kind TEXT NULL -- sched_preempt_kind_name(): 'priority'|'reclaim'|'fair_share'|
 *       'overdue'; NULL in the rows written before version 5 (not recorded)
 * Version 6 adds (backfill on probation, docs/preemption.md; NULL: none, as in older rows):
 *   jobs.reserve_first_ms INTEGER NULL -- a waiting gang's first starvation reservation's
 *       expected start in this wait (the time backfill ahead of it promises to end by)
 *   jobs.probation_until_ms INTEGER NULL, jobs.probation_for TEXT NULL -- an admitted or
 *       running gang's promise: gone by that time, made to that waiting gang
 *   index jobs_promises (the rows with either). A promise belongs to one wait or one run:
 *   store_job_upsert drops reserve_first_ms unless the row stays pending, and the probation
 *   unless it stays admitted or running (admitted to running keeps it).
 * Version 7 adds jobs.user_name TEXT NULL; version 8 preemptions.members INTEGER NULL.
 * Version 9 adds:
 *   jobs.restart_ms INTEGER NULL -- a running gang's last in-place restart (members left it;
 *       the origin of its checkpoints until the next one); index jobs_restarts. Dropped, as a
 *       probation is, when the row leaves its run.
 * Version 10 adds jobs.ran_ms INTEGER NULL: the ms the submission held its GPUs in runs before
 *   the current one (a preemption or a restart ended them); kept while the row is the same
 *   submission (submit_ms), dropped for another.
 */
#ifndef STORE_STORE_H
#define STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sched/core/err.h"

struct config;

#define STORE_SCHEMA_VERSION 10         /* the newest schema this binary knows */
#define STORE_APP_ID         0x47534348 /* PRAGMA application_id: "GSCH" */
#define STORE_NO_TIME        INT64_MIN  /* an absent time (a NULL column) */
#define STORE_NO_LIMIT       INT64_MAX  /* an absent borrowing or lending limit */
#define STORE_ALL_PODS       (-1)       /* store_journal_done(): every open intent of the gang */
#define STORE_GPU            "nvidia.com/gpu" /* the accelerator when the config names none */

/* Defaults of struct store_opts. */
#define STORE_DEFAULT_RETAIN_CYCLES 10000
#define STORE_DEFAULT_RETAIN_ROWS   1000000
#define STORE_DEFAULT_BUSY_MS       5000
#define STORE_DEFAULT_WAL_LIMIT_MIB 64

enum store_flags {
    STORE_CREATE = 1 << 0,   /* create PATH when it does not exist (or is an empty file) */
    STORE_READONLY = 1 << 1, /* never write; refuses a database that would need migrating */
    STORE_DURABLE = 1 << 2,  /* synchronous=FULL: sync the WAL at every commit */
    STORE_CHECKED = 1 << 3,  /* with STORE_READONLY: the caller opened this same file before
                                (a pool of readers): skip PRAGMA quick_check, O(file size) */
};

struct store_opts {
    const char *writer_id;  /* recorded in meta 'writer' at a read-write open; NULL: "pid:N" */
    uint32_t retain_cycles; /* decision log: keep the last N cycles (by cycle number); 0 = any */
    uint32_t retain_rows;   /* decision log: keep at most M rows; 0 = any. Completed journal
                               entries follow the same two bounds; open intents are never pruned */
    int busy_timeout_ms;    /* wait this long for a lock held by another process; <= 0: default */
    int64_t max_bytes;      /* cap on the database size (PRAGMA max_page_count), 0 = none; a
                               write beyond it fails with SCHED_EFULL like a full disk */
};

/* Fills the defaults above (writer NULL, max_bytes 0). */
void store_opts_default(struct store_opts *o);

struct store;

/* Opens PATH. An existing file must be a gangsched store (application_id) or an empty SQLite
 * database (user_version 0, no tables), pass PRAGMA quick_check, and have a schema version this
 * binary knows: an older one is migrated in one transaction (STORE_READONLY refuses instead), a
 * newer one is refused. A missing file is created only with STORE_CREATE. opts NULL = defaults.
 * On error *out is untouched and the file is unchanged. */
int store_open(const char *path, unsigned flags, const struct store_opts *opts, struct store **out,
               struct sched_errbuf *eb);
/* --rebuild-store: when opening PATH failed because the store calls the file rebuildable
 * (corrupt, someone else's, a newer schema: its message names --rebuild-store; never a file
 * that is only locked or unreadable for a passing reason), moves PATH and its -wal and -shm
 * files aside to PATH.broken-<unix time> (the name is written to aside) and returns 0, eb still
 * holding the open's message (for the caller to say why): the caller opens a new store.
 * Otherwise returns the open's error unchanged (eb untouched). */
int store_set_aside(const char *path, int open_rc, char *aside, size_t cap,
                    struct sched_errbuf *eb);
/* For commands without --rebuild-store (gangctl, serve, store check): replaces the store's
 * "(use --rebuild-store)" hint in eb with `instead` (NULL or "": removes it). */
void store_rebuild_hint(struct sched_errbuf *eb, const char *instead);
/* Rolls back an open transaction (with a warning on stderr), finalizes the statements, closes
 * the connection (checkpointing the WAL) and frees the store. NULL is a no-op. */
void store_close(struct store *st);
const char *store_path(const struct store *st);
/* The schema version of the open database (STORE_SCHEMA_VERSION after a read-write open). */
int store_schema_version(const struct store *st);

/* One transaction per scheduling cycle (or batch of events). store_begin takes the write lock
 * (BEGIN IMMEDIATE); store_commit prunes the decision log and the completed journal entries by
 * the retention settings, increases meta commit_seq and commits. store_rollback is a no-op
 * without a transaction and also ends a transaction a failed write already rolled back. */
int store_begin(struct store *st, struct sched_errbuf *eb);
int store_commit(struct store *st, struct sched_errbuf *eb);
void store_rollback(struct store *st);
bool store_in_txn(const struct store *st);
/* Cycle commits so far (meta commit_seq). */
int64_t store_commit_seq(const struct store *st);
/* A consistent copy of the whole database (every committed page, as one SQLite file image),
 * for a standby that follows the leader (docs/store.md "Fail-over"). *out is freed with
 * store_snapshot_free. */
int store_snapshot(struct store *st, unsigned char **out, size_t *len, struct sched_errbuf *eb);
void store_snapshot_free(unsigned char *img);

/* Callbacks of the list functions return 0 to continue; any other value stops the iteration
 * and is returned by the list function. They must not call the store, except where a list
 * function says otherwise. */

/* ---- meta ---------------------------------------------------------------------------------- */
int store_meta_put(struct store *st, const char *key, const char *value, struct sched_errbuf *eb);
struct store_kv {
    const char *key, *value;
};
/* n store_meta_put()s in one call, all or none (in the caller's transaction: a failure rolls
 * it back). Much cheaper per row for many rows: the store writes them several per statement. */
int store_meta_put_many(struct store *st, const struct store_kv *kv, uint32_t n,
                        struct sched_errbuf *eb);
/* *value is borrowed until the next call on the store; SCHED_ENOENT when absent. */
int store_meta_get(struct store *st, const char *key, const char **value, struct sched_errbuf *eb);
int store_meta_put_i64(struct store *st, const char *key, int64_t value, struct sched_errbuf *eb);
/* SCHED_ENOENT when absent, SCHED_EINVAL when the value is not a decimal int64. */
int store_meta_get_i64(struct store *st, const char *key, int64_t *value, struct sched_errbuf *eb);

/* ---- configuration and queues -------------------------------------------------------------- */
struct store_quota {
    const char *flavor;
    const char *resource;                   /* resource name ("nvidia.com/gpu", "cpu", ...) */
    int64_t nominal;                        /* base units */
    int64_t borrowing_limit, lending_limit; /* STORE_NO_LIMIT = none */
};

struct store_queue {
    const char *name;
    const char *cohort; /* NULL: none */
    double weight;      /* > 0 */
    int32_t priority;
    const struct store_quota *quotas;
    uint32_t n_quotas;
};

/* Records an applied configuration: meta config_version/config_path/config_text, and replaces
 * every row of queues and queue_quota with the config's queues (text: the YAML it was loaded
 * from, len bytes; NULL when not at hand). Ledger and fair_share rows of queues the new config
 * no longer has are kept: their jobs still hold what they hold. */
/* The accelerator's resource name whose ledger rows are the jobs' GPUs (meta 'device', written
 * by store_config_apply() from the config's device.resource; STORE_GPU when never written), and
 * the word its counts are shown in ("GPU" by default). Valid until the store is closed. */
const char *store_device(struct store *st);
const char *store_device_unit(struct store *st);
/* true for the device and, with several kinds (config devices:, meta 'device_kinds'), for each
 * kind: the ledger rows the device figures count. */
bool store_is_device(struct store *st, const char *resource);

int store_config_apply(struct store *st, const struct config *cfg, const char *text, size_t len,
                       struct sched_errbuf *eb);
/* Inserts or replaces one queue and all its quota rows. */
int store_queue_put(struct store *st, const struct store_queue *q, struct sched_errbuf *eb);
int store_queue_delete(struct store *st, const char *name, struct sched_errbuf *eb);
typedef int store_queue_fn(void *ctx, const struct store_queue *q);
/* By name; quotas by flavor, then resource. */
int store_queue_list(struct store *st, store_queue_fn *fn, void *ctx, struct sched_errbuf *eb);

/* ---- usage ledger -------------------------------------------------------------------------- */
struct store_ledger_row {
    const char *queue;
    const char *flavor;
    const char *resource;
    int64_t amount; /* base units, >= 0 */
};

int store_ledger_set(struct store *st, const char *queue, const char *flavor, const char *resource,
                     int64_t amount, struct sched_errbuf *eb);
/* Adds delta (may be negative); SCHED_ERANGE when the amount would go below 0 (the transaction
 * is rolled back: a negative ledger is a bookkeeping bug, not a state to persist). */
int store_ledger_add(struct store *st, const char *queue, const char *flavor, const char *resource,
                     int64_t delta, struct sched_errbuf *eb);
/* 0 for a row that does not exist. */
int store_ledger_get(struct store *st, const char *queue, const char *flavor, const char *resource,
                     int64_t *amount, struct sched_errbuf *eb);
typedef int store_ledger_fn(void *ctx, const struct store_ledger_row *r);
int store_ledger_list(struct store *st, store_ledger_fn *fn, void *ctx, struct sched_errbuf *eb);
/* Recovery: makes the ledger equal `actual` (what is placed, computed by the driver from the
 * cluster). Every row that differs is logged as a warning (queue, flavor, resource, stored,
 * actual) and corrected; stored rows absent from `actual` are set to 0. *n_diff (may be NULL)
 * receives the number of rows corrected. One transaction (or the caller's). */
int store_ledger_reconcile(struct store *st, const struct store_ledger_row *actual, uint32_t n,
                           uint32_t *n_diff, struct sched_errbuf *eb);

/* ---- reservations -------------------------------------------------------------------------- */
enum store_res_kind { STORE_RES_STARVATION = 0, STORE_RES_PREEMPTOR, STORE_RES_OPERATOR };

struct store_reservation {
    int64_t id; /* 0 on put: a new id is assigned; > 0: replaces that reservation */
    enum store_res_kind kind;
    const char *gang;         /* the gang it holds capacity for */
    const char *const *nodes; /* held nodes, by name */
    uint32_t n_nodes;
    int64_t created_ms;
    int64_t expires_ms;        /* STORE_NO_TIME: until deleted */
    int64_t expected_start_ms; /* STORE_NO_TIME: unknown */
};

/* *id (may be NULL) receives the reservation's id. */
int store_reservation_put(struct store *st, const struct store_reservation *r, int64_t *id,
                          struct sched_errbuf *eb);
/* Deleting an id that does not exist is not an error; *n (may be NULL) counts deleted rows. */
int store_reservation_delete(struct store *st, int64_t id, uint32_t *n, struct sched_errbuf *eb);
/* Deletes every reservation of a kind (the starvation guard recomputes its holds each cycle). */
int store_reservation_delete_kind(struct store *st, enum store_res_kind kind, uint32_t *n,
                                  struct sched_errbuf *eb);
/* Deletes reservations with expires_ms <= now_ms. */
int store_reservation_expire(struct store *st, int64_t now_ms, uint32_t *n,
                             struct sched_errbuf *eb);
typedef int store_reservation_fn(void *ctx, const struct store_reservation *r);
/* By id. */
int store_reservation_list(struct store *st, store_reservation_fn *fn, void *ctx,
                           struct sched_errbuf *eb);
const char *store_res_kind_name(enum store_res_kind kind);

/* ---- bind journal and placed pods ---------------------------------------------------------- */
/* The write-ahead protocol (docs/store.md, "Recovery"): intents are committed before any bind
 * is sent; each one is completed (bound) or rolled back no later than the next cycle commit. */
enum store_bind_state { STORE_BIND_INTENT = 0, STORE_BIND_BOUND, STORE_BIND_ROLLED_BACK };

struct store_pod {
    uint32_t index;   /* pod index inside the gang (struct sched_placement order) */
    const char *name; /* pod name */
    const char *node; /* node name */
    uint32_t gpu_mask;
};

/* Records one open intent per pod. SCHED_EEXIST when a pod already has an open intent. */
int store_journal_intent(struct store *st, const char *gang, int64_t cycle, int64_t now_ms,
                         const struct store_pod *pods, uint32_t n_pods, struct sched_errbuf *eb);
/* Completes the open intents of a gang (pod_index STORE_ALL_PODS) or of one pod.
 * STORE_BIND_BOUND also records the pods in placements (SCHED_EEXIST when one is placed
 * already: a second bind of the same pod); STORE_BIND_ROLLED_BACK only closes the intents.
 * *n_done (may be NULL) counts the intents closed; 0 is not an error (completing twice is
 * harmless). */
int store_journal_done(struct store *st, const char *gang, int32_t pod_index,
                       enum store_bind_state state, int64_t now_ms, uint32_t *n_done,
                       struct sched_errbuf *eb);

struct store_intent {
    const char *gang;
    int64_t cycle;                /* of the oldest open intent of the gang */
    int64_t intent_ms;            /* of the oldest open intent of the gang */
    const struct store_pod *pods; /* its open intents, by pod index */
    uint32_t n_pods;
};
typedef int store_intent_fn(void *ctx, const struct store_intent *in);
/* Calls fn once per gang with open intents (by gang name). The intents are read into memory
 * first, so fn may call store_journal_done() (and any other store function): recovery decides,
 * per gang, from the cluster, whether it ends fully bound or not bound, and records it. */
int store_journal_pending(struct store *st, store_intent_fn *fn, void *ctx,
                          struct sched_errbuf *eb);

struct store_placement {
    const char *gang;
    uint32_t pod_index;
    const char *pod;
    const char *node;
    uint32_t gpu_mask;
    int64_t bound_ms;
};
/* Forgets the placed pods of a gang (it finished, failed or was preempted). */
int store_placement_release(struct store *st, const char *gang, uint32_t *n,
                            struct sched_errbuf *eb);
/* Forgets the placed pods of a gang that are not among pods[0 .. n) (by pod name): members of an
 * elastic gang that left while it runs on. *released (may be NULL) counts the rows forgotten. */
int store_placement_keep(struct store *st, const char *gang, const char *const *pods, uint32_t n,
                         uint32_t *released, struct sched_errbuf *eb);
/* The first pod index after the gang's placed pods (0 when none): where the pods of an elastic
 * gang's later members are numbered, after those already bound. */
int store_placement_next(struct store *st, const char *gang, uint32_t *next,
                         struct sched_errbuf *eb);
typedef int store_placement_fn(void *ctx, const struct store_placement *p);
/* By gang, then pod index. */
int store_placement_list(struct store *st, store_placement_fn *fn, void *ctx,
                         struct sched_errbuf *eb);

/* ---- decision log -------------------------------------------------------------------------- */
/* A driver's verdict for a gang it could not offer to the core (pods missing, no or unknown
 * queue, invalid spec): the reason names which. */
#define STORE_WHY_WAITING 100

struct store_decision {
    int64_t id; /* assigned (ignored on add) */
    int64_t cycle;
    int64_t ts_ms;
    const char *gang;
    int why;            /* enum sched_why, or STORE_WHY_WAITING */
    const char *reason; /* one line */
    /* the gang's expected start when the row was written (sched/core/eta.h): has_eta false =
     * none planned (rows before schema 3 too); else eta NULL and eta_ms the expected start, or
     * eta the reason there is none ("no estimate: behind 300 gangs") */
    bool has_eta;
    int64_t eta_ms;
    const char *eta;
};

/* Records decisions: a row per change of a gang's verdict. A decision equal to the gang's
 * newest row (why and reason) is dropped; one with the same why and another reason replaces
 * that row's reason (its cycle and ts_ms stay: when the gang began to wait for that why);
 * otherwise a row is appended. Pruning by the retention settings happens at the end of the
 * transaction (store_commit, or right away outside one), in that same transaction. */
int store_decision_add(struct store *st, const struct store_decision *d, struct sched_errbuf *eb);
/* store_decision_add for a writer that knows the gang's newest row, if it has one, has another
 * why (it wrote that row itself, or the retention pruned it): the row is appended without
 * reading the newest one. */
int store_decision_append(struct store *st, const struct store_decision *d,
                          struct sched_errbuf *eb);
/* When a driver sends a decision again whose verdict has not changed: when its expected start
 * (ms, INT64_MIN: none) moved from the one of the gang's newest row (last_ms, INT64_MIN: none
 * written) by more than STORE_ETA_SLACK_MS and by more than a quarter of the wait that row
 * announced (last_ms - now_ms), or a first expected start appeared. Both drivers ask it before
 * sending an unchanged verdict, so the log holds the moves of the expected start that matter and
 * not every repeat. */
#define STORE_ETA_SLACK_MS (600 * 1000)
bool store_decision_eta_moved(int64_t last_ms, int64_t at_ms, int64_t now_ms);
int store_decision_add_many(struct store *st, const struct store_decision *d, uint32_t n,
                            struct sched_errbuf *eb);
int store_decision_count(struct store *st, int64_t *n, struct sched_errbuf *eb);
typedef int store_decision_fn(void *ctx, const struct store_decision *d);
/* Newest first, at most `limit` (0 = all); gang NULL = every gang. */
int store_decision_list(struct store *st, const char *gang, uint32_t limit, store_decision_fn *fn,
                        void *ctx, struct sched_errbuf *eb);
/* The newest row of every gang, by gang. */
int store_decision_latest(struct store *st, store_decision_fn *fn, void *ctx,
                          struct sched_errbuf *eb);

/* ---- preemption records -------------------------------------------------------------------- */
struct store_preemption {
    int64_t cycle;
    int64_t ts_ms;
    const char *victim;
    const char *preemptor;
    int64_t gpus;           /* GPUs the victim released */
    double lost_work_gpu_s; /* GPU-seconds of work lost (since the last checkpoint), >= 0 */
    double cost;            /* the cost the preemption policy charged */
    /* why: sched_preempt_kind_name() of the eviction ("priority", "reclaim", "fair_share",
     * "overdue"); NULL: not recorded (rows of a database older than schema version 5) */
    const char *kind;
    /* 0: the whole gang was evicted; else the members of an elastic gang evicted alone (it ran
     * on with the others; gpus counts theirs) */
    int64_t members;
};

int store_preemption_add(struct store *st, const struct store_preemption *p,
                         struct sched_errbuf *eb);
typedef int store_preemption_fn(void *ctx, const struct store_preemption *p);
/* In insertion order. */
int store_preemption_list(struct store *st, store_preemption_fn *fn, void *ctx,
                          struct sched_errbuf *eb);
/* The rows where gang is the victim or the preemptor, in insertion order. */
int store_preemption_list_of(struct store *st, const char *gang, store_preemption_fn *fn, void *ctx,
                             struct sched_errbuf *eb);

/* ---- jobs ---------------------------------------------------------------------------------- */
enum store_job_state {
    STORE_JOB_PENDING = 0, /* waiting (also after a preemption, until re-admitted) */
    STORE_JOB_ADMITTED,    /* placed and charged to the ledger; binds in flight */
    STORE_JOB_RUNNING,     /* every pod bound (its pods are in placements) */
    STORE_JOB_FINISHED,
    STORE_JOB_FAILED,
};

struct store_job {
    const char *gang;
    int64_t gang_id; /* the driver's dense id, or -1 */
    const char *queue;
    const char *flavor; /* flavor charged; required when admitted or running, else may be NULL */
    int64_t gpus;       /* GPUs over all pods */
    enum store_job_state state;
    int64_t submit_ms;
    int64_t admit_ms, start_ms, finish_ms; /* STORE_NO_TIME: not yet */
    uint32_t preemptions;
    uint32_t restarts;
    const char *user; /* who submitted it (gangsched.io/user), or NULL: not known; a write
                         with NULL keeps the one the same gang's row has (schema 7) */
    int64_t ran_ms;   /* read only: ms this submission held its GPUs in runs before the
                         current one (0: none known; schema 10). An upsert keeps the row's for
                         the same submission and drops it for another; store_job_ran_put sets
                         it */
};

int store_job_upsert(struct store *st, const struct store_job *j, struct sched_errbuf *eb);
/* n store_job_upsert()s in one call, all or none, several rows per statement (as
 * store_meta_put_many). Every job is validated before any is written. */
int store_job_upsert_many(struct store *st, const struct store_job *j, uint32_t n,
                          struct sched_errbuf *eb);
/* Strings in *out are borrowed until the next call on the store; SCHED_ENOENT when absent. */
int store_job_get(struct store *st, const char *gang, struct store_job *out,
                  struct sched_errbuf *eb);
typedef int store_job_fn(void *ctx, const struct store_job *j);
/* By gang name. */
int store_job_list(struct store *st, store_job_fn *fn, void *ctx, struct sched_errbuf *eb);
const char *store_job_state_name(enum store_job_state s);

/* ---- backfill promises (schema version 6) ------------------------------------------------- */
/* What a job row keeps of backfill on probation (the engine's eng_job reserve_first_ms,
 * probation_until_ms and probation_for, by gang name), for a driver that restarts. */
struct store_promise {
    const char *gang;
    enum store_job_state state; /* the row's */
    int64_t reserve_first_ms;   /* STORE_NO_TIME: none */
    int64_t probation_until_ms; /* STORE_NO_TIME: not on probation (probation_for then NULL) */
    const char *probation_for;  /* the waiting gang it promised to */
    int64_t submit_ms;          /* the row's submission (STORE_NO_TIME: none): whose promise */
};

/* Sets (STORE_NO_TIME: clears) the waiting gang's first reservation's expected start on its job
 * row. A gang without a row: nothing is written, not an error. */
int store_job_reserve_put(struct store *st, const char *gang, int64_t reserve_first_ms,
                          struct sched_errbuf *eb);
/* Sets gang's promise: gone by until_ms, made to for_gang; until_ms STORE_NO_TIME or for_gang
 * NULL clears it. A gang without a row: nothing is written, not an error. */
int store_job_probation_put(struct store *st, const char *gang, int64_t until_ms,
                            const char *for_gang, struct sched_errbuf *eb);
/* Drops gang's first reservation and promise, in one statement that writes nothing when the
 * row has neither (a gang forgotten or renewed: most have none). */
int store_job_promises_clear(struct store *st, const char *gang, struct sched_errbuf *eb);
typedef int store_promise_fn(void *ctx, const struct store_promise *p);
/* The rows with a reservation or a promise, by gang. */
int store_promise_list(struct store *st, store_promise_fn *fn, void *ctx, struct sched_errbuf *eb);

/* ---- in-place restarts (schema version 9) -------------------------------------------------- */
/* Notes that running gang's workers restarted in place at restart_ms (members left it): the
 * origin of its checkpoints until the next one. A row not running is left alone. */
int store_job_restart_put(struct store *st, const char *gang, int64_t restart_ms,
                          struct sched_errbuf *eb);
typedef int store_restart_fn(void *ctx, const char *gang, int64_t restart_ms);
/* The running rows with a restart noted in this run, by gang. */
int store_restart_list(struct store *st, store_restart_fn *fn, void *ctx, struct sched_errbuf *eb);

/* ---- earlier runs (schema version 10) ----------------------------------------------------- */
/* Sets gang's ran_ms (ms >= 0: the time its submission held its GPUs in runs before the
 * current one). A gang without a row: nothing is written, not an error. */
int store_job_ran_put(struct store *st, const char *gang, int64_t ran_ms, struct sched_errbuf *eb);

/* ---- fair-share history -------------------------------------------------------------------- */
int store_history_put(struct store *st, const char *queue, double share, int64_t updated_ms,
                      struct sched_errbuf *eb);
/* SCHED_ENOENT when the queue has no history. */
int store_history_get(struct store *st, const char *queue, double *share, int64_t *updated_ms,
                      struct sched_errbuf *eb);
typedef int store_history_fn(void *ctx, const char *queue, double share, int64_t updated_ms);
int store_history_list(struct store *st, store_history_fn *fn, void *ctx, struct sched_errbuf *eb);
/* Every row, the bad ones too (a reader that keeps the good ones and reports the others): bad is
 * NULL for a good row, else the field and what is wrong with it ("share: -1 is not a finite
 * number >= 0", "updated_ms: not an integer"; queue is then still the row's key, or NULL). By
 * queue. An error only when the table cannot be read. */
typedef int store_history_row_fn(void *ctx, const char *queue, double share, int64_t updated_ms,
                                 const char *bad);
int store_history_scan(struct store *st, store_history_row_fn *fn, void *ctx,
                       struct sched_errbuf *eb);

/* ---- operator actions (schema version 2) -------------------------------------------------- */
enum store_action_kind {
    STORE_ACT_HOLD = 0,   /* queue: admit nothing more */
    STORE_ACT_RESUME,     /* queue: admit again */
    STORE_ACT_DRAIN,      /* queue: admit nothing more, let running jobs finish */
    STORE_ACT_RESERVE,    /* job: hold nodes (detail: the request) */
    STORE_ACT_UNRESERVE,  /* reservation id: delete it */
    STORE_ACT_CHECKPOINT, /* job: ask it to checkpoint */
};
enum store_action_state { STORE_ACTION_PENDING = 0, STORE_ACTION_APPLIED, STORE_ACTION_REJECTED };

struct store_action {
    int64_t id; /* assigned on add */
    int64_t ts_ms;
    enum store_action_kind kind;
    const char *target; /* queue, job or reservation id */
    const char *detail; /* NULL or JSON text */
    const char *actor;  /* NULL or who asked (e.g. the API client's address) */
    enum store_action_state state;
    int64_t done_ms; /* STORE_NO_TIME while pending */
    const char *note;
};

/* Records a pending action; *id (may be NULL) receives its id. */
int store_action_add(struct store *st, const struct store_action *a, int64_t *id,
                     struct sched_errbuf *eb);
/* Marks a pending action applied or rejected (note: why, may be NULL); SCHED_ENOENT when no
 * pending action has that id. */
int store_action_done(struct store *st, int64_t id, enum store_action_state state, int64_t now_ms,
                      const char *note, struct sched_errbuf *eb);
typedef int store_action_fn(void *ctx, const struct store_action *a);
/* By id; pending_only: only those still pending. */
int store_action_list(struct store *st, bool pending_only, store_action_fn *fn, void *ctx,
                      struct sched_errbuf *eb);
const char *store_action_kind_name(enum store_action_kind k);
const char *store_action_state_name(enum store_action_state s);
/* The kind named s; -1 when unknown. */
int store_action_kind_parse(const char *s);

/* ---- invariants ---------------------------------------------------------------------------- */
/* Checks an open store and prints one line per problem to `report` (may be NULL):
 *   - PRAGMA integrity_check and foreign_key_check find nothing;
 *   - per (queue, flavor), the ledger's nvidia.com/gpu equals the GPUs of the jobs that hold
 *     resources (state admitted or running);
 *   - every running job has placed pods, and their GPUs (bits of gpu_mask) equal its GPUs;
 *     every placed pod belongs to an admitted or running job;
 *   - a job row's promise, restart and earlier-run times are integers (ran_ms not negative),
 *     a promise names its gang, and a restart belongs to an admitted or running job;
 *   - no bind intent recorded before the last cycle commit is still open (seq < commit_seq):
 *     a cycle's binds end, bound or rolled back, by the next cycle commit.
 * Returns 0 when consistent, 1 when a problem was found, or a negative SCHED_E* code (message
 * in eb) when the check itself could not run. */
int store_verify(struct store *st, FILE *report, struct sched_errbuf *eb);
/* Opens PATH read-only, verifies it, prints the problems and a summary line to `report`.
 * Returns 0 (consistent), 1 (problems) or a negative SCHED_E* code (could not open or read;
 * the message is printed too). */
int store_check(const char *path, FILE *report);
/* `gangsched store check DB`: store_check as an exit code: 0 consistent, 1 problems, 2 the
 * database could not be opened or read. */
int store_check_main(const char *path, FILE *out);

#endif
