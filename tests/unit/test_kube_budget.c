/* tests/unit/test_kube_budget.c: the daemon's side of a cycle's time budget
 * (sched/kube/driver_budget.c) on a cycle's input built by the cache from API objects: a cycle
 * the budget cuts short after the gangs it reached, the gang it tried and could not place passed
 * over by the cycles that follow (they reach the gangs behind it) until one ends uncut, after
 * which every gang is tried again. The core's side: test_cycle_starts. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "sched/kube/driver_int.h"

#include "tests/unit/kube_fx.h"

static const char *const cfg_yaml = "apiVersion: gangsched.io/v1alpha1\n"
                                    "kind: SchedulerConfig\n"
                                    "queues:\n"
                                    "  - name: q\n";

/* A clock that advances by one at each reading. */
static uint64_t ticks;
static uint64_t tick_clock(void)
{
    return ++ticks;
}

/* One cycle on f's cache: the gangs passed over, the core with a budget of `deadline` clock
 * readings (0: none), then the chain noted. */
static const struct sched_result *cycle(struct fx *f, struct strmap *passed, uint64_t deadline,
                                        struct sched_result *res)
{
    fx_build_at(f, 1000);
    kdrv_pass_over(passed, &f->kb, &f->d.arena);
    ticks = 0;
    f->kb.snap.clock_ns = deadline ? tick_clock : NULL;
    f->kb.snap.deadline_ns = deadline;
    assert_int_equal(sched_cycle(&f->kb.snap, &f->d.arena, res), 0);
    kdrv_chain(passed, &f->kb, res);
    return res;
}

static const char *placed(const struct fx *f, const struct sched_result *r, uint32_t i)
{
    return f->kb.gangs[r->placements[i].gang->id].key;
}

static void cut_cycles_pass_over_what_they_tried(void **state)
{
    (void)state;
    struct fx f;
    memset(&f, 0, sizeof(f));
    struct sched_errbuf eb = {{0}};
    assert_int_equal(config_load_buffer("t.yaml", cfg_yaml, strlen(cfg_yaml), &f.cfg, &eb), 0);
    f.d.cache = kcache_new("gangsched");
    arena_init(&f.d.arena, 1 << 16);
    assert_int_equal(kdrv_eng_init(&f.d), 0);
    fx_node(f.d.cache, "n1");
    fx_node(f.d.cache, "n2");
    fx_pod_gpus(f.d.cache, "a", "", false, "", 16); /* no node has 16 GPUs: tried, never placed */
    fx_pod(f.d.cache, "b", "", false);
    fx_pod(f.d.cache, "c", "", false);
    struct strmap passed = {0};
    struct sched_result res;

    const struct sched_result *r = cycle(&f, &passed, 1, &res); /* a, then the budget is spent */
    assert_true(r->cut_short);
    assert_int_equal(r->n_examined, 1);
    assert_int_equal(r->n_verdicts, 1);
    assert_int_equal(passed.n, 1);
    assert_non_null(strmap_get(&passed, "ml/a"));

    r = cycle(&f, &passed, 1, &res); /* a passed over: b is reached */
    assert_non_null(f.kb.snap.pass_over);
    assert_true(r->cut_short);
    assert_int_equal(r->n_examined, 1);
    assert_int_equal(r->n_verdicts, 0);
    assert_int_equal(r->n_placements, 1);
    assert_string_equal(placed(&f, r, 0), "ml/b");

    r = cycle(&f, &passed, 0, &res); /* no budget: uncut, a still passed over */
    assert_false(r->cut_short);
    assert_int_equal(r->n_placements, 2);
    assert_int_equal(r->n_verdicts, 0);
    assert_int_equal(passed.n, 0); /* the chain ends */

    r = cycle(&f, &passed, 0, &res); /* every gang tried again */
    assert_null(f.kb.snap.pass_over);
    assert_int_equal(r->n_verdicts, 1);
    assert_int_equal(r->verdicts[0].why, SCHED_WHY_NEVER);

    strmap_fini(&passed);
    kdrv_eng_fini(&f.d);
    kcache_free(f.d.cache);
    arena_fini(&f.d.arena);
    config_free(f.cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cut_cycles_pass_over_what_they_tried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
