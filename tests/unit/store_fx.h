/* tests/unit/store_fx.h: the fixture and helpers of the store's unit tests (test_store.c,
 * test_store_files.c, test_store_views.c, test_store_preempt.c): one mkdtemp directory per test,
 * opens that must work or fail with a message, SQL run on the file with a plain connection (to
 * build or damage databases by hand), and rows written through the store (a job, a placed gang)
 * and its check read back as text. Include after cmocka.h, sqlite3.h and store/store.h. */
#ifndef TESTS_UNIT_STORE_FX_H
#define TESTS_UNIT_STORE_FX_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fx {
    char dir[64];
    char db[128];
};

static inline int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/gangsched-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->db, sizeof(f->db), "%s/state.db", f->dir);
    *state = f;
    return 0;
}

static inline int teardown(void **state)
{
    struct fx *f = *state;
    DIR *d = opendir(f->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[512];
            snprintf(p, sizeof(p), "%s/%s", f->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static inline struct store *open_ok(const char *path, unsigned flags, const struct store_opts *o)
{
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    int err = store_open(path, flags, o, &st, &eb);
    if (err)
        fail_msg("store_open %s: %d %s", path, err, eb.msg);
    return st;
}

/* Opens expecting `want`; returns the message. */
static inline void open_fails(const char *path, unsigned flags, int want, const char *needle,
                              const char *needle2)
{
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    int err = store_open(path, flags, NULL, &st, &eb);
    if (err != want)
        fail_msg("store_open %s: got %d (%s), want %d", path, err, eb.msg, want);
    assert_null(st);
    if (!strstr(eb.msg, path))
        fail_msg("message does not name the path: %s", eb.msg);
    if (needle && !strstr(eb.msg, needle))
        fail_msg("message lacks \"%s\": %s", needle, eb.msg);
    if (needle2 && !strstr(eb.msg, needle2))
        fail_msg("message lacks \"%s\": %s", needle2, eb.msg);
}

/* SQL that takes back what schema versions 9 and 10 added (a current database made older by
 * hand). */
#define V9_OFF                                                                                     \
    "DROP INDEX jobs_restarts; ALTER TABLE jobs DROP COLUMN restart_ms; "                          \
    "ALTER TABLE jobs DROP COLUMN ran_ms; "

/* Runs SQL on the file with a plain connection (to build or damage databases by hand). */
static inline void raw_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

static inline int64_t raw_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_close(db), SQLITE_OK);
    return v;
}

/* A job row of gang in queue: submitted at 1000 ms, gang id 7; admitted ones (and running) on
 * flavor default at 2000 ms, running ones started at 2500 ms. */
static inline struct store_job job(const char *gang, const char *queue, int64_t gpus,
                                   enum store_job_state state)
{
    struct store_job j = {
        gang,          7, queue, NULL, gpus, state, 1000, STORE_NO_TIME, STORE_NO_TIME,
        STORE_NO_TIME, 0, 0,     NULL, 0};
    if (state == STORE_JOB_ADMITTED || state == STORE_JOB_RUNNING) {
        j.flavor = "default";
        j.admit_ms = 2000;
    }
    if (state == STORE_JOB_RUNNING)
        j.start_ms = 2500;
    return j;
}

/* Places a whole gang: intent + bound for n pods of `per` GPUs each on node-<i>. */
static inline void place(struct store *st, const char *gang, uint32_t n, uint32_t per,
                         int64_t cycle)
{
    struct sched_errbuf eb = {{0}};
    struct store_pod pods[8];
    char names[8][48], nodes[8][32]; /* 48: a gang name of up to 45 bytes, "-" and the index */
    assert_true(n <= 8);
    for (uint32_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof(names[i]), "%s-%u", gang, i);
        snprintf(nodes[i], sizeof(nodes[i]), "node-%u", i);
        pods[i] = (struct store_pod){i, names[i], nodes[i], (1u << per) - 1};
    }
    if (store_journal_intent(st, gang, cycle, cycle * 10, pods, n, &eb))
        fail_msg("%s", eb.msg);
    uint32_t done = 0;
    if (store_journal_done(st, gang, STORE_ALL_PODS, STORE_BIND_BOUND, cycle * 10 + 1, &done, &eb))
        fail_msg("%s", eb.msg);
    assert_int_equal(done, n);
}

/* store_verify into a string. */
static inline int verify_text(struct store *st, char **text)
{
    size_t len = 0;
    FILE *m = open_memstream(text, &len);
    assert_non_null(m);
    struct sched_errbuf eb = {{0}};
    int r = store_verify(st, m, &eb);
    fclose(m);
    if (r < 0)
        fail_msg("store_verify: %s", eb.msg);
    return r;
}

#endif
