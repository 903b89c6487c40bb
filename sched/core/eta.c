/* sched/core/eta.c: the start planner (see eta.h). */
#include "sched/core/eta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/bits.h"
#include "sched/core/place.h"

struct eta_ev {
    int64_t t_ms;  /* when the GPUs come back */
    uint32_t node; /* index into cluster->nodes */
    int32_t gpus;  /* GPUs freed (planned gangs' claims are eta_grp, below) */
};

/* Events sorted by time. Within one time their order does not matter: a walk applies every
 * event up to a time before it looks at the count. */
struct eta_evs {
    struct eta_ev *v;
    uint32_t n; /* the arrays hold what eta_plan() counted for them */
};

/* A planned gang's GPUs on one node. */
struct eta_take {
    uint32_t node;
    int32_t gpus;
};

/* One time of a planned gang's claim: its takes[first..first + n) are taken (sign -1, at its
 * expected start) or given back (+1, at its expected end). A gang has at most two, so keeping
 * them sorted costs the planned gangs, not their pods. */
struct eta_grp {
    int64_t t_ms;
    uint32_t first, n;
    int32_t sign;
};

int64_t eta_runtime(const struct sched_snapshot *snap, const struct gang *g)
{
    if (g->max_runtime_ms > 0)
        return g->max_runtime_ms;
    if (snap->runtime_src)
        return snap->runtime_src->est(snap->runtime_src->ctx, g, false);
    return snap->runtime_est_ms && g->id < snap->n_runtime_est ? snap->runtime_est_ms[g->id] : 0;
}

/* The planner's run time of g: typical where the driver gives one, else eta_runtime(). */
static int64_t typ_runtime(const struct sched_snapshot *snap, const struct gang *g)
{
    if (g->max_runtime_ms <= 0 && snap->runtime_src)
        return snap->runtime_src->est(snap->runtime_src->ctx, g, true);
    if (g->max_runtime_ms <= 0 && snap->runtime_typ_ms && g->id < snap->n_runtime_est)
        return snap->runtime_typ_ms[g->id];
    return eta_runtime(snap, g);
}

#define PLAN_KEYS   (NODE_MAX_GPUS + 1) /* a usable node's GPUs free now: 0..NODE_MAX_GPUS */
#define ETA_CURSORS 16                  /* walk states kept per plan (<= 16: a uint16 mask) */

/* A walk's state, kept for the whole plan. It stands at time t with every event up to t applied
 * (or at now with none, when xr + xc == 0) and counts the slots for pods of k GPUs there.
 * Invariant: every earlier state it passed held fewer than n such slots, and stays so: a planned
 * gang's claim only ever takes capacity. So a gang of n' >= n pods of k GPUs cannot start
 * before t, and its walk goes on from here instead of from now: within one plan a cursor passes
 * each event once. Claims at or before t are applied to it as they are made. */
struct cursor {
    int64_t k;
    uint64_t n;
    int64_t t;
    uint32_t xr, xc;        /* events applied: rel.v[0..xr), grp[0..xc) */
    uint64_t slots;         /* pods of k GPUs that its state holds */
    uint32_t id;            /* its bit in plan.mask */
    uint64_t used;          /* plan.clock at its last use (the least recent is reused) */
    int32_t *fw;            /* [n_nodes]: free GPUs of the nodes it touched (mask bit set) */
    uint64_t *tbits;        /* [words]: the nodes it touched */
    bool one;               /* a node takes one pod of the gang (place_pods_self) */
    uint8_t tab[PLAN_KEYS]; /* tab[v] = v / k, or (v >= k) when one */
};

/* The plan of one cycle. Its cost follows the events its cursors pass and the nodes its claims
 * take, not the cluster: a new cursor's slot count comes from a histogram of the nodes' free
 * GPUs, the nodes a cursor changed are kept aside (mask, fw), and a claim finds the nodes with
 * room in index order through bitmaps per free count. Only plan_init() visits every node, once
 * per cycle. */
