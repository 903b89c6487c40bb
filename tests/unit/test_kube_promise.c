/* tests/unit/test_kube_promise.c: backfill-on-probation promises of the daemon across a restart
 * (sched/kube/driver_promise.c): a cycle that reserves for a starving gang and backfills another
 * on probation ahead of it writes both to the store's job rows; a driver started afresh on that
 * store (a restart, a new leader) gives them back to the engine at its first cycle, so the
 * running gang is on probation again in the core's view, for the same gang and until the same
 * time, also after a wall-clock step moved both. A row that changed state since (the backfilled
 * gang evicted, pending again) restores nothing.
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

#include "sched/kube/driver_int.h"

#include "tests/unit/kube_fx.h"

static const char *const cfg_yaml = "apiVersion: gangsched.io/v1alpha1\n"
                                    "kind: SchedulerConfig\n"
                                    "queues:\n"
                                    "  - name: q\n";

/* The promise: the starving gang's first reservation's expected start (ms). */
#define FIRST_MS 1767229200000LL /* 2026-01-01T01:00:00Z */
#define NOW_MS   1767225600000LL /* 2026-01-01T00:00:00Z */

struct pfx {
    struct fx f;
    char dir[128], db[160];
};

/* A driver as a process starts it: engine, cache with two nodes, the store at p->db. */
static void start(struct pfx *p)
{
    memset(&p->f.d, 0, sizeof(p->f.d));
    strmap_init(&p->f.d.status);
    p->f.d.cache = kcache_new("gangsched");
    arena_init(&p->f.d.arena, 1 << 16);
    assert_non_null(p->f.d.cache);
    assert_int_equal(kdrv_eng_init(&p->f.d), 0);
    fx_node(p->f.d.cache, "n1");
    fx_node(p->f.d.cache, "n2");
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(p->db, STORE_CREATE, NULL, &p->f.d.db, &eb), 0);
}

static void stop(struct pfx *p)
{
    kdrv_status_fini(&p->f.d);
    kdrv_eng_fini(&p->f.d);
    kcache_free(p->f.d.cache);
    arena_fini(&p->f.d.arena);
    store_close(p->f.d.db);
    p->f.d.db = NULL;
}

static int setup(void **state)
{
    static struct pfx p;
    memset(&p, 0, sizeof(p));
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("t.yaml", cfg_yaml, strlen(cfg_yaml), &p.f.cfg, &eb) != 0)
        return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(p.dir, sizeof(p.dir), "%.60s/kpromXXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(p.dir))
        return -1;
    snprintf(p.db, sizeof(p.db), "%s/g.db", p.dir);
    *state = &p;
    return 0;
}

static int teardown(void **state)
{
    struct pfx *p = *state;
    const char *const suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char path[200];
        snprintf(path, sizeof(path), "%s%s", p->db, suffix[i]);
        unlink(path);
    }
    rmdir(p->dir);
    config_free(p->f.cfg);
    return 0;
}

static void build(struct fx *f, int64_t now)
{
    struct sched_errbuf eb = {{0}};
    arena_reset(&f->d.arena);
    assert_int_equal(
        kcache_build(f->d.cache, f->cfg, sched_policy_default(), now, &f->d.arena, &f->kb, &eb), 0);
    assert_int_equal(kdrv_ids_build(&f->d, &f->kb, now), 0);
}

static const struct gang *kb_gang(const struct fx *f, const char *key)
{
    for (uint32_t g = 0; g < f->kb.n_gangs; g++)
        if (strcmp(f->kb.gangs[g].key, key) == 0)
            return &f->kb.gangs[g].gang;
    fail_msg("gang %s not in the build", key);
    return NULL;
}

static void job_row(struct store *st, const char *gang, enum store_job_state s)
{
    bool placed = s == STORE_JOB_ADMITTED || s == STORE_JOB_RUNNING;
    struct store_job j = {.gang = gang,
                          .gang_id = -1,
                          .queue = "q",
                          .flavor = placed ? "default" : NULL,
                          .gpus = 8,
                          .state = s,
                          .submit_ms = NOW_MS, /* the pods' creationTimestamp (kube_fx.h) */
                          .admit_ms = placed ? NOW_MS : STORE_NO_TIME,
                          .start_ms = s == STORE_JOB_RUNNING ? NOW_MS : STORE_NO_TIME,
                          .finish_ms = STORE_NO_TIME};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_job_upsert(st, &j, &eb), 0);
}

/* Process one: ml/big starves and holds the cycle's reservation (expected at FIRST_MS);
 * ml/small is placed on probation ahead of it. The cycle's record writes both promises. */
