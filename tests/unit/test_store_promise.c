/* tests/unit/test_store_promise.c: the columns added to the store's job rows after version 5:
 * backfill promises (schema version 6):
 * written and listed; kept while a row stays in its wait (pending) or its run (admitted, then
 * running) and dropped by an upsert that takes it out (placed, evicted, finished); a write for a
 * gang without a row writes nothing; a version 5 database (made by hand from a current one)
 * migrated in place on open, its rows without promises, and accepted by `gangsched store check`
 * (store_check) before and after a promise is written; the user of a job (version 7): kept by a
 * write without one for the same gang, replaced for another gang under the name, NULL in rows
 * migrated from version 6.
 *
 * Owns: one mkdtemp directory per test (removed in teardown). Must not touch anything else.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"

/* SQL that takes back what schema versions 9 and 10 added (as tests/unit/store_fx.h says it). */
#define V9_OFF                                                                                     \
    "DROP INDEX jobs_restarts; ALTER TABLE jobs DROP COLUMN restart_ms; "                          \
    "ALTER TABLE jobs DROP COLUMN ran_ms; "

struct fx {
    char dir[64];
    char db[128];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/gangsched-storeprom-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof(f->db), "%s/state.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
        char p[160];
        snprintf(p, sizeof(p), "%s%s", f->db, suffix[i]);
        unlink(p);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static struct store *open_ok(const char *path)
{
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    if (store_open(path, STORE_CREATE, NULL, &st, &eb) != 0)
        fail_msg("store_open %s: %s", path, eb.msg);
    return st;
}

static void raw_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

static void job(struct store *st, const char *gang, enum store_job_state s)
{
    bool placed = s == STORE_JOB_ADMITTED || s == STORE_JOB_RUNNING;
    struct store_job j = {.gang = gang,
                          .gang_id = -1,
                          .queue = "q",
                          .flavor = placed ? "default" : NULL,
                          .gpus = 0, /* no ledger or placements needed for store check */
                          .state = s,
                          .submit_ms = 1000,
                          .admit_ms = placed ? 2000 : STORE_NO_TIME,
                          .start_ms = s == STORE_JOB_RUNNING ? 3000 : STORE_NO_TIME,
                          .finish_ms = s == STORE_JOB_FINISHED ? 4000 : STORE_NO_TIME};
    struct sched_errbuf eb = {{0}};
    if (store_job_upsert(st, &j, &eb) != 0)
        fail_msg("store_job_upsert %s: %s", gang, eb.msg);
}

/* The promises as "gang:first:until:to;" in gang order (first and until -1 for none). */
static int collect(void *ctx, const struct store_promise *p)
{
    char *buf = ctx;
    size_t at = strlen(buf);
    snprintf(buf + at, 512 - at, "%s:%lld:%lld:%s;", p->gang,
             p->reserve_first_ms == STORE_NO_TIME ? -1LL : (long long)p->reserve_first_ms,
             p->probation_until_ms == STORE_NO_TIME ? -1LL : (long long)p->probation_until_ms,
             p->probation_for ? p->probation_for : "-");
    return 0;
}

static const char *promises(struct store *st, char *buf)
{
    struct sched_errbuf eb = {{0}};
    buf[0] = '\0';
    if (store_promise_list(st, collect, buf, &eb) != 0)
        fail_msg("store_promise_list: %s", eb.msg);
    return buf;
}

static void put_ok(int rc, const struct sched_errbuf *eb)
{
    if (rc != 0)
        fail_msg("promise write: %s", eb->msg);
}

static void test_kept_by_wait_and_run(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db);
    struct sched_errbuf eb = {{0}};
    char buf[512];
    job(st, "ns/big", STORE_JOB_PENDING);
    job(st, "ns/small", STORE_JOB_ADMITTED);
    put_ok(store_job_reserve_put(st, "ns/big", 9000, &eb), &eb);
    put_ok(store_job_probation_put(st, "ns/small", 9000, "ns/big", &eb), &eb);
    put_ok(store_job_reserve_put(st, "ns/nobody", 9000, &eb), &eb); /* no row: nothing */
    assert_string_equal(promises(st, buf), "ns/big:9000:-1:-;ns/small:-1:9000:ns/big;");
    /* still waiting, still in its run (bound): kept */
    job(st, "ns/big", STORE_JOB_PENDING);
    job(st, "ns/small", STORE_JOB_RUNNING);
    assert_string_equal(promises(st, buf), "ns/big:9000:-1:-;ns/small:-1:9000:ns/big;");
    /* big placed, small evicted (pending again): both dropped */
    job(st, "ns/big", STORE_JOB_ADMITTED);
    job(st, "ns/small", STORE_JOB_PENDING);
    assert_string_equal(promises(st, buf), "");
    /* a promise of a run that finishes, and one cleared by hand */
    put_ok(store_job_probation_put(st, "ns/big", 12000, "ns/other", &eb), &eb);
    put_ok(store_job_reserve_put(st, "ns/small", 11000, &eb), &eb);
    assert_string_equal(promises(st, buf), "ns/big:-1:12000:ns/other;ns/small:11000:-1:-;");
    job(st, "ns/big", STORE_JOB_FINISHED);
    put_ok(store_job_reserve_put(st, "ns/small", STORE_NO_TIME, &eb), &eb);
    assert_string_equal(promises(st, buf), "");
    /* a probation without the gang it was made to is none */
    job(st, "ns/c", STORE_JOB_RUNNING);
    put_ok(store_job_probation_put(st, "ns/c", 12000, NULL, &eb), &eb);
    assert_string_equal(promises(st, buf), "");
    /* a gang forgotten or renewed: both dropped at once; a row with none and a gang without a
     * row are no error */
    job(st, "ns/d", STORE_JOB_RUNNING);
    job(st, "ns/e", STORE_JOB_PENDING);
    put_ok(store_job_probation_put(st, "ns/d", 13000, "ns/e", &eb), &eb);
    put_ok(store_job_reserve_put(st, "ns/e", 13000, &eb), &eb);
    assert_string_equal(promises(st, buf), "ns/d:-1:13000:ns/e;ns/e:13000:-1:-;");
    put_ok(store_job_promises_clear(st, "ns/d", &eb), &eb);
    assert_string_equal(promises(st, buf), "ns/e:13000:-1:-;");
    put_ok(store_job_promises_clear(st, "ns/e", &eb), &eb);
    put_ok(store_job_promises_clear(st, "ns/c", &eb), &eb);
    put_ok(store_job_promises_clear(st, "ns/nobody", &eb), &eb);
    assert_string_equal(promises(st, buf), "");
    store_close(st);
}

