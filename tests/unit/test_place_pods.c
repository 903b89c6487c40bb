/* Inter-pod constraints in placement (sched/core/place_pods.c, podaff.c): required pod
 * affinity and anti-affinity, the anti-affinity of bound pods, host ports, in one cycle and
 * against pods bound before it, as kube-scheduler's InterPodAffinity and NodePorts filters
 * decide. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "queue/queue.h"
#include "sched/core/cycle.h"
#include "sched/core/eta.h"
#include "sched/core/place_base.h"
#include "sched/core/podaff.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"

#include "cycle_fx.h"
#include "place_fx.h"

#define HOST "kubernetes.io/hostname"

/* One sched_cycle under the gangsched policy with bound pods (cycle_fx.h). */
static const struct sched_result *cycle_pods(struct world *w, const struct sched_pod *bound,
                                             uint32_t n_bound)
{
    w->bound = bound;
    w->n_bound = n_bound;
    return cycle(w, "gangsched", 1);
}

static void with_meta(struct gang *g, const struct pod_meta *m)
{
    for (uint32_t s = 0; s < g->n_sets; s++)
        g->sets[s].meta = m;
    gang_finalize(g);
    g->min_member = g->n_pods;
}

/* A gang of one one-GPU pod submitted at submit_s, with meta m. */
static struct gang *one_pod(struct world *w, int64_t submit_s, const struct pod_meta *m)
{
    struct gang *g = add_gang(w, 1, 1, submit_s);
    with_meta(g, m);
    return g;
}

static const struct sel_req req_app_a = {
    .key = "app", .op = SEL_IN, .values = (const char *const[]){"a"}, .n_values = 1};
static const struct sel_req req_app_b = {
    .key = "app", .op = SEL_IN, .values = (const char *const[]){"b"}, .n_values = 1};
static const struct kv labels_a[] = {{"app", "a"}};
static const struct kv labels_b[] = {{"app", "b"}};

/* A pod whose required anti-affinity keeps app=a off its node, bound on nodes 0 and 1. */
static const struct pod_term anti_a = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
static const struct pod_meta guard_a = {.ns = "ml", .anti = &anti_a, .n_anti = 1};
static const struct sched_pod guards[2] = {{.node = 0, .meta = &guard_a},
                                           {.node = 1, .meta = &guard_a}};

static void free_gangs(struct world *w)
{
    for (uint32_t i = 0; i < w->n_gangs; i++)
        free((char *)w->gangs[i].name);
    world_free(w);
}

static void test_selector_semantics(void **unused)
{
    (void)unused;
    static const struct kv l[] = {{"app", "a"}, {"tier", "x"}};
    struct pod_meta p = {.ns = "ml", .labels = l, .n_labels = 2};
    struct pod_meta bare = {.ns = "ml"};
    struct sel_req r = {
        .key = "app", .op = SEL_NOT_IN, .values = (const char *const[]){"b"}, .n_values = 1};
    struct pod_term t = {.reqs = &r, .n_reqs = 1, .topology_key = HOST};
    assert_true(podaff_selects(&t, "ml", &p));
    assert_true(podaff_selects(&t, "ml", &bare));  /* NotIn: met without the label */
    assert_false(podaff_selects(&t, "other", &p)); /* the carrier's namespace by default */
    t.all_namespaces = true;
    assert_true(podaff_selects(&t, "other", &p));
    r.op = SEL_EXISTS;
    assert_false(podaff_selects(&t, "ml", &bare));
    r.op = SEL_DOES_NOT_EXIST;
    assert_true(podaff_selects(&t, "ml", &bare));
    assert_false(podaff_selects(&t, "ml", &p));
    struct pod_term all = {.topology_key = HOST}; /* labelSelector {}: every pod */
    assert_true(podaff_selects(&all, "ml", &bare));
    all.none = true; /* labelSelector null: no pod */
    assert_false(podaff_selects(&all, "ml", &p));
    struct pod_term named = {
        .namespaces = (const char *const[]){"a", "ml"}, .n_namespaces = 2, .topology_key = HOST};
    assert_true(podaff_selects(&named, "other", &p));
    p.ns = "b";
    assert_false(podaff_selects(&named, "other", &p));
    static const uint32_t pa[] = {6 << 16 | 80, 6 << 16 | 443}, pb[] = {6 << 16 | 443},
                          pc[] = {17 << 16 | 443};
    struct pod_meta a = {.ports = pa, .n_ports = 2}, b = {.ports = pb, .n_ports = 1},
                    c = {.ports = pc, .n_ports = 1};
    assert_true(podaff_ports_clash(&a, &b));
    assert_false(podaff_ports_clash(&a, &c)); /* UDP 443 is another port than TCP 443 */
    assert_false(podaff_ports_clash(&a, NULL));
}

/* Four one-GPU pods that must not share a node: four nodes, where packing would use one. */
static void test_self_anti_affinity_one_pod_per_node(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:4");
    struct pod_term anti = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    struct pod_meta m = {.ns = "ml", .labels = labels_a, .n_labels = 1, .anti = &anti, .n_anti = 1};
    struct gang *g = add_gang(w, 4, 1, 0);
    with_meta(g, &m);
    const struct sched_result *r = cycle_pods(w, NULL, 0);
    const struct sched_placement *p = placement_of(r, g);
    assert_non_null(p);
    for (uint32_t a = 0; a < 4; a++)
        for (uint32_t b = a + 1; b < 4; b++)
            assert_int_not_equal(p->pods[a].node, p->pods[b].node);
    /* five such pods on four nodes: none placed, and the verdict names the rule */
    struct world *w5 = world_new("hgx:4");
    struct gang *g5 = add_gang(w5, 5, 1, 0);
    with_meta(g5, &m);
    r = cycle_pods(w5, NULL, 0);
    assert_null(placement_of(r, g5));
    assert_int_equal(verdict_of(r, g5)->filtered[FILTER_POD_ANTI], 4); /* the fifth pod's view */
    free_gangs(w);
    free_gangs(w5);
}