struct plan {
    const struct sched_snapshot *snap;
    const struct place_state *st; /* the cycle's state after its placements (gpu_free) */
    uint32_t n_nodes, words;
    uint8_t *usable; /* the node can ever take a pod (ready, schedulable, not quarantined) */
    int64_t *base;   /* GPUs free now, less the claims from now of gangs planned so far (may be
                        < 0) */
    uint64_t *bits;  /* [PLAN_KEYS][words]: usable nodes by base, for base 1..NODE_MAX_GPUS */
    uint64_t hist[PLAN_KEYS]; /* usable nodes per base (1..NODE_MAX_GPUS) */
    int64_t vmax;   /* no usable node's base is above it (bases only go down within a plan) */
    uint16_t *mask; /* [n_nodes]: the cursors holding the node in their fw */
    struct cursor cur[ETA_CURSORS];
    uint32_t n_cur;
    uint64_t clock;
    uint64_t steps; /* events passed by the cursors of this plan (<= ETA_MAX_STEPS) */
    /* fail_n[k]: the fewest pods of k GPUs found never to fit in this plan (UINT64_MAX: none).
     * Claims only take capacity, so a gang of at least as many such pods never fits either. */
    uint64_t fail_n[2][PLAN_KEYS]; /* [one][k] */
    struct eta_evs rel;            /* running pods' and this cycle's placements' releases */
    struct eta_grp *grp;           /* planned gangs' claims by time */
    uint32_t n_grp;
    struct eta_take *take; /* the nodes of every claim */
    uint32_t n_take;
    struct arena *arena;
};

/* By time only: a walk's results do not depend on the order of events of one time. */
static int cmp_ev(const void *a, const void *b)
{
    const struct eta_ev *x = a, *y = b;
    return (x->t_ms > y->t_ms) - (x->t_ms < y->t_ms);
}

/* Pods of c's gang that a node of f free GPUs holds, by table (tab, for 0 <= f < PLAN_KEYS). */
static inline uint64_t slots_of(const struct cursor *c, int64_t f)
{
    return f <= 0 ? 0 : f < PLAN_KEYS ? c->tab[f] : c->one ? 1 : (uint64_t)(f / c->k);
}

static inline bool touched(const struct plan *p, const struct cursor *c, uint32_t i)
{
    return (p->mask[i] >> c->id) & 1u;
}

static inline int64_t free_of(const struct plan *p, const struct cursor *c, uint32_t i)
{
    return touched(p, c, i) ? c->fw[i] : p->base[i];
}

/* Node i's free GPUs in cursor c change by d (usable nodes only): its slots follow. */
static void cursor_add(struct plan *p, struct cursor *c, uint32_t i, int64_t d)
{
    if (!touched(p, c, i)) {
        p->mask[i] |= (uint16_t)(1u << c->id);
        c->fw[i] = (int32_t)p->base[i];
        c->tbits[i / 64] |= 1ull << (i % 64);
    }
    c->slots -= slots_of(c, c->fw[i]);
    c->fw[i] += (int32_t)d;
    c->slots += slots_of(c, c->fw[i]);
}

/* Node i's base becomes v (usable nodes only), from now on: its histogram and bitmap entry and
 * every cursor's state follow. */
static void set_base(struct plan *p, uint32_t i, int64_t v)
{
    int64_t old = p->base[i];
    uint64_t bit = 1ull << (i % 64);
    for (uint32_t x = 0; x < p->n_cur; x++) {
        struct cursor *c = &p->cur[x];
        if (touched(p, c, i)) {
            cursor_add(p, c, i, v - old);
        } else {
            c->slots -= slots_of(c, old);
            c->slots += slots_of(c, v);
        }
    }
    if (old >= 1 && old < PLAN_KEYS) {
        p->hist[old]--;
        p->bits[(size_t)old * p->words + i / 64] &= ~bit;
    }
    if (v >= 1 && v < PLAN_KEYS) {
        p->hist[v]++;
        p->bits[(size_t)v * p->words + i / 64] |= bit;
    }
    p->base[i] = v;
}

/* Cursor c starts afresh at now, for n pods of k GPUs (one: at most one per node). */
static void cursor_reset(struct plan *p, struct cursor *c, int64_t k, bool one, uint64_t n)
{
    for (uint32_t w = 0; w < p->words; w++) {
        for (uint64_t m = c->tbits[w]; m; m &= m - 1)
            p->mask[w * 64 + bits_ctz64(m)] &= (uint16_t) ~(1u << c->id);
        c->tbits[w] = 0;
    }
    c->k = k, c->one = one, c->n = n, c->t = p->snap->now_ms, c->xr = c->xc = 0, c->slots = 0;
    for (int64_t v = 0; v < PLAN_KEYS; v++) {
        c->tab[v] = (uint8_t)(one ? v >= k : v / k);
        c->slots += p->hist[v] * c->tab[v];
    }
}

