/* sched/core/place_pref.c: preferred node affinity in placement (see place_internal.h).
 *
 * Owns: the preference tiers of the nodes for the gang being placed (place_state.tier, n_tiers,
 * with the base's per-tier bucket counts and weighted-node list) and the slots per tier of the
 * domains a gang's search weighs (place_pref_domains, place_pref_kept), from which
 * place_pref_value gives a domain's value. The kept domain sums' own slots per tier are
 * place_fitc.c's.
 *
 * kube-scheduler's NodeAffinity score gives a node the sum of the weights of the preferred
 * terms it meets; here the sum is over the gang's pod sets, and the distinct sums, largest first,
 * are the tiers 0, 1, ... (at most PLACE_PREF_TIERS; smaller sums share the last tier). Every
 * choice of nodes takes a lower tier first (place.c: place_one, place_order_domain), and among
 * the domains of a level that hold the gang, the search prefers the one where a fill in tier
 * order would give its pods the largest sum of weights (Kueue's TAS, with
 * TASRespectNodeAffinityPreferred, sums node scores up the topology tree and puts them before
 * capacity; here only the slots the gang would take count, so a large domain of a few
 * preferred nodes does not beat a small one the gang fills with preferred nodes).
 *
 * Inter-pod preferences (place_podpref.c) join the same tiers: where they bear on a gang, a
 * node's value is its preferred node affinity normalised to 0..100 plus their scores, as
 * kube-scheduler adds its plugins' normalised scores (weights equal in the default profile).
 *
 * Must not touch: anything outside place_state.
 */
#include <string.h>

#include "sched/core/place_internal.h"

/* The sum of the weights of the preferred node affinity terms that node i meets, over g's sets. */
static uint32_t pref_weight(const struct place_state *st, const struct gang *g, uint32_t i)
{
    uint32_t w = 0;
    for (uint32_t s = 0; s < g->n_sets; s++)
        w += sel_pref_weight(&g->sets[s], &st->c->nodes[i]);
    return w;
}

/* Each node's value into b->tier_w: the sums of weights, or, where inter-pod preferences bear
 * on g, those sums normalised to 0..100 (kube-scheduler's NodeAffinity NormalizeScore) plus the
 * inter-pod scores (place_podpref.c), less the smallest value; false on out of memory. */
static bool node_values(struct place_state *st, const struct gang *g, bool pods)
{
    uint32_t *w = st->b->tier_w, n = st->c->n_nodes, hi = 0, lo = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        w[i] = g->pref ? pref_weight(st, g, i) : 0;
        hi = w[i] > hi ? w[i] : hi;
    }
    if (!pods)
        return true;
    for (uint32_t i = 0; i < n; i++)
        w[i] = hi ? (uint32_t)((uint64_t)w[i] * 100 / hi) : 0;
    if (!place_podpref_scores(st, g, w))
        return false;
    for (uint32_t i = 0; i < n; i++)
        lo = w[i] < lo ? w[i] : lo;
    for (uint32_t i = 0; i < n; i++)
        w[i] -= lo;
    return true;
}

/* Tiers from preferred node affinity depend on the nodes' names and labels only: kept for the
 * cycle's next gangs of the same preferences (gang.pref), so that only a change of preferences
 * costs a pass over the nodes' labels (and one over the sums). Tiers from inter-pod preferences
 * depend on the pods placed before: made for the gang, under a key of their own. */
void place_pref_tiers(struct place_state *st, const struct gang *g)
{
    st->n_tiers = 1;
    if (!st->topology)
        return;
    struct place_base *b = st->b;
    bool pods = place_podpref_applies(st, g);
    if (!g->pref && !pods)
        return;
    if (!pods && g->pref == b->tier_key && !st->no_shortcuts) {
        st->n_tiers = b->tier_n;
        return;
    }
    if (!node_values(st, g, pods)) { /* out of memory: placed as without preferences */
        b->tier_key = 0;
        return;
    }
    uint32_t *top = b->tier_top, nt = 0, n = st->c->n_nodes; /* distinct sums, largest first */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = b->tier_w[i], k = 0;
        while (k < nt && top[k] > w)
            k++;
        if ((k < nt && top[k] == w) || k == PLACE_PREF_TIERS)
            continue;
        if (nt < PLACE_PREF_TIERS)
            nt++;
        memmove(&top[k + 1], &top[k], (nt - 1 - k) * sizeof(top[0]));
        top[k] = w;
    }
    memset(b->tier_cnt, 0, sizeof(b->tier_cnt));
    b->n_tier_nodes = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = b->tier_w[i], k = 0;
        if (w > 0)
            b->tier_nodes[b->n_tier_nodes++] = i;
        while (k + 1 < nt && top[k] > w)
            k++;
        b->tier[i] = (uint8_t)k;
        if (b->key[i] != PB_NO_KEY)
            b->tier_cnt[k][b->key[i]]++;
    }
    st->n_tiers = nt > 1 ? nt : 1;
    b->tier_key = pods ? ++b->tier_seq | PLACE_TIER_OWN : g->pref;
    b->tier_n = st->n_tiers;
}

