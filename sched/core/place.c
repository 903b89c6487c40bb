/* sched/core/place.c: whole-gang placement (see place.h).
 *
 * Data layout: per-node arrays indexed by node id; GPU sets as bitmasks; nodes bucketed by free
 * GPU count so that a one-pod gang finds its best-fit node without scanning the cluster.
 *
 * Topology-aware algorithm for a gang of several pods: for each topology level from the
 * tightest (node, NVLink clique, rack, block, zone), or from the gang's preferred level, to the
 * whole cluster, sum per domain how many pods of each pod set its eligible nodes can take now;
 * among the domains that can take the whole gang pick the one with the best weighted score (the
 * score terms of plugins/, weighted by the gang's profile: for training the least free GPUs
 * left over and the most already in use, so a partly used rack is filled before a free one is
 * broken), then fill its nodes in score order (training: fullest first). The first level with a
 * fitting domain wins, so a gang never spans more than it has to. A required level bounds the
 * search; without one, the search ends at the whole cluster.
 */
#include "sched/core/place.h"

#include <stdlib.h>
#include <string.h>

#include "config/model.h"
#include "sched/core/bits.h"
#include "sched/core/place_internal.h"
#include "sched/core/policy.h"

static uint32_t popc(uint32_t m)
{
    return bits_popc32(m);
}

/* Bucket moves mark the node (restored at the next sync) and keep b->free_gpus. */
static void bucket_unlink(struct place_state *st, uint32_t i)
{
    pb_unlink(st->b, i);
}

static void bucket_link(struct place_state *st, uint32_t i)
{
    pb_link(st->b, i);
}

int place_state_build(struct place_state *st, const struct sched_snapshot *snap,
                      struct arena *arena)
{
    const struct cluster *c = snap->cluster;
    uint32_t n = c->n_nodes;
    memset(st, 0, sizeof(*st));
    struct place_base *b = snap->base;
    if (!b || b->c != c || b->n != n) /* no base, or one of another cluster: build one now */
        b = place_base_in_arena(c, arena);
    if (!b)
        return SCHED_ENOMEM;
    b->jr = NULL; /* the last cycle's cache and its journal were in its arena */
    b->jr_n = 0;
    b->jr_over = false;
    b->tier_key = 0; /* node labels may have changed since the last cycle */
    place_base_sync(b, snap->state);
    st->b = b;
    st->c = c;
    st->arena = arena;
    st->topology = snap->policy->topology;
    st->no_shortcuts = snap->no_shortcuts;
    st->env = b->env;
    st->max_domains = b->max_domains;
    st->free = b->free;
    st->gpu_free = b->gpu_free;
    st->ok = b->ok;
    st->held = b->held;
    st->soft = b->soft;
    st->tier = b->tier;
    st->n_tiers = 1;
    st->held_for = b->held_for;
    st->key = b->key;
    st->elig = b->elig;
    st->slots = b->slots;
    st->order = b->order;
    st->useful = b->useful;
    st->touched = b->touched;
    st->dom_cap = b->dom_cap;
    st->dom_free = b->dom_free;
    st->dom_capg = b->dom_capg;
    st->only_level = -2;
    st->near_level = -2;
    st->state = snap->state;
    st->hold_until_ms = INT64_MAX;
    st->has_soft = b->has_soft;
    st->island_limit = st->topology ? b->max_island : 0;
    st->node_norm = b->node_norm;
    st->static_gpus = b->static_gpus;
    st->max_alloc = b->max_alloc;
    st->ok_gpus = b->ok_gpus;
    memcpy(st->level_is_nodes, b->level_is_nodes, sizeof(st->level_is_nodes));
    /* GPU shares: charged on the nodes the sync restored, before anything else marks a node */
    place_pods_build(st, snap);
    int rc = place_share_build(st, snap);
    if (rc != 0)
        return rc;
    st->for_nodes.sorted = true;
    st->res_nodes.sorted = true;
    st->cap_rel = 64;
    st->rel = arena_alloc(arena, st->cap_rel * sizeof(*st->rel));
    st->cap_log = 64;
    st->log = arena_alloc(arena, st->cap_log * sizeof(*st->log));
    if (!st->rel || !st->log)
        return SCHED_ENOMEM;
    for (uint32_t h = 0; h < snap->n_holds; h++) /* capacity freed for a preemptor */
        for (uint32_t k = 0; k < snap->holds[h].n_nodes; k++) {
            uint32_t i = snap->holds[h].nodes[k];
            if (i >= n || !st->ok[i])
                continue;
            if (!place_nodes_add(st, &st->for_nodes, i))
                return SCHED_ENOMEM;
            pb_hold(b, i, snap->holds[h].gang);
            st->any_held_for = true;
        }
    pb_level_max(b, st->level_max_gpus);
    st->share_node_default = GS_BINPACK; /* HAMi's defaults */
    st->share_gpu_default = GS_SPREAD;
    if (snap->config && snap->config->share_node_policy)
        st->share_node_default = (enum gs_policy)(snap->config->share_node_policy - 1);
    if (snap->config && snap->config->share_gpu_policy)
        st->share_gpu_default = (enum gs_policy)(snap->config->share_gpu_policy - 1);
    return 0;
}

/* ---- scores ------------------------------------------------------------------------------ */

/* A node with `free` free GPUs as a score candidate for a pod of `gpus` GPUs. Normalised by the
 * largest node, so the score depends on the free count alone and nodes can be ranked by bucket. */
static struct score_in node_in(const struct place_state *st, int64_t free, int64_t gpus)
{
    return (struct score_in){.free_gpus = free,
                             .cap_gpus = st->node_norm,
                             .gang_gpus = gpus,
                             .norm_gpus = st->node_norm};
}

/* The preference order of free GPU counts for pods of `gpus` GPUs under the current weights:
 * st->key_order (best first) and st->rank (position of each count). Ties: fewer free first. */
