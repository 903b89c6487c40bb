/* tests/unit/test_cycle.c: the pure core, scenario by scenario.
 *
 * Each test builds a small cluster and a few gangs, runs one sched_cycle() and checks the
 * decisions: all-or-nothing, strict FIFO vs backfill, topology-aware placement (whole nodes,
 * racks, NVLink islands, cliques), filters (taints, cordon, NotReady, shared GPUs), reservations
 * for starving gangs, verdicts and determinism. Gangs that wait on quota and their expected
 * starts: test_cycle_starts.c; pod sets and their node constraints: test_cycle_sets.c; the world
 * they build: cycle_fx.h.
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

#include "config/config.h"
#include "plugins/plugins.h"
#include "queue/queue.h"
#include "sched/core/cycle.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"

#include "tests/unit/cycle_fx.h"

/* ---- all or nothing ---------------------------------------------------------------------- */

static void test_gang_all_or_nothing(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x0F);                    /* node 0: 4 of 8 GPUs busy */
    struct gang *big = add_gang(w, 2, 8, 0); /* needs both nodes whole: only one is */
    for (int p = 0; p < 2; p++) {
        const struct sched_result *r = cycle(w, p ? "fifo" : "gangsched", 0);
        assert_null(placement_of(r, big));
        const struct sched_verdict *v = verdict_of(r, big);
        assert_non_null(v);
        assert_int_equal(v->why, SCHED_WHY_RESOURCES);
        assert_int_equal(r->n_placements, 0);
    }
    /* The same gang fits once the node is free, and then it gets every pod. */
    w->state[0] = (struct node_state){0};
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, big);
    assert_non_null(p);
    assert_int_not_equal(p->pods[0].node, p->pods[1].node);
    assert_int_equal(p->pods[0].gpu_mask, 0xFF);
    assert_int_equal(p->pods[1].gpu_mask, 0xFF);
    free_names(w);
    world_free(w);
}

static void test_never_fits_does_not_block_fifo(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    struct gang *huge = add_gang(w, 4, 8, 0); /* 32 GPUs on a 16-GPU cluster */
    struct gang *small = add_gang(w, 1, 1, 1);
    const struct sched_result *r = cycle(w, "fifo", 10);
    const struct sched_verdict *v = verdict_of(r, huge);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_NEVER);
    assert_non_null(placement_of(r, small));
    free_names(w);
    world_free(w);
}

static void test_strict_fifo_blocks_backfill_does_not(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x01);
    struct gang *big = add_gang(w, 2, 8, 0);
    struct gang *small = add_gang(w, 1, 2, 5);
    const struct sched_result *r = cycle(w, "fifo", 10);
    assert_int_equal(r->n_placements, 0); /* small waits behind big */
    r = cycle(w, "gangsched", 10);
    assert_null(placement_of(r, big));
    const struct sched_placement *p = placement_of(r, small);
    assert_non_null(p);
    assert_true(p->backfilled);
    free_names(w);
    world_free(w);
}

/* ---- topology ---------------------------------------------------------------------------- */

static void test_8gpu_job_takes_whole_node_not_4_plus_4(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:3");
    use_gpus(w, 0, 0x0F); /* 4 free on node 0, 4 free on node 1, node 2 whole */
    use_gpus(w, 1, 0xF0);
    struct gang *g = add_gang(w, 1, 8, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 2);
    assert_int_equal(p->pods[0].gpu_mask, 0xFF);
    free_names(w);
    world_free(w);
}

