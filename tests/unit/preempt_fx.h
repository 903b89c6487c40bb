/* tests/unit/preempt_fx.h: the world the unit tests of preemption share (test_preempt.c): a
 * generated cluster with a configuration, up to 32 gangs in up to 3 queues, running gangs on
 * given nodes with their usage, bound pods for the pod rules, one sched_cycle() under a named
 * policy and whether a gang was evicted. Times in the helpers' arguments are seconds. Include
 * after cmocka.h, config/config.h, queue/queue.h, sched/core/cycle.h, sched/core/policy.h and
 * sched/sim/nodes.h. */
#ifndef TESTS_UNIT_PREEMPT_FX_H
#define TESTS_UNIT_PREEMPT_FX_H

#include <stdlib.h>
#include <string.h>

#define HDR "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
#define TWO_QUEUES                                                                                 \
    HDR "cohorts:\n  - name: co\nqueues:\n"                                                        \
        "  - name: a\n    cohort: co\n    quota:\n      default:\n        nvidia.com/gpu: 8\n"     \
        "  - name: b\n    cohort: co\n    quota:\n      default:\n        nvidia.com/gpu: 8\n"

struct world {
    struct cluster *c;
    struct node_state *state;
    struct config *cfg;
    struct gang gangs[32];
    struct podset gang_sets[32][GANG_MAX_SETS]; /* gangs[i].sets */
    struct sched_assign pods[32][8];
    struct sched_running running[32];
    uint32_t n_running;
    uint32_t n;
    struct queue queues[3];
    const struct gang *pending[3][32];
    struct sched_queue_view views[3];
    int64_t usage[3 * RES_MAX];
    struct arena arena;
    struct sched_result res;
    const struct sched_hold *hints; /* the last cycle's starvation reservations */
    uint32_t n_hints;
    bool plan_starts;              /* the cycle plans expected starts too */
    const struct sched_pod *bound; /* bound pods for the pod rules (sched_snapshot.bound_pods) */
    uint32_t n_bound;
};

static inline struct world *world(const char *spec, const char *yaml)
{
    struct world *w = calloc(1, sizeof(*w));
    struct sched_errbuf eb = {{0}};
    w->c = cluster_new();
    assert_int_equal(nodes_generate(w->c, spec, &eb), 0);
    assert_int_equal(cluster_finalize(w->c, NULL, NULL, 0, &eb), 0);
    w->state = calloc(w->c->n_nodes, sizeof(*w->state));
    assert_int_equal(config_load_buffer("t.yaml", yaml, strlen(yaml), &w->cfg, &eb), 0);
    arena_init(&w->arena, 0);
    return w;
}

static inline void world_free(struct world *w)
{
    arena_fini(&w->arena);
    config_free(w->cfg);
    free(w->state);
    cluster_free(w->c);
    free(w);
}

static inline struct gang *gang(struct world *w, uint32_t q, uint32_t pods, int64_t gpus,
                                int32_t prio, int64_t submit_s)
{
    struct gang *g = &w->gangs[w->n];
    memset(g, 0, sizeof(*g));
    g->id = w->n++;
    g->sets = w->gang_sets[g->id];
    g->name = "g";
    g->queue = q;
    g->priority = prio;
    g->submit_ms = submit_s * 1000;
    g->n_sets = 1;
    g->sets[0].count = pods;
    g->sets[0].req.v[RES_GPU] = gpus;
    g->sets[0].req.v[RES_PODS] = 1;
    g->topo_required = g->topo_preferred = g->slice_level = -1;
    gang_finalize(g);
    return g;
}

/* Runs gang g on the given nodes (whole GPU masks of `gpus` lowest free bits), started at
 * start_s with its last checkpoint at ckpt_s. */
static inline struct sched_running *run(struct world *w, struct gang *g, const uint32_t *nodes,
                                        int64_t start_s, int64_t ckpt_s)
{
    uint32_t k = w->n_running++;
    int64_t gpus = g->sets[0].req.v[RES_GPU];
    for (uint32_t p = 0; p < g->n_pods; p++) {
        struct node_state *ns = &w->state[nodes[p]];
        uint32_t free_mask = ~ns->gpu_used & 0xFF, mask = 0;
        for (int64_t x = 0; x < gpus; x++) {
            uint32_t bit = free_mask & -free_mask;
            mask |= bit;
            free_mask &= ~bit;
        }
        ns->gpu_used |= mask;
        ns->used.v[RES_GPU] += gpus;
        ns->used.v[RES_PODS]++;
        w->pods[k][p] = (struct sched_assign){.node = nodes[p], .gpu_mask = mask};
    }
    w->usage[g->queue * RES_MAX + RES_GPU] += g->gpus;
    w->running[k] = (struct sched_running){.gang = g,
                                           .pods = w->pods[k],
                                           .start_ms = start_s * 1000,
                                           .last_checkpoint_ms = ckpt_s * 1000};
    return &w->running[k];
}

static inline const struct sched_result *cycle(struct world *w, const char *policy, int64_t now_s)
{
    const struct sched_policy *pol = sched_policy_find(policy);
    for (uint32_t q = 0; q < w->cfg->n_queues; q++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < w->n; i++) {
            bool running = false;
            for (uint32_t k = 0; k < w->n_running; k++)
                running |= w->running[k].gang == &w->gangs[i];
            if (!running && w->gangs[i].queue == q)
                w->pending[q][n++] = &w->gangs[i];
        }
        w->queues[q] = (struct queue){.name = w->cfg->queues[q].name, .weight = 1};
        w->views[q] = (struct sched_queue_view){
            .queue = &w->queues[q], .pending = w->pending[q], .n_pending = n};
    }
    struct sched_snapshot snap = {.now_ms = now_s * 1000,
                                  .cluster = w->c,
                                  .state = w->state,
                                  .queues = w->views,
                                  .n_queues = w->cfg->n_queues,
                                  .policy = pol,
                                  .config = w->cfg,
                                  .usage = w->usage,
                                  .running = w->running,
                                  .n_running = w->n_running,
                                  .reserve_hints = w->hints,
                                  .n_reserve_hints = w->n_hints,
                                  .plan_starts = w->plan_starts,
                                  .bound_pods = w->bound,
                                  .n_bound_pods = w->n_bound};
    arena_reset(&w->arena);
    assert_int_equal(sched_cycle(&snap, &w->arena, &w->res), 0);
    return &w->res;
}

static inline bool evicted(const struct sched_result *r, const struct gang *g)
{
    for (uint32_t e = 0; e < r->n_evictions; e++)
        if (r->evictions[e].victim->gang == g)
            return true;
    return false;
}

#endif