static void rank_nodes(struct place_state *st, int64_t gpus)
{
    if (st->rank_w == st->cur_w && st->rank_gpus == gpus)
        return;
    int64_t sc[NODE_MAX_GPUS + 1];
    for (uint32_t k = 0; k <= NODE_MAX_GPUS; k++) {
        struct score_in in = node_in(st, k, gpus);
        sc[k] = plugin_score(st->cur_w, &in);
        uint32_t j = k; /* insertion sort: 33 keys */
        while (j > 0 && sc[st->key_order[j - 1]] < sc[k]) {
            st->key_order[j] = st->key_order[j - 1];
            j--;
        }
        st->key_order[j] = (uint8_t)k;
    }
    for (uint32_t j = 0; j <= NODE_MAX_GPUS; j++)
        st->rank[st->key_order[j]] = (uint8_t)j;
    st->rank_w = st->cur_w;
    st->rank_gpus = gpus;
}

static void record_top(struct place_state *st, const struct score_in *in)
{
    st->top.n =
        (uint8_t)plugin_score_top(st->cur_w, in, st->top.term, st->top.value, PLACE_TOP_TERMS);
}

/* ---- filters per pod set ---------------------------------------------------------------- */

/* Node i's key in place_order_domain: (tier, untolerated PreferNoSchedule, rank). */
static inline uint32_t order_key(const struct place_state *st, uint32_t i)
{
    return (place_tier_of(st, i) * 2 + (st->soft[i] ? 1u : 0u)) * (NODE_MAX_GPUS + 1) +
           st->rank[popc(st->gpu_free[i])];
}

/* st->soft: the nodes with a PreferNoSchedule taint g's first set does not tolerate (used
 * last). */
static void soft_nodes(struct place_state *st, const struct gang *g)
{
    const struct podset *ps0 = &g->sets[0];
    for (uint32_t i = 0; i < st->c->n_nodes; i++) {
        const struct node *nd = &st->c->nodes[i];
        st->soft[i] = 0;
        for (uint32_t t = 0; t < nd->n_taints && !st->soft[i]; t++)
            st->soft[i] = nd->taints[t].effect == TAINT_PREFER_NO_SCHEDULE &&
                          !taint_tolerated(&nd->taints[t], ps0->tolerations, ps0->n_tolerations);
    }
}

void place_prepare_elig(struct place_state *st, const struct gang *g)
{
    uint32_t n = st->c->n_nodes;
    st->cur_tp = st->topology ? g->tp_size : 0;
    st->cur_w = plugin_gang_weights(g);
    if (st->topology && g->n_sets > 0)
        rank_nodes(st, g->sets[0].req.v[RES_GPU]);
    st->n_pods_own = 0;
    place_pref_tiers(st, g);
    if (place_pods_carry(st, g)) {      /* a replica: the filters and rows of the last gang */
        st->limit_set[0] = &g->sets[0]; /* its limit (the same filters) is kept */
        for (uint32_t s = 1; s < GANG_MAX_SETS; s++)
            st->limit_set[s] = NULL;
        return; /* and its untolerated taints (the same tolerations) */
    }
    if (st->has_soft)
        soft_nodes(st, g);
    for (uint32_t s = 0; s < g->n_sets; s++) {
        const struct podset *ps = &g->sets[s];
        const struct sched_filter *active[16];
        size_t n_active = 0;
        for (size_t f = 0; plugin_filters[f] && n_active < 16; f++)
            if (!plugin_filters[f]->node_only && plugin_filters[f]->active(&st->env, g, ps))
                active[n_active++] = plugin_filters[f];
        st->elig_on[s] = n_active > 0;
        st->limit_set[s] = ps;
        st->limit[s] = st->island_limit;
        if (!n_active)
            continue;
        uint8_t *row = st->elig + (size_t)s * n;
        uint32_t limit = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint8_t pass = 1;
            for (size_t f = 0; f < n_active && pass; f++)
                pass = active[f]->pass(g, ps, &st->c->nodes[i]);
            row[i] = pass;
            if (pass && st->topology && gpu_max_island(&st->c->nodes[i]) > limit)
                limit = gpu_max_island(&st->c->nodes[i]);
        }
        st->limit[s] = limit;
    }
    for (uint32_t s = g->n_sets; s < GANG_MAX_SETS; s++)
        st->limit_set[s] = NULL;
    place_pods_rows(st, g);
}

/* The island limit that applies to pod set `ps` of the gang being placed. */
uint32_t place_set_limit(const struct place_state *st, const struct podset *ps)
{
    for (uint32_t s = 0; s < GANG_MAX_SETS && st->limit_set[s]; s++)
        if (st->limit_set[s] == ps)
            return st->limit[s];
    return st->island_limit;
}

static bool eligible(const struct place_state *st, uint32_t s, uint32_t i)
{
    return st->ok[i] && (!st->elig_on[s] || st->elig[(size_t)s * st->c->n_nodes + i]) &&
           (st->only_level < -1 || st->only_level == -1 ||
            st->c->nodes[i].dom[st->only_level] == st->only_domain);
}

/* ---- nodes held this cycle --------------------------------------------------------------- */

/* Adds node i to list l; false on out of memory. */
bool place_nodes_add(struct place_state *st, struct place_nodes *l, uint32_t i)
{
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 64;
        uint32_t *v = arena_alloc(st->arena, cap * sizeof(*v));
        if (!v)
            return false;
        if (l->n)
            memcpy(v, l->v, l->n * sizeof(*v));
        l->v = v;
        l->cap = cap;
    }
    l->sorted = l->sorted && (l->n == 0 || l->v[l->n - 1] < i);
    l->v[l->n++] = i;
    return true;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The list in ascending order, each node once. */
void place_nodes_sort(struct place_nodes *l)
{
    if (l->sorted)
        return;
    qsort(l->v, l->n, sizeof(*l->v), cmp_u32);
    uint32_t w = 0;
    for (uint32_t k = 0; k < l->n; k++)
        if (w == 0 || l->v[w - 1] != l->v[k])
            l->v[w++] = l->v[k];
    l->n = w;
    l->sorted = true;
}

/* Makes the nodes a preemptor holds usable for it (on) or held again (off). */
static void own_holds(struct place_state *st, const struct gang *g, bool on)
{
    if (!st->any_held_for)
        return; /* no preemptor holds anything this cycle: skip the scan */
    place_nodes_sort(&st->for_nodes);
    for (uint32_t k = 0; k < st->for_nodes.n; k++) {
        uint32_t i = st->for_nodes.v[k];
        if (!st->held_for[i] || st->held_for[i]->id != g->id || st->ok[i] == on)
            continue; /* by id: g may be a per-flavor copy of the gang that holds */
        st->ok[i] = on;
        if (on) {
            bucket_link(st, i);
        } else {
            bucket_unlink(st, i);
        }
    }
}