/* A copy of cursor `from` as a new cursor for n pods (a cursor for fewer pods stays valid). */
static void cursor_fork(struct plan *p, const struct cursor *from, struct cursor *c, uint64_t n)
{
    cursor_reset(p, c, from->k, from->one, n);
    c->t = from->t, c->xr = from->xr, c->xc = from->xc, c->slots = from->slots;
    for (uint32_t w = 0; w < p->words; w++) {
        c->tbits[w] = from->tbits[w];
        for (uint64_t m = from->tbits[w]; m; m &= m - 1) {
            uint32_t i = w * 64 + bits_ctz64(m);
            p->mask[i] |= (uint16_t)(1u << c->id);
            c->fw[i] = from->fw[i];
        }
    }
}

/* A cursor for n pods of k GPUs: the one of the same k for the most pods up to n (relabelled
 * for n, or copied while there is room), else a new one (the least recently used is reused).
 * NULL: out of memory. */
static struct cursor *cursor_for(struct plan *p, int64_t k, bool one, uint64_t n)
{
    struct cursor *best = NULL, *lru = NULL;
    for (uint32_t x = 0; x < p->n_cur; x++) {
        struct cursor *c = &p->cur[x];
        if (c->k == k && c->one == one && c->n <= n && (!best || c->n > best->n))
            best = c;
        if (!lru || c->used < lru->used)
            lru = c;
    }
    struct cursor *c = best;
    if (!best || (best->n != n && p->n_cur < ETA_CURSORS)) {
        if (p->n_cur < ETA_CURSORS) {
            c = &p->cur[p->n_cur];
            *c = (struct cursor){.id = p->n_cur};
            c->fw = arena_alloc(p->arena, (p->n_nodes + 1) * sizeof(*c->fw));
            c->tbits = arena_calloc(p->arena, p->words + 1, sizeof(*c->tbits));
            if (!c->fw || !c->tbits)
                return NULL;
            p->n_cur++;
        } else {
            c = lru;
        }
        if (best)
            cursor_fork(p, best, c, n);
        else
            cursor_reset(p, c, k, one, n);
    }
    c->n = n;
    c->used = ++p->clock;
    return c;
}

/* Applies claim group x to cursor c (claims are on usable nodes only). */
static void grp_apply(struct plan *p, struct cursor *c, const struct eta_grp *x)
{
    for (uint32_t j = x->first; j < x->first + x->n; j++)
        cursor_add(p, c, p->take[j].node, x->sign * p->take[j].gpus);
    p->steps += x->n;
}

#define ETA_OVER_BUDGET INT64_MIN /* earliest(): the plan's step budget ran out */

/* Earliest time at which n pods of k GPUs fit, from cursor c (which stays there). INT64_MAX:
 * never (some capacity it needs has an unknown end); ETA_OVER_BUDGET: the plan's events to pass
 * ran out first. */
static int64_t earliest(struct plan *p, struct cursor *c, uint64_t n, int64_t now)
{
    const struct eta_evs *rel = &p->rel;
    while (c->slots < n && (c->xr < rel->n || c->xc < p->n_grp)) {
        if (p->steps >= ETA_MAX_STEPS)
            return ETA_OVER_BUDGET;
        int64_t next = INT64_MAX;
        if (c->xr < rel->n)
            next = rel->v[c->xr].t_ms;
        if (c->xc < p->n_grp && p->grp[c->xc].t_ms < next)
            next = p->grp[c->xc].t_ms;
        int64_t t = next > now ? next : now;
        uint32_t xr0 = c->xr;
        for (; c->xr < rel->n && rel->v[c->xr].t_ms <= t; c->xr++)
            if (p->usable[rel->v[c->xr].node])
                cursor_add(p, c, rel->v[c->xr].node, rel->v[c->xr].gpus);
        p->steps += c->xr - xr0;
        for (; c->xc < p->n_grp && p->grp[c->xc].t_ms <= t; c->xc++)
            grp_apply(p, c, &p->grp[c->xc]);
        c->t = t;
    }
    return c->slots >= n ? c->t : INT64_MAX;
}

