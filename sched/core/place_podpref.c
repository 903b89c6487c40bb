/* sched/core/place_podpref.c: inter-pod preferences in placement: preferred pod affinity and
 * anti-affinity, ScheduleAnyway topology spreads (see place_internal.h, model.h pod_meta).
 *
 * Owns: the score each node gets from them for the gang being placed, which place_pref.c turns
 * into preference tiers with its preferred node affinity; the scratch of that scoring
 * (st->podpref).
 *
 * The scores are kube-scheduler's, per pod set, against the pods bound or being bound and those
 * placed earlier in the cycle (st->bound, st->placed), each normalised to 0..100 as its plugin's
 * NormalizeScore does, then summed (the default profile weighs InterPodAffinity,
 * PodTopologySpread and NodeAffinity alike):
 * - InterPodAffinity: a node gets, for every earlier pod in its domain of a term's topology key,
 *   + the weight of each preferred affinity term of the set that selects that pod, - that of
 *   each preferred anti-affinity term; + the weight of each preferred affinity term of that pod
 *   that selects the set's pod, - each of its preferred anti-affinity terms', + 1
 *   (hardPodAffinityWeight) for each of its required affinity terms'. Normalised as
 *   100 (s - min) / (max - min), min <= 0 <= max; 0 everywhere when max = min.
 * - PodTopologySpread (the set's ScheduleAnyway constraints): a node without every constraint's
 *   key scores 0; another gets the rounded sum over constraints of
 *   count x ln(domains + 2) + maxSkew - 1, count the pods the constraint selects in the set's
 *   namespace in the node's domain (on the nodes its policies count; on the node itself for the
 *   hostname), domains those of the nodes with every key; normalised as
 *   100 (max + min - s) / max, 100 when max = 0.
 * kube-scheduler normalises over the nodes that pass its filters; here over every node (a node
 * the gang may not use changes the scale of a score, not the order it gives).
 *
 * A gang whose pods bear on one another's preferences (place_pods.c pods_soft_self) is placed pod
 * by pod, each scored against the earlier pods and the gang's pods placed before it
 * (st->pods_own), as kube-scheduler schedules them one after another; another gang's pods are
 * scored alike, against the earlier pods.
 *
 * Cost per pod set scored: a few passes over the nodes, the pods its own terms select (through
 * the label index, place_podix.c), and the earlier pods with terms for others by kind (equal
 * podaff_terms_hash: a kind's terms are read once, and only the pods of the kinds that select
 * the set are visited).
 *
 * Must not touch: anything outside place_state; the snapshot's pods are read only.
 */
#include <math.h>
#include <string.h>

#include "sched/core/place_internal.h"
#include "sched/core/podaff.h"

/* A term's weight (signed) that an earlier pod adds to the domain holding it. */
struct podpref_hit {
    const struct place_keydom *kd;
    uint32_t dom;
    int32_t w;
};

/* The terms of a kind of earlier pods (below) that select the pod set being scored. */
#define GROUP_TERMS 8 /* terms kept; a pod with more is read term by term */
struct podpref_group {
    bool many;
    uint32_t n;
    struct {
        const struct place_keydom *kd;
        int32_t w;
    } t[GROUP_TERMS];
};

/* The earlier pods with terms for others (st->scored) by kind: pods of one podaff_terms_hash
 * select and weigh a pod alike, so a kind's terms are read once per pod set scored, and only
 * the pods of the kinds that select it are visited. */
struct podpref_kind {
    uint64_t key;
    const struct pod_meta *rep; /* a pod of the kind */
    uint32_t head;              /* its last pod (index into st->scored) + 1; next links them */
};

struct place_podpref {
    int64_t *raw;  /* [n] a score before normalising */
    double *sum;   /* [n] a spread score before rounding */
    int64_t *acc;  /* [n + 1] per domain of one key; all 0 between uses */
    uint8_t *mark; /* [n + 1] per domain of one key: counted; all 0 between uses */
    uint8_t *ign;  /* [n] node lacks a key of the set's spreads */
    struct podpref_hit *hits;
    uint32_t n_hits, cap_hits;
    struct podpref_kind *kinds;
    uint32_t n_kinds, cap_kinds;
    uint32_t *slot; /* open addressing by key: kind + 1, 0 empty; mask + 1 slots */
    uint32_t mask;
    uint32_t *next;              /* per scored pod: the next of its kind + 1, 0 at the end */
    uint32_t n_sorted, cap_next; /* st->scored[0 .. n_sorted) are in their kinds */
    bool lost;                   /* out of memory: every scored pod read alone */
    bool oom;
};