/* GPUs for one pod of `ps` on node i now, or false. */
bool place_pod_fits(const struct place_state *st, const struct podset *ps, uint32_t i,
                    uint32_t *mask)
{
    if (!res_fits(&ps->req, &st->free[i]))
        return false;
    int64_t gpus = ps->req.v[RES_GPU];
    if (gpus <= 0) {
        *mask = 0;
        return true;
    }
    *mask = plugin_reserve->pick(&st->c->nodes[i], st->gpu_free[i], (uint32_t)gpus, st->cur_tp,
                                 place_set_limit(st, ps));
    return *mask != 0;
}

/* Pods of `ps` that node i can take now (resources and GPUs). */
uint32_t place_pod_slots(const struct place_state *st, const struct podset *ps, uint32_t i)
{
    if (ps->req.v[RES_GPU] > st->key[i]) /* key: free GPUs of an ok node */
        return 0;
    uint64_t best = UINT32_MAX;
    for (int r = 0; r < res_count(); r++) {
        int64_t need = ps->req.v[r];
        if (need <= 0 || r == RES_GPU)
            continue;
        int64_t have = st->free[i].v[r];
        uint64_t k = have <= 0 ? 0 : (uint64_t)(have / need);
        if (k < best)
            best = k;
    }
    int64_t gpus = ps->req.v[RES_GPU];
    if (gpus > 0) {
        const struct node *nd = &st->c->nodes[i];
        uint32_t k = plugin_reserve->slots(nd, st->gpu_free[i], (uint32_t)gpus, st->cur_tp,
                                           place_set_limit(st, ps));
        if (k < best)
            best = k;
    }
    return (uint32_t)best;
}

/* ---- tentative assignment with undo ------------------------------------------------------ */

static bool apply(struct place_state *st, uint32_t i, uint32_t mask, const struct res_vec *req)
{
    if (st->n_log == st->cap_log) {
        uint32_t cap = st->cap_log * 2;
        struct place_undo *log = arena_alloc(st->arena, cap * sizeof(*log));
        if (!log)
            return false;
        memcpy(log, st->log, st->n_log * sizeof(*log));
        st->log = log;
        st->cap_log = cap;
    }
    st->log[st->n_log++] = (struct place_undo){.node = i, .gpu_mask = mask, .req = req};
    pb_mark(st->b, i);
    res_sub(&st->free[i], req);
    st->gpu_free[i] &= ~mask;
    if (st->ok[i]) {
        bucket_unlink(st, i);
        bucket_link(st, i);
    }
    return true;
}

void place_rollback(struct place_state *st)
{
    place_share_rollback(st);
    while (st->n_log > 0) {
        const struct place_undo *u = &st->log[--st->n_log];
        res_add(&st->free[u->node], u->req);
        st->gpu_free[u->node] |= u->gpu_mask;
        if (st->ok[u->node]) {
            bucket_unlink(st, u->node);
            bucket_link(st, u->node);
        }
    }
}

bool place_eligible(const struct place_state *st, uint32_t s, uint32_t i)
{
    return eligible(st, s, i);
}

bool place_apply(struct place_state *st, uint32_t i, uint32_t mask, const struct res_vec *req)
{
    return apply(st, i, mask, req);
}

/* ---- algorithms -------------------------------------------------------------------------- */

/* The order the fills take a gang's pod sets in: most GPUs per pod first (first-fit
 * decreasing: the large pods take whole nodes and islands while there is a choice, the small
 * ones fill what they leave), equal sets in set order; first[s] (may be NULL): the index in out
 * of set s's first pod (out stays in set order). Returns n_sets. */
uint32_t place_set_order(const struct gang *g, uint8_t ord[GANG_MAX_SETS],
                         uint32_t first[GANG_MAX_SETS])
{
    uint32_t n = g->n_sets < GANG_MAX_SETS ? g->n_sets : GANG_MAX_SETS, k = 0;
    for (uint32_t s = 0; s < n; s++) {
        if (first)
            first[s] = k;
        k += g->sets[s].count;
        uint32_t x = s; /* insertion, stable */
        for (; x > 0 && g->sets[ord[x - 1]].req.v[RES_GPU] < g->sets[s].req.v[RES_GPU]; x--)
            ord[x] = ord[x - 1];
        ord[x] = (uint8_t)s;
    }
    return n;
}

/* Baseline: every pod on the lowest-index node where it fits. */
static bool place_first_fit(struct place_state *st, const struct gang *g, struct sched_assign *out)
{
    uint8_t ord[GANG_MAX_SETS];
    uint32_t first[GANG_MAX_SETS], n_sets = place_set_order(g, ord, first);
    for (uint32_t x = 0; x < n_sets; x++) {
        uint32_t s = ord[x], k = first[s];
        const struct podset *ps = &g->sets[s];
        uint32_t i = 0;
        for (uint32_t p = 0; p < ps->count; p++) {
            uint32_t mask = 0;
            while (i < st->c->n_nodes && !(eligible(st, s, i) && place_pod_fits(st, ps, i, &mask)))
                i++;
            if (i == st->c->n_nodes || !apply(st, i, mask, &ps->req))
                return false;
            out[k++] = (struct sched_assign){.node = i, .gpu_mask = mask};
        }
    }
    return true;
}

/* The best node found so far for a one-pod gang: the first that fits in the scan's order
 * within the most preferred tier seen (tier n_tiers: none yet). */
struct one_best {
    uint32_t tier, node, mask;
    int64_t key; /* its bucket (free GPUs), for the top score terms */
};

/* Takes node i (bucket k) when it is eligible, fits and is of a more preferred tier than the
 * best so far; true when taken. */
static bool one_consider(struct place_state *st, const struct podset *ps, uint32_t i, int64_t k,
                         struct one_best *b)
{
    uint32_t t = place_tier_of(st, i), mask = 0;
    if (t >= b->tier || !eligible(st, 0, i) || !place_pod_fits(st, ps, i, &mask))
        return false;
    *b = (struct one_best){.tier = t, .node = i, .mask = mask, .key = k};
    return true;
}