static void test_16gpu_gang_two_full_nodes_one_rack(void **unused)
{
    (void)unused;
    /* hgx:16 = two racks of 8. Rack 0: only node 7 free. Rack 1: nodes 8..10 free. */
    struct world *w = world_new("hgx:16");
    for (uint32_t i = 0; i < 7; i++)
        use_gpus(w, i, 0xFF);
    for (uint32_t i = 11; i < 16; i++)
        use_gpus(w, i, 0xFF);
    struct gang *g = add_gang(w, 2, 8, 0);
    int rack = w->c->topo.rack_level;
    assert_true(rack >= 0);
    /* the baseline spans racks (first fit: node 7 then node 8) */
    const struct sched_result *r = cycle(w, "fifo", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_int_not_equal(w->c->nodes[p->pods[0].node].dom[rack],
                         w->c->nodes[p->pods[1].node].dom[rack]);
    r = cycle(w, "gangsched", 0);
    p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(w->c->nodes[p->pods[0].node].dom[rack],
                     w->c->nodes[p->pods[1].node].dom[rack]);
    assert_true(p->pods[0].node >= 8 && p->pods[1].node >= 8);
    assert_int_equal(p->level, rack);
    free_names(w);
    world_free(w);
}

static void test_16x4_gang_inside_one_nvl72_clique(void **unused)
{
    (void)unused;
    /* Two NVL72 racks of 18 x 4 GPUs; rack 0 has only 10 free nodes, rack 1 all 18. */
    struct world *w = world_new("nvl72:2");
    int clique = w->c->topo.nvlink_level;
    assert_true(clique >= 0);
    for (uint32_t i = 0; i < 8; i++)
        use_gpus(w, i, 0x0F);
    struct gang *g = add_gang(w, 16, 4, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    uint32_t d0 = w->c->nodes[p->pods[0].node].dom[clique];
    for (uint32_t k = 1; k < 16; k++)
        assert_int_equal(w->c->nodes[p->pods[k].node].dom[clique], d0);
    assert_int_equal(p->level, clique);
    free_names(w);
    world_free(w);
}

static void test_best_fit_keeps_free_rack_whole(void **unused)
{
    (void)unused;
    /* Rack 0 has 2 free nodes among busy ones, rack 1 is entirely free: a 2-node gang goes to
     * rack 0 and leaves rack 1 whole for a larger gang. */
    struct world *w = world_new("hgx:16");
    for (uint32_t i = 0; i < 6; i++)
        use_gpus(w, i, 0xFF);
    struct gang *g = add_gang(w, 2, 8, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_true(p->pods[0].node < 8 && p->pods[1].node < 8);
    free_names(w);
    world_free(w);
}

/* An elastic gang's new members (gang.near: the nodes of its running members) go to the
 * tightest domain that holds one of those nodes, not where a free gang would go. */
static void test_joining_members_go_next_to_the_running_ones(void **unused)
{
    (void)unused;
    /* as test_best_fit_keeps_free_rack_whole: a free 2-node gang would go to rack 0; joining
     * members running on node 12 (rack 1) go to rack 1 */
    struct world *w = world_new("hgx:16");
    for (uint32_t i = 0; i < 6; i++)
        use_gpus(w, i, 0xFF);
    use_gpus(w, 12, 0xFF);
    static const uint32_t near_rack1[] = {12};
    struct gang *g = add_gang(w, 2, 8, 0);
    gang_set_near(g, near_rack1, 1);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_true(p->pods[0].node >= 8 && p->pods[1].node >= 8);
    free_names(w);
    world_free(w);

    /* one pod: on the node of a running member when it fits there, not on the fullest node */
    w = world_new("hgx:3");
    use_gpus(w, 1, 0x7F); /* node 1 has one GPU left: a free pod packs there */
    use_gpus(w, 2, 0x0F); /* node 2: a running member holds 4 GPUs */
    static const uint32_t near_node2[] = {2, UINT32_MAX}; /* a node not known is ignored */
    g = add_gang(w, 1, 1, 0);
    gang_set_near(g, near_node2, 2);
    r = cycle(w, "gangsched", 0);
    p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 2);
    free_names(w);
    world_free(w);

    /* no room in the members' rack: anywhere in the cluster */
    w = world_new("hgx:16");
    for (uint32_t i = 8; i < 16; i++)
        use_gpus(w, i, 0xFF);
    g = add_gang(w, 2, 8, 0);
    gang_set_near(g, near_rack1, 1);
    r = cycle(w, "gangsched", 0);
    p = placement_of(r, g);
    assert_non_null(p);
    assert_true(p->pods[0].node < 8 && p->pods[1].node < 8);
    free_names(w);
    world_free(w);
}

/* New members of a training gang join only in a window after its checkpoints (gang_set_join):
 * two 8-GPU members rejoining a 16-GPU job that checkpoints every 30 min may join within
 * 30 min x 16 / (16 + 16) = 15 min of a checkpoint; later they wait, with a verdict and a wake
 * at the next checkpoint. Members of an inference gang (it spreads) lose nothing: no rule. */
static void test_members_join_after_a_checkpoint(void **unused)
{
    (void)unused;
    static const uint32_t near[] = {0};
    struct world *w = world_new("hgx:4");
    struct gang *g = add_gang(w, 2, 8, 0);
    gang_set_near(g, near, 1);
    gang_set_join(g, 1000 * 1000, 1800 * 1000, 16); /* checkpoints at 1,000 s, 2,800 s, ... */
    assert_int_equal(g->join_open_ms, 900 * 1000);
    assert_int_equal(gang_join_at(g, 500 * 1000), 500 * 1000);   /* still restarting */
    assert_int_equal(gang_join_at(g, 1899 * 1000), 1899 * 1000); /* 899 s past */
    assert_int_equal(gang_join_at(g, 1900 * 1000), 2800 * 1000); /* 900 s past: wait */
    assert_int_equal(gang_join_at(g, 4700 * 1000), 4700 * 1000); /* 100 s past the third */
    assert_int_equal(gang_join_at(g, 5600 * 1000), 6400 * 1000); /* 1,000 s past: the fourth */
    const struct sched_result *r = cycle(w, "gangsched", 2000);
    assert_null(placement_of(r, g));
    const struct sched_verdict *v = verdict_of(r, g);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_CHECKPOINT);
    assert_int_equal(v->join_at_ms, 2800 * 1000);
    assert_int_equal(r->wake_ms, 2800 * 1000);
    char buf[512];
    sched_verdict_format(v, w->c, NULL, buf, sizeof(buf));
    assert_non_null(strstr(buf, "checkpoint: 2 pod(s), 16 GPU(s)"));
    assert_non_null(strstr(buf, "now 16m40s past (it checkpoints every 30m)"));
    assert_non_null(strstr(buf, "join within 15m after its next one"));
    r = cycle(w, "gangsched", 2800); /* at the checkpoint */
    assert_non_null(placement_of(r, g));
    assert_non_null(placement_of(cycle(w, "gangsched", 1000), g)); /* at the previous one */
    /* inference: joining loses nothing, no window */
    g->spread = true;
    gang_set_join(g, 1000 * 1000, 1800 * 1000, 16);
    assert_int_equal(g->join_every_ms, 0);
    assert_non_null(placement_of(cycle(w, "gangsched", 2000), g));
    g->spread = false;
    /* a window shorter than 10 s is 10 s; an interval of 10 s or less has none */
    gang_set_join(g, 0, 60 * 1000, 1000);
    assert_int_equal(g->join_open_ms, 10 * 1000);
    gang_set_join(g, 0, 1, 16); /* "checkpoint-interval: 1ms" */
    assert_int_equal(g->join_every_ms, 0);
    assert_int_equal(gang_join_at(g, 12345), 12345);
    /* the interval not known: at once */
    gang_set_join(g, 1000 * 1000, 0, 16);
    assert_non_null(placement_of(cycle(w, "gangsched", 2000), g));
    free_names(w);
    world_free(w);
}

static void test_4gpu_pod_on_free_island_of_2x4_node(void **unused)
{
    (void)unused;
    struct world *w = world_new("pcie:1");
    assert_int_equal(w->c->nodes[0].n_islands, 2);
    use_gpus(w, 0, 0x03); /* island 0-3 partly used */
    struct gang *g = add_gang(w, 1, 4, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].gpu_mask, 0xF0);
    /* the topology-blind baseline takes the lowest free ids and splits the island pair */
    r = cycle(w, "fifo", 0);
    p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].gpu_mask, 0x3C);
    free_names(w);
    world_free(w);
}

