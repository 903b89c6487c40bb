/* tests/unit/test_cycle.c: the pure core, scenario by scenario.
 *
 * Each test builds a small cluster and a few gangs, runs one sched_cycle() and checks the
 * decisions: all-or-nothing, strict FIFO vs backfill, topology-aware placement (whole nodes,
 * racks, NVLink islands, cliques), filters (taints, cordon, NotReady, shared GPUs), reservations
 * for starving gangs, verdicts and determinism.
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
#include "sched/core/eta.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"

/* ---- fixtures ---------------------------------------------------------------------------- */

struct world {
    struct cluster *c;
    struct node_state *state;
    struct gang gangs[32];
    uint32_t n_gangs;
    struct queue queue;
    const struct gang *pending[32];
    struct sched_queue_view view;
    struct arena arena;
    struct sched_result res;
    const struct sched_hold *hints; /* reservation hints for the next cycle */
    uint32_t n_hints;
};

static struct world *world_new(const char *spec)
{
    struct world *w = calloc(1, sizeof(*w));
    struct sched_errbuf eb = {{0}};
    w->c = cluster_new();
    assert_int_equal(nodes_generate(w->c, spec, &eb), 0);
    assert_int_equal(cluster_finalize(w->c, NULL, NULL, 0, &eb), 0);
    w->state = calloc(w->c->n_nodes, sizeof(*w->state));
    w->queue = (struct queue){.name = "q", .priority = 0, .weight = 1};
    arena_init(&w->arena, 0);
    return w;
}

/* Same, but lets the test edit nodes (taints, flags, labels) before finalizing. */
static struct world *world_raw(const char *spec)
{
    struct world *w = calloc(1, sizeof(*w));
    struct sched_errbuf eb = {{0}};
    w->c = cluster_new();
    assert_int_equal(nodes_generate(w->c, spec, &eb), 0);
    w->queue = (struct queue){.name = "q", .priority = 0, .weight = 1};
    arena_init(&w->arena, 0);
    return w;
}

static void world_finalize(struct world *w)
{
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(w->c, NULL, NULL, 0, &eb), 0);
    w->state = calloc(w->c->n_nodes, sizeof(*w->state));
}

static void world_free(struct world *w)
{
    arena_fini(&w->arena);
    free(w->state);
    cluster_free(w->c);
    free(w);
}

static void set_req(struct res_vec *r, int64_t gpus)
{
    memset(r, 0, sizeof(*r));
    r->v[RES_GPU] = gpus;
    r->v[RES_CPU] = 1000;
    r->v[RES_MEMORY] = 1ll << 30;
    r->v[RES_PODS] = 1;
}

/* A gang of `pods` pods with `gpus` GPUs each, submitted at `submit_s`. */
static struct gang *add_gang(struct world *w, uint32_t pods, int64_t gpus, int64_t submit_s)
{
    struct gang *g = &w->gangs[w->n_gangs];
    memset(g, 0, sizeof(*g));
    g->id = w->n_gangs++;
    char *name = malloc(16);
    snprintf(name, 16, "g%u", g->id);
    g->name = name;
    g->submit_ms = submit_s * 1000;
    g->n_sets = 1;
    g->sets[0].count = pods;
    set_req(&g->sets[0].req, gpus);
    g->topo_required = -1;
    g->topo_preferred = -1;
    g->slice_level = -1;
    gang_finalize(g);
    g->min_member = g->n_pods;
    return g;
}

/* Marks GPUs of node i as used by some other pod. */
static void use_gpus(struct world *w, uint32_t i, uint32_t mask)
{
    w->state[i].gpu_used |= mask;
    w->state[i].used.v[RES_GPU] += __builtin_popcount(mask);
}

static const struct sched_result *cycle(struct world *w, const char *policy, int64_t now_s)
{
    struct queue_list l;
    const struct sched_policy *pol = sched_policy_find(policy);
    assert_non_null(pol);
    queue_list_init(&l, pol->by_priority);
    for (uint32_t i = 0; i < w->n_gangs; i++)
        assert_int_equal(queue_list_insert(&l, &w->gangs[i]), 0);
    memcpy(w->pending, l.items, l.n * sizeof(*l.items));
    w->view =
        (struct sched_queue_view){.queue = &w->queue, .pending = w->pending, .n_pending = l.n};
    queue_list_fini(&l);
    struct sched_snapshot snap = {.now_ms = now_s * 1000,
                                  .cluster = w->c,
                                  .state = w->state,
                                  .queues = &w->view,
                                  .n_queues = 1,
                                  .policy = pol,
                                  .reserve_hints = w->hints,
                                  .n_reserve_hints = w->n_hints};
    arena_reset(&w->arena);
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
    return &w->res;
}

