/* sched/core/eta.c: the start planner (see eta.h). */
#include "sched/core/eta.h"

#include <stdio.h>
#include <string.h>

#include "sched/core/place.h"

struct eta_ev {
    int64_t t_ms;  /* when the GPUs come back */
    uint32_t node; /* index into cluster->nodes */
    int32_t gpus;  /* GPUs freed (< 0: taken by a planned gang) */
};

int64_t eta_runtime(const struct sched_snapshot *snap, const struct gang *g)
{
    if (g->max_runtime_ms > 0)
        return g->max_runtime_ms;
    return snap->runtime_est_ms && g->id < snap->n_runtime_est ? snap->runtime_est_ms[g->id] : 0;
}

/* The planner's run time of g: typical where the driver gives one, else eta_runtime(). */
static int64_t typ_runtime(const struct sched_snapshot *snap, const struct gang *g)
{
    if (g->max_runtime_ms <= 0 && snap->runtime_typ_ms && g->id < snap->n_runtime_est)
        return snap->runtime_typ_ms[g->id];
    return eta_runtime(snap, g);
}

static int popc(uint32_t x)
{
    return __builtin_popcount(x);
}

/* Inserts e keeping ev sorted by time (stable: later inserts after equal times). */
static void ev_insert(struct eta_ev *ev, uint32_t *n, struct eta_ev e)
{
    uint32_t lo = 0, hi = *n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (ev[mid].t_ms <= e.t_ms)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(ev + lo + 1, ev + lo, (*n - lo) * sizeof(*ev));
    ev[lo] = e;
    (*n)++;
}

static int64_t slots_of(int64_t free, int64_t k)
{
    return free > 0 ? free / k : 0;
}

struct plan {
    const struct sched_snapshot *snap;
    uint32_t n_nodes;
    uint8_t *usable; /* the node can ever take a pod (ready, schedulable, not quarantined) */
    int64_t *base;   /* GPUs free now, less the claims of gangs planned so far (may be < 0) */
    int64_t *f;      /* scratch: GPUs free at the walk's time */
    struct eta_ev *ev;
    uint32_t n_ev;
};

/* Earliest time at which n pods of k GPUs fit; leaves p->f at that time. INT64_MAX: never
 * (some capacity it needs has an unknown end). */
static int64_t earliest(struct plan *p, int64_t k, uint64_t n, int64_t now)
{
    uint64_t slots = 0;
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        p->f[i] = p->usable[i] ? p->base[i] : 0;
        slots += (uint64_t)slots_of(p->f[i], k);
    }
    int64_t t = now;
    for (uint32_t x = 0; slots < n && x < p->n_ev;) {
        t = p->ev[x].t_ms > now ? p->ev[x].t_ms : now;
        for (; x < p->n_ev && (p->ev[x].t_ms <= t); x++) {
            uint32_t i = p->ev[x].node;
            if (!p->usable[i])
                continue;
            slots -= (uint64_t)slots_of(p->f[i], k);
            p->f[i] += p->ev[x].gpus;
            slots += (uint64_t)slots_of(p->f[i], k);
        }
    }
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

