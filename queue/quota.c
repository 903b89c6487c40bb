/* queue/quota.c: quota tree arithmetic (see quota.h for the formulas). */
#include "queue/quota.h"

#include <string.h>

static size_t at(const struct quota_tree *t, uint32_t n, uint32_t f, uint32_t k)
{
    return ((size_t)n * t->n_flavors + f) * t->n_tracked + k;
}

static const struct config_quota_set *qset(const struct config *cfg, uint32_t n)
{
    return n < cfg->n_cohorts ? &cfg->cohorts[n].q : &cfg->queues[n - cfg->n_cohorts].q;
}

/* a + b, saturating at QUOTA_INF - 1 above and INT64_MIN + 1 below (QUOTA_INF itself stays):
 * every sum of the tree goes through here, so that quotas near the 2^62 limit of one value
 * (docs/config.md) add up to "more than anyone can ask" instead of wrapping negative. Exact
 * whenever the true sum fits, so configs that never come near the limit decide the same. */
static int64_t sat_add(int64_t a, int64_t b)
{
    if (a == QUOTA_INF || b == QUOTA_INF)
        return QUOTA_INF;
    if (b > 0 && a > INT64_MAX - 1 - b)
        return INT64_MAX - 1;
    if (b < 0 && a < INT64_MIN + 1 - b)
        return INT64_MIN + 1;
    return a + b;
}

static int64_t max0(int64_t x)
{
    return x > 0 ? x : 0;
}

/* a * b, saturating at QUOTA_INF - 1 (QUOTA_INF itself stays). */
static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (a == QUOTA_INF)
        return QUOTA_INF;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? INT64_MIN + 1 : QUOTA_INF - 1;
    return r;
}

/* ---- quotaMapping: one projection for requests and usage (see quota.h) ----------------------- */

/* Scale of tracked resource r: the lcm of the denominators of the weights mapped to it. */
static int64_t scale_of(const struct config *cfg, int r)
{
    int64_t s = 1;
    for (uint32_t i = 0; i < cfg->n_qmaps; i++)
        if (cfg->qmaps[i].target == r) {
            int64_t a = s, b = cfg->qmaps[i].den;
            while (b) {
                int64_t t = a % b;
                a = b;
                b = t;
            }
            s = s / a * cfg->qmaps[i].den;
        }
    return s;
}

/* v (indexed by resource id, base units) projected on tracked resource k, in quota units. */
static int64_t project(const struct quota_tree *t, const int64_t *v, uint32_t k)
{
    const struct config *cfg = t->cfg;
    int r = t->tracked[k];
    int64_t own = v[r];
    for (int d = 1; r == RES_GPU && d < res_kind_count(); d++)
        own -= v[res_kind_res(d)]; /* another kind's devices count under that kind's name */
    if (cfg->n_qmaps == 0)
        return own;
    for (uint32_t i = 0; i < cfg->n_qmaps; i++)
        if (cfg->qmaps[i].device_class && r == RES_GPU)
            own -= v[cfg->qmaps[i].source]; /* claimed devices of the class count as its target */
    int64_t q = sat_mul(own, t->scale[k]);  /* linear: negative requests (removals) too */
    for (uint32_t i = 0; i < cfg->n_qmaps; i++) {
        const struct config_qmap *m = &cfg->qmaps[i];
        if (m->target == r && v[m->source] != 0)
            q = sat_add(q, sat_mul(sat_mul(v[m->source], m->num), t->scale[k] / m->den));
    }
    return q;
}

/* Quota units back to base units, rounded up or down. */
static int64_t unscale(const struct quota_tree *t, uint32_t k, int64_t x, bool up)
{
    int64_t s = t->scale[k];
    if (s == 1 || x == QUOTA_INF)
        return x;
    if (x < 0)
        return up ? x / s : -((-x + s - 1) / s);
    return up ? x / s + (x % s != 0) : x / s;
}

int64_t quota_need_of(const struct quota_tree *t, const struct res_vec *need, int r)
{
    for (uint32_t k = 0; k < t->n_tracked; k++)
        if (t->tracked[k] == r)
            return project(t, need->v, k);
    return 0;
}

