/* tests/unit/test_cycle_sets.c: the pure core, a gang's pod sets and their node constraints.
 *
 * Each test builds a small cluster and a gang, runs one sched_cycle() and checks where its pods
 * go: nodeSelector, required node affinity (Gt on GPU memory, NotIn, DoesNotExist), preferred
 * node affinity (per node and per domain), gangs of several pod sets up to GANG_MAX_SETS. The
 * world: cycle_fx.h; the other scenarios: test_cycle.c.
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

/* Preferred node affinity (core/v1 PreferredSchedulingTerm) orders the nodes: the largest sum of
 * matched weights first, then the usual score order; required terms by matchFields pin a node
 * by name, and an empty required term matches no node. */
static void test_preferred_node_affinity(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:4");
    use_gpus(w, 0, 0x7F); /* node 0: one GPU free, the best fit of a one-GPU pod */
    const char *n2[] = {w->c->nodes[2].name}, *n3[] = {w->c->nodes[3].name};
    const struct sel_req
        on2 = {.key = "metadata.name", .field = true, .op = SEL_IN, .values = n2, .n_values = 1},
        on3 = {.key = "metadata.name", .field = true, .op = SEL_IN, .values = n3, .n_values = 1};
    const struct pref_term prefs[2] = {{.weight = 50, .term = {.reqs = &on2, .n_reqs = 1}},
                                       {.weight = 80, .term = {.reqs = &on3, .n_reqs = 1}}};
    struct gang *g = add_gang(w, 1, 1, 0);
    const struct sched_placement *p = placement_of(cycle(w, "gangsched", 0), g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 0); /* no preference: best fit */
    g->sets[0].pref = prefs;
    g->sets[0].n_pref = 1;
    gang_finalize(g);
    p = placement_of(cycle(w, "gangsched", 0), g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 2);
    g->sets[0].n_pref = 2; /* node 3 weighs more */
    gang_finalize(g);
    p = placement_of(cycle(w, "gangsched", 0), g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 3);
    /* two whole-node pods: the domain's nodes are filled preferred first (else 1 and 2) */
    struct gang *big = add_gang(w, 2, 8, 0);
    big->sets[0].pref = &prefs[1];
    big->sets[0].n_pref = 1;
    gang_finalize(big);
    g->sets[0].n_pref = 0;
    gang_finalize(g);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    p = placement_of(r, big);
    assert_non_null(p);
    assert_true(p->pods[0].node == 3 || p->pods[1].node == 3);
    /* a required term by matchFields pins node 2; an empty required term matches no node */
    free((char *)big->name);
    w->n_gangs = 1;
    const struct sel_term pin = {.reqs = &on2, .n_reqs = 1}, empty = {.reqs = NULL, .n_reqs = 0};
    g->sets[0].affinity = &pin;
    g->sets[0].n_affinity = 1;
    gang_finalize(g);
    p = placement_of(cycle(w, "gangsched", 0), g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 2);
    g->sets[0].affinity = &empty;
    gang_finalize(g);
    r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, g));
    assert_int_equal(verdict_of(r, g)->filtered[FILTER_AFFINITY], 4);
    free_names(w);
    world_free(w);
}

/* Preferred node affinity also chooses the domain: two free racks of 8 HGX nodes; a gang of two
 * whole-node pods goes to the first (ties: lowest domain id) unless its pods prefer the second
 * rack's nodes; preferring three nodes of the first and one of the second, it stays in the
 * first, where both its pods get a preferred node. */
