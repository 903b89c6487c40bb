/* sched/core/preempt_dom.c: the domains a preemption plan tries (preempt_int.h): the victims
 * indexed by domain, and the order of the domains when they are more than a plan may try.
 *
 * Owns: the domain index of a plan's candidates and the domains' lower bounds.
 *
 * Must not touch: the working state (it reads the free GPUs of the nodes, changes nothing but
 * the plan's arena).
 */
#include <stdlib.h>
#include <string.h>

#include "sched/core/policy.h"
#include "sched/core/preempt_int.h"

/* Calls fn(ctx, c, d) once for each domain d of the level that candidate c has a pod in (stamp:
 * scratch per domain, NO_SIB on entry, left so). */
static void cand_domains(const struct preempt_ctx *pc, const struct vset *vs, uint32_t c, int level,
                         uint32_t *stamp, void (*fn)(void *, uint32_t, uint32_t), void *ctx)
{
    const struct cand *x = &vs->c[c];
    const struct sched_running *r = &pc->snap->running[x->idx];
    const struct cluster *cl = pc->st->c;
    uint32_t from = x->pod == NO_POD ? 0 : x->pod,
             to = x->pod == NO_POD ? r->gang->n_pods : x->pod + 1;
    for (uint32_t k = from; k < to; k++) {
        if (r->pods[k].node >= cl->n_nodes)
            continue;
        uint32_t d = cl->nodes[r->pods[k].node].dom[level];
        if (stamp[d] != c) {
            stamp[d] = c;
            fn(ctx, c, d);
        }
    }
}

struct dom_index {
    uint32_t *first, *at, *list;
};

static void dom_count(void *ctx, uint32_t c, uint32_t d)
{
    (void)c;
    ((struct dom_index *)ctx)->first[d + 1]++;
}

static void dom_put(void *ctx, uint32_t c, uint32_t d)
{
    struct dom_index *ix = ctx;
    ix->list[ix->at[d]++] = c;
}

int preempt_index_domains(struct preempt_ctx *pc, struct vset *vs, int level)
{
    uint32_t nd = pc->st->c->topo.levels[level].n_domains;
    struct dom_index ix = {arena_calloc(pc->arena, nd + 2, sizeof(uint32_t)),
                           arena_alloc(pc->arena, (nd + 1) * sizeof(uint32_t)), NULL};
    uint32_t *stamp = arena_alloc(pc->arena, (nd + 1) * sizeof(*stamp));
    if (!ix.first || !ix.at || !stamp)
        return SCHED_ENOMEM;
    memset(stamp, 0xff, (nd + 1) * sizeof(*stamp)); /* NO_SIB */
    for (uint32_t c = 0; c < vs->n; c++)
        cand_domains(pc, vs, c, level, stamp, dom_count, &ix);
    for (uint32_t d = 0; d < nd; d++)
        ix.first[d + 1] += ix.first[d];
    if (!(ix.list = arena_alloc(pc->arena, ((size_t)ix.first[nd] + 1) * sizeof(uint32_t))))
        return SCHED_ENOMEM;
    memcpy(ix.at, ix.first, nd * sizeof(uint32_t));
    memset(stamp, 0xff, (nd + 1) * sizeof(*stamp));
    for (uint32_t c = 0; c < vs->n; c++)
        cand_domains(pc, vs, c, level, stamp, dom_put, &ix);
    vs->dom_first = ix.first;
    vs->dom_list = ix.list;
    return 0;
}

/* A victim gang's GPUs in a domain and the lowest cost per GPU at which it frees them: each
 * of its GPUs freed costs at least cost / its GPUs (set_cost in preempt.c: a share of the
 * gang's cost, or its whole cost for any members of a training gang). */
struct dom_item {
    double per_gpu;
    int64_t gpus;
};

static int cmp_item(const void *a, const void *b)
{
    const struct dom_item *x = a, *y = b;
    return (x->per_gpu > y->per_gpu) - (x->per_gpu < y->per_gpu);
}

/* GPUs the pods of r hold in domain d of the level. */
static int64_t gpus_in(const struct cluster *cl, const struct sched_running *r, int level,
                       uint32_t d)
{
    int64_t gpus = 0;
    for (uint32_t s = 0, k = 0; s < r->gang->n_sets; s++)
        for (uint32_t p = 0; p < r->gang->sets[s].count; p++, k++)
            if (r->pods[k].node < cl->n_nodes && cl->nodes[r->pods[k].node].dom[level] == d)
                gpus += r->gang->sets[s].req.v[RES_GPU];
    return gpus;
}