static void test_2gpu_pod_best_fit_island(void **unused)
{
    (void)unused;
    struct world *w = world_new("pcie:1");
    use_gpus(w, 0, 0x03); /* island 0 has 2 free (2,3), island 1 has 4 free */
    struct gang *g = add_gang(w, 1, 2, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].gpu_mask, 0x0C); /* the fuller island: island 1 stays whole */
    free_names(w);
    world_free(w);
}

static void test_split_islands_refused_when_no_island_fits(void **unused)
{
    (void)unused;
    struct world *w = world_new("pcie:1");
    use_gpus(w, 0, 0x11); /* 3 free in each island: a 4-GPU pod would have to split */
    struct gang *g = add_gang(w, 1, 4, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, g));
    const struct sched_verdict *v = verdict_of(r, g);
    assert_non_null(v);
    assert_int_equal(v->short_res, RES_GPU);
    free_names(w);
    world_free(w);
}

static void test_single_gpu_pod_packs_fullest_node(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:3");
    use_gpus(w, 1, 0x7F); /* node 1 has one GPU left */
    use_gpus(w, 2, 0x0F);
    struct gang *g = add_gang(w, 1, 1, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 1);
    assert_int_equal(p->pods[0].gpu_mask, 0x80);
    free_names(w);
    world_free(w);
}

static void test_topology_required_waits(void **unused)
{
    (void)unused;
    /* 2 free nodes, one in each rack: a gang that requires one rack waits, with a reason. */
    struct world *w = world_new("hgx:16");
    for (uint32_t i = 0; i < 16; i++)
        if (i != 3 && i != 12)
            use_gpus(w, i, 0xFF);
    struct gang *g = add_gang(w, 2, 8, 0);
    g->topo_required = (int8_t)w->c->topo.rack_level;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, g));
    const struct sched_verdict *v = verdict_of(r, g);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_TOPOLOGY);
    char buf[512];
    sched_verdict_format(v, w->c, NULL, buf, sizeof(buf));
    assert_non_null(strstr(buf, "topology"));
    /* Without the requirement the gang spans the two racks. */
    g->topo_required = -1;
    gang_finalize(g);
    r = cycle(w, "gangsched", 0);
    assert_non_null(placement_of(r, g));
    free_names(w);
    world_free(w);
}

/* A gang that requires one rack and is larger than any rack can ever be placed: never-fits
 * (rejected by the simulator, named in the daemon's status) rather than waiting forever for
 * `topology`; fifo, blind to topology, places it across racks. */