/* The gang's GPUs per pod as the planner counts them (the largest pod set's) and, in *n, its
 * pods that need GPUs: a pod without GPUs (a launcher, a Ray head) takes none of what the
 * planner counts, so it does not wait for a slot of k. */
static int64_t pod_gpus(const struct gang *g, uint64_t *n)
{
    int64_t k = 0;
    *n = 0;
    for (uint32_t s = 0; s < g->n_sets; s++) {
        if (g->sets[s].req.v[RES_GPU] > k)
            k = g->sets[s].req.v[RES_GPU];
        if (g->sets[s].req.v[RES_GPU] > 0)
            *n += g->sets[s].count;
    }
    return k;
}

/* A pod's GPUs on a node and when they come back (INT64_MAX: never known). */
struct eta_hold {
    int64_t t_ms;
    uint32_t node;
    uint32_t mask; /* GPU indices; 0: not named (gpus counts them) */
    uint32_t gpus;
};

/* By node, then the latest end first. */
static int cmp_hold(const void *a, const void *b)
{
    const struct eta_hold *x = a, *y = b;
    if (x->node != y->node)
        return (x->node > y->node) - (x->node < y->node);
    return (x->t_ms < y->t_ms) - (x->t_ms > y->t_ms);
}

/* Node i's release events from its holds h[0..n) (latest end first), as the cycle counts GPUs:
 * by index (a GPU that several shares hold counts once), each GPU back when the last pod holding
 * it ends, never while one with an unknown end holds it; only GPUs held now (out of gpu_free)
 * come back. Holds without indices count: they take the held GPUs no index names, the latest
 * ends first, so that two such shares of one GPU give it back once, at the later end. One
 * event per hold of a known end, even of no GPU: the walks' budget counts them as before. */
static void node_events(struct plan *p, uint32_t i, const struct eta_hold *h, uint32_t n)
{
    const struct node *nd = &p->snap->cluster->nodes[i];
    uint32_t all = nd->n_gpus >= 32 ? UINT32_MAX : (1u << nd->n_gpus) - 1;
    uint32_t held = ~p->st->gpu_free[i] & all, seen = 0;
    int64_t now = p->snap->now_ms;
    struct eta_evs *r = &p->rel;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t back = h[k].mask & held & ~seen;
        seen |= h[k].mask;
        if (h[k].mask && h[k].t_ms != INT64_MAX)
            r->v[r->n++] = (struct eta_ev){.t_ms = h[k].t_ms > now ? h[k].t_ms : now,
                                           .node = i,
                                           .gpus = (int32_t)bits_popc32(back)};
    }
    int64_t left = bits_popc32(held & ~seen); /* for the holds without indices */
    for (uint32_t k = 0; k < n; k++) {
        if (h[k].mask)
            continue;
        int64_t g = h[k].gpus < left ? h[k].gpus : left;
        left -= g;
        if (h[k].t_ms != INT64_MAX)
            r->v[r->n++] = (struct eta_ev){
                .t_ms = h[k].t_ms > now ? h[k].t_ms : now, .node = i, .gpus = (int32_t)g};
    }
}

/* The release events of the running pods (snap->releases) and of the pods this cycle placed
 * (back at its expected end), per node by GPU index (node_events). */
static int release_events(struct plan *p, const struct eta_env *env)
{
    const struct sched_snapshot *snap = p->snap;
    int64_t now = snap->now_ms;
    uint32_t n = 0, cap = snap->n_releases;
    for (uint32_t k = 0; k < env->out->n_placements; k++)
        cap += env->out->placements[k].gang->n_pods;
    struct eta_hold *h = arena_alloc(p->arena, (cap + 1) * sizeof(*h));
    if (!h)
        return SCHED_ENOMEM;
    for (uint32_t k = 0; k < snap->n_releases; k++) {
        const struct sched_release *x = &snap->releases[k];
        if (x->node < p->n_nodes)
            h[n++] = (struct eta_hold){x->t_ms, x->node, x->gpu_mask, x->gpus};
    }
    for (uint32_t k = 0; k < env->out->n_placements; k++) {
        const struct sched_placement *pl = &env->out->placements[k];
        int64_t rt = typ_runtime(snap, pl->gang);
        for (uint32_t x = 0; x < pl->gang->n_pods; x++) {
            uint32_t m = pl->pods[x].gpu_mask;
            h[n++] = (struct eta_hold){rt > 0 ? now + rt : INT64_MAX, pl->pods[x].node, m,
                                       (uint32_t)bits_popc32(m)};
        }
    }
    qsort(h, n, sizeof(*h), cmp_hold);
    for (uint32_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && h[b].node == h[a].node; b++)
            ;
        node_events(p, h[a].node, h + a, b - a);
    }
    return 0;
}

