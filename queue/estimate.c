/* queue/estimate.c: run-time estimates (see estimate.h). */
#include "queue/estimate.h"

#include <stdlib.h>
#include <string.h>

#include "sched/core/hash.h"

static uint32_t shape_of(int64_t gpus)
{
    uint32_t s = 0;
    while (s + 1 < EST_SHAPES && ((int64_t)1 << s) < gpus)
        s++;
    return s;
}

/* The first ring index of the users' rings. */
static uint32_t user_base(const struct est_model *m)
{
    return (m->n_queues + 1) * (EST_SHAPES + 1);
}

static const struct est_ring no_runs; /* a user's ring before its first run */

/* The ring of index i (a queue's or a user's); a user's not made yet is empty. */
static const struct est_ring *at(const struct est_model *m, uint32_t i)
{
    uint32_t b = user_base(m);
    if (i < b)
        return &m->rings[i];
    uint32_t u = (i - b) / (EST_SHAPES + 1);
    const struct est_ring *r = u < m->n_users ? m->user_rings[i - b] : NULL;
    return r ? r : &no_runs;
}

/* The ring of index i to learn into, made if it is a user's not made yet; NULL: out of memory. */
static struct est_ring *at_made(struct est_model *m, uint32_t i)
{
    uint32_t b = user_base(m);
    if (i < b)
        return &m->rings[i];
    struct est_ring **r = &m->user_rings[i - b]; /* grow_users made the row */
    if (!*r)
        *r = calloc(1, sizeof(**r));
    return *r;
}

/* Makes the rings of users 1..user exist (doubling, so n users cost O(n) copies). */
static int grow_users(struct est_model *m, uint32_t user)
{
    if (user <= m->n_users)
        return 0;
    if (user > EST_USERS_MAX)
        user = EST_USERS_MAX;
    uint32_t n = m->n_users ? m->n_users : 16;
    while (n < user)
        n = n > EST_USERS_MAX / 2 ? EST_USERS_MAX : 2 * n;
    struct est_ring **r = realloc(m->user_rings, (size_t)n * (EST_SHAPES + 1) * sizeof(*r));
    if (!r)
        return SCHED_ENOMEM;
    memset(r + (size_t)m->n_users * (EST_SHAPES + 1), 0,
           (size_t)(n - m->n_users) * (EST_SHAPES + 1) * sizeof(*r));
    m->user_rings = r;
    m->n_users = n;
    return 0;
}

int est_reserve_users(struct est_model *m, uint32_t n)
{
    return grow_users(m, n);
}

int est_init(struct est_model *m, uint32_t n_queues)
{
    m->n_queues = n_queues;
    m->n_users = 0;
    m->user_rings = NULL;
    m->rings = calloc((size_t)(n_queues + 1) * (EST_SHAPES + 1), sizeof(*m->rings));
    return m->rings ? 0 : SCHED_ENOMEM;
}

