/* tests/unit/test_kube_fair.c: the daemon's fair-share history (sched/kube/driver_fair.c over
 * sched/engine/fair.h) on cycles built by the cache from API objects, with a store on a file:
 *   - integrated on the wall clock with the share the previous cycle's decisions left (a gang
 *     the core places counts from its cycle on, before its binds are seen), offered to the core;
 *   - the fair_share rows written in the cycle's transaction, at most every 10 s;
 *   - a restart: the rows restored, the unobserved interval integrated with the share of what
 *     the first cycle sees;
 *   - a reload that renames and reorders queues: each history follows its queue's name, a
 *     removed queue's history and row are kept, and its return integrates the gap;
 *   - a bad fair_share row (a share below 0, a time that is not an integer): an error naming
 *     the queue and the field, that queue without history, the others restored, cycles go on;
 *   - out of memory while recording a cycle's shares: logged, the cycle stands;
 *   - the engine's history under out-of-memory, and a half-life of 0;
 *   - a wall-clock step: the next interval integrates real time. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "queue/queue.h"
#include "sched/kube/driver_int.h"

#include "tests/unit/kube_fx.h"

/* cmocka before 1.1.6 has no assert_double_equal */
#define assert_near(a, b, eps) near((a), (b), (eps), __FILE__, __LINE__)

static void near(double a, double b, double eps, const char *file, int line)
{
    if (!(fabs(a - b) <= eps))
        fail_msg("%s:%d: %.17g is not %.17g", file, line, a, b);
}

#define HOUR_MS 3600000
#define T0_MS   1767225600000 /* 2026-01-01T00:00:00Z */

#define CFG_HEAD                                                                                   \
    "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\nfairShare: {halfLife: 1h}\n"        \
    "cohorts:\n  - name: all\nqueues:\n"
#define QUEUE(name)                                                                                \
    "  - name: " name "\n    cohort: all\n    quota: {default: {nvidia.com/gpu: 8}}\n"

static const char *const cfg_ab = CFG_HEAD QUEUE("qa") QUEUE("qb");
static const char *const cfg_ca = CFG_HEAD QUEUE("qc") QUEUE("qa"); /* qb renamed, reordered */

struct world {
    struct fx f;
    char dir[64], path[96];
};

/* A gang of one: pod ml/name of 8 GPUs in queue q, bound to node ("" = pending). */
static void pod(struct kcache *c, const char *name, const char *q, const char *node)
{
    char buf[1000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{"
             "\"gangsched.io/queue\":\"%s\"}},\"spec\":{\"schedulerName\":\"gangsched\","
             "\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
             "\"nvidia.com/gpu\":\"8\"}}}]},\"status\":{\"phase\":\"%s\"%s}}",
             name, name, q, node, *node ? "Running" : "Pending",
             *node ? ",\"startTime\":\"2026-01-01T00:00:00Z\"" : "");
    fx_add(c, 1, buf);
}

static struct config *load(const char *yaml)
{
    struct config *c = NULL;
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("t.yaml", yaml, strlen(yaml), &c, &eb) != 0)
        fail_msg("config: %s", eb.msg);
    return c;
}

static void open_store(struct world *w)
{
    struct sched_errbuf eb = {{0}};
    if (store_open(w->path, STORE_CREATE, NULL, &w->f.d.db, &eb) != 0)
        fail_msg("store: %s", eb.msg);
}

/* qa runs 8 GPUs on n0; b-wait (qb, 8 GPUs) waits; n1 is free. */
static int setup(void **state)
{
    struct world *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    const char *tmp = getenv("TMPDIR");
    snprintf(w->dir, sizeof(w->dir), "%.40s/fairXXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(w->dir));
    snprintf(w->path, sizeof(w->path), "%s/g.db", w->dir);
    w->f.cfg = load(cfg_ab);
    w->f.d.cache = kcache_new("gangsched");
    assert_non_null(w->f.d.cache);
    arena_init(&w->f.d.arena, 1 << 16);
    fx_node(w->f.d.cache, "n0");
    fx_node(w->f.d.cache, "n1");
    pod(w->f.d.cache, "a-run", "qa", "n0");
    pod(w->f.d.cache, "b-wait", "qb", "");
    open_store(w);
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    struct world *w = *state;
    eng_fair_free(w->f.d.fair);
    store_close(w->f.d.db);
    kcache_free(w->f.d.cache);
    arena_fini(&w->f.d.arena);
    config_free(w->f.cfg);
    char p[128];
    const char *sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s%s", w->path, sfx[i]);
        unlink(p);
    }
    rmdir(w->dir);
    free(w);
    return 0;
}

