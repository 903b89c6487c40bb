/* tests/unit/test_eta.c: the start planner (sched/core/eta.c) counts the GPUs that running pods
 * give back as the cycle counts GPUs: by index, so that a GPU two shares hold (HAMi's GPU
 * shares) comes back once, when the later of them ends, and never while a holder of an unknown
 * end remains; releases without indices (the daemon's) give back at most the GPUs held, the
 * latest ends first. One 8-GPU node, one waiting gang of 8 GPUs, one cycle each. */
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
#include "sched/core/eta.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"

#define S 1000LL /* ms per second */

struct fx {
    struct cluster *c;
    struct node_state state[1];
    struct gang g;
    struct podset g_sets[2]; /* g.sets */
    const struct gang *pending[1];
    struct queue queue;
    struct sched_queue_view view;
    struct arena arena;
    struct sched_result res;
};

static void fx_init(struct fx *f)
{
    memset(f, 0, sizeof(*f));
    struct sched_errbuf eb = {{0}};
    f->c = cluster_new();
    assert_int_equal(nodes_generate(f->c, "hgx:1", &eb), 0);
    assert_int_equal(cluster_finalize(f->c, NULL, NULL, 0, &eb), 0);
    assert_int_equal(f->c->n_nodes, 1);
    assert_int_equal(f->c->nodes[0].n_gpus, 8);
    /* every GPU of the node held by running pods */
    f->state[0].gpu_used = 0xFF;
    f->state[0].used.v[RES_GPU] = 8;
    f->state[0].release_ms = INT64_MAX;
    struct gang *g = &f->g;
    g->name = "wide";
    g->sets = f->g_sets;
    g->n_sets = 1;
    g->sets[0].count = 1;
    g->sets[0].req.v[RES_GPU] = 8;
    g->sets[0].req.v[RES_CPU] = 1000;
    g->sets[0].req.v[RES_MEMORY] = 1ll << 30;
    g->sets[0].req.v[RES_PODS] = 1;
    g->topo_required = g->topo_preferred = g->slice_level = -1;
    gang_finalize(g);
    g->min_member = g->n_pods;
    f->pending[0] = g;
    f->queue = (struct queue){.name = "q", .weight = 1};
    f->view = (struct sched_queue_view){.queue = &f->queue, .pending = f->pending, .n_pending = 1};
    arena_init(&f->arena, 0);
}

static void fx_fini(struct fx *f)
{
    arena_fini(&f->arena);
    cluster_free(f->c);
}

/* The waiting gang's expected start at now = 100 s with these releases of the running pods. */
static const struct sched_eta *plan(struct fx *f, const struct sched_release *rels, uint32_t n)
{
    static const int64_t est[1] = {600 * S};
    struct sched_snapshot snap = {.now_ms = 100 * S,
                                  .cluster = f->c,
                                  .state = f->state,
                                  .queues = &f->view,
                                  .n_queues = 1,
                                  .policy = sched_policy_find("gangsched"),
                                  .runtime_est_ms = est,
                                  .n_runtime_est = 1,
                                  .releases = rels,
                                  .n_releases = n,
                                  .plan_starts = true};
    assert_non_null(snap.policy);
    arena_reset(&f->arena);
    assert_int_equal(sched_cycle(&snap, &f->arena, &f->res), 0);
    assert_int_equal(f->res.n_placements, 0);
    for (uint32_t k = 0; k < f->res.n_etas; k++)
        if (f->res.etas[k].gang == &f->g)
            return &f->res.etas[k];
    fail_msg("no estimate for the waiting gang");
    return NULL;
}

/* GPU 0 holds two shares, ending at 1,000 s and 2,000 s; GPUs 1-7 one pod ending at 500 s. The
 * gang of 8 GPUs starts when GPU 0 is free: at 2,000 s (it was planned at 1,000 s, when the
 * first share's end gave GPU 0 back, and the second's gave a ninth GPU). */
static void shares_of_one_gpu_by_index(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    struct sched_release rels[] = {
        {.node = 0, .gpus = 1, .t_ms = 1000 * S, .gpu_mask = 0x01},
        {.node = 0, .gpus = 1, .t_ms = 2000 * S, .gpu_mask = 0x01},
        {.node = 0, .gpus = 7, .t_ms = 500 * S, .gpu_mask = 0xFE},
    };
    const struct sched_eta *e = plan(&f, rels, 3);
    assert_int_equal(e->kind, SCHED_ETA_AT);
    assert_int_equal(e->start_ms, 2000 * S);
    /* a share of GPU 0 whose end is unknown: GPU 0 never comes back, no estimate */
    rels[1].t_ms = INT64_MAX;
    e = plan(&f, rels, 3);
    assert_int_equal(e->kind, SCHED_ETA_UNKNOWN);
    fx_fini(&f);
}

/* The same pods without indices (the daemon gives counts): the node's 8 held GPUs come back,
 * the latest ends first: 1 at 2,000 s, 1 at 1,000 s, 6 at 500 s, so the gang starts at
 * 2,000 s (it was planned at 1,000 s, with 9 GPUs back by 2,000 s). */
static void shares_without_index_counted_once(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    struct sched_release rels[] = {
        {.node = 0, .gpus = 1, .t_ms = 1000 * S},
        {.node = 0, .gpus = 1, .t_ms = 2000 * S},
        {.node = 0, .gpus = 7, .t_ms = 500 * S},
    };
    const struct sched_eta *e = plan(&f, rels, 3);
    assert_int_equal(e->kind, SCHED_ETA_AT);
    assert_int_equal(e->start_ms, 2000 * S);
    /* whole GPUs, no shares: the counts fit what is held, each comes back at its own end */
    rels[0].gpus = 0;
    e = plan(&f, rels, 3);
    assert_int_equal(e->kind, SCHED_ETA_AT);
    assert_int_equal(e->start_ms, 2000 * S);
    rels[1].t_ms = 800 * S;
    e = plan(&f, rels, 3);
    assert_int_equal(e->start_ms, 800 * S);
    fx_fini(&f);
}

/* A pod without GPUs (a launcher, a Ray head) beside one of 8 GPUs: the planner counts the pod
 * that needs GPUs, so the gang starts when the node's 8 come back at 500 s (counted as a second
 * pod of 8 it never fitted the one node). */
static void pods_without_gpus_are_not_counted(void **state)
{
    (void)state;
    struct fx f;
    fx_init(&f);
    f.g.n_sets = 2;
    f.g.sets[1] = f.g.sets[0];
    f.g.sets[1].req.v[RES_GPU] = 0;
    gang_finalize(&f.g);
    f.g.min_member = f.g.n_pods;
    struct sched_release rels[] = {{.node = 0, .gpus = 8, .t_ms = 500 * S, .gpu_mask = 0xFF}};
    const struct sched_eta *e = plan(&f, rels, 1);
    assert_int_equal(e->kind, SCHED_ETA_AT);
    assert_int_equal(e->start_ms, 500 * S);
    fx_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shares_of_one_gpu_by_index),
        cmocka_unit_test(shares_without_index_counted_once),
        cmocka_unit_test(pods_without_gpus_are_not_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