/* Without the term the same gang packs onto one node (what the test above changes). */
static void test_without_terms_packs(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:4");
    struct pod_meta m = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct gang *g = add_gang(w, 4, 1, 0);
    with_meta(g, &m);
    const struct sched_placement *p = placement_of(cycle_pods(w, NULL, 0), g);
    assert_non_null(p);
    for (uint32_t a = 1; a < 4; a++)
        assert_int_equal(p->pods[a].node, p->pods[0].node);
    free_gangs(w);
}

/* Affinity to a bound pod: on its node (hostname), or in its rack. */
static void test_affinity_to_bound_pod(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:16");
    struct pod_meta db = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct sched_pod bound = {.node = 11, .meta = &db};
    struct pod_term on_host = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    struct pod_meta m = {
        .ns = "ml", .labels = labels_b, .n_labels = 1, .affinity = &on_host, .n_affinity = 1};
    struct gang *g = add_gang(w, 2, 2, 0);
    with_meta(g, &m);
    const struct sched_placement *p = placement_of(cycle_pods(w, &bound, 1), g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 11);
    assert_int_equal(p->pods[1].node, 11);
    free_gangs(w);

    w = world_new("hgx:16");
    struct pod_term in_rack = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK};
    struct pod_meta mr = {
        .ns = "ml", .labels = labels_b, .n_labels = 1, .affinity = &in_rack, .n_affinity = 1};
    g = add_gang(w, 3, 8, 0);
    with_meta(g, &mr);
    p = placement_of(cycle_pods(w, &bound, 1), g);
    assert_non_null(p);
    const char *rack = node_label(&w->c->nodes[11], TOPO_LABEL_RACK);
    assert_non_null(rack);
    for (uint32_t k = 0; k < 3; k++)
        assert_string_equal(node_label(&w->c->nodes[p->pods[k].node], TOPO_LABEL_RACK), rack);
    free_gangs(w);

    /* no pod it selects anywhere, and it does not select itself: nowhere, named */
    w = world_new("hgx:4");
    g = add_gang(w, 1, 1, 0);
    with_meta(g, &m);
    const struct sched_result *r = cycle_pods(w, NULL, 0);
    assert_null(placement_of(r, g));
    const struct sched_verdict *v = verdict_of(r, g);
    assert_non_null(v);
    assert_int_equal(v->filtered[FILTER_POD_AFFINITY], 4);
    assert_int_equal(v->why, SCHED_WHY_RESOURCES); /* waits like capacity: pods end */
    free_gangs(w);
}

/* A bound pod's anti-affinity keeps the pods it selects off its node; a host port in use too. */
static void test_bound_anti_affinity_and_ports(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:4");
    use_gpus(w, 2, 0x7f); /* node 2 is the fullest: packing would pick it */
    struct pod_term anti = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    struct pod_meta guard = {.ns = "ml", .anti = &anti, .n_anti = 1};
    struct sched_pod bound = {.node = 2, .meta = &guard};
    struct pod_meta m = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct gang *g = add_gang(w, 1, 1, 0);
    with_meta(g, &m);
    const struct sched_placement *p = placement_of(cycle_pods(w, &bound, 1), g);
    assert_non_null(p);
    assert_int_not_equal(p->pods[0].node, 2);
    /* another namespace: the term (no namespaces named) does not select it */
    struct pod_meta other = {.ns = "web", .labels = labels_a, .n_labels = 1};
    with_meta(g, &other);
    p = placement_of(cycle_pods(w, &bound, 1), g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 2);
    free_gangs(w);

    w = world_new("hgx:4");
    use_gpus(w, 2, 0x7f);
    static const uint32_t port[] = {6 << 16 | 8080};
    struct pod_meta holder = {.ns = "x", .ports = port, .n_ports = 1};
    bound = (struct sched_pod){.node = 2, .meta = &holder};
    struct pod_meta mp = {.ns = "ml", .ports = port, .n_ports = 1};
    g = add_gang(w, 2, 1, 0);
    with_meta(g, &mp);
    const struct sched_result *r = cycle_pods(w, &bound, 1);
    p = placement_of(r, g);
    assert_non_null(p);
    assert_int_not_equal(p->pods[0].node, 2);
    assert_int_not_equal(p->pods[1].node, 2);
    assert_int_not_equal(p->pods[0].node, p->pods[1].node); /* one port, one pod per node */
    free_gangs(w);
}

/* Pods with affinity to themselves: the first goes anywhere, the others follow it into its
 * rack; a rack without room for all is not chosen for the first. */
static void test_self_affinity_keeps_gang_in_one_rack(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:16");
    const char *rack0 = node_label(&w->c->nodes[0], TOPO_LABEL_RACK);
    uint32_t in_rack0 = 0;
    for (uint32_t i = 0; i < w->c->n_nodes; i++)
        if (strcmp(node_label(&w->c->nodes[i], TOPO_LABEL_RACK), rack0) == 0) {
            if (in_rack0++ > 0)
                use_gpus(w, i, 0xff); /* rack 0: room for one 8-GPU pod only, on node 0 */
        }
    assert_true(in_rack0 > 1 && in_rack0 < w->c->n_nodes);
    use_gpus(w, 0, 0x01); /* node 0 the fullest with room: packing starts there */
    struct pod_term aff = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK};
    struct pod_meta m = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .affinity = &aff, .n_affinity = 1};
    struct gang *g = add_gang(w, 3, 4, 0);
    with_meta(g, &m);
    const struct sched_placement *p = placement_of(cycle_pods(w, NULL, 0), g);
    assert_non_null(p);
    const char *rack = node_label(&w->c->nodes[p->pods[0].node], TOPO_LABEL_RACK);
    for (uint32_t k = 1; k < 3; k++)
        assert_string_equal(node_label(&w->c->nodes[p->pods[k].node], TOPO_LABEL_RACK), rack);
    free_gangs(w);
}