/* Whether replica g's search may start where the last replica's took its node (st->one_at):
 * its rows were carried and only refuse more (no spread allowed a node again), no tiers, the
 * same domain bounds, the last replica's node placed (committed) and now refused, and no node
 * but it changed bucket since. */
static bool one_resumes(const struct place_state *st, const struct gang *g)
{
    const struct place_one_at *a = &st->one_at;
    return a->valid && st->rows_carried && !st->rows_reopened && a->shape == g->shape &&
           st->n_tiers == 1 && a->moves == st->b->moves && a->n_placed + 1 == st->n_placed &&
           a->only_level == st->only_level && a->only_domain == st->only_domain &&
           !eligible(st, 0, a->node);
}

/* One pod: the node with the fewest free GPUs that fits (buckets), GPU-less pods prefer nodes
 * without GPUs so that accelerators stay free; the most preferred tier first. With tiers, a
 * bucket is passed over when it holds no node of the tier (b->tier_cnt) and left once all of
 * them were seen, so a tier costs about the nodes of its buckets, not a scan of every node.
 * A replica's search goes on where the last one's took its node (one_resumes), so a run of
 * replicas passes each node once, not once per replica. */
static bool place_one(struct place_state *st, const struct gang *g, struct sched_assign *out)
{
    const struct podset *ps = &g->sets[0];
    int64_t gpus = ps->req.v[RES_GPU];
    struct one_best b = {.tier = st->n_tiers};
    bool tiers = st->n_tiers > 1, done = false, resume = gpus > 0 && one_resumes(st, g);
    struct place_one_at at = resume ? st->one_at : (struct place_one_at){0};
    st->one_at.valid = false;
    /* Buckets in the score order of their free GPU count (training: fewest free first;
     * inference: most first). Pass 0 skips PreferNoSchedule, pass 1 takes only those. */
    for (uint32_t t = 0; t < st->n_tiers && gpus > 0 && !done; t++)
        for (int pass = resume ? at.pass : st->has_soft ? 0 : 1; pass < 2 && !done; pass++)
            for (uint32_t step = resume ? at.step : 0; step <= NODE_MAX_GPUS && !done; step++) {
                int64_t k = st->key_order[step];
                uint32_t left = tiers ? st->b->tier_cnt[t][k] : UINT32_MAX;
                if (k < gpus || left == 0)
                    continue;
                struct pb_iter it;
                if (resume)
                    it = at.it; /* the last replica's place in this bucket */
                else
                    pb_iter_start(st->b, (uint32_t)k, &it);
                resume = false;
                for (int32_t i;
                     !done && left > 0 && (i = pb_iter_next(st->b, (uint32_t)k, &it)) >= 0;) {
                    if (tiers && st->tier[i] != t)
                        continue;
                    left -= tiers;
                    if (pass == 1 ? !st->has_soft || st->soft[i] : !st->soft[i])
                        done = one_consider(st, ps, (uint32_t)i, k, &b);
                    if (done)
                        at = (struct place_one_at){.pass = pass, .step = step, .it = it};
                }
            }
    if (gpus > 0) {
        if (b.tier == st->n_tiers)
            return false;
        out[0] = (struct sched_assign){.node = b.node, .gpu_mask = b.mask};
        struct score_in in = node_in(st, b.key, gpus);
        record_top(st, &in);
        if (!apply(st, b.node, b.mask, &ps->req))
            return false;
        if (st->rows_shape == g->shape && st->n_tiers == 1) { /* the next replica's start */
            at.valid = true;
            at.node = b.node;
            at.n_placed = st->n_placed;
            at.shape = g->shape;
            at.moves = st->b->moves;
            at.only_level = st->only_level;
            at.only_domain = st->only_domain;
            st->one_at = at;
        }
        return true;
    }
    /* nodes without GPUs and no untolerated PreferNoSchedule taint, then those with one, then
     * every node with GPUs */
    for (int pass = 0; pass < 3 && !done; pass++)
        for (uint32_t i = 0; i < st->c->n_nodes && !done; i++)
            if (pass == 2 ? st->c->nodes[i].n_gpus > 0
                          : st->c->nodes[i].n_gpus == 0 && (pass == 1) == (st->soft[i] != 0))
                done = one_consider(st, ps, i, 0, &b) && b.tier == 0; /* none better */
    if (b.tier == st->n_tiers)
        return false;
    out[0] = (struct sched_assign){.node = b.node, .gpu_mask = 0};
    return apply(st, b.node, 0, &ps->req);
}

/* Nodes of a domain (or the cluster when level < 0) by preference tier (the nodes the gang
 * prefers most first), then in score order (training: fullest first) with untolerated
 * PreferNoSchedule nodes after all others of their tier: counting sort on (tier, taint, rank of
 * the free GPU count), ties by node index. Returns the count written to st->order. */
uint32_t place_order_domain(struct place_state *st, int level, uint32_t d)
{
    const struct topo *t = &st->c->topo;
    const uint32_t *idx = NULL;
    uint32_t n;
    if (level >= 0) {
        const struct topo_level *lv = &t->levels[level];
        idx = lv->node_index + lv->domain_first[d];
        n = lv->domain_first[d + 1] - lv->domain_first[d];
    } else {
        n = st->c->n_nodes;
    }
    /* key: tier, then PreferNoSchedule-tainted nodes after the others, then the rank of the
     * free GPU count */
    enum { RANKS = NODE_MAX_GPUS + 1, MAX_KEYS = PLACE_PREF_TIERS * 2 * RANKS };
    uint32_t keys = st->n_tiers * 2 * RANKS, count[MAX_KEYS + 1];
    memset(count, 0, (keys + 1) * sizeof(count[0]));
    for (uint32_t j = 0; j < n; j++)
        count[order_key(st, idx ? idx[j] : j) + 1]++;
    for (uint32_t k = 1; k <= keys; k++)
        count[k] += count[k - 1];
    for (uint32_t j = 0; j < n; j++) {
        uint32_t i = idx ? idx[j] : j;
        st->order[count[order_key(st, i)]++] = i;
    }
    return n;
}

