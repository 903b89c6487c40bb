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
    int32_t gpus;  /* GPUs freed (< 0: taken by a planned gang) */
};

/* Events sorted by time. Within one time their order does not matter: a walk applies every
 * event up to a time before it looks at the count. */
struct eta_evs {
    struct eta_ev *v;
    uint32_t n; /* the arrays hold what eta_plan() counted for them */
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

static int64_t slots_of(int64_t free, int64_t k)
{
    return free > 0 ? free / k : 0;
}

#define PLAN_KEYS (NODE_MAX_GPUS + 1) /* a usable node's GPUs free now: 0..NODE_MAX_GPUS */

/* The plan of one cycle. Its cost per planned gang follows the events its walk passes and the
 * nodes its claim takes, not the cluster: the count of slots at the start of a walk comes from
 * a histogram of the nodes' free GPUs, the nodes a walk changes are kept aside (stamp, fw), and
 * a claim finds the nodes with room in index order through bitmaps per free count. Only
 * plan_init() visits every node, once per cycle. */
struct plan {
    const struct sched_snapshot *snap;
    uint32_t n_nodes, words;
    uint8_t *usable; /* the node can ever take a pod (ready, schedulable, not quarantined) */
    int64_t *base;   /* GPUs free now, less the claims from now of gangs planned so far (may be
                        < 0) */
    uint64_t *bits;  /* [PLAN_KEYS][words]: usable nodes by base, for base 1..NODE_MAX_GPUS */
    uint64_t hist[PLAN_KEYS]; /* usable nodes per base (1..NODE_MAX_GPUS) */
    /* the last walk (earliest()): node i's GPUs free at its time are fw[i] when stamp[i] ==
     * walk, else base[i]; touched lists those nodes */
    uint32_t walk;
    uint32_t *stamp;
    int64_t *fw;
    uint32_t *touched;
    uint32_t n_touched;
    uint64_t steps;  /* events passed by the walks of this plan (<= ETA_MAX_STEPS) */
    uint64_t *tbits; /* [words]: the touched nodes */
    /* fail_n[k]: the fewest pods of k GPUs found never to fit in this plan (UINT64_MAX: none).
     * Claims only take capacity, so a gang of at least as many such pods never fits either. */
    uint64_t fail_n[PLAN_KEYS];
    struct eta_evs rel;   /* running pods' and this cycle's placements' releases */
    struct eta_evs claim; /* planned gangs' claims (taken, given back) */
    struct eta_ev *mine;  /* scratch: the claims of the gang being planned */
};

/* By time only: the walk's results do not depend on the order of events of one time. */
static int cmp_ev(const void *a, const void *b)
{
    const struct eta_ev *x = a, *y = b;
    return (x->t_ms > y->t_ms) - (x->t_ms < y->t_ms);
}

/* Node i's base becomes v (usable nodes only): its histogram and bitmap entry follow. */
static void set_base(struct plan *p, uint32_t i, int64_t v)
{
    int64_t old = p->base[i];
    uint64_t bit = 1ull << (i % 64);
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

static int64_t free_at_walk(const struct plan *p, uint32_t i)
{
    return p->stamp[i] == p->walk ? p->fw[i] : p->base[i];
}

/* Pods of k GPUs that f free GPUs hold, by table (tab[v] = v / k for 0 <= v < PLAN_KEYS). */
static inline uint64_t slots_tab(const uint8_t *tab, int64_t f, int64_t k)
{
    return f <= 0 ? 0 : f < PLAN_KEYS ? tab[f] : (uint64_t)(f / k);
}

/* Applies one event to the walk (k GPUs per pod, tab its slot table): *slots follows. */
static inline void walk_apply(struct plan *p, const struct eta_ev *e, const uint8_t *tab, int64_t k,
                              uint64_t *slots)
{
    uint32_t i = e->node;
    if (!p->usable[i])
        return;
    if (p->stamp[i] != p->walk) {
        p->stamp[i] = p->walk;
        p->fw[i] = p->base[i];
        p->touched[p->n_touched++] = i;
        p->tbits[i / 64] |= 1ull << (i % 64);
    }
    *slots -= slots_tab(tab, p->fw[i], k);
    p->fw[i] += e->gpus;
    *slots += slots_tab(tab, p->fw[i], k);
}

#define ETA_OVER_BUDGET INT64_MIN /* earliest(): the plan's step budget ran out */

/* Earliest time at which n pods of k GPUs fit; leaves the walk's free counts at that time.
 * INT64_MAX: never (some capacity it needs has an unknown end); ETA_OVER_BUDGET: the walk would
 * pass more events than the plan has left. */
static int64_t earliest(struct plan *p, int64_t k, uint64_t n, int64_t now)
{
    if (++p->walk == 0) { /* wrapped: no stale stamp may match */
        memset(p->stamp, 0, p->n_nodes * sizeof(*p->stamp));
        p->walk = 1;
    }
    for (uint32_t x = 0; x < p->n_touched; x++)
        p->tbits[p->touched[x] / 64] = 0;
    p->n_touched = 0;
    uint64_t slots = 0;
    uint8_t tab[PLAN_KEYS];
    for (int64_t v = 0; v < PLAN_KEYS; v++) {
        tab[v] = (uint8_t)(v / k);
        slots += p->hist[v] * tab[v];
    }
    int64_t t = now;
    uint32_t xr = 0, xc = 0;
    while (slots < n && (xr < p->rel.n || xc < p->claim.n)) {
        if (p->steps + xr + xc >= ETA_MAX_STEPS) {
            p->steps = ETA_MAX_STEPS;
            return ETA_OVER_BUDGET;
        }
        int64_t next = INT64_MAX;
        if (xr < p->rel.n)
            next = p->rel.v[xr].t_ms;
        if (xc < p->claim.n && p->claim.v[xc].t_ms < next)
            next = p->claim.v[xc].t_ms;
        t = next > now ? next : now;
        for (; xr < p->rel.n && p->rel.v[xr].t_ms <= t; xr++)
            walk_apply(p, &p->rel.v[xr], tab, k, &slots);
        for (; xc < p->claim.n && p->claim.v[xc].t_ms <= t; xc++)
            walk_apply(p, &p->claim.v[xc], tab, k, &slots);
    }
    p->steps += xr + xc;
    return slots >= n ? t : INT64_MAX;
}

/* The gang's GPUs per pod (the largest pod set's) and pods. */
static int64_t pod_gpus(const struct gang *g)
{
    int64_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++)
        if (g->sets[s].req.v[RES_GPU] > k)
            k = g->sets[s].req.v[RES_GPU];
    return k;
}

static int plan_init(struct plan *p, const struct eta_env *env, uint32_t cap_rel,
                     uint32_t cap_claim)
{
    const struct sched_snapshot *snap = env->snap;
    const struct cluster *c = snap->cluster;
    const struct place_state *st = env->st;
    struct arena *a = env->arena;
    int64_t now = snap->now_ms;
    uint32_t nn = c->n_nodes;
    *p = (struct plan){.snap = snap, .n_nodes = nn, .words = (nn + 63) / 64};
    p->usable = arena_alloc(a, nn + 1);
    p->base = arena_alloc(a, (nn + 1) * sizeof(*p->base));
    p->bits = arena_calloc(a, (size_t)PLAN_KEYS * p->words + 1, sizeof(*p->bits));
    p->stamp = arena_calloc(a, nn + 1, sizeof(*p->stamp));
    p->fw = arena_alloc(a, (nn + 1) * sizeof(*p->fw));
    p->touched = arena_alloc(a, (nn + 1) * sizeof(*p->touched));
    p->tbits = arena_calloc(a, p->words + 1, sizeof(*p->tbits));
    for (int k = 0; k < PLAN_KEYS; k++)
        p->fail_n[k] = UINT64_MAX;
    int64_t *rel = arena_alloc(a, (nn + 1) * sizeof(*rel));
    p->rel.v = arena_alloc(a, (cap_rel + 1) * sizeof(*p->rel.v));
    p->claim.v = arena_alloc(a, (cap_claim + 1) * sizeof(*p->claim.v));
    p->mine = arena_alloc(a, (cap_claim + 1) * sizeof(*p->mine));
    if (!p->usable || !p->base || !p->bits || !p->stamp || !p->fw || !p->touched || !p->tbits ||
        !rel || !p->rel.v || !p->claim.v || !p->mine)
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
    if (snap->releases) { /* per running pod, then this cycle's placements per node */
        for (uint32_t k = 0; k < snap->n_releases; k++) {
            const struct sched_release *x = &snap->releases[k];
            if (x->node < nn && x->t_ms != INT64_MAX)
                r->v[r->n++] = (struct eta_ev){.t_ms = x->t_ms > now ? x->t_ms : now,
                                               .node = x->node,
                                               .gpus = (int32_t)x->gpus};
        }
        for (uint32_t k = 0; k < env->out->n_placements; k++) {
            const struct sched_placement *pl = &env->out->placements[k];
            int64_t rt = typ_runtime(snap, pl->gang);
            if (rt <= 0)
                continue;
            for (uint32_t x = 0; x < pl->gang->n_pods; x++)
                r->v[r->n++] = (struct eta_ev){.t_ms = now + rt,
                                               .node = pl->pods[x].node,
                                               .gpus = (int32_t)bits_popc32(pl->pods[x].gpu_mask)};
        }
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

/* Merges the gang's m claims (sorted here) into the sorted claim list. */
static void claims_merge(struct plan *p, uint32_t m)
{
    qsort(p->mine, m, sizeof(*p->mine), cmp_ev);
    struct eta_evs *c = &p->claim;
    uint32_t a = c->n, b = m, w = c->n + m;
    while (b > 0) { /* from the back, in place */
        if (a > 0 && c->v[a - 1].t_ms > p->mine[b - 1].t_ms)
            c->v[--w] = c->v[--a];
        else
            c->v[--w] = p->mine[--b];
    }
    c->n += m;
}

/* The nodes that may have room for a pod of k GPUs at the walk's time, in index order: those
 * the walk changed and the others whose base is at least k (bitmaps). */
struct room_iter {
    uint32_t w; /* bitmap word */
    uint64_t m; /* its bits not yet returned */
    int64_t k;
};

/* The next candidate node, or UINT32_MAX. */
static uint32_t room_next(const struct plan *p, struct room_iter *it)
{
    while (it->m == 0) {
        if (++it->w >= p->words)
            return UINT32_MAX;
        uint64_t m = p->tbits[it->w];
        for (int64_t v = it->k; v < PLAN_KEYS; v++)
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
static void plan_one(struct plan *p, const struct eta_item *it, struct sched_eta *e, bool holds)
{
    const struct gang *g = it->gang;
    int64_t now = p->snap->now_ms, k = pod_gpus(g);
    if (k <= 0) {
        e->kind = SCHED_ETA_UNKNOWN; /* waits for something the planner does not count */
        return;
    }
    bool memo = k < PLAN_KEYS;
    int64_t t = memo && g->n_pods >= p->fail_n[k] ? INT64_MAX : earliest(p, k, g->n_pods, now);
    if (t == ETA_OVER_BUDGET) {
        e->kind = SCHED_ETA_BEHIND;
        return;
    }
    if (t == INT64_MAX) {
        if (memo && g->n_pods < p->fail_n[k])
            p->fail_n[k] = g->n_pods;
        e->kind = SCHED_ETA_UNKNOWN;
        return;
    }
    if (t == now && (it->why == SCHED_WHY_QUOTA)) {
        e->kind = SCHED_ETA_QUOTA; /* the GPUs are there, its quota is not */
        return;
    }
    e->kind = SCHED_ETA_AT;
    e->start_ms = t;
    /* claim: the nodes with room at t, in node order, from now to its expected end */
    int64_t rt = typ_runtime(p->snap, g), end = rt > 0 ? t + rt : INT64_MAX;
    uint64_t left = g->n_pods;
    uint32_t m = 0;
    struct room_iter ri = {.w = UINT32_MAX, .k = k};
    for (uint32_t i; left > 0 && (i = room_next(p, &ri)) != UINT32_MAX;) {
        uint64_t take = (uint64_t)slots_of(free_at_walk(p, i), k);
        if (take > left)
            take = left;
        if (take == 0)
            continue;
        left -= take;
        int32_t gpus = (int32_t)(take * (uint64_t)k);
        if (holds || t == now)
            set_base(p, i, p->base[i] - gpus); /* held from now on */
        else
            p->mine[m++] = (struct eta_ev){.t_ms = t, .node = i, .gpus = -gpus};
        if (end != INT64_MAX)
            p->mine[m++] = (struct eta_ev){.t_ms = end, .node = i, .gpus = gpus};
    }
    claims_merge(p, m);
}

int eta_plan(const struct eta_env *env, const struct eta_item *waiting, uint32_t n)
{
    struct sched_result *out = env->out;
    out->n_etas = 0;
    out->etas = arena_alloc(env->arena, (n + 1) * sizeof(*out->etas));
    if (!out->etas)
        return SCHED_ENOMEM;
    if (n == 0)
        return 0; /* nothing waits: no plan (its set-up costs the cluster's size) */
    uint32_t nn = env->snap->cluster->n_nodes;
    uint32_t cap_rel = nn + env->snap->n_releases, cap_claim = 0;
    for (uint32_t k = 0; k < out->n_placements; k++)
        cap_rel += out->placements[k].gang->n_pods;
    for (uint32_t w = 0; w < n && w < ETA_MAX_PLANNED; w++) {
        uint32_t pods = waiting[w].gang->n_pods;
        cap_claim += 2 * (pods < nn ? pods : nn);
    }
    struct plan p;
    if (plan_init(&p, env, cap_rel, cap_claim) != 0)
        return SCHED_ENOMEM;
    uint32_t planned = 0;
    for (uint32_t w = 0; w < n; w++) {
        struct sched_eta *e = &out->etas[out->n_etas++];
        *e = (struct sched_eta){.gang = waiting[w].gang, .start_ms = INT64_MAX, .ahead = planned};
        enum sched_why why = waiting[w].why;
        if (why == SCHED_WHY_NEVER || why == SCHED_WHY_QUOTA_NEVER || why == SCHED_WHY_NO_NODES) {
            e->kind = SCHED_ETA_NEVER;
            continue;
        }
        if (planned >= ETA_MAX_PLANNED || p.steps >= ETA_MAX_STEPS) {
            e->kind = SCHED_ETA_BEHIND;
            continue;
        }
        plan_one(&p, &waiting[w], e, holds_reservation(out, waiting[w].gang));
        if (e->kind != SCHED_ETA_BEHIND)
            planned++;
    }
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
    }
    return snprintf(buf, n, "no estimate");
}

const struct sched_eta *eta_find(const struct sched_result *res, const struct gang *g)
{
    for (uint32_t k = 0; k < res->n_etas; k++)
        if (res->etas[k].gang == g)
            return &res->etas[k];
    return NULL;
}

void eta_for_log(const struct sched_result *res, const struct gang *g, int64_t now_ms, bool *has,
                 int64_t *at_ms, char *note, size_t n)
{
    const struct sched_eta *e = eta_find(res, g);
    *has = e != NULL;
    *at_ms = e && e->kind == SCHED_ETA_AT ? e->start_ms : 0;
    if (n > 0)
        note[0] = 0;
    if (e && e->kind != SCHED_ETA_AT)
        eta_format(e, now_ms, note, n);
}