/* The tracked resources: those some cohort or queue has a quota of, in resource order. */
static void collect_tracked(struct quota_tree *t, const struct config *cfg)
{
    bool seen[RES_MAX] = {false};
    for (uint32_t n = 0; n < t->n_nodes; n++) {
        const struct config_quota_set *qs = qset(cfg, n);
        for (uint32_t f = 0; f < cfg->n_flavors; f++)
            for (int r = 0; r < RES_MAX; r++)
                if (qs->has && qs->has[f * RES_MAX + (uint32_t)r] && !seen[r]) {
                    seen[r] = true;
                    t->scale[t->n_tracked] = scale_of(cfg, r);
                    t->tracked[t->n_tracked++] = r;
                }
    }
    /* Several device kinds: when one has a quota, every kind is tracked, so that a queue with
     * quota for amd.com/gpu only cannot run NVIDIA gangs for free (nominal 0 of those). */
    bool any_kind = false;
    for (int d = 0; d < res_kind_count(); d++)
        any_kind = any_kind || seen[res_kind_res(d)];
    for (int d = 0; any_kind && d < res_kind_count(); d++) {
        int r = res_kind_res(d);
        if (!seen[r]) {
            seen[r] = true;
            t->scale[t->n_tracked] = scale_of(cfg, r);
            t->tracked[t->n_tracked++] = r;
        }
    }
}

static uint32_t root_of(const struct quota_tree *t, uint32_t n)
{
    uint32_t guard = 0;
    while (t->parent[n] >= 0 && guard++ <= t->n_nodes)
        n = (uint32_t)t->parent[n];
    return n;
}