/* Spread (inference): pods on as many distinct nodes as possible, one pod per node per round, in
 * the score order of place_order_domain (inference: emptiest first; PreferNoSchedule nodes last).
 */
static bool fill_spread(struct place_state *st, const struct gang *g, uint32_t n_order,
                        struct sched_assign *out)
{
    uint8_t ord[GANG_MAX_SETS];
    uint32_t first[GANG_MAX_SETS], n_sets = place_set_order(g, ord, first);
    for (uint32_t x = 0; x < n_sets; x++) {
        uint32_t s = ord[x], k = first[s];
        const struct podset *ps = &g->sets[s];
        uint32_t j = 0, misses = 0;
        for (uint32_t p = 0; p < ps->count;) {
            if (misses >= n_order)
                return false; /* a whole round without a fit */
            uint32_t i = st->order[j], mask = 0;
            j = (j + 1) % (n_order ? n_order : 1);
            if (!(eligible(st, s, i) && place_pod_fits(st, ps, i, &mask))) {
                misses++;
                continue;
            }
            if (!apply(st, i, mask, &ps->req))
                return false;
            out[k++] = (struct sched_assign){.node = i, .gpu_mask = mask};
            p++;
            misses = 0;
        }
    }
    return true;
}

static bool fill_ordered(struct place_state *st, const struct gang *g, uint32_t n_order,
                         struct sched_assign *out)
{
    uint8_t ord[GANG_MAX_SETS];
    uint32_t first[GANG_MAX_SETS], n_sets = place_set_order(g, ord, first);
    for (uint32_t x = 0; x < n_sets; x++) {
        uint32_t s = ord[x], k = first[s];
        const struct podset *ps = &g->sets[s];
        uint32_t j = 0;
        for (uint32_t p = 0; p < ps->count; p++) {
            uint32_t mask = 0;
            while (j < n_order &&
                   !(eligible(st, s, st->order[j]) && place_pod_fits(st, ps, st->order[j], &mask)))
                j++;
            if (j == n_order || !apply(st, st->order[j], mask, &ps->req))
                return false;
            out[k++] = (struct sched_assign){.node = st->order[j], .gpu_mask = mask};
        }
    }
    return true;
}

static bool in_domain(const struct place_state *st, uint32_t i, int level, uint32_t d)
{
    return level < 0 || st->c->nodes[i].dom[level] == d;
}

/* Slices: pods of the (single) pod set in groups of g->slice_size, each group inside one domain
 * of g->slice_level, all inside domain d of `level`. Each slice takes the slice domain with the
 * best score that holds it (training: the least free GPUs left over), its nodes in score order. */
static bool fill_slices(struct place_state *st, const struct gang *g, int level, uint32_t d,
                        struct sched_assign *out)
{
    const struct cluster *c = st->c;
    const struct podset *ps = &g->sets[0];
    int sl = g->slice_level;
    uint32_t nd = c->topo.levels[sl].n_domains;
    uint32_t k = 0;
    for (uint32_t first = 0; first < ps->count; first += g->slice_size) {
        uint32_t want = ps->count - first < g->slice_size ? ps->count - first : g->slice_size;
        memset(st->dom_cap, 0, (size_t)nd * sizeof(*st->dom_cap));
        memset(st->dom_free, 0, (size_t)nd * sizeof(*st->dom_free));
        memset(st->dom_capg, 0, (size_t)nd * sizeof(*st->dom_capg));
        for (uint32_t i = 0; i < c->n_nodes; i++) {
            if (!eligible(st, 0, i) || !in_domain(st, i, level, d))
                continue;
            st->dom_cap[c->nodes[i].dom[sl]] += place_pod_slots(st, ps, i);
            st->dom_free[c->nodes[i].dom[sl]] += st->key[i];
            st->dom_capg[c->nodes[i].dom[sl]] += c->nodes[i].n_gpus;
        }
        int64_t best = -1, best_score = 0;
        int64_t norm = st->level_max_gpus[sl] > 0 ? st->level_max_gpus[sl] : 1;
        for (uint32_t x = 0; x < nd; x++) {
            if (st->dom_cap[x] < want)
                continue;
            struct score_in in = {.free_gpus = st->dom_free[x],
                                  .cap_gpus = st->dom_capg[x],
                                  .gang_gpus = (int64_t)want * ps->req.v[RES_GPU],
                                  .norm_gpus = norm};
            int64_t sc = plugin_score(st->cur_w, &in);
            if (best < 0 || sc > best_score) {
                best = x;
                best_score = sc;
            }
        }
        if (best < 0)
            return false;
        uint32_t n_order = place_order_domain(st, sl, (uint32_t)best);
        uint32_t j = 0;
        for (uint32_t p = 0; p < want; p++) {
            uint32_t mask = 0;
            while (j < n_order &&
                   !(in_domain(st, st->order[j], level, d) && eligible(st, 0, st->order[j]) &&
                     place_pod_fits(st, ps, st->order[j], &mask)))
                j++;
            if (j == n_order || !apply(st, st->order[j], mask, &ps->req))
                return false;
            out[k++] = (struct sched_assign){.node = st->order[j], .gpu_mask = mask};
        }
    }
    return true;
}

/* Per-domain capacity at `level` (-1: the whole cluster) over the useful nodes: fills dom_cap,
 * dom_free (free GPUs of useful nodes) and dom_capg (their GPUs) for the touched domains, listed
 * in st->touched.
 * Returns the number of touched domains. */
uint32_t place_sum_domains(struct place_state *st, const struct gang *g, int level,
                           uint32_t n_useful)
{
    const struct cluster *c = st->c;
    uint32_t nt = 0;
    for (uint32_t u = 0; u < n_useful; u++) {
        uint32_t i = st->useful[u];
        uint32_t d = level >= 0 ? c->nodes[i].dom[level] : 0;
        if (st->dom_free[d] < 0) { /* first visit this pass */
            st->dom_free[d] = 0;
            st->dom_capg[d] = 0;
            memset(&st->dom_cap[(size_t)d * GANG_MAX_SETS], 0, /* the sets read: g's */
                   g->n_sets * sizeof(*st->dom_cap));
            st->touched[nt++] = d;
        }
        st->dom_free[d] += st->key[i];
        st->dom_capg[d] += c->nodes[i].n_gpus;
        for (uint32_t s = 0; s < g->n_sets; s++)
            st->dom_cap[(size_t)d * GANG_MAX_SETS + s] += st->slots[(size_t)s * c->n_nodes + i];
    }
    return nt;
}