/* A gang placed pod by pod (its pods have affinity to one another by rack) takes its sets most
 * GPUs per pod first, as the other fills: pods of 1 to 7 GPUs and 4 of 8 fill the one rack's 8
 * nodes of 8 GPUs (in set order the small ones, each on the first node it fits, take 5 nodes
 * and leave 3 for the 4 large pods); its pods are reported in set order. */
static void test_pod_by_pod_largest_sets_first(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:8");
    struct pod_term aff = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK};
    struct pod_meta m = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .affinity = &aff, .n_affinity = 1};
    struct gang *g = add_gang(w, 1, 1, 0);
    g->n_sets = GANG_MAX_SETS;
    for (uint32_t s = 0; s < GANG_MAX_SETS; s++) { /* set s: 1 pod of s + 1 GPUs, the last 4 */
        g->sets[s].count = s + 1 < GANG_MAX_SETS ? 1 : 4;
        g->sets[s].req = g->sets[0].req;
        g->sets[s].req.v[RES_GPU] = (int64_t)s + 1;
    }
    with_meta(g, &m);
    const struct sched_placement *p = placement_of(cycle_pods(w, NULL, 0), g);
    assert_non_null(p);
    assert_int_equal(g->n_pods, GANG_MAX_SETS - 1 + 4);
    for (uint32_t k = 0; k < g->n_pods; k++)
        assert_int_equal(__builtin_popcount(p->pods[k].gpu_mask),
                         k < GANG_MAX_SETS - 1 ? k + 1 : GANG_MAX_SETS);
    free_gangs(w);
}

/* Two gangs of one cycle: the second sees the pods the first was given. */
static void test_anti_affinity_between_gangs_of_one_cycle(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    struct pod_term anti = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    struct pod_meta m = {.ns = "ml", .labels = labels_a, .n_labels = 1, .anti = &anti, .n_anti = 1};
    struct gang *a = one_pod(w, 0, &m), *b = one_pod(w, 1, &m), *c = one_pod(w, 2, &m);
    const struct sched_result *r = cycle_pods(w, NULL, 0);
    const struct sched_placement *pa = placement_of(r, a), *pb = placement_of(r, b);
    assert_non_null(pa);
    assert_non_null(pb);
    assert_int_not_equal(pa->pods[0].node, pb->pods[0].node);
    assert_null(placement_of(r, c)); /* two nodes, two such pods */
    const struct sched_verdict *v = verdict_of(r, c);
    assert_non_null(v);
    assert_int_equal(v->filtered[FILTER_POD_ANTI], 2);
    free_gangs(w);
}

/* Pods per rack of g's placement, over every rack of the cluster (zeros included): max - min. */
static uint32_t rack_skew(const struct world *w, const struct sched_placement *p,
                          const struct gang *g, const struct sched_pod *bound, uint32_t n_bound)
{
    const char *racks[64];
    uint32_t cnt[64] = {0}, n = 0;
    for (uint32_t i = 0; i < w->c->n_nodes; i++) {
        const char *r = node_label(&w->c->nodes[i], TOPO_LABEL_RACK);
        uint32_t k = 0;
        while (k < n && strcmp(racks[k], r) != 0)
            k++;
        if (k == n)
            racks[n++] = r;
    }
    for (uint32_t x = 0; x < g->n_pods + n_bound; x++) {
        uint32_t node = x < g->n_pods ? p->pods[x].node : bound[x - g->n_pods].node;
        const char *r = node_label(&w->c->nodes[node], TOPO_LABEL_RACK);
        for (uint32_t k = 0; k < n; k++)
            cnt[k] += strcmp(racks[k], r) == 0;
    }
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t k = 0; k < n; k++) {
        lo = cnt[k] < lo ? cnt[k] : lo;
        hi = cnt[k] > hi ? cnt[k] : hi;
    }
    assert_true(n >= 2);
    return hi - lo;
}

/* A DoNotSchedule topology spread over racks, maxSkew 1: the gang's pods spread over the racks
 * where packing would put them on one node; with matching pods bound in a rack, a pod goes
 * elsewhere; a key no node has allows no node, and the verdict names the spread. */