static const struct sched_placement *placement_of(const struct sched_result *r,
                                                  const struct gang *g)
{
    for (uint32_t i = 0; i < r->n_placements; i++)
        if (r->placements[i].gang == g)
            return &r->placements[i];
    return NULL;
}

static const struct sched_verdict *verdict_of(const struct sched_result *r, const struct gang *g)
{
    for (uint32_t i = 0; i < r->n_verdicts; i++)
        if (r->verdicts[i].gang == g)
            return &r->verdicts[i];
    return NULL;
}

static void free_names(struct world *w)
{
    for (uint32_t i = 0; i < w->n_gangs; i++)
        free((char *)w->gangs[i].name);
}

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

static void test_node_selector(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2,pcie:2");
    struct gang *g = add_gang(w, 1, 1, 0);
    static const struct kv sel = {.key = "nvidia.com/gpu.product", .value = "NVIDIA-L40S"};
    g->sets[0].node_selector = &sel;
    g->sets[0].n_node_selector = 1;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_string_equal(node_label(&w->c->nodes[p->pods[0].node], "nvidia.com/gpu.product"),
                        "NVIDIA-L40S");
    free_names(w);
    world_free(w);
}

static void test_affinity_gt_gpu_memory(void **unused)
{
    (void)unused;
    /* hgx (81559 MiB GPUs) and pcie L40S (46068 MiB): a pod that needs more than 48 GB per GPU
     * lands on hgx only; NotIn and DoesNotExist work on the same labels. */
    struct world *w = world_new("pcie:2,hgx:1");
    static const char *const mem[] = {"49152"};
    static const struct sel_req gt = {
        .key = "nvidia.com/gpu.memory", .op = SEL_GT, .values = mem, .n_values = 1};
    static const struct sel_term term = {.reqs = &gt, .n_reqs = 1};
    struct gang *g = add_gang(w, 1, 2, 0);
    g->sets[0].affinity = &term;
    g->sets[0].n_affinity = 1;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_string_equal(node_label(&w->c->nodes[p->pods[0].node], "nvidia.com/gpu.product"),
                        "NVIDIA-H100-80GB-HBM3");
    /* Lt on a value no node has below: nothing fits, and the reason counts the filter */
    static const char *const tiny[] = {"1000"};
    static const struct sel_req lt = {
        .key = "nvidia.com/gpu.memory", .op = SEL_LT, .values = tiny, .n_values = 1};
    static const struct sel_term term2 = {.reqs = &lt, .n_reqs = 1};
    g->sets[0].affinity = &term2;
    gang_finalize(g);
    r = cycle(w, "gangsched", 0);
    const struct sched_verdict *v = verdict_of(r, g);
    assert_non_null(v);
    assert_int_equal(v->filtered[FILTER_AFFINITY], 3);
    /* terms are ORed: Lt 1000 OR NotIn [H100] picks the L40S nodes */
    static const char *const h100[] = {"NVIDIA-H100-80GB-HBM3"};
    static const struct sel_req notin = {
        .key = "nvidia.com/gpu.product", .op = SEL_NOT_IN, .values = h100, .n_values = 1};
    static const struct sel_term terms[2] = {{.reqs = &lt, .n_reqs = 1},
                                             {.reqs = &notin, .n_reqs = 1}};
    g->sets[0].affinity = terms;
    g->sets[0].n_affinity = 2;
    gang_finalize(g);
    r = cycle(w, "gangsched", 0);
    p = placement_of(r, g);
    assert_non_null(p);
    assert_string_equal(node_label(&w->c->nodes[p->pods[0].node], "nvidia.com/gpu.product"),
                        "NVIDIA-L40S");
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
    const struct sched_placement *p = placement_of(r, declared);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 0);
    /* too long a declaration: it would delay the starving gang */
    declared->max_runtime_ms = 1400 * 1000;
    gang_finalize(declared);
    r = cycle(w, "gangsched", 700);
    assert_null(placement_of(r, declared));
    free_names(w);
    world_free(w);
}

/* ---- issue 19: the guard on quota waits, estimates, earliest-free reservations, starts ---- */