/* A current database turned into a version 5 one by hand: the promise columns dropped. */
static void make_v5(const char *path)
{
    raw_sql(path,
            "DROP INDEX jobs_promises; ALTER TABLE jobs DROP COLUMN reserve_first_ms; "
            "ALTER TABLE jobs DROP COLUMN probation_until_ms; "
            "ALTER TABLE jobs DROP COLUMN probation_for; "
            "ALTER TABLE jobs DROP COLUMN user_name; "
            "ALTER TABLE preemptions DROP COLUMN members; " V9_OFF "PRAGMA user_version = 5;");
}

/* The user of gang's row, "-" for NULL. */
static const char *user_of(struct store *st, const char *gang)
{
    struct store_job j;
    struct sched_errbuf eb = {{0}};
    if (store_job_get(st, gang, &j, &eb) != 0)
        fail_msg("store_job_get %s: %s", gang, eb.msg);
    return j.user ? j.user : "-";
}

static void test_job_user(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db);
    job(st, "ns/old", STORE_JOB_PENDING);
    store_close(st);
    raw_sql(f->db,
            "ALTER TABLE jobs DROP COLUMN user_name; "
            "ALTER TABLE preemptions DROP COLUMN members; " V9_OFF "PRAGMA user_version = 6;");
    st = open_ok(f->db); /* migrated on open */
    assert_int_equal(store_schema_version(st), STORE_SCHEMA_VERSION);
    assert_string_equal(user_of(st, "ns/old"), "-");
    struct sched_errbuf eb = {{0}};
    struct store_job j = {.gang = "ns/a",
                          .gang_id = -1,
                          .queue = "q",
                          .state = STORE_JOB_PENDING,
                          .submit_ms = 1000,
                          .admit_ms = STORE_NO_TIME,
                          .start_ms = STORE_NO_TIME,
                          .finish_ms = STORE_NO_TIME,
                          .user = "alice"};
    put_ok(store_job_upsert(st, &j, &eb), &eb);
    assert_string_equal(user_of(st, "ns/a"), "alice");
    j.user = NULL; /* a later write of the same gang that does not know it: kept */
    j.state = STORE_JOB_FINISHED;
    j.finish_ms = 5000;
    put_ok(store_job_upsert(st, &j, &eb), &eb);
    assert_string_equal(user_of(st, "ns/a"), "alice");
    struct store_job many[2] = {j, j}; /* the batched statement binds it too */
    many[1].gang = "ns/b";
    many[1].user = "bob";
    put_ok(store_job_upsert_many(st, many, 2, &eb), &eb);
    assert_string_equal(user_of(st, "ns/a"), "alice");
    assert_string_equal(user_of(st, "ns/b"), "bob");
    j.submit_ms = 9000; /* another gang under the name (submitted again): not alice's */
    j.state = STORE_JOB_PENDING;
    j.finish_ms = STORE_NO_TIME;
    put_ok(store_job_upsert(st, &j, &eb), &eb);
    assert_string_equal(user_of(st, "ns/a"), "-");
    store_close(st);
}

