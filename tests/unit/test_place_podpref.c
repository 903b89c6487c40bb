/* Inter-pod preferences in placement (sched/core/place_podpref.c with place_pref.c): preferred
 * pod affinity and anti-affinity, the terms of earlier pods that select the pod being placed,
 * ScheduleAnyway topology spreads, as kube-scheduler's InterPodAffinity and PodTopologySpread
 * scores rank nodes; never a filter. Each case is set against what packing alone would do. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "queue/queue.h"
#include "sched/core/cycle.h"
#include "sched/core/place_base.h"
#include "sched/core/podaff.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"

#include "cycle_fx.h"
#include "place_fx.h"

#define HOST "kubernetes.io/hostname"

static const struct sel_req req_app_a = {
    .key = "app", .op = SEL_IN, .values = (const char *const[]){"a"}, .n_values = 1};
static const struct sel_req req_app_b = {
    .key = "app", .op = SEL_IN, .values = (const char *const[]){"b"}, .n_values = 1};
static const struct kv labels_a[] = {{"app", "a"}};
static const struct kv labels_b[] = {{"app", "b"}};

static void with_meta(struct gang *g, const struct pod_meta *m)
{
    for (uint32_t s = 0; s < g->n_sets; s++)
        g->sets[s].meta = m;
    gang_finalize(g);
    g->min_member = g->n_pods;
}

static const struct sched_result *cycle_pods(struct world *w, const struct sched_pod *bound,
                                             uint32_t n_bound)
{
    w->bound = bound;
    w->n_bound = n_bound;
    return cycle(w, "gangsched", 1);
}

/* n one-GPU gangs of one pod each with meta m; the nodes they got, in their order, into at[]. */
static void one_pod_gangs(struct world *w, uint32_t n, const struct pod_meta *m,
                          const struct sched_pod *bound, uint32_t n_bound, uint32_t *at)
{
    for (uint32_t k = 0; k < n; k++)
        with_meta(add_gang(w, 1, 1, (int64_t)k), m);
    const struct sched_result *r = cycle_pods(w, bound, n_bound);
    for (uint32_t k = 0; k < n; k++) {
        const struct sched_placement *p = placement_of(r, &w->gangs[k]);
        assert_non_null(p); /* a preference never refuses */
        at[k] = p->pods[0].node;
    }
}

static uint32_t distinct(const uint32_t *at, uint32_t n)
{
    uint32_t d = 0;
    for (uint32_t k = 0; k < n; k++) {
        bool seen = false;
        for (uint32_t j = 0; j < k && !seen; j++)
            seen = at[j] == at[k];
        d += !seen;
    }
    return d;
}

/* A Deployment's replicas, each its own gang, preferring not to share a node with one another:
 * one per node while nodes last, then shared (a preference, not a rule); the same pods without
 * the term pack onto one node. */
static void test_preferred_anti_affinity_spreads_replicas(void **unused)
{
    (void)unused;
    uint32_t at[6];
    struct world *w = world_new("hgx:4");
    struct pod_meta plain = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    one_pod_gangs(w, 4, &plain, NULL, 0, at);
    assert_int_equal(distinct(at, 4), 1);
    free_names(w);
    world_free(w);

    w = world_new("hgx:4");
    struct pod_term anti = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST, .weight = 100};
    struct pod_meta m = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .pref_anti = &anti, .n_pref_anti = 1};
    one_pod_gangs(w, 6, &m, NULL, 0, at);
    assert_int_equal(distinct(at, 4), 4);
    assert_int_equal(distinct(at, 6), 4); /* the fifth and sixth still placed */
    free_names(w);
    world_free(w);
}

/* The node a one-GPU pod with meta m gets on `spec` beside the bound pods, node 2 nearly full
 * (packing alone would pick it); rack: the rack label of that node, when not NULL. */
static uint32_t node_of(const char *spec, const struct pod_meta *m, const struct sched_pod *bound,
                        uint32_t n_bound, char *rack)
{
    uint32_t at;
    struct world *w = world_new(spec);
    use_gpus(w, 2, 0x7f);
    one_pod_gangs(w, 1, m, bound, n_bound, &at);
    if (rack)
        snprintf(rack, 32, "%s", node_label(&w->c->nodes[at], TOPO_LABEL_RACK));
    free_names(w);
    world_free(w);
    return at;
}

