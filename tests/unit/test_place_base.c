/* tests/unit/test_place_base.c: placement state kept between cycles and backlog classes.
 *
 * The property that matters: a cycle on a base kept between cycles (nodes touched as their
 * usage changes) decides exactly what a cycle on a state built from scratch decides. Checked by
 * running both on the same snapshots through a seeded random life (gangs placed and ended, nodes
 * down and up, preemptor holds, reservations), then the pieces: bucket order, the per-level
 * largest domain, and the backlog classes' verdicts.
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

#include "queue/queue.h"
#include "sched/core/backlog.h"
#include "sched/core/bits.h"
#include "sched/core/cycle.h"
#include "sched/core/place_base.h"
#include "sched/core/policy.h"
#include "sched/sim/nodes.h"

#include "tests/unit/place_fx.h"

#define N_GANGS 48

struct life {
    struct pfx_world w;
    struct gang gangs[N_GANGS];
    struct sched_assign pods[N_GANGS][16];
    bool running[N_GANGS];
};

static uint64_t rnd(struct life *l)
{
    return pfx_rnd(&l->w.rng);
}

static struct cluster *make_cluster(const char *spec)
{
    struct sched_errbuf eb = {{0}};
    struct cluster *c = cluster_new();
    assert_int_equal(nodes_generate(c, spec, &eb), 0);
    assert_int_equal(cluster_finalize(c, NULL, NULL, 0, &eb), 0);
    return c;
}

/* make_gang's pod sets, by gang id: each test's gangs have distinct ids below 512 */
static struct podset gang_sets[512][2];

static void make_gang(struct gang *g, uint32_t id, uint32_t pods, int64_t gpus, int8_t req)
{
    memset(g, 0, sizeof(*g));
    assert_true(id < 512);
    g->sets = memset(gang_sets[id], 0, sizeof(gang_sets[id]));
    g->id = id;
    g->name = "g";
    g->submit_ms = (int64_t)id * 1000;
    g->n_sets = 1;
    g->sets[0].count = pods;
    g->sets[0].req.v[RES_GPU] = gpus;
    g->sets[0].req.v[RES_CPU] = 1000;
    g->sets[0].req.v[RES_MEMORY] = INT64_C(1) << 30;
    g->sets[0].req.v[RES_PODS] = 1;
    g->topo_required = req;
    g->topo_preferred = -1;
    g->slice_level = -1;
    gang_finalize(g);
    g->min_member = g->n_pods;
}

static void use(struct life *l, const struct gang *g, uint32_t k, const struct sched_assign *a,
                int sign)
{
    pfx_use(l->w.state, l->w.base, g, k, a, sign);
}

static struct life *life_new(uint64_t seed)
{
    struct life *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    pfx_world_init(&l->w, make_cluster("hgx:24,nvl72:1,pcie:8"), seed);
    return l;
}

static void life_free(struct life *l)
{
    pfx_world_fini(&l->w);
    free(l);
}

/* How a life goes: a preemptor hold for pending gang `hold_gang` every `hold_every` cycles (on
 * two random nodes), a running gang ends with chance 1/end_one_in per cycle, and the second
 * decision is made without shortcuts as well as from scratch (scratch_all). */
struct life_rules {
    int cycles;
    uint32_t hold_gang, hold_every, end_one_in;
    bool scratch_all;
};

struct life_counts {
    uint32_t placed, reserved, cached;
};

/* Runs the life: each cycle decided on the kept base and again from scratch, the two results
 * compared; the first's placements start, some gangs end, a node goes down or comes back. */