static int plan_init(struct plan *p, const struct eta_env *env, uint32_t cap_rel, uint32_t cap_take)
{
    const struct sched_snapshot *snap = env->snap;
    const struct cluster *c = snap->cluster;
    const struct place_state *st = env->st;
    struct arena *a = env->arena;
    int64_t now = snap->now_ms;
    uint32_t nn = c->n_nodes;
    *p = (struct plan){.snap = snap, .st = st, .n_nodes = nn, .words = (nn + 63) / 64, .arena = a};
    p->usable = arena_alloc(a, nn + 1);
    p->base = arena_alloc(a, (nn + 1) * sizeof(*p->base));
    p->bits = arena_calloc(a, (size_t)PLAN_KEYS * p->words + 1, sizeof(*p->bits));
    p->mask = arena_calloc(a, nn + 1, sizeof(*p->mask));
    for (int k = 0; k < PLAN_KEYS; k++)
        p->fail_n[0][k] = p->fail_n[1][k] = UINT64_MAX;
    int64_t *rel = arena_alloc(a, (nn + 1) * sizeof(*rel));
    p->rel.v = arena_alloc(a, (cap_rel + 1) * sizeof(*p->rel.v));
    p->grp = arena_alloc(a, (2 * ETA_MAX_PLANNED + 1) * sizeof(*p->grp));
    p->take = arena_alloc(a, (cap_take + 1) * sizeof(*p->take));
    if (!p->usable || !p->base || !p->bits || !p->mask || !rel || !p->rel.v || !p->grp || !p->take)
        return SCHED_ENOMEM;
    for (uint32_t i = 0; i < nn; i++) {
        const struct node *nd = &c->nodes[i];
        p->usable[i] = nd->ready && !nd->unschedulable && !snap->state[i].not_ready &&
                       !snap->state[i].quarantined;
        p->base[i] = 0;
        int64_t b = bits_popc32(st->gpu_free[i]);
        if (p->usable[i])
            set_base(p, i, b);
        else
            p->base[i] = b;
        rel[i] = snap->release_typ_ms ? snap->release_typ_ms[i] : snap->state[i].release_ms;
    }
    for (p->vmax = PLAN_KEYS - 1; p->vmax > 0 && p->hist[p->vmax] == 0; p->vmax--)
        ;
    /* what this cycle started ends by its expected run time */
    for (uint32_t k = 0; k < env->out->n_placements; k++) {
        const struct sched_placement *pl = &env->out->placements[k];
        int64_t rt = typ_runtime(snap, pl->gang);
        int64_t end = rt > 0 ? now + rt : INT64_MAX;
        for (uint32_t x = 0; x < pl->gang->n_pods; x++)
            if (end > rel[pl->pods[x].node])
                rel[pl->pods[x].node] = end;
    }
    struct eta_evs *r = &p->rel;
    if (snap->releases) { /* per running pod and per pod this cycle placed, GPUs by id */
        if (release_events(p, env) != 0)
            return SCHED_ENOMEM;
    } else {
        for (uint32_t i = 0; i < nn; i++) {
            int64_t busy = (int64_t)c->nodes[i].n_gpus - p->base[i];
            if (busy > 0 && rel[i] != INT64_MAX)
                r->v[r->n++] = (struct eta_ev){
                    .t_ms = rel[i] > now ? rel[i] : now, .node = i, .gpus = (int32_t)busy};
        }
    }
    qsort(r->v, r->n, sizeof(*r->v), cmp_ev);
    return 0;
}