/* Preferred affinity to a bound pod: on its node by hostname, in its rack by the rack key; the
 * heavier of two terms wins. */
static void test_preferred_affinity_follows_bound_pods(void **unused)
{
    (void)unused;
    struct pod_meta db = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct pod_meta web = {.ns = "ml", .labels = labels_b, .n_labels = 1};
    struct sched_pod bound[2] = {{.node = 11, .meta = &db}, {.node = 5, .meta = &web}};
    struct pod_term terms[2] = {
        {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST, .weight = 30},
        {.reqs = &req_app_b, .n_reqs = 1, .topology_key = HOST, .weight = 70}};
    struct pod_meta m = {.ns = "ml", .pref_affinity = terms, .n_pref_affinity = 1};
    assert_int_equal(node_of("hgx:16", &m, bound, 2, NULL), 11);
    m.n_pref_affinity = 2; /* app=b weighs 70 against app=a's 30 */
    assert_int_equal(node_of("hgx:16", &m, bound, 2, NULL), 5);
    struct pod_term in_rack = {
        .reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK, .weight = 10};
    struct pod_meta mr = {.ns = "ml", .pref_affinity = &in_rack, .n_pref_affinity = 1};
    char got[32], want[32], busy[32];
    struct pod_meta plain = {.ns = "ml"};
    struct sched_pod at11 = {.node = 11, .meta = &plain};
    node_of("hgx:16", &plain, NULL, 0, busy); /* node 2's rack, where packing goes */
    node_of("hgx:16", &mr, &at11, 1, want);   /* a term nothing meets: as packing */
    assert_string_equal(want, busy);
    node_of("hgx:16", &mr, bound, 1, got); /* app=a on node 11: its rack */
    struct world *w = world_new("hgx:16");
    snprintf(want, sizeof(want), "%s", node_label(&w->c->nodes[11], TOPO_LABEL_RACK));
    world_free(w);
    assert_string_not_equal(want, busy);
    assert_string_equal(got, want);
}

/* The terms of bound pods score the pod being placed: a preferred anti-affinity term keeps it
 * off, a required affinity term (hardPodAffinityWeight 1) and a preferred one draw it; a term of
 * another namespace's pod does not select it. */
static void test_bound_pods_terms_score_the_newcomer(void **unused)
{
    (void)unused;
    struct pod_meta m = {.ns = "ml", .labels = labels_b, .n_labels = 1};
    struct pod_term avoid_b = {.reqs = &req_app_b, .n_reqs = 1, .topology_key = HOST, .weight = 5};
    struct pod_meta shy = {.ns = "ml", .pref_anti = &avoid_b, .n_pref_anti = 1};
    struct sched_pod bound = {.node = 2, .meta = &shy}; /* on the node packing would pick */
    assert_int_not_equal(node_of("hgx:4", &m, &bound, 1, NULL), 2);
    struct pod_term need_b = {.reqs = &req_app_b, .n_reqs = 1, .topology_key = HOST};
    struct pod_meta needy = {.ns = "ml", .affinity = &need_b, .n_affinity = 1};
    struct pod_meta fond = {.ns = "ml", .pref_affinity = &avoid_b, .n_pref_affinity = 1};
    const struct pod_meta *drawers[2] = {&needy, &fond};
    for (uint32_t k = 0; k < 2; k++) {
        bound = (struct sched_pod){.node = 1, .meta = drawers[k]};
        assert_int_equal(node_of("hgx:4", &m, &bound, 1, NULL), 1);
    }
    struct pod_meta elsewhere = {.ns = "web", .labels = labels_b, .n_labels = 1};
    assert_int_equal(node_of("hgx:4", &elsewhere, &bound, 1, NULL), 2);
}

/* Bound pods' terms are summed pod by pod, each kind of terms read once: nine weight-1 terms of
 * one pod (more than a kind's group keeps) outweigh one weight-5 term of another, two pods of
 * one kind count twice, and pods of different kinds are told apart. */