static void test_topology_required_never_fits(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:16");  /* racks of 8 nodes: 64 GPUs */
    use_gpus(w, 0, 0xFF);                   /* busy: it must not be placed at once */
    struct gang *g = add_gang(w, 10, 8, 0); /* 80 GPUs */
    g->topo_required = (int8_t)w->c->topo.rack_level;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_verdict *v = verdict_of(r, g);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_NEVER);
    assert_true(v->never_domain);
    char buf[512];
    sched_verdict_format(v, w->c, NULL, buf, sizeof(buf));
    assert_non_null(strstr(buf, "no single rack can ever hold the whole gang"));
    /* 64 GPUs fit a rack once it is free: it waits */
    struct gang *h = add_gang(w, 8, 8, 0);
    h->topo_required = (int8_t)w->c->topo.rack_level;
    gang_finalize(h);
    use_gpus(w, 8, 0xFF);
    r = cycle(w, "gangsched", 0);
    assert_int_equal(verdict_of(r, h)->why, SCHED_WHY_TOPOLOGY);
    free_names(w);
    world_free(w);
}

/* ---- filters ----------------------------------------------------------------------------- */

static void test_cordon_notready_taints(void **unused)
{
    (void)unused;
    struct world *w = world_raw("hgx:4");
    static const struct taint gpu_taint = {
        .key = "nvidia.com/gpu", .value = "", .effect = TAINT_NO_SCHEDULE};
    w->c->nodes[0].unschedulable = true;
    w->c->nodes[1].ready = false;
    w->c->nodes[2].taints = &gpu_taint;
    w->c->nodes[2].n_taints = 1;
    world_finalize(w);
    struct gang *a = add_gang(w, 1, 8, 0);
    struct gang *b = add_gang(w, 1, 8, 1);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *pa = placement_of(r, a);
    assert_non_null(pa);
    assert_int_equal(pa->pods[0].node, 3); /* the only usable node */
    const struct sched_verdict *v = verdict_of(r, b);
    assert_non_null(v);
    assert_int_equal(v->filtered[FILTER_CORDONED], 1);
    assert_int_equal(v->filtered[FILTER_NOT_READY], 1);
    assert_int_equal(v->filtered[FILTER_TAINT], 1);
    assert_int_equal(v->filtered[FILTER_RESOURCES], 1);
    char buf[512];
    sched_verdict_format(v, w->c, NULL, buf, sizeof(buf));
    assert_non_null(strstr(buf, "0/4 nodes"));
    assert_non_null(strstr(buf, "1 cordoned"));
    assert_non_null(strstr(buf, "untolerated taint"));
    /* A toleration opens the tainted node. */
    static const struct toleration tol = {
        .key = "nvidia.com/gpu", .value = NULL, .op_exists = true, .effect = -1};
    b->sets[0].tolerations = &tol;
    b->sets[0].n_tolerations = 1;
    gang_finalize(b);
    r = cycle(w, "gangsched", 0);
    const struct sched_placement *pb = placement_of(r, b);
    assert_non_null(pb);
    assert_int_equal(pb->pods[0].node, 2);
    free_names(w);
    world_free(w);
}

static void test_unhealthy_gpu_node(void **unused)
{
    (void)unused;
    /* node 0 lost a GPU (capacity 8, allocatable 7): no multi-GPU pod goes there */
    struct world *w = world_raw("hgx:2");
    w->c->nodes[0].alloc.v[RES_GPU] = 7;
    w->c->nodes[0].gpu_capacity = 8;
    world_finalize(w);
    use_gpus(w, 1, 0xFF);
    struct gang *tp = add_gang(w, 1, 4, 0);
    struct gang *one = add_gang(w, 1, 1, 1);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, tp));
    const struct sched_verdict *v = verdict_of(r, tp);
    assert_non_null(v);
    assert_int_equal(v->filtered[FILTER_GPU_HEALTH], 1);
    const struct sched_placement *p = placement_of(r, one);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 0);
    free_names(w);
    world_free(w);
}

static void test_shared_gpus_not_for_multi_gpu_gangs(void **unused)
{
    (void)unused;
    struct world *w = world_raw("hgx:2");
    w->c->nodes[1].gpu_sharing = GPU_TIME_SLICED;
    world_finalize(w);
    w->c->nodes[1].gpu_sharing = GPU_TIME_SLICED; /* keep it even if finalize recomputed it */
    use_gpus(w, 0, 0xFF);
    struct gang *multi = add_gang(w, 1, 2, 0);
    struct gang *one = add_gang(w, 1, 1, 1);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, multi));
    const struct sched_verdict *v = verdict_of(r, multi);
    assert_non_null(v);
    assert_int_equal(v->filtered[FILTER_SHARED_GPU], 1);
    assert_non_null(placement_of(r, one));
    free_names(w);
    world_free(w);
}

