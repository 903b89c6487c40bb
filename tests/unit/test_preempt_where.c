/* tests/unit/test_preempt_where.c: where a preemption plan frees capacity: the placement
 * order's bias between domains of nearly equal cost, and the order in which a plan tries more
 * domains than it may (sched/core/preempt_dom.c). */
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

#include "config/config.h"
#include "queue/queue.h"
#include "sched/core/cycle.h"
#include "sched/core/policy.h"
#include "sched/core/preempt.h"
#include "sched/sim/nodes.h"

#include "preempt_fx.h"

static bool evicts_node0(int64_t a_s, int64_t b_s)
{
    struct world *w = world("hgx:2", HDR "queues:\n  - name: a\n    quota:\n      default:\n"
                                         "        nvidia.com/gpu: 16\n");
    uint32_t n0[] = {0}, n1[] = {1};
    struct gang *a = gang(w, 0, 1, 8, 0, 0), *b = gang(w, 0, 1, 8, 0, 0);
    run(w, a, n0, 0, 10000 - a_s);
    run(w, b, n1, 0, 10000 - b_s);
    gang(w, 0, 1, 8, 5, 9000);
    const struct sched_result *r = cycle(w, "gangsched", 10000);
    assert_int_equal(r->n_evictions, 1);
    bool first = evicted(r, a);
    world_free(w);
    return first;
}

static void test_order_bias_within_bound(void **unused)
{
    (void)unused;
    /* node 1 is half-way through the placement order of 2 nodes: its victim set counts bias/2
     * GPU-seconds more. A victim on node 0 that loses less than that much more work is taken
     * instead of the cheaper one on node 1; one that loses more is not. */
    double bias = sched_policy_find("gangsched")->order_bias_gpu_s;
    assert_true(bias > 0);
    int64_t b_s = 100, edge_s = (int64_t)(bias / 2 / 8); /* 8 GPUs per victim */
    assert_true(evicts_node0(b_s + edge_s - 10, b_s));   /* within the bias: node 0 */
    assert_false(evicts_node0(b_s + edge_s + 10, b_s));  /* beyond it: the cheaper node 1 */
    assert_true(evicts_node0(b_s - 10, b_s));            /* cheaper and first: node 0 */
}

/* More target domains than a plan tries (512): 600 racks of 8 nodes, each full with one running
 * 8x8-GPU gang. Variant 0: their work since the last checkpoint falls with the rack's index, so
 * the cheapest victim is on the last rack: the checkpoint-aware plan tries the racks by a lower
 * bound of their cost and takes it (before: the cheapest of the first 512 racks, 2.1x the lost
 * work). Variant 1: every gang's cost the same: the first rack (the placement order's bias).
 * Variant 2: as 0 under the blind baseline, which takes the first rack that works. */
static uint32_t victim_rack(int variant)
{
    struct world *w = world("hgx:4800", HDR "queues:\n  - name: a\n");
    uint32_t n = w->c->n_nodes / 8;
    assert_int_equal(n, 600);
    struct gang *gs = calloc(n + 1, sizeof(*gs));
    struct sched_running *rs = calloc(n, sizeof(*rs));
    struct sched_assign *as = calloc((size_t)n * 8, sizeof(*as));
    assert_true(gs && rs && as);
    int64_t now_s = 100000;
    for (uint32_t i = 0; i <= n; i++) {
        gs[i] = *gang(w, 0, 8, 8, i < n ? 0 : 10, 0);
        w->n = 0; /* the fixture's gangs are only a template here */
        gs[i].id = i + 1;
    }
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < 8; k++) {
            struct node_state *ns = &w->state[i * 8 + k];
            ns->used.v[RES_GPU] = 8;
            ns->used.v[RES_PODS] = 1;
            ns->gpu_used = 0xFF;
            as[i * 8 + k] = (struct sched_assign){.node = i * 8 + k, .gpu_mask = 0xFF};
        }
        int64_t since_s = 100 + (variant == 1 ? 0 : (int64_t)(n - 1 - i));
        rs[i] = (struct sched_running){
            .gang = &gs[i], .pods = &as[i * 8], .last_checkpoint_ms = (now_s - since_s) * 1000};
    }
    w->usage[RES_GPU] = (int64_t)n * 64;
    const struct gang *pending = &gs[n];
    struct queue q = {.name = "a", .weight = 1};
    struct sched_queue_view view = {.queue = &q, .pending = &pending, .n_pending = 1};
    struct sched_snapshot snap = {.now_ms = now_s * 1000,
                                  .cluster = w->c,
                                  .state = w->state,
                                  .queues = &view,
                                  .n_queues = 1,
                                  .policy =
                                      sched_policy_find(variant == 2 ? "ckpt-blind" : "gangsched"),
                                  .config = w->cfg,
                                  .usage = w->usage,
                                  .running = rs,
                                  .n_running = n};
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
    assert_int_equal(w->res.n_evictions, 1);
    uint32_t rack = (uint32_t)(w->res.evictions[0].victim - rs);
    free(as);
    free(rs);
    free(gs);
    world_free(w);
    return rack;
}

static void test_cheapest_victims_past_the_domain_budget(void **unused)
{
    (void)unused;
    assert_int_equal(victim_rack(0), 599);
    assert_int_equal(victim_rack(1), 0);
    assert_int_equal(victim_rack(2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_bias_within_bound),
        cmocka_unit_test(test_cheapest_victims_past_the_domain_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