int quota_build(struct quota_tree *t, const struct config *cfg, const int64_t *usage,
                struct arena *a)
{
    memset(t, 0, sizeof(*t));
    t->cfg = cfg;
    t->n_nodes = cfg->n_cohorts + cfg->n_queues;
    t->n_flavors = cfg->n_flavors;
    collect_tracked(t, cfg);
    size_t cells = (size_t)t->n_nodes * t->n_flavors * (t->n_tracked ? t->n_tracked : 1);
    t->parent = arena_alloc(a, (t->n_nodes + 1) * sizeof(*t->parent));
    t->nominal = arena_calloc(a, cells, sizeof(int64_t));
    t->borrow_limit = arena_calloc(a, cells, sizeof(int64_t));
    t->lend_limit = arena_calloc(a, cells, sizeof(int64_t));
    t->subtree = arena_calloc(a, cells, sizeof(int64_t));
    t->local = arena_calloc(a, cells, sizeof(int64_t));
    t->usage = arena_calloc(a, cells, sizeof(int64_t));
    t->borrowed = arena_calloc(a, cells, sizeof(int64_t));
    t->queue_uses_flavor = arena_calloc(a, (size_t)cfg->n_queues * t->n_flavors + 1, 1);
    t->weight = arena_alloc(a, ((size_t)t->n_flavors * t->n_tracked + 1) * sizeof(double));
    uint32_t *order = arena_alloc(a, (t->n_nodes + 1) * sizeof(*order));
    if (!t->parent || !t->nominal || !t->borrow_limit || !t->lend_limit || !t->subtree ||
        !t->local || !t->usage || !t->borrowed || !t->queue_uses_flavor || !t->weight || !order)
        return SCHED_ENOMEM;
    for (uint32_t f = 0; f < t->n_flavors; f++)
        for (uint32_t k = 0; k < t->n_tracked; k++)
            t->weight[f * t->n_tracked + k] = config_res_weight(cfg, f, t->tracked[k]);
    for (uint32_t n = 0; n < t->n_nodes; n++) {
        t->parent[n] =
            n < cfg->n_cohorts ? cfg->cohorts[n].parent : cfg->queues[n - cfg->n_cohorts].cohort;
        const struct config_quota_set *qs = qset(cfg, n);
        for (uint32_t f = 0; f < t->n_flavors; f++)
            for (uint32_t k = 0; k < t->n_tracked; k++) {
                size_t i = at(t, n, f, k);
                t->borrow_limit[i] = QUOTA_INF;
                t->lend_limit[i] = QUOTA_INF;
                const struct config_quota *q = config_quota_get(cfg, qs, f, t->tracked[k]);
                if (q) {
                    t->nominal[i] = sat_mul(q->nominal, t->scale[k]);
                    t->borrow_limit[i] = sat_mul(q->borrowing_limit, t->scale[k]);
                    t->lend_limit[i] = sat_mul(q->lending_limit, t->scale[k]);
                }
            }
    }
    /* Flavors a queue admits on: those its quota names; all of them when it names none. */
    for (uint32_t q = 0; q < cfg->n_queues; q++) {
        const struct config_quota_set *qs = &cfg->queues[q].q;
        bool any = false;
        for (uint32_t f = 0; f < t->n_flavors; f++)
            for (int r = 0; r < RES_MAX && qs->has; r++)
                if (qs->has[f * RES_MAX + (uint32_t)r]) {
                    t->queue_uses_flavor[q * t->n_flavors + f] = 1;
                    any = true;
                }
        if (!any)
            for (uint32_t f = 0; f < t->n_flavors; f++)
                t->queue_uses_flavor[q * t->n_flavors + f] = 1;
    }
    /* Bottom-up: deepest nodes first (queues are below their cohort). Depths are found in
     * one pass (each node's chain is walked only up to the first node already known), then
     * the nodes are bucketed by depth: O(nodes), whatever the tree's shape. */
    uint32_t *dep = arena_calloc(a, t->n_nodes + 1, sizeof(*dep)); /* depth + 1; 0: unknown */
    uint32_t *walk = arena_alloc(a, (t->n_nodes + 1) * sizeof(*walk));
    if (!dep || !walk)
        return SCHED_ENOMEM;
    uint32_t maxd = 0;
    for (uint32_t n = 0; n < t->n_nodes; n++) {
        uint32_t w = 0;
        int32_t p = (int32_t)n;
        while (p >= 0 && dep[p] == 0 && w <= t->n_nodes) { /* the config has no cycle */
            walk[w++] = (uint32_t)p;
            p = t->parent[p];
        }
        uint32_t d = p >= 0 ? dep[p] : 0;
        while (w > 0)
            dep[walk[--w]] = ++d;
        if (dep[n] > maxd)
            maxd = dep[n];
    }
    uint32_t *first = arena_calloc(a, maxd + 2, sizeof(*first)); /* counting sort, deepest first */
    if (!first)
        return SCHED_ENOMEM;
    for (uint32_t n = 0; n < t->n_nodes; n++)
        first[maxd - dep[n] + 1]++;
    for (uint32_t d = 1; d <= maxd + 1; d++)
        first[d] += first[d - 1];
    uint32_t n_order = t->n_nodes;
    for (uint32_t n = 0; n < t->n_nodes; n++)
        order[first[maxd - dep[n]]++] = n;
    for (uint32_t f = 0; f < t->n_flavors; f++)
        for (uint32_t k = 0; k < t->n_tracked; k++) {
            for (uint32_t n = 0; n < t->n_nodes; n++) {
                size_t i = at(t, n, f, k);
                t->subtree[i] = t->nominal[i];
                if (n >= cfg->n_cohorts && usage) {
                    uint32_t q = n - cfg->n_cohorts;
                    t->usage[i] = project(t, usage + ((size_t)q * t->n_flavors + f) * RES_MAX, k);
                }
            }
            for (uint32_t j = 0; j < n_order; j++) { /* children before parents */
                uint32_t n = order[j];
                size_t i = at(t, n, f, k);
                t->local[i] =
                    t->lend_limit[i] == QUOTA_INF ? 0 : max0(t->subtree[i] - t->lend_limit[i]);
                if (t->parent[n] >= 0) {
                    size_t p = at(t, (uint32_t)t->parent[n], f, k);
                    /* local <= subtree (lendingLimit >= 0): the difference cannot wrap */
                    t->subtree[p] = sat_add(t->subtree[p], t->subtree[i] - t->local[i]);
                    t->usage[p] = sat_add(t->usage[p], max0(sat_add(t->usage[i], -t->local[i])));
                }
            }
            for (uint32_t n = cfg->n_cohorts; n < t->n_nodes; n++) {
                size_t i = at(t, n, f, k), r = at(t, root_of(t, n), f, k);
                t->borrowed[r] =
                    sat_add(t->borrowed[r], max0(sat_add(t->usage[i], -t->nominal[i])));
            }
        }
    return 0;
}

