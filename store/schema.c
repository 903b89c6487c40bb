/* store/schema.c: every line of SQL the store runs: the schema, its migrations, and the text of
 * the prepared statements.
 *
 * Owns: the migration table (one entry per schema version, applied in order inside one
 * transaction, then PRAGMA user_version), and store__stmt_sql. The columns are documented in
 * store/store.h and docs/store.md; keep the three in step. A new schema version appends a
 * migration (never edits an old one) and raises STORE_SCHEMA_VERSION.
 *
 * Must not touch: data. Migrations only reshape; no statement text here is ever built from
 * values (values are bound).
 */
#include <stdio.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_int.h"

/* Version 1: the initial schema. */
static const char schema_v1[] =
    "PRAGMA application_id = 1196639048;\n" /* STORE_APP_ID */
    "CREATE TABLE meta (\n"
    "  key   TEXT PRIMARY KEY NOT NULL,\n"
    "  value TEXT NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE queues (\n"
    "  name     TEXT PRIMARY KEY NOT NULL,\n"
    "  cohort   TEXT,\n"
    "  weight   REAL NOT NULL CHECK (weight > 0),\n"
    "  priority INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE queue_quota (\n"
    "  queue           TEXT NOT NULL REFERENCES queues(name) ON DELETE CASCADE,\n"
    "  flavor          TEXT NOT NULL,\n"
    "  resource        TEXT NOT NULL,\n"
    "  nominal         INTEGER NOT NULL CHECK (nominal >= 0),\n"
    "  borrowing_limit INTEGER CHECK (borrowing_limit IS NULL OR borrowing_limit >= 0),\n"
    "  lending_limit   INTEGER CHECK (lending_limit IS NULL OR lending_limit >= 0),\n"
    "  PRIMARY KEY (queue, flavor, resource)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE ledger (\n"
    "  queue    TEXT NOT NULL,\n"
    "  flavor   TEXT NOT NULL,\n"
    "  resource TEXT NOT NULL,\n"
    "  amount   INTEGER NOT NULL CHECK (typeof(amount) = 'integer' AND amount >= 0),\n"
    "  PRIMARY KEY (queue, flavor, resource)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE reservations (\n"
    "  id                INTEGER PRIMARY KEY,\n"
    "  kind              TEXT NOT NULL CHECK (kind IN ('starvation', 'preemptor', 'operator')),\n"
    "  gang              TEXT NOT NULL,\n"
    "  created_ms        INTEGER NOT NULL,\n"
    "  expires_ms        INTEGER,\n"
    "  expected_start_ms INTEGER\n"
    ");\n"
    "CREATE INDEX reservations_expiry ON reservations(expires_ms) WHERE expires_ms IS NOT NULL;\n"
    "CREATE TABLE reservation_nodes (\n"
    "  reservation INTEGER NOT NULL REFERENCES reservations(id) ON DELETE CASCADE,\n"
    "  ord         INTEGER NOT NULL,\n"
    "  node        TEXT NOT NULL,\n"
    "  PRIMARY KEY (reservation, ord)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE bind_journal (\n"
    "  id        INTEGER PRIMARY KEY,\n"
    "  seq       INTEGER NOT NULL,\n"
    "  cycle     INTEGER NOT NULL,\n"
    "  gang      TEXT NOT NULL,\n"
    "  pod_index INTEGER NOT NULL CHECK (pod_index >= 0),\n"
    "  pod       TEXT NOT NULL,\n"
    "  node      TEXT NOT NULL,\n"
    "  gpu_mask  INTEGER NOT NULL CHECK (gpu_mask BETWEEN 0 AND 4294967295),\n"
    "  state     TEXT NOT NULL CHECK (state IN ('intent', 'bound', 'rolled_back')),\n"
    "  intent_ms INTEGER NOT NULL,\n"
    "  done_ms   INTEGER\n"
    ");\n"
    "CREATE UNIQUE INDEX bind_journal_open ON bind_journal(gang, pod_index)\n"
    "  WHERE state = 'intent';\n"
    "CREATE INDEX bind_journal_cycle ON bind_journal(cycle);\n"
    "CREATE TABLE placements (\n"
    "  gang      TEXT NOT NULL,\n"
    "  pod_index INTEGER NOT NULL CHECK (pod_index >= 0),\n"
    "  pod       TEXT NOT NULL,\n"
    "  node      TEXT NOT NULL,\n"
    "  gpu_mask  INTEGER NOT NULL CHECK (gpu_mask BETWEEN 0 AND 4294967295),\n"
    "  bound_ms  INTEGER NOT NULL,\n"
    "  PRIMARY KEY (gang, pod_index)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE decisions (\n"
    "  id     INTEGER PRIMARY KEY,\n"
    "  cycle  INTEGER NOT NULL,\n"
    "  ts_ms  INTEGER NOT NULL,\n"
    "  gang   TEXT NOT NULL,\n"
    "  why    INTEGER NOT NULL,\n"
    "  reason TEXT NOT NULL\n"
    ");\n"
    "CREATE INDEX decisions_cycle ON decisions(cycle);\n"
    "CREATE INDEX decisions_gang ON decisions(gang, id);\n"
    "CREATE TABLE preemptions (\n"
    "  id              INTEGER PRIMARY KEY,\n"
    "  cycle           INTEGER NOT NULL,\n"
    "  ts_ms           INTEGER NOT NULL,\n"
    "  victim          TEXT NOT NULL,\n"
    "  preemptor       TEXT NOT NULL,\n"
    "  gpus            INTEGER NOT NULL CHECK (gpus >= 0),\n"
    "  lost_work_gpu_s REAL NOT NULL CHECK (lost_work_gpu_s >= 0),\n"
    "  cost            REAL NOT NULL\n"
    ");\n"
    "CREATE TABLE jobs (\n"
    "  gang        TEXT PRIMARY KEY NOT NULL,\n"
    "  gang_id     INTEGER,\n"
    "  queue       TEXT NOT NULL,\n"
    "  flavor      TEXT,\n"
    "  gpus        INTEGER NOT NULL CHECK (gpus >= 0),\n"
    "  state       TEXT NOT NULL\n"
    "              CHECK (state IN ('pending', 'admitted', 'running', 'finished', 'failed')),\n"
    "  submit_ms   INTEGER NOT NULL,\n"
    "  admit_ms    INTEGER,\n"
    "  start_ms    INTEGER,\n"
    "  finish_ms   INTEGER,\n"
    "  preemptions INTEGER NOT NULL DEFAULT 0 CHECK (preemptions >= 0),\n"
    "  restarts    INTEGER NOT NULL DEFAULT 0 CHECK (restarts >= 0),\n"
    "  CHECK (state NOT IN ('admitted', 'running') OR flavor IS NOT NULL)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE fair_share (\n"
    "  queue      TEXT PRIMARY KEY NOT NULL,\n"
    "  share      REAL NOT NULL CHECK (share >= 0),\n"
    "  updated_ms INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO meta(key, value) VALUES\n"
    "  ('created_at', strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),\n"
    "  ('commit_seq', '0');\n";

