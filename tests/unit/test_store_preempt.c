/* tests/unit/test_store_preempt.c: the kind of each preemption in the store (schema version 5):
 * written and read back, shown in the explain document (gangctl explain, GET /v1/jobs/NS/NAME)
 * by both reads (store_views_load and the HTTP API's per-route read); an unknown or missing kind
 * refused with a message naming the victim; a version 4 database (made by hand from a current
 * one) migrated on open, its old rows without a kind; a version 4 database whose preemptions
 * table is damaged refused with a message naming the migration, its file left at version 4; a
 * running job preempted during its run (its eviction waits for a checkpoint handshake) shown as
 * checkpointing by both reads.
 *
 * Owns: one mkdtemp directory per test (removed in teardown). Must not touch anything else.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
// clang-format on

#include <sqlite3.h>

#include "sched/core/cycle.h"
#include "store/store.h"
#include "store/views.h"

#include "tests/unit/store_fx.h"

/* A pending job row for gang, so that explain finds it. */
static void add_job(struct store *st, const char *gang)
{
    struct store_job j = {
        gang,          1, "q", NULL, 8, STORE_JOB_PENDING, 1000, STORE_NO_TIME, STORE_NO_TIME,
        STORE_NO_TIME, 1, 0,   NULL, 0};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
}

static void add_preemption(struct store *st, int64_t ts, const char *victim, const char *by,
                           const char *kind)
{
    struct store_preemption p = {1, ts, victim, by, 8, 36.0, 1.0, kind, 0};
    struct sched_errbuf eb = {{0}};
    if (store_preemption_add(st, &p, &eb) != 0)
        fail_msg("store_preemption_add %s: %s", victim, eb.msg);
}

struct kinds {
    char kind[4][16];
    int n;
};

static int collect_kind(void *ctx, const struct store_preemption *p)
{
    struct kinds *k = ctx;
    if (k->n < 4)
        snprintf(k->kind[k->n++], sizeof(k->kind[0]), "%s", p->kind ? p->kind : "(null)");
    return 0;
}

/* The kinds of the explain document's preemptions of job, "-" where absent, comma-separated;
 * by the whole-table views (view = 1) or the per-route read (view = 0). */
static void explain_kinds(struct store *st, const char *job, bool view, char *buf, size_t n)
{
    struct sched_errbuf eb = {{0}};
    cJSON *doc = NULL;
    struct store_views *v = NULL;
    if (view) {
        assert_int_equal(store_views_load(st, &v, &eb), 0);
        assert_int_equal(store_view_explain(v, job, 0, &doc, &eb), 0);
    } else {
        struct store_read rq = {.route = STORE_READ_EXPLAIN, .job = job};
        if (store_read_doc(st, &rq, &doc, &eb) != 0)
            fail_msg("store_read_doc %s: %s", job, eb.msg);
    }
    buf[0] = '\0';
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(doc, "preemptions"))
    {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(p, "kind");
        size_t at = strlen(buf);
        snprintf(buf + at, n - at, "%s%s", at ? "," : "", cJSON_IsString(k) ? k->valuestring : "-");
    }
    cJSON_Delete(doc);
    store_views_free(v);
}

static void test_kind_round_trip(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    add_job(st, "ns/v");
    add_preemption(st, 10, "ns/v", "ns/big", "overdue");
    add_preemption(st, 20, "ns/v", "ns/prod", "reclaim");
    struct sched_errbuf eb = {{0}};
    struct kinds k = {0};
    assert_int_equal(store_preemption_list(st, collect_kind, &k, &eb), 0);
    assert_int_equal(k.n, 2);
    assert_string_equal(k.kind[0], "overdue");
    assert_string_equal(k.kind[1], "reclaim");
    char buf[128];
    explain_kinds(st, "ns/v", true, buf, sizeof(buf));
    assert_string_equal(buf, "overdue,reclaim");
    explain_kinds(st, "ns/v", false, buf, sizeof(buf));
    assert_string_equal(buf, "overdue,reclaim");

    /* a kind the core does not have, or none: refused, naming the victim; nothing written */
    struct store_preemption bad = {1, 30, "ns/w", "ns/big", 8, 0, 0, "eviction", 0};
    assert_int_equal(store_preemption_add(st, &bad, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "ns/w"));
    assert_non_null(strstr(eb.msg, "\"eviction\""));
    bad.kind = NULL;
    assert_int_equal(store_preemption_add(st, &bad, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "(none)"));
    store_close(st);
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM preemptions"), 2);
}