/* A lower bound of what a victim set in domain d costs (*lb), or false when no victim set
 * there can free the GPUs g lacks: those missing beyond the free ones (lack) covered by the
 * victims' GPUs there, least cost per GPU first, the last one in part. stamp: per running
 * gang, the last domain it was counted in; it: scratch for the domain's victims. */
static bool dom_bound(const struct preempt_ctx *pc, const struct vset *vs, int level, uint32_t d,
                      int64_t lack, uint32_t *stamp, struct dom_item *it, double *lb)
{
    *lb = 0;
    if (lack <= 0)
        return true;
    uint32_t m = 0;
    int64_t can = 0;
    for (uint32_t k = vs->dom_first[d]; k < vs->dom_first[d + 1]; k++) {
        const struct cand *x = &vs->c[vs->dom_list[k]];
        const struct sched_running *r = &pc->snap->running[x->idx];
        if (stamp[x->idx] == d || r->gang->gpus <= 0)
            continue;
        stamp[x->idx] = d; /* the gang once, whole: its members free no more than it */
        int64_t gpus = gpus_in(pc->st->c, r, level, d);
        if (gpus > 0)
            it[m++] = (struct dom_item){x->cost / (double)r->gang->gpus, gpus};
        can += gpus;
    }
    if (can < lack)
        return false;
    qsort(it, m, sizeof(*it), cmp_item);
    for (uint32_t j = 0; j < m && lack > 0; j++) {
        int64_t take = it[j].gpus < lack ? it[j].gpus : lack;
        *lb += it[j].per_gpu * (double)take;
        lack -= take;
    }
    return true;
}

struct dom_key {
    double key;
    uint32_t d;
};

static int cmp_key(const void *a, const void *b)
{
    const struct dom_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->d > y->d) - (x->d < y->d);
}

int preempt_dom_order(struct preempt_ctx *pc, const struct gang *g, const struct vset *vs,
                      int level, struct preempt_doms *o)
{
    const struct place_state *st = pc->st;
    const struct cluster *cl = st->c;
    uint32_t nd = level >= 0 ? cl->topo.levels[level].n_domains : 1, with = 0;
    *o = (struct preempt_doms){.n = nd};
    if (level < 0 || !pc->snap->policy->checkpoint_aware)
        return 0;
    for (uint32_t d = 0; d < nd; d++)
        with += vs->dom_first[d + 1] > vs->dom_first[d];
    if ((pc->qt ? nd : with) <= PREEMPT_MAX_DOMAINS)
        return 0; /* every domain that can be tried is: in index order */
    int64_t *free = arena_calloc(pc->arena, nd + 1, sizeof(*free));
    uint32_t *stamp = arena_alloc(pc->arena, (pc->snap->n_running + 1) * sizeof(*stamp));
    struct dom_item *it = arena_alloc(pc->arena, (vs->n + 1) * sizeof(*it));
    struct dom_key *keys = arena_alloc(pc->arena, (nd + 1) * sizeof(*keys));
    o->d = arena_alloc(pc->arena, (nd + 1) * sizeof(*o->d));
    o->bound = arena_alloc(pc->arena, (nd + 1) * sizeof(*o->bound));
    if (!free || !stamp || !it || !keys || !o->d || !o->bound)
        return SCHED_ENOMEM;
    memset(stamp, 0xff, (pc->snap->n_running + 1) * sizeof(*stamp));
    for (uint32_t i = 0; i < cl->n_nodes; i++)
        if (st->free[i].v[RES_GPU] > 0)
            free[cl->nodes[i].dom[level]] += st->free[i].v[RES_GPU];
    /* a GPU share gang may fit on GPUs in use: no lack is certain */
    int64_t need = place_is_share(st, g) ? 0 : g->gpus;
    double bias = pc->snap->policy->order_bias_gpu_s;
    uint32_t n = 0;
    for (uint32_t d = 0; d < nd; d++) {
        double lb;
        if ((vs->dom_first[d + 1] == vs->dom_first[d] && (!pc->qt || free[d] < need)) ||
            !dom_bound(pc, vs, level, d, need - free[d], stamp, it, &lb))
            continue; /* neither victims nor room there, or too few victims */
        keys[n++] = (struct dom_key){lb + bias * (double)d / (double)nd, d};
    }
    qsort(keys, n, sizeof(*keys), cmp_key);
    for (uint32_t i = 0; i < n; i++) {
        o->d[i] = keys[i].d;
        o->bound[i] = keys[i].key;
    }
    o->n = n;
    return 0;
}