static void first_process(struct pfx *p)
{
    struct fx *f = &p->f;
    start(p);
    fx_pod(f->d.cache, "big", "", false);
    fx_pod(f->d.cache, "small", "", false);
    build(f, NOW_MS);
    uint32_t n1 = 0;
    struct sched_reservation rv = {
        .gang = kb_gang(f, "ml/big"), .nodes = &n1, .n_nodes = 1, .expected_start_ms = FIRST_MS};
    struct sched_placement pl = {.gang = kb_gang(f, "ml/small"),
                                 .probation_for = kb_gang(f, "ml/big")};
    struct sched_result res = {
        .placements = &pl, .n_placements = 1, .reservations = &rv, .n_reservations = 1};
    kdrv_holds_take(&f->d, &f->kb, &res, NOW_MS); /* the engine's first reservation */
    job_row(f->d.db, "ml/big", STORE_JOB_PENDING);
    job_row(f->d.db, "ml/small", STORE_JOB_ADMITTED);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kdrv_promise_record(&f->d, &f->kb, &res, &eb), 0);
    stop(p);
}

struct got {
    int n;
    char gang[4][32], to[4][32];
    int64_t first[4], until[4];
};

static int collect(void *ctx, const struct store_promise *pr)
{
    struct got *g = ctx;
    if (g->n < 4) {
        snprintf(g->gang[g->n], 32, "%s", pr->gang);
        snprintf(g->to[g->n], 32, "%s", pr->probation_for ? pr->probation_for : "-");
        g->first[g->n] = pr->reserve_first_ms;
        g->until[g->n++] = pr->probation_until_ms;
    }
    return 0;
}

/* The running gang ml/small's probation in the core's view after a restart on the store: the
 * cache shows it bound on n1 (started), ml/big still pending. */
static const struct sched_running *after_restart(struct pfx *p)
{
    struct fx *f = &p->f;
    start(p);
    fx_pod(f->d.cache, "big", "", false);
    fx_pod(f->d.cache, "small", "n1", true);
    build(f, NOW_MS + 60000);
    /* the lifecycle step's first sight of a bound gang (sched/engine/life.c) */
    assert_int_equal(eng_job_bound(f->d.eng, kdrv_gang_id(&f->d, "ml/small"), NOW_MS + 60000), 0);
    kdrv_promise_restore(&f->d, &f->kb); /* run_cycle's first cycle as leader */
    kdrv_holds_offer(&f->d, &f->kb, NOW_MS + 60000);
    for (uint32_t i = 0; i < f->kb.n_running; i++)
        if (f->kb.running[i].gang == kb_gang(f, "ml/small"))
            return &f->kb.running[i];
    fail_msg("ml/small is not running in the build");
    return NULL;
}

static void promise_survives_restart(void **state)
{
    struct pfx *p = *state;
    first_process(p);
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(p->db, 0, NULL, &st, &eb), 0);
    struct got g = {0};
    assert_int_equal(store_promise_list(st, collect, &g, &eb), 0);
    store_close(st);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.gang[0], "ml/big");
    assert_int_equal(g.first[0], FIRST_MS);
    assert_string_equal(g.gang[1], "ml/small");
    assert_int_equal(g.until[1], FIRST_MS);
    assert_string_equal(g.to[1], "ml/big");

    const struct sched_running *run = after_restart(p);
    assert_non_null(run->probation_for);
    assert_ptr_equal(run->probation_for, kb_gang(&p->f, "ml/big"));
    assert_int_equal(run->probation_until_ms, FIRST_MS);
    /* the starving gang's first reservation is back: a new one of this process keeps it */
    uint32_t big = kdrv_gang_id(&p->f.d, "ml/big");
    assert_int_equal(eng_job(p->f.d.eng, big).reserve_first_ms, FIRST_MS);
    assert_int_equal(eng_job_reserved(p->f.d.eng, big, FIRST_MS + 3600000), 0);
    assert_int_equal(eng_job(p->f.d.eng, big).reserve_first_ms, FIRST_MS);
    stop(p);
}

/* The backfilled gang was evicted (its row pending again) before the restart: its promise
 * belonged to that run and is not restored. */
static void ended_run_restores_nothing(void **state)
{
    struct pfx *p = *state;
    first_process(p);
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(p->db, 0, NULL, &st, &eb), 0);
    job_row(st, "ml/small", STORE_JOB_PENDING);
    store_close(st);
    const struct sched_running *run = after_restart(p);
    assert_null(run->probation_for);
    assert_int_equal(run->probation_until_ms, 0);
    stop(p);
}

/* ml/big was deleted and created again (a new uid, created at 00:30) while no daemon ran: the
 * new gang is another one. Neither its old row's first reservation nor ml/small's promise to
 * the old ml/big may bind it (before, both were restored by name, and ml/small could be evicted
 * as overdue for a gang it never promised anything to). Its row, once written for the new gang
 * (pending to pending, another submission), drops the old first reservation too. */