static struct life_counts life_run(struct life *l, const struct life_rules *r)
{
    const struct sched_policy *pol = sched_policy_find("gangsched");
    struct queue qu = {.name = "q", .priority = 0, .weight = 1};
    struct life_counts n_out = {0};
    for (int cyc = 0; cyc < r->cycles; cyc++) {
        const struct gang *pending[N_GANGS];
        uint32_t n = 0;
        for (uint32_t j = 0; j < N_GANGS; j++)
            if (!l->running[j])
                pending[n++] = &l->gangs[j];
        uint32_t hold_nodes[2] = {(uint32_t)(rnd(l) % l->w.c->n_nodes),
                                  (uint32_t)(rnd(l) % l->w.c->n_nodes)};
        bool hold_on = n > r->hold_gang && cyc % r->hold_every == 0;
        struct sched_hold hold = {
            .gang = hold_on ? pending[r->hold_gang] : NULL, .nodes = hold_nodes, .n_nodes = 2};
        struct sched_queue_view view = {.queue = &qu, .pending = pending, .n_pending = n};
        struct sched_snapshot snap = {.now_ms = INT64_C(3600000) * (cyc + 1),
                                      .cluster = l->w.c,
                                      .state = l->w.state,
                                      .queues = &view,
                                      .n_queues = 1,
                                      .policy = pol,
                                      .holds = &hold,
                                      .n_holds = hold_on ? 1 : 0};
        struct sched_result with, without;
        arena_reset(&l->w.a);
        arena_reset(&l->w.b);
        snap.base = l->w.base;
        assert_int_equal(sched_cycle(&snap, &l->w.a, &with), 0);
        snap.base = NULL;
        snap.no_shortcuts = r->scratch_all;
        assert_int_equal(sched_cycle(&snap, &l->w.b, &without), 0);
        pfx_same_result(&with, &without);
        if (r->scratch_all)
            assert_int_equal(without.n_fit_cached, 0);
        n_out.cached += with.n_fit_cached;
        n_out.placed += with.n_placements;
        n_out.reserved += with.n_reservations;
        for (uint32_t p = 0; p < with.n_placements; p++) { /* the driver starts them */
            const struct gang *g = with.placements[p].gang;
            l->running[g->id] = true;
            for (uint32_t k = 0; k < g->n_pods; k++) {
                l->pods[g->id][k] = with.placements[p].pods[k];
                use(l, g, k, &l->pods[g->id][k], +1);
            }
        }
        for (uint32_t j = 0; j < N_GANGS; j++) /* some end */
            if (l->running[j] && rnd(l) % r->end_one_in == 0) {
                l->running[j] = false;
                for (uint32_t k = 0; k < l->gangs[j].n_pods; k++)
                    use(l, &l->gangs[j], k, &l->pods[j][k], -1);
            }
        uint32_t i = (uint32_t)(rnd(l) % l->w.c->n_nodes); /* a node goes down or comes back */
        l->w.state[i].not_ready = !l->w.state[i].not_ready && rnd(l) % 2 == 0;
        place_base_touch(l->w.base, i);
    }
    return n_out;
}

/* 60 cycles of a random life, each decided twice: on the kept base and from scratch. */
static void test_base_decides_as_scratch(void **unused)
{
    (void)unused;
    struct life *l = life_new(0x9E3779B97F4A7C15ull);
    static const uint32_t pods[] = {1, 1, 2, 4, 8, 3, 16};
    static const int64_t gpus[] = {1, 2, 4, 8, 8, 8};
    for (uint32_t j = 0; j < N_GANGS; j++) {
        uint32_t p = pods[rnd(l) % 7];
        int8_t req = rnd(l) % 5 == 0 ? 2 : -1; /* some must fit one rack */
        make_gang(&l->gangs[j], j, p, gpus[rnd(l) % 6], req);
    }
    const struct life_rules r = {.cycles = 60, .hold_gang = 0, .hold_every = 3, .end_one_in = 3};
    struct life_counts n = life_run(l, &r);
    assert_true(n.placed > 20); /* the life did place gangs and reserve capacity */
    assert_true(n.reserved > 0);
    life_free(l);
}

/* The domain sums kept across the gangs of a cycle (place_fitc.c) decide what sums made from
 * scratch for every gang decide: 40 cycles of a random life whose gangs come in runs of one shape
 * (one or two pod sets, a required or preferred level, spreading), each decided on the kept base
 * with the cache and from scratch without it; the cache must have served searches. */
static void test_fit_cache_decides_as_scratch(void **unused)
{
    (void)unused;
    struct life *l = life_new(0x2545F4914F6CDD1Dull);
    static const uint32_t pods[] = {2, 4, 8, 3, 6, 2};
    static const int64_t gpus[] = {1, 2, 4, 1, 2, 8};
    for (uint32_t j = 0; j < N_GANGS; j++) {
        uint32_t shape = (j / 3) % 6, v = (j / 3) % 5; /* three gangs in a row share a shape */
        make_gang(&l->gangs[j], j, pods[shape], gpus[shape], v == 1 ? 2 : -1);
        struct gang *g = &l->gangs[j];
        g->topo_preferred = v == 2 ? 1 : -1;
        g->spread = v == 3;
        if (v == 4) { /* a second pod set of one-GPU pods */
            g->sets[1] = g->sets[0];
            g->sets[1].count = 2;
            g->sets[1].req.v[RES_GPU] = 1;
            g->n_sets = 2;
            gang_finalize(g);
            g->min_member = g->n_pods;
        }
    }
    const struct life_rules r = {
        .cycles = 40, .hold_gang = 3, .hold_every = 2, .end_one_in = 2, .scratch_all = true};
    struct life_counts n = life_run(l, &r);
    fprintf(stderr, "fit cache: %u placed, %u searches cached\n", n.placed, n.cached);
    assert_true(n.placed > 40);
    assert_true(n.cached > 40);
    life_free(l);
}