static void test_bound_terms_add_up(void **unused)
{
    (void)unused;
    struct pod_meta m = {.ns = "ml", .labels = labels_b, .n_labels = 1};
    struct pod_term nine[9],
        five = {.reqs = &req_app_b, .n_reqs = 1, .topology_key = HOST, .weight = 5};
    for (uint32_t k = 0; k < 9; k++)
        nine[k] =
            (struct pod_term){.reqs = &req_app_b, .n_reqs = 1, .topology_key = HOST, .weight = 1};
    struct pod_meta many = {.ns = "ml", .pref_affinity = nine, .n_pref_affinity = 9};
    struct pod_meta one = {.ns = "ml", .pref_affinity = &five, .n_pref_affinity = 1};
    struct pod_meta shy = {.ns = "ml", .pref_anti = &five, .n_pref_anti = 1};
    struct sched_pod bound[4] = {{.node = 1, .meta = &many},
                                 {.node = 3, .meta = &one},
                                 {.node = 3, .meta = &one},    /* 10 on node 3 now */
                                 {.node = 3, .meta = &shy}};   /* then 5 again */
    assert_int_equal(node_of("hgx:4", &m, bound, 2, NULL), 1); /* 9 against 5 */
    assert_int_equal(node_of("hgx:4", &m, bound, 3, NULL), 3);
    assert_int_equal(node_of("hgx:4", &m, bound, 4, NULL), 1);
}

/* ScheduleAnyway spreads count the pods bound and those placed earlier in the cycle: by
 * hostname, replicas go one per node, the nodes already holding some last; a node without the
 * key scores least (a rack key no node lacks here: by rack, replicas alternate racks). */
static void test_schedule_anyway_spreads(void **unused)
{
    (void)unused;
    uint32_t at[4];
    struct pod_spread by_host = {.sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST},
                                 .max_skew = 1};
    struct pod_meta m = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .soft_spread = &by_host, .n_soft_spread = 1};
    struct world *w = world_new("hgx:4");
    struct pod_meta other = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct sched_pod bound[2] = {{.node = 0, .meta = &other}, {.node = 0, .meta = &other}};
    one_pod_gangs(w, 3, &m, bound, 2, at);
    assert_int_equal(distinct(at, 3), 3);
    for (uint32_t k = 0; k < 3; k++)
        assert_int_not_equal(at[k], 0);
    free_names(w);
    world_free(w);

    /* a deleting pod is not counted: node 0 is as good as any, and the fullest */
    w = world_new("hgx:4");
    use_gpus(w, 0, 0x01);
    bound[0].deleting = bound[1].deleting = true;
    one_pod_gangs(w, 1, &m, bound, 2, at);
    assert_int_equal(at[0], 0);
    free_names(w);
    world_free(w);

    w = world_new("hgx:16");
    struct pod_spread by_rack = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 1};
    struct pod_meta mr = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .soft_spread = &by_rack, .n_soft_spread = 1};
    one_pod_gangs(w, 2, &mr, NULL, 0, at);
    assert_string_not_equal(node_label(&w->c->nodes[at[0]], TOPO_LABEL_RACK),
                            node_label(&w->c->nodes[at[1]], TOPO_LABEL_RACK));
    free_names(w);
    world_free(w);
}

/* Preferred node affinity and inter-pod preferences add up, normalised alike: a node both
 * prefer beats one only the node affinity prefers (by a larger weight) and one only the
 * anti-affinity spares. */
static void test_node_and_pod_preferences_add_up(void **unused)
{
    (void)unused;
    uint32_t at[1];
    struct world *w = world_new("hgx:4");
    use_gpus(w, 2, 0x7f);
    struct pod_meta noisy = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct sched_pod bound = {.node = 1, .meta = &noisy};
    struct pod_term anti = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST, .weight = 1};
    struct pod_meta m = {.ns = "ml", .pref_anti = &anti, .n_pref_anti = 1};
    const char *names[] = {w->c->nodes[1].name, w->c->nodes[3].name};
    const struct sel_req on13 = {
        .key = "metadata.name", .field = true, .op = SEL_IN, .values = names, .n_values = 2};
    const struct pref_term likes_ssd = {.weight = 100, .term = {.reqs = &on13, .n_reqs = 1}};
    struct gang *g = add_gang(w, 1, 1, 0);
    g->sets[0].pref = &likes_ssd;
    g->sets[0].n_pref = 1;
    with_meta(g, &m);
    const struct sched_placement *p = placement_of(cycle_pods(w, &bound, 1), g);
    assert_non_null(p);
    at[0] = p->pods[0].node;
    assert_int_equal(at[0], 3); /* preferred, without the noisy pod; 1 has it, 2 is fullest */
    free_names(w);
    world_free(w);
}