static void test_topology_spread(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:16");
    struct pod_spread sp = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 1};
    struct pod_meta m = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .spread = &sp, .n_spread = 1};
    struct gang *g = add_gang(w, 4, 1, 0);
    with_meta(g, &m);
    const struct sched_placement *p = placement_of(cycle_pods(w, NULL, 0), g);
    assert_non_null(p);
    assert_true(rack_skew(w, p, g, NULL, 0) <= 1);
    assert_int_not_equal(p->pods[0].node, p->pods[1].node);
    free_gangs(w);

    w = world_new("hgx:16");
    struct pod_meta other = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct sched_pod bound[2] = {{.node = 0, .meta = &other}, {.node = 0, .meta = &other}};
    use_gpus(w, 0, 0x3); /* node 0: the fullest, where packing goes */
    g = add_gang(w, 1, 1, 0);
    with_meta(g, &m);
    p = placement_of(cycle_pods(w, bound, 2), g);
    assert_non_null(p);
    assert_string_not_equal(node_label(&w->c->nodes[p->pods[0].node], TOPO_LABEL_RACK),
                            node_label(&w->c->nodes[0], TOPO_LABEL_RACK));
    /* being deleted, they do not count (kube-scheduler skips terminating pods) */
    bound[0].deleting = bound[1].deleting = true;
    p = placement_of(cycle_pods(w, bound, 2), g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 0);
    bound[0].deleting = bound[1].deleting = false;
    /* maxSkew 3: the bound pods' rack is allowed again, and packing takes node 0 */
    sp.max_skew = 3;
    with_meta(g, &m);
    p = placement_of(cycle_pods(w, bound, 2), g);
    assert_non_null(p);
    assert_int_equal(p->pods[0].node, 0);
    free_gangs(w);

    w = world_new("hgx:4");
    sp.sel.topology_key = "no-such-key";
    g = add_gang(w, 1, 1, 0);
    with_meta(g, &m);
    const struct sched_result *r = cycle_pods(w, NULL, 0);
    assert_null(placement_of(r, g));
    assert_int_equal(verdict_of(r, g)->filtered[FILTER_SPREAD], 4);
    free_gangs(w);
}

/* Two gangs of one shape but for their labels, neither with rules of its own: a bound pod's
 * anti-affinity on every node refuses the first, and the second is still tried and placed (the
 * cycle's memo of failed shapes tells them apart by their labels while such pods exist). */
static void test_memo_tells_labels_apart(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    struct pod_meta ma = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct pod_meta mb = {.ns = "ml", .labels = labels_b, .n_labels = 1};
    struct gang *a = add_gang(w, 1, 1, 0);
    struct gang *b = add_gang(w, 1, 1, 1);
    with_meta(a, &ma);
    with_meta(b, &mb);
    assert_true(a->shape == b->shape); /* labels alone are not part of the shape */
    const struct sched_result *r = cycle_pods(w, guards, 2);
    assert_null(placement_of(r, a));
    assert_int_equal(verdict_of(r, a)->filtered[FILTER_POD_ANTI], 2);
    assert_non_null(placement_of(r, b));
    free_gangs(w);
}

/* Gangs of one shape with a required affinity to app=a, with no such pod anywhere: the first
 * fails, and while nothing is placed the others get its verdict without a try (the cycle's
 * memo); once a gang of app=a is placed, the next is tried again and goes beside it. */
static void test_memo_affinity_until_placement(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:4");
    w->every_verdict = true;
    struct pod_term on_host = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    struct pod_meta mb = {
        .ns = "ml", .labels = labels_b, .n_labels = 1, .affinity = &on_host, .n_affinity = 1};
    struct pod_meta ma = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct gang *b1 = one_pod(w, 0, &mb), *b2 = one_pod(w, 1, &mb), *a = one_pod(w, 2, &ma);
    struct gang *b3 = one_pod(w, 3, &mb);
    assert_true(b1->shape == b3->shape); /* one class: the gang's id is not in its shape */
    const struct sched_result *r = cycle_pods(w, NULL, 0);
    assert_null(placement_of(r, b1));
    assert_null(placement_of(r, b2));
    const struct sched_verdict *v1 = verdict_of(r, b1), *v2 = verdict_of(r, b2);
    assert_non_null(v1);
    assert_non_null(v2);
    assert_int_equal(v2->filtered[FILTER_POD_AFFINITY], 4);
    const struct sched_placement *pa = placement_of(r, a), *p3 = placement_of(r, b3);
    assert_non_null(pa);
    assert_non_null(p3);
    assert_int_equal(p3->pods[0].node, pa->pods[0].node);
    free_gangs(w);
}

/* The start planner does not model the pod rules: a gang they refused gets no estimate, with
 * the reason, and claims nothing the gangs behind it would be planned around. */
static void test_no_estimate_when_rules_refuse(void **unused)
{
    (void)unused;
    struct world *w = world_new("hgx:2");
    struct pod_meta ma = {.ns = "ml", .labels = labels_a, .n_labels = 1};
    struct gang *a = add_gang(w, 1, 1, 0);
    struct gang *big = add_gang(w, 3, 8, 1); /* waits for capacity: an estimate of its own */
    with_meta(a, &ma);
    w->plan_starts = true;
    const struct sched_result *r = cycle_pods(w, guards, 2);
    const struct sched_eta *ea = NULL, *eb = NULL;
    for (uint32_t k = 0; k < r->n_etas; k++) {
        ea = r->etas[k].gang == a ? &r->etas[k] : ea;
        eb = r->etas[k].gang == big ? &r->etas[k] : eb;
    }
    assert_non_null(ea);
    assert_int_equal(ea->kind, SCHED_ETA_PODS);
    char text[128];
    eta_format(ea, 1000, text, sizeof(text));
    assert_non_null(strstr(text, "refused by the rules of pods"));
    assert_non_null(eb);
    assert_int_not_equal(eb->kind, SCHED_ETA_PODS);
    free_gangs(w);
}

/* A full cluster whose node i is expected free at (1000 + 100 i) s, every GPU used. */
static struct world *full_world(const char *spec)
{
    struct world *w = world_new(spec);
    for (uint32_t i = 0; i < w->c->n_nodes; i++) {
        use_gpus(w, i, 0xFF);
        w->state[i].release_ms = (int64_t)(1000 + 100 * i) * 1000;
    }
    w->plan_starts = true;
    return w;
}

static const struct sched_eta *eta_of(const struct sched_result *r, const struct gang *g)
{
    for (uint32_t k = 0; k < r->n_etas; k++)
        if (r->etas[k].gang == g)
            return &r->etas[k];
    return NULL;
}

