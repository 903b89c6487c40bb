/* sched/core/place_fitc.c: the domain sums of the domain search, kept across the gangs of one
 * cycle (see place_internal.h, place_fitc_*).
 *
 * The search of a multi-pod gang needs, per topology domain, how many pods of each pod set its
 * nodes take now and their free GPUs (place.c, place_domains). Summed from scratch, that costs the
 * nodes that can take a pod, for every gang: a burst of 1,000 gangs of 8 one-GPU pods on 50,000
 * nodes visits 50 million nodes. Consecutive gangs of one signature (pod requests per set, tensor-
 * parallel size, island limit) see the same sums but for the nodes placed on since, so the cache
 * keeps the sums of one signature and brings them up to date from the journal of the nodes linked
 * or unlinked since it last read them (place_base.h pb_journal: every change of a node's free
 * capacity, GPUs or schedulable flag in a cycle relinks it). A gang then costs the nodes changed
 * since the previous gang, times the levels, not the cluster.
 *
 * Invariants: while `valid`, for every node i, useful[i] = some set s has slots[s][i] > 0, where
 * slots[s][i] = place_pod_slots of set s on i if place_eligible, else 0, and key[i] = the free GPUs
 * counted for i (st->key when useful, else 0), each as of the last sync; every level's sums are
 * the sums over the useful nodes of its domains, as place_sum_domains would compute them. Used
 * only for gangs whose sets no pod filter or pod rule restricts (elig_on false) outside trials:
 * their eligibility is the node's schedulable flag alone. The first gang of a signature is summed
 * from scratch; the cache is built for the second in a row, so shapes seen once cost nothing more.
 *
 * Must not touch: the node state (read only); its arrays live in the cycle's arena.
 */
#include <string.h>

#include "sched/core/bits.h"
#include "sched/core/place_internal.h"

struct fitc_level {
    uint32_t n_dom;
    uint64_t *cap; /* [d * GANG_MAX_SETS + s] */
    int64_t *free, *capg;
    uint32_t *cnt;  /* useful nodes of the domain */
    uint32_t *tcnt; /* while tpref: [d * PLACE_PREF_TIERS + t] the slots (every set) of the
                       domain's useful nodes of tier t under the preferences tpref */
};

struct fitc_sig {
    uint32_t n_sets, tp;
    uint32_t limit[GANG_MAX_SETS];
    struct res_vec req[GANG_MAX_SETS];
};

struct place_fitc {
    struct fitc_sig sig;   /* what the sums are for (valid) */
    struct fitc_sig asked; /* the signature of the last gang that asked */
    bool valid, has_asked, broken;
    uint32_t *slots; /* [GANG_MAX_SETS][n] */
    uint8_t *key, *useful;
    uint64_t tpref; /* the tiers (place_base.tier_key) the sums per tier follow, 0 */
    uint8_t *tier;  /* [n]: those tiers, copied when the sums per tier were built */
    uint32_t n_lv;  /* levels + 1: 0 is the whole cluster */
    struct fitc_level lv[TOPO_MAX_LEVELS + 1]; /* lv[l + 1]: level l */
};

/* Entries past n_sets are left as they were: sig_eq reads the first n_sets. */
static void sig_of(const struct place_state *st, const struct gang *g, struct fitc_sig *s)
{
    s->n_sets = g->n_sets;
    s->tp = st->cur_tp;
    for (uint32_t k = 0; k < g->n_sets && k < GANG_MAX_SETS; k++) {
        s->req[k] = g->sets[k].req;
        s->limit[k] = place_set_limit(st, &g->sets[k]);
    }
}

static bool sig_eq(const struct fitc_sig *a, const struct fitc_sig *b)
{
    if (a->n_sets != b->n_sets || a->tp != b->tp)
        return false;
    for (uint32_t k = 0; k < a->n_sets && k < GANG_MAX_SETS; k++)
        if (a->limit[k] != b->limit[k] ||
            memcmp(a->req[k].v, b->req[k].v, sizeof(a->req[k].v)) != 0)
            return false;
    return true;
}

