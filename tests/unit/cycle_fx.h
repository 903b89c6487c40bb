/* tests/unit/cycle_fx.h: the small world the unit tests of one scheduling cycle share
 * (test_cycle.c, test_cycle_starts.c): a generated cluster (nodes_generate) with its node state,
 * up to 32 gangs of one pod set in one queue, GPUs marked used by other pods, one sched_cycle()
 * under a named policy, and the placement and verdict of a gang in its result. Times in the
 * helpers' arguments are seconds (submit_s, now_s); the snapshot's are milliseconds. Include
 * after cmocka.h, queue/queue.h, sched/core/cycle.h, sched/core/policy.h and sched/sim/nodes.h.
 */
#ifndef TESTS_UNIT_CYCLE_FX_H
#define TESTS_UNIT_CYCLE_FX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct world {
    struct cluster *c;
    struct node_state *state;
    struct gang gangs[32];
    struct podset gang_sets[32][GANG_MAX_SETS]; /* gangs[i].sets */
    uint32_t n_gangs;
    struct queue queue;
    const struct gang *pending[32];
    struct sched_queue_view view;
    struct arena arena;
    struct sched_result res;
    const struct sched_hold *hints; /* reservation hints for the next cycle */
    uint32_t n_hints;
    const struct sched_pod *bound; /* bound pods for the pod rules (sched_snapshot.bound_pods) */
    uint32_t n_bound;
    bool plan_starts;           /* the cycle also plans expected starts */
    bool no_shortcuts;          /* sched_snapshot.no_shortcuts */
    bool every_verdict;         /* sched_snapshot.verdict_every_gang */
    uint64_t (*clock_ns)(void); /* sched_snapshot.clock_ns, deadline_ns: a time budget */
    uint64_t deadline_ns;
    const bool *pass_over; /* sched_snapshot.pass_over, by gang id [n_gangs] */
};

static inline struct world *world_new(const char *spec)
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
static inline struct world *world_raw(const char *spec)
{
    struct world *w = calloc(1, sizeof(*w));
    struct sched_errbuf eb = {{0}};
    w->c = cluster_new();
    assert_int_equal(nodes_generate(w->c, spec, &eb), 0);
    w->queue = (struct queue){.name = "q", .priority = 0, .weight = 1};
    arena_init(&w->arena, 0);
    return w;
}

static inline void world_finalize(struct world *w)
{
    struct sched_errbuf eb = {{0}};
    assert_int_equal(cluster_finalize(w->c, NULL, NULL, 0, &eb), 0);
    w->state = calloc(w->c->n_nodes, sizeof(*w->state));
}

static inline void world_free(struct world *w)
{
    arena_fini(&w->arena);
    free(w->state);
    cluster_free(w->c);
    free(w);
}

static inline void set_req(struct res_vec *r, int64_t gpus)
{
    memset(r, 0, sizeof(*r));
    r->v[RES_GPU] = gpus;
    r->v[RES_CPU] = 1000;
    r->v[RES_MEMORY] = 1ll << 30;
    r->v[RES_PODS] = 1;
}

/* A gang of `pods` pods with `gpus` GPUs each, submitted at `submit_s`. */
static inline struct gang *add_gang(struct world *w, uint32_t pods, int64_t gpus, int64_t submit_s)
{
    struct gang *g = &w->gangs[w->n_gangs];
    memset(g, 0, sizeof(*g));
    g->id = w->n_gangs++;
    g->sets = w->gang_sets[g->id];
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
static inline void use_gpus(struct world *w, uint32_t i, uint32_t mask)
{
    w->state[i].gpu_used |= mask;
    w->state[i].used.v[RES_GPU] += __builtin_popcount(mask);
}

static inline const struct sched_result *cycle(struct world *w, const char *policy, int64_t now_s)
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
                                  .n_reserve_hints = w->n_hints,
                                  .bound_pods = w->bound,
                                  .n_bound_pods = w->n_bound,
                                  .plan_starts = w->plan_starts,
                                  .no_shortcuts = w->no_shortcuts,
                                  .verdict_every_gang = w->every_verdict,
                                  .clock_ns = w->clock_ns,
                                  .deadline_ns = w->deadline_ns,
                                  .pass_over = w->pass_over,
                                  .n_pass_over = w->pass_over ? w->n_gangs : 0};
    arena_reset(&w->arena);
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
    return &w->res;
}

static inline const struct sched_placement *placement_of(const struct sched_result *r,
                                                         const struct gang *g)
{
    for (uint32_t i = 0; i < r->n_placements; i++)
        if (r->placements[i].gang == g)
            return &r->placements[i];
    return NULL;
}

static inline const struct sched_verdict *verdict_of(const struct sched_result *r,
                                                     const struct gang *g)
{
    for (uint32_t i = 0; i < r->n_verdicts; i++)
        if (r->verdicts[i].gang == g)
            return &r->verdicts[i];
    return NULL;
}

static inline void free_names(struct world *w)
{
    for (uint32_t i = 0; i < w->n_gangs; i++)
        free((char *)w->gangs[i].name);
}

#endif
