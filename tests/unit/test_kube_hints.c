/* tests/unit/test_kube_hints.c: the per-gang preemption settings of a gang of one pod without a
 * PodGroup in the daemon's cycle input (sched/kube/cache_build.c, objects.c):
 * gangsched.io/min-runtime, restart-cost and non-preemptible declared on the pod are checked while
 * it waits (a bad value refuses the gang, naming the annotation) and kept once it is bound (a bound
 * pod keeps no annotations), over its queue's minRuntime and restartCost; without them, or with a
 * value that cannot be read on a bound pod, the queue's apply. */
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

#include "sched/kube/driver_int.h"

#include "tests/unit/kube_fx.h"

static const char *const cfg_yaml = "apiVersion: gangsched.io/v1alpha1\n"
                                    "kind: SchedulerConfig\n"
                                    "queues:\n"
                                    "  - name: q\n"
                                    "    preemption: {minRuntime: 1h, restartCost: 10m}\n";

#define MIN_MS 60000
#define T0_MS  1767225600000 /* 2026-01-01T00:00:00Z */
#define HINTS                                                                                      \
    "\"gangsched.io/min-runtime\":\"5m\",\"gangsched.io/restart-cost\":\"2m\","                    \
    "\"gangsched.io/non-preemptible\":\"true\""

static void fixture(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    struct sched_errbuf eb = {{0}};
    assert_int_equal(config_load_buffer("t.yaml", cfg_yaml, strlen(cfg_yaml), &f->cfg, &eb), 0);
    f->d.cache = kcache_new("gangsched");
    assert_non_null(f->d.cache);
    arena_init(&f->d.arena, 1 << 16);
    fx_node(f->d.cache, "n0");
    fx_node(f->d.cache, "n1");
}

static void fixture_free(struct fx *f)
{
    kcache_free(f->d.cache);
    arena_fini(&f->d.arena);
    config_free(f->cfg);
}

static void build(struct fx *f)
{
    struct sched_errbuf eb = {{0}};
    arena_reset(&f->d.arena);
    assert_int_equal(kcache_build(f->d.cache, f->cfg, sched_policy_default(), T0_MS + MIN_MS,
                                  &f->d.arena, &f->kb, &eb),
                     0);
}

static const struct sched_running *running(struct fx *f, const char *key)
{
    for (uint32_t i = 0; i < f->kb.n_running; i++)
        if (strcmp(f->kb.gangs[f->kb.running[i].gang->id].key, key) == 0)
            return &f->kb.running[i];
    fail_msg("%s is not running", key);
    return NULL;
}

/* Declared on the pod: kept once bound, over the queue's. */
static void pod_hints_kept_once_bound(void **state)
{
    (void)state;
    static struct fx f;
    fixture(&f);
    fx_pod_ann(f.d.cache, "solo", "", false, HINTS);
    build(&f);
    assert_int_equal(f.kb.n_waiting, 0); /* admitted: the values are good */
    assert_int_equal(f.kb.n_pending, 1);
    fx_pod_ann(f.d.cache, "solo", "n0", true, HINTS); /* bound, started at T0 */
    fx_pod(f.d.cache, "plain", "n1", true);
    build(&f);
    const struct sched_running *r = running(&f, "ml/solo");
    assert_int_equal(r->min_runtime_ms, 5 * MIN_MS);
    assert_int_equal(r->restart_cost_ms, 2 * MIN_MS);
    assert_true(r->non_preemptible);
    r = running(&f, "ml/plain"); /* none declared: its queue's */
    assert_int_equal(r->min_runtime_ms, 60 * MIN_MS);
    assert_int_equal(r->restart_cost_ms, 10 * MIN_MS);
    assert_false(r->non_preemptible);

    /* 0 on the pod is a value (no minimum), not "none" */
    fx_pod_ann(f.d.cache, "plain", "n1", true, "\"gangsched.io/min-runtime\":\"0\"");
    build(&f);
    assert_int_equal(running(&f, "ml/plain")->min_runtime_ms, 0);
    assert_int_equal(running(&f, "ml/plain")->restart_cost_ms, 10 * MIN_MS);
    fixture_free(&f);
}

/* A bad value: the waiting gang is refused with the annotation named; on a bound pod (admitted
 * by an older daemon, or edited since) it is none: the queue's values. */
static void pod_hints_bad_value(void **state)
{
    (void)state;
    static struct fx f;
    fixture(&f);
    fx_pod_ann(f.d.cache, "bad", "", false, "\"gangsched.io/restart-cost\":\"soon\"");
    build(&f);
    assert_int_equal(f.kb.n_pending, 0);
    assert_int_equal(f.kb.n_waiting, 1);
    assert_string_equal(f.kb.waiting[0].reason, "InvalidSpec");
    if (!strstr(f.kb.waiting[0].message, "gangsched.io/restart-cost") ||
        !strstr(f.kb.waiting[0].message, "ml/bad"))
        fail_msg("unclear message: %s", f.kb.waiting[0].message);

    fx_pod_ann(f.d.cache, "bad", "n0", true,
               "\"gangsched.io/restart-cost\":\"soon\",\"gangsched.io/non-preemptible\":\"true\"");
    build(&f);
    const struct sched_running *r = running(&f, "ml/bad");
    assert_int_equal(r->restart_cost_ms, 10 * MIN_MS);
    assert_int_equal(r->min_runtime_ms, 60 * MIN_MS);
    assert_false(r->non_preemptible);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pod_hints_kept_once_bound),
        cmocka_unit_test(pod_hints_bad_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