/* Preferred node affinity's tiers, kept for the cycle's gangs of the same preferences with
 * their counts per bucket (place.c pref_tiers, place_base.c tier_count), decide what tiers made
 * again for every gang, with the domain sums kept across gangs (place_fitc.c, with their slots
 * per tier) or made from scratch, decide: 40 cycles of a random life whose gangs, one-pod and
 * multi-pod, come in runs of one shape and longer runs of one set of preferences (a rack and a
 * GPU product, a node by name, none). */
static void test_pref_tiers_decide_as_scratch(void **unused)
{
    (void)unused;
    struct life *l = life_new(0x853C49E6748FEA9Bull);
    const char *rack[] = {"hgx-rack-001"}, *l40s[] = {"NVIDIA-L40S"},
               *name[] = {l->w.c->nodes[5].name, l->w.c->nodes[9].name, l->w.c->nodes[10].name,
                          l->w.c->nodes[17].name};
    const struct sel_req in_rack = {.key = TOPO_LABEL_RACK, .values = rack, .n_values = 1},
                         on_l40s = {.key = "nvidia.com/gpu.product", .values = l40s, .n_values = 1},
                         by_name = {
                             .key = "metadata.name", .field = true, .values = name, .n_values = 4};
    const struct pref_term two[] = {{.weight = 60, .term = {&in_rack, 1}},
                                    {.weight = 30, .term = {&on_l40s, 1}}},
                           one[] = {{.weight = 100, .term = {&by_name, 1}}};
    static const uint32_t pods[] = {1, 2, 4, 1, 3, 2};
    static const int64_t gpus[] = {1, 4, 1, 2, 2, 8};
    uint32_t prefer_name = 0;
    for (uint32_t j = 0; j < N_GANGS; j++) {
        /* three gangs in a row share a shape, nine their preferences */
        uint32_t shape = (j / 3) % 6, v = (j / 9) % 3;
        make_gang(&l->gangs[j], j, pods[shape], gpus[shape], -1);
        struct podset *ps = &l->gangs[j].sets[0];
        ps->pref = v == 0 ? two : v == 1 ? one : NULL;
        ps->n_pref = v == 0 ? 2 : v == 1 ? 1 : 0;
        gang_finalize(&l->gangs[j]);
        prefer_name += v == 1 && pods[shape] == 1;
    }
    const struct life_rules r = {
        .cycles = 40, .hold_gang = 1, .hold_every = 4, .end_one_in = 2, .scratch_all = true};
    struct life_counts n = life_run(l, &r);
    fprintf(stderr, "preferences: %u placed, %u searches cached\n", n.placed, n.cached);
    assert_true(n.placed > 40);
    assert_true(n.cached > 20); /* the kept sums with their tiers served searches */
    assert_true(prefer_name > 0);
    life_free(l);
}

/* After a sync every bucket lists its nodes by ascending index; linked nodes come first, most
 * recent first; the next sync restores the order. */