/* Does an earlier pod's term (affinity, preferred) select pod m? */
static bool selected_by(const struct pod_meta *pm, const struct pod_meta *m)
{
    for (uint32_t t = 0; t < pm->n_affinity; t++)
        if (podaff_selects(&pm->affinity[t], pm->ns, m))
            return true;
    for (uint32_t t = 0; t < pm->n_pref_affinity; t++)
        if (podaff_selects(&pm->pref_affinity[t], pm->ns, m))
            return true;
    for (uint32_t t = 0; t < pm->n_pref_anti; t++)
        if (podaff_selects(&pm->pref_anti[t], pm->ns, m))
            return true;
    return false;
}

/* The meta of pod k of the bound then placed ones (released or not). */
static const struct pod_meta *meta_at(const struct place_state *st, uint32_t k)
{
    return k < st->n_bound ? st->bound[k].meta : st->placed[k - st->n_bound].meta;
}

/* The slot table for n kinds (at most half full); false on out of memory. */
static bool slots_grow(struct place_state *st, struct place_podpref *pp, uint32_t n)
{
    uint32_t size = 64;
    while (size < 2 * n)
        size *= 2;
    if (pp->slot && size <= pp->mask + 1)
        return true;
    uint32_t *slot = arena_calloc(st->arena, size, sizeof(*slot));
    if (!slot)
        return false;
    pp->slot = slot;
    pp->mask = size - 1;
    for (uint32_t k = 0; k < pp->n_kinds; k++) {
        uint32_t x = (uint32_t)pp->kinds[k].key & pp->mask;
        while (slot[x])
            x = (x + 1) & pp->mask;
        slot[x] = k + 1;
    }
    return true;
}

/* Puts the pods noted in st->scored since the last call into their kinds. */
static void kinds_update(struct place_state *st, struct place_podpref *pp)
{
    for (; !pp->lost && pp->n_sorted < st->n_scored; pp->n_sorted++) {
        uint32_t r = pp->n_sorted;
        const struct pod_meta *pm = meta_at(st, st->scored[r]);
        uint64_t key = podaff_terms_hash(pm) | 1;
        uint32_t *v = arena_grow(st->arena, pp->next, r, &pp->cap_next, sizeof(*v));
        if (!v || !slots_grow(st, pp, pp->n_kinds + 1)) {
            pp->lost = true;
            return;
        }
        pp->next = v;
        uint32_t x = (uint32_t)key & pp->mask;
        while (pp->slot[x] && pp->kinds[pp->slot[x] - 1].key != key)
            x = (x + 1) & pp->mask;
        if (!pp->slot[x]) {
            struct podpref_kind *k =
                arena_grow(st->arena, pp->kinds, pp->n_kinds, &pp->cap_kinds, sizeof(*k));
            if (!k) {
                pp->lost = true;
                return;
            }
            pp->kinds = k;
            pp->kinds[pp->n_kinds] = (struct podpref_kind){.key = key, .rep = pm};
            pp->slot[x] = ++pp->n_kinds;
        }
        struct podpref_kind *kind = &pp->kinds[pp->slot[x] - 1];
        pp->next[r] = kind->head;
        kind->head = r + 1;
    }
}

static struct place_podpref *scratch(struct place_state *st);

bool place_podpref_applies(struct place_state *st, const struct gang *g)
{
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (podaff_prefers(g->sets[s].meta))
            return true;
    if (st->n_scored == 0)
        return false;
    struct place_podpref *pp = scratch(st);
    if (pp)
        kinds_update(st, pp);
    bool lost = !pp || pp->lost;
    for (uint32_t k = 0; k < (lost ? st->n_scored : pp->n_kinds); k++) {
        const struct pod_meta *pm = lost ? meta_at(st, st->scored[k]) : pp->kinds[k].rep;
        for (uint32_t s = 0; s < g->n_sets; s++)
            if (g->sets[s].meta && selected_by(pm, g->sets[s].meta))
                return true;
    }
    return false;
}