static void test_preferred_node_affinity_picks_the_domain(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:16");
    const char *r1[] = {"hgx-rack-001"}, *some[] = {w->c->nodes[3].name, w->c->nodes[5].name,
                                                    w->c->nodes[6].name, w->c->nodes[9].name};
    const struct sel_req
        in_r1 = {.key = TOPO_LABEL_RACK, .op = SEL_IN, .values = r1, .n_values = 1},
        by_name = {
            .key = "metadata.name", .field = true, .op = SEL_IN, .values = some, .n_values = 4};
    const struct pref_term on_r1 = {.weight = 10, .term = {&in_r1, 1}},
                           named = {.weight = 10, .term = {&by_name, 1}};
    struct gang *g = add_gang(w, 2, 8, 0);
    const struct sched_placement *p = placement_of(cycle(w, "gangsched", 0), g);
    assert_non_null(p);
    assert_true(p->pods[0].node < 8 && p->pods[1].node < 8);
    g->sets[0].pref = &on_r1;
    g->sets[0].n_pref = 1;
    gang_finalize(g);
    p = placement_of(cycle(w, "gangsched", 0), g);
    assert_non_null(p);
    assert_true(p->pods[0].node >= 8 && p->pods[1].node >= 8);
    g->sets[0].pref = &named;
    gang_finalize(g);
    p = placement_of(cycle(w, "gangsched", 0), g);
    assert_non_null(p);
    for (int k = 0; k < 2; k++)
        assert_true(p->pods[k].node == 3 || p->pods[k].node == 5 || p->pods[k].node == 6);
    free_names(w);
    world_free(w);
}

/* Four equal gangs of two whole-node pods in one cycle, preferring nodes 0 and 1 of the first
 * rack and 16 to 19 of the third (weight 100), the second rack used but for nodes 14 and 15:
 * the first gang takes 0 and 1, the next two the third rack's preferred nodes, and the last,
 * with no preferred node left, the fullest rack (the second) by the usual score. The domain
 * sums kept across them (place_fitc.c) must follow the placements: once with six nodes of
 * weight (the values from those nodes), once with every node of weight 1 besides (the kept
 * slots per tier). */