/* Node i's domain at `level` (0: the cluster). */
static uint32_t dom_of(const struct place_state *st, int level, uint32_t i)
{
    return level >= 0 ? st->c->nodes[i].dom[level] : 0;
}

/* The scratch of the domains' slots per tier, allocated at the first use in the cycle; false on
 * out of memory. */
static bool pref_scratch(struct place_state *st)
{
    uint32_t md = st->max_domains ? st->max_domains : 1;
    if (st->pref_cnt)
        return true;
    st->pref_cnt = arena_calloc(st->arena, (size_t)md * PLACE_PREF_TIERS, sizeof(*st->pref_cnt));
    st->pref_doms = arena_alloc(st->arena, md * sizeof(*st->pref_doms));
    if (st->pref_cnt && st->pref_doms)
        return true;
    st->pref_cnt = NULL;
    return false;
}

/* Adds `slots` of a node of tier t to domain d's slots per tier, listing d at its first. */
static void pref_add(struct place_state *st, uint32_t d, uint32_t t, uint32_t slots)
{
    uint32_t *c = &st->pref_cnt[(size_t)d * PLACE_PREF_TIERS];
    bool fresh = true;
    for (uint32_t k = 0; k < st->n_tiers && fresh; k++)
        fresh = c[k] == 0;
    if (fresh && slots > 0)
        st->pref_doms[st->n_pref_doms++] = d;
    c[t] += slots;
}

bool place_pref_domains(struct place_state *st, const struct gang *g, int level, uint32_t n_useful)
{
    uint32_t n = st->c->n_nodes;
    place_pref_clear(st);
    if (!pref_scratch(st))
        return false; /* out of memory: domains are chosen as without preferences */
    for (uint32_t x = 0; x < n_useful; x++) {
        uint32_t i = st->useful[x], slots = 0;
        for (uint32_t s = 0; s < g->n_sets; s++)
            slots += st->slots[(size_t)s * n + i];
        pref_add(st, dom_of(st, level, i), place_tier_of(st, i), slots);
    }
    st->pref_src = st->pref_cnt;
    return true;
}

bool place_pref_kept(struct place_state *st, int level)
{
    place_pref_clear(st);
    const struct place_base *b = st->b;
    /* few nodes with a weight (a rack, some names): the domains they are in, from the kept
     * slots; else the kept sums per tier, (re)built for these preferences when they are not */
    if ((uint64_t)b->n_tier_nodes * 4 > st->c->n_nodes &&
        (st->pref_src = place_fitc_tiers(st, level)) != NULL)
        return true;
    if (!pref_scratch(st))
        return false;
    for (uint32_t x = 0; x < b->n_tier_nodes; x++) {
        uint32_t i = b->tier_nodes[x];
        pref_add(st, dom_of(st, level, i), place_tier_of(st, i), place_fitc_slots(st, i));
    }
    st->pref_src = st->pref_cnt;
    return true;
}

uint64_t place_pref_value(const struct place_state *st, const struct gang *g, uint32_t d)
{
    const uint32_t *c = &st->pref_src[(size_t)d * PLACE_PREF_TIERS];
    uint64_t v = 0, left = g->n_pods;
    for (uint32_t t = 0; t < st->n_tiers && left > 0; t++) { /* a fill in tier order, greedy */
        uint64_t take = c[t] < left ? c[t] : left;
        v += take * st->b->tier_top[t];
        left -= take;
    }
    return v;
}

void place_pref_clear(struct place_state *st)
{
    for (uint32_t x = 0; x < st->n_pref_doms; x++)
        memset(&st->pref_cnt[(size_t)st->pref_doms[x] * PLACE_PREF_TIERS], 0,
               PLACE_PREF_TIERS * sizeof(*st->pref_cnt));
    st->n_pref_doms = 0;
    st->pref_src = NULL;
}