static void test_migrate_v5(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db);
    job(st, "ns/old", STORE_JOB_PENDING);
    job(st, "ns/run", STORE_JOB_ADMITTED); /* admitted: store check needs no placed pods */
    store_close(st);
    make_v5(f->db);
    FILE *out = tmpfile();
    assert_non_null(out);
    st = open_ok(f->db); /* migrated on open */
    assert_int_equal(store_schema_version(st), STORE_SCHEMA_VERSION);
    char buf[512];
    assert_string_equal(promises(st, buf), ""); /* the old rows: none */
    struct sched_errbuf eb = {{0}};
    put_ok(store_job_reserve_put(st, "ns/old", 5000, &eb), &eb);
    put_ok(store_job_probation_put(st, "ns/run", 5000, "ns/old", &eb), &eb);
    assert_string_equal(promises(st, buf), "ns/old:5000:-1:-;ns/run:-1:5000:ns/old;");
    store_close(st);
    int rc = store_check(f->db, out); /* gangsched store check accepts it */
    if (rc != 0) {
        char line[400];
        rewind(out);
        while (fgets(line, sizeof(line), out))
            print_message("store check: %s", line);
    }
    assert_int_equal(rc, 0);
    fclose(out);
}

/* The restarts as "gang:ms;" in gang order. */
static int collect_restart(void *ctx, const char *gang, int64_t ms)
{
    char *buf = ctx;
    size_t at = strlen(buf);
    snprintf(buf + at, 512 - at, "%s:%lld;", gang, (long long)ms);
    return 0;
}

static const char *restarts(struct store *st, char *buf)
{
    struct sched_errbuf eb = {{0}};
    buf[0] = '\0';
    if (store_restart_list(st, collect_restart, buf, &eb) != 0)
        fail_msg("store_restart_list: %s", eb.msg);
    return buf;
}

/* A running gang's in-place restart (schema version 9) is noted on its row, kept while the row
 * stays in the same run (its members leaving rewrite it running), dropped when it leaves the
 * run (evicted whole, finished) or the name is another gang's; only running rows take one; a
 * damaged value is a bad row, named. */