static bool fitc_alloc(struct place_state *st, struct place_fitc *fc)
{
    const struct cluster *c = st->c;
    uint32_t n = c->n_nodes;
    fc->slots = arena_alloc(st->arena, (size_t)GANG_MAX_SETS * n * sizeof(*fc->slots));
    fc->key = arena_alloc(st->arena, n);
    fc->useful = arena_alloc(st->arena, n);
    if (!fc->slots || !fc->key || !fc->useful)
        return false;
    fc->n_lv = c->topo.n_levels + 1;
    for (uint32_t x = 0; x < fc->n_lv; x++) {
        struct fitc_level *lv = &fc->lv[x];
        lv->n_dom = x == 0 ? 1 : c->topo.levels[x - 1].n_domains;
        size_t nd = lv->n_dom ? lv->n_dom : 1;
        lv->cap = arena_alloc(st->arena, nd * GANG_MAX_SETS * sizeof(*lv->cap));
        lv->free = arena_alloc(st->arena, nd * sizeof(*lv->free));
        lv->capg = arena_alloc(st->arena, nd * sizeof(*lv->capg));
        lv->cnt = arena_alloc(st->arena, nd * sizeof(*lv->cnt));
        if (!lv->cap || !lv->free || !lv->capg || !lv->cnt)
            return false;
    }
    uint32_t cap = n > 1024 ? n : 1024; /* past it, the cache is rebuilt (jr_over) */
    st->b->jr = arena_alloc(st->arena, (size_t)cap * sizeof(*st->b->jr));
    if (!st->b->jr)
        return false;
    st->b->jr_cap = cap;
    return true;
}

/* The sums per tier and the copy of the tiers, allocated at the first gang with preferences
 * that asks for them; false on out of memory. */
static bool tiers_alloc(struct place_state *st, struct place_fitc *fc)
{
    if (!fc->tier && !(fc->tier = arena_alloc(st->arena, st->c->n_nodes ? st->c->n_nodes : 1)))
        return false;
    for (uint32_t x = 0; x < fc->n_lv; x++) {
        struct fitc_level *lv = &fc->lv[x];
        if (!lv->tcnt &&
            !(lv->tcnt = arena_alloc(st->arena, (lv->n_dom ? lv->n_dom : 1) * PLACE_PREF_TIERS *
                                                    sizeof(*lv->tcnt))))
            return false;
    }
    return true;
}

/* Adds (sign 1) or takes away (-1) node i's slots to every level's slots per tier, under the
 * tiers the sums per tier follow (fc->tier). */
static void tiers_add(const struct place_state *st, struct place_fitc *fc, uint32_t i, int sign)
{
    uint32_t all = place_fitc_slots(st, i);
    for (uint32_t x = 0; all && x < fc->n_lv; x++) {
        uint32_t d = x == 0 ? 0 : st->c->nodes[i].dom[x - 1];
        fc->lv[x].tcnt[(size_t)d * PLACE_PREF_TIERS + fc->tier[i]] +=
            sign > 0 ? all : (uint32_t)-all;
    }
}

/* Adds (sign 1) or takes away (-1) node i's counted contribution to every level's sums. */
static void contribute(struct place_state *st, struct place_fitc *fc, uint32_t i, int sign)
{
    const struct node *nd = &st->c->nodes[i];
    uint32_t n = st->c->n_nodes;
    for (uint32_t x = 0; x < fc->n_lv; x++) {
        struct fitc_level *lv = &fc->lv[x];
        uint32_t d = x == 0 ? 0 : nd->dom[x - 1];
        lv->cnt[d] += sign > 0 ? 1u : (uint32_t)-1;
        lv->free[d] += sign * (int64_t)fc->key[i];
        lv->capg[d] += sign * (int64_t)nd->n_gpus;
        for (uint32_t s = 0; s < fc->sig.n_sets; s++)
            lv->cap[(size_t)d * GANG_MAX_SETS + s] +=
                (uint64_t)((int64_t)sign * fc->slots[(size_t)s * n + i]);
    }
    if (fc->tpref)
        tiers_add(st, fc, i, sign);
}

/* Node i as it is now, for gang g (whose signature is fc->sig): its slots, and its share of the
 * sums when useful. The caller took its old share away first. */
static void node_now(struct place_state *st, struct place_fitc *fc, const struct gang *g,
                     uint32_t i)
{
    uint32_t n = st->c->n_nodes;
    bool any = false;
    for (uint32_t s = 0; s < g->n_sets; s++) {
        uint32_t k = place_eligible(st, s, i) ? place_pod_slots(st, &g->sets[s], i) : 0;
        fc->slots[(size_t)s * n + i] = k;
        any |= k > 0;
    }
    fc->useful[i] = any;
    fc->key[i] = any ? st->key[i] : 0;
    if (any)
        contribute(st, fc, i, 1);
}