/* One cycle at now as driver.c runs it: the snapshot, the history offered, the core (when
 * `decide`), then the record in the cycle's transaction. Returns the placements. */
static uint32_t cycle(struct world *w, int64_t now, bool decide)
{
    struct fx *f = &w->f;
    struct sched_errbuf eb = {{0}};
    arena_reset(&f->d.arena);
    assert_int_equal(
        kcache_build(f->d.cache, f->cfg, sched_policy_default(), now, &f->d.arena, &f->kb, &eb), 0);
    assert_int_equal(kdrv_fair_offer(&f->d, &f->kb, f->cfg, now), 0);
    assert_non_null(f->kb.snap.hist_share);
    struct sched_result res = {0};
    if (decide)
        assert_int_equal(sched_cycle(&f->kb.snap, &f->d.arena, &res), 0);
    assert_int_equal(store_begin(f->d.db, &eb), 0);
    if (kdrv_fair_record(&f->d, &f->kb, &res, f->cfg, now, &eb) != 0)
        fail_msg("record: %s", eb.msg);
    assert_int_equal(store_commit(f->d.db, &eb), 0);
    return res.n_placements;
}

static double hist_of(const struct world *w, const char *queue)
{
    int q = config_queue_index(w->f.cfg, queue);
    assert_true(q >= 0);
    return w->f.kb.snap.hist_share[q];
}

static void assert_row(struct world *w, const char *queue, double share, int64_t at)
{
    struct sched_errbuf eb = {{0}};
    double s = -1;
    int64_t t = 0;
    if (store_history_get(w->f.d.db, queue, &s, &t, &eb) != 0)
        fail_msg("row %s: %s", queue, eb.msg);
    assert_near(s, share, 1e-12);
    assert_int_equal(t, at);
}

/* A process restart on the same file: the history in memory is gone. */
static void restart(struct world *w)
{
    eng_fair_free(w->f.d.fair);
    w->f.d.fair = NULL;
    w->f.d.fair_restored = w->f.d.fair_written = false;
    store_close(w->f.d.db);
    w->f.d.db = NULL;
    open_store(w);
}

/* The three cycles of the integration test: hist at T0 + 2 h is qa 0.75, qb 0.5. */
static void integrate(struct world *w)
{
    assert_int_equal(cycle(w, T0_MS, false), 0);
    assert_near(hist_of(w, "qa"), 0, 0); /* first seen: no history before now */
    assert_row(w, "qa", 0, T0_MS);
    /* qa held a share of 1 (8 of its 8 GPUs) for an hour of half-life */
    assert_int_equal(cycle(w, T0_MS + HOUR_MS, true), 1); /* b-wait placed on n1 */
    assert_near(hist_of(w, "qa"), 0.5, 1e-12);
    assert_near(hist_of(w, "qb"), 0, 0);
    assert_row(w, "qa", 0.5, T0_MS + HOUR_MS);
    /* qb's share counts from the cycle that placed its gang, though the cache has not seen the
     * bind (b-wait is still pending in it) */
    assert_int_equal(cycle(w, T0_MS + 2 * HOUR_MS, false), 0);
    assert_near(hist_of(w, "qa"), 0.75, 1e-12);
    assert_near(hist_of(w, "qb"), 0.5, 1e-12);
    assert_row(w, "qb", 0.5, T0_MS + 2 * HOUR_MS);
}

static void test_integrate_and_write(void **state)
{
    struct world *w = *state;
    integrate(w);
    /* the last cycle left qb a share of 0 (nothing placed, its pod never bound) */
    assert_int_equal(cycle(w, T0_MS + 2 * HOUR_MS + 1000, false), 0);
    assert_near(hist_of(w, "qb"), queue_decay(0.5, 0, 1000, HOUR_MS), 1e-12);
    /* written at most every 10 s: the rows are still those of T0 + 2 h */
    assert_row(w, "qa", 0.75, T0_MS + 2 * HOUR_MS);
    assert_row(w, "qb", 0.5, T0_MS + 2 * HOUR_MS);
    assert_int_equal(cycle(w, T0_MS + 2 * HOUR_MS + 10000, false), 0);
    assert_row(w, "qb", hist_of(w, "qb"), T0_MS + 2 * HOUR_MS + 10000);
}