static void test_bucket_order(void **unused)
{
    (void)unused;
    struct cluster *c = make_cluster("hgx:300");
    struct node_state *state = calloc(c->n_nodes, sizeof(*state));
    struct place_base *b = place_base_new(c);
    uint64_t r = 12345;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        state[i].gpu_used = (uint32_t)(r & 0xFF);
    }
    place_base_sync(b, state);
    int64_t free_gpus = 0;
    for (uint32_t k = 0; k < PB_KEYS; k++) {
        struct pb_iter it;
        pb_iter_start(b, k, &it);
        int32_t last = -1;
        for (int32_t i; (i = pb_iter_next(b, k, &it)) >= 0; last = i) {
            assert_true(i > last);
            assert_int_equal(bits_popc32(b->gpu_free[i]), k);
            free_gpus += k;
        }
    }
    assert_int_equal(free_gpus, b->free_gpus);
    /* nodes 7 and 290 change in the cycle: they head their new bucket, 290 first */
    b->gpu_free[7] = 0xFF;
    b->gpu_free[290] = 0xFF;
    pb_unlink(b, 7);
    pb_link(b, 7);
    pb_unlink(b, 290);
    pb_link(b, 290);
    struct pb_iter it;
    pb_iter_start(b, 8, &it);
    assert_int_equal(pb_iter_next(b, 8, &it), 290);
    assert_int_equal(pb_iter_next(b, 8, &it), 7);
    int32_t next = pb_iter_next(b, 8, &it);
    assert_true(next < 0 || (next != 7 && next != 290));
    place_base_sync(b, state); /* both restored from their usage */
    assert_int_equal(b->gpu_free[7], 0xFFu & ~state[7].gpu_used);
    assert_int_equal(b->free_gpus, free_gpus);
    place_base_free(b);
    free(state);
    cluster_free(c);
}

/* Nodes charged with GPU shares at the sync (pb_link_shared, in ascending order as
 * place_share.c charges them) come after the nodes linked during the cycle and before the
 * bitmap, the last charged first: the order of a build that links them (LIFO) at every cycle.
 * The next sync leaves them where they are unless they were marked. */