static void fitc_build(struct place_state *st, struct place_fitc *fc, const struct gang *g)
{
    uint32_t n = st->c->n_nodes;
    memset(fc->useful, 0, n);
    memset(fc->key, 0, n);
    for (uint32_t x = 0; x < fc->n_lv; x++) {
        struct fitc_level *lv = &fc->lv[x];
        size_t nd = lv->n_dom;
        memset(lv->cap, 0, nd * GANG_MAX_SETS * sizeof(*lv->cap));
        memset(lv->free, 0, nd * sizeof(*lv->free));
        memset(lv->capg, 0, nd * sizeof(*lv->capg));
        memset(lv->cnt, 0, nd * sizeof(*lv->cnt));
        if (fc->tpref)
            memset(lv->tcnt, 0, nd * PLACE_PREF_TIERS * sizeof(*lv->tcnt));
    }
    int64_t kmin = INT64_MAX;
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (g->sets[s].req.v[RES_GPU] < kmin)
            kmin = g->sets[s].req.v[RES_GPU];
    if (kmin <= 0 || kmin > NODE_MAX_GPUS) { /* GPU-less pods fit anywhere: every node */
        for (uint32_t i = 0; i < n; i++)
            node_now(st, fc, g, i);
    } else { /* only the nodes of the buckets from kmin up can take a pod (place.c) */
        struct place_base *b = st->b;
        pb_cand_fill(b, (uint32_t)kmin);
        for (uint32_t wi = 0; wi < b->words; wi++) {
            for (uint64_t m = b->cand[wi]; m; m &= m - 1)
                node_now(st, fc, g, wi * 64 + bits_ctz64(m));
            b->cand[wi] = 0;
        }
    }
    st->b->jr_n = 0;
    st->b->jr_over = false;
    fc->valid = true;
}

/* Brings the sums up to date with the nodes journaled since the last read. */
static void fitc_sync(struct place_state *st, struct place_fitc *fc, const struct gang *g)
{
    struct place_base *b = st->b;
    for (uint32_t k = 0; k < b->jr_n; k++) {
        uint32_t i = b->jr[k];
        if (fc->useful[i])
            contribute(st, fc, i, -1);
        node_now(st, fc, g, i);
    }
    b->jr_n = 0;
}

bool place_fitc_ready(struct place_state *st, const struct gang *g)
{
    if (st->no_shortcuts || st->only_level >= -1 || g->n_sets == 0 || g->n_sets > GANG_MAX_SETS)
        return false;
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (st->elig_on[s])
            return false; /* filtered per node: not the nodes' state alone */
    if (!st->fitc) {
        st->fitc = arena_calloc(st->arena, 1, sizeof(*st->fitc));
        if (!st->fitc)
            return false;
    }
    struct place_fitc *fc = st->fitc;
    if (fc->broken)
        return false;
    struct fitc_sig sig;
    sig_of(st, g, &sig);
    if (fc->valid && sig_eq(&sig, &fc->sig) && !st->b->jr_over) {
        fitc_sync(st, fc, g);
        fc->asked = sig; /* a gang of another signature in between does not evict it */
        st->fit_cached++;
        return true;
    }
    if (!fc->has_asked || !sig_eq(&sig, &fc->asked)) { /* first of its signature: no cache */
        fc->asked = sig;
        fc->has_asked = true;
        return false;
    }
    if (!fc->slots && !fitc_alloc(st, fc)) {
        fc->broken = true; /* out of memory: every gang sums from scratch */
        st->b->jr = NULL;
        return false;
    }
    fc->sig = sig;
    fitc_build(st, fc, g);
    st->fit_cached++;
    return true;
}

void place_fitc_level(const struct place_state *st, int level, struct place_dsum *ds)
{
    const struct fitc_level *lv = &st->fitc->lv[level + 1];
    *ds = (struct place_dsum){
        .cap = lv->cap, .free = lv->free, .capg = lv->capg, .cnt = lv->cnt, .n_dom = lv->n_dom};
}

uint32_t place_fitc_slots(const struct place_state *st, uint32_t i)
{
    const struct place_fitc *fc = st->fitc;
    uint32_t n = st->c->n_nodes, all = 0;
    for (uint32_t s = 0; fc->useful[i] && s < fc->sig.n_sets; s++)
        all += fc->slots[(size_t)s * n + i];
    return all;
}

const uint32_t *place_fitc_tiers(struct place_state *st, int level)
{
    struct place_fitc *fc = st->fitc;
    /* (re)built for other tiers: a pass over the nodes, then kept by the journal */
    if (fc->tpref != st->b->tier_key) {
        if (!tiers_alloc(st, fc))
            return NULL;
        uint32_t n = st->c->n_nodes;
        for (uint32_t i = 0; i < n; i++)
            fc->tier[i] = (uint8_t)place_tier_of(st, i);
        for (uint32_t x = 0; x < fc->n_lv; x++)
            memset(fc->lv[x].tcnt, 0,
                   (fc->lv[x].n_dom ? fc->lv[x].n_dom : 1) * PLACE_PREF_TIERS * sizeof(uint32_t));
        for (uint32_t i = 0; i < n; i++)
            tiers_add(st, fc, i, 1);
        fc->tpref = st->b->tier_key;
    }
    return fc->lv[level + 1].tcnt;
}
