/* tests/unit/test_store_files.c: the store's database file from outside: a missing file (nothing
 * created, an empty file, a directory, a missing parent), migrations (a hand-made v0 database, a
 * too-new one, a foreign one), corrupt and truncated files (refused, bytes untouched), read-only
 * files (really unwritable: as root the check runs in a child that drops to uid 65534), a full
 * disk (a size cap) and a second writer locked out. The rows themselves: test_store.c.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "sched/core/cycle.h"
#include "store/store.h"

#include "tests/unit/store_fx.h"

/* ---- helpers ------------------------------------------------------------------------------- */

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *len = (size_t)n;
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, n, fp), n);
    fclose(fp);
}

static void same_bytes(const unsigned char *a, size_t na, const char *path)
{
    size_t nb;
    unsigned char *b = slurp(path, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    free(b);
}

static void test_missing_file(void **state)
{
    struct fx *f = *state;
    open_fails(f->db, 0, SCHED_ENOENT, "does not exist", NULL);
    open_fails(f->db, STORE_READONLY, SCHED_ENOENT, "does not exist", NULL);
    struct stat sb;
    assert_int_equal(stat(f->db, &sb), -1); /* nothing created */
    /* an empty file is not a store either, unless creating */
    spit(f->db, (const unsigned char *)"", 0);
    open_fails(f->db, 0, SCHED_ENOENT, "empty", NULL);
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    store_close(st);
    /* a directory in place of the file */
    open_fails(f->dir, 0, SCHED_EIO, "not a regular file", NULL);
    /* a missing directory */
    char deep[200];
    snprintf(deep, sizeof(deep), "%s/no/such/dir.db", f->dir);
    open_fails(deep, STORE_CREATE, SCHED_EIO, "cannot open", NULL);
    /* bad flags */
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(f->db, STORE_READONLY | STORE_CREATE, NULL, &st, &eb),
                     SCHED_EINVAL);
}

/* ---- migrations ---------------------------------------------------------------------------- */