/* Marks the touched domains unvisited again (dom_free = -1), for the next pass. */
void place_clear_domains(struct place_state *st, uint32_t nt)
{
    for (uint32_t k = 0; k < nt; k++)
        st->dom_free[st->touched[k]] = -1;
}

/* Computes slots of every eligible node for g into st->slots (using `slots_fn`) and lists the
 * nodes with at least one slot in st->useful; returns their count. */
uint32_t place_collect_useful(struct place_state *st, const struct gang *g,
                              uint32_t (*slots_fn)(const struct place_state *,
                                                   const struct podset *, uint32_t))
{
    const struct cluster *c = st->c;
    uint32_t n_useful = 0;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        bool any = false;
        for (uint32_t s = 0; s < g->n_sets; s++) {
            uint32_t k = eligible(st, s, i) ? slots_fn(st, &g->sets[s], i) : 0;
            st->slots[(size_t)s * c->n_nodes + i] = k;
            any |= k > 0;
        }
        if (any)
            st->useful[n_useful++] = i;
    }
    return n_useful;
}

/* place_collect_useful(st, g, place_pod_slots) without a visit of every node: pod_slots is 0 on a
 * node that is not linked (not ok) or has fewer free GPUs than the smallest GPU request of g's pod
 * sets, so only the buckets from that count up are visited, in ascending node order. The slots of
 * the nodes not visited are left as they were: only those of the useful nodes are read. */
static uint32_t collect_fitting(struct place_state *st, const struct gang *g)
{
    int64_t kmin = INT64_MAX;
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (g->sets[s].req.v[RES_GPU] < kmin)
            kmin = g->sets[s].req.v[RES_GPU];
    if (kmin <= 0 || kmin > NODE_MAX_GPUS)
        return place_collect_useful(st, g,
                                    place_pod_slots); /* GPU-less pods fit anywhere: every node */
    struct place_base *b = st->b;
    const struct cluster *c = st->c;
    pb_cand_fill(b, (uint32_t)kmin);
    uint32_t n_useful = 0;
    for (uint32_t wi = 0; wi < b->words; wi++) {
        for (uint64_t m = b->cand[wi]; m; m &= m - 1) {
            uint32_t i = wi * 64 + bits_ctz64(m);
            bool any = false;
            for (uint32_t s = 0; s < g->n_sets; s++) {
                uint32_t k = eligible(st, s, i) ? place_pod_slots(st, &g->sets[s], i) : 0;
                st->slots[(size_t)s * c->n_nodes + i] = k;
                any |= k > 0;
            }
            if (any)
                st->useful[n_useful++] = i;
        }
        b->cand[wi] = 0;
    }
    return n_useful;
}

/* Levels worth searching for g, tightest first: skips levels whose largest domain has fewer
 * GPUs than the gang and levels that only repeat the node level. */
bool place_level_useful(const struct place_state *st, const struct gang *g, int l)
{
    if (l < 0)
        return true;
    if (st->level_is_nodes[l])
        return false;
    return st->level_max_gpus[l] >= g->gpus;
}

bool place_domain_holds(const struct place_state *st, const struct gang *g, uint32_t d)
{
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (st->dom_cap[(size_t)d * GANG_MAX_SETS + s] < g->sets[s].count)
            return false;
    return true;
}

#define TRIES_PER_LEVEL 3

/* The level the domain search starts at: the tightest (node), or the gang's preferred level
 * (gangsched.io/topology-preferred and its Kueue and Volcano equivalents), from which it widens
 * one level at a time. A preferred level tighter than a required one changes nothing. */
int place_start_level(const struct place_state *st, const struct gang *g)
{
    int l = (int)st->c->topo.n_levels - 1;
    if (st->topology && g->topo_preferred >= 0 && g->topo_preferred < l)
        l = g->topo_preferred;
    return l;
}

/* Domain d of `level` may take gang g: any, unless g joins running members (gang.near), which
 * go only to a domain holding one of them (the whole cluster always does). */
static bool near_ok(const struct place_state *st, const struct gang *g, int level, uint32_t d)
{
    if (g->n_near == 0 || level < 0)
        return true;
    for (uint32_t x = 0; x < g->n_near; x++)
        if (g->near[x] < st->c->n_nodes && in_domain(st, g->near[x], level, d))
            return true;
    return false;
}

/* The sums of `level` for g: from the cycle's cache (cached) or summed over the n_useful nodes
 * of st->useful into the scratch; level_done frees the scratch for the next level. */
static void level_sums(struct place_state *st, const struct gang *g, int level, bool cached,
                       uint32_t n_useful, struct place_dsum *ds)
{
    if (cached) {
        place_fitc_level(st, level, ds);
        if (st->n_tiers > 1)
            place_pref_kept(st, level); /* out of memory: no preference values */
        return;
    }
    uint32_t nt = place_sum_domains(st, g, level, n_useful);
    *ds = (struct place_dsum){
        .cap = st->dom_cap, .free = st->dom_free, .capg = st->dom_capg, .nt = nt};
    if (st->n_tiers > 1)
        place_pref_domains(st, g, level, n_useful); /* out of memory: no preference values */
}

static void level_done(struct place_state *st, bool cached, const struct place_dsum *ds)
{
    if (!cached)
        place_clear_domains(st, ds->nt);
    place_pref_clear(st);
}

/* Each pod set's count fits the domain's slots for it, and, for a gang of several sets (whose
 * slots count every node for each set), its GPUs fit the free GPUs of the domain's useful nodes:
 * a necessary condition either way, so a domain that cannot hold the gang spends no try. */
static bool dsum_holds(const struct place_dsum *ds, const struct gang *g, uint32_t d)
{
    if (g->n_sets > 1 && ds->free[d] < g->gpus)
        return false;
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (ds->cap[(size_t)d * GANG_MAX_SETS + s] < g->sets[s].count)
            return false;
    return true;
}

/* The near miss of a one-set gang at `level`: the domain that holds most of its pods (ties: the
 * lowest domain id, whatever order the domains were summed in). */