/* A starving gang whose pods may not share a node reserves a node per pod (one node's eight
 * GPUs would hold all four pods by GPUs alone), and its expected start is when the fourth node
 * frees, not the first. */
static void test_reservation_one_pod_per_node(void **unused)
{
    (void)unused;
    struct world *w = full_world("hgx:8");
    struct pod_term anti = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    struct pod_meta m = {.ns = "ml", .labels = labels_a, .n_labels = 1, .anti = &anti, .n_anti = 1};
    struct gang *g = add_gang(w, 4, 1, 0);
    with_meta(g, &m);
    const struct sched_result *r = cycle(w, "gangsched", 700); /* past starvation.after, 600 s */
    assert_int_equal(r->n_reservations, 1);
    assert_int_equal(r->reservations[0].n_nodes, 4);
    for (uint32_t a = 0; a < 4; a++)
        for (uint32_t b = a + 1; b < 4; b++)
            assert_int_not_equal(r->reservations[0].nodes[a], r->reservations[0].nodes[b]);
    const struct sched_eta *e = eta_of(r, g);
    assert_non_null(e);
    assert_int_equal(e->kind, SCHED_ETA_AT);
    assert_int_equal(e->start_ms, 1300 * 1000); /* nodes 0..3: the fourth frees at 1300 s */
    free_gangs(w);
}

/* Pods with an affinity to one another by rack reserve inside one rack, even where two racks'
 * nodes would free earlier; pods spread over racks (a rule among them the reservation and the
 * planner do not model) get neither a reservation nor an estimate, and say why. */
static void test_reservation_follows_rules_among_pods(void **unused)
{
    (void)unused;
    struct world *w = full_world("hgx:16"); /* racks of 8 nodes */
    for (uint32_t i = 0; i < 16; i++)       /* rack 0's node 0 and rack 1's node 8 free first */
        w->state[i].release_ms = (i == 0 ? 1000 : i == 8 ? 1100 : 5000 + 100 * (int64_t)i) * 1000;
    struct pod_term aff = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK};
    struct pod_meta m = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .affinity = &aff, .n_affinity = 1};
    struct gang *g = add_gang(w, 2, 8, 0);
    with_meta(g, &m);
    const struct sched_result *r = cycle(w, "gangsched", 700);
    assert_int_equal(r->n_reservations, 1);
    assert_int_equal(r->reservations[0].n_nodes, 2);
    assert_int_equal(r->reservations[0].nodes[0] / 8, r->reservations[0].nodes[1] / 8);
    free_gangs(w);

    w = full_world("hgx:16");
    struct pod_spread sp = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 1};
    struct pod_meta ms = {
        .ns = "ml", .labels = labels_a, .n_labels = 1, .spread = &sp, .n_spread = 1};
    g = add_gang(w, 4, 1, 0);
    with_meta(g, &ms);
    r = cycle(w, "gangsched", 700);
    assert_int_equal(r->n_reservations, 0);
    const struct sched_eta *e = eta_of(r, g);
    assert_non_null(e);
    assert_int_equal(e->kind, SCHED_ETA_PODS_SELF);
    char text[160];
    eta_format(e, 700 * 1000, text, sizeof(text));
    assert_non_null(strstr(text, "rules among its own pods"));
    free_gangs(w);
}

/* Replicas (runs of gangs of one shape, one set of anti-affinity terms and spreads) carry the
 * rows of the replica before them, brought up to date with the pods placed since
 * (place_pods_carry): the same decisions and verdicts (the filters that refused each node) as
 * rows made from every node (no_shortcuts), among bound pods with anti-affinity and host ports,
 * with replicas of one and of two pods, by hostname and by rack, spread by rack (maxSkew 1 and
 * 2, minDomains above the racks there are) or by hostname, alone and with an anti-affinity,
 * until the nodes run out. */
static void test_replicas_carry_rows_as_from_scratch(void **unused)
{
    (void)unused;
    static const uint32_t port[] = {6 << 16 | 8080};
    static const struct pod_term anti_host = {
        .reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    static const struct pod_term anti_rack = {
        .reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK};
    static const struct pod_term anti_b_host = {
        .reqs = &req_app_b, .n_reqs = 1, .topology_key = HOST};
    static const struct pod_spread by_rack = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 1};
    static const struct pod_spread by_rack2[] = {
        {.sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 2},
        {.sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST}, .max_skew = 3}};
    static const struct pod_spread by_rack_min = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK},
        .max_skew = 1,
        .min_domains = 5};
    static const struct pod_spread by_host = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST}, .max_skew = 1};
    static const struct pod_meta replicas[] = {
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .anti = &anti_host, .n_anti = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .anti = &anti_host, .n_anti = 1},
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .anti = &anti_rack, .n_anti = 1},
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .spread = &by_rack, .n_spread = 1},
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .spread = by_rack2, .n_spread = 2},
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .spread = &by_rack_min, .n_spread = 1},
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .spread = &by_host, .n_spread = 1},
        {.ns = "ml",
         .labels = labels_a,
         .n_labels = 1,
         .anti = &anti_b_host,
         .n_anti = 1,
         .spread = &by_rack,
         .n_spread = 1},
    };
    static const struct pod_meta others[] = {
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .anti = &anti_host, .n_anti = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .ports = port, .n_ports = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .anti = &anti_rack, .n_anti = 1},
        {.ns = "ml", .labels = labels_a, .n_labels = 1},
    };
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    uint32_t placed = 0, refused = 0;
    for (int world = 0; world < 24; world++) {
        struct world *w[2];
        struct sched_pod bound[12];
        for (uint32_t k = 0; k < 12; k++)
            bound[k] = (struct sched_pod){.node = (uint32_t)(pfx_rnd(&rng) % 32),
                                          .meta = &others[pfx_rnd(&rng) % 4]};
        uint64_t seed = pfx_rnd(&rng);
        for (int x = 0; x < 2; x++) {
            uint64_t r = seed;
            w[x] = world_new("hgx:32");
            w[x]->no_shortcuts = x == 1;
            for (uint32_t i = 0; i < 32; i++)
                use_gpus(w[x], i, (uint32_t)(pfx_rnd(&r) & 0x7F));
            for (uint32_t run = 0, j = 0; run < 5; run++) { /* runs of 2 to 7 replicas */
                uint32_t len = 2 + (uint32_t)(pfx_rnd(&r) % 6), pods = 1 + (run == 4);
                const struct pod_meta *m = &replicas[pfx_rnd(&r) % 8];
                for (uint32_t k = 0; k < len && j < 30; k++, j++)
                    with_meta(add_gang(w[x], pods, 1, (int64_t)j), m);
            }
            w[x]->bound = bound;
            w[x]->n_bound = 12;
            cycle(w[x], "gangsched", 1);
        }
        pfx_same_result(&w[0]->res, &w[1]->res);
        placed += w[0]->res.n_placements;
        refused += w[0]->res.n_verdicts;
        free_gangs(w[0]);
        free_gangs(w[1]);
    }
    assert_true(placed > 150 && refused > 30); /* replicas placed, and others refused */
}