/* A current database turned into a version 4 one by hand: the kind column dropped, and what
 * version 6 added (the jobs' promise columns, test_store_promise.c). */
static void make_v4(const char *path)
{
    raw_sql(path,
            "DROP INDEX jobs_promises; ALTER TABLE jobs DROP COLUMN reserve_first_ms; "
            "ALTER TABLE jobs DROP COLUMN probation_until_ms; "
            "ALTER TABLE jobs DROP COLUMN probation_for; ALTER TABLE jobs DROP COLUMN user_name; "
            "ALTER TABLE preemptions DROP COLUMN kind; "
            "ALTER TABLE preemptions DROP COLUMN members; " V9_OFF "PRAGMA user_version = 4;");
    assert_int_equal(raw_int(path, "PRAGMA user_version"), 4);
}

static void test_migrate_v4(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    add_job(st, "ns/old");
    add_preemption(st, 10, "ns/old", "ns/big", "priority");
    store_close(st);
    make_v4(f->db);

    st = open_ok(f->db, STORE_CREATE, NULL); /* migrated on open */
    assert_int_equal(store_schema_version(st), STORE_SCHEMA_VERSION);
    char buf[128];
    explain_kinds(st, "ns/old", true, buf, sizeof(buf));
    assert_string_equal(buf, "-"); /* the old row: not recorded */
    add_preemption(st, 20, "ns/old", "ns/big", "fair_share");
    explain_kinds(st, "ns/old", false, buf, sizeof(buf));
    assert_string_equal(buf, "-,fair_share");
    store_close(st);
    assert_int_equal(raw_int(f->db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM preemptions WHERE kind IS NULL"), 1);
    /* version 8: the rows before it evicted whole gangs (members NULL) */
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM preemptions WHERE members IS NULL"), 2);
}

static void test_migrate_damaged(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    store_close(st);
    make_v4(f->db);
    /* damaged by another program: a version 4 database without its preemptions table */
    raw_sql(f->db, "DROP TABLE preemptions;");
    open_fails(f->db, 0, SCHED_EIO, "from version 4 to 5 (the kind of each preemption)",
               "no such table: preemptions");
    /* the migration's transaction rolled back: still version 4, nothing added */
    assert_int_equal(raw_int(f->db, "PRAGMA user_version"), 4);
    assert_int_equal(
        raw_int(f->db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'preemptions'"), 0);
}

/* The jobs document's field `key` (a string) of job (both reads must agree), or "-". */
static void job_field(struct store *st, const char *job, const char *key, char *buf, size_t n)
{
    struct sched_errbuf eb = {{0}};
    char got[2][64];
    for (int view = 0; view < 2; view++) {
        cJSON *doc = NULL;
        struct store_views *v = NULL;
        if (view) {
            assert_int_equal(store_views_load(st, &v, &eb), 0);
            assert_int_equal(store_view_jobs(v, NULL, true, &doc, &eb), 0);
        } else {
            struct store_read rq = {.route = STORE_READ_JOBS, .all = true};
            assert_int_equal(store_read_doc(st, &rq, &doc, &eb), 0);
        }
        snprintf(got[view], sizeof(got[view]), "-");
        const cJSON *j;
        cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(doc, "jobs"))
        {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "job");
            const cJSON *why = cJSON_GetObjectItemCaseSensitive(j, key);
            if (cJSON_IsString(name) && strcmp(name->valuestring, job) == 0 && cJSON_IsString(why))
                snprintf(got[view], sizeof(got[view]), "%s", why->valuestring);
        }
        cJSON_Delete(doc);
        store_views_free(v);
    }
    assert_string_equal(got[0], got[1]);
    snprintf(buf, n, "%s", got[0]);
}

static void job_why(struct store *st, const char *job, char *buf, size_t n)
{
    job_field(st, job, "why", buf, n);
}

/* A running job preempted during its run (a checkpoint handshake: the daemon keeps it running
 * until its eviction) says it is checkpointing; one preempted in an earlier run, or one that
 * lost members alone (elastic), does not. */
static void test_running_victim_checkpointing(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    struct store_job j = {"ns/v",        1, "q", "default", 8, STORE_JOB_RUNNING, 1000, 2000, 2000,
                          STORE_NO_TIME, 1, 0,   NULL,      0};
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    add_preemption(st, 1500, "ns/v", "ns/big", "priority"); /* before this run started */
    char buf[64];
    job_why(st, "ns/v", buf, sizeof(buf));
    assert_string_equal(buf, "-");
    /* members of an elastic gang taken alone during the run: it runs on, no eviction waits
     * (schema 8's members column; NULL on whole-gang rows) */
    struct store_preemption some = {1, 2400, "ns/v", "ns/big", 2, 20.0, 1.0, "priority", 1};
    assert_int_equal(store_preemption_add(st, &some, &eb), 0);
    job_why(st, "ns/v", buf, sizeof(buf));
    assert_string_equal(buf, "-");
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM preemptions WHERE members = 1"), 1);
    assert_int_equal(raw_int(f->db, "SELECT COUNT(*) FROM preemptions WHERE members IS NULL"), 1);
    some.members = -1; /* refused, naming what is required */
    assert_int_equal(store_preemption_add(st, &some, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "members >= 0"));
    add_preemption(st, 2500, "ns/v", "ns/big", "overdue"); /* during it */
    job_why(st, "ns/v", buf, sizeof(buf));
    assert_string_equal(buf, "checkpointing");
    /* evicted: pending again, its wait since that preemption */
    j.state = STORE_JOB_PENDING;
    j.flavor = NULL;
    j.admit_ms = j.start_ms = STORE_NO_TIME;
    j.preemptions = 2;
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    job_why(st, "ns/v", buf, sizeof(buf));
    assert_string_not_equal(buf, "checkpointing");
    store_close(st);
}

static void add_decision(struct store *st, int64_t ts, const char *gang, enum sched_why why,
                         const char *reason)
{
    struct store_decision d = {
        .cycle = 1, .ts_ms = ts, .gang = gang, .why = (int)why, .reason = reason};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_decision_add(st, &d, &eb), 0);
}

/* The pods of gang bound at ts, as a driver's bind journal writes them (placements). */
static void bind_pods(struct store *st, const char *gang, int64_t ts, uint32_t n)
{
    struct store_pod pods[4];
    for (uint32_t k = 0; k < n && k < 4; k++)
        pods[k] = (struct store_pod){.index = k, .name = "p", .node = "n1", .gpu_mask = 1u << k};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_journal_intent(st, gang, 1, ts, pods, n, &eb), 0);
    assert_int_equal(store_journal_done(st, gang, STORE_ALL_PODS, STORE_BIND_BOUND, ts, NULL, &eb),
                     0);
}