static void test_restart(void **state)
{
    struct world *w = *state;
    integrate(w);
    restart(w);
    /* down for an hour: the gap is integrated with the shares the first cycle sees (qa runs
     * its 8 GPUs, qb nothing), from the rows of T0 + 2 h */
    assert_int_equal(cycle(w, T0_MS + 3 * HOUR_MS, false), 0);
    assert_near(hist_of(w, "qa"), queue_decay(0.75, 1, HOUR_MS, HOUR_MS), 1e-12);
    assert_near(hist_of(w, "qb"), queue_decay(0.5, 0, HOUR_MS, HOUR_MS), 1e-12);
    assert_row(w, "qa", 0.875, T0_MS + 3 * HOUR_MS); /* the first cycle of a process writes */
    /* then the usual rule again: qa's share of 1 left by that cycle */
    assert_int_equal(cycle(w, T0_MS + 4 * HOUR_MS, false), 0);
    assert_near(hist_of(w, "qa"), queue_decay(0.875, 1, HOUR_MS, HOUR_MS), 1e-12);
}

static void test_reload(void **state)
{
    struct world *w = *state;
    integrate(w);
    config_free(w->f.cfg);
    w->f.cfg = load(cfg_ca); /* qb renamed qc, qa second */
    assert_int_equal(cycle(w, T0_MS + 3 * HOUR_MS, false), 0);
    assert_near(hist_of(w, "qa"), queue_decay(0.75, 1, HOUR_MS, HOUR_MS), 1e-12);
    assert_near(hist_of(w, "qc"), 0, 0); /* a new name starts without history */
    double h;
    int64_t at;
    assert_true(eng_fair_find(w->f.d.fair, "qb", &h, &at)); /* kept, not integrated */
    assert_near(h, 0.5, 1e-12);
    assert_int_equal(at, T0_MS + 2 * HOUR_MS);
    assert_row(w, "qb", 0.5, T0_MS + 2 * HOUR_MS);
    /* qb back two hours later: the gap with what the cycle sees of it (its pod waits: 0) */
    config_free(w->f.cfg);
    w->f.cfg = load(cfg_ab);
    assert_int_equal(cycle(w, T0_MS + 4 * HOUR_MS, false), 0);
    assert_near(hist_of(w, "qb"), 0.125, 1e-12);
}

/* Runs restore-and-cycle with stderr (the log) sent to a file; the log's text into buf. */
static void cycle_logged(struct world *w, int64_t now, bool decide, char *buf, size_t n)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/log.txt", w->dir);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(path, "w+");
    assert_non_null(f);
    dup2(fileno(f), 2);
    cycle(w, now, decide);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
    unlink(path);
}

