/* sched/core/place_reserve.c: reservations and explanations of whole-gang placement (see
 * place.h): where a starving gang is held capacity once running pods finish (place_reserve, with
 * its sticky hint), the lifting of those holds for backfill, "never fits" on an empty cluster, and
 * the per-filter counts of a failed placement's verdict.
 *
 * Reads the working state through the helpers of place_internal.h; the placement algorithms
 * themselves (first fit, one pod, domain search, undo log) stay in place.c.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/core/bits.h"
#include "sched/core/place.h"
#include "sched/core/place_internal.h"

bool place_never_fits(const struct place_state *st, const struct gang *g, int *short_res)
{
    if (place_is_share(st, g))
        return place_share_never_fits(st, g, short_res);
    if (g->gpus > st->static_gpus) {
        *short_res = RES_GPU;
        return true;
    }
    for (uint32_t s = 0; s < g->n_sets; s++) {
        int r = res_first_short(&g->sets[s].req, &st->max_alloc);
        if (r >= 0) {
            *short_res = r;
            return true;
        }
    }
    return false;
}

static uint32_t full_slots(const struct place_state *st, const struct podset *ps, uint32_t i);

/* Slices: some domain of the slice level must hold a whole slice when empty. */
static bool slices_never_fit(const struct place_state *st, const struct gang *g)
{
    if (g->slice_size == 0 || g->slice_level < 0 || g->n_sets != 1)
        return false;
    const struct topo_level *lv = &st->c->topo.levels[g->slice_level];
    for (uint32_t d = 0; d < lv->n_domains; d++) {
        uint64_t cap = 0;
        for (uint32_t k = lv->domain_first[d]; k < lv->domain_first[d + 1]; k++) {
            uint32_t i = lv->node_index[k];
            const struct node *nd = &st->c->nodes[i];
            if (nd->ready && !nd->unschedulable)
                cap += full_slots(st, &g->sets[0], i);
        }
        if (cap >= g->slice_size)
            return false;
    }
    return true;
}

/* Required topology (under a policy that honours it): some domain of the required level must
 * hold every pod set when empty (a necessary condition only: the sets' competition for one node
 * is not counted, so no gang that could ever fit is refused). A narrower domain lies inside one
 * of that level. */
bool place_required_never_fits(const struct place_state *st, const struct gang *g)
{
    if (!st->topology || g->topo_required < 0 || (uint32_t)g->topo_required >= st->c->topo.n_levels)
        return false; /* a topology-blind policy (fifo) places it across domains */
    const struct topo_level *lv = &st->c->topo.levels[g->topo_required];
    for (uint32_t d = 0; d < lv->n_domains; d++) {
        bool holds = true;
        for (uint32_t s = 0; s < g->n_sets && holds; s++) {
            uint64_t cap = 0;
            for (uint32_t k = lv->domain_first[d]; k < lv->domain_first[d + 1]; k++) {
                const struct node *nd = &st->c->nodes[lv->node_index[k]];
                if (nd->ready && !nd->unschedulable)
                    cap += full_slots(st, &g->sets[s], lv->node_index[k]);
            }
            holds = cap >= g->sets[s].count;
        }
        if (holds)
            return false;
    }
    return true;
}

bool place_never_fits_any_node(const struct place_state *st, const struct gang *g, int *short_res)
{
    const struct cluster *c = st->c;
    if (place_is_share(st, g))
        return place_share_never_fits_any_node(st, g, short_res);
    if (slices_never_fit(st, g)) {
        *short_res = RES_GPU;
        return true;
    }
    for (uint32_t s = 0; s < g->n_sets; s++) {
        const struct podset *ps = &g->sets[s];
        bool any = false;
        int64_t gpus = ps->req.v[RES_GPU];
        for (uint32_t i = 0; i < c->n_nodes && !any; i++) {
            const struct node *nd = &c->nodes[i];
            if (!nd->ready || nd->unschedulable || !res_fits(&ps->req, &nd->alloc))
                continue;
            uint32_t all = bits_low32(nd->n_gpus);
            uint32_t tp = st->topology ? g->tp_size : 0;
            any = gpus <= 0 ||
                  plugin_reserve->pick(nd, all, (uint32_t)gpus, tp, place_set_limit(st, ps)) != 0;
        }
        if (!any) {
            *short_res = gpus > 0 ? RES_GPU : -1;
            return true;
        }
    }
    if (place_required_never_fits(st, g)) {
        *short_res = -1; /* every pod fits some node: the required domain is what is short */
        return true;
    }
    return false;
}