/* A cycle with a one-queue config (nominal = the cluster's GPUs, as the simulator generates
 * for one trace), run-time estimates per gang id, and the start planner on. */
/* cycle_quota()'s extras: per-pod releases and estimates on demand (NULL: none). */
struct cycle_extra {
    const struct sched_release *rels;
    uint32_t n_rels;
    const struct sched_runtime_source *src;
};

static const struct sched_result *cycle_quota_x(struct world *w, int64_t now_s, const int64_t *est,
                                                const struct cycle_extra *x,
                                                struct config **cfg_out);

static const struct sched_result *cycle_quota(struct world *w, int64_t now_s, const int64_t *est,
                                              struct config **cfg_out)
{
    return cycle_quota_x(w, now_s, est, NULL, cfg_out);
}

static const struct sched_result *cycle_quota_x(struct world *w, int64_t now_s, const int64_t *est,
                                                const struct cycle_extra *x,
                                                struct config **cfg_out)
{
    char yaml[512];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
             "cohorts:\n  - name: all\nqueues:\n  - name: q\n    cohort: all\n"
             "    quota:\n      default:\n        nvidia.com/gpu: %lld\n",
             (long long)w->c->total_gpus);
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb), 0);
    static int64_t usage[RES_MAX];
    memset(usage, 0, sizeof(usage));
    for (uint32_t i = 0; i < w->c->n_nodes; i++)
        usage[RES_GPU] += w->state[i].used.v[RES_GPU];
    struct queue_list l;
    const struct sched_policy *pol = sched_policy_find("gangsched");
    queue_list_init(&l, pol->by_priority);
    for (uint32_t i = 0; i < w->n_gangs; i++)
        assert_int_equal(queue_list_insert(&l, &w->gangs[i]), 0);
    memcpy(w->pending, l.items, l.n * sizeof(*l.items));
    w->view =
        (struct sched_queue_view){.queue = &w->queue, .pending = w->pending, .n_pending = l.n};
    queue_list_fini(&l);
    struct sched_snapshot snap = {.now_ms = now_s * 1000,
                                  .cluster = w->c,
                                  .state = w->state,
                                  .queues = &w->view,
                                  .n_queues = 1,
                                  .policy = pol,
                                  .config = cfg,
                                  .usage = usage,
                                  .runtime_est_ms = est,
                                  .n_runtime_est = est ? w->n_gangs : 0,
                                  .releases = x ? x->rels : NULL,
                                  .n_releases = x ? x->n_rels : 0,
                                  .runtime_src = x ? x->src : NULL,
                                  .plan_starts = true};
    arena_reset(&w->arena);
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
    *cfg_out = cfg;
    return &w->res;
}

static const struct sched_eta *eta_of(const struct sched_result *r, const struct gang *g)
{
    for (uint32_t i = 0; i < r->n_etas; i++)
        if (r->etas[i].gang == g)
            return &r->etas[i];
    return NULL;
}

/* One queue owning the cluster: "no GPUs left" is a quota verdict, and the starvation guard
 * must still engage (it returned on the quota verdict before). */
static void test_guard_engages_on_quota_wait(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x0F);
    use_gpus(w, 1, 0x0F);
    for (uint32_t i = 0; i < 2; i++)
        w->state[i].release_ms = INT64_MAX;
    struct gang *big = add_gang(w, 2, 8, 0);   /* 16 GPUs: quota 8 of 16 left */
    struct gang *small = add_gang(w, 1, 4, 1); /* fits quota and either node */
    struct config *cfg;
    const struct sched_result *r = cycle_quota(w, 60, NULL, &cfg);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_int_equal(r->n_reservations, 0); /* not starving yet: the small one backfills */
    assert_non_null(placement_of(r, small));
    assert_int_equal(r->wake_ms, 600 * 1000); /* when it starves: a cycle is due then */
    config_free(cfg);
    r = cycle_quota(w, 3600, NULL, &cfg);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->reservations[0].n_nodes, 2);
    assert_null(placement_of(r, small)); /* both nodes are held for the starving gang */
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* The reservation goes to the node expected to free earliest, not the one with most free now;
 * a gang estimated (not declared) to end before it may backfill it. */