static void note_near(struct place_state *st, const struct gang *g, int level,
                      const struct place_dsum *ds)
{
    for (uint32_t k = 0, d; place_dsum_next(st, ds, &k, &d);) {
        uint64_t cap = ds->cap[(size_t)d * GANG_MAX_SETS];
        if (cap > g->sets[0].count)
            cap = g->sets[0].count;
        if (st->near_level == -2 || cap > st->near_pods ||
            (cap == st->near_pods && st->near_level == level && d < st->near_domain)) {
            st->near_level = level;
            st->near_domain = d;
            st->near_pods = cap;
        }
    }
}

/* The best-scoring domain of `level` that holds g and was not tried yet, or -1; with
 * preference values (place_pref_value), the most preferred first. */
static int64_t best_domain(struct place_state *st, const struct gang *g, int level,
                           const struct place_dsum *ds, const uint32_t *tried, uint32_t n_tried,
                           struct score_in *best_in)
{
    int64_t norm = level >= 0 ? st->level_max_gpus[level] : st->ok_gpus;
    int64_t best = -1, best_score = 0;
    uint64_t best_pv = 0;
    /* the score depends on (free, capg) alone here, and domains repeat a few pairs: each pair
     * is scored once per call (a direct-mapped memo) */
    struct {
        int64_t free, capg, sc;
    } memo[64];
    for (uint32_t x = 0; x < 64; x++)
        memo[x].free = -1;
    for (uint32_t k = 0, d; place_dsum_next(st, ds, &k, &d);) {
        bool seen = false;
        for (uint32_t x = 0; x < n_tried; x++)
            seen |= tried[x] == d;
        if (seen || !dsum_holds(ds, g, d) || !near_ok(st, g, level, d))
            continue;
        struct score_in in = {.free_gpus = ds->free[d],
                              .cap_gpus = ds->capg[d],
                              .gang_gpus = g->gpus,
                              .norm_gpus = norm > 0 ? norm : 1};
        uint32_t h =
            (uint32_t)(((uint64_t)in.free_gpus * 0x9E3779B1u + (uint64_t)in.cap_gpus) % 64);
        if (memo[h].free != in.free_gpus || memo[h].capg != in.cap_gpus) {
            memo[h].free = in.free_gpus;
            memo[h].capg = in.cap_gpus;
            memo[h].sc = plugin_score(st->cur_w, &in);
        }
        int64_t sc = memo[h].sc;
        uint64_t v = st->pref_src ? place_pref_value(st, g, d) : 0;
        if (best < 0 || v > best_pv ||
            (v == best_pv && (sc > best_score || (sc == best_score && d < best)))) {
            best = d;
            best_score = sc;
            best_pv = v;
            *best_in = in;
        }
    }
    return best;
}

static enum sched_why place_domains(struct place_state *st, const struct gang *g,
                                    struct sched_assign *out, int *level, uint32_t *domain)
{
    bool cached = place_fitc_ready(st, g);
    uint32_t n_useful = cached ? 0 : collect_fitting(st, g);
    struct place_dsum ds;
    for (int l = place_start_level(st, g); l >= -1; l--) {
        if (g->topo_required >= 0 && l < g->topo_required) {
            /* Would the cluster as a whole hold it? Then the requirement is what blocks. */
            level_sums(st, g, -1, cached, n_useful, &ds);
            uint32_t k = 0, d;
            bool whole = place_dsum_next(st, &ds, &k, &d) && dsum_holds(&ds, g, d);
            level_done(st, cached, &ds);
            return whole ? SCHED_WHY_TOPOLOGY : SCHED_WHY_RESOURCES;
        }
        bool near_only = !place_level_useful(st, g, l); /* too small: the reason's nearest domain */
        if (near_only && (l != g->topo_required || g->n_sets != 1 || st->level_is_nodes[l]))
            continue;
        if (g->spread && l >= 0 && l != g->topo_required && l != g->topo_preferred)
            continue; /* spreading: only the required or preferred level, or the whole cluster */
        level_sums(st, g, l, cached, n_useful, &ds);
        if (g->n_sets == 1 && (l == g->topo_required || l == -1)) /* remember the near miss */
            note_near(st, g, l, &ds);
        uint32_t tried[TRIES_PER_LEVEL], n_tried = 0;
        for (int attempt = 0; attempt < TRIES_PER_LEVEL && !near_only; attempt++) {
            struct score_in best_in = {0};
            int64_t best = best_domain(st, g, l, &ds, tried, n_tried, &best_in);
            if (best < 0)
                break;
            record_top(st, &best_in);
            bool sliced = g->slice_size > 0 && g->slice_level >= 0 && g->n_sets == 1;
            bool filled;
            if (sliced) {
                filled = fill_slices(st, g, l, (uint32_t)best, out);
                for (uint32_t x = 0; x < st->max_domains; x++)
                    st->dom_free[x] = -1; /* fill_slices used the scratch: level sums are gone */
                if (!filled) {
                    place_rollback(st);
                    break; /* no retry at this level: try the next wider one */
                }
            } else if (g->spread) {
                filled = fill_spread(st, g, place_order_domain(st, l, (uint32_t)best), out);
            } else {
                filled = fill_ordered(st, g, place_order_domain(st, l, (uint32_t)best), out);
            }
            if (filled) {
                level_done(st, cached, &ds);
                *level = l;
                *domain = l >= 0 ? (uint32_t)best : 0;
                return SCHED_WHY_PLACED;
            }
            place_rollback(st);
            tried[n_tried++] = (uint32_t)best; /* skip it on the next attempt */
        }
        level_done(st, cached, &ds);
    }
    return SCHED_WHY_RESOURCES;
}