/* Version 2: operator actions requested through the HTTP API (hold, resume and drain a queue,
 * create and delete a reservation, checkpoint a job), recorded for the scheduler to apply. */
static const char schema_v2[] =
    "CREATE TABLE operator_actions (\n"
    "  id      INTEGER PRIMARY KEY,\n"
    "  ts_ms   INTEGER NOT NULL,\n"
    "  kind    TEXT NOT NULL CHECK (kind IN ('hold', 'resume', 'drain', 'reserve', "
    "'unreserve', 'checkpoint')),\n"
    "  target  TEXT NOT NULL,\n"
    "  detail  TEXT,\n"
    "  actor   TEXT,\n"
    "  state   TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'applied', "
    "'rejected')),\n"
    "  done_ms INTEGER,\n"
    "  note    TEXT\n"
    ");\n"
    "CREATE INDEX operator_actions_pending ON operator_actions(id) WHERE state = 'pending';\n";

struct store__migration {
    int version;      /* user_version after it */
    const char *what; /* for messages */
    const char *sql;  /* static text, run with sqlite3_exec */
};

/* Version 3: the expected start of a waiting gang in the decision log (issue 19). */
static const char schema_v3[] = "ALTER TABLE decisions ADD COLUMN eta_ms INTEGER;\n"
                                "ALTER TABLE decisions ADD COLUMN eta TEXT;\n";

/* A job's latest time: the expression of the index jobs_latest. */
#define JOB_LATEST                                                                                 \
    "max(submit_ms, coalesce(admit_ms, submit_ms), coalesce(start_ms, submit_ms), "                \
    "coalesce(finish_ms, submit_ms))"

/* Version 4: what the HTTP API's per-route reads need (store/views_query.c): jobs in read order
 * (state_rank; a page is an index range), each job's latest time (the documents' now_ms in one
 * seek), jobs per queue and state kept by triggers (a queue's counts without reading its jobs), and
 * the preemptions of one gang. */