/* Does g hold a starvation reservation this cycle? */
static bool holds_reservation(const struct sched_result *out, const struct gang *g)
{
    for (uint32_t k = 0; k < out->n_reservations; k++)
        if (out->reservations[k].gang == g)
            return true;
    return false;
}

/* Adds claim group x to the sorted groups (after those of its time); a cursor that stands at
 * or after its time has it applied at once. */
static void grp_add(struct plan *p, struct eta_grp x)
{
    for (uint32_t k = 0; k < p->n_cur; k++) {
        struct cursor *c = &p->cur[k];
        if (c->xr + c->xc > 0 && x.t_ms <= c->t) { /* (at now before any event: all later) */
            grp_apply(p, c, &x);
            c->xc++; /* it lands before every group the cursor has not passed */
        }
    }
    uint32_t at = p->n_grp;
    while (at > 0 && p->grp[at - 1].t_ms > x.t_ms)
        at--;
    memmove(p->grp + at + 1, p->grp + at, (p->n_grp - at) * sizeof(*p->grp));
    p->grp[at] = x;
    p->n_grp++;
}

/* The nodes that may have room for a pod of k GPUs in cursor c's state, in index order: those
 * it changed and the others whose base is at least k (bitmaps). */
struct room_iter {
    const struct cursor *c;
    uint32_t w; /* bitmap word */
    uint64_t m; /* its bits not yet returned */
};

/* The next candidate node, or UINT32_MAX. */
static uint32_t room_next(const struct plan *p, struct room_iter *it)
{
    while (it->m == 0) {
        if (++it->w >= p->words)
            return UINT32_MAX;
        uint64_t m = it->c->tbits[it->w];
        for (int64_t v = it->c->k; v <= p->vmax; v++)
            m |= p->bits[(size_t)v * p->words + it->w];
        it->m = m;
    }
    uint32_t i = it->w * 64 + bits_ctz64(it->m);
    it->m &= it->m - 1;
    return i;
}

/* Plans gang g (a waiting gang, not NEVER): its expected start, then its claims. A gang that
 * holds a reservation claims its GPUs from now on (nobody else may take them, as in the cycle);
 * any other claims them from its expected start, so that gangs behind it may still be planned
 * into the gap before it, as backfill does. */
static int plan_one(struct plan *p, const struct eta_item *it, struct sched_eta *e, bool holds,
                    bool one)
{
    const struct gang *g = it->gang;
    uint64_t n;
    int64_t now = p->snap->now_ms, k = pod_gpus(g, &n);
    if (k <= 0) {
        e->kind = SCHED_ETA_UNKNOWN; /* waits for something the planner does not count */
        return 0;
    }
    bool memo = k < PLAN_KEYS;
    struct cursor *c = NULL;
    int64_t t = INT64_MAX;
    if (!memo || n < p->fail_n[one][k]) {
        if (!(c = cursor_for(p, k, one, n)))
            return SCHED_ENOMEM;
        t = earliest(p, c, n, now);
    }
    if (t == ETA_OVER_BUDGET) {
        e->kind = SCHED_ETA_BEHIND;
        return 0;
    }
    if (t == INT64_MAX) {
        if (memo && n < p->fail_n[one][k])
            p->fail_n[one][k] = n;
        e->kind = SCHED_ETA_UNKNOWN;
        return 0;
    }
    if (t == now && (it->why == SCHED_WHY_QUOTA)) {
        e->kind = SCHED_ETA_QUOTA; /* the GPUs are there, its quota is not */
        return 0;
    }
    /* new members of a training gang join only in a window after a checkpoint: from the first
     * one that opens with room (the room is the cursor's at its own time, a little earlier), or
     * within its queue's checkpointGrace of the room, when its job is asked for one */
    t = gang_join_asked(g, t, sched_ckpt_grace(p->snap, g));
    e->kind = SCHED_ETA_AT;
    e->start_ms = t;
    /* claim: the nodes with room at t, in node order, from now to its expected end */
    int64_t rt = typ_runtime(p->snap, g), end = rt > 0 ? t + rt : INT64_MAX;
    uint64_t left = n;
    uint32_t first = p->n_take;
    struct room_iter ri = {.c = c, .w = UINT32_MAX};
    for (uint32_t i; left > 0 && (i = room_next(p, &ri)) != UINT32_MAX;) {
        uint64_t take = slots_of(c, free_of(p, c, i));
        if (take > left)
            take = left;
        if (take == 0)
            continue;
        left -= take;
        int32_t gpus = (int32_t)(take * (uint64_t)k);
        if (holds || t == now)
            set_base(p, i, p->base[i] - gpus); /* held from now on */
        p->take[p->n_take++] = (struct eta_take){i, gpus};
    }
    uint32_t n_take = p->n_take - first;
    if (!holds && t != now)
        grp_add(p, (struct eta_grp){t, first, n_take, -1});
    if (end != INT64_MAX)
        grp_add(p, (struct eta_grp){end, first, n_take, +1});
    return 0;
}