static enum sched_why place_try(struct place_state *st, const struct gang *g,
                                struct sched_assign *out, int *level, uint32_t *domain)
{
    st->n_log = 0;
    st->near_level = -2;
    st->near_pods = 0;
    *level = -1;
    *domain = 0;
    if (g->n_pods == 0)
        return SCHED_WHY_PLACED;
    if (place_is_share(st, g)) { /* GPU shares: HAMi's policies, any node with a register */
        place_prepare_elig(st, g);
        enum sched_why w = place_share(st, g, out);
        if (w != SCHED_WHY_PLACED) {
            place_rollback(st);
        } else if (g->n_pods == 1) {
            *level = (int)st->c->topo.n_levels - 1; /* one node */
            *domain = out[0].node;
        }
        return w;
    }
    if (g->gpus > st->b->free_gpus)
        return SCHED_WHY_RESOURCES;
    place_prepare_elig(st, g);
    enum sched_why why;
    if (st->pods_self && st->pods_gang == g) { /* pods that constrain one another */
        why = place_pods_gang(st, g, out, level, domain);
    } else if (!st->topology) {
        why = place_first_fit(st, g, out) ? SCHED_WHY_PLACED : SCHED_WHY_RESOURCES;
    } else if (g->n_pods == 1 && g->topo_required < 0 && g->n_near == 0) {
        why = place_one(st, g, out) ? SCHED_WHY_PLACED : SCHED_WHY_RESOURCES;
        if (why == SCHED_WHY_PLACED) {
            *level = (int)st->c->topo.n_levels - 1;
            *domain = out[0].node;
        }
    } else {
        why = place_domains(st, g, out, level, domain);
    }
    if (why != SCHED_WHY_PLACED)
        place_rollback(st);
    return why;
}

enum sched_why place_gang(struct place_state *st, const struct gang *g, struct sched_assign *out,
                          int *level, uint32_t *domain)
{
    own_holds(st, g, true);
    enum sched_why why = place_try(st, g, out, level, domain);
    if (why == SCHED_WHY_PLACED)
        place_pods_commit(st, g, out);
    st->n_log = 0; /* committed */
    st->n_gs_log = 0;
    own_holds(st, g, false);
    return why;
}

bool place_trial(struct place_state *st, const struct gang *g, int level, uint32_t d,
                 struct sched_assign *out)
{
    int lv;
    uint32_t dom;
    own_holds(st, g, true);
    st->only_level = level;
    st->only_domain = d;
    enum sched_why why = place_try(st, g, out, &lv, &dom);
    place_rollback(st);
    st->only_level = -2;
    own_holds(st, g, false);
    return why == SCHED_WHY_PLACED;
}

void place_hold_for(struct place_state *st, const struct gang *g, const uint32_t *nodes, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = nodes[k];
        if (i >= st->c->n_nodes)
            continue;
        pb_mark(st->b, i);
        if (!st->held_for[i] && !place_nodes_add(st, &st->for_nodes, i))
            continue; /* out of memory: the node stays usable by others */
        st->held_for[i] = g;
        st->any_held_for = true;
        if (st->ok[i]) {
            bucket_unlink(st, i);
            st->ok[i] = 0;
        }
    }
}

bool place_has_hold(const struct place_state *st, const struct gang *g)
{
    for (uint32_t k = 0; k < st->for_nodes.n; k++) {
        uint32_t i = st->for_nodes.v[k];
        if (st->held_for[i] && st->held_for[i]->id == g->id)
            return true;
    }
    return false;
}

bool place_release(struct place_state *st, const struct sched_running *r)
{
    return place_release_pods(st, r, 0, r->gang->n_pods, NULL);
}

bool place_release_pods(struct place_state *st, const struct sched_running *r, uint32_t from,
                        uint32_t to, const uint8_t *skip)
{
    const struct gang *g = r->gang;
    if (place_is_share(st, g))
        return true; /* shares are not freed for a preemptor (place_share.c) */
    uint32_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++)
        for (uint32_t p = 0; p < g->sets[s].count; p++, k++) {
            if (k < from || k >= to || (skip && skip[k]))
                continue;
            if (st->n_rel == st->cap_rel) {
                uint32_t cap = st->cap_rel * 2;
                struct place_undo *rel = arena_alloc(st->arena, cap * sizeof(*rel));
                if (!rel)
                    return false;
                memcpy(rel, st->rel, st->n_rel * sizeof(*rel));
                st->rel = rel;
                st->cap_rel = cap;
            }
            uint32_t i = r->pods[k].node;
            if (i >= st->c->n_nodes)
                continue;
            st->rel[st->n_rel++] = (struct place_undo){
                .node = i, .gpu_mask = r->pods[k].gpu_mask, .req = &g->sets[s].req};
            if (st->rel_on)
                st->rel_on[i]++;
            pb_mark(st->b, i);
            res_add(&st->free[i], &g->sets[s].req);
            st->gpu_free[i] |= r->pods[k].gpu_mask;
            if (st->ok[i]) {
                bucket_unlink(st, i);
                bucket_link(st, i);
            }
        }
    return true;
}

void place_release_undo(struct place_state *st, uint32_t mark)
{
    while (st->n_rel > mark) {
        const struct place_undo *u = &st->rel[--st->n_rel];
        if (st->rel_on)
            st->rel_on[u->node]--;
        res_sub(&st->free[u->node], u->req);
        st->gpu_free[u->node] &= ~u->gpu_mask;
        if (st->ok[u->node]) {
            bucket_unlink(st, u->node);
            bucket_link(st, u->node);
        }
    }
}

/* For a diagnosis: every preemptor's hold made usable (on) or held again (off), on the nodes that
 * were usable before it (sok); the domain sums keep the holds (as own_holds), so a gang whose
 * search they prune is not called reserved, never the reverse. */
static void every_hold_for(struct place_state *st, bool on)
{
    if (!st->any_held_for)
        return;
    place_nodes_sort(&st->for_nodes);
    for (uint32_t k = 0; k < st->for_nodes.n; k++) {
        uint32_t i = st->for_nodes.v[k];
        if (!st->held_for[i] || !st->b->sok[i] || st->ok[i] == on)
            continue;
        st->ok[i] = on;
        if (on) {
            bucket_link(st, i);
        } else {
            bucket_unlink(st, i);
        }
    }
}

bool place_fits_if_unheld(struct place_state *st, const struct gang *g, struct sched_assign *out)
{
    int level;
    uint32_t domain;
    place_lift_holds(st, true);
    every_hold_for(st, true);
    enum sched_why why = place_try(st, g, out, &level, &domain);
    place_rollback(st);
    every_hold_for(st, false);
    place_lift_holds(st, false);
    return why == SCHED_WHY_PLACED;
}