static void test_reservation_earliest_and_estimated_backfill(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x0F); /* 4 free, busy until 5000 s */
    use_gpus(w, 1, 0x3F); /* 2 free, busy until 1000 s */
    w->state[0].release_ms = 5000 * 1000;
    w->state[1].release_ms = 1000 * 1000;
    struct gang *big = add_gang(w, 1, 8, 0);
    struct gang *quick = add_gang(w, 1, 2, 10); /* estimated 200 s: ends before 1000 s */
    struct gang *slow = add_gang(w, 1, 2, 20);  /* estimated 2 h */
    int64_t est[3] = {3600 * 1000, 200 * 1000, 7200 * 1000};
    struct config *cfg;
    const struct sched_result *r = cycle_quota(w, 700, est, &cfg);
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->reservations[0].nodes[0], 1);
    assert_int_equal(r->reservations[0].expected_start_ms, 1000 * 1000);
    const struct sched_placement *p = placement_of(r, quick);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 1); /* into the reserved node: it leaves in time */
    p = placement_of(r, slow);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 0); /* not into the reservation */
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* Queues q0 and q1 of cohort "all", 8 GPUs of nominal quota each. */
static struct config *two_queue_config(void)
{
    const char *yaml = "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
                       "cohorts:\n  - name: all\nqueues:\n"
                       "  - name: q0\n    cohort: all\n    quota:\n      default:\n"
                       "        nvidia.com/gpu: 8\n"
                       "  - name: q1\n    cohort: all\n    quota:\n      default:\n"
                       "        nvidia.com/gpu: 8\n";
    struct sched_errbuf eb = {{0}};
    struct config *cfg = NULL;
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &cfg, &eb), 0);
    return cfg;
}

/* A running gang of queue q with id `id`: a nameless copy of `like` (free_names frees each
 * gang's name) holding `gpus` GPUs. */
static struct gang *running_copy(struct world *w, const struct gang *like, uint32_t id, uint32_t q,
                                 int64_t gpus)
{
    struct gang *r = &w->gangs[w->n_gangs++];
    *r = *like;
    r->name = NULL;
    r->id = id;
    r->queue = q;
    r->sets[0].req.v[RES_GPU] = gpus;
    gang_finalize(r);
    return r;
}

/* A cycle at now_s of the two queues of two_queue_config() with the running gangs given. */
static const struct sched_result *two_queue_cycle(struct world *w, struct sched_snapshot *snap,
                                                  int64_t now_s)
{
    snap->now_ms = now_s * 1000;
    snap->cluster = w->c;
    snap->state = w->state;
    snap->n_queues = 2;
    snap->policy = sched_policy_find("gangsched");
    arena_reset(&w->arena);
    assert_int_equal(sched_cycle(snap, &w->arena, &w->res), 0);
    return &w->res;
}

/* Two queues of one cohort, 8 GPUs of nominal quota each, on 16 GPUs: a starving 16-GPU gang
 * of q0 must borrow q1's 8, which q1 uses within its nominal quota. It gets no reservation (its
 * expected start would be never: q1 may take its quota again whenever its gangs end), so q1's
 * next gang, within its guarantee, still starts. Before, both nodes were held for q0's gang
 * with no expected start, q1 was held below its nominal quota, and q0's gang waited longer. */