/* A replica's search goes on where the last replica's took its node (place_one) only while its
 * rows only refuse more: replicas apart by hostname and spread by rack over two racks, rack 0's
 * nodes first in the search (fewest free GPUs): the first takes node 0, the second (rack 0
 * refused) node 8, and the third, with both racks at one (rack 0 allowed again, node 8 still
 * refused), node 1, not node 9 after where the second's search stopped; as rows made from
 * every node decide. */
static void test_replica_search_restarts_when_a_spread_reopens(void **unused)
{
    (void)unused;
    static const struct pod_spread by_rack = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 1};
    static const struct pod_term apart = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    static const struct pod_meta m = {.ns = "ml",
                                      .labels = labels_a,
                                      .n_labels = 1,
                                      .anti = &apart,
                                      .n_anti = 1,
                                      .spread = &by_rack,
                                      .n_spread = 1};
    static const uint32_t want[] = {0, 8, 1};
    for (int x = 0; x < 2; x++) {
        struct world *w = world_new("hgx:16"); /* racks of 8 nodes */
        w->no_shortcuts = x == 1;
        for (uint32_t i = 0; i < 16; i++)
            use_gpus(w, i, i < 8 ? 0x7F : 0x3F); /* rack 0: 1 GPU free, rack 1: 2 */
        for (int64_t j = 0; j < 3; j++)
            with_meta(add_gang(w, 1, 1, j), &m);
        const struct sched_result *r = cycle(w, "gangsched", 10);
        assert_int_equal(r->n_placements, 3);
        for (uint32_t p = 0; p < 3; p++)
            assert_int_equal(r->placements[p].pods[0].node, want[p]);
        free_gangs(w);
    }
}

/* A gang placed pod by pod starts each pod's scan where the set's last pod went when nodes that
 * refuse a pod refuse the later ones too (place_pods.c rejects_stay): the same decisions as
 * scans from the first node (sched_snapshot.no_shortcuts), over 24 random worlds of bound pods
 * with labels, anti-affinity and host ports and gangs of one or two sets whose pods may not
 * share a node, some with an affinity to themselves by rack or a spread of their own pods over
 * racks (those scanned from the first node). */
static void test_scans_decide_as_from_scratch(void **unused)
{
    (void)unused;
    static const uint32_t port[] = {6 << 16 | 8080};
    static const struct pod_term anti_host = {
        .reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    static const struct pod_term aff_rack = {
        .reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK};
    static const struct pod_spread spread_rack = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 1};
    static const struct pod_meta metas[] = {
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .anti = &anti_host, .n_anti = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .ports = port, .n_ports = 1},
        {.ns = "ml",
         .labels = labels_a,
         .n_labels = 1,
         .anti = &anti_host,
         .n_anti = 1,
         .affinity = &aff_rack,
         .n_affinity = 1},
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .spread = &spread_rack, .n_spread = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1},
    };
    uint64_t rng = 0x853C49E6748FEA9Bull;
    uint32_t placed = 0;
    for (int world = 0; world < 24; world++) {
        struct world *w[2];
        struct sched_pod bound[24];
        for (uint32_t k = 0; k < 24; k++)
            bound[k] = (struct sched_pod){.node = (uint32_t)(pfx_rnd(&rng) % 16),
                                          .meta = &metas[pfx_rnd(&rng) % 5]};
        uint64_t seed = pfx_rnd(&rng);
        for (int x = 0; x < 2; x++) {
            uint64_t r = seed;
            w[x] = world_new("hgx:16");
            w[x]->no_shortcuts = x == 1;
            for (uint32_t i = 0; i < 16; i++)
                use_gpus(w[x], i, (uint32_t)(pfx_rnd(&r) & 0x3F));
            for (uint32_t j = 0; j < 12; j++) {
                struct gang *g = add_gang(w[x], 1 + (uint32_t)(pfx_rnd(&r) % 5),
                                          1 + (int64_t)(pfx_rnd(&r) % 2), (int64_t)j);
                const struct pod_meta *m = &metas[pfx_rnd(&r) % 4];
                if (pfx_rnd(&r) % 3 == 0) { /* a second set of the same pods but one GPU */
                    g->sets[1] = g->sets[0];
                    g->sets[1].count = 1 + (uint32_t)(pfx_rnd(&r) % 3);
                    g->sets[1].req.v[RES_GPU] = 1;
                    g->n_sets = 2;
                }
                with_meta(g, m);
            }
            w[x]->bound = bound;
            w[x]->n_bound = 24;
            cycle(w[x], "gangsched", 1);
        }
        pfx_same_result(&w[0]->res, &w[1]->res);
        placed += w[0]->res.n_placements;
        free_gangs(w[0]);
        free_gangs(w[1]);
    }
    assert_true(placed > 40); /* the worlds did place gangs pod by pod */
}