static void test_migrate_v0(void **state)
{
    struct fx *f = *state;
    /* v0 by hand: a valid, empty SQLite database (user_version 0, no tables) */
    raw_sql(f->db, "PRAGMA user_version = 0; CREATE TABLE t(x); DROP TABLE t;");
    assert_int_equal(raw_int(f->db, "PRAGMA user_version"), 0);
    /* a reader cannot migrate */
    open_fails(f->db, STORE_READONLY, SCHED_EIO, "needs migrating", NULL);
    struct store *st = open_ok(f->db, 0, NULL);
    assert_int_equal(store_schema_version(st), STORE_SCHEMA_VERSION);
    struct sched_errbuf eb = {{0}};
    const char *v = NULL;
    assert_int_equal(store_meta_get(st, "created_at", &v, &eb), 0);
    struct store_job j = job("g", "q", 1, STORE_JOB_PENDING);
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
    store_close(st);
    assert_int_equal(raw_int(f->db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
    /* and now a reader opens it */
    st = open_ok(f->db, STORE_READONLY, NULL);
    store_close(st);
}

static void test_newer_version_refused(void **state)
{
    struct fx *f = *state;
    struct store *st = open_ok(f->db, STORE_CREATE, NULL);
    store_close(st);
    raw_sql(f->db, "PRAGMA user_version = 999;");
    size_t n;
    unsigned char *before = slurp(f->db, &n);
    char knows[64];
    snprintf(knows, sizeof(knows), "newer than this binary knows (%d)", STORE_SCHEMA_VERSION);
    open_fails(f->db, 0, SCHED_EIO, "schema version 999", knows);
    open_fails(f->db, STORE_READONLY, SCHED_EIO, "schema version 999", NULL);
    same_bytes(before, n, f->db);
    free(before);
}

static void test_foreign_database_refused(void **state)
{
    struct fx *f = *state;
    /* someone else's SQLite file: user_version 0 with tables */
    raw_sql(f->db, "CREATE TABLE jobs(x); INSERT INTO jobs VALUES (42);");
    size_t n;
    unsigned char *before = slurp(f->db, &n);
    open_fails(f->db, STORE_CREATE, SCHED_EIO, "not a gangsched store", NULL);
    same_bytes(before, n, f->db);
    free(before);
    /* versioned, but another application's */
    raw_sql(f->db, "PRAGMA user_version = 1; PRAGMA application_id = 7;");
    before = slurp(f->db, &n);
    open_fails(f->db, 0, SCHED_EIO, "not a gangsched store", "application_id");
    same_bytes(before, n, f->db);
    free(before);
}

/* ---- corrupt files -------------------------------------------------------------------------- */

static void test_corrupt_garbage(void **state)
{
    struct fx *f = *state;
    unsigned char junk[8192];
    srand(7);
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)rand();
    spit(f->db, junk, sizeof(junk));
    open_fails(f->db, 0, SCHED_EIO, "corrupt database", "file is not a database");
    open_fails(f->db, STORE_CREATE, SCHED_EIO, "--rebuild-store", NULL);
    open_fails(f->db, STORE_READONLY, SCHED_EIO, "corrupt database", NULL);
    same_bytes(junk, sizeof(junk), f->db);
    /* an SQLite header on garbage gets past the probe, then SQLite itself refuses */
    memcpy(junk, "SQLite format 3", 16);
    spit(f->db, junk, sizeof(junk));
    open_fails(f->db, 0, SCHED_EIO, "corrupt database", NULL);
    same_bytes(junk, sizeof(junk), f->db);
    /* a store's store check says so too, with exit code 2 */
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(store_check_main(f->db, devnull), 2);
    fclose(devnull);
}

/* A real store with enough rows for several pages per table. */
static void fill(const char *path)
{
    struct store *st = open_ok(path, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_begin(st, &eb), 0);
    for (int i = 0; i < 400; i++) {
        char gang[32], reason[128];
        snprintf(gang, sizeof(gang), "ns/job-%04d", i);
        snprintf(reason, sizeof(reason), "needs %d nvidia.com/gpu per pod; 0/64 nodes fit", i);
        struct store_job j = job(gang, "q", i % 9, STORE_JOB_PENDING);
        assert_int_equal(store_job_upsert(st, &j, &eb), 0);
        struct store_decision d = {0, i / 10, i, gang, SCHED_WHY_RESOURCES, reason, false, 0, NULL};
        assert_int_equal(store_decision_add(st, &d, &eb), 0);
    }
    assert_int_equal(store_commit(st, &eb), 0);
    store_close(st); /* checkpoints: everything is in the main file */
}

static void test_corrupt_pages(void **state)
{
    struct fx *f = *state;
    fill(f->db);
    size_t n;
    unsigned char *b = slurp(f->db, &n);
    assert_true(n >= 8 * 4096);
    /* damage: overwrite the middle of the file (b-tree pages) with a pattern */
    for (size_t i = n / 2 - 4096; i < n / 2 + 4096; i++)
        b[i] = 0x5a;
    /* and a b-tree page header of page 3 */
    memset(b + 2 * 4096, 0xff, 16);
    spit(f->db, b, n);
    open_fails(f->db, 0, SCHED_EIO, "corrupt database", "(use --rebuild-store)");
    open_fails(f->db, STORE_READONLY, SCHED_EIO, "corrupt database", NULL);
    /* STORE_CHECKED (a pool's second reader of a file already checked) skips quick_check */
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    if (store_open(f->db, STORE_READONLY | STORE_CHECKED, NULL, &st, &eb) == 0)
        store_close(st);
    else
        assert_null(strstr(eb.msg, "quick_check"));
    open_fails(f->db, STORE_CHECKED, SCHED_EINVAL, "STORE_CHECKED needs STORE_READONLY", NULL);
    same_bytes(b, n, f->db);
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(store_check_main(f->db, devnull), 2);
    fclose(devnull);
    same_bytes(b, n, f->db);
    free(b);
}

static void test_truncated(void **state)
{
    struct fx *f = *state;
    fill(f->db);
    size_t n;
    unsigned char *b = slurp(f->db, &n);
    size_t cut = n / 3 + 100; /* mid-page */
    spit(f->db, b, cut);
    open_fails(f->db, 0, SCHED_EIO, "corrupt database", NULL);
    same_bytes(b, cut, f->db);
    free(b);
}

/* ---- read-only ------------------------------------------------------------------------------ */

/* The checks of a database whose file this process cannot write. Returns 0, or the line of the
 * first failed check (run in a child: no cmocka asserts there). */
static int unwritable_checks(const char *path)
{
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    if (store_open(path, 0, NULL, &st, &eb) != SCHED_EIO || st)
        return __LINE__;
    if (!strstr(eb.msg, "database is read-only") || !strstr(eb.msg, path))
        return __LINE__;
    if (store_open(path, STORE_READONLY, NULL, &st, &eb) != 0) {
        fprintf(stderr, "read-only open: %s\n", eb.msg);
        return __LINE__;
    }
    struct store_job j;
    int r = 0;
    if (store_job_get(st, "ns/job-0001", &j, &eb) != 0 || j.gpus != 1)
        r = __LINE__;
    else if (store_meta_put(st, "k", "v", &eb) != SCHED_EIO ||
             !strstr(eb.msg, "database is read-only"))
        r = __LINE__;
    store_close(st);
    return r;
}

static void test_readonly_file(void **state)
{
    struct fx *f = *state;
    fill(f->db);
    assert_int_equal(chmod(f->db, 0444), 0);
    if (geteuid() != 0) {
        assert_int_equal(unwritable_checks(f->db), 0);
        return;
    }
    /* root writes any file whatever its mode: check as an unprivileged user instead, who can
     * read the directory but not write it or the file (so SQLite cannot create PATH-shm
     * either: the read-only open must work without it). */
    assert_int_equal(chmod(f->dir, 0755), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(77);
        _exit(unwritable_checks(f->db) ? 1 : 0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        skip(); /* no permission to drop privileges in this container */
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_readonly_open(void **state)
{
    struct fx *f = *state;
    fill(f->db);
    size_t n;
    unsigned char *before = slurp(f->db, &n);
    struct store *st = open_ok(f->db, STORE_READONLY, NULL);
    struct sched_errbuf eb = {{0}};
    struct store_job j;
    assert_int_equal(store_job_get(st, "ns/job-0003", &j, &eb), 0);
    assert_int_equal(j.gpus, 3);
    assert_int_equal(store_ledger_add(st, "q", "default", STORE_GPU, 1, &eb), SCHED_EIO);
    assert_non_null(strstr(eb.msg, "database is read-only"));
    assert_non_null(strstr(eb.msg, f->db));
    assert_int_equal(store_begin(st, &eb), SCHED_EIO);
    assert_non_null(strstr(eb.msg, "read-only"));
    /* still usable for reading */
    assert_int_equal(store_job_get(st, "ns/job-0004", &j, &eb), 0);
    char *text = NULL;
    assert_int_equal(verify_text(st, &text), 0);
    free(text);
    store_close(st);
    same_bytes(before, n, f->db);
    free(before);
}

/* ---- full disk ------------------------------------------------------------------------------ */

static void test_full_disk(void **state)
{
    struct fx *f = *state;
    fill(f->db);
    struct stat sb;
    assert_int_equal(stat(f->db, &sb), 0);
    struct store_opts o;
    store_opts_default(&o);
    o.max_bytes = sb.st_size + 4 * 4096; /* four pages of room */
    struct store *st = open_ok(f->db, 0, &o);
    struct sched_errbuf eb = {{0}};
    int64_t before = 0;
    assert_int_equal(store_decision_count(st, &before, &eb), 0);

    /* a cycle that does not fit */
    assert_int_equal(store_begin(st, &eb), 0);
    char reason[512];
    memset(reason, 'x', sizeof(reason) - 1);
    reason[sizeof(reason) - 1] = '\0';
    int err = 0;
    for (int i = 0; i < 1000 && !err; i++) {
        char gang[32]; /* one gang per row: the log keeps one row per gang and verdict */
        snprintf(gang, sizeof(gang), "ns/full-%d", i);
        struct store_decision d = {0, 100, i, gang, SCHED_WHY_RESOURCES, reason, false, 0, NULL};
        err = store_decision_add(st, &d, &eb);
    }
    assert_int_equal(err, SCHED_EFULL);
    assert_non_null(strstr(eb.msg, "disk full writing DB"));
    assert_non_null(strstr(eb.msg, f->db));
    /* the transaction is gone: further writes refuse until rollback, commit reports it */
    assert_int_equal(store_meta_put(st, "k", "v", &eb), SCHED_EIO);
    assert_non_null(strstr(eb.msg, "store_rollback"));
    assert_int_equal(store_commit(st, &eb), SCHED_EIO);
    assert_non_null(strstr(eb.msg, "nothing committed"));
    store_rollback(st);

    /* the store still works: small writes fit, big ones outside a transaction fail cleanly */
    assert_int_equal(store_meta_put(st, "after", "full", &eb), 0);
    assert_int_equal(store_begin(st, &eb), 0);
    assert_int_equal(store_ledger_add(st, "q", "default", STORE_GPU, 0, &eb), 0);
    assert_int_equal(store_commit(st, &eb), 0);
    struct store_decision many[200];
    static char many_gang[200][32];
    for (int i = 0; i < 200; i++) {
        snprintf(many_gang[i], sizeof(many_gang[i]), "ns/many-%d", i);
        many[i] = (struct store_decision){0,      101,   i, many_gang[i], SCHED_WHY_RESOURCES,
                                          reason, false, 0, NULL};
    }
    assert_int_equal(store_decision_add_many(st, many, 200, &eb), SCHED_EFULL);
    assert_false(store_in_txn(st));
    int64_t after = 0;
    assert_int_equal(store_decision_count(st, &after, &eb), 0);
    assert_int_equal(after, before); /* nothing of the failed cycles persisted */
    char *text = NULL;
    assert_int_equal(verify_text(st, &text), 0);
    free(text);
    store_close(st);

    st = open_ok(f->db, 0, NULL);
    const char *v = NULL;
    assert_int_equal(store_meta_get(st, "after", &v, &eb), 0);
    assert_string_equal(v, "full");
    assert_int_equal(store_decision_count(st, &after, &eb), 0);
    assert_int_equal(after, before);
    store_close(st);
}

/* Only the leader writes: a second writer waits for the lock, then gets a clear error. */
static void test_second_writer_locked(void **state)
{
    struct fx *f = *state;
    struct store *leader = open_ok(f->db, STORE_CREATE, NULL);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_begin(leader, &eb), 0);
    assert_int_equal(store_meta_put(leader, "k", "leader", &eb), 0);
    struct store_opts o;
    store_opts_default(&o);
    o.busy_timeout_ms = 50;
    struct store *other = NULL;
    assert_int_equal(store_open(f->db, 0, &o, &other, &eb), SCHED_EIO);
    assert_non_null(strstr(eb.msg, "locked by another writer"));
    assert_non_null(strstr(eb.msg, f->db));
    /* a reader is never blocked, and sees the last commit */
    struct store *reader = open_ok(f->db, STORE_READONLY, NULL);
    const char *v = NULL;
    assert_int_equal(store_meta_get(reader, "k", &v, &eb), SCHED_ENOENT);
    assert_int_equal(store_commit(leader, &eb), 0);
    assert_int_equal(store_meta_get(reader, "k", &v, &eb), 0);
    assert_string_equal(v, "leader");
    store_close(reader);
    store_close(leader);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_missing_file),
        T(test_migrate_v0),
        T(test_newer_version_refused),
        T(test_foreign_database_refused),
        T(test_corrupt_garbage),
        T(test_corrupt_pages),
        T(test_truncated),
        T(test_readonly_file),
        T(test_readonly_open),
        T(test_full_disk),
        T(test_second_writer_locked),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