static void test_shared_set_order(void **unused)
{
    (void)unused;
    struct cluster *c = make_cluster("hgx:300");
    struct node_state *state = calloc(c->n_nodes, sizeof(*state));
    struct place_base *b = place_base_new(c);
    for (uint32_t i = 0; i < c->n_nodes; i++)
        state[i].gpu_used = 0x0F; /* every node in bucket 4 */
    place_base_sync(b, state);
    static const uint32_t shared[] = {3, 64, 200, 299};
    for (uint32_t k = 0; k < 4; k++)
        pb_link_shared(b, shared[k]);
    b->gpu_free[7] = 0xF0; /* changed in the cycle: heads the bucket */
    pb_unlink(b, 7);
    pb_link(b, 7);
    static const int32_t want[] = {7, 299, 200, 64, 3, 0, 1, 2, 4, 5, 6, 8};
    struct pb_iter it;
    pb_iter_start(b, 4, &it);
    for (uint32_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
        assert_int_equal(pb_iter_next(b, 4, &it), want[k]);
    uint32_t seen = 12;
    while (pb_iter_next(b, 4, &it) >= 0)
        seen++;
    assert_int_equal(seen, c->n_nodes);
    pb_cand_fill(b, 4); /* every linked node is a candidate, the shared ones included */
    for (uint32_t k = 0; k < 4; k++)
        assert_true(b->cand[shared[k] / 64] >> (shared[k] % 64) & 1);
    for (uint32_t w = 0; w < b->words; w++)
        b->cand[w] = 0;
    place_base_touch(b, 200); /* the driver changed node 200: restored into the bitmap */
    place_base_sync(b, state);
    static const int32_t after[] = {299, 64, 3, 0, 1, 2, 4};
    pb_iter_start(b, 4, &it);
    for (uint32_t k = 0; k < sizeof(after) / sizeof(after[0]); k++)
        assert_int_equal(pb_iter_next(b, 4, &it), after[k]);
    assert_int_equal(b->free_gpus, 4 * (int64_t)c->n_nodes);
    place_base_free(b);
    free(state);
    cluster_free(c);
}

/* The largest domain per level, kept by deltas, equals a count from scratch. */
static void test_level_max(void **unused)
{
    (void)unused;
    struct cluster *c = make_cluster("hgx:64,nvl72:2");
    struct node_state *state = calloc(c->n_nodes, sizeof(*state));
    struct place_base *b = place_base_new(c);
    uint64_t r = 777;
    for (int step = 0; step < 200; step++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        uint32_t i = (uint32_t)(r % c->n_nodes);
        state[i].not_ready = !state[i].not_ready;
        place_base_touch(b, i);
        place_base_sync(b, state);
        int64_t got[TOPO_MAX_LEVELS];
        pb_level_max(b, got);
        for (uint32_t lv = 0; lv < c->topo.n_levels; lv++) {
            int64_t *sum = calloc(c->topo.levels[lv].n_domains, sizeof(*sum)), max = 0;
            for (uint32_t n = 0; n < c->n_nodes; n++)
                if (!state[n].not_ready)
                    sum[c->nodes[n].dom[lv]] += c->nodes[n].n_gpus;
            for (uint32_t d = 0; d < c->topo.levels[lv].n_domains; d++)
                max = sum[d] > max ? sum[d] : max;
            assert_int_equal(got[lv], max);
            free(sum);
        }
    }
    place_base_free(b);
    free(state);
    cluster_free(c);
}

/* 20 gangs of two shapes (2 pods x 4 GPUs, 1 pod x 8 GPUs) on a full cluster: all examined; a
 * verdict per gang when asked, else one per shape (the ones tried). */
static void test_backlog_verdicts(void **unused)
{
    (void)unused;
    struct cluster *c = make_cluster("hgx:2");
    struct node_state *state = calloc(c->n_nodes, sizeof(*state));
    for (uint32_t i = 0; i < c->n_nodes; i++)
        state[i].gpu_used = 0xFF, state[i].used.v[RES_GPU] = 8;
    struct gang *gangs = calloc(20, sizeof(*gangs));
    const struct gang *pending[20];
    for (uint32_t j = 0; j < 20; j++) {
        make_gang(&gangs[j], j, j % 2 ? 1 : 2, j % 2 ? 8 : 4, -1); /* neither dominates */
        pending[j] = &gangs[j];
    }
    struct queue qu = {.name = "q", .priority = 0, .weight = 1};
    struct sched_queue_view view = {.queue = &qu, .pending = pending, .n_pending = 20};
    struct sched_snapshot snap = {.now_ms = 1000,
                                  .cluster = c,
                                  .state = state,
                                  .queues = &view,
                                  .n_queues = 1,
                                  .policy = sched_policy_find("gangsched")};
    struct arena a;
    arena_init(&a, 0);
    struct sched_result res;
    assert_int_equal(sched_cycle(&snap, &a, &res), 0);
    assert_int_equal(res.n_examined, 20);
    assert_int_equal(res.n_placements, 0);
    assert_int_equal(res.n_verdicts, 2);
    assert_int_equal(res.verdicts[0].gang->id, 0);
    assert_int_equal(res.verdicts[1].gang->id, 1);
    snap.verdict_every_gang = true;
    arena_reset(&a);
    assert_int_equal(sched_cycle(&snap, &a, &res), 0);
    assert_int_equal(res.n_verdicts, 20);
    for (uint32_t v = 0; v < 20; v++) {
        assert_int_equal(res.verdicts[v].gang->id, v);
        assert_int_equal(res.verdicts[v].why, SCHED_WHY_RESOURCES);
    }
    arena_fini(&a);
    free(gangs);
    free(state);
    cluster_free(c);
}

/* A gang that holds capacity (a preemptor's) is tried even when an earlier gang of its class
 * failed: it may use what the other could not. */
static void test_backlog_hold_is_tried(void **unused)
{
    (void)unused;
    struct cluster *c = make_cluster("hgx:2");
    struct node_state *state = calloc(c->n_nodes, sizeof(*state));
    state[1].gpu_used = 0xFF, state[1].used.v[RES_GPU] = 8; /* node 0 free, held for g1 */
    struct gang gangs[2];
    const struct gang *pending[2] = {&gangs[0], &gangs[1]};
    make_gang(&gangs[0], 0, 1, 8, -1);
    make_gang(&gangs[1], 1, 1, 8, -1);
    uint32_t held = 0;
    struct sched_hold hold = {.gang = &gangs[1], .nodes = &held, .n_nodes = 1};
    struct queue qu = {.name = "q", .priority = 0, .weight = 1};
    struct sched_queue_view view = {.queue = &qu, .pending = pending, .n_pending = 2};
    struct sched_snapshot snap = {.now_ms = 1000,
                                  .cluster = c,
                                  .state = state,
                                  .queues = &view,
                                  .n_queues = 1,
                                  .policy = sched_policy_find("gangsched"),
                                  .holds = &hold,
                                  .n_holds = 1};
    struct arena a;
    arena_init(&a, 0);
    struct sched_result res;
    assert_int_equal(sched_cycle(&snap, &a, &res), 0);
    assert_int_equal(res.n_placements, 1);
    assert_int_equal(res.placements[0].gang->id, 1);
    assert_int_equal(res.placements[0].pods[0].node, 0);
    arena_fini(&a);
    free(state);
    cluster_free(c);
}

/* Queue lists count the distinct classes of their gangs as gangs come and go. */
static void test_queue_class_counts(void **unused)
{
    (void)unused;
    struct gang *gangs = calloc(300, sizeof(*gangs));
    struct queue_list l;
    queue_list_init(&l, false);
    for (uint32_t j = 0; j < 300; j++) { /* 30 classes: pods 1..10 x GPUs 1, 2, 4 */
        make_gang(&gangs[j], j, 1 + j % 10, (int64_t)1 << (j / 10 % 3), -1);
        assert_int_equal(queue_list_insert(&l, &gangs[j]), 0);
    }
    assert_int_equal(l.n_classes, 30);
    for (uint32_t k = 0; k < l.n; k++)
        assert_true(l.keys[k] == backlog_gang_key(l.items[k]));
    for (uint32_t j = 0; j < 300; j++) /* every class but pods 1 x GPU 1 (j % 30 == 0) leaves */
        if (j % 30 != 0)
            assert_true(queue_list_remove(&l, &gangs[j]));
    assert_int_equal(l.n_classes, 1);
    assert_int_equal(l.n, 10);
    for (uint32_t j = 0; j < 300; j++)
        if (j % 30 == 0)
            assert_true(queue_list_remove(&l, &gangs[j]));
    assert_int_equal(l.n_classes, 0);
    assert_int_equal(queue_list_insert(&l, &gangs[7]), 0);
    assert_int_equal(l.n_classes, 1);
    queue_list_fini(&l);
    free(gangs);
}

/* With the queue's class keys the cycle may pass over the rest of a queue at once: the same
 * decisions and verdicts as gang by gang, every gang counted as examined. */
static void test_backlog_rest_of_queue(void **unused)
{
    (void)unused;
    struct cluster *c = make_cluster("hgx:4");
    struct node_state *state = calloc(c->n_nodes, sizeof(*state));
    for (uint32_t i = 1; i < c->n_nodes; i++) /* node 0 has 4 free GPUs */
        state[i].gpu_used = 0xFF, state[i].used.v[RES_GPU] = 8;
    state[0].gpu_used = 0x0F, state[0].used.v[RES_GPU] = 4;
    struct gang *gangs = calloc(200, sizeof(*gangs));
    struct queue_list l;
    queue_list_init(&l, false);
    for (uint32_t j = 0; j < 200; j++) { /* mostly too large; a 2-GPU gang now and then fits */
        make_gang(&gangs[j], j, j % 3 == 0 ? 2 : 1, j % 50 == 49 ? 2 : 8, -1);
        assert_int_equal(queue_list_insert(&l, &gangs[j]), 0);
    }
    struct queue qu = {.name = "q", .priority = 0, .weight = 1};
    struct sched_queue_view view = {.queue = &qu, .pending = l.items, .n_pending = l.n};
    struct sched_snapshot snap = {.now_ms = 1000,
                                  .cluster = c,
                                  .state = state,
                                  .queues = &view,
                                  .n_queues = 1,
                                  .policy = sched_policy_find("gangsched")};
    struct arena a, b;
    arena_init(&a, 0);
    arena_init(&b, 0);
    struct sched_result walked, jumped;
    assert_int_equal(sched_cycle(&snap, &a, &walked), 0);
    view.class_keys = l.keys;
    view.n_classes = l.n_classes;
    assert_int_equal(sched_cycle(&snap, &b, &jumped), 0);
    pfx_same_result(&walked, &jumped);
    assert_int_equal(walked.n_placements, 2); /* two 2-GPU gangs on node 0's 4 free GPUs */
    assert_int_equal(jumped.n_examined, 200);
    assert_int_equal(walked.n_examined, 200);
    arena_fini(&a);
    arena_fini(&b);
    queue_list_fini(&l);
    free(gangs);
    free(state);
    cluster_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base_decides_as_scratch),
        cmocka_unit_test(test_fit_cache_decides_as_scratch),
        cmocka_unit_test(test_pref_tiers_decide_as_scratch),
        cmocka_unit_test(test_bucket_order),
        cmocka_unit_test(test_shared_set_order),
        cmocka_unit_test(test_level_max),
        cmocka_unit_test(test_backlog_verdicts),
        cmocka_unit_test(test_backlog_hold_is_tried),
        cmocka_unit_test(test_queue_class_counts),
        cmocka_unit_test(test_backlog_rest_of_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