/* May a gang waiting for this reason ever start as it is? */
static bool eta_plannable(enum sched_why why)
{
    return why != SCHED_WHY_NEVER && why != SCHED_WHY_QUOTA_NEVER && why != SCHED_WHY_NO_NODES;
}

static bool refused(const struct eta_env *env, uint32_t id)
{
    uint32_t lo = 0, hi = env->n_refused;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (env->refused[mid] == id)
            return true;
        if (env->refused[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* Evictions the start planner does not foresee (it counts GPUs that free as gangs end): a gang
 * within its queue's nominal quota whose reclaim waits for starvation.after (the borrowers'
 * gangs are past reclaim's bound) starts then at the latest, and so does a gang whose
 * preemption plan pays once it has waited longer (preempt_at_ms): its victims are evicted at
 * that time. Few such gangs: a scan each. */
static void eta_evictions(const struct sched_snapshot *snap, struct sched_result *out)
{
    for (uint32_t v = 0; v < out->n_verdicts; v++) {
        const struct sched_verdict *vd = &out->verdicts[v];
        int64_t at = INT64_MAX;
        if (vd->reclaim_after_ms > 0)
            at = vd->gang->submit_ms + vd->reclaim_after_ms;
        if (vd->preempt_at_ms > 0 && vd->preempt_at_ms < at)
            at = vd->preempt_at_ms;
        if (at == INT64_MAX)
            continue;
        at = at > snap->now_ms ? at : snap->now_ms;
        for (uint32_t e = 0; e < out->n_etas; e++) {
            struct sched_eta *x = &out->etas[e];
            if (x->gang->id == vd->gang->id && (x->kind != SCHED_ETA_AT || x->start_ms > at)) {
                x->kind = SCHED_ETA_AT;
                x->start_ms = at;
            }
        }
    }
}

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The ids of the gangs the pod rules refused nodes (verdict.by_pod_rules), ascending, for the
 * start planner. */
static int refused_ids(struct eta_env *env)
{
    const struct sched_result *out = env->out;
    uint32_t n = 0, *ids = NULL;
    for (uint32_t v = 0; v < out->n_verdicts; v++)
        if (out->verdicts[v].by_pod_rules) {
            if (!ids && !(ids = arena_alloc(env->arena, out->n_verdicts * sizeof(*ids))))
                return SCHED_ENOMEM;
            ids[n++] = out->verdicts[v].gang->id;
        }
    if (n > 1)
        qsort(ids, n, sizeof(*ids), cmp_id);
    env->refused = ids;
    env->n_refused = n;
    return 0;
}

int eta_plan(struct eta_env *env, const struct eta_item *waiting, uint32_t n)
{
    struct sched_result *out = env->out;
    out->n_etas = 0;
    out->etas = arena_alloc(env->arena, (n + 1) * sizeof(*out->etas));
    if (!out->etas)
        return SCHED_ENOMEM;
    if (n == 0)
        return 0; /* nothing waits: no plan (its set-up costs the cluster's size) */
    if (refused_ids(env) != 0)
        return SCHED_ENOMEM;
    uint32_t nn = env->snap->cluster->n_nodes;
    uint32_t cap_rel = nn + env->snap->n_releases, cap_take = 0;
    for (uint32_t k = 0; k < out->n_placements; k++)
        cap_rel += out->placements[k].gang->n_pods;
    for (uint32_t w = 0, m = 0; w < n && m < ETA_MAX_PLANNED; w++) {
        if (!eta_plannable(waiting[w].why))
            continue; /* the gangs planned: the first ETA_MAX_PLANNED plannable ones at most */
        uint32_t pods = waiting[w].gang->n_pods;
        cap_take += pods < nn ? pods : nn;
        m++;
    }
    struct plan p;
    if (plan_init(&p, env, cap_rel, cap_take) != 0)
        return SCHED_ENOMEM;
    uint32_t planned = 0;
    for (uint32_t w = 0; w < n; w++) {
        struct sched_eta *e = &out->etas[out->n_etas++];
        *e = (struct sched_eta){.gang = waiting[w].gang, .start_ms = INT64_MAX, .ahead = planned};
        if (!eta_plannable(waiting[w].why)) {
            e->kind = SCHED_ETA_NEVER;
            continue;
        }
        if (refused(env, waiting[w].gang->id)) {
            e->kind = SCHED_ETA_PODS; /* the rules are not modelled: no estimate, no claims */
            continue;
        }
        int self_level; /* an affinity among its pods: as a required level (not modelled) */
        unsigned self = place_pods_self(env->st, waiting[w].gang, &self_level);
        if (self & PODS_SELF_OTHER) {
            e->kind = SCHED_ETA_PODS_SELF;
            continue;
        }
        if (planned >= ETA_MAX_PLANNED || p.steps >= ETA_MAX_STEPS) {
            e->kind = SCHED_ETA_BEHIND;
            continue;
        }
        if (plan_one(&p, &waiting[w], e, holds_reservation(out, waiting[w].gang),
                     self & PODS_SELF_NODE) != 0)
            return SCHED_ENOMEM;
        if (e->kind != SCHED_ETA_BEHIND)
            planned++;
    }
    eta_evictions(env->snap, out);
    return 0;
}

static void span(char *buf, size_t n, int64_t ms)
{
    int64_t s = ms / 1000;
    if (s < 60)
        snprintf(buf, n, "%llds", (long long)s);
    else if (s < 3600)
        snprintf(buf, n, "%lldm", (long long)(s / 60));
    else if (s < 86400)
        snprintf(buf, n, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else
        snprintf(buf, n, "%lldd%02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

int eta_format(const struct sched_eta *e, int64_t now_ms, char *buf, size_t n)
{
    char d[32];
    switch (e->kind) {
    case SCHED_ETA_AT:
        if (e->start_ms <= now_ms)
            return snprintf(buf, n, "now");
        span(d, sizeof(d), e->start_ms - now_ms);
        return snprintf(buf, n, "in %s", d);
    case SCHED_ETA_QUOTA:
        return snprintf(buf, n, "no estimate: waiting for quota");
    case SCHED_ETA_BEHIND:
        return snprintf(buf, n, "no estimate: behind %u gangs", e->ahead);
    case SCHED_ETA_UNKNOWN:
        return snprintf(buf, n, "no estimate: run times unknown");
    case SCHED_ETA_NEVER:
        return snprintf(buf, n, "no estimate: never fits as it is");
    case SCHED_ETA_PODS:
        return snprintf(buf, n,
                        "no estimate: refused by the rules of pods (affinity, host ports, "
                        "spread)");
    case SCHED_ETA_PODS_SELF:
        return snprintf(buf, n,
                        "no estimate: rules among its own pods (spread, anti-affinity by a "
                        "topology wider than a node, affinity by a key that is no topology level)");
    }
    return snprintf(buf, n, "no estimate");
}

void eta_index(const struct sched_result *res, const struct sched_eta **by_id, uint32_t n)
{
    for (uint32_t k = 0; k < res->n_etas; k++)
        if (res->etas[k].gang->id < n)
            by_id[res->etas[k].gang->id] = &res->etas[k];
}

void eta_unindex(const struct sched_result *res, const struct sched_eta **by_id, uint32_t n)
{
    for (uint32_t k = 0; k < res->n_etas; k++)
        if (res->etas[k].gang->id < n)
            by_id[res->etas[k].gang->id] = NULL;
}

void eta_for_log(const struct sched_eta *e, int64_t now_ms, bool *has, int64_t *at_ms, char *note,
                 size_t n)
{
    *has = e != NULL;
    *at_ms = e && e->kind == SCHED_ETA_AT ? e->start_ms : 0;
    if (n > 0)
        note[0] = 0;
    if (e && e->kind != SCHED_ETA_AT)
        eta_format(e, now_ms, note, n);
}