static void test_preferred_domains_follow_placements(void **unused)
{
    (void)unused;
    for (int every = 0; every < 2; every++) {
        struct world *w = world_new("hgx:24");
        for (uint32_t i = 8; i < 14; i++)
            use_gpus(w, i, 0xFF);
        const char *names[6];
        static const uint32_t named[6] = {0, 1, 16, 17, 18, 19};
        for (int k = 0; k < 6; k++)
            names[k] = w->c->nodes[named[k]].name;
        const struct sel_req by_name = {.key = "metadata.name",
                                        .field = true,
                                        .op = SEL_IN,
                                        .values = names,
                                        .n_values = 6},
                             any = {.key = "kubernetes.io/hostname", .op = SEL_EXISTS};
        const struct pref_term pref[2] = {{.weight = 100, .term = {&by_name, 1}},
                                          {.weight = 1, .term = {&any, 1}}};
        struct gang *g[4];
        for (int x = 0; x < 4; x++) {
            g[x] = add_gang(w, 2, 8, x);
            g[x]->sets[0].pref = pref;
            g[x]->sets[0].n_pref = every ? 2 : 1;
            gang_finalize(g[x]);
        }
        const struct sched_result *r = cycle(w, "gangsched", 10);
        assert_true(r->n_fit_cached > 0);
        static const uint32_t lo[4] = {0, 16, 16, 14}, hi[4] = {1, 19, 19, 15};
        for (int x = 0; x < 4; x++) {
            const struct sched_placement *p = placement_of(r, g[x]);
            assert_non_null(p);
            for (int k = 0; k < 2; k++)
                assert_true(p->pods[k].node >= lo[x] && p->pods[k].node <= hi[x]);
        }
        free_names(w);
        world_free(w);
    }
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

/* A gang of GANG_MAX_SETS pod sets (a head and seven worker groups) is placed whole, each pod
 * with its own set's request: pods of 1 to 7 GPUs (28) and 4 of 8 fill the 64 GPUs there are,
 * because the largest pods go first (the pods of 1 to 7 GPUs first, each on the fullest node
 * it fits, take 5 nodes); with one more pod of 8, none of it is placed. */
static void test_gang_of_every_set(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:8");
    struct gang *g = add_gang(w, 1, 1, 0);
    g->n_sets = GANG_MAX_SETS;
    for (uint32_t s = 0; s < GANG_MAX_SETS; s++) { /* set s: 1 pod of s + 1 GPUs, the last 4 */
        g->sets[s].count = s + 1 < GANG_MAX_SETS ? 1 : 4;
        set_req(&g->sets[s].req, (int64_t)s + 1);
    }
    gang_finalize(g);
    assert_int_equal(g->n_pods, GANG_MAX_SETS - 1 + 4);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    for (uint32_t k = 0; k < g->n_pods; k++) /* pods in set order */
        assert_int_equal(__builtin_popcount(p->pods[k].gpu_mask),
                         k < GANG_MAX_SETS - 1 ? k + 1 : GANG_MAX_SETS);
    g->sets[GANG_MAX_SETS - 1].count = 5;
    gang_finalize(g);
    r = cycle(w, "gangsched", 0);
    assert_null(placement_of(r, g));
    assert_int_equal(r->n_placements, 0);
    free_names(w);
    world_free(w);
}

/* A gang of two pod sets, one pod of 8 GPUs each (the second asks for more cpu: another spec),
 * required inside a domain of `level` (-1: none). */
static struct gang *two_specs_of_8(struct world *w, int8_t level)
{
    struct gang *g = add_gang(w, 1, 8, 0);
    g->n_sets = 2;
    g->sets[1] = g->sets[0];
    g->sets[1].req.v[RES_CPU] = 2000;
    g->topo_required = level;
    gang_finalize(g);
    return g;
}

/* A starving gang of two pod sets, each one pod of 8 GPUs, is held two nodes: a node that could
 * take a pod of either set is counted once, for the first set still short in the fill order. */
static void test_reservation_holds_every_set(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:3");
    for (uint32_t i = 0; i < 3; i++)
        use_gpus(w, i, 0x0F);
    struct gang *big = two_specs_of_8(w, -1);
    const struct sched_policy *pol = sched_policy_find("gangsched");
    const struct sched_result *r = cycle(w, "gangsched", pol->starve_after_ms / 1000 + 1);
    assert_null(placement_of(r, big));
    assert_int_equal(r->n_reservations, 1);
    assert_ptr_equal(r->reservations[0].gang, big);
    assert_int_equal(r->reservations[0].n_nodes, 2);
    free_names(w);
    world_free(w);
}

/* A gang of two pod sets, one pod of 8 GPUs each, that requires one rack: the first three racks
 * have one free node each, which each set's count alone would take (so the domain sums said it
 * fits), and only the fourth holds both pods; the domains whose free GPUs are fewer than the
 * gang's are passed over instead of taking the three tries of the level. */
static void test_sets_together_pick_the_rack(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:32"); /* 4 racks of 8 nodes */
    for (uint32_t i = 0; i < 32; i++)
        if (i % 8 != 0 && i != 25)
            use_gpus(w, i, 0xFF); /* free: node 0 of each rack, and node 25 */
    struct gang *g = two_specs_of_8(w, (int8_t)w->c->topo.rack_level);
    const struct sched_result *r = cycle(w, "gangsched", 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node / 8, 3);
    assert_int_equal(p->pods[1].node / 8, 3);
    free_names(w);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_selector),
        cmocka_unit_test(test_affinity_gt_gpu_memory),
        cmocka_unit_test(test_preferred_node_affinity),
        cmocka_unit_test(test_preferred_node_affinity_picks_the_domain),
        cmocka_unit_test(test_preferred_domains_follow_placements),
        cmocka_unit_test(test_heterogeneous_gang),
        cmocka_unit_test(test_gang_of_every_set),
        cmocka_unit_test(test_reservation_holds_every_set),
        cmocka_unit_test(test_sets_together_pick_the_rack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