/* One gang whose pods prefer apart from one another (a ScheduleAnyway spread or preferred
 * anti-affinity selecting its own pods): placed pod by pod, each scored against those placed
 * before it, so its pods take every node before any shares one; where packing would put them all
 * on one node. */
static void test_gang_pods_spread_among_themselves(void **unused)
{
    (void)unused;
    struct pod_spread by_host = {.sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST},
                                 .max_skew = 1};
    struct pod_term anti = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST, .weight = 50};
    struct pod_meta spread = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .soft_spread = &by_host, .n_soft_spread = 1};
    struct pod_meta apart = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .pref_anti = &anti, .n_pref_anti = 1};
    const struct pod_meta *ms[2] = {&spread, &apart};
    for (uint32_t k = 0; k < 2; k++) {
        struct world *w = world_new("hgx:4");
        struct gang *g = add_gang(w, 6, 1, 0);
        with_meta(g, ms[k]);
        const struct sched_placement *p = placement_of(cycle_pods(w, NULL, 0), g);
        assert_non_null(p);
        uint32_t at[6], per[4] = {0};
        for (uint32_t x = 0; x < 6; x++)
            per[at[x] = p->pods[x].node]++;
        assert_int_equal(distinct(at, 4), 4); /* the first four on four nodes */
        for (uint32_t i = 0; i < 4; i++)
            assert_true(per[i] >= 1 && per[i] <= 2);
        free_names(w);
        world_free(w);
    }
}

/* The index of w's rack topology level. */
static int rack_level(const struct world *w)
{
    int rack = -1;
    for (uint32_t l = 0; l < w->c->topo.n_levels; l++)
        if (w->c->topo.levels[l].label && strcmp(w->c->topo.levels[l].label, TOPO_LABEL_RACK) == 0)
            rack = (int)l;
    assert_true(rack >= 0);
    return rack;
}

/* The same with a required rack: the full racks are passed over, and the pods spread over the
 * nodes of the one rack they go to. */
static void test_gang_pods_spread_in_a_required_rack(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:16");
    int rack = rack_level(w);
    const char *rack0 = node_label(&w->c->nodes[0], TOPO_LABEL_RACK);
    for (uint32_t i = 0; i < w->c->n_nodes; i++)
        if (strcmp(node_label(&w->c->nodes[i], TOPO_LABEL_RACK), rack0) == 0)
            use_gpus(w, i, 0xfe); /* rack 0: one GPU free per node, too few for the gang */
    struct pod_term anti = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST, .weight = 50};
    struct pod_meta m = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .pref_anti = &anti, .n_pref_anti = 1};
    struct gang *g = add_gang(w, 4, 2, 0);
    g->topo_required = (int8_t)rack;
    with_meta(g, &m);
    const struct sched_placement *p = placement_of(cycle_pods(w, NULL, 0), g);
    assert_non_null(p);
    const char *at = node_label(&w->c->nodes[p->pods[0].node], TOPO_LABEL_RACK);
    assert_string_not_equal(at, rack0);
    uint32_t nodes[4];
    for (uint32_t k = 0; k < 4; k++) {
        nodes[k] = p->pods[k].node;
        assert_string_equal(node_label(&w->c->nodes[nodes[k]], TOPO_LABEL_RACK), at);
    }
    assert_int_equal(distinct(nodes, 4), 4);
    free_names(w);
    world_free(w);
}

/* A gang placed pod by pod tries its required level's domains by preference: the rack of the
 * node its pods prefer before the first rack that holds it (where id order would go). */
