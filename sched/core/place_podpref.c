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
 * the set are visited). A selection that takes TALLY_MIN pods or more is then kept as a tally
 * (the pods per node, brought up to date with the pods placed since), so that the next pod set
 * with a term that selects alike, of that kind or with that spread reads the nodes holding them
 * instead of the pods: the 8,000th replica of a Deployment preferring apart no longer visits the
 * 7,999 before it, nor each late replica the 39,000 bound ones. A tally counts the pods without
 * the releases of a preemption trial, so trials read the pods (as sched_snapshot.no_shortcuts
 * does always); the scores are the same either way.
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
    uint32_t n;                 /* its pods */
    struct podpref_tally *ty;   /* its pods per node once kept, or NULL */
};

/* A selection of the earlier pods kept across the pod sets scored in a cycle: the pods a term
 * selects (t, ns; live: those not being deleted only, as spreads count), or a kind's pods
 * (t NULL), per node. */
#define TALLY_MIN   32          /* pods a selection takes before it is kept */
#define TALLY_BYTES (64u << 20) /* the tallies of one cycle at most (arena bytes) */
struct podpref_tally {
    uint64_t key;
    const struct pod_term *t;
    const char *ns;
    bool live;
    uint32_t upto; /* the bound then placed pods counted: [0, upto) */
    uint32_t *cnt; /* [n] pods per node */
    uint32_t *nz;  /* the nodes with a count, n_nz of them */
    uint32_t n_nz;
};

/* A term's weight (signed) for each pod of a tally, on the domains holding them. */
struct podpref_vec {
    const struct place_keydom *kd;
    const struct podpref_tally *ty;
    int32_t w;
};