static void test_borrowing_quota_wait_reserves_nothing(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    use_gpus(w, 0, 0x3F); /* q1's running 6 GPUs */
    w->state[0].release_ms = 5000 * 1000;
    struct config *cfg = two_queue_config();
    int64_t usage[2 * RES_MAX] = {0};
    usage[1 * RES_MAX + RES_GPU] = 6;
    struct gang *big = add_gang(w, 2, 8, 0);   /* q0: 16 > its nominal 8; q1 lends only 2 */
    struct gang *small = add_gang(w, 1, 1, 0); /* q1: 6 + 1 <= 8 */
    small->queue = 1;
    int64_t est[2] = {3600 * 1000, 3600 * 1000};
    struct queue queues[2] = {{.name = "q0", .weight = 1}, {.name = "q1", .weight = 1}};
    const struct gang *pending0[1] = {big}, *pending1[1] = {small};
    struct sched_queue_view views[2] = {{.queue = &queues[0], .pending = pending0, .n_pending = 1},
                                        {.queue = &queues[1], .pending = pending1, .n_pending = 1}};
    struct sched_assign a1 = {.node = 0, .gpu_mask = 0x3F};
    struct sched_running running[1] = {
        {.gang = running_copy(w, small, 2, 1, 6), .pods = &a1, .non_preemptible = true}};
    struct sched_snapshot snap = {.running = running,
                                  .n_running = 1,
                                  .queues = views,
                                  .config = cfg,
                                  .usage = usage,
                                  .runtime_est_ms = est,
                                  .n_runtime_est = 2};
    const struct sched_result *r = two_queue_cycle(w, &snap, 3600);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_int_equal(r->n_reservations, 0);
    assert_non_null(placement_of(r, small)); /* q1 keeps its guarantee */
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* Expected starts: a gang waits for the node's release, the next one for the first's end. */
/* Two queues of one cohort: a starving gang of q0 waits for quota (q1 uses all it could
 * borrow). Its reservation also holds q0's quota: a younger q0 gang that would run past the
 * reservation's start waits (`blocked`), one that ends before it starts. */
static void test_quota_wait_holds_the_queue(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:3");
    use_gpus(w, 0, 0x0F); /* q0's running 4 GPUs, until 5000 s */
    use_gpus(w, 1, 0xFF); /* q1's 8 GPUs, until 9000 s */
    w->state[0].release_ms = 5000 * 1000;
    w->state[1].release_ms = 9000 * 1000;
    struct config *cfg = two_queue_config();
    int64_t usage[2 * RES_MAX] = {0};
    usage[0 * RES_MAX + RES_GPU] = 4;
    usage[1 * RES_MAX + RES_GPU] = 8;
    struct gang *big = add_gang(w, 1, 8, 0);    /* q0: 4 + 8 > 8, nothing left to borrow */
    struct gang *slow = add_gang(w, 1, 2, 10);  /* q0, estimated 2 h */
    struct gang *quick = add_gang(w, 1, 2, 20); /* q0, estimated 100 s */
    int64_t est[3] = {3600 * 1000, 7200 * 1000, 100 * 1000};
    struct queue queues[2] = {{.name = "q0", .weight = 1}, {.name = "q1", .weight = 1}};
    const struct gang *pending[3] = {big, slow, quick};
    struct sched_queue_view views[2] = {{.queue = &queues[0], .pending = pending, .n_pending = 3},
                                        {.queue = &queues[1], .pending = NULL, .n_pending = 0}};
    /* what runs: q0's 4 GPUs on node 0, q1's 8 on node 1 (gangs of their own) */
    struct sched_assign a0 = {.node = 0, .gpu_mask = 0x0F}, a1 = {.node = 1, .gpu_mask = 0xFF};
    struct sched_running running[2] = {
        {.gang = running_copy(w, slow, 3, 0, 4), .pods = &a0, .non_preemptible = true},
        {.gang = running_copy(w, slow, 4, 1, 8), .pods = &a1, .non_preemptible = true}};
    struct sched_snapshot snap = {.running = running,
                                  .n_running = 2,
                                  .queues = views,
                                  .config = cfg,
                                  .usage = usage,
                                  .runtime_est_ms = est,
                                  .n_runtime_est = 3};
    const struct sched_result *r = two_queue_cycle(w, &snap, 3600);
    assert_int_equal(verdict_of(r, big)->why, SCHED_WHY_QUOTA);
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->reservations[0].expected_start_ms, 5000 * 1000);
    assert_null(placement_of(r, slow));
    assert_int_equal(verdict_of(r, slow)->why, SCHED_WHY_BLOCKED);
    assert_ptr_equal(verdict_of(r, slow)->blocked_by, big);
    char buf[256];
    sched_verdict_format(verdict_of(r, slow), w->c, cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "g0"));
    assert_non_null(placement_of(r, quick)); /* gone at 3700 s, before 5000 s */
    /* not starving yet: no hold, the slow one starts */
    r = two_queue_cycle(w, &snap, 60);
    assert_int_equal(r->n_reservations, 0);
    assert_non_null(placement_of(r, slow));
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* One full 8-GPU node whose GPUs come back at 1,000 s, and three 8-GPU gangs waiting for it. */
static struct world *three_waiting(struct gang **a, struct gang **b, struct gang **c)
{
    struct world *w = world_new("hgx:1");
    use_gpus(w, 0, 0xFF);
    w->state[0].release_ms = 1000 * 1000;
    *a = add_gang(w, 1, 8, 0);
    *b = add_gang(w, 1, 8, 1);
    *c = add_gang(w, 1, 8, 2);
    return w;
}