/* ---- reservations, ordering, determinism -------------------------------------------------- */

static void test_starving_gang_reserves_capacity(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x0F);
    use_gpus(w, 1, 0x0F);
    struct gang *big = add_gang(w, 1, 8, 0);   /* waits: no node has 8 free */
    struct gang *small = add_gang(w, 1, 4, 1); /* would fit on either node */
    /* Not yet starving: the small gang backfills. */
    const struct sched_result *r = cycle(w, "gangsched", 60);
    assert_int_equal(r->n_reservations, 0);
    assert_non_null(placement_of(r, small));
    /* After the starvation limit the big gang holds a node and the small one must use the
     * other. */
    const struct sched_policy *pol = sched_policy_find("gangsched");
    r = cycle(w, "gangsched", pol->starve_after_ms / 1000 + 1);
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->reservations[0].n_nodes, 1);
    uint32_t held = r->reservations[0].nodes[0];
    const struct sched_placement *p = placement_of(r, small);
    assert_non_null(p);
    assert_int_not_equal(p->pods[0].node, held);
    free_names(w);
    world_free(w);
}

/* A starving gang's reservation stays on last cycle's nodes while they are as good (expected
 * free no later than the new pick), and moves when they are not. */
static void test_reservation_is_sticky(void **unused)
{
    (void)unused;
    const struct sched_policy *pol = sched_policy_find("gangsched");
    int64_t starving_s = pol->starve_after_ms / 1000 + 1;
    for (int scenario = 0; scenario < 3; scenario++) {
        /* node 0: 2 GPUs free, node 1: 4 free, node 2: full; all busy until 2000 s */
        struct world *w = world_new("hgx:3");
        use_gpus(w, 0, 0x3F);
        use_gpus(w, 1, 0x0F);
        use_gpus(w, 2, 0xFF);
        for (uint32_t i = 0; i < 3; i++)
            w->state[i].release_ms = 2000 * 1000;
        struct gang *big = add_gang(w, 1, 8, 0);
        uint32_t hint_node = 0;
        struct sched_hold hint = {.gang = big, .nodes = &hint_node, .n_nodes = 1};
        if (scenario > 0) {
            w->hints = &hint;
            w->n_hints = 1;
        }
        if (scenario == 2)
            w->state[0].release_ms = 3000 * 1000; /* the old nodes now free up later */
        const struct sched_result *r = cycle(w, "gangsched", starving_s);
        assert_int_equal(r->n_reservations, 1);
        assert_ptr_equal(r->reservations[0].gang, big);
        assert_int_equal(r->reservations[0].n_nodes, 1);
        /* 0: no hint, the most free node; 1: the hint kept; 2: the hint is worse, moved */
        assert_int_equal(r->reservations[0].nodes[0], scenario == 1 ? 0 : 1);
        assert_int_equal(r->reservations[0].expected_start_ms, 2000 * 1000);
        free_names(w);
        world_free(w);
    }
}

static void test_backfill_into_reservation_needs_max_runtime(void **unused)
{
    (void)unused;
    /* node 0: 4 GPUs busy until t=2000 s by declared maximum run times; node 1: full. A whole
     * node gang starves and holds node 0 (expected start 2000 s). A 4-GPU gang declaring 1000 s
     * ends before that and may use node 0; an equal gang without a declaration may not. */
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x0F);
    use_gpus(w, 1, 0xFF);
    w->state[0].release_ms = 2000 * 1000;
    w->state[1].release_ms = INT64_MAX;
    struct gang *big = add_gang(w, 1, 8, 0);
    struct gang *undeclared = add_gang(w, 1, 4, 10);
    struct gang *declared = add_gang(w, 1, 4, 20);
    declared->max_runtime_ms = 1000 * 1000;
    gang_finalize(declared);
    const struct sched_result *r = cycle(w, "gangsched", 700);
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->reservations[0].nodes[0], 0);
    assert_int_equal(r->reservations[0].expected_start_ms, 2000 * 1000);
    assert_null(placement_of(r, undeclared));
    const struct sched_verdict *v = verdict_of(r, undeclared);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_RESERVED);
    /* the reason names the starving gang that holds node 0 and the rule to pass */
    assert_ptr_equal(v->blocked_by, big);
    assert_false(v->held_for_preemptor);
    assert_false(v->hold_start_unknown);
    char msg[1024];
    sched_verdict_format(v, w->c, NULL, msg, sizeof(msg));
    char want[64];
    snprintf(want, sizeof(want), "on nodes held for %s, which has waited past", big->name);
    if (!strstr(msg, want) || !strstr(msg, "gangsched.io/max-runtime") ||
        strstr(msg, "which is unknown"))
        fail_msg("reserved reason: %s", msg);
    const struct sched_placement *p = placement_of(r, declared);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 0);
    /* too long a declaration: it would delay the starving gang */
    declared->max_runtime_ms = 1400 * 1000;
    gang_finalize(declared);
    r = cycle(w, "gangsched", 700);
    assert_null(placement_of(r, declared));
    /* node 0's end unknown: the reservation has no expected start, and the reason says so */
    w->state[0].release_ms = INT64_MAX;
    r = cycle(w, "gangsched", 700);
    v = verdict_of(r, undeclared);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_RESERVED);
    assert_ptr_equal(v->blocked_by, big);
    assert_true(v->hold_start_unknown);
    sched_verdict_format(v, w->c, NULL, msg, sizeof(msg));
    if (!strstr(msg, "which is unknown (no run time is known for the gangs on the held nodes)"))
        fail_msg("reserved reason: %s", msg);
    free_names(w);
    world_free(w);
}