struct place_podpref {
    int64_t *raw;  /* [n] a score before normalising */
    double *sum;   /* [n] a spread score before rounding */
    int64_t *acc;  /* [n + 1] per domain of one key; all 0 between uses */
    uint8_t *mark; /* [n + 1] per domain of one key: counted; all 0 between uses */
    uint8_t *ign;  /* [n] node lacks a key of the set's spreads */
    struct podpref_hit *hits;
    uint32_t n_hits, cap_hits;
    struct podpref_vec *vecs;
    uint32_t n_vecs, cap_vecs;
    struct podpref_tally **tallies; /* those of terms (kinds keep theirs) */
    uint32_t n_tallies, cap_tallies;
    uint64_t tally_bytes; /* of every tally, kinds' included */
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

/* Pod k of the bound then placed ones, whether a preemption trial releases it or not. */
static const struct sched_pod *pod_raw(const struct place_state *st, uint32_t k)
{
    return k < st->n_bound ? &st->bound[k] : &st->placed[k - st->n_bound];
}

static void tally_add(struct podpref_tally *ty, uint32_t node, uint32_t n_nodes)
{
    if (node < n_nodes && ty->cnt[node]++ == 0)
        ty->nz[ty->n_nz++] = node;
}

/* A tally of no pod; NULL when the cycle's tallies would pass TALLY_BYTES or out of memory (the
 * pods are then read one by one). */
static struct podpref_tally *tally_new(struct place_state *st, struct place_podpref *pp,
                                       uint64_t key)
{
    uint32_t n = st->c->n_nodes;
    uint64_t bytes = 2ull * (n + 1) * sizeof(uint32_t) + sizeof(struct podpref_tally);
    if (pp->tally_bytes + bytes > TALLY_BYTES)
        return NULL;
    struct podpref_tally *ty = arena_calloc(st->arena, 1, sizeof(*ty));
    if (!ty || !(ty->cnt = arena_calloc(st->arena, n + 1, sizeof(*ty->cnt))) ||
        !(ty->nz = arena_alloc(st->arena, (n + 1) * sizeof(*ty->nz))))
        return NULL;
    pp->tally_bytes += bytes;
    ty->key = key;
    return ty;
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
        kind->n++;
        if (kind->ty)
            tally_add(kind->ty, pod_raw(st, st->scored[r])->node, st->c->n_nodes);
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

/* fn(ctx, p) for each pod of g placed so far (st->pods_own) that term t, carried by a pod of
 * namespace ns, selects. */
static void own_selected(struct place_state *st, const struct gang *g, const struct pod_term *t,
                         const char *ns, void (*fn)(void *ctx, const struct sched_pod *p),
                         void *ctx)
{
    for (uint32_t x = 0; x < st->n_pods_own; x++) {
        struct sched_pod p = {.node = st->pods_own[x].node, .meta = g->sets[st->pods_tset[x]].meta};
        if (podaff_selects(t, ns, p.meta))
            fn(ctx, &p);
    }
}

struct tally_ctx {
    struct podpref_tally *ty;
    uint32_t n_nodes;
};

static void tally_pod(void *ctx, const struct sched_pod *p)
{
    struct tally_ctx *c = ctx;
    if (!(c->ty->live && p->deleting))
        tally_add(c->ty, p->node, c->n_nodes);
}

/* The tally of the earlier pods term t, carried by a pod of namespace ns, selects (live: those
 * not being deleted), brought up to date; NULL when none is kept. */
static const struct podpref_tally *term_tally(struct place_state *st, const struct pod_term *t,
                                              const char *ns, bool live)
{
    struct place_podpref *pp = st->podpref;
    if (pp->n_tallies == 0 || !place_keeps(st))
        return NULL; /* none to find: the term's hash not taken */
    uint64_t key = podaff_selection_hash(t, ns) ^ live;
    uint32_t total = st->n_bound + st->n_placed;
    for (uint32_t k = 0; k < pp->n_tallies; k++) {
        struct podpref_tally *ty = pp->tallies[k];
        if (ty->key != key || ty->live != live || !podaff_same_selection(ty->t, ty->ns, t, ns))
            continue;
        for (; ty->upto < total; ty->upto++) {
            const struct sched_pod *p = pod_raw(st, ty->upto);
            if (!(live && p->deleting) && podaff_selects(ty->t, ty->ns, p->meta))
                tally_add(ty, p->node, st->c->n_nodes);
        }
        return ty;
    }
    return NULL;
}

/* Keeps what term t selects as a tally, when `seen` (the pods it took just now) reaches
 * TALLY_MIN. */
static void term_keep(struct place_state *st, const struct pod_term *t, const char *ns, bool live,
                      uint32_t seen)
{
    struct place_podpref *pp = st->podpref;
    if (seen < TALLY_MIN || !place_keeps(st))
        return;
    struct podpref_tally **v =
        arena_grow(st->arena, pp->tallies, pp->n_tallies, &pp->cap_tallies, sizeof(*v));
    if (v)
        pp->tallies = v;
    struct podpref_tally *ty = v ? tally_new(st, pp, podaff_selection_hash(t, ns) ^ live) : NULL;
    if (!ty)
        return; /* read pod by pod */
    ty->t = t;
    ty->ns = ns;
    ty->live = live;
    ty->upto = st->n_bound + st->n_placed;
    struct tally_ctx c = {ty, st->c->n_nodes};
    place_pods_selected(st, t, ns, tally_pod, &c);
    pp->tallies[pp->n_tallies++] = ty;
}

/* Adds weight w for each pod of tally ty to the domains of kd holding them. */
static void vec(struct place_state *st, const struct place_keydom *kd,
                const struct podpref_tally *ty, int32_t w)
{
    struct place_podpref *pp = st->podpref;
    if (!kd)
        return; /* as hit() */
    struct podpref_vec *v = arena_grow(st->arena, pp->vecs, pp->n_vecs, &pp->cap_vecs, sizeof(*v));
    if (!v) {
        pp->oom = true;
        return;
    }
    pp->vecs = v;
    v[pp->n_vecs++] = (struct podpref_vec){.kd = kd, .ty = ty, .w = w};
}

/* The hits of set m's own preferred terms (sign: +1 affinity, -1 anti-affinity). */
static void own_terms(struct place_state *st, const struct gang *g, const struct pod_meta *m,
                      const struct pod_term *t, uint32_t n, int32_t sign)
{
    struct place_podpref *pp = st->podpref;
    for (uint32_t k = 0; k < n; k++) {
        struct term_ctx c = {st, place_keydom(st, t[k].topology_key), sign * t[k].weight};
        if (!c.kd) {
            pp->oom = true;
            continue;
        }
        const struct podpref_tally *ty = term_tally(st, &t[k], m->ns, false);
        if (ty) {
            vec(st, c.kd, ty, c.w);
        } else {
            uint32_t before = pp->n_hits;
            place_pods_selected(st, &t[k], m->ns, term_hit, &c);
            term_keep(st, &t[k], m->ns, false, pp->n_hits - before);
        }
        own_selected(st, g, &t[k], m->ns, term_hit, &c);
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

/* Keeps the pods of a kind as a tally. */
static void kind_keep(struct place_state *st, struct podpref_kind *kind)
{
    struct place_podpref *pp = st->podpref;
    struct podpref_tally *ty = tally_new(st, pp, kind->key);
    for (uint32_t r = kind->head; ty && r; r = pp->next[r - 1])
        tally_add(ty, pod_raw(st, st->scored[r - 1])->node, st->c->n_nodes);
    kind->ty = ty;
}

/* The hits of the earlier pods' terms, then those of g's pods placed so far, that select m. */
static void others_terms(struct place_state *st, const struct gang *g, const struct pod_meta *m)
{
    struct place_podpref *pp = st->podpref;
    kinds_update(st, pp);
    for (uint32_t k = 0; !pp->lost && k < pp->n_kinds; k++) {
        struct podpref_kind *kind = &pp->kinds[k];
        struct podpref_group grp;
        group_fill(st, kind->rep, m, &grp);
        if (!grp.many && kind->ty && place_keeps(st)) {
            for (uint32_t j = 0; j < grp.n; j++)
                vec(st, grp.t[j].kd, kind->ty, grp.t[j].w);
            continue;
        }
        for (uint32_t r = kind->head; (grp.n || grp.many) && r; r = pp->next[r - 1]) {
            const struct sched_pod *p = place_pods_at(st, st->scored[r - 1]);
            if (p && p->node < st->c->n_nodes)
                pod_terms(st, p, m, &grp);
        }
        if (grp.n && !grp.many && !kind->ty && kind->n >= TALLY_MIN && place_keeps(st))
            kind_keep(st, kind);
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

/* Adds the hits and vectors of key kd to the domains' sums (pp->acc), marking them done. */
static void key_sums(struct place_podpref *pp, const struct place_keydom *kd)
{
    for (uint32_t x = 0; x < pp->n_hits; x++)
        if (pp->hits[x].kd == kd) {
            pp->acc[pp->hits[x].dom] += pp->hits[x].w;
            pp->hits[x].kd = NULL;
        }
    for (uint32_t v = 0; v < pp->n_vecs; v++) {
        const struct podpref_tally *ty = pp->vecs[v].ty;
        for (uint32_t x = 0; pp->vecs[v].kd == kd && x < ty->n_nz; x++) {
            uint32_t i = ty->nz[x];
            if (kd->dom[i] != UINT32_MAX)
                pp->acc[kd->dom[i]] += (int64_t)pp->vecs[v].w * ty->cnt[i];
        }
        if (pp->vecs[v].kd == kd)
            pp->vecs[v].kd = NULL;
    }
}

/* raw[i] = the sum of the hits and vectors in node i's domains, one key at a time. */
static void sum_hits(struct place_state *st)
{
    struct place_podpref *pp = st->podpref;
    uint32_t n = st->c->n_nodes;
    memset(pp->raw, 0, n * sizeof(*pp->raw));
    for (uint32_t h = 0; h < pp->n_hits + pp->n_vecs; h++) {
        const struct place_keydom *kd =
            h < pp->n_hits ? pp->hits[h].kd : pp->vecs[h - pp->n_hits].kd;
        if (!kd)
            continue; /* its key done */
        key_sums(pp, kd);
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
    pp->n_hits = pp->n_vecs = 0;
    own_terms(st, g, m, m->pref_affinity, m->n_pref_affinity, 1);
    own_terms(st, g, m, m->pref_anti, m->n_pref_anti, -1);
    others_terms(st, g, m);
    if (pp->n_hits == 0 && pp->n_vecs == 0)
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
    uint32_t seen; /* pods visited */
};

static void count_pod(void *ctx, const struct sched_pod *p)
{
    struct count_ctx *c = ctx;
    const struct place_podpref *pp = c->st->podpref;
    uint32_t d = c->kd->dom[p->node];
    c->seen++;
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
        struct count_ctx c = {st, g, s, sp, place_keydom(st, sp->sel.topology_key), false, 0};
        if (!c.kd) {
            pp->oom = true;
            return;
        }
        c.host = strcmp(sp->sel.topology_key, "kubernetes.io/hostname") == 0;
        const struct podpref_tally *ty = term_tally(st, &sp->sel, m->ns, true);
        for (uint32_t x = 0; ty && x < ty->n_nz; x++) { /* count_pod's count, node by node */
            uint32_t i = ty->nz[x], d = c.kd->dom[i];
            if (d != UINT32_MAX &&
                (c.host || (!pp->ign[i] && place_pods_spread_policy(st, g, s, sp, i))))
                pp->acc[d] += ty->cnt[i];
        }
        if (!ty) {
            place_pods_selected(st, &sp->sel, m->ns, count_pod, &c);
            term_keep(st, &sp->sel, m->ns, true, c.seen);
        }
        own_selected(st, g, &sp->sel, m->ns, count_pod, &c);
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