static struct place_podpref *scratch(struct place_state *st)
{
    uint32_t n = st->c->n_nodes;
    struct place_podpref *pp = st->podpref;
    if (pp)
        return pp;
    pp = arena_calloc(st->arena, 1, sizeof(*pp));
    if (!pp || !(pp->raw = arena_alloc(st->arena, (n + 1) * sizeof(*pp->raw))) ||
        !(pp->sum = arena_alloc(st->arena, (n + 1) * sizeof(*pp->sum))) ||
        !(pp->acc = arena_calloc(st->arena, n + 1, sizeof(*pp->acc))) ||
        !(pp->mark = arena_calloc(st->arena, n + 1, 1)) ||
        !(pp->ign = arena_alloc(st->arena, n + 1)))
        return NULL;
    return st->podpref = pp;
}

static void hit(struct place_state *st, const struct place_keydom *kd, uint32_t node, int32_t w)
{
    struct place_podpref *pp = st->podpref;
    if (!kd || kd->dom[node] == UINT32_MAX)
        return; /* a node without the key is in no domain of it */
    struct podpref_hit *v = arena_grow(st->arena, pp->hits, pp->n_hits, &pp->cap_hits, sizeof(*v));
    if (!v) {
        pp->oom = true;
        return;
    }
    pp->hits = v;
    v[pp->n_hits++] = (struct podpref_hit){.kd = kd, .dom = kd->dom[node], .w = w};
}

struct term_ctx {
    struct place_state *st;
    const struct place_keydom *kd;
    int32_t w;
};

static void term_hit(void *ctx, const struct sched_pod *p)
{
    struct term_ctx *c = ctx;
    hit(c->st, c->kd, p->node, c->w);
}

/* fn(ctx, p) for each earlier pod that term t, carried by a pod of namespace ns, selects, then
 * for each pod of g placed so far (st->pods_own) it selects. */
static void each_selected(struct place_state *st, const struct gang *g, const struct pod_term *t,
                          const char *ns, void (*fn)(void *ctx, const struct sched_pod *p),
                          void *ctx)
{
    place_pods_selected(st, t, ns, fn, ctx);
    for (uint32_t x = 0; x < st->n_pods_own; x++) {
        struct sched_pod p = {.node = st->pods_own[x].node, .meta = g->sets[st->pods_tset[x]].meta};
        if (podaff_selects(t, ns, p.meta))
            fn(ctx, &p);
    }
}

/* The hits of set m's own preferred terms (sign: +1 affinity, -1 anti-affinity). */
static void own_terms(struct place_state *st, const struct gang *g, const struct pod_meta *m,
                      const struct pod_term *t, uint32_t n, int32_t sign)
{
    for (uint32_t k = 0; k < n; k++) {
        struct term_ctx c = {st, place_keydom(st, t[k].topology_key), sign * t[k].weight};
        if (c.kd)
            each_selected(st, g, &t[k], m->ns, term_hit, &c);
        else
            st->podpref->oom = true;
    }
}

/* The terms of pod meta pm that select m (a required affinity term weighs 1) into grp, or
 * grp->many when more than GROUP_TERMS do. */
static void group_fill(struct place_state *st, const struct pod_meta *pm, const struct pod_meta *m,
                       struct podpref_group *grp)
{
    const struct {
        const struct pod_term *t;
        uint32_t n;
        int32_t sign;
    } lists[] = {{pm->affinity, pm->n_affinity, 1},
                 {pm->pref_affinity, pm->n_pref_affinity, 1},
                 {pm->pref_anti, pm->n_pref_anti, -1}};
    grp->n = 0;
    grp->many = false;
    for (uint32_t l = 0; l < 3; l++)
        for (uint32_t k = 0; k < lists[l].n; k++) {
            const struct pod_term *t = &lists[l].t[k];
            if (!podaff_selects(t, pm->ns, m))
                continue;
            if (grp->n == GROUP_TERMS) {
                grp->many = true;
                return;
            }
            grp->t[grp->n].kd = place_keydom(st, t->topology_key);
            grp->t[grp->n++].w = lists[l].sign * (t->weight ? t->weight : 1);
        }
}