static void test_start_estimates(void **unused)
{
    (void)unused;
    struct gang *a, *b, *c;
    struct world *w = three_waiting(&a, &b, &c);
    int64_t est[3] = {500 * 1000, 300 * 1000, 0}; /* c's run time is unknown */
    struct config *cfg;
    const struct sched_result *r = cycle_quota(w, 100, est, &cfg);
    const struct sched_eta *ea = eta_of(r, a), *eb_ = eta_of(r, b), *ec = eta_of(r, c);
    assert_non_null(ea);
    assert_non_null(eb_);
    assert_non_null(ec);
    assert_int_equal(ea->kind, SCHED_ETA_AT);
    assert_int_equal(ea->start_ms, 1000 * 1000);
    assert_int_equal(eb_->kind, SCHED_ETA_AT);
    assert_int_equal(eb_->start_ms, 1500 * 1000);
    assert_int_equal(eb_->ahead, 1);
    assert_int_equal(ec->kind, SCHED_ETA_AT);
    assert_int_equal(ec->start_ms, 1800 * 1000);
    char buf[64];
    eta_format(ea, 100 * 1000, buf, sizeof(buf));
    assert_string_equal(buf, "in 15m");
    struct sched_eta q = {.kind = SCHED_ETA_BEHIND, .ahead = 300};
    eta_format(&q, 0, buf, sizeof(buf));
    assert_string_equal(buf, "no estimate: behind 300 gangs");
    config_free(cfg);
    /* nothing is known of what runs: no estimate */
    w->state[0].release_ms = INT64_MAX;
    r = cycle_quota(w, 100, est, &cfg);
    assert_int_equal(eta_of(r, a)->kind, SCHED_ETA_UNKNOWN);
    config_free(cfg);
    free_names(w);
    world_free(w);
}

/* sched_runtime_source of the tests: the run times of an array, calls counted. */
struct est_src {
    const int64_t *v;
    uint32_t n, calls;
};

static int64_t est_src_get(void *ctx, const struct gang *g, bool typical)
{
    (void)typical;
    struct est_src *e = ctx;
    e->calls++;
    return g->id < e->n ? e->v[g->id] : 0;
}

/* Estimates asked for on demand give the plan of the arrays; the planner's walks stop at
 * ETA_MAX_STEPS events per cycle, and the gangs from there on are "behind" the planned ones. */
static void test_start_estimates_on_demand_and_bounded(void **unused)
{
    (void)unused;
    struct gang *a, *b, *c;
    struct world *w = three_waiting(&a, &b, &c);
    int64_t est[3] = {500 * 1000, 300 * 1000, 0};
    struct est_src src = {.v = est, .n = 3};
    struct sched_runtime_source rs = {.est = est_src_get, .ctx = &src};
    struct cycle_extra x = {.src = &rs};
    struct config *cfg;
    const struct sched_result *r = cycle_quota_x(w, 100, NULL, &x, &cfg);
    assert_true(src.calls > 0);
    assert_int_equal(eta_of(r, a)->start_ms, 1000 * 1000); /* as test_start_estimates */
    assert_int_equal(eta_of(r, b)->start_ms, 1500 * 1000);
    assert_int_equal(eta_of(r, c)->start_ms, 1800 * 1000);
    config_free(cfg);
    /* per-pod releases: the node's 8 GPUs at 150 s, then many events that free nothing */
    uint32_t n = ETA_MAX_STEPS + 16;
    struct sched_release *rels = calloc(n, sizeof(*rels));
    assert_non_null(rels);
    rels[0] = (struct sched_release){.node = 0, .gpus = 8, .t_ms = 150 * 1000};
    for (uint32_t k = 1; k < n; k++)
        rels[k] = (struct sched_release){.node = 0, .gpus = 0, .t_ms = 200 * 1000 + k};
    x.rels = rels;
    x.n_rels = 100; /* a short walk: b starts when a ends, at 150 s + 500 s */
    r = cycle_quota_x(w, 100, NULL, &x, &cfg);
    assert_int_equal(eta_of(r, a)->kind, SCHED_ETA_AT);
    assert_int_equal(eta_of(r, a)->start_ms, 150 * 1000);
    assert_int_equal(eta_of(r, b)->kind, SCHED_ETA_AT);
    assert_int_equal(eta_of(r, b)->start_ms, 650 * 1000);
    config_free(cfg);
    x.n_rels = n; /* b's walk would pass more than ETA_MAX_STEPS events before 650 s */
    r = cycle_quota_x(w, 100, NULL, &x, &cfg);
    assert_int_equal(eta_of(r, a)->kind, SCHED_ETA_AT);
    assert_int_equal(eta_of(r, a)->start_ms, 150 * 1000);
    assert_int_equal(eta_of(r, b)->kind, SCHED_ETA_BEHIND);
    assert_int_equal(eta_of(r, b)->ahead, 1);
    assert_int_equal(eta_of(r, c)->kind, SCHED_ETA_BEHIND);
    assert_int_equal(eta_of(r, c)->ahead, 1);
    config_free(cfg);
    free(rels);
    free_names(w);
    world_free(w);
}