/* Marks kept across the gangs of a cycle (place_podmark.c: the domains a required term's
 * selection holds, the earlier pods with anti-affinity terms by kind; place_pods.c: a
 * DoNotSchedule spread's nodes and counts per shape of gang) reject as reading the pods
 * one by one does (sched_snapshot.no_shortcuts): the same placements and verdicts over 12 random
 * worlds of 160 bound pods in two namespaces (some being deleted: the rules count them, as
 * kube-scheduler does, the spreads do not) with kinds of anti-affinity by hostname, by rack and
 * across namespaces (a kind of pods of two apps), two terms on one pod and host ports, and 30 gangs
 * of one or two pods: without terms, apart from their app, with a kind's terms, a host port, an
 * affinity or spreads (of the gang's app, by rack; of another app in another namespace, by host and
 * rack), so that selections and kinds reach the size at which they are kept and the marks must
 * follow the pods placed since. */
static void test_kept_marks_reject_as_pod_by_pod(void **unused)
{
    (void)unused;
    static const char *const dev[] = {"dev"};
    static const uint32_t port[] = {6 << 16 | 8080};
    static const char *const b[] = {"b"};
    static const struct sel_req req_b = {.key = "app", .op = SEL_IN, .values = b, .n_values = 1};
    static const struct pod_term host_a = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST};
    static const struct pod_term rack_b[] = {
        {.reqs = &req_b, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK},
        {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST}};
    static const struct pod_term dev_a_rack = {.reqs = &req_app_a,
                                               .n_reqs = 1,
                                               .namespaces = dev,
                                               .n_namespaces = 1,
                                               .topology_key = TOPO_LABEL_RACK};
    static const struct pod_term with_a_rack = {
        .reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK};
    static const struct pod_spread spread_a = {
        .sel = {.reqs = &req_app_a, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 1};
    static const struct pod_spread spread_b[] = {
        {.sel = {.reqs = &req_b, .n_reqs = 1, .topology_key = HOST}, .max_skew = 2},
        {.sel = {.reqs = &req_b, .n_reqs = 1, .topology_key = TOPO_LABEL_RACK}, .max_skew = 3}};
    static const struct pod_meta metas[] = {
        {.ns = "ml", .labels = labels_a, .n_labels = 1},
        {.ns = "dev", .labels = labels_a, .n_labels = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1},
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .anti = &host_a, .n_anti = 1},
        {.ns = "dev", .labels = labels_a, .n_labels = 1, .anti = &host_a, .n_anti = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .anti = &dev_a_rack, .n_anti = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .anti = rack_b, .n_anti = 2},
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .ports = port, .n_ports = 1},
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .affinity = &with_a_rack, .n_affinity = 1},
        /* of the kind of metas[3] (its terms, its namespace), not of its app */
        {.ns = "ml", .labels = labels_b, .n_labels = 1, .anti = &host_a, .n_anti = 1},
        {.ns = "ml", .labels = labels_a, .n_labels = 1, .spread = &spread_a, .n_spread = 1},
        {.ns = "dev", .labels = labels_b, .n_labels = 1, .spread = spread_b, .n_spread = 2},
    };
    /* bound: each kind with terms near or past the size at which it is kept */
    static const uint8_t bound_kinds[] = {0, 2, 3, 9, 4, 5, 5, 5, 6, 6, 6, 7};
    /* gangs: without terms (the earlier pods' rules alone decide), apart in either namespace,
     * the kinds by rack, a port, an affinity, spreads (kept per shape of gang) */
    static const uint8_t gang_kinds[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 10, 11, 11};
    enum { N_BOUND = 160, N_GANGS = 30 }; /* cycle_fx.h holds 32 gangs */
    uint64_t rng = 0xD1B54A32D192ED03ull;
    uint32_t placed = 0, refused = 0;
    for (int world = 0; world < 12; world++) {
        struct world *w[2];
        struct sched_pod bound[N_BOUND];
        for (uint32_t k = 0; k < N_BOUND; k++) /* on the first 24 of 64 nodes */
            bound[k] =
                (struct sched_pod){.node = (uint32_t)(pfx_rnd(&rng) % 24),
                                   .meta = &metas[bound_kinds[pfx_rnd(&rng) % sizeof(bound_kinds)]],
                                   .deleting = pfx_rnd(&rng) % 8 == 0};
        uint64_t seed = pfx_rnd(&rng);
        for (int x = 0; x < 2; x++) {
            uint64_t r = seed;
            w[x] = world_new("hgx:64");
            w[x]->no_shortcuts = x == 1;
            for (uint32_t i = 0; i < 64; i++)
                use_gpus(w[x], i, (uint32_t)(pfx_rnd(&r) & 0x0F));
            for (uint32_t j = 0; j < N_GANGS; j++) {
                struct gang *g = add_gang(w[x], 1 + (uint32_t)(pfx_rnd(&r) % 2), 1, (int64_t)j);
                with_meta(g, &metas[gang_kinds[pfx_rnd(&r) % sizeof(gang_kinds)]]);
            }
            cycle_pods(w[x], bound, N_BOUND);
        }
        pfx_same_result(&w[0]->res, &w[1]->res);
        placed += w[0]->res.n_placements;
        refused += w[0]->res.n_verdicts;
        free_gangs(w[0]);
        free_gangs(w[1]);
    }
    /* most gangs were placed against the marks, some refused by them */
    assert_true(placed > 12 * N_GANGS / 2);
    assert_true(refused > 12);
}