/* Spoils one field of one row of the fair_share table behind the store's back. */
static void spoil(struct world *w, const char *sql)
{
    restart(w); /* the store's open refuses such a row (quick_check): spoilt after it */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(w->path, &db), SQLITE_OK);
    char full[300];
    snprintf(full, sizeof(full), "PRAGMA ignore_check_constraints = ON; %s", sql);
    assert_int_equal(sqlite3_exec(db, full, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* A bad row costs its own queue's history, named with the field in an error; the other queues
 * are restored and the daemon schedules on. */
static void test_corrupt_row(void **state)
{
    struct world *w = *state;
    integrate(w);
    spoil(w, "UPDATE fair_share SET share = -1 WHERE queue = 'qb'");
    char log[4096];
    cycle_logged(w, T0_MS + 3 * HOUR_MS, true, log, sizeof(log));
    assert_int_equal(w->f.kb.snap.n_queues, 2);
    assert_near(hist_of(w, "qa"), queue_decay(0.75, 1, HOUR_MS, HOUR_MS), 1e-12); /* kept */
    assert_near(hist_of(w, "qb"), 0, 0);
    if (!strstr(log, "queue qb") || !strstr(log, "field=share: -1"))
        fail_msg("the error does not name the row and field: %s", log);
    assert_null(strstr(log, "queue qa"));
}

/* Another field: a time that is not an integer. */
static void test_corrupt_time(void **state)
{
    struct world *w = *state;
    integrate(w);
    spoil(w, "UPDATE fair_share SET updated_ms = 'noon' WHERE queue = 'qa'");
    char log[4096];
    cycle_logged(w, T0_MS + 3 * HOUR_MS, false, log, sizeof(log));
    assert_near(hist_of(w, "qa"), 0, 0);
    assert_near(hist_of(w, "qb"), queue_decay(0.5, 0, HOUR_MS, HOUR_MS), 1e-12);
    if (!strstr(log, "queue qa") || !strstr(log, "field=updated_ms"))
        fail_msg("the error does not name the row and field: %s", log);
}

/* A row written at a time later than now (a clock set back, a row edited) would freeze its
 * queue's history (nothing is integrated before that time, and the row is written back with it):
 * it is a bad row like the others. */
static void test_future_time(void **state)
{
    struct world *w = *state;
    integrate(w);
    char sql[128];
    snprintf(sql, sizeof(sql), "UPDATE fair_share SET updated_ms = %lld WHERE queue = 'qa'",
             (long long)(T0_MS + 100 * HOUR_MS));
    spoil(w, sql);
    char log[4096];
    cycle_logged(w, T0_MS + 3 * HOUR_MS, false, log, sizeof(log));
    assert_near(hist_of(w, "qa"), 0, 0);
    assert_near(hist_of(w, "qb"), queue_decay(0.5, 0, HOUR_MS, HOUR_MS), 1e-12);
    if (!strstr(log, "queue qa") || !strstr(log, "field=updated_ms") || !strstr(log, "later"))
        fail_msg("the error does not name the row, the field and the time: %s", log);
}

static void test_half_life_zero(void **state)
{
    struct world *w = *state;
    config_free(w->f.cfg);
    w->f.cfg = load("apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
                    "fairShare: {halfLife: 0s}\ncohorts:\n  - name: all\nqueues:\n" QUEUE("qa")
                        QUEUE("qb"));
    cycle(w, T0_MS, false);
    cycle(w, T0_MS + HOUR_MS, false);
    assert_near(hist_of(w, "qa"), 0, 0); /* only current usage counts */
}

/* ---- the engine's history under out-of-memory ---- */

static int fail_at, n_alloc;

static void *failing_realloc(void *p, size_t n)
{
    if (++n_alloc == fail_at)
        return NULL;
    return realloc(p, n);
}

/* Restore, advance, take and find over two configurations; 0 or SCHED_ENOMEM. */
static int seq_fair(void)
{
    struct config *a = load(cfg_ab), *b = load(cfg_ca);
    struct arena ar;
    arena_init(&ar, 1 << 12);
    int64_t usage[2 * RES_MAX] = {0};
    usage[RES_GPU] = 8;
    double hist[2];
    int rc = SCHED_ENOMEM;
    struct eng_fair *f = eng_fair_new();
    if (f && (rc = eng_fair_restore(f, "qa", 0.5, T0_MS)) == 0 &&
        (rc = eng_fair_advance(f, a, usage, &ar, T0_MS + HOUR_MS, hist)) == 0 &&
        (rc = eng_fair_take(f, a, usage, &ar)) == 0 &&
        (rc = eng_fair_advance(f, b, usage, &ar, T0_MS + 2 * HOUR_MS, hist)) == 0) {
        double h;
        int64_t at;
        assert_true(eng_fair_find(f, "qa", &h, &at));
        assert_near(h, queue_decay(0.75, 1, HOUR_MS, HOUR_MS), 1e-12);
        assert_false(eng_fair_find(f, "nobody", &h, &at));
    }
    eng_fair_free(f);
    arena_fini(&ar);
    config_free(a);
    config_free(b);
    return rc;
}

/* Out of memory while recording a cycle's shares: the cycle stands (no error), the error is
 * logged, and the next cycle integrates the interval as after a gap. The take is made to fail by
 * a history whose queues are not interned yet (its first allocation fails). */
static void test_record_oom(void **state)
{
    struct world *w = *state;
    integrate(w);
    struct fx *f = &w->f;
    struct sched_errbuf eb = {{0}};
    int64_t now = T0_MS + 2 * HOUR_MS + 20000;
    arena_reset(&f->d.arena);
    assert_int_equal(
        kcache_build(f->d.cache, f->cfg, sched_policy_default(), now, &f->d.arena, &f->kb, &eb), 0);
    assert_int_equal(kdrv_fair_offer(&f->d, &f->kb, f->cfg, now), 0);
    struct eng_fair *kept = f->d.fair;
    f->d.fair = eng_fair_new();
    struct sched_result res = {0};
    fail_at = 1;
    n_alloc = 0;
    eng_set_realloc(failing_realloc);
    assert_int_equal(store_begin(f->d.db, &eb), 0);
    int rc = kdrv_fair_record(&f->d, &f->kb, &res, f->cfg, now, &eb);
    eng_set_realloc(NULL);
    assert_int_equal(store_commit(f->d.db, &eb), 0);
    assert_int_equal(rc, 0); /* before: "out of memory", and the daemon stopped */
    assert_true(n_alloc >= 1);
    eng_fair_free(f->d.fair);
    f->d.fair = kept;
    /* the skip: the next advance integrates as a gap, with what the cycle sees (b-wait bound
     * since: qb's share 1, where the last share taken was 0) */
    eng_fair_skip(f->d.fair);
    pod(f->d.cache, "b-wait", "qb", "n1");
    assert_int_equal(cycle(w, now + HOUR_MS, false), 0);
    assert_near(hist_of(w, "qb"),
                queue_decay(queue_decay(0.5, 0, 20000, HOUR_MS), 1, HOUR_MS, HOUR_MS), 1e-12);
    assert_near(hist_of(w, "qa"), queue_decay(0.75, 1, HOUR_MS + 20000, HOUR_MS), 1e-12);
}

/* A wall-clock step moves the time a history was integrated up to (eng_fair_clock_stepped):
 * an hour of real time after a step forward of a day integrates one hour, not 25; after a step
 * back of a day, one hour too, where nothing was integrated before (the clock behind at_ms). */
static void test_clock_step(void **state)
{
    (void)state;
    struct config *a = load(cfg_ab);
    struct arena ar;
    arena_init(&ar, 1 << 12);
    int64_t usage[2 * RES_MAX] = {0};
    usage[RES_GPU] = 8; /* qa uses all of its quota: share 1 */
    double hist[2], h;
    int64_t at;
    const int64_t day = 24 * (int64_t)HOUR_MS;
    for (int dir = 1; dir >= -1; dir -= 2) {
        struct eng_fair *f = eng_fair_new();
        assert_non_null(f);
        assert_int_equal(eng_fair_restore(f, "qa", 0.5, T0_MS), 0);
        assert_int_equal(eng_fair_advance(f, a, usage, &ar, T0_MS, hist), 0);
        assert_int_equal(eng_fair_take(f, a, usage, &ar), 0);
        eng_fair_clock_stepped(f, dir * day);
        assert_true(eng_fair_find(f, "qa", &h, &at));
        assert_int_equal(at, T0_MS + dir * day);
        assert_int_equal(eng_fair_advance(f, a, usage, &ar, T0_MS + dir * day + HOUR_MS, hist), 0);
        assert_near(hist[0], queue_decay(0.5, 1, HOUR_MS, HOUR_MS), 1e-12);
        eng_fair_free(f);
    }
    eng_fair_clock_stepped(NULL, day); /* no history: nothing */
    arena_fini(&ar);
    config_free(a);
}

static void test_engine_oom(void **state)
{
    (void)state;
    assert_int_equal(seq_fair(), 0);
    eng_set_realloc(failing_realloc);
    int rc = SCHED_ENOMEM, failures = 0;
    for (fail_at = 1; rc == SCHED_ENOMEM && fail_at < 1000; fail_at++) {
        n_alloc = 0;
        rc = seq_fair();
        failures += rc == SCHED_ENOMEM;
    }
    eng_set_realloc(NULL);
    assert_int_equal(rc, 0);
    assert_true(failures > 3);
    struct eng_fair *f = eng_fair_new();
    assert_int_equal(eng_fair_restore(f, "qa", -1, T0_MS), SCHED_EINVAL); /* bad rows refused */
    eng_fair_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_integrate_and_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_future_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_oom, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_life_zero, setup, teardown),
        cmocka_unit_test(test_engine_oom),
        cmocka_unit_test(test_clock_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
