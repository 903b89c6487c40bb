/* queue/estimate.c: run-time estimates (see estimate.h). */
#include "queue/estimate.h"

#include <stdlib.h>
#include <string.h>

static uint32_t shape_of(int64_t gpus)
{
    uint32_t s = 0;
    while (s + 1 < EST_SHAPES && ((int64_t)1 << s) < gpus)
        s++;
    return s;
}

static struct est_ring *ring(const struct est_model *m, uint32_t q, uint32_t s)
{
    return &m->rings[(size_t)q * (EST_SHAPES + 1) + s];
}

int est_init(struct est_model *m, uint32_t n_queues)
{
    m->n_queues = n_queues;
    m->rings = calloc((size_t)(n_queues + 1) * (EST_SHAPES + 1), sizeof(*m->rings));
    return m->rings ? 0 : SCHED_ENOMEM;
}

void est_free(struct est_model *m)
{
    free(m->rings);
    m->rings = NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static const double quantiles[EST_KINDS] = {
    [EST_SAFE] = EST_QUANTILE, [EST_TYPICAL] = EST_TYPICAL_QUANTILE};

/* The quantile of the ring's values above `above` (nearest rank); 0 when there are none. */
static int64_t quantile_above(const struct est_ring *r, int64_t above, enum est_kind kind)
{
    int64_t v[EST_RING];
    uint32_t n = 0;
    for (uint32_t k = 0; k < r->n; k++)
        if (r->v[k] > above)
            v[n++] = r->v[k];
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_i64);
    uint32_t at = (uint32_t)(quantiles[kind] * (double)n + 0.999999);
    return v[at > 0 ? at - 1 : 0];
}

static void push(struct est_ring *r, int64_t v)
{
    r->v[r->next] = v;
    r->next = (r->next + 1) % EST_RING;
    if (r->n < EST_RING)
        r->n++;
    for (int k = 0; k < EST_KINDS; k++)
        r->q[k] = quantile_above(r, -1, (enum est_kind)k);
}

void est_observe(struct est_model *m, uint32_t queue, int64_t gpus, int64_t runtime_ms)
{
    if (!m->rings || queue >= m->n_queues || runtime_ms < 0)
        return;
    uint32_t s = shape_of(gpus);
    push(ring(m, queue, s), runtime_ms);
    push(ring(m, queue, EST_SHAPES), runtime_ms);
    push(ring(m, m->n_queues, s), runtime_ms);
}

/* The most specific ring with at least a few observations. */
static const struct est_ring *best_ring(const struct est_model *m, const struct gang *g)
{
    if (!m->rings)
        return NULL;
    uint32_t q = g->queue < m->n_queues ? g->queue : m->n_queues, s = shape_of(g->gpus);
    const struct est_ring *cand[3] = {ring(m, q, s), ring(m, q, EST_SHAPES),
                                      ring(m, m->n_queues, s)};
    for (int k = 0; k < 3; k++)
        if (cand[k]->n >= 4)
            return cand[k];
    for (int k = 0; k < 3; k++)
        if (cand[k]->n > 0)
            return cand[k];
    return NULL;
}

int64_t est_runtime(const struct est_model *m, const struct gang *g, enum est_kind kind)
{
    if (g->max_runtime_ms > 0)
        return g->max_runtime_ms;
    const struct est_ring *r = best_ring(m, g);
    return r ? (r->q[kind] > 0 ? r->q[kind] : 1) : 0;
}

int64_t est_end(const struct est_model *m, const struct gang *g, int64_t start_ms, int64_t now_ms,
                enum est_kind kind)
{
    if (g->max_runtime_ms > 0)
        return start_ms + g->max_runtime_ms;
    const struct est_ring *r = best_ring(m, g);
    if (!r)
        return INT64_MAX;
    int64_t ran = now_ms > start_ms ? now_ms - start_ms : 0;
    if (start_ms + r->q[kind] > now_ms)
        return start_ms + r->q[kind];
    int64_t v = quantile_above(r, ran, kind);
    return v > 0 ? start_ms + v : now_ms + (ran > 0 ? ran : 1);
}