/* The planner's expected starts as the planner's rules state them (eta.h), computed the plain
 * way: for each waiting gang in the cycle's order, every node's free GPUs at now and at every
 * later event time, the first time its pods fit, then its claim on the nodes with room in node
 * order. The planner keeps walk states between gangs (cursors); this is the reference it must
 * equal. Per-node releases (no per-pod list), no reservations. */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

struct ref_ev {
    int64_t t;
    uint32_t node;
    int64_t gpus;
};

static int64_t ref_free(const int64_t *base, const struct ref_ev *ev, uint32_t n_ev, uint32_t i,
                        int64_t t, bool none)
{
    int64_t f = base[i];
    for (uint32_t e = 0; !none && e < n_ev; e++)
        if (ev[e].node == i && ev[e].t <= t)
            f += ev[e].gpus;
    return f;
}

static void ref_plan(struct world *w, const struct sched_result *r, const int64_t *est, int64_t now,
                     int64_t *want_t, int *want_kind)
{
    uint32_t nn = w->c->n_nodes, n_ev = 0;
    int64_t base[64], rel[64];
    struct ref_ev ev[64 + 4 * 32 * 8];
    for (uint32_t i = 0; i < nn; i++) {
        base[i] = w->c->nodes[i].n_gpus - __builtin_popcount(w->state[i].gpu_used);
        rel[i] = w->state[i].release_ms;
    }
    for (uint32_t k = 0; k < r->n_placements; k++) {
        const struct sched_placement *pl = &r->placements[k];
        for (uint32_t x = 0; x < pl->gang->n_pods; x++) {
            uint32_t i = pl->pods[x].node;
            base[i] -= __builtin_popcount(pl->pods[x].gpu_mask);
            if (now + est[pl->gang->id] > rel[i])
                rel[i] = now + est[pl->gang->id];
        }
    }
    for (uint32_t i = 0; i < nn; i++)
        if (w->c->nodes[i].n_gpus - base[i] > 0)
            ev[n_ev++] =
                (struct ref_ev){rel[i] > now ? rel[i] : now, i, w->c->nodes[i].n_gpus - base[i]};
    for (uint32_t e = 0; e < r->n_etas; e++) {
        const struct gang *g = r->etas[e].gang;
        int64_t k = g->sets[0].req.v[RES_GPU], t = INT64_MAX;
        want_kind[g->id] = SCHED_ETA_UNKNOWN;
        /* now before any event, then every event time in order */
        for (int64_t cand = now, none = 1;; none = 0) {
            uint64_t slots = 0;
            for (uint32_t i = 0; i < nn; i++) {
                int64_t f = ref_free(base, ev, n_ev, i, cand, none);
                slots += f > 0 ? (uint64_t)(f / k) : 0;
            }
            if (slots >= g->n_pods) {
                t = cand;
                break;
            }
            int64_t next = INT64_MAX;
            for (uint32_t x = 0; x < n_ev; x++)
                if ((ev[x].t > cand || (none && ev[x].t == cand)) && ev[x].t < next)
                    next = ev[x].t;
            if (next == INT64_MAX)
                break;
            cand = next;
        }
        if (t == INT64_MAX)
            continue;
        const struct sched_verdict *v = verdict_of(r, g);
        if (t == now && v && v->why == SCHED_WHY_QUOTA) {
            want_kind[g->id] = SCHED_ETA_QUOTA;
            continue;
        }
        want_kind[g->id] = SCHED_ETA_AT;
        want_t[g->id] = t;
        uint64_t left = g->n_pods;
        int64_t fr[64];
        for (uint32_t i = 0; i < nn; i++)
            fr[i] = ref_free(base, ev, n_ev, i, t, false);
        for (uint32_t i = 0; i < nn && left > 0; i++) {
            uint64_t take = fr[i] > 0 ? (uint64_t)(fr[i] / k) : 0;
            take = take < left ? take : left;
            if (take == 0)
                continue;
            left -= take;
            int64_t gpus = (int64_t)take * k;
            if (t == now)
                base[i] -= gpus;
            else
                ev[n_ev++] = (struct ref_ev){t, i, -gpus};
            ev[n_ev++] = (struct ref_ev){t + est[g->id], i, gpus};
        }
    }
}