static void test_restart_kept_by_run(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db);
    struct sched_errbuf eb = {{0}};
    char buf[512];
    job(st, "ns/r", STORE_JOB_RUNNING);
    job(st, "ns/s", STORE_JOB_RUNNING);
    job(st, "ns/p", STORE_JOB_PENDING);
    put_ok(store_job_restart_put(st, "ns/r", 5000, &eb), &eb);
    put_ok(store_job_restart_put(st, "ns/s", 6000, &eb), &eb);
    put_ok(store_job_restart_put(st, "ns/p", 7000, &eb), &eb); /* not running: left alone */
    put_ok(store_job_restart_put(st, "ns/nobody", 7000, &eb), &eb);
    assert_string_equal(restarts(st, buf), "ns/r:5000;ns/s:6000;");
    put_ok(store_job_restart_put(st, "ns/r", 5500, &eb), &eb); /* a later restart */
    job(st, "ns/r", STORE_JOB_RUNNING);                        /* rewritten in its run */
    assert_string_equal(restarts(st, buf), "ns/r:5500;ns/s:6000;");
    job(st, "ns/s", STORE_JOB_PENDING); /* evicted whole */
    job(st, "ns/s", STORE_JOB_RUNNING); /* and started again: a new run */
    assert_string_equal(restarts(st, buf), "ns/r:5500;");
    assert_int_equal(store_job_restart_put(st, NULL, 1, &eb), SCHED_EINVAL);
    store_close(st);
    raw_sql(f->db, "UPDATE jobs SET restart_ms = 'soon' WHERE gang = 'ns/r'");
    st = open_ok(f->db);
    assert_int_not_equal(store_restart_list(st, collect_restart, buf, &eb), 0);
    assert_non_null(strstr(eb.msg, "ns/r"));
    store_close(st);
}

/* gang's ran_ms as the store reads it back (0: none). */
static int64_t ran(struct store *st, const char *gang)
{
    struct store_job j;
    struct sched_errbuf eb = {{0}};
    if (store_job_get(st, gang, &j, &eb) != 0)
        fail_msg("store_job_get %s: %s", gang, eb.msg);
    return j.ran_ms;
}

/* The time a submission held its GPUs in earlier runs (schema version 10) is kept by every
 * rewrite of the same submission, whatever its state (evicted, started again, finished), and
 * dropped when the name is another submission's; a gang without a row takes none, a negative
 * time is refused, and a damaged value is a bad row, named. */
static void test_ran_kept_by_submission(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db);
    struct sched_errbuf eb = {{0}};
    job(st, "ns/r", STORE_JOB_RUNNING);
    assert_int_equal(ran(st, "ns/r"), 0);
    job(st, "ns/r", STORE_JOB_PENDING); /* evicted: the driver adds the run it ended */
    put_ok(store_job_ran_put(st, "ns/r", 7000, &eb), &eb);
    put_ok(store_job_ran_put(st, "ns/nobody", 7000, &eb), &eb);
    job(st, "ns/r", STORE_JOB_ADMITTED);
    job(st, "ns/r", STORE_JOB_RUNNING);
    job(st, "ns/r", STORE_JOB_FINISHED);
    assert_int_equal(ran(st, "ns/r"), 7000);
    struct store_job j;
    assert_int_equal(store_job_get(st, "ns/r", &j, &eb), 0);
    j.gang = "ns/r"; /* strings are lent until the next call */
    j.queue = "q";
    j.user = NULL;
    j.state = STORE_JOB_PENDING;
    j.finish_ms = STORE_NO_TIME;
    j.submit_ms = 9000; /* another object under the name */
    put_ok(store_job_upsert(st, &j, &eb), &eb);
    assert_int_equal(ran(st, "ns/r"), 0);
    assert_int_equal(store_job_ran_put(st, "ns/r", -1, &eb), SCHED_EINVAL);
    assert_int_equal(store_job_ran_put(st, NULL, 1, &eb), SCHED_EINVAL);
    store_close(st);
    raw_sql(f->db, "UPDATE jobs SET ran_ms = 'long' WHERE gang = 'ns/r'");
    st = open_ok(f->db);
    assert_int_not_equal(store_job_get(st, "ns/r", &j, &eb), 0);
    assert_non_null(strstr(eb.msg, "ns/r"));
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kept_by_wait_and_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_v5, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_kept_by_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ran_kept_by_submission, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