void est_free(struct est_model *m)
{
    free(m->rings);
    for (size_t k = 0; k < (size_t)m->n_users * (EST_SHAPES + 1); k++)
        free(m->user_rings[k]);
    free(m->user_rings);
    m->rings = NULL;
    m->user_rings = NULL;
    m->n_users = 0;
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

/* The queue's three rings (queue and shape, queue, shape in every queue) at idx[0..3), and
 * first the user's ring of that shape when the user is known: how many. */
static uint32_t rings_of(const struct est_model *m, uint32_t q, uint32_t user, int64_t gpus,
                         uint32_t idx[EST_READS])
{
    uint32_t s = shape_of(gpus), n = 0;
    if (user > 0 && user <= EST_USERS_MAX)
        idx[n++] = user_base(m) + (user - 1) * (EST_SHAPES + 1) + s;
    idx[n++] = q * (EST_SHAPES + 1) + s;
    idx[n++] = q * (EST_SHAPES + 1) + EST_SHAPES;
    idx[n++] = m->n_queues * (EST_SHAPES + 1) + s;
    return n;
}

uint32_t est_rings_observed(const struct est_model *m, uint32_t queue, uint32_t user, int64_t gpus,
                            uint32_t idx[EST_READS])
{
    if (!m->rings || queue >= m->n_queues)
        return 0;
    return rings_of(m, queue, user, gpus, idx);
}

int est_observe(struct est_model *m, uint32_t queue, uint32_t user, int64_t gpus,
                int64_t runtime_ms, int64_t submit_ms)
{
    uint32_t idx[EST_READS];
    int rc = user > 0 && user <= EST_USERS_MAX ? grow_users(m, user) : 0;
    uint32_t n = runtime_ms < 0 ? 0 : est_rings_observed(m, queue, rc ? 0 : user, gpus, idx);
    for (uint32_t k = 0; k < n; k++) {
        struct est_ring *r = at_made(m, idx[k]);
        if (r)
            push(r, runtime_ms, submit_ms);
        else
            rc = SCHED_ENOMEM; /* the user's ring only: the queue's rings are always there */
    }
    return rc;
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

/* g's candidate rings, most specific first (ring indices): its user and shape (when known),
 * its queue and shape, its queue, its shape in every queue. How many. */
static uint32_t candidates(const struct est_model *m, const struct gang *g, uint32_t idx[EST_READS])
{
    uint32_t q = g->queue < m->n_queues ? g->queue : m->n_queues;
    return rings_of(m, q, g->user, g->gpus, idx);
}

/* The most specific ring with at least EST_RING_MIN observations, else with any. */
static const struct est_ring *best_ring(const struct est_model *m, const struct gang *g)
{
    if (!m->rings)
        return NULL;
    uint32_t idx[EST_READS], n = candidates(m, g, idx);
    for (uint32_t k = 0; k < n; k++)
        if (at(m, idx[k])->n >= EST_RING_MIN)
            return at(m, idx[k]);
    for (uint32_t k = 0; k < n; k++)
        if (at(m, idx[k])->n > 0)
            return at(m, idx[k]);
    return NULL;
}

int64_t est_next_run(const struct est_model *m, const uint32_t *idx, uint32_t n, int64_t x)
{
    int64_t next = INT64_MAX;
    for (uint32_t k = 0; m->rings && k < n; k++) {
        const struct est_ring *r = at(m, idx[k]);
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
    uint32_t n = candidates(m, g, idx);
    for (uint32_t k = 0; k < n; k++)
        if (at(m, idx[k])->n >= EST_RING_MIN)
            return k + 1; /* best_ring: the first with a few; the ones before it decide that */
    return n;
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

/* The quantile u of the runs in r longer than ran_ms of g's batch (submitted within
 * EST_BATCH_MS of it), or -1 with fewer than EST_BATCH_MIN of them. */
static int64_t batch_quantile(const struct est_ring *r, const struct gang *g, int64_t ran_ms,
                              double u)
{
    int64_t batch[EST_RING];
    uint32_t n = 0;
    for (uint32_t k = above(r, ran_ms); k < r->n; k++) { /* in ascending order */
        int64_t d = r->ssub[k] - g->submit_ms;
        if (d <= EST_BATCH_MS && d >= -EST_BATCH_MS)
            batch[n++] = r->s[k];
    }
    return n >= EST_BATCH_MIN ? quantile_of(batch, n, u) : -1;
}

/* The typical run time of g that has run ran_ms (-1: not started): the quantile u of the runs
 * of its batch longer than that (its user's, else its queue's), else of the learned runs longer
 * than that; 0 = none. */
static int64_t typical(const struct est_model *m, const struct gang *g, int64_t ran_ms, double u)
{
    if (!m->rings)
        return 0;
    if (g->queue < m->n_queues) {
        uint32_t idx[EST_READS], n = candidates(m, g, idx);
        for (uint32_t k = 0; k + 2 < n; k++) { /* the user's and shape's, the queue's and shape's */
            int64_t v = batch_quantile(at(m, idx[k]), g, ran_ms, u);
            if (v >= 0)
                return v;
        }
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
    uint64_t z = sched_mix64((id + 1) * 0x9E3779B97F4A7C15ull);
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}