static void test_tp_groups_inside_islands(void **unused)
{
    (void)unused;
    struct world *w = world_new("pcie:1");
    use_gpus(w, 0, 0x01); /* island 0-3 has 3 free, island 4-7 has 4 */
    struct gang *g = add_gang(w, 1, 6, 0);
    g->tp_size = 3; /* two groups of 3: one per island */
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(__builtin_popcount(p->pods[0].gpu_mask & 0x0F), 3);
    assert_int_equal(__builtin_popcount(p->pods[0].gpu_mask & 0xF0), 3);
    g->tp_size = 4; /* groups of 4 cannot come out of 3 + 4 free */
    gang_finalize(g);
    r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, g));
    free_names(w);
    world_free(w);
}

static void test_slices_each_inside_one_rack(void **unused)
{
    (void)unused;
    /* 4 pods x 8 GPUs in slices of 2 pods per rack. Rack 0 has 3 free nodes, rack 1 one: only
     * one slice fits, so nothing is placed; with a second free node in rack 1 both slices fit,
     * each inside one rack. */
    struct world *w = world_new("hgx:16");
    for (uint32_t i = 3; i < 15; i++)
        use_gpus(w, i, 0xFF);
    struct gang *g = add_gang(w, 4, 8, 0);
    g->slice_size = 2;
    g->slice_level = (int8_t)w->c->topo.rack_level;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, g));
    w->state[14] = (struct node_state){0};
    r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    int rack = w->c->topo.rack_level;
    for (uint32_t k = 0; k < 4; k += 2)
        assert_int_equal(w->c->nodes[p->pods[k].node].dom[rack],
                         w->c->nodes[p->pods[k + 1].node].dom[rack]);
    free_names(w);
    world_free(w);
}

static void test_inference_spreads_training_packs(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:4");
    use_gpus(w, 1, 0x3F); /* node 1 has 2 free, the others 8 */
    struct gang *train = add_gang(w, 1, 1, 0);
    struct gang *serve = add_gang(w, 3, 1, 1);
    serve->spread = true;
    gang_finalize(serve);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, train);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 1); /* packed onto the fullest node */
    p = placement_of(r, serve);
    assert_non_null(p);
    /* three replicas on three different nodes, none on the nearly full node */
    assert_int_not_equal(p->pods[0].node, p->pods[1].node);
    assert_int_not_equal(p->pods[1].node, p->pods[2].node);
    assert_int_not_equal(p->pods[0].node, p->pods[2].node);
    for (uint32_t k = 0; k < 3; k++)
        assert_int_not_equal(p->pods[k].node, 1);
    free_names(w);
    world_free(w);
}

/* gangsched.io/topology-preferred: the search starts at the preferred level (the tightest
 * rack there, not the single node a search from the node level would find) and widens one level
 * at a time when no domain of that level holds the gang, where a required level would wait. */
static void test_topology_preferred_starts_there_then_widens(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:16"); /* racks 0-7 and 8-15, one block */
    int rack = w->c->topo.rack_level, block = rack - 1;
    assert_string_equal(w->c->topo.levels[block].name, "block");
    for (uint32_t i = 1; i < 8; i++)
        use_gpus(w, i, 0x0F); /* rack 0: node 0 free, nodes 1-7 half used */
    for (uint32_t i = 8; i < 16; i++)
        use_gpus(w, i, i < 10 ? 0x0F : 0xFF); /* rack 1: only nodes 8 and 9, half free */
    struct gang *plain = add_gang(w, 2, 4, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, plain);
    assert_non_null(p); /* from the node level: both pods on the free node 0 */
    assert_int_equal(p->pods[0].node, 0);
    assert_int_equal(p->pods[1].node, 0);
    plain->topo_preferred = (int8_t)rack;
    gang_finalize(plain);
    r = cycle(w, "gangsched", 0);
    p = placement_of(r, plain);
    assert_non_null(p); /* from the rack level: the rack it fills exactly, node 0 stays whole */
    assert_int_equal(p->level, rack);
    assert_int_equal(w->c->nodes[p->pods[0].node].dom[rack], 1);
    assert_int_equal(p->pods[0].node + p->pods[1].node, 8 + 9);

    /* three whole nodes: no rack has them (two free nodes in each), the block has */
    for (uint32_t i = 0; i < 16; i++)
        w->state[i] = (struct node_state){0};
    for (uint32_t i = 0; i < 16; i++)
        if (i != 0 && i != 1 && i != 8 && i != 9)
            use_gpus(w, i, 0x01);
    plain->sets[0].count = 3;
    plain->sets[0].req.v[RES_GPU] = 8;
    gang_finalize(plain);
    r = cycle(w, "gangsched", 0);
    p = placement_of(r, plain);
    assert_non_null(p);
    assert_int_equal(p->level, block);
    plain->topo_preferred = -1;
    plain->topo_required = (int8_t)rack;
    gang_finalize(plain);
    r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, plain));
    assert_int_equal(verdict_of(r, plain)->why, SCHED_WHY_TOPOLOGY);
    free_names(w);
    world_free(w);
}

