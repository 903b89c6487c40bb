/* tests/unit/place_fx.h: pieces of a scheduling life shared by the unit tests of the placement
 * state kept between cycles (test_place_base.c, test_place_share.c): the world a life keeps
 * (cluster, node state, base, two arenas, a seeded random source), the driver's usage of one
 * pod, and the check that two cycles decided the same. Include after cmocka.h, <stdlib.h>,
 * sched/core/cycle.h and sched/core/place_base.h. */
#ifndef TESTS_UNIT_PLACE_FX_H
#define TESTS_UNIT_PLACE_FX_H

#include <stdint.h>

/* What a life keeps between its cycles: the cluster (owned), its node state, the base kept
 * between cycles, an arena for the decision on the base (a) and one for the decision from
 * scratch (b), and the random source. */
struct pfx_world {
    struct cluster *c;
    struct node_state *state;
    struct place_base *base;
    struct arena a, b;
    uint64_t rng;
};

static inline void pfx_world_init(struct pfx_world *w, struct cluster *c, uint64_t seed)
{
    w->rng = seed;
    w->c = c;
    w->state = calloc(c->n_nodes, sizeof(*w->state));
    assert_non_null(w->state);
    w->base = place_base_new(c);
    assert_non_null(w->base);
    arena_init(&w->a, 0);
    arena_init(&w->b, 0);
}

static inline void pfx_world_fini(struct pfx_world *w)
{
    arena_fini(&w->a);
    arena_fini(&w->b);
    place_base_free(w->base);
    free(w->state);
    cluster_free(w->c);
}

/* xorshift64: the next value of *s (never 0 from a seed that is not 0). */
static inline uint64_t pfx_rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

/* The driver's usage of pod k of g (its pod set found by the counts) on node a->node (as the
 * simulator counts it: the whole request, and the devices named): add (sign 1) or take away
 * (-1); the base hears of it. */
static inline void pfx_use(struct node_state *state, struct place_base *b, const struct gang *g,
                           uint32_t k, const struct sched_assign *a, int sign)
{
    uint32_t set = 0;
    while (set + 1 < g->n_sets && k >= g->sets[set].count)
        k -= g->sets[set++].count;
    struct node_state *s = &state[a->node];
    if (sign > 0) {
        res_add(&s->used, &g->sets[set].req);
        s->gpu_used |= a->gpu_mask;
    } else {
        res_sub(&s->used, &g->sets[set].req);
        s->gpu_used &= ~a->gpu_mask;
    }
    place_base_touch(b, a->node);
}

/* The same placements (nodes and devices), verdicts and reservations. */
static inline void pfx_same_result(const struct sched_result *x, const struct sched_result *y)
{
    assert_int_equal(x->n_placements, y->n_placements);
    for (uint32_t p = 0; p < x->n_placements; p++) {
        const struct sched_placement *a = &x->placements[p], *b = &y->placements[p];
        assert_int_equal(a->gang->id, b->gang->id);
        assert_int_equal(a->level, b->level);
        assert_int_equal(a->domain, b->domain);
        for (uint32_t k = 0; k < a->gang->n_pods; k++) {
            assert_int_equal(a->pods[k].node, b->pods[k].node);
            assert_int_equal(a->pods[k].gpu_mask, b->pods[k].gpu_mask);
        }
    }
    assert_int_equal(x->n_verdicts, y->n_verdicts);
    for (uint32_t v = 0; v < x->n_verdicts; v++) {
        assert_int_equal(x->verdicts[v].gang->id, y->verdicts[v].gang->id);
        assert_int_equal(x->verdicts[v].why, y->verdicts[v].why);
        assert_int_equal(x->verdicts[v].short_res, y->verdicts[v].short_res);
        assert_int_equal(x->verdicts[v].best_free, y->verdicts[v].best_free);
        assert_memory_equal(x->verdicts[v].filtered, y->verdicts[v].filtered,
                            sizeof(x->verdicts[v].filtered));
        assert_int_equal(x->verdicts[v].near_level, y->verdicts[v].near_level);
        assert_int_equal(x->verdicts[v].near_domain, y->verdicts[v].near_domain);
        assert_int_equal(x->verdicts[v].near_pods, y->verdicts[v].near_pods);
    }
    assert_int_equal(x->n_reservations, y->n_reservations);
    for (uint32_t r = 0; r < x->n_reservations; r++) {
        assert_int_equal(x->reservations[r].n_nodes, y->reservations[r].n_nodes);
        assert_memory_equal(x->reservations[r].nodes, y->reservations[r].nodes,
                            x->reservations[r].n_nodes * sizeof(uint32_t));
    }
}

#endif