static void recreated_gang_inherits_nothing(void **state)
{
    struct pfx *p = *state;
    struct fx *f = &p->f;
    first_process(p);
    start(p);
    fx_add(f->d.cache, 1,
           "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"big\",\"uid\":\"u-big-2\","
           "\"creationTimestamp\":\"2026-01-01T00:30:00Z\",\"labels\":{"
           "\"gangsched.io/queue\":\"q\"}},\"spec\":{\"schedulerName\":\"gangsched\","
           "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
           "\"nvidia.com/gpu\":\"8\"}}}]},\"status\":{\"phase\":\"Pending\"}}");
    fx_pod(f->d.cache, "small", "n1", true);
    int64_t now = NOW_MS + 3600000;
    build(f, now);
    assert_int_equal(kb_gang(f, "ml/big")->submit_ms, NOW_MS + 1800000);
    assert_int_equal(eng_job_bound(f->d.eng, kdrv_gang_id(&f->d, "ml/small"), now), 0);
    kdrv_promise_restore(&f->d, &f->kb);
    kdrv_holds_offer(&f->d, &f->kb, now);
    assert_int_equal(eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/big")).reserve_first_ms, 0);
    const struct sched_running *run = NULL;
    for (uint32_t i = 0; i < f->kb.n_running; i++)
        if (f->kb.running[i].gang == kb_gang(f, "ml/small"))
            run = &f->kb.running[i];
    assert_non_null(run);
    assert_null(run->probation_for);
    assert_int_equal(run->probation_until_ms, 0);
    /* the new gang's row: pending again under another submission drops the first reservation */
    struct store_job j = {.gang = "ml/big",
                          .gang_id = -1,
                          .queue = "q",
                          .gpus = 8,
                          .state = STORE_JOB_PENDING,
                          .submit_ms = NOW_MS + 1800000,
                          .admit_ms = STORE_NO_TIME,
                          .start_ms = STORE_NO_TIME,
                          .finish_ms = STORE_NO_TIME};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_job_upsert(f->d.db, &j, &eb), 0);
    struct got g = {0};
    assert_int_equal(store_promise_list(f->d.db, collect, &g, &eb), 0);
    for (int i = 0; i < g.n; i++)
        assert_string_not_equal(g.gang[i], "ml/big");
    stop(p);
}

/* A wall-clock step an hour ahead after the first process's cycle: the engine moves ml/big's
 * first reservation and ml/small's promise to it together; the next cycle reserves for ml/big
 * again, which writes its moved first reservation. A new leader then restores both from the
 * store: the promise holds only if ml/small's row was written again too. Before, it kept the
 * time of its placement, the two differed by the step and ml/small ran without a promise. */
static void promise_survives_step_then_restart(void **state)
{
    struct pfx *p = *state;
    struct fx *f = &p->f;
    start(p);
    fx_pod(f->d.cache, "big", "", false);
    fx_pod(f->d.cache, "small", "", false);
    build(f, NOW_MS);
    uint32_t n1 = 0;
    struct sched_reservation rv = {
        .gang = kb_gang(f, "ml/big"), .nodes = &n1, .n_nodes = 1, .expected_start_ms = FIRST_MS};
    struct sched_placement pl = {.gang = kb_gang(f, "ml/small"),
                                 .probation_for = kb_gang(f, "ml/big")};
    struct sched_result res = {
        .placements = &pl, .n_placements = 1, .reservations = &rv, .n_reservations = 1};
    kdrv_holds_take(&f->d, &f->kb, &res, NOW_MS);
    uint32_t big = kdrv_gang_id(&f->d, "ml/big"), small = kdrv_gang_id(&f->d, "ml/small");
    assert_int_equal(eng_job_admit(f->d.eng, small), 0); /* driver_bind.c at the placement */
    assert_int_equal(eng_job_probation(f->d.eng, small, big), 0);
    job_row(f->d.db, "ml/big", STORE_JOB_PENDING);
    job_row(f->d.db, "ml/small", STORE_JOB_ADMITTED);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kdrv_promise_record(&f->d, &f->kb, &res, &eb), 0);

    const int64_t H = 3600 * 1000;
    kdrv_clock_check(&f->d);
    f->d.clock_wall -= H; /* the last reading an hour less: a step an hour ahead */
    int64_t step = kdrv_clock_check(&f->d);
    assert_true(step >= H - 100 && step <= H + 100);
    assert_int_equal(eng_job(f->d.eng, big).reserve_first_ms, FIRST_MS + step);
    assert_int_equal(eng_job(f->d.eng, small).probation_until_ms, FIRST_MS + step);
    /* the next cycle: ml/big reserved again (its first reservation kept), nothing placed */
    struct sched_result next = {.reservations = &rv, .n_reservations = 1};
    assert_int_equal(kdrv_promise_record(&f->d, &f->kb, &next, &eb), 0);
    stop(p);

    const struct sched_running *run = after_restart(p);
    assert_int_equal(eng_job(p->f.d.eng, kdrv_gang_id(&p->f.d, "ml/big")).reserve_first_ms,
                     FIRST_MS + step);
    assert_non_null(run->probation_for);
    assert_ptr_equal(run->probation_for, kb_gang(&p->f, "ml/big"));
    assert_int_equal(run->probation_until_ms, FIRST_MS + step);
    stop(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(promise_survives_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(ended_run_restores_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(recreated_gang_inherits_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(promise_survives_step_then_restart, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