static int plan_init(struct plan *p, const struct eta_env *env, uint32_t cap_ev)
{
    const struct sched_snapshot *snap = env->snap;
    const struct cluster *c = snap->cluster;
    const struct place_state *st = env->st;
    int64_t now = snap->now_ms;
    p->snap = snap;
    p->n_nodes = c->n_nodes;
    p->usable = arena_alloc(env->arena, c->n_nodes + 1);
    p->base = arena_alloc(env->arena, (c->n_nodes + 1) * sizeof(*p->base));
    p->f = arena_alloc(env->arena, (c->n_nodes + 1) * sizeof(*p->f));
    int64_t *rel = arena_alloc(env->arena, (c->n_nodes + 1) * sizeof(*rel));
    p->ev = arena_alloc(env->arena, (cap_ev + 1) * sizeof(*p->ev));
    p->n_ev = 0;
    if (!p->usable || !p->base || !p->f || !rel || !p->ev)
        return SCHED_ENOMEM;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        const struct node *nd = &c->nodes[i];
        p->usable[i] = nd->ready && !nd->unschedulable && !snap->state[i].not_ready &&
                       !snap->state[i].quarantined;
        p->base[i] = popc(st->gpu_free[i]);
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
    if (snap->releases) { /* per running pod, then this cycle's placements per node */
        for (uint32_t k = 0; k < snap->n_releases; k++) {
            const struct sched_release *x = &snap->releases[k];
            if (x->node < c->n_nodes && x->t_ms != INT64_MAX)
                ev_insert(p->ev, &p->n_ev,
                          (struct eta_ev){.t_ms = x->t_ms > now ? x->t_ms : now,
                                          .node = x->node,
                                          .gpus = (int32_t)x->gpus});
        }
        for (uint32_t k = 0; k < env->out->n_placements; k++) {
            const struct sched_placement *pl = &env->out->placements[k];
            int64_t rt = typ_runtime(snap, pl->gang);
            if (rt <= 0)
                continue;
            for (uint32_t x = 0; x < pl->gang->n_pods; x++)
                ev_insert(p->ev, &p->n_ev,
                          (struct eta_ev){.t_ms = now + rt,
                                          .node = pl->pods[x].node,
                                          .gpus = __builtin_popcount(pl->pods[x].gpu_mask)});
        }
        return 0;
    }
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        int64_t busy = (int64_t)c->nodes[i].n_gpus - p->base[i];
        if (busy > 0 && rel[i] != INT64_MAX)
            ev_insert(p->ev, &p->n_ev,
                      (struct eta_ev){
                          .t_ms = rel[i] > now ? rel[i] : now, .node = i, .gpus = (int32_t)busy});
    }
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
    int64_t t = earliest(p, k, g->n_pods, now);
    if (t == INT64_MAX) {
        e->kind = SCHED_ETA_UNKNOWN;
        return;
    }
    if (t == now && (it->why == SCHED_WHY_QUOTA)) {
        e->kind = SCHED_ETA_QUOTA; /* the GPUs are there, its quota is not */
        return;
    }
    e->kind = SCHED_ETA_AT;
    e->start_ms = t;
    /* claim: the nodes with the most room at t, in node order, from now to its expected end */
    int64_t rt = typ_runtime(p->snap, g), end = rt > 0 ? t + rt : INT64_MAX;
    uint64_t left = g->n_pods;
    for (uint32_t i = 0; i < p->n_nodes && left > 0; i++) {
        if (!p->usable[i])
            continue;
        uint64_t take = (uint64_t)slots_of(p->f[i], k);
        if (take > left)
            take = left;
        if (take == 0)
            continue;
        left -= take;
        if (holds || t == now) {
            p->base[i] -= (int64_t)take * k; /* held from now on */
        } else {
            ev_insert(p->ev, &p->n_ev,
                      (struct eta_ev){.t_ms = t, .node = i, .gpus = -(int32_t)(take * k)});
        }
        if (end != INT64_MAX)
            ev_insert(p->ev, &p->n_ev,
                      (struct eta_ev){.t_ms = end, .node = i, .gpus = (int32_t)(take * k)});
    }
}

int eta_plan(const struct eta_env *env, const struct eta_item *waiting, uint32_t n)
{
    struct sched_result *out = env->out;
    out->n_etas = 0;
    out->etas = arena_alloc(env->arena, (n + 1) * sizeof(*out->etas));
    if (!out->etas)
        return SCHED_ENOMEM;
    uint32_t cap_ev = env->snap->cluster->n_nodes + env->snap->n_releases;
    for (uint32_t k = 0; k < out->n_placements; k++)
        cap_ev += out->placements[k].gang->n_pods;
    for (uint32_t w = 0; w < n && w < ETA_MAX_PLANNED; w++) {
        uint32_t pods = waiting[w].gang->n_pods;
        cap_ev += 2 * (pods < env->snap->cluster->n_nodes ? pods : env->snap->cluster->n_nodes);
    }
    struct plan p;
    if (plan_init(&p, env, cap_ev) != 0)
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
        if (planned >= ETA_MAX_PLANNED) {
            e->kind = SCHED_ETA_BEHIND;
            continue;
        }
        plan_one(&p, &waiting[w], e, holds_reservation(out, waiting[w].gang));
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