/* The hits of the terms of pod p (on its node) that select m, those being grp's unless NULL. */
static void pod_terms(struct place_state *st, const struct sched_pod *p, const struct pod_meta *m,
                      const struct podpref_group *grp)
{
    struct podpref_group own;
    if (!grp || grp->many) {
        group_fill(st, p->meta, m, &own);
        grp = &own;
    }
    for (uint32_t k = 0; k < grp->n; k++)
        hit(st, grp->t[k].kd, p->node, grp->t[k].w);
    if (!grp->many)
        return;
    const struct pod_meta *pm = p->meta; /* more terms than a group keeps: term by term */
    const struct pod_term *lists[3] = {pm->affinity, pm->pref_affinity, pm->pref_anti};
    uint32_t ns[3] = {pm->n_affinity, pm->n_pref_affinity, pm->n_pref_anti}, seen = 0;
    for (uint32_t l = 0; l < 3; l++)
        for (uint32_t k = 0; k < ns[l]; k++)
            if (podaff_selects(&lists[l][k], pm->ns, m) && seen++ >= GROUP_TERMS)
                hit(st, place_keydom(st, lists[l][k].topology_key), p->node,
                    (l == 2 ? -1 : 1) * (lists[l][k].weight ? lists[l][k].weight : 1));
}

/* The hits of the earlier pods' terms, then those of g's pods placed so far, that select m. */
static void others_terms(struct place_state *st, const struct gang *g, const struct pod_meta *m)
{
    struct place_podpref *pp = st->podpref;
    kinds_update(st, pp);
    for (uint32_t k = 0; !pp->lost && k < pp->n_kinds; k++) {
        struct podpref_group grp;
        group_fill(st, pp->kinds[k].rep, m, &grp);
        for (uint32_t r = pp->kinds[k].head; (grp.n || grp.many) && r; r = pp->next[r - 1]) {
            const struct sched_pod *p = place_pods_at(st, st->scored[r - 1]);
            if (p && p->node < st->c->n_nodes)
                pod_terms(st, p, m, &grp);
        }
    }
    for (uint32_t r = 0; pp->lost && r < st->n_scored; r++) {
        const struct sched_pod *p = place_pods_at(st, st->scored[r]);
        if (p && p->node < st->c->n_nodes)
            pod_terms(st, p, m, NULL);
    }
    for (uint32_t x = 0; x < st->n_pods_own; x++) {
        struct sched_pod p = {.node = st->pods_own[x].node, .meta = g->sets[st->pods_tset[x]].meta};
        if (podaff_others(p.meta))
            pod_terms(st, &p, m, NULL);
    }
}

/* raw[i] = the sum of the hits in node i's domains, one key at a time. */
static void sum_hits(struct place_state *st)
{
    struct place_podpref *pp = st->podpref;
    uint32_t n = st->c->n_nodes;
    memset(pp->raw, 0, n * sizeof(*pp->raw));
    for (uint32_t h = 0; h < pp->n_hits; h++) {
        const struct place_keydom *kd = pp->hits[h].kd;
        if (!kd)
            continue; /* its key done */
        for (uint32_t x = h; x < pp->n_hits; x++)
            if (pp->hits[x].kd == kd) {
                pp->acc[pp->hits[x].dom] += pp->hits[x].w;
                pp->hits[x].kd = NULL;
            }
        for (uint32_t i = 0; i < n; i++)
            if (kd->dom[i] != UINT32_MAX)
                pp->raw[i] += pp->acc[kd->dom[i]];
        memset(pp->acc, 0, (kd->n_dom + 1) * sizeof(*pp->acc));
    }
}

/* InterPodAffinity's score of set s of g into w. */
static void affinity_score(struct place_state *st, const struct gang *g, uint32_t s, uint32_t *w)
{
    struct place_podpref *pp = st->podpref;
    const struct pod_meta *m = g->sets[s].meta;
    uint32_t n = st->c->n_nodes;
    pp->n_hits = 0;
    own_terms(st, g, m, m->pref_affinity, m->n_pref_affinity, 1);
    own_terms(st, g, m, m->pref_anti, m->n_pref_anti, -1);
    others_terms(st, g, m);
    if (pp->n_hits == 0)
        return; /* every node 0 */
    sum_hits(st);
    int64_t lo = 0, hi = 0;
    for (uint32_t i = 0; i < n; i++) {
        lo = pp->raw[i] < lo ? pp->raw[i] : lo;
        hi = pp->raw[i] > hi ? pp->raw[i] : hi;
    }
    for (uint32_t i = 0; i < n && hi > lo; i++)
        w[i] += (uint32_t)(100.0 * (double)(pp->raw[i] - lo) / (double)(hi - lo));
}