static const char schema_v4[] =
    /* a job state's rank in the read order: a column (virtual), not an expression in the index,
     * so that the row-value ranges of the paged queries are index ranges */
    "ALTER TABLE jobs ADD COLUMN state_rank INTEGER GENERATED ALWAYS AS (CASE state "
    "WHEN 'pending' THEN 0 WHEN 'admitted' THEN 1 WHEN 'running' THEN 2 WHEN 'finished' THEN 3 "
    "ELSE 4 END) VIRTUAL;\n"
    "CREATE INDEX jobs_list ON jobs(queue, state_rank, submit_ms, gang);\n"
    "CREATE INDEX jobs_latest ON jobs(" JOB_LATEST ");\n"
    "CREATE INDEX preemptions_victim ON preemptions(victim, ts_ms);\n"
    "CREATE INDEX preemptions_preemptor ON preemptions(preemptor);\n"
    "CREATE TABLE job_counts (\n"
    "  queue TEXT NOT NULL,\n"
    "  state TEXT NOT NULL,\n"
    "  n     INTEGER NOT NULL,\n"
    "  PRIMARY KEY (queue, state)\n"
    ") WITHOUT ROWID;\n"
    "INSERT INTO job_counts(queue, state, n) SELECT queue, state, COUNT(*) FROM jobs "
    "GROUP BY queue, state;\n"
    "CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN\n"
    "  INSERT INTO job_counts(queue, state, n) VALUES (new.queue, new.state, 1)\n"
    "    ON CONFLICT(queue, state) DO UPDATE SET n = n + 1;\n"
    "END;\n"
    "CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN\n"
    "  UPDATE job_counts SET n = n - 1 WHERE queue = old.queue AND state = old.state;\n"
    "END;\n"
    "CREATE TRIGGER jobs_count_update AFTER UPDATE OF queue, state ON jobs\n"
    "  WHEN old.queue IS NOT new.queue OR old.state IS NOT new.state BEGIN\n"
    "  UPDATE job_counts SET n = n - 1 WHERE queue = old.queue AND state = old.state;\n"
    "  INSERT INTO job_counts(queue, state, n) VALUES (new.queue, new.state, 1)\n"
    "    ON CONFLICT(queue, state) DO UPDATE SET n = n + 1;\n"
    "END;\n";

/* Version 5: why each preemption was made (the kind of sched_preempt_kind_name); older rows
 * keep NULL, "not recorded". */
static const char schema_v5[] = "ALTER TABLE preemptions ADD COLUMN kind TEXT;\n";

/* Version 6: backfill-on-probation promises on the job rows (docs/preemption.md), so that a
 * daemon restarted or a new leader keeps them: a waiting gang's first reservation's expected
 * start, a running gang's promise and the gang it promised to. Older rows keep NULL: none. */
static const char schema_v6[] =
    "ALTER TABLE jobs ADD COLUMN reserve_first_ms INTEGER;\n"
    "ALTER TABLE jobs ADD COLUMN probation_until_ms INTEGER;\n"
    "ALTER TABLE jobs ADD COLUMN probation_for TEXT;\n"
    "CREATE INDEX jobs_promises ON jobs(gang) "
    "WHERE reserve_first_ms IS NOT NULL OR probation_until_ms IS NOT NULL;\n";

/* Version 7: who submitted each job (gangsched.io/user, the trace's user column), so that a
 * restarted daemon learns run times per user again (queue/estimate.h). Older rows keep NULL:
 * not known. */
static const char schema_v7[] = "ALTER TABLE jobs ADD COLUMN user_name TEXT;\n";

/* Version 8: a preemption that took members of an elastic gang alone (the gang ran on) says how
 * many (docs/preemption.md). Older rows keep NULL: the whole gang. */
static const char schema_v8[] = "ALTER TABLE preemptions ADD COLUMN members INTEGER;\n";

/* Version 9: when an elastic gang's workers last restarted in place because members left it
 * (the origin of its checkpoints until its next one: new members' joins count from it), so
 * that a restarted daemon or a new leader keeps it. A run's note: the job upsert drops it when
 * the row leaves its run. Older rows keep NULL: none. */
static const char schema_v9[] = "ALTER TABLE jobs ADD COLUMN restart_ms INTEGER;\n"
                                "CREATE INDEX jobs_restarts ON jobs(gang) "
                                "WHERE restart_ms IS NOT NULL;\n";

/* Version 10: how long a gang held its GPUs in the runs of its submission before the current
 * one (a preemption or a restart ended them), so that a gang that ran more than once teaches
 * the run-time estimates all of its runs, as the simulator's does, also after a restart of the
 * daemon. Kept while the row is the same submission. Older rows keep NULL: none known. */
static const char schema_v10[] = "ALTER TABLE jobs ADD COLUMN ran_ms INTEGER;\n";