static void test_start_estimates_match_reference(void **unused)
{
    (void)unused;
    uint64_t seed = 0x5eed;
    for (int round = 0; round < 200; round++) {
        struct world *w = world_new("hgx:6");
        for (uint32_t i = 0; i < w->c->n_nodes; i++) {
            use_gpus(w, i, (uint32_t)(rnd(&seed) & 0xFF));
            w->state[i].release_ms = (int64_t)(200 + rnd(&seed) % 4000) * 1000;
        }
        static const int64_t sizes[] = {1, 2, 4, 8};
        int64_t est[32];
        uint32_t n = 8 + (uint32_t)(rnd(&seed) % 22);
        for (uint32_t j = 0; j < n; j++) {
            add_gang(w, 1 + (uint32_t)(rnd(&seed) % 6), sizes[rnd(&seed) % 4], (int64_t)j);
            est[j] = (int64_t)(100 + rnd(&seed) % 3000) * 1000;
        }
        struct config *cfg;
        const struct sched_result *r = cycle_quota(w, 100, est, &cfg);
        int64_t want_t[32];
        int want_kind[32];
        for (uint32_t j = 0; j < n; j++)
            want_kind[j] = -1;
        ref_plan(w, r, est, 100 * 1000, want_t, want_kind);
        for (uint32_t e = 0; e < r->n_etas; e++) {
            const struct sched_eta *got = &r->etas[e];
            uint32_t id = got->gang->id;
            if (got->kind == SCHED_ETA_NEVER)
                continue; /* the cycle's verdict, not the walk's */
            assert_int_equal(got->kind, want_kind[id]);
            if (got->kind == SCHED_ETA_AT)
                assert_int_equal(got->start_ms, want_t[id]);
        }
        config_free(cfg);
        free_names(w);
        world_free(w);
    }
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

static void test_heterogeneous_gang(void **unused)
{
    (void)unused;
    /* a launcher pod without GPUs plus 2 workers of 8 GPUs */
    struct world *w = world_new("hgx:2");
    struct gang *g = add_gang(w, 2, 8, 0);
    g->n_sets = 2;
    g->sets[1].count = 1;
    set_req(&g->sets[1].req, 0);
    gang_finalize(g);
    assert_int_equal(g->n_pods, 3);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(p->pods[2].gpu_mask, 0);
    /* one more GPU worker than the cluster holds: nothing of it is placed */
    g->sets[0].count = 3;
    gang_finalize(g);
    r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, g));
    assert_int_equal(r->n_placements, 0);
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
        cmocka_unit_test(test_4gpu_pod_on_free_island_of_2x4_node),
        cmocka_unit_test(test_2gpu_pod_best_fit_island),
        cmocka_unit_test(test_split_islands_refused_when_no_island_fits),
        cmocka_unit_test(test_single_gpu_pod_packs_fullest_node),
        cmocka_unit_test(test_topology_required_waits),
        cmocka_unit_test(test_topology_required_never_fits),
        cmocka_unit_test(test_cordon_notready_taints),
        cmocka_unit_test(test_node_selector),
        cmocka_unit_test(test_affinity_gt_gpu_memory),
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
        cmocka_unit_test(test_tp_groups_regressions),
        cmocka_unit_test(test_priority_order_and_determinism),
        cmocka_unit_test(test_guard_engages_on_quota_wait),
        cmocka_unit_test(test_reservation_earliest_and_estimated_backfill),
        cmocka_unit_test(test_start_estimates),
        cmocka_unit_test(test_start_estimates_on_demand_and_bounded),
        cmocka_unit_test(test_start_estimates_match_reference),
        cmocka_unit_test(test_quota_wait_holds_the_queue),
        cmocka_unit_test(test_borrowing_quota_wait_reserves_nothing),
        cmocka_unit_test(test_equal_shapes_share_verdict),
        cmocka_unit_test(test_heterogeneous_gang),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