/* Score terms are weighted per profile, and a placement names the top terms of its winner. */
static void test_profile_weights_and_top_terms(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:4");
    use_gpus(w, 2, 0x3F); /* node 2 has 2 free, the others 8 */
    struct gang *pack = add_gang(w, 1, 1, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, pack);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 2); /* training: binpack and topology, the fullest */
    assert_int_equal(p->n_terms, 2);
    assert_string_equal(plugin_scores[p->terms[0]]->name, "binpack");
    assert_int_equal(p->term_values[0], 1000 - 1000 / 8); /* 1 of 8 GPUs left over */
    assert_string_equal(plugin_scores[p->terms[1]]->name, "topology");
    assert_int_equal(p->term_values[1], 1000 * 6 / 8); /* 6 of 8 GPUs in use */
    static const double spread_only[SCORE_TERMS_MAX] = {0, 0, 1};
    pack->weights = spread_only; /* a profile of spread alone: the emptiest node */
    gang_finalize(pack);
    r = cycle(w, "gangsched", 0);
    p = placement_of(r, pack);
    assert_non_null(p);
    assert_int_not_equal(p->pods[0].node, 2);
    assert_int_equal(p->n_terms, 1);
    assert_string_equal(plugin_scores[p->terms[0]]->name, "spread");
    assert_int_equal(p->term_values[0], 1000);
    assert_int_equal(plugin_score_find("topology"), CONFIG_SCORE_TOPOLOGY);
    assert_int_equal(plugin_score_find("nope"), -1);
    free_names(w);
    world_free(w);
}

static void test_prefer_no_schedule_is_a_preference(void **unused)
{
    (void)unused;
    struct world *w = world_raw("hgx:2");
    static const struct taint soft = {
        .key = "maintenance", .value = "soon", .effect = TAINT_PREFER_NO_SCHEDULE};
    w->c->nodes[0].taints = &soft;
    w->c->nodes[0].n_taints = 1;
    world_finalize(w);
    use_gpus(w, 0, 0x0F); /* the tainted node would be the best fit */
    struct gang *a = add_gang(w, 1, 2, 0);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, a);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 1);
    /* when only the tainted node has room, it is used */
    use_gpus(w, 1, 0xFF);
    r = cycle(w, "gangsched", 0);
    p = placement_of(r, a);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 0);
    free_names(w);
    world_free(w);
}

static void test_near_miss_in_reason(void **unused)
{
    (void)unused;
    /* 3 whole nodes free in rack 0, 2 in rack 1: a gang of 4 that requires one rack waits and
     * the reason names the rack that came closest */
    struct world *w = world_new("hgx:16");
    for (uint32_t i = 3; i < 14; i++)
        use_gpus(w, i, 0xFF);
    struct gang *g = add_gang(w, 4, 8, 0);
    g->topo_required = (int8_t)w->c->topo.rack_level;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_verdict *v = verdict_of(r, g);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_TOPOLOGY);
    char buf[512];
    sched_verdict_format(v, w->c, NULL, buf, sizeof(buf));
    assert_non_null(strstr(buf, "best rack hgx-rack-000 holds 3 of 4 pods now"));
    free_names(w);
    world_free(w);
}