/* ---- reservations ------------------------------------------------------------------------ */

/* Pods of `ps` an empty node i could take. */
static uint32_t full_slots(const struct place_state *st, const struct podset *ps, uint32_t i)
{
    const struct node *nd = &st->c->nodes[i];
    uint64_t best = UINT32_MAX;
    for (int r = 0; r < res_count(); r++) {
        int64_t need = ps->req.v[r];
        if (need <= 0 || r == RES_GPU)
            continue;
        uint64_t k = nd->alloc.v[r] <= 0 ? 0 : (uint64_t)(nd->alloc.v[r] / need);
        if (k < best)
            best = k;
    }
    int64_t gpus = ps->req.v[RES_GPU];
    if (gpus > 0) {
        uint32_t all = bits_low32(nd->n_gpus);
        uint32_t k =
            plugin_reserve->slots(nd, all, (uint32_t)gpus, st->cur_tp, place_set_limit(st, ps));
        if (k < best)
            best = k;
    }
    return (uint32_t)best;
}

/* Pods of the sets of g still short that node i, once empty, takes toward got[]: the sets in
 * fill order (place_set_order), each from what the sets before it left of the node (GPUs by the
 * reserve plugin, the other resources by subtraction), so that a node is not counted whole for
 * two sets. With `one` (a node takes one pod of g: place_pods_self) the first such set takes
 * one pod; a gang of one set takes the node's slots (st->slots: full_slots). */
static void count_node(const struct place_state *st, const struct gang *g, uint64_t *got,
                       uint32_t i, bool one)
{
    uint32_t n = st->c->n_nodes;
    if (one || g->n_sets == 1) {
        for (uint32_t s = 0; s < g->n_sets; s++)
            if (got[s] < g->sets[s].count && st->slots[(size_t)s * n + i] > 0) {
                got[s] += one ? 1 : st->slots[(size_t)s * n + i];
                return;
            }
        return;
    }
    const struct node *nd = &st->c->nodes[i];
    uint8_t ord[GANG_MAX_SETS];
    uint32_t n_sets = place_set_order(g, ord, NULL);
    struct res_vec left = nd->alloc;
    left.v[RES_GPU] = INT64_MAX; /* GPUs by index, below */
    uint32_t free_mask = bits_low32(nd->n_gpus);
    for (uint32_t x = 0; x < n_sets; x++) {
        uint32_t s = ord[x];
        const struct podset *ps = &g->sets[s];
        if (got[s] >= ps->count || st->slots[(size_t)s * n + i] == 0)
            continue;
        uint32_t gpus = ps->req.v[RES_GPU] > 0 ? (uint32_t)ps->req.v[RES_GPU] : 0;
        for (uint32_t m = 0; got[s] < ps->count && res_fits(&ps->req, &left); got[s]++) {
            if (gpus > 0 && !(m = plugin_reserve->pick(nd, free_mask, gpus, st->cur_tp,
                                                       place_set_limit(st, ps))))
                break;
            free_mask &= ~m;
            res_sub(&left, &ps->req);
        }
    }
}

/* Does the hint (last cycle's reservation of g) still hold g once its running pods finish,
 * inside one domain of level l (l < 0: anywhere), on nodes nobody else holds? */
static bool hint_holds(const struct place_state *st, const struct gang *g, int l,
                       const uint32_t *hint, uint32_t n_hint, bool one)
{
    const struct cluster *c = st->c;
    uint64_t got[GANG_MAX_SETS] = {0};
    for (uint32_t k = 0; k < n_hint; k++) {
        uint32_t i = hint[k];
        if (i >= c->n_nodes || !st->ok[i] ||
            (l >= 0 && c->nodes[i].dom[l] != c->nodes[hint[0]].dom[l]))
            return false;
        for (uint32_t j = 0; j < k; j++)
            if (hint[j] == i)
                return false; /* a node twice: not a reservation this cycle wrote */
        count_node(st, g, got, i, one);
    }
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (got[s] < g->sets[s].count)
            return false;
    return n_hint > 0;
}