/* Many kinds of rule pods (place_podmark.c keeps them in a table by key, grown as kinds come,
 * and finds those a pod set may meet under its labels, or open when a term needs no label):
 * 200 bound pods of 80 namespaces, each apart from app a of its own namespace (80 kinds) by a
 * term app In (a), app Exists, app NotIn (b), app In (c, a), or a term that selects nothing
 * beside app In (a), and 30 one-pod gangs of app a without terms in 30 of those namespaces:
 * each is kept off the nodes of its namespace's pods only, as reading the pods one by one
 * decides. */
static void test_many_kinds_reject_as_pod_by_pod(void **unused)
{
    (void)unused;
    enum { N_NS = 80, N_BOUND = 200, N_GANGS = 30 };
    static const char *const b[] = {"b"}, *const ca[] = {"c", "a"};
    static const struct sel_req exists = {.key = "app", .op = SEL_EXISTS},
                                not_b = {.key = "app",
                                         .op = SEL_NOT_IN,
                                         .values = b,
                                         .n_values = 1},
                                in_ca = {.key = "app", .op = SEL_IN, .values = ca, .n_values = 2};
    static const struct pod_term terms[][2] = {
        {{.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST}},
        {{.reqs = &exists, .n_reqs = 1, .topology_key = HOST}},
        {{.reqs = &not_b, .n_reqs = 1, .topology_key = HOST}},
        {{.reqs = &in_ca, .n_reqs = 1, .topology_key = HOST}},
        {{.none = true, .topology_key = TOPO_LABEL_RACK},
         {.reqs = &req_app_a, .n_reqs = 1, .topology_key = HOST}}};
    static char names[N_NS][8];
    static struct pod_meta rule[N_NS], plain[N_NS];
    for (uint32_t k = 0; k < N_NS; k++) {
        snprintf(names[k], sizeof(names[k]), "ns%u", k);
        rule[k] = (struct pod_meta){.ns = names[k],
                                    .labels = labels_a,
                                    .n_labels = 1,
                                    .anti = terms[k % 5],
                                    .n_anti = k % 5 == 4 ? 2 : 1};
        plain[k] = (struct pod_meta){.ns = names[k], .labels = labels_a, .n_labels = 1};
    }
    /* node j holds the pods of namespaces j, j + 64 - 80 ...: node 0 those of ns0, ns64, ns48,
     * ns32, so the gangs of ns0, ns32, ns48 and ns64 must go past it, those of ns16 need not */
    struct sched_pod bound[N_BOUND];
    for (uint32_t k = 0; k < N_BOUND; k++)
        bound[k] = (struct sched_pod){.node = k % 64, .meta = &rule[k % N_NS]};
    uint32_t avoided = 0;
    struct world *w[2];
    for (int x = 0; x < 2; x++) {
        w[x] = world_new("hgx:64");
        w[x]->no_shortcuts = x == 1;
        for (uint32_t j = 0; j < N_GANGS; j++)
            one_pod(w[x], (int64_t)j, &plain[(j * 17) % N_NS]);
        cycle_pods(w[x], bound, N_BOUND);
    }
    pfx_same_result(&w[0]->res, &w[1]->res);
    assert_int_equal(w[0]->res.n_placements, N_GANGS);
    for (uint32_t p = 0; p < w[0]->res.n_placements; p++) { /* never beside its namespace's */
        const struct sched_placement *pl = &w[0]->res.placements[p];
        for (uint32_t k = 0; k < N_BOUND; k++)
            if (bound[k].meta->ns == pl->gang->sets[0].meta->ns) {
                assert_int_not_equal(bound[k].node, pl->pods[0].node);
                avoided++;
            }
    }
    assert_true(avoided > N_GANGS); /* each gang had pods of its namespace to avoid */
    free_gangs(w[0]);
    free_gangs(w[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selector_semantics),
        cmocka_unit_test(test_self_anti_affinity_one_pod_per_node),
        cmocka_unit_test(test_without_terms_packs),
        cmocka_unit_test(test_affinity_to_bound_pod),
        cmocka_unit_test(test_bound_anti_affinity_and_ports),
        cmocka_unit_test(test_self_affinity_keeps_gang_in_one_rack),
        cmocka_unit_test(test_pod_by_pod_largest_sets_first),
        cmocka_unit_test(test_anti_affinity_between_gangs_of_one_cycle),
        cmocka_unit_test(test_topology_spread),
        cmocka_unit_test(test_memo_tells_labels_apart),
        cmocka_unit_test(test_memo_affinity_until_placement),
        cmocka_unit_test(test_no_estimate_when_rules_refuse),
        cmocka_unit_test(test_reservation_one_pod_per_node),
        cmocka_unit_test(test_reservation_follows_rules_among_pods),
        cmocka_unit_test(test_scans_decide_as_from_scratch),
        cmocka_unit_test(test_replicas_carry_rows_as_from_scratch),
        cmocka_unit_test(test_replica_search_restarts_when_a_spread_reopens),
        cmocka_unit_test(test_kept_marks_reject_as_pod_by_pod),
        cmocka_unit_test(test_many_kinds_reject_as_pod_by_pod),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