struct count_ctx {
    struct place_state *st;
    const struct gang *g;
    uint32_t s;
    const struct pod_spread *sp;
    const struct place_keydom *kd;
    bool host;
};

static void count_pod(void *ctx, const struct sched_pod *p)
{
    struct count_ctx *c = ctx;
    const struct place_podpref *pp = c->st->podpref;
    uint32_t d = c->kd->dom[p->node];
    if (p->deleting || d == UINT32_MAX)
        return; /* kube-scheduler counts no terminating pod */
    if (c->host ||
        (!pp->ign[p->node] && place_pods_spread_policy(c->st, c->g, c->s, c->sp, p->node)))
        pp->acc[d]++;
}

/* PodTopologySpread's score of set s of g (its ScheduleAnyway constraints) into w. */
static void spread_score(struct place_state *st, const struct gang *g, uint32_t s, uint32_t *w)
{
    struct place_podpref *pp = st->podpref;
    const struct pod_meta *m = g->sets[s].meta;
    uint32_t n = st->c->n_nodes, kept = 0;
    if (!m->n_soft_spread)
        return;
    memset(pp->ign, 0, n);
    for (uint32_t k = 0; k < m->n_soft_spread; k++) {
        const struct place_keydom *kd = place_keydom(st, m->soft_spread[k].sel.topology_key);
        if (!kd) {
            pp->oom = true;
            return;
        }
        for (uint32_t i = 0; i < n; i++)
            pp->ign[i] |= kd->dom[i] == UINT32_MAX;
    }
    for (uint32_t i = 0; i < n; i++) {
        pp->sum[i] = 0;
        kept += !pp->ign[i];
    }
    for (uint32_t k = 0; k < m->n_soft_spread; k++) {
        const struct pod_spread *sp = &m->soft_spread[k];
        struct count_ctx c = {st, g, s, sp, place_keydom(st, sp->sel.topology_key), false};
        if (!c.kd) {
            pp->oom = true;
            return;
        }
        c.host = strcmp(sp->sel.topology_key, "kubernetes.io/hostname") == 0;
        each_selected(st, g, &sp->sel, m->ns, count_pod, &c);
        uint32_t size = 0; /* the domains of the nodes kept */
        for (uint32_t i = 0; i < n && !c.host; i++)
            if (!pp->ign[i] && !pp->mark[c.kd->dom[i]]) {
                pp->mark[c.kd->dom[i]] = 1;
                size++;
            }
        double tw = log((double)(c.host ? kept : size) + 2.0);
        for (uint32_t i = 0; i < n; i++)
            if (!pp->ign[i])
                pp->sum[i] += (double)pp->acc[c.kd->dom[i]] * tw + sp->max_skew - 1;
        memset(pp->acc, 0, (c.kd->n_dom + 1) * sizeof(*pp->acc));
        memset(pp->mark, 0, c.kd->n_dom + 1);
    }
    int64_t lo = INT64_MAX, hi = 0;
    for (uint32_t i = 0; i < n; i++) {
        pp->raw[i] = pp->ign[i] ? 0 : (int64_t)llround(pp->sum[i]);
        if (!pp->ign[i]) {
            lo = pp->raw[i] < lo ? pp->raw[i] : lo;
            hi = pp->raw[i] > hi ? pp->raw[i] : hi;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (!pp->ign[i])
            w[i] += hi == 0 ? 100 : (uint32_t)(100 * (hi + lo - pp->raw[i]) / hi);
}

bool place_podpref_scores(struct place_state *st, const struct gang *g, uint32_t *w)
{
    struct place_podpref *pp = scratch(st);
    if (!pp)
        return false;
    pp->oom = false;
    for (uint32_t s = 0; s < g->n_sets && !pp->oom; s++) {
        if (!g->sets[s].meta)
            continue;
        affinity_score(st, g, s, w);
        spread_score(st, g, s, w);
    }
    return !pp->oom;
}