/* A node of the domain being picked from: its expected release and its position in the
 * domain's score order. */
struct rpick {
    int64_t release_ms;
    uint32_t j;
};

/* Expected free earliest first; ties: the later in score order (the more free GPUs now). A total
 * order (j differs), so any way of taking the least first takes the same nodes. */
static bool rpick_before(const struct rpick *x, const struct rpick *y)
{
    return x->release_ms != y->release_ms ? x->release_ms < y->release_ms : x->j > y->j;
}

/* Restores the min-heap order of h[0..n) below position k. */
static void rpick_sift(struct rpick *h, uint32_t n, uint32_t k)
{
    for (;;) {
        uint32_t l = 2 * k + 1, m = k;
        if (l < n && rpick_before(&h[l], &h[m]))
            m = l;
        if (l + 1 < n && rpick_before(&h[l + 1], &h[m]))
            m = l + 1;
        if (m == k)
            return;
        struct rpick t = h[k];
        h[k] = h[m];
        h[m] = t;
        k = m;
    }
}

static bool pick_useful(const struct place_state *st, const struct gang *g, const uint64_t *got,
                        uint32_t i)
{
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (got[s] < g->sets[s].count && st->slots[(size_t)s * st->c->n_nodes + i] > 0)
            return true;
    return false;
}

/* Nodes of domain d (level l) that hold g once running pods finish, expected free earliest
 * first (ties: most free GPUs now), written to `nodes`; *start is when the last of them is
 * expected free. Returns the count, 0 when the domain cannot hold g. `by` is scratch of
 * st->c->n_nodes entries. A node stops being useful only when the sets it has slots for are
 * filled, never becomes useful again, so taking the useful nodes earliest first from one heap
 * takes the same nodes as choosing the earliest useful node again after every pick: O(m +
 * picks log m) for a domain of m useful nodes instead of O(m x picks). */
static uint32_t reserve_pick(struct place_state *st, const struct gang *g, int l, uint32_t d,
                             uint32_t *nodes, int64_t *start, struct rpick *by, bool one)
{
    uint32_t n_order = place_order_domain(st, l, d), n_by = 0, n_held = 0;
    uint64_t got[GANG_MAX_SETS] = {0};
    for (uint32_t j = 0; j < n_order; j++)
        if (pick_useful(st, g, got, st->order[j]))
            by[n_by++] = (struct rpick){st->state[st->order[j]].release_ms, j};
    /* a heap, not a sort: a gang takes few of a large domain's nodes */
    for (uint32_t k = n_by / 2; k-- > 0;)
        rpick_sift(by, n_by, k);
    *start = 0;
    while (n_by > 0) {
        uint32_t i = st->order[by[0].j];
        by[0] = by[--n_by];
        rpick_sift(by, n_by, 0);
        if (!pick_useful(st, g, got, i))
            continue;
        count_node(st, g, got, i, one);
        bool done = true;
        for (uint32_t s = 0; s < g->n_sets; s++)
            done &= got[s] >= g->sets[s].count;
        nodes[n_held++] = i;
        *start = st->state[i].release_ms > *start ? st->state[i].release_ms : *start;
        if (done)
            return n_held;
    }
    return 0;
}