static void test_pod_by_pod_racks_by_preference(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:16");
    int rack = rack_level(w);
    uint32_t last = w->c->n_nodes - 1;
    const char *want = node_label(&w->c->nodes[last], TOPO_LABEL_RACK);
    assert_string_not_equal(node_label(&w->c->nodes[0], TOPO_LABEL_RACK), want);
    const char *names[] = {w->c->nodes[last].name};
    const struct sel_req on_last = {
        .key = "metadata.name", .field = true, .op = SEL_IN, .values = names, .n_values = 1};
    const struct pref_term likes = {.weight = 10, .term = {.reqs = &on_last, .n_reqs = 1}};
    /* apart by anti-affinity and spread (together they outweigh the node preference) */
    struct pod_term anti = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST, .weight = 50};
    struct pod_spread by_host = {.sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST},
                                 .max_skew = 1};
    struct pod_meta m = {.ns = "ml",
                         .labels = labels_a,
                         .n_labels = 1,
                         .pref_anti = &anti,
                         .n_pref_anti = 1,
                         .soft_spread = &by_host,
                         .n_soft_spread = 1};
    struct gang *g = add_gang(w, 2, 1, 0);
    g->topo_required = (int8_t)rack;
    g->sets[0].pref = &likes;
    g->sets[0].n_pref = 1;
    with_meta(g, &m);
    const struct sched_placement *p = placement_of(cycle_pods(w, NULL, 0), g);
    assert_non_null(p);
    for (uint32_t k = 0; k < 2; k++)
        assert_string_equal(node_label(&w->c->nodes[p->pods[k].node], TOPO_LABEL_RACK), want);
    assert_true(p->pods[0].node == last || p->pods[1].node == last);
    assert_int_not_equal(p->pods[0].node, p->pods[1].node);
    free_names(w);
    world_free(w);
}

/* What identifies a kept selection: the pods a term selects, its namespace included when the
 * term names none (the carrier's), never its topology key or weight. */
static void test_selection_identity(void **unused)
{
    (void)unused;
    static const char *const dev[] = {"dev"};
    struct pod_term a = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST, .weight = 100};
    struct pod_term a_rack = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK};
    struct pod_term b = {.reqs = &req_app_b, .n_reqs = 1, .topology_key = HOST, .weight = 100};
    struct pod_term a_dev = {.reqs = &req_app_a,
                             .n_reqs = 1,
                             .namespaces = dev,
                             .n_namespaces = 1,
                             .topology_key = HOST};
    struct pod_term a_all = {.reqs = &req_app_a, .n_reqs = 1, .all_namespaces = true};
    assert_true(podaff_same_selection(&a, "ml", &a_rack, "ml"));
    assert_true(podaff_selection_hash(&a, "ml") == podaff_selection_hash(&a_rack, "ml"));
    assert_false(podaff_same_selection(&a, "ml", &a, "dev"));
    assert_true(podaff_selection_hash(&a, "ml") != podaff_selection_hash(&a, "dev"));
    assert_false(podaff_same_selection(&a, "ml", &b, "ml"));
    assert_false(podaff_same_selection(&a, "dev", &a_dev, "dev"));   /* alike by chance only */
    assert_true(podaff_same_selection(&a_dev, "ml", &a_dev, "dev")); /* the list decides */
    assert_true(podaff_selection_hash(&a_dev, "ml") == podaff_selection_hash(&a_dev, "dev"));
    assert_true(podaff_same_selection(&a_all, "ml", &a_all, "dev"));
    assert_false(podaff_same_selection(&a_all, "ml", &a, "ml"));
}

/* Selections kept across the gangs of a cycle (place_podpref.c tallies: what a term selects,
 * a kind's pods, a spread's live pods, per node) score as reading the pods one by one does
 * (sched_snapshot.no_shortcuts): the same placements over 12 random worlds of 160 bound pods
 * in two namespaces, some being deleted, with preferred terms for others (by hostname, by rack,
 * across namespaces, a required affinity term), a third of the nodes tainted (a spread that
 * honours taints counts no pod of theirs), and 30 gangs of one to three pods preferring
 * apart, together or spread, so that many selections reach the size at which they are kept. */