static void test_tp_groups_regressions(void **unused)
{
    (void)unused;
    /* tp-size 4 with 8-GPU pods on a mixed cluster: the 2x4 PCIe nodes hold them (two groups of
     * 4, one per island); a TP group of 16 across 8-GPU pods needs an NVLink domain of 16 GPUs,
     * which HGX nodes are not: never fits, said so at once */
    struct world *w = world_new("pcie:2,hgx:1");
    struct gang *g = add_gang(w, 3, 8, 0);
    g->tp_size = 4;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    assert_non_null(placement_of(r, g));
    free_names(w);
    world_free(w);
    w = world_new("hgx:2");
    g = add_gang(w, 2, 8, 0);
    g->tp_size = 16;
    g->slice_size = 2;
    g->slice_level = (int8_t)w->c->topo.nvlink_level;
    gang_finalize(g);
    /* a plain gang behind it is not skipped because the sliced one failed */
    struct gang *plain = add_gang(w, 2, 8, 1);
    r = cycle(w, "gangsched", 0);
    const struct sched_verdict *v = verdict_of(r, g);
    assert_non_null(v);
    assert_int_equal(v->why, SCHED_WHY_NEVER);
    assert_non_null(placement_of(r, plain));
    free_names(w);
    world_free(w);
}

static void test_priority_order_and_determinism(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:1");
    struct gang *old = add_gang(w, 1, 8, 0);
    struct gang *urgent = add_gang(w, 1, 8, 50);
    urgent->priority = 10;
    const struct sched_result *r = cycle(w, "gangsched", 100);
    assert_non_null(placement_of(r, urgent));
    assert_null(placement_of(r, old));
    r = cycle(w, "fifo", 100); /* the baseline ignores priority */
    assert_non_null(placement_of(r, old));
    /* same snapshot, same decisions */
    struct gang *more[6];
    for (int i = 0; i < 6; i++)
        more[i] = add_gang(w, 1, (i % 3) + 1, 10 + i);
    (void)more;
    r = cycle(w, "gangsched", 100);
    uint32_t n1 = r->n_placements;
    struct sched_assign first[16];
    for (uint32_t i = 0; i < n1; i++)
        first[i] = r->placements[i].pods[0];
    r = cycle(w, "gangsched", 100);
    assert_int_equal(r->n_placements, n1);
    for (uint32_t i = 0; i < n1; i++) {
        assert_int_equal(r->placements[i].pods[0].node, first[i].node);
        assert_int_equal(r->placements[i].pods[0].gpu_mask, first[i].gpu_mask);
    }
    free_names(w);
    world_free(w);
}

static void test_equal_shapes_share_verdict(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0xFF);
    use_gpus(w, 1, 0x01);
    struct gang *a = add_gang(w, 1, 8, 0);
    struct gang *b = add_gang(w, 1, 8, 1);
    struct gang *c = add_gang(w, 1, 8, 2);
    struct gang *d = add_gang(w, 1, 7, 3);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    assert_non_null(verdict_of(r, a));
    assert_null(verdict_of(r, b)); /* skipped: same shape as a, same fate */
    assert_null(verdict_of(r, c));
    assert_non_null(placement_of(r, d));
    assert_int_equal(r->n_examined, 4);
    free_names(w);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gang_all_or_nothing),
        cmocka_unit_test(test_never_fits_does_not_block_fifo),
        cmocka_unit_test(test_strict_fifo_blocks_backfill_does_not),
        cmocka_unit_test(test_8gpu_job_takes_whole_node_not_4_plus_4),
        cmocka_unit_test(test_16gpu_gang_two_full_nodes_one_rack),
        cmocka_unit_test(test_16x4_gang_inside_one_nvl72_clique),
        cmocka_unit_test(test_best_fit_keeps_free_rack_whole),
        cmocka_unit_test(test_joining_members_go_next_to_the_running_ones),
        cmocka_unit_test(test_4gpu_pod_on_free_island_of_2x4_node),
        cmocka_unit_test(test_2gpu_pod_best_fit_island),
        cmocka_unit_test(test_split_islands_refused_when_no_island_fits),
        cmocka_unit_test(test_single_gpu_pod_packs_fullest_node),
        cmocka_unit_test(test_topology_required_waits),
        cmocka_unit_test(test_topology_required_never_fits),
        cmocka_unit_test(test_cordon_notready_taints),
        cmocka_unit_test(test_unhealthy_gpu_node),
        cmocka_unit_test(test_shared_gpus_not_for_multi_gpu_gangs),
        cmocka_unit_test(test_starving_gang_reserves_capacity),
        cmocka_unit_test(test_backfill_into_reservation_needs_max_runtime),
        cmocka_unit_test(test_reservation_is_sticky),
        cmocka_unit_test(test_tp_groups_inside_islands),
        cmocka_unit_test(test_slices_each_inside_one_rack),
        cmocka_unit_test(test_inference_spreads_training_packs),
        cmocka_unit_test(test_topology_preferred_starts_there_then_widens),
        cmocka_unit_test(test_profile_weights_and_top_terms),
        cmocka_unit_test(test_prefer_no_schedule_is_a_preference),
        cmocka_unit_test(test_near_miss_in_reason),
        cmocka_unit_test(test_members_join_after_a_checkpoint),
        cmocka_unit_test(test_tp_groups_regressions),
        cmocka_unit_test(test_priority_order_and_determinism),
        cmocka_unit_test(test_equal_shapes_share_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