static const struct store__migration migrations[] = {
    {1, "initial schema", schema_v1},
    {2, "operator actions", schema_v2},
    {3, "expected starts in the decision log", schema_v3},
    {4, "indexes and job counts for the API's reads", schema_v4},
    {5, "the kind of each preemption", schema_v5},
    {6, "backfill promises on the job rows", schema_v6},
    {7, "who submitted each job", schema_v7},
    {8, "members a preemption took alone", schema_v8},
    {9, "in-place restarts of running gangs", schema_v9},
    {10, "earlier runs of each job", schema_v10},
};

_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == STORE_SCHEMA_VERSION,
               "one migration per schema version");
_Static_assert(STORE_APP_ID == 1196639048, "schema_v1 spells STORE_APP_ID in decimal");

static int exec_static(struct store *st, const char *sql, char **msg)
{
    return sqlite3_exec(st->db, sql, NULL, NULL, msg);
}

int store__migrate(struct store *st, int from, struct sched_errbuf *eb)
{
    char *msg = NULL;
    int rc = exec_static(st, "BEGIN IMMEDIATE", &msg);
    if (rc != SQLITE_OK) {
        sqlite3_free(msg);
        return store__sql_fail(st, rc, "starting the schema migration", eb);
    }
    /* Another process may have migrated between our read of user_version and the lock. */
    int now = from;
    sqlite3_stmt *s = NULL;
    rc = sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        now = sqlite3_column_int(s, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    int err = 0;
    if (rc != SQLITE_OK) {
        err = store__sql_fail(st, rc, "reading the schema version", eb);
        goto out_rollback;
    }
    if (now != from) {
        err = sched_fail(eb, SCHED_EIO,
                         "database %s: schema version changed from %d to %d while opening "
                         "(another process is migrating it?)",
                         st->path, from, now);
        goto out_rollback;
    }
    for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]); i++) {
        const struct store__migration *m = &migrations[i];
        if (m->version <= from)
            continue;
        rc = exec_static(st, m->sql, &msg);
        if (rc != SQLITE_OK) {
            char what[160];
            snprintf(what, sizeof(what), "migrating schema from version %d to %d (%s): %s", from,
                     m->version, m->what, msg ? msg : sqlite3_errstr(rc));
            sqlite3_free(msg);
            msg = NULL;
            err = store__sql_fail(st, rc, what, eb);
            goto out_rollback;
        }
    }
    char set[64];
    snprintf(set, sizeof(set), "PRAGMA user_version = %d", STORE_SCHEMA_VERSION);
    rc = exec_static(st, set, &msg);
    if (rc == SQLITE_OK)
        rc = exec_static(st, "COMMIT", &msg);
    sqlite3_free(msg);
    if (rc != SQLITE_OK) {
        err = store__sql_fail(st, rc, "committing the schema migration", eb);
        goto out_rollback;
    }
    st->schema_version = STORE_SCHEMA_VERSION;
    return 0;

out_rollback:
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return err;
}

/* Multi-row writes (store__exec_rows): one statement writes STORE__ROWS rows, its parameters
 * row after row ("?" numbers them in order). The single-row statement is the same text with
 * one row. */
#define STORE_ROWS_4(r) r ", " r ", " r ", " r
#define STORE_ROWS_16(r)                                                                           \
    STORE_ROWS_4(r) ", " STORE_ROWS_4(r) ", " STORE_ROWS_4(r) ", " STORE_ROWS_4(r)
#define STORE_ROWS_32(r) STORE_ROWS_16(r) ", " STORE_ROWS_16(r)
#define META_ROW         "(?, ?)"
#define META_PUT(rows)                                                                             \
    "INSERT INTO meta(key, value) VALUES " rows                                                    \
    " ON CONFLICT(key) DO UPDATE SET value = excluded.value"
// clang-format off
/* Whether the row `t` (jobs or excluded) is in a run: admitted or running. */
#define JOB_RUNS(t) t ".state IN ('admitted', 'running')"
/* Whether rows a and b are the same gang: the same submission (a gang deleted and created again
 * under its name is another one, whose row must not inherit the old one's promises). */
#define JOB_SAME(a, b) a ".submit_ms IS " b ".submit_ms"
/* A promise belongs to one wait (pending) or one run (admitted, then running) of one gang: a
 * row that leaves it, or is another gang's, drops it. */
#define JOB_KEEP_WAIT "jobs.state = 'pending' AND excluded.state = 'pending' AND " \
                      JOB_SAME("jobs", "excluded")
#define JOB_KEEP_RUN JOB_RUNS("jobs") " AND " JOB_RUNS("excluded") " AND " \
                     JOB_SAME("jobs", "excluded")