/* A running elastic gang whose members taken alone wait to rejoin it shows their verdict (the
 * newest decision, after that preemption) in both reads, since they began to wait; once they
 * joined (a "placed" row) nothing; members taken before a whole preemption do not count, nor
 * verdicts of a wait before this run (the simulator keeps the first start). */
static void test_running_members_waiting(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    struct store_job j = {"ns/e",        1, "q", "default", 6, STORE_JOB_RUNNING, 1000, 2000, 2000,
                          STORE_NO_TIME, 0, 0,   NULL,      0};
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    add_decision(st, 1500, "ns/e", SCHED_WHY_RESOURCES, "resources: before it started");
    add_decision(st, 2000, "ns/e", SCHED_WHY_PLACED, "placed");
    bind_pods(st, "ns/e", 2000, 3);
    char buf[128];
    job_why(st, "ns/e", buf, sizeof(buf));
    assert_string_equal(buf, "-");
    struct store_preemption some = {1, 2400, "ns/e", "ns/big", 2, 20.0, 1.0, "priority", 1};
    assert_int_equal(store_preemption_add(st, &some, &eb), 0);
    job_why(st, "ns/e", buf, sizeof(buf)); /* taken, no verdict yet: nothing said */
    assert_string_equal(buf, "-");
    add_decision(st, 2400, "ns/e", SCHED_WHY_QUOTA, "quota: 1 pod(s)");
    job_why(st, "ns/e", buf, sizeof(buf));
    assert_string_equal(buf, "quota");
    job_field(st, "ns/e", "reason", buf, sizeof(buf));
    assert_string_equal(buf, "members waiting to rejoin: quota: 1 pod(s)");
    add_decision(st, 3000, "ns/e", SCHED_WHY_PLACED, "placed"); /* they joined */
    job_why(st, "ns/e", buf, sizeof(buf));
    assert_string_equal(buf, "-");
    /* taken again, then the whole gang preempted and started again (the simulator's row keeps
     * the first start): the verdicts of its wait are not its members' */
    some.ts_ms = 3500;
    assert_int_equal(store_preemption_add(st, &some, &eb), 0);
    add_decision(st, 3500, "ns/e", SCHED_WHY_RESOURCES, "resources: 1 pod(s)");
    job_why(st, "ns/e", buf, sizeof(buf));
    assert_string_equal(buf, "resources");
    add_preemption(st, 3600, "ns/e", "ns/big", "priority");
    job_why(st, "ns/e", buf, sizeof(buf)); /* its eviction waits for its checkpoint */
    assert_string_equal(buf, "checkpointing");
    struct sched_errbuf eb2 = {{0}};
    assert_int_equal(store_placement_release(st, "ns/e", NULL, &eb2), 0); /* evicted */
    add_decision(st, 3700, "ns/e", SCHED_WHY_QUOTA, "quota: the whole gang");
    bind_pods(st, "ns/e", 3800, 4);        /* started again */
    job_why(st, "ns/e", buf, sizeof(buf)); /* running again: nothing waits, nothing evicts */
    assert_string_equal(buf, "-");
    store_close(st);
}