uint32_t place_reserve(struct place_state *st, const struct gang *g, uint32_t *nodes,
                       const uint32_t *hint, uint32_t n_hint)
{
    const struct cluster *c = st->c;
    if (place_is_share(st, g))
        return 0; /* no starvation reservations for GPU shares (place_share.c) */
    place_prepare_elig(st, g);
    /* the rules among its own pods: a node takes one of them (one), or all share a domain of
     * self_level (as a required level); others are not modelled, so no reservation */
    int self_level;
    unsigned self = place_pods_self(st, g, &self_level);
    if (self & PODS_SELF_OTHER)
        return 0;
    bool one = self & PODS_SELF_NODE;
    int floor = g->topo_required > self_level ? g->topo_required : self_level;
    uint32_t n_useful = place_collect_useful(st, g, full_slots), n_held = 0;
    for (uint32_t u = 0; one && u < n_useful; u++) /* the domain sums count nodes */
        for (uint32_t s = 0; s < g->n_sets; s++) {
            uint32_t *k = &st->slots[(size_t)s * c->n_nodes + st->useful[u]];
            *k = *k > 0;
        }
    /* Over every level that can hold g, the domain expected to hold it earliest (by the nodes'
     * expected release times); the tighter level on ties, then the most free GPUs now. */
    uint32_t *pick = arena_alloc(st->arena, (c->n_nodes + 1) * sizeof(*pick));
    struct rpick *by = arena_alloc(st->arena, (c->n_nodes + 1) * sizeof(*by));
    int64_t best_start = INT64_MAX, best_free = -1;
    int best_level = -2;
    for (int l = place_start_level(st, g); pick && by && l >= -1; l--) {
        if (floor >= 0 && l < floor)
            break;
        if (!place_level_useful(st, g, l))
            continue;
        uint32_t nt = place_sum_domains(st, g, l, n_useful), n_cand = 0;
        struct cand {
            uint32_t d;
            int64_t free;
        } *cand = arena_alloc(st->arena, (nt + 1) * sizeof(*cand));
        /* joining members (gang.near) reserve by expected start too: a node of their running
         * members is expected free only when those end */
        for (uint32_t k = 0; cand && k < nt; k++)
            if (place_domain_holds(st, g, st->touched[k]))
                cand[n_cand++] = (struct cand){st->touched[k], st->dom_free[st->touched[k]]};
        place_clear_domains(st, nt);
        for (uint32_t k = 0; cand && k < n_cand; k++) {
            int64_t t;
            uint32_t n = reserve_pick(st, g, l, cand[k].d, pick, &t, by, one);
            if (n == 0 || (n_held > 0 &&
                           (t > best_start ||
                            (t == best_start && (best_level != l || cand[k].free <= best_free)))))
                continue; /* later, or as early but wider or with fewer free GPUs now */
            best_start = t;
            best_free = cand[k].free;
            best_level = l;
            memcpy(nodes, pick, n * sizeof(*nodes));
            n_held = n;
        }
    }
    if (n_held == 0)
        return 0;
    /* Sticky: last cycle's nodes stay reserved while they still hold g inside one domain of the
     * chosen level and are expected free no later than the new pick, so a waiting gang's
     * reservation does not wander from node to node as pods come and go. */
    if (hint_holds(st, g, best_level, hint, n_hint, one) &&
        place_expected_start(st, hint, n_hint) <= best_start) {
        memcpy(nodes, hint, n_hint * sizeof(*nodes));
        n_held = n_hint;
    }
    for (uint32_t k = 0; k < n_held; k++) {
        uint32_t i = nodes[k];
        pb_unlink(st->b, i);
        st->ok[i] = 0;
        if (!st->held[i] && !place_nodes_add(st, &st->res_nodes, i))
            st->res_lost = true; /* out of memory: no backfill into held capacity */
        st->held[i] = 1;
    }
    return n_held;
}

int64_t place_expected_start(const struct place_state *st, const uint32_t *nodes, uint32_t n)
{
    int64_t t = 0;
    for (uint32_t k = 0; k < n; k++)
        if (st->state[nodes[k]].release_ms > t)
            t = st->state[nodes[k]].release_ms;
    return t;
}

void place_lift_holds(struct place_state *st, bool lift)
{
    if (st->res_lost)
        return;
    place_nodes_sort(&st->res_nodes);
    for (uint32_t k = 0; k < st->res_nodes.n; k++) {
        uint32_t i = st->res_nodes.v[k];
        if (!st->held[i] || st->ok[i] == lift)
            continue;
        st->ok[i] = lift;
        if (lift) {
            pb_link(st->b, i);
        } else {
            pb_unlink(st->b, i);
        }
    }
}