#define JOB_ROW "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
/* A row written without a user (NULL) keeps the one its gang's row has. */
#define JOB_UPSERT(rows) \
    "INSERT INTO jobs(gang, gang_id, queue, flavor, gpus, state, submit_ms, admit_ms, " \
    "start_ms, finish_ms, preemptions, restarts, user_name) " \
    "VALUES " rows " ON CONFLICT(gang) DO UPDATE SET gang_id = excluded.gang_id, " \
    "queue = excluded.queue, flavor = excluded.flavor, gpus = excluded.gpus, " \
    "state = excluded.state, submit_ms = excluded.submit_ms, admit_ms = excluded.admit_ms, " \
    "start_ms = excluded.start_ms, finish_ms = excluded.finish_ms, " \
    "preemptions = excluded.preemptions, restarts = excluded.restarts, " \
    "reserve_first_ms = CASE WHEN " JOB_KEEP_WAIT " THEN jobs.reserve_first_ms END, " \
    "probation_until_ms = CASE WHEN " JOB_KEEP_RUN " THEN jobs.probation_until_ms END, " \
    "probation_for = CASE WHEN " JOB_KEEP_RUN " THEN jobs.probation_for END, " \
    "restart_ms = CASE WHEN " JOB_KEEP_RUN " THEN jobs.restart_ms END, " \
    "ran_ms = CASE WHEN " JOB_SAME("jobs", "excluded") " THEN jobs.ran_ms END, " \
    "user_name = CASE WHEN " JOB_SAME("jobs", "excluded") " THEN " \
    "coalesce(excluded.user_name, jobs.user_name) ELSE excluded.user_name END"
// clang-format on