/* New members of a running gang that scale it up wait to join it: their verdict after this
 * run began (its placed pods say when) is its reason, "members waiting to join", until they
 * join; a job whose run has no placed pods (its start unknown) says nothing. */
static void test_running_scale_up_waiting(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    struct store_job j = {"ns/s",        1, "q", "default", 2, STORE_JOB_RUNNING, 1000, 2000, 2000,
                          STORE_NO_TIME, 0, 0,   NULL,      0};
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    j.gang = "ns/u"; /* no placed pods */
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    add_decision(st, 2000, "ns/s", SCHED_WHY_PLACED, "placed");
    bind_pods(st, "ns/s", 2000, 2);
    add_decision(st, 2500, "ns/s", SCHED_WHY_RESOURCES, "resources: 1 pod(s)");
    add_decision(st, 2500, "ns/u", SCHED_WHY_RESOURCES, "resources: 1 pod(s)");
    char buf[128];
    job_why(st, "ns/s", buf, sizeof(buf));
    assert_string_equal(buf, "resources");
    job_field(st, "ns/s", "reason", buf, sizeof(buf));
    assert_string_equal(buf, "members waiting to join: resources: 1 pod(s)");
    job_why(st, "ns/u", buf, sizeof(buf));
    assert_string_equal(buf, "-");
    add_decision(st, 2600, "ns/s", SCHED_WHY_PLACED, "placed"); /* they joined */
    job_why(st, "ns/s", buf, sizeof(buf));
    assert_string_equal(buf, "-");
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kind_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v4, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_running_victim_checkpointing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_running_members_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_running_scale_up_waiting, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
