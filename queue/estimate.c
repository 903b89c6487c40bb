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

/* First index of the sorted values above `x`. */
static uint32_t above(const struct est_ring *r, int64_t x)
{
    uint32_t lo = 0, hi = r->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (r->s[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void push(struct est_ring *r, int64_t v, int64_t sub)
{
    if (r->n == EST_RING) {
        /* the oldest value leaves the sorted copy, with its submit time: equal values keep
         * their arrival order there (each goes after its equals), so it is the first of them */
        uint32_t k = above(r, r->v[r->next] - 1);
        memmove(r->s + k, r->s + k + 1, (r->n - k - 1) * sizeof(*r->s));
        memmove(r->ssub + k, r->ssub + k + 1, (r->n - k - 1) * sizeof(*r->ssub));
        r->n--;
    }
    uint32_t k = above(r, v);
    memmove(r->s + k + 1, r->s + k, (r->n - k) * sizeof(*r->s));
    memmove(r->ssub + k + 1, r->ssub + k, (r->n - k) * sizeof(*r->ssub));
    r->s[k] = v;
    r->ssub[k] = sub;
    r->n++;
    r->v[r->next] = v;
    r->sub[r->next] = sub;
    r->next = (r->next + 1) % EST_RING;
}

uint32_t est_rings_observed(const struct est_model *m, uint32_t queue, int64_t gpus,
                            uint32_t idx[EST_READS])
{
    if (!m->rings || queue >= m->n_queues)
        return 0;
    uint32_t s = shape_of(gpus);
    idx[0] = queue * (EST_SHAPES + 1) + s;
    idx[1] = queue * (EST_SHAPES + 1) + EST_SHAPES;
    idx[2] = m->n_queues * (EST_SHAPES + 1) + s;
    return EST_READS;
}

void est_observe(struct est_model *m, uint32_t queue, int64_t gpus, int64_t runtime_ms,
                 int64_t submit_ms)
{
    uint32_t idx[EST_READS];
    if (runtime_ms < 0 || est_rings_observed(m, queue, gpus, idx) == 0)
        return;
    for (int k = 0; k < EST_READS; k++)
        push(&m->rings[idx[k]], runtime_ms, submit_ms);
}

/* The quantile q (nearest rank) of the values above x; 0 when there are none. */
static int64_t quantile_above(const struct est_ring *r, int64_t x, double q)
{
    uint32_t first = above(r, x), n = r->n - first;
    if (n == 0)
        return 0;
    uint32_t at = (uint32_t)(q * (double)n + 0.999999);
    at = at < 1 ? 1 : at > n ? n : at;
    return r->s[first + at - 1];
}

/* g's candidate rings, most specific first (indices into m->rings): its queue and shape, its
 * queue, its shape in every queue. */
static void candidates(const struct est_model *m, const struct gang *g, uint32_t idx[EST_READS])
{
    uint32_t q = g->queue < m->n_queues ? g->queue : m->n_queues, s = shape_of(g->gpus);
    idx[0] = q * (EST_SHAPES + 1) + s;
    idx[1] = q * (EST_SHAPES + 1) + EST_SHAPES;
    idx[2] = m->n_queues * (EST_SHAPES + 1) + s;
}

/* The most specific ring with at least a few observations. */
static const struct est_ring *best_ring(const struct est_model *m, const struct gang *g)
{
    if (!m->rings)
        return NULL;
    uint32_t idx[EST_READS];
    candidates(m, g, idx);
    for (int k = 0; k < EST_READS; k++)
        if (m->rings[idx[k]].n >= 4)
            return &m->rings[idx[k]];
    for (int k = 0; k < EST_READS; k++)
        if (m->rings[idx[k]].n > 0)
            return &m->rings[idx[k]];
    return NULL;
}

int64_t est_next_run(const struct est_model *m, const uint32_t *idx, uint32_t n, int64_t x)
{
    int64_t next = INT64_MAX;
    for (uint32_t k = 0; m->rings && k < n; k++) {
        const struct est_ring *r = &m->rings[idx[k]];
        uint32_t i = above(r, x);
        if (i < r->n && r->s[i] < next)
            next = r->s[i];
    }
    return next;
}

uint32_t est_rings_read(const struct est_model *m, const struct gang *g, uint32_t idx[EST_READS])
{
    if (!m->rings)
        return 0;
    candidates(m, g, idx);
    for (uint32_t k = 0; k < EST_READS; k++)
        if (m->rings[idx[k]].n >= 4)
            return k + 1; /* best_ring: the first with a few; the ones before it decide that */
    return EST_READS;
}

int64_t est_runtime(const struct est_model *m, const struct gang *g, double q)
{
    if (g->max_runtime_ms > 0)
        return g->max_runtime_ms;
    const struct est_ring *r = best_ring(m, g);
    if (!r)
        return 0;
    int64_t v = quantile_above(r, -1, q);
    return v > 0 ? v : 1;
}

int64_t est_end(const struct est_model *m, const struct gang *g, int64_t start_ms, int64_t now_ms,
                double q)
{
    if (g->max_runtime_ms > 0)
        return start_ms + g->max_runtime_ms;
    const struct est_ring *r = best_ring(m, g);
    if (!r)
        return INT64_MAX;
    int64_t ran = now_ms > start_ms ? now_ms - start_ms : 0;
    int64_t v = quantile_above(r, -1, q);
    if (v > ran)
        return start_ms + v; /* not reached yet */
    v = quantile_above(r, ran, q);
    return v > 0 ? start_ms + v : now_ms + (ran > 0 ? ran : 1);
}

/* The quantile u (nearest rank) of the n values of v[], sorted ascending; n > 0. */
static int64_t quantile_of(const int64_t *v, uint32_t n, double u)
{
    uint32_t at = (uint32_t)(u * (double)n + 0.999999);
    at = at < 1 ? 1 : at > n ? n : at;
    return v[at - 1];
}

/* The typical run time of g that has run ran_ms (-1: not started): the quantile u of the runs
 * of its batch longer than that, else of the learned runs longer than that; 0 = none. */
static int64_t typical(const struct est_model *m, const struct gang *g, int64_t ran_ms, double u)
{
    if (!m->rings)
        return 0;
    if (g->queue < m->n_queues) {
        const struct est_ring *r = ring(m, g->queue, shape_of(g->gpus));
        int64_t batch[EST_RING];
        uint32_t n = 0;
        for (uint32_t k = above(r, ran_ms); k < r->n; k++) { /* in ascending order */
            int64_t d = r->ssub[k] - g->submit_ms;
            if (d <= EST_BATCH_MS && d >= -EST_BATCH_MS)
                batch[n++] = r->s[k];
        }
        if (n >= EST_BATCH_MIN)
            return quantile_of(batch, n, u);
    }
    const struct est_ring *r = best_ring(m, g);
    return r ? quantile_above(r, ran_ms, u) : 0;
}

int64_t est_typical_runtime(const struct est_model *m, const struct gang *g, double u)
{
    if (g->max_runtime_ms > 0)
        return g->max_runtime_ms;
    if (!best_ring(m, g))
        return 0;
    int64_t v = typical(m, g, -1, u);
    return v > 0 ? v : 1;
}

int64_t est_typical_end(const struct est_model *m, const struct gang *g, int64_t start_ms,
                        int64_t now_ms, double u)
{
    if (g->max_runtime_ms > 0)
        return start_ms + g->max_runtime_ms;
    if (!best_ring(m, g))
        return INT64_MAX;
    int64_t ran = now_ms > start_ms ? now_ms - start_ms : 0;
    int64_t v = typical(m, g, ran, u);
    return v > 0 ? start_ms + v : now_ms + (ran > 0 ? ran : 1);
}

double est_draw(uint64_t id)
{
    uint64_t z = (id + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}