/* The statements. Conventions: ?1.. in column order; times NULL when absent. */
const char *const store__stmt_sql[STMT_N] = {
    [STMT_BEGIN] = "BEGIN IMMEDIATE",
    [STMT_BEGIN_READ] = "BEGIN DEFERRED",
    [STMT_COMMIT] = "COMMIT",
    [STMT_ROLLBACK] = "ROLLBACK",
    [STMT_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [STMT_META_PUT] = META_PUT(META_ROW),
    [STMT_META_PUT_MANY] = META_PUT(STORE_ROWS_32(META_ROW)),
    [STMT_QUEUE_DELETE_ALL] = "DELETE FROM queues",
    [STMT_QUEUE_DELETE] = "DELETE FROM queues WHERE name = ?1",
    [STMT_QUEUE_PUT] = "INSERT INTO queues(name, cohort, weight, priority) VALUES (?1, ?2, ?3, ?4) "
                       "ON CONFLICT(name) DO UPDATE SET cohort = excluded.cohort, "
                       "weight = excluded.weight, priority = excluded.priority",
    [STMT_QUOTA_DELETE] = "DELETE FROM queue_quota WHERE queue = ?1",
    [STMT_QUOTA_PUT] = "INSERT INTO queue_quota(queue, flavor, resource, nominal, "
                       "borrowing_limit, lending_limit) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [STMT_QUEUE_LIST] = "SELECT name, cohort, weight, priority FROM queues ORDER BY name",
    [STMT_QUOTA_LIST] = "SELECT flavor, resource, nominal, borrowing_limit, lending_limit "
                        "FROM queue_quota WHERE queue = ?1 ORDER BY flavor, resource",
    [STMT_LEDGER_SET] = "INSERT INTO ledger(queue, flavor, resource, amount) "
                        "VALUES (?1, ?2, ?3, ?4) "
                        "ON CONFLICT(queue, flavor, resource) DO UPDATE SET amount = "
                        "excluded.amount",
    [STMT_LEDGER_GET] = "SELECT amount FROM ledger WHERE queue = ?1 AND flavor = ?2 AND "
                        "resource = ?3",
    [STMT_LEDGER_LIST] = "SELECT queue, flavor, resource, amount FROM ledger "
                         "ORDER BY queue, flavor, resource",
    [STMT_RES_INSERT] = "INSERT INTO reservations(id, kind, gang, created_ms, expires_ms, "
                        "expected_start_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [STMT_RES_NODE_INSERT] = "INSERT INTO reservation_nodes(reservation, ord, node) "
                             "VALUES (?1, ?2, ?3)",
    [STMT_RES_DELETE] = "DELETE FROM reservations WHERE id = ?1",
    [STMT_RES_DELETE_KIND] = "DELETE FROM reservations WHERE kind = ?1",
    [STMT_RES_EXPIRE] = "DELETE FROM reservations WHERE expires_ms IS NOT NULL AND "
                        "expires_ms <= ?1",
    [STMT_RES_LIST] = "SELECT id, kind, gang, created_ms, expires_ms, expected_start_ms "
                      "FROM reservations ORDER BY id",
    [STMT_RES_NODES] = "SELECT node FROM reservation_nodes WHERE reservation = ?1 ORDER BY ord",
    [STMT_JOURNAL_INTENT] = "INSERT INTO bind_journal(seq, cycle, gang, pod_index, pod, node, "
                            "gpu_mask, state, intent_ms) "
                            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'intent', ?8)",
    [STMT_JOURNAL_PLACE] = "INSERT INTO placements(gang, pod_index, pod, node, gpu_mask, "
                           "bound_ms) SELECT gang, pod_index, pod, node, gpu_mask, ?3 "
                           "FROM bind_journal WHERE state = 'intent' AND gang = ?1 AND "
                           "(?2 < 0 OR pod_index = ?2)",
    [STMT_JOURNAL_DONE] = "UPDATE bind_journal SET state = ?3, done_ms = ?4 "
                          "WHERE state = 'intent' AND gang = ?1 AND (?2 < 0 OR pod_index = ?2)",
    [STMT_JOURNAL_PENDING] = "SELECT gang, cycle, intent_ms, pod_index, pod, node, gpu_mask "
                             "FROM bind_journal WHERE state = 'intent' ORDER BY gang, pod_index",
    [STMT_JOURNAL_PRUNE_CYCLES] = "DELETE FROM bind_journal WHERE state <> 'intent' AND "
                                  "cycle <= (SELECT MAX(cycle) FROM bind_journal) - ?1",
    [STMT_JOURNAL_PRUNE_ROWS] = "DELETE FROM bind_journal WHERE state <> 'intent' AND "
                                "id <= (SELECT MAX(id) FROM bind_journal) - ?1",
    [STMT_PLACEMENT_RELEASE] = "DELETE FROM placements WHERE gang = ?1",
    [STMT_PLACEMENT_PODS] = "SELECT pod_index, pod FROM placements WHERE gang = ?1",
    [STMT_PLACEMENT_RELEASE_POD] = "DELETE FROM placements WHERE gang = ?1 AND pod_index = ?2",
    [STMT_PLACEMENT_NEXT] =
        "SELECT coalesce(max(pod_index) + 1, 0) FROM placements WHERE gang = ?1",
    [STMT_PLACEMENT_LIST] = "SELECT gang, pod_index, pod, node, gpu_mask, bound_ms "
                            "FROM placements ORDER BY gang, pod_index",
    [STMT_DECISION_ADD] = "INSERT INTO decisions(cycle, ts_ms, gang, why, reason, eta_ms, eta) "
                          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    /* Rows are appended with rowid = max + 1 and pruned from the oldest end, so ids are
     * contiguous and "MAX(id) - M" keeps exactly M rows without counting them. */
    [STMT_DECISION_PRUNE_CYCLES] = "DELETE FROM decisions WHERE "
                                   "cycle <= (SELECT MAX(cycle) FROM decisions) - ?1",
    [STMT_DECISION_PRUNE_ROWS] = "DELETE FROM decisions WHERE "
                                 "id <= (SELECT MAX(id) FROM decisions) - ?1",
    [STMT_DECISION_COUNT] = "SELECT COUNT(*) FROM decisions",
    [STMT_DECISION_LIST] = "SELECT id, cycle, ts_ms, gang, why, reason, eta_ms, eta FROM decisions "
                           "ORDER BY id DESC LIMIT ?1",
    [STMT_DECISION_LIST_GANG] = "SELECT id, cycle, ts_ms, gang, why, reason, eta_ms, eta "
                                "FROM decisions "
                                "WHERE gang = ?1 ORDER BY id DESC LIMIT ?2",
    [STMT_DECISION_LAST_GANG] = "SELECT id, why, reason FROM decisions "
                                "WHERE gang = ?1 ORDER BY id DESC LIMIT 1",
    [STMT_DECISION_SET_REASON] = "UPDATE decisions SET reason = ?2, eta_ms = ?3, eta = ?4 "
                                 "WHERE id = ?1",
    /* the newest row of every gang (decisions_gang: one index seek per gang) */
    [STMT_DECISION_LATEST] = "SELECT id, cycle, ts_ms, gang, why, reason FROM decisions "
                             "WHERE id IN (SELECT MAX(id) FROM decisions GROUP BY gang) "
                             "ORDER BY gang",
    [STMT_PREEMPT_ADD] = "INSERT INTO preemptions(cycle, ts_ms, victim, preemptor, gpus, "
                         "lost_work_gpu_s, cost, kind, members) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [STMT_PREEMPT_LIST] = "SELECT cycle, ts_ms, victim, preemptor, gpus, lost_work_gpu_s, cost, "
                          "kind, members FROM preemptions ORDER BY id",
    [STMT_JOB_UPSERT] = JOB_UPSERT(JOB_ROW),
    [STMT_JOB_UPSERT_MANY] = JOB_UPSERT(STORE_ROWS_32(JOB_ROW)),
    [STMT_JOB_GET] = "SELECT gang, gang_id, queue, flavor, gpus, state, submit_ms, admit_ms, "
                     "start_ms, finish_ms, preemptions, restarts, user_name, ran_ms FROM jobs "
                     "WHERE gang = ?1",
    [STMT_JOB_LIST] = "SELECT gang, gang_id, queue, flavor, gpus, state, submit_ms, admit_ms, "
                      "start_ms, finish_ms, preemptions, restarts, user_name, ran_ms FROM jobs "
                      "ORDER BY gang",
    [STMT_PROMISE_RESERVE] = "UPDATE jobs SET reserve_first_ms = ?2 WHERE gang = ?1",
    [STMT_PROMISE_CLEAR] = "UPDATE jobs SET reserve_first_ms = NULL, probation_until_ms = NULL, "
                           "probation_for = NULL WHERE gang = ?1 AND (reserve_first_ms IS NOT "
                           "NULL OR probation_until_ms IS NOT NULL)",
    [STMT_PROMISE_PROBATION] =
        "UPDATE jobs SET probation_until_ms = ?2, probation_for = ?3 WHERE gang = ?1",
    [STMT_PROMISE_LIST] =
        "SELECT gang, state, reserve_first_ms, probation_until_ms, "
        "probation_for, submit_ms FROM jobs WHERE reserve_first_ms IS NOT NULL OR "
        "probation_until_ms IS NOT NULL ORDER BY gang",
    [STMT_RESTART_PUT] = "UPDATE jobs SET restart_ms = ?2 WHERE gang = ?1 AND state = 'running'",
    [STMT_RAN_PUT] = "UPDATE jobs SET ran_ms = ?2 WHERE gang = ?1",
    [STMT_RESTART_LIST] = "SELECT gang, restart_ms FROM jobs WHERE restart_ms IS NOT NULL AND "
                          "state = 'running' ORDER BY gang",
    [STMT_HIST_PUT] = "INSERT INTO fair_share(queue, share, updated_ms) VALUES (?1, ?2, ?3) "
                      "ON CONFLICT(queue) DO UPDATE SET share = excluded.share, "
                      "updated_ms = excluded.updated_ms",
    [STMT_HIST_GET] = "SELECT share, updated_ms FROM fair_share WHERE queue = ?1",
    [STMT_HIST_LIST] = "SELECT queue, share, updated_ms FROM fair_share ORDER BY queue",
    [STMT_ACTION_ADD] = "INSERT INTO operator_actions(ts_ms, kind, target, detail, actor) "
                        "VALUES (?1, ?2, ?3, ?4, ?5)",
    [STMT_ACTION_DONE] = "UPDATE operator_actions SET state = ?2, done_ms = ?3, note = ?4 "
                         "WHERE id = ?1 AND state = 'pending'",
    [STMT_ACTION_LIST] = "SELECT id, ts_ms, kind, target, detail, actor, state, done_ms, note "
                         "FROM operator_actions WHERE (?1 = 0 OR state = 'pending') ORDER BY id",
    /* the API's per-route reads (store/views_query.c) */
    [STMT_VIEW_NOW] = "SELECT max(coalesce((SELECT max(" JOB_LATEST ") FROM jobs), ?1), "
                      "coalesce((SELECT max(bound_ms) FROM placements), ?1), "
                      "coalesce((SELECT max(created_ms) FROM reservations), ?1), "
                      "coalesce((SELECT max(ts_ms) FROM preemptions), ?1), "
                      "coalesce((SELECT max(updated_ms) FROM fair_share), ?1), "
                      "coalesce((SELECT ts_ms FROM decisions ORDER BY id DESC LIMIT 1), ?1))",
    [STMT_VIEW_COUNTS] = "SELECT queue, state, n FROM job_counts WHERE n > 0",
    /* a queue's jobs in read order after the key (?3, ?4, ?5), of rank ?2 at most (2: pending,
     * admitted and running; 4: every state): an index range of jobs_list */
    [STMT_VIEW_JOBS] = "SELECT gang, gang_id, queue, flavor, gpus, state, submit_ms, admit_ms, "
                       "start_ms, finish_ms, preemptions, restarts, user_name FROM jobs "
                       "WHERE queue = ?1 AND state_rank <= ?2 AND "
                       "(state_rank, submit_ms, gang) > (?3, ?4, ?5) "
                       "ORDER BY state_rank, submit_ms, gang LIMIT ?6",
    /* a queue's jobs of one rank after the key */
    [STMT_VIEW_JOBS_LEFT] = "SELECT COUNT(*) FROM jobs WHERE queue = ?1 AND state_rank = ?2 "
                            "AND (submit_ms, gang) > (?3, ?4)",
    /* pending jobs of a queue ahead of (submit_ms, gang) */
    [STMT_VIEW_AHEAD] = "SELECT COUNT(*) FROM jobs WHERE queue = ?1 AND state_rank = 0 AND "
                        "(submit_ms, gang) < (?2, ?3)",
    [STMT_VIEW_RUNNING] = "SELECT flavor, COUNT(*) FROM jobs WHERE queue = ?1 AND state_rank"
                          " IN (1, 2) GROUP BY flavor ORDER BY flavor",
    [STMT_VIEW_LAST_DECISION] = "SELECT why, reason, ts_ms FROM decisions WHERE gang = ?1 "
                                "ORDER BY id DESC LIMIT 1",
    /* a gang's last whole preemption (it requeues, or its eviction waits), and its last of
     * members alone (an elastic gang runs on; they wait to rejoin it) */
    [STMT_VIEW_REQUEUE] = "SELECT max(CASE WHEN members IS NULL THEN ts_ms END), "
                          "max(CASE WHEN members IS NOT NULL THEN ts_ms END) FROM preemptions "
                          "WHERE victim = ?1",
    [STMT_VIEW_PLACEMENTS] = "SELECT gang, pod_index, pod, node, gpu_mask, bound_ms "
                             "FROM placements WHERE gang = ?1 ORDER BY pod_index",
    [STMT_VIEW_RESV] = "SELECT id, kind, gang, created_ms, expires_ms, expected_start_ms "
                       "FROM reservations WHERE id > ?1 AND (?2 IS NULL OR gang = ?2) "
                       "ORDER BY id LIMIT ?3",
    [STMT_VIEW_RESV_LEFT] = "SELECT COUNT(*) FROM reservations WHERE id > ?1",
    [STMT_VIEW_PREEMPTIONS] = "SELECT cycle, ts_ms, victim, preemptor, gpus, lost_work_gpu_s, "
                              "cost, kind, members FROM preemptions "
                              "WHERE victim = ?1 OR preemptor = ?1 ORDER BY id",
    /* store_verify */
    [STMT_CHECK_INTEGRITY] = "PRAGMA integrity_check(20)",
    [STMT_CHECK_FOREIGN] = "PRAGMA foreign_key_check",
    [STMT_CHECK_LEDGER] = "SELECT queue, flavor, SUM(l), SUM(j) FROM ("
                          "  SELECT queue, flavor, amount AS l, 0 AS j FROM ledger "
                          "  WHERE resource = ?1"
                          "     OR instr(',' || ?2 || ',', ',' || resource || ',') > 0"
                          "  UNION ALL"
                          "  SELECT queue, flavor, 0, gpus FROM jobs "
                          "  WHERE state IN ('admitted', 'running')"
                          ") GROUP BY queue, flavor HAVING SUM(l) <> SUM(j) "
                          "ORDER BY queue, flavor",
    [STMT_CHECK_RUNNING] = "SELECT j.gang, j.gpus, p.gpu_mask FROM jobs j "
                           "LEFT JOIN placements p ON p.gang = j.gang "
                           "WHERE j.state = 'running' ORDER BY j.gang, p.pod_index",
    [STMT_CHECK_ORPHANS] = "SELECT p.gang, COUNT(*), j.state FROM placements p "
                           "LEFT JOIN jobs j ON j.gang = p.gang "
                           "WHERE j.gang IS NULL OR j.state NOT IN ('admitted', 'running') "
                           "GROUP BY p.gang ORDER BY p.gang",
    [STMT_CHECK_NOTES] =
        "SELECT gang, state, typeof(reserve_first_ms), typeof(probation_until_ms), "
        "probation_for IS NULL, typeof(restart_ms), typeof(ran_ms), ran_ms < 0 FROM jobs "
        "WHERE typeof(reserve_first_ms) NOT IN ('null', 'integer') "
        "OR typeof(probation_until_ms) NOT IN ('null', 'integer') "
        "OR (probation_until_ms IS NOT NULL AND probation_for IS NULL) "
        "OR typeof(restart_ms) NOT IN ('null', 'integer') "
        "OR (restart_ms IS NOT NULL AND state NOT IN ('admitted', 'running')) "
        "OR typeof(ran_ms) NOT IN ('null', 'integer') OR ran_ms < 0 ORDER BY gang",
    [STMT_CHECK_STALE] = "SELECT gang, pod_index, seq, cycle FROM bind_journal "
                         "WHERE state = 'intent' AND seq < ?1 ORDER BY gang, pod_index",
};
