/* tests/unit/test_cycle_memo.c: the cycle's memo of failures (sched/core/cycle.c place_on):
 * gangs of one shape fail alike, so the first one's verdict serves the others, each named
 * with its own gang, and a smaller gang's failure serves the larger ones behind it. A gang that
 * never fits at all is remembered too (a backlog of thousands of them cost a pass over the
 * nodes each, every cycle), by its exact shape only: a larger gang's verdict names its own
 * need. */
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

#include "queue/queue.h"
#include "sched/core/cycle.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"

#include "cycle_fx.h"

/* A gang of two 8-GPU pods that finds one free node of the two it needs (a near miss), then
 * five one-pod gangs of 9 GPUs and one of 10 (no node has more than 8): every one of those
 * gets a verdict of its own that it never fits, naming its own need, and none carries the
 * near miss of the search before it. */
static void test_never_fits_verdicts_are_shared_by_shape(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:4");
    w->every_verdict = true;
    for (uint32_t i = 1; i < 4; i++)
        use_gpus(w, i, 0x01); /* one node wholly free */
    struct gang *a = add_gang(w, 2, 8, 0);
    struct gang *big[6];
    for (uint32_t k = 0; k < 6; k++)
        big[k] = add_gang(w, 1, k < 5 ? 9 : 10, 1 + (int64_t)k);
    const struct sched_result *r = cycle(w, "gangsched", 1);
    const struct sched_verdict *va = verdict_of(r, a);
    assert_non_null(va);
    assert_int_equal(va->why, SCHED_WHY_RESOURCES);
    assert_true(va->near_level >= -1); /* one of its two pods fits somewhere */
    for (uint32_t k = 0; k < 6; k++) {
        const struct sched_verdict *v = verdict_of(r, big[k]);
        assert_non_null(v);
        assert_ptr_equal(v->gang, big[k]);
        assert_int_equal(v->why, SCHED_WHY_NEVER);
        assert_int_equal(v->short_res, RES_GPU);
        assert_int_equal(v->need, k < 5 ? 9 : 10);
        assert_int_equal(v->near_level, -2); /* no search ran for it */
        char buf[256];
        sched_verdict_format(v, w->c, NULL, buf, sizeof(buf));
        assert_non_null(strstr(buf, "larger than the cluster can ever hold"));
    }
    assert_int_equal(r->n_placements, 0);
    free_names(w);
    world_free(w);
}

/* A gang that fails for room makes the larger gangs behind it fail alike without a search
 * (they need more of everything); one that can never fit at all is still told so, whether by
 * its GPUs or by another resource (a million cores: it was given the smaller gang's verdict,
 * so the simulator never rejected it while such a gang failed before it). */
static void test_never_fits_behind_a_smaller_failure(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:4");
    w->every_verdict = true;
    for (uint32_t i = 0; i < 4; i++)
        use_gpus(w, i, 0x01); /* 7 GPUs free on each node */
    struct gang *a = add_gang(w, 1, 8, 0);
    struct gang *b = add_gang(w, 2, 8, 1);
    struct gang *c = add_gang(w, 1, 9, 2);
    struct gang *d = add_gang(w, 1, 8, 3);
    d->sets[0].req.v[RES_CPU] = 1000 * 1000 * 1000; /* a million cores */
    gang_finalize(d);
    const struct sched_result *r = cycle(w, "gangsched", 1);
    assert_int_equal(verdict_of(r, a)->why, SCHED_WHY_RESOURCES);
    assert_int_equal(verdict_of(r, b)->why, SCHED_WHY_RESOURCES);
    const struct sched_verdict *v = verdict_of(r, c);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_NEVER);
    assert_int_equal(v->need, 9);
    v = verdict_of(r, d);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_NEVER);
    assert_int_equal(v->short_res, RES_CPU);
    free_names(w);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_never_fits_verdicts_are_shared_by_shape),
        cmocka_unit_test(test_never_fits_behind_a_smaller_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