int64_t quota_available(const struct quota_tree *t, uint32_t n, uint32_t f, uint32_t k)
{
    size_t i = at(t, n, f, k);
    if (t->parent[n] < 0)
        return sat_add(t->subtree[i], -t->usage[i]);
    int64_t up = quota_available(t, (uint32_t)t->parent[n], f, k);
    if (t->borrow_limit[i] != QUOTA_INF) {
        int64_t cap =
            sat_add(t->subtree[i] - t->local[i] - max0(sat_add(t->usage[i], -t->local[i])),
                    t->borrow_limit[i]);
        if (cap < up)
            up = cap;
    }
    return sat_add(max0(t->local[i] - t->usage[i]), up);
}

int64_t quota_potential(const struct quota_tree *t, uint32_t n, uint32_t f, uint32_t k)
{
    size_t i = at(t, n, f, k);
    if (t->parent[n] < 0)
        return t->subtree[i];
    int64_t p = sat_add(t->local[i], quota_potential(t, (uint32_t)t->parent[n], f, k));
    if (t->borrow_limit[i] != QUOTA_INF) {
        int64_t cap = sat_add(t->subtree[i], t->borrow_limit[i]);
        if (cap < p)
            p = cap;
    }
    return p;
}

enum quota_fit quota_check(const struct quota_tree *t, uint32_t q, uint32_t f,
                           const struct res_vec *need, struct quota_short *why)
{
    uint32_t n = quota_queue_node(t, q);
    enum quota_fit fit = QUOTA_FITS;
    for (uint32_t k = 0; k < t->n_tracked; k++) {
        int r = t->tracked[k];
        int64_t want = project(t, need->v, k);
        if (want <= 0)
            continue;
        size_t i = at(t, n, f, k);
        enum quota_fit this_fit = QUOTA_FITS;
        int64_t avail = 0, pot = 0;
        if (want > (pot = quota_potential(t, n, f, k)))
            this_fit = QUOTA_NEVER;
        else if (want > (avail = quota_available(t, n, f, k)))
            this_fit = QUOTA_WAIT;
        else if (sat_add(t->usage[i], want) > t->nominal[i])
            this_fit = QUOTA_BORROWS;
        if (this_fit > fit) {
            fit = this_fit;
            if (why && this_fit >= QUOTA_WAIT)
                *why = (struct quota_short){
                    .res = r,
                    .flavor = f,
                    .need = unscale(t, k, want, true),
                    .nominal = unscale(t, k, t->nominal[i], false),
                    .used = unscale(t, k, t->usage[i], true),
                    .available = unscale(
                        t, k, this_fit == QUOTA_NEVER ? quota_available(t, n, f, k) : avail, false),
                    .potential = unscale(
                        t, k, this_fit == QUOTA_NEVER ? pot : quota_potential(t, n, f, k), false)};
        }
    }
    return fit;
}

void quota_charge(struct quota_tree *t, uint32_t q, uint32_t f, const struct res_vec *need,
                  int sign)
{
    for (uint32_t k = 0; k < t->n_tracked; k++) {
        int64_t delta = sign * project(t, need->v, k);
        uint32_t n = quota_queue_node(t, q);
        size_t qi = at(t, n, f, k), r = at(t, root_of(t, n), f, k);
        int64_t above = max0(sat_add(t->usage[qi], -t->nominal[qi]));
        t->borrowed[r] = sat_add(
            t->borrowed[r], max0(sat_add(sat_add(t->usage[qi], delta), -t->nominal[qi])) - above);
        while (delta != 0) {
            size_t i = at(t, n, f, k);
            int64_t before = max0(sat_add(t->usage[i], -t->local[i]));
            t->usage[i] = sat_add(t->usage[i], delta);
            int64_t after = max0(sat_add(t->usage[i], -t->local[i]));
            if (t->parent[n] < 0)
                break;
            delta = after - before; /* what the parent sees changes only past the private part */
            n = (uint32_t)t->parent[n];
        }
    }
}