static void test_kept_selections_score_as_pod_by_pod(void **unused)
{
    (void)unused;
    static const char *const dev[] = {"dev"};
    static const struct pod_term anti_host = {
        .reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST, .weight = 100};
    static const struct pod_term with_b_rack = {
        .reqs = &req_app_b, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK, .weight = 30};
    static const struct pod_term anti_dev_a = {.reqs = &req_app_a,
                                               .n_reqs = 1,
                                               .namespaces = dev,
                                               .n_namespaces = 1,
                                               .topology_key = TOPO_LABEL_RACK,
                                               .weight = 70};
    static const struct pod_term need_a = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    static const struct pod_spread spread_a = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK},
        .max_skew = 1,
        .taints_honor = true}; /* the pods of tainted nodes do not count */
    static const struct taint taint = {.key = "gpu", .value = "", .effect = TAINT_NO_SCHEDULE};
    static const struct pod_spread spread_b_host = {
        .sel = {.reqs = &req_app_b, .n_reqs = 1, .topology_key = HOST}, .max_skew = 2};
    static const struct pod_meta metas[] = {
        {.ns = "ml", .labels = labels_a, .n_labels = 1},
        {.ns = "dev", .labels = labels_a, .n_labels = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1},
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .pref_anti = &anti_host, .n_pref_anti = 1},
        {.ns = "dev", .labels = labels_a, .n_labels = 1, .pref_anti = &anti_host, .n_pref_anti = 1},
        {.ns = "ml",
         .labels = labels_b,
         .n_labels = 1,
         .pref_affinity = &with_b_rack,
         .n_pref_affinity = 1,
         .pref_anti = &anti_dev_a,
         .n_pref_anti = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .affinity = &need_a, .n_affinity = 1},
        {.ns = "ml",
         .labels = labels_a,
         .n_labels = 1,
         .soft_spread = &spread_a,
         .n_soft_spread = 1},
        {.ns = "dev",
         .labels = labels_b,
         .n_labels = 1,
         .pref_anti = &anti_host,
         .n_pref_anti = 1,
         .soft_spread = &spread_b_host,
         .n_soft_spread = 1},
    };
    enum { N_BOUND = 160, N_GANGS = 30, N_METAS = sizeof(metas) / sizeof(metas[0]) };
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    uint32_t placed = 0;
    for (int world = 0; world < 12; world++) {
        struct world *w[2];
        struct sched_pod bound[N_BOUND];
        for (uint32_t k = 0; k < N_BOUND; k++) /* the kinds without a required term mostly */
            bound[k] = (struct sched_pod){.node = (uint32_t)(pfx_rnd(&rng) % 32),
                                          .meta = &metas[pfx_rnd(&rng) % (N_METAS - 3)],
                                          .deleting = pfx_rnd(&rng) % 8 == 0};
        bound[0].meta = &metas[6];
        uint64_t seed = pfx_rnd(&rng);
        for (int x = 0; x < 2; x++) {
            uint64_t r = seed;
            w[x] = world_raw("hgx:32");
            for (uint32_t i = 1; i < 32; i += 3) {
                w[x]->c->nodes[i].taints = &taint;
                w[x]->c->nodes[i].n_taints = 1;
            }
            world_finalize(w[x]);
            w[x]->no_shortcuts = x == 1;
            for (uint32_t i = 0; i < 32; i++)
                use_gpus(w[x], i, (uint32_t)(pfx_rnd(&r) & 0x0F));
            for (uint32_t j = 0; j < N_GANGS; j++) {
                struct gang *g = add_gang(w[x], 1 + (uint32_t)(pfx_rnd(&r) % 3), 1, (int64_t)j);
                with_meta(g, &metas[3 + pfx_rnd(&r) % (N_METAS - 3)]);
            }
            cycle_pods(w[x], bound, N_BOUND);
        }
        pfx_same_result(&w[0]->res, &w[1]->res);
        placed += w[0]->res.n_placements;
        for (int x = 0; x < 2; x++) {
            free_names(w[x]);
            world_free(w[x]);
        }
    }
    assert_true(placed > 12 * N_GANGS / 2); /* most gangs were placed, each scored */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preferred_anti_affinity_spreads_replicas),
        cmocka_unit_test(test_preferred_affinity_follows_bound_pods),
        cmocka_unit_test(test_bound_pods_terms_score_the_newcomer),
        cmocka_unit_test(test_bound_terms_add_up),
        cmocka_unit_test(test_schedule_anyway_spreads),
        cmocka_unit_test(test_node_and_pod_preferences_add_up),
        cmocka_unit_test(test_gang_pods_spread_among_themselves),
        cmocka_unit_test(test_gang_pods_spread_in_a_required_rack),
        cmocka_unit_test(test_pod_by_pod_racks_by_preference),
        cmocka_unit_test(test_selection_identity),
        cmocka_unit_test(test_kept_selections_score_as_pod_by_pod),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