/* ---- explanations ------------------------------------------------------------------------ */

/* The filter that rejects node i for pod set ps of g (FILTER_*), or -1 when none does. */
static inline int diag_filter(const struct place_state *st, const struct gang *g, uint32_t s,
                              const struct sched_filter *const *active, size_t n_active, uint32_t i)
{
    const struct podset *ps = &g->sets[s];
    const struct node *nd = &st->c->nodes[i];
    if (!st->ok[i]) { /* ok: ready, up, schedulable and not held (place_base.h) */
        if (!nd->ready || st->state[i].not_ready)
            return FILTER_NOT_READY;
        if (st->state[i].quarantined)
            return FILTER_QUARANTINED;
        if (nd->unschedulable)
            return FILTER_CORDONED;
        if (st->held[i] || st->held_for[i])
            return FILTER_RESERVED;
    }
    for (size_t f = 0; f < n_active; f++)
        if (!active[f]->pass(g, ps, nd))
            return (int)active[f]->id;
    return place_pods_why(st, g, s, i); /* inter-pod constraints (place_pods.c) */
}

void place_diagnose(const struct place_state *st, const struct gang *g, struct sched_verdict *v)
{
    const struct cluster *c = st->c;
    memset(v->filtered, 0, sizeof(v->filtered));
    v->n_nodes = c->n_nodes;
    v->short_res = -1;
    v->need = 0;
    v->best_free = 0;
    if (g->n_sets == 0)
        return;
    uint32_t s = 0; /* the most demanding pod set: most GPUs per pod */
    for (uint32_t k = 1; k < g->n_sets; k++)
        if (g->sets[k].req.v[RES_GPU] > g->sets[s].req.v[RES_GPU])
            s = k;
    const struct podset *ps = &g->sets[s];
    uint32_t short_count[RES_MAX] = {0};
    const struct sched_filter *active[16]; /* the pod-level filters that can reject, in order */
    size_t n_active = 0;
    for (size_t f = 0; plugin_filters[f] && n_active < 16; f++)
        if (!plugin_filters[f]->node_only && plugin_filters[f]->active(&st->env, g, ps))
            active[n_active++] = plugin_filters[f];
    /* a share gang's wait is told by its devices (place_share_diagnose): of the scan, only the
     * count of nodes without room for a pod is kept (the verdict's reason reads it) */
    bool share = place_is_share(st, g);
    int64_t best_gpus = 0; /* most free GPUs of a node that may take pods (st->ok) */
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        if (st->ok[i] && !share) {
            int64_t gpus = bits_popc32(st->gpu_free[i]);
            best_gpus = gpus > best_gpus ? gpus : best_gpus;
        }
        int fid = diag_filter(st, g, s, active, n_active, i);
        if (fid >= 0) {
            v->filtered[fid]++;
            continue;
        }
        int r = res_first_short(&ps->req, &st->free[i]); /* the first short in resource order */
        uint32_t mask = 0;
        if (r < 0 && ps->req.v[RES_GPU] > 0 && !place_pod_fits(st, ps, i, &mask))
            r = RES_GPU; /* enough GPUs in number, but not inside one NVLink island */
        if (r >= 0) {
            v->filtered[FILTER_RESOURCES]++;
            short_count[r]++;
        }
    }
    if (share) {
        place_share_diagnose(st, g, v);
        return;
    }
    int worst = -1;
    for (int q = 0; q < res_count(); q++)
        if (short_count[q] > 0 && (worst < 0 || short_count[q] > short_count[worst]))
            worst = q;
    if (worst < 0)
        return;
    v->short_res = worst;
    v->need = ps->req.v[worst];
    if (worst == RES_GPU) {
        v->best_free = best_gpus;
        return;
    }
    /* the most of it free on a node no filter rejects (a second pass: GPUs are the usual case) */
    for (uint32_t i = 0; i < c->n_nodes; i++)
        if (st->free[i].v[worst] > v->best_free && diag_filter(st, g, s, active, n_active, i) < 0)
            v->best_free = st->free[i].v[worst];
}