double quota_share(const struct quota_tree *t, uint32_t q, uint32_t f, const struct res_vec *extra)
{
    uint32_t n = quota_queue_node(t, q), root = root_of(t, n);
    double best = 0.0;
    for (uint32_t g = 0; f >= t->n_flavors && g < t->n_flavors; g++)
        if (t->queue_uses_flavor[q * t->n_flavors + g])
            f = g; /* QUOTA_FIRST_FLAVOR: the first flavor it admits on */
    f = f < t->n_flavors ? f : 0;
    for (uint32_t k = 0; k < t->n_tracked; k++) {
        /* each flavor's units weighted by its resourceWeights (all 1: plain sums), the extra
         * request counted on flavor f, where it would be admitted */
        double used = 0, nominal = 0, pool = 0;
        for (uint32_t g = 0; g < t->n_flavors; g++) {
            double w = t->weight[g * t->n_tracked + k];
            int64_t u = t->usage[at(t, n, g, k)];
            if (extra && g == f)
                u = sat_add(u, project(t, extra->v, k));
            used += w * (double)u;
            nominal += w * (double)t->nominal[at(t, n, g, k)];
            pool += w * (double)t->subtree[at(t, root, g, k)];
        }
        double denom = nominal > 0 ? nominal : pool;
        if (denom <= 0)
            continue;
        /* within nominal: the used part of it (0..1); above: 1 plus what it borrows over the
         * root cohort's pool, so that borrowers compare by how much of the pool they take, not
         * by how many times their own (maybe tiny) nominal they use */
        double s = used > nominal && nominal > 0 && pool > 0 ? 1.0 + (used - nominal) / pool
                                                             : used / denom;
        if (s > best)
            best = s;
    }
    return best;
}

bool quota_violated(const struct quota_tree *t, uint32_t q)
{
    uint32_t n = quota_queue_node(t, q);
    for (uint32_t f = 0; f < t->n_flavors; f++)
        for (uint32_t k = 0; k < t->n_tracked; k++) {
            size_t i = at(t, n, f, k);
            int64_t cap =
                t->parent[n] < 0 ? t->nominal[i] : sat_add(t->nominal[i], t->borrow_limit[i]);
            if (t->usage[i] > cap)
                return true;
            uint32_t root = root_of(t, n);
            size_t ri = at(t, root, f, k);
            if (t->usage[ri] > t->subtree[ri])
                return true;
        }
    return false;
}

static int tracked_index(const struct quota_tree *t, int r)
{
    for (uint32_t k = 0; k < t->n_tracked; k++)
        if (t->tracked[k] == r)
            return (int)k;
    return -1;
}

int64_t quota_used(const struct quota_tree *t, uint32_t q, uint32_t f, int r)
{
    int k = tracked_index(t, r);
    return k < 0 ? 0 : t->usage[at(t, quota_queue_node(t, q), f, (uint32_t)k)];
}

int64_t quota_nominal(const struct quota_tree *t, uint32_t q, uint32_t f, int r)
{
    int k = tracked_index(t, r);
    return k < 0 ? 0 : t->nominal[at(t, quota_queue_node(t, q), f, (uint32_t)k)];
}

bool quota_within_nominal(const struct quota_tree *t, uint32_t q, uint32_t f,
                          const struct res_vec *need, bool with_usage)
{
    for (uint32_t k = 0; k < t->n_tracked; k++) {
        int res = t->tracked[k];
        int64_t want = quota_need_of(t, need, res);
        if (want > 0 &&
            (with_usage ? quota_used(t, q, f, res) : 0) + want > quota_nominal(t, q, f, res))
            return false;
    }
    return true;
}

bool quota_waits_for_pool(const struct quota_tree *t, uint32_t q, uint32_t f,
                          const struct res_vec *need)
{
    uint32_t n = quota_queue_node(t, q);
    if (t->parent[n] < 0)
        return false; /* a queue alone: no pool to wait for */
    bool short_of_pool = false;
    for (uint32_t k = 0; k < t->n_tracked; k++) {
        int64_t want = project(t, need->v, k);
        size_t i = at(t, n, f, k);
        /* quota_available without q's own borrowing cap */
        int64_t open = sat_add(max0(t->local[i] - t->usage[i]),
                               quota_available(t, (uint32_t)t->parent[n], f, k));
        if (want <= 0 || want <= open)
            continue;
        if (want > sat_add(open, t->borrowed[at(t, root_of(t, n), f, k)]))
            return false; /* only lenders' own use can end it */
        short_of_pool = true;
    }
    return short_of_pool;
}

bool quota_same_tree(const struct quota_tree *t, uint32_t a, uint32_t b)
{
    return root_of(t, quota_queue_node(t, a)) == root_of(t, quota_queue_node(t, b));
}
