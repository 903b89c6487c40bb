/* sched/core/preempt.c: the preemption planner (see preempt.h for the rules and formulas). */
#include "sched/core/preempt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/podaff.h"
#include "sched/core/policy.h"
#include "sched/core/preempt_int.h"

#define PREEMPT_MIN_WAIT_S 3600.0 /* waiting seconds a preemptor is always credited with */

double preempt_lost_gpu_s(const struct sched_running *r, int64_t now_ms)
{
    int64_t since = now_ms - r->last_checkpoint_ms;
    if (since < 0)
        since = 0;
    return (double)r->gang->gpus * (double)(since + r->restart_cost_ms) / 1000.0;
}

double preempt_cost(const struct sched_running *r, int64_t now_ms)
{
    int32_t p = r->gang->priority > 0 ? r->gang->priority : 0;
    return preempt_lost_gpu_s(r, now_ms) * (1.0 + 0.1 * (double)p);
}

int preempt_ctx_init(struct preempt_ctx *pc, const struct sched_snapshot *snap,
                     struct place_state *st, struct quota_tree *qt, struct arena *arena)
{
    memset(pc, 0, sizeof(*pc));
    pc->snap = snap;
    pc->st = st;
    pc->qt = qt;
    pc->arena = arena;
    pc->chosen = arena_calloc(arena, snap->n_running + 1, 1);
    pc->evicted_per_queue = arena_calloc(arena, snap->n_queues + 1, sizeof(uint32_t));
    return pc->chosen && pc->evicted_per_queue ? 0 : SCHED_ENOMEM;
}

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    /* a gang's members before the gang, the last member first */
    int64_t rx = x->pod == NO_POD ? -1 : (int64_t)x->pod,
            ry = y->pod == NO_POD ? -1 : (int64_t)y->pod;
    return rx > ry ? -1 : (rx < ry);
}

/* Members g may lose alone (elastic: more members than its minMember), else 0. */
static uint32_t spare_pods(const struct gang *g)
{
    return g->min_member > 0 && g->min_member < g->n_pods ? g->n_pods - g->min_member : 0;
}

/* Is the victim's queue above its nominal quota (borrowing) on some tracked resource? */
static bool victim_borrows(const struct preempt_ctx *pc, const struct sched_running *r)
{
    for (uint32_t k = 0; k < pc->qt->n_tracked; k++) {
        int res = pc->qt->tracked[k];
        if (quota_used(pc->qt, r->gang->queue, r->flavor, res) >
            quota_nominal(pc->qt, r->gang->queue, r->flavor, res))
            return true;
    }
    return false;
}

/* Backfill on probation: may g evict the gangs that promised to be gone by its reservation's
 * first expected start and overran it? Only a gang that starves (waited starve_after_ms), holds
 * a starvation reservation and has at least probation_min_gpus GPUs. */
static bool overdue_preemptor(const struct preempt_ctx *pc, const struct gang *g)
{
    const struct sched_snapshot *snap = pc->snap;
    if (!pc->any_overdue || pc->probation_min_gpus == 0 || g->gpus < pc->probation_min_gpus ||
        snap->now_ms - g->submit_ms < pc->starve_after_ms)
        return false;
    for (uint32_t h = 0; h < snap->n_reserve_hints; h++)
        if (snap->reserve_hints[h].gang->id == g->id)
            return true;
    return false;
}

/* r is on probation for g (same queue, flavor f) and its promise has passed. */
static bool overdue_for(const struct preempt_ctx *pc, const struct sched_running *r,
                        const struct gang *g, uint32_t f)
{
    return r->probation_for && r->probation_for->id == g->id && r->probation_until_ms > 0 &&
           pc->snap->now_ms >= r->probation_until_ms && r->gang->queue == g->queue &&
           (!pc->snap->config || r->flavor == f);
}

/* May running gang r be a victim of g (queue q)? Sets its kind. */
static bool allowed(const struct preempt_ctx *pc, const struct sched_running *r,
                    const struct gang *g, uint32_t q, uint32_t f, const struct res_vec *need,
                    const struct res_vec *vreq, enum sched_preempt_kind *kind)
{
    const struct sched_snapshot *snap = pc->snap;
    const struct gang *v = r->gang;
    if (r->non_preemptible || r->evicting)
        return false;
    if (snap->now_ms < r->start_ms + r->min_runtime_ms) {
        if (pc->wake_ms) /* a victim from then on, maybe */
            sched_wake_at(pc->wake_ms, snap->now_ms, r->start_ms + r->min_runtime_ms);
        return false;
    }
    if (place_is_share(pc->st, v))
        return false; /* GPU shares free nothing in a trial (place_release): never a victim */
    if (pc->evicted_per_queue[v->queue] >= snap->policy->max_evictions)
        return false;
    if (overdue_for(pc, r, g, f) && overdue_preemptor(pc, g)) {
        *kind = SCHED_PREEMPT_OVERDUE;
        return true;
    }
    const struct config *cfg = snap->config;
    enum config_within_queue within = CONFIG_PREEMPT_LOWER_PRIORITY;
    enum config_reclaim reclaim = CONFIG_RECLAIM_ANY;
    if (cfg && q < cfg->n_queues) {
        within = cfg->queues[q].preemption.within_queue;
        reclaim = cfg->queues[q].preemption.reclaim;
        if (r->flavor != f)
            return false;
    }
    if (v->queue == q) {
        *kind = SCHED_PREEMPT_PRIORITY;
        if (within == CONFIG_PREEMPT_NEVER)
            return false;
        if (v->priority < g->priority)
            return true;
        /* newer = submitted later (a requeued gang keeps its submission time, so two gangs can
         * never each be newer than the other: no eviction loop) */
        return within == CONFIG_PREEMPT_LOWER_OR_NEWER_EQUAL && v->priority == g->priority &&
               (v->submit_ms > g->submit_ms || (v->submit_ms == g->submit_ms && v->id > g->id));
    }
    /* reclaim: the preemptor's queue stays within nominal, the victim's queue borrows */
    if (!pc->qt || reclaim == CONFIG_RECLAIM_NEVER)
        return false;
    if (reclaim == CONFIG_RECLAIM_LOWER_PRIORITY && v->priority >= g->priority)
        return false;
    if (!quota_same_tree(pc->qt, q, v->queue))
        return false; /* it borrowed from another cohort tree, not from ours */
    if (quota_within_nominal(pc->qt, q, f, need, true)) {
        *kind = SCHED_PREEMPT_RECLAIM;
        return true;
    }
    /* fair-share preemption between borrowing queues (opt-in per queue): allowed only when the
     * preemptor's queue, with the gang admitted, still has a strictly lower weighted share than
     * the victim's queue without the victim. The inequality cannot hold in both directions, so
     * two queues never preempt each other back and forth. */
    if (!cfg || !cfg->queues[q].preemption.fair_share || !victim_borrows(pc, r))
        return false;
    struct res_vec vn;
    for (int k = 0; k < res_count(); k++)
        vn.v[k] = -vreq->v[k];
    double mine = quota_share(pc->qt, q, f, need) / cfg->queues[q].weight;
    double theirs = quota_share(pc->qt, v->queue, r->flavor, &vn) / cfg->queues[v->queue].weight;
    if (!(mine < theirs))
        return false;
    *kind = SCHED_PREEMPT_FAIR_SHARE;
    return true;
}

/* Groups the running gangs by queue, with each queue's lowest priority. */
static int index_running(struct preempt_ctx *pc)
{
    const struct sched_snapshot *snap = pc->snap;
    uint32_t nq = snap->n_queues;
    pc->queue_first = arena_calloc(pc->arena, nq + 2, sizeof(*pc->queue_first));
    pc->min_prio = arena_alloc(pc->arena, (nq + 1) * sizeof(*pc->min_prio));
    pc->by_queue = arena_alloc(pc->arena, (snap->n_running + 1) * sizeof(*pc->by_queue));
    if (!pc->queue_first || !pc->min_prio || !pc->by_queue)
        return SCHED_ENOMEM;
    for (uint32_t v = 0; v <= nq; v++)
        pc->min_prio[v] = INT32_MAX;
    for (uint32_t i = 0; i < snap->n_running; i++) {
        uint32_t v = snap->running[i].gang->queue < nq ? snap->running[i].gang->queue : nq;
        pc->queue_first[v + 1]++;
        if (snap->running[i].gang->priority < pc->min_prio[v])
            pc->min_prio[v] = snap->running[i].gang->priority;
        int64_t promise = snap->running[i].probation_until_ms;
        pc->any_overdue |= promise > 0 && snap->now_ms >= promise;
        if (promise > 0 && pc->wake_ms) /* overdue from then on */
            sched_wake_at(pc->wake_ms, snap->now_ms, promise);
    }
    for (uint32_t v = 0; v <= nq; v++)
        pc->queue_first[v + 1] += pc->queue_first[v];
    uint32_t *at = arena_alloc(pc->arena, (nq + 1) * sizeof(*at));
    if (!at)
        return SCHED_ENOMEM;
    memcpy(at, pc->queue_first, (nq + 1) * sizeof(*at));
    for (uint32_t i = 0; i < snap->n_running; i++) {
        uint32_t v = snap->running[i].gang->queue < nq ? snap->running[i].gang->queue : nq;
        pc->by_queue[at[v]++] = i;
    }
    return 0;
}

/* true when allowed() rejects every running gang of queue v as a victim of g (queue q) for a
 * reason that holds for the whole queue: its settings, priorities all too high, another cohort
 * tree, or (nominal 0) g's queue would be beyond its nominal quota with g; nominal -1: not
 * known (the flavor is not). */
static bool skip_queue(const struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t v,
                       int nominal)
{
    const struct config *cfg = pc->snap->config;
    if (v >= pc->snap->n_queues)
        return false; /* unknown queue: let allowed() judge each */
    enum config_within_queue within = CONFIG_PREEMPT_LOWER_PRIORITY;
    enum config_reclaim reclaim = CONFIG_RECLAIM_ANY;
    if (cfg && q < cfg->n_queues) {
        within = cfg->queues[q].preemption.within_queue;
        reclaim = cfg->queues[q].preemption.reclaim;
    }
    int32_t low = pc->min_prio[v];
    if (v == q && overdue_preemptor(pc, g))
        return false; /* overdue backfill of its own queue may be a victim (allowed()) */
    if (v == q) {
        if (within == CONFIG_PREEMPT_NEVER)
            return true;
        if (within == CONFIG_PREEMPT_LOWER_OR_NEWER_EQUAL)
            return low > g->priority;
        return low >= g->priority;
    }
    if (!pc->qt || reclaim == CONFIG_RECLAIM_NEVER)
        return true;
    if (reclaim == CONFIG_RECLAIM_LOWER_PRIORITY && low >= g->priority)
        return true;
    if (!quota_same_tree(pc->qt, q, v))
        return true; /* it borrowed from another cohort tree, not from ours */
    /* beyond its nominal quota with g, the preemptor reclaims nothing; only fair share is left */
    return nominal == 0 && !(cfg && q < cfg->n_queues && cfg->queues[q].preemption.fair_share);
}

/* Some queue with running gangs could supply a victim of g (queue q). */
static bool any_queue(const struct preempt_ctx *pc, const struct gang *g, uint32_t q, int nominal)
{
    for (uint32_t v = 0; v <= pc->snap->n_queues; v++)
        if (pc->queue_first[v + 1] > pc->queue_first[v] && !skip_queue(pc, g, q, v, nominal))
            return true;
    return false;
}

/* Would queue q stay within its nominal quota on flavor f with `need` admitted (the reclaim
 * condition of allowed())? 1 or 0; -1 without quotas. */
static int within_nominal(const struct preempt_ctx *pc, uint32_t q, uint32_t f,
                          const struct res_vec *need)
{
    if (!pc->qt)
        return -1;
    return quota_within_nominal(pc->qt, q, f, need, true) ? 1 : 0;
}

bool preempt_alike(const struct preempt_ctx *pc, const struct gang *g, uint32_t q)
{
    const struct sched_snapshot *snap = pc->snap;
    const struct config *cfg = snap->config;
    if (cfg && q < cfg->n_queues &&
        cfg->queues[q].preemption.within_queue == CONFIG_PREEMPT_LOWER_OR_NEWER_EQUAL)
        return false;
    for (uint32_t h = 0; h < snap->n_holds; h++)
        if (snap->holds[h].gang->id == g->id)
            return false;
    for (uint32_t h = 0; h < snap->n_reserve_hints; h++)
        if (snap->reserve_hints[h].gang->id == g->id)
            return false;
    return true;
}

bool preempt_none(struct preempt_ctx *pc, const struct gang *g, uint32_t q)
{
    if (!pc->snap->policy->preempt || pc->snap->n_running == 0 || g->n_pods == 0)
        return true;
    if (!pc->by_queue && index_running(pc) != 0)
        return false; /* out of memory: the plan will say so */
    return !any_queue(pc, g, q, -1);
}

/* Reclaim is bounded: the victim's queue keeps at least its nominal quota without vn (what the
 * victim frees). A gang that took its queue over its nominal quota only in part (80 of 84
 * GPUs used, then 8 more) is beyond that bound, yet its queue borrows through it: with
 * pc->straddle a reclaim (not a fair-share preemption, whose preemptor borrows too) may take it
 * when its queue borrows the resource until then (the earlier victims of the plan gone), as
 * Kueue and KAI reclaim from a queue that is over its nominal quota. */
/* Would r's queue fall below its nominal quota of tracked resource k without vn? Sets *borrows
 * to whether it is over that quota now. */
static bool leaves_below(const struct preempt_ctx *pc, const struct sched_running *r,
                         const struct res_vec *vn, uint32_t k, bool *borrows)
{
    int res = pc->qt->tracked[k];
    int64_t held = quota_need_of(pc->qt, vn, res),
            used = quota_used(pc->qt, r->gang->queue, r->flavor, res),
            nom = quota_nominal(pc->qt, r->gang->queue, r->flavor, res);
    *borrows = used > nom;
    return held > 0 && used - held < nom;
}

static bool reclaim_bounded(struct preempt_ctx *pc, const struct sched_running *r,
                            enum sched_preempt_kind kind, const struct res_vec *vn)
{
    for (uint32_t k = 0; k < pc->qt->n_tracked; k++) {
        bool borrows;
        if (!leaves_below(pc, r, vn, k, &borrows))
            continue;
        pc->bound_hit |= kind == SCHED_PREEMPT_RECLAIM;
        if (!pc->straddle || kind != SCHED_PREEMPT_RECLAIM || !borrows)
            return false;
    }
    return true;
}

static bool quota_ok(const struct preempt_ctx *pc, uint32_t q, uint32_t f,
                     const struct res_vec *need)
{
    return !pc->qt || quota_check(pc->qt, q, f, need, NULL) <= QUOTA_BORROWS;
}

/* The pods candidate x frees in the set: skip[k] (NULL: none) marks those it leaves. */
static const uint8_t *cand_skip(const struct vset *vs, const struct cand *x, uint32_t *from,
                                uint32_t *to)
{
    if (x->pod != NO_POD) {
        *from = x->pod;
        *to = x->pod + 1;
        return NULL;
    }
    *from = 0;
    *to = UINT32_MAX;
    return vs->pod_at && vs->pod_at[x->idx] != NO_POD && vs->n_gone[x->idx] > 0
               ? vs->gone + vs->pod_at[x->idx]
               : NULL;
}

/* What candidate x frees in the set: its request (into acc) and its GPUs. */
static int64_t cand_request(const struct preempt_ctx *pc, const struct vset *vs,
                            const struct cand *x, struct res_vec *acc)
{
    const struct gang *g = pc->snap->running[x->idx].gang;
    uint32_t from, to;
    const uint8_t *skip = cand_skip(vs, x, &from, &to);
    if (!skip)
        return gang_pods_request(g, from, to, acc);
    memset(acc, 0, sizeof(*acc));
    int64_t gpus = 0;
    for (uint32_t s = 0, k = 0; s < g->n_sets; s++)
        for (uint32_t p = 0; p < g->sets[s].count; p++, k++)
            if (!skip[k]) {
                gang_pod_charge(&g->sets[s].req, 1, acc);
                gpus += g->sets[s].req.v[RES_GPU];
            }
    return gpus;
}

/* Does candidate x free something in domain d of the level (any domain: level < 0)? */
static bool cand_in(const struct preempt_ctx *pc, const struct vset *vs, const struct cand *x,
                    int level, uint32_t d)
{
    if (level < 0)
        return true;
    const struct sched_running *r = &pc->snap->running[x->idx];
    const struct cluster *cl = pc->st->c;
    uint32_t from, to;
    const uint8_t *skip = cand_skip(vs, x, &from, &to);
    for (uint32_t k = from; k < to && k < r->gang->n_pods; k++)
        if (!(skip && skip[k]) && r->pods[k].node < cl->n_nodes &&
            cl->nodes[r->pods[k].node].dom[level] == d)
            return true;
    return false;
}

/* Puts candidate x in the set (v 1) or takes it out (0). */
static void vset_put(struct vset *vs, uint32_t c, uint8_t v)
{
    const struct cand *x = &vs->c[c];
    vs->in[c] = v;
    if (x->pod != NO_POD) {
        vs->gone[vs->pod_at[x->idx] + x->pod] = v;
        vs->n_gone[x->idx] += v ? 1 : (uint32_t)-1;
    }
}

/* Frees (sign -1: releases the capacity and gives back the quota) or takes back the quota
 * (+1; the capacity comes back with place_release_undo) of the victims chosen[0 .. n) but
 * `skip` (n: none), as the set stands. false: out of memory. */
static bool apply_victims(struct preempt_ctx *pc, const struct vset *vs, const uint32_t *chosen,
                          uint32_t n, uint32_t skip, int sign)
{
    for (uint32_t j = 0; j < n; j++) {
        if (j == skip)
            continue;
        const struct cand *x = &vs->c[chosen[j]];
        const struct sched_running *r = &pc->snap->running[x->idx];
        uint32_t from, to;
        const uint8_t *keep = cand_skip(vs, x, &from, &to);
        if (sign < 0 && !place_release_pods(pc->st, r, from, to, keep))
            return false;
        if (pc->qt) {
            struct res_vec vn;
            cand_request(pc, vs, x, &vn);
            quota_charge(pc->qt, r->gang->queue, r->flavor, &vn, sign);
        }
    }
    return true;
}

/* The cost of the victims chosen[0 .. n), as the set stands, and how fast it grows (GPUs x the
 * priority weight: lost work per second since the last checkpoint). Members an inference gang
 * (spread) loses cost their share of its GPUs; members a training gang loses cost its whole
 * cost, once: its other workers go back to its last checkpoint too (torchrun and Ray Train
 * restart every worker when one leaves), but it runs on, never requeued. */
static double set_cost(const struct preempt_ctx *pc, const struct vset *vs, const uint32_t *chosen,
                       uint32_t n, double *grow)
{
    double cost = 0;
    *grow = 0;
    for (uint32_t j = 0; j < n; j++) {
        const struct cand *x = &vs->c[chosen[j]];
        const struct gang *g = pc->snap->running[x->idx].gang;
        double w = 1.0 + 0.1 * (double)(g->priority > 0 ? g->priority : 0);
        bool members = vs->n_gone && vs->n_gone[x->idx] > 0;
        if (!g->spread && members) { /* a training gang's members: its whole cost, once */
            bool first = x->pod != NO_POD;
            for (uint32_t k = 0; k < j && first; k++)
                first = vs->c[chosen[k]].idx != x->idx;
            cost += first ? x->cost : 0;
            *grow += first ? (double)g->gpus * w : 0;
            continue;
        }
        struct res_vec vn;
        double gpus = (double)cand_request(pc, vs, x, &vn);
        cost += g->gpus > 0 ? x->cost * gpus / (double)g->gpus : x->cost;
        *grow += gpus * w;
    }
    return cost;
}

/* The level whose domains the preemptor should be placed in: the tightest that holds its GPUs. */
static int target_level(const struct place_state *st, const struct gang *g)
{
    if (g->topo_required >= 0)
        return g->topo_required;
    int node = (int)st->c->topo.n_levels - 1;
    if (g->gpus == 0 || podaff_gang(g)) {
        /* no GPUs to size a domain by, or pods that constrain one another: one node when the
         * whole gang fits the largest, else the whole cluster (the placement decides) */
        struct res_vec need;
        gang_request(g, &need);
        return node >= 0 && res_fits(&need, &st->max_alloc) ? node : -1;
    }
    for (int l = node; l >= 0; l--)
        if (!st->level_is_nodes[l] && st->level_max_gpus[l] >= g->gpus)
            return l;
    return -1;
}

/* Victims freed inside domain d so that g fits there; fills chosen[] (indices into vs->c, in
 * freeing order) and returns how many, or 0 when the domain cannot be made to fit; *cost and
 * *grow as set_cost. vs is empty on entry and on return. The working state is restored before
 * returning. */
static uint32_t plan_domain(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                            const struct res_vec *need, int level, uint32_t d, struct vset *vs,
                            uint32_t *chosen, struct sched_assign *trial, double *cost,
                            double *grow)
{
    struct place_state *st = pc->st;
    const struct sched_running *run = pc->snap->running;
    uint32_t mark = st->n_rel, n = 0;
    bool fits = false, oom = false;
    /* pass 0: victims inside the domain (they free room and quota); pass 1, only when the room
     * is there by then and the quota is what is missing: victims anywhere else in the tree */
    for (int pass = 0; pass < 2 && !fits && !oom; pass++) {
        if (pass == 1 && !(pc->qt && place_trial(st, g, level, d, trial)))
            break;
        bool listed = pass == 0 && vs->dom_first && level >= 0; /* the domain's own only */
        uint32_t k0 = listed ? vs->dom_first[d] : 0, k1 = listed ? vs->dom_first[d + 1] : vs->n;
        for (uint32_t k = k0; k < k1 && !fits; k++) {
            uint32_t c = listed ? vs->dom_list[k] : k;
            const struct cand *x = &vs->c[c];
            const struct sched_running *r = &run[x->idx];
            if (vs->in[c] || (x->pod != NO_POD && ((x->sib != NO_SIB && vs->in[x->sib]) ||
                                                   vs->n_gone[x->idx] >= spare_pods(r->gang))))
                continue; /* a member of a gang that goes whole, or down to its minMember */
            if (cand_in(pc, vs, x, level, d) != (pass == 0))
                continue;
            struct res_vec vn;
            cand_request(pc, vs, x, &vn);
            if (x->kind != SCHED_PREEMPT_PRIORITY && x->kind != SCHED_PREEMPT_OVERDUE &&
                !reclaim_bounded(pc, r, x->kind, &vn))
                continue;
            uint32_t from, to;
            const uint8_t *skip = cand_skip(vs, x, &from, &to);
            if ((oom = !place_release_pods(st, r, from, to, skip)))
                break;
            if (pc->qt)
                quota_charge(pc->qt, r->gang->queue, r->flavor, &vn, -1);
            vset_put(vs, c, 1);
            chosen[n++] = c;
            fits = quota_ok(pc, q, f, need) && place_trial(st, g, level, d, trial);
        }
    }
    if (fits) {
        /* fill-back: keep running every victim whose capacity turns out unnecessary (the last
         * one freed is needed by construction); each trial frees the others from scratch, as
         * what a whole gang frees depends on its members taken alone */
        for (uint32_t k = n - 1; k-- > 0 && !oom;) {
            place_release_undo(st, mark);
            apply_victims(pc, vs, chosen, n, n, +1);
            vset_put(vs, chosen[k], 0);
            oom = !apply_victims(pc, vs, chosen, n, k, -1);
            if (!oom && quota_ok(pc, q, f, need) && place_trial(st, g, level, d, trial)) {
                memmove(&chosen[k], &chosen[k + 1], (n - k - 1) * sizeof(*chosen));
                n--; /* not needed: stays running */
                continue;
            }
            place_release_undo(st, mark);
            apply_victims(pc, vs, chosen, n, k, +1);
            vset_put(vs, chosen[k], 1);
            oom = oom || !apply_victims(pc, vs, chosen, n, n, -1);
        }
        fits = !oom && place_trial(st, g, level, d, trial); /* the placement it will hold */
    }
    *cost = set_cost(pc, vs, chosen, n, grow);
    place_release_undo(st, mark);
    apply_victims(pc, vs, chosen, n, n, +1);
    for (uint32_t j = 0; j < n; j++)
        vset_put(vs, chosen[j], 0);
    pc->oom |= oom; /* the quota may be off now: the plan fails (SCHED_ENOMEM) */
    return fits ? n : 0;
}

/* Running gang i's candidates (each member alone first, when it is elastic), appended at
 * cands + n. Returns how many. */
static uint32_t gang_cands(const struct preempt_ctx *pc, uint32_t i, const struct gang *g,
                           uint32_t q, uint32_t f, const struct res_vec *need, struct cand *cands,
                           uint32_t n)
{
    const struct sched_snapshot *snap = pc->snap;
    const struct sched_running *r = &snap->running[i];
    const struct gang *v = r->gang;
    uint32_t n0 = n;
    double cost = preempt_cost(r, snap->now_ms);
    bool members = spare_pods(v) > 0 && !place_is_share(pc->st, v);
    struct res_vec vreq;
    enum sched_preempt_kind kind;
    /* the members alone (those that hold GPUs), then the whole gang (pod NO_POD) */
    for (uint32_t k = members ? 0 : v->n_pods; k <= v->n_pods; k++) {
        uint32_t pod = k < v->n_pods ? k : NO_POD;
        int64_t gpus =
            gang_pods_request(v, pod == NO_POD ? 0 : k, pod == NO_POD ? v->n_pods : k + 1, &vreq);
        if ((pod != NO_POD && gpus <= 0) || !allowed(pc, r, g, q, f, need, &vreq, &kind))
            continue;
        /* checkpoint-aware: least lost work first (ties: fewer GPUs); blind, as Kueue: lowest
         * priority first, then most recently started (a gang's members before it: cmp_cand) */
        double lost = v->gpus > 0 && (pod == NO_POD || v->spread)
                          ? cost * (double)gpus / (double)v->gpus
                          : cost; /* a training gang's member: the whole gang restarts (set_cost) */
        double key = snap->policy->checkpoint_aware
                         ? lost + (double)gpus * 1e-6
                         : (double)v->priority * 1e15 - (double)r->start_ms;
        cands[n++] = (struct cand){.idx = i,
                                   .id = v->id,
                                   .kind = kind,
                                   .pod = pod,
                                   .sib = NO_SIB,
                                   .key = key,
                                   .cost = cost};
    }
    return n - n0;
}

/* Links each member candidate to its gang's whole one and makes the set's member flags. */
static int link_members(struct preempt_ctx *pc, struct vset *vs, struct cand *cands, uint32_t n)
{
    const struct sched_snapshot *snap = pc->snap;
    uint32_t nr = snap->n_running + 1, *whole = arena_alloc(pc->arena, nr * sizeof(*whole));
    vs->pod_at = arena_alloc(pc->arena, nr * sizeof(*vs->pod_at));
    vs->n_gone = arena_calloc(pc->arena, nr, sizeof(*vs->n_gone));
    if (!whole || !vs->pod_at || !vs->n_gone)
        return SCHED_ENOMEM;
    memset(whole, 0xff, nr * sizeof(*whole));           /* NO_SIB */
    memset(vs->pod_at, 0xff, nr * sizeof(*vs->pod_at)); /* NO_POD */
    size_t pods = 0;
    for (uint32_t c = 0; c < n; c++) {
        if (cands[c].pod == NO_POD)
            whole[cands[c].idx] = c;
        else if (vs->pod_at[cands[c].idx] == NO_POD) {
            vs->pod_at[cands[c].idx] = (uint32_t)pods;
            pods += snap->running[cands[c].idx].gang->n_pods;
        }
    }
    for (uint32_t c = 0; c < n; c++)
        if (cands[c].pod != NO_POD)
            cands[c].sib = whole[cands[c].idx];
    vs->gone = arena_calloc(pc->arena, pods + 1, 1);
    return vs->gone ? 0 : SCHED_ENOMEM;
}

/* The candidates for victims of g (queue q, flavor f), in victim order (sorted by a total
 * order: the same list whatever order they are found in), into vs (empty). Returns 0 or
 * SCHED_ENOMEM. */
static int collect_cands(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                         const struct res_vec *need, int nominal, struct vset *vs)
{
    const struct sched_snapshot *snap = pc->snap;
    size_t cap = snap->n_running + 1;
    for (uint32_t i = 0; i < snap->n_running; i++) /* an elastic gang's members, one each */
        cap += spare_pods(snap->running[i].gang) ? snap->running[i].gang->n_pods : 0;
    struct cand *cands = arena_alloc(pc->arena, cap * sizeof(*cands));
    if (!cands)
        return SCHED_ENOMEM;
    uint32_t n = 0;
    bool members = false;
    for (uint32_t v = 0; v <= snap->n_queues; v++) {
        if (skip_queue(pc, g, q, v, nominal))
            continue;
        for (uint32_t x = pc->queue_first[v]; x < pc->queue_first[v + 1]; x++) {
            uint32_t i = pc->by_queue[x];
            if (pc->chosen[i])
                continue;
            uint32_t k = gang_cands(pc, i, g, q, f, need, cands, n);
            members |= k > 1;
            n += k;
        }
    }
    qsort(cands, n, sizeof(*cands), cmp_cand);
    *vs = (struct vset){.c = cands, .n = n, .in = arena_calloc(pc->arena, n + 1, 1)};
    if (!vs->in)
        return SCHED_ENOMEM;
    return members ? link_members(pc, vs, cands, n) : 0;
}

/* The cheapest victim set of one gang over the candidate domains, and its placement. */
struct plan {
    uint32_t n;                 /* victims chosen (0: no domain works) */
    uint32_t *best;             /* [n]: indexes into the candidates */
    struct sched_assign *trial; /* [g->n_pods]: the placement the preemptor will hold */
    double cost;                /* the victims' cost (set_cost) */
    double grow;                /* and how fast it grows */
};

/* When no domain of the target level can be cleared: overdue backfill alone (whole gangs of
 * kind SCHED_PREEMPT_OVERDUE), freed anywhere in the cluster, as a gang without a required
 * level may span domains. Fills pl (indexes into vs->c) or leaves pl->n 0. */
static int overdue_plan(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                        const struct res_vec *need, const struct vset *vs, uint32_t *chosen,
                        struct sched_assign *trial, struct plan *pl)
{
    struct cand *od = NULL;
    struct vset ov = {.in = vs->in};
    for (uint32_t c = 0; c < vs->n; c++) {
        if (vs->c[c].kind != SCHED_PREEMPT_OVERDUE || vs->c[c].pod != NO_POD)
            continue; /* whole gangs: a backfill that broke its promise leaves */
        if (!od && !(od = arena_alloc(pc->arena, vs->n * sizeof(*od))))
            return SCHED_ENOMEM;
        od[ov.n++] = vs->c[c]; /* still in victim order */
    }
    ov.c = od;
    double cost, grow;
    uint32_t n = ov.n ? plan_domain(pc, g, q, f, need, -1, 0, &ov, chosen, trial, &cost, &grow) : 0;
    for (uint32_t j = 0; j < n; j++) { /* back to indexes into vs->c */
        uint32_t c = 0;
        while (vs->c[c].idx != od[chosen[j]].idx || vs->c[c].pod != NO_POD)
            c++;
        pl->best[j] = c;
    }
    if (n > 0) {
        pl->n = n;
        pl->cost = cost;
        pl->grow = grow;
        memcpy(pl->trial, trial, g->n_pods * sizeof(*trial));
    }
    return 0;
}

/* Tries each target domain that has victims (or room, when only quota is missing), in the
 * order of preempt_dom_order, and keeps the plan of least score: its cost plus the domain's
 * place in the placement order, within order_bias_gpu_s (ties: the lowest index). The blind
 * baseline stops at the first domain that works. */
static int best_plan(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                     const struct res_vec *need, struct vset *vs, struct plan *pl)
{
    const struct sched_snapshot *snap = pc->snap;
    const struct sched_policy *pol = snap->policy;
    struct place_state *st = pc->st;
    uint32_t *chosen = arena_alloc(pc->arena, (vs->n + 1) * sizeof(*chosen));
    struct sched_assign *trial = arena_alloc(pc->arena, (g->n_pods + 1) * sizeof(*trial));
    pl->best = arena_alloc(pc->arena, (vs->n + 1) * sizeof(*pl->best));
    pl->trial = arena_alloc(pc->arena, (g->n_pods + 1) * sizeof(*pl->trial));
    pl->n = 0;
    pl->cost = pl->grow = 0;
    if (!chosen || !trial || !pl->best || !pl->trial)
        return SCHED_ENOMEM;
    int level = target_level(st, g);
    uint32_t n_domains = level >= 0 ? st->c->topo.levels[level].n_domains : 1;
    struct preempt_doms o;
    if ((level >= 0 && preempt_index_domains(pc, vs, level) != 0) ||
        preempt_dom_order(pc, g, vs, level, &o) != 0)
        return SCHED_ENOMEM;
    double best_score = 0;
    uint32_t best_d = 0;
    for (uint32_t i = 0, tried = 0; i < o.n && tried < PREEMPT_MAX_DOMAINS; i++) {
        uint32_t d = o.d ? o.d[i] : i;
        if (o.d && pl->n > 0 && o.bound[i] > best_score + 1e-9 * fmax(1.0, fabs(best_score)))
            break; /* no domain left can beat the plan found */
        bool any = level < 0 ? vs->n > 0 : vs->dom_first[d + 1] > vs->dom_first[d];
        /* a domain without victims can still do, when it has the room and only quota is
         * missing (victims elsewhere free the quota) */
        if (!any && !(pc->qt && place_trial(st, g, level, d, trial)))
            continue;
        tried++;
        double cost, grow;
        uint32_t n = plan_domain(pc, g, q, f, need, level, d, vs, chosen, trial, &cost, &grow);
        /* the domain's place in the placement engine's order weighs in, within the bias:
         * preemption then packs where placement packs (docs/preemption.md, "Where") */
        double score = cost + pol->order_bias_gpu_s * (double)d / (double)n_domains;
        if (n == 0 || (pl->n > 0 && (score > best_score || (score == best_score && d > best_d))))
            continue;
        pl->n = n;
        pl->cost = cost;
        pl->grow = grow;
        best_score = score;
        best_d = d;
        memcpy(pl->best, chosen, n * sizeof(*pl->best));
        memcpy(pl->trial, trial, g->n_pods * sizeof(*trial));
        if (!pol->checkpoint_aware)
            break; /* the blind baseline takes the first domain that works */
    }
    if (pl->n == 0 && level >= 0 && g->topo_required < 0)
        return overdue_plan(pc, g, q, f, need, vs, chosen, trial, pl);
    return 0;
}

/* Does freeing pods only ever help g? Not when g has a topology spread of its own (a freed pod
 * may lower the emptiest domain's count) or a required affinity term selecting a candidate's
 * pods (freeing it may take away the pod g asks for). */
static bool freeing_only_helps(const struct preempt_ctx *pc, const struct gang *g,
                               const struct vset *vs)
{
    for (uint32_t s = 0; s < g->n_sets; s++) {
        const struct pod_meta *m = g->sets[s].meta;
        if (m && m->n_spread)
            return false;
        for (uint32_t c = 0; m && m->n_affinity && c < vs->n; c++) {
            const struct gang *v = pc->snap->running[vs->c[c].idx].gang;
            for (uint32_t vsi = 0; vsi < v->n_sets; vsi++)
                for (uint32_t t = 0; v->sets[vsi].meta && t < m->n_affinity; t++)
                    if (podaff_selects(&m->affinity[t], m->ns, v->sets[vsi].meta))
                        return false;
        }
    }
    return true;
}

/* Can no victim set do, since g does not fit anywhere even with every candidate gone (what it
 * lacks is not what victims free: a node filter, a rule of pods that stay)? One trial instead
 * of one per domain and victim, as kube-scheduler's preemption first removes every
 * lower-priority pod of a node and passes the node over when the pod still does not fit. Only
 * where freeing pods only helps; room only (the quota is the plan's). Asked for gangs with pod
 * rules, whose trials cost a pass over the nodes each: a release and its undo put the nodes
 * back in their free-GPU buckets in another order, so asking it for every gang would change
 * which of equal nodes later gangs take. */
static bool none_can_help(struct preempt_ctx *pc, const struct gang *g, const struct vset *vs)
{
    if (!podaff_gang(g) || !freeing_only_helps(pc, g, vs))
        return false;
    struct sched_assign *trial = arena_alloc(pc->arena, (g->n_pods + 1) * sizeof(*trial));
    if (!trial) {
        pc->oom = true;
        return false;
    }
    struct place_state *st = pc->st;
    uint32_t mark = st->n_rel;
    for (uint32_t c = 0; c < vs->n; c++) {
        const struct cand *x = &vs->c[c];
        if (x->pod != NO_POD && x->sib != NO_SIB)
            continue; /* a member of a gang whose whole is a candidate: freed with it */
        uint32_t from = x->pod == NO_POD ? 0 : x->pod,
                 to = x->pod == NO_POD ? UINT32_MAX : from + 1;
        if (!place_release_pods(st, &pc->snap->running[x->idx], from, to, NULL)) {
            pc->oom = true;
            place_release_undo(st, mark);
            return false;
        }
    }
    bool fits = place_trial(st, g, -1, 0, trial);
    place_release_undo(st, mark);
    return !fits;
}

/* Whether evicting by priority pays: a gang that outranks its victims is worth at least
 * PREEMPT_MIN_WAIT_S of waiting; its benefit (GPUs x wait x priority bonus) must reach
 * benefit_factor times the victims' cost. Reclaims always pay. */
static bool worth_it(struct preempt_ctx *pc, const struct gang *g, const struct cand *cands,
                     const struct plan *pl)
{
    const struct sched_snapshot *snap = pc->snap;
    bool priority_kind = false;
    for (uint32_t j = 0; j < pl->n; j++)
        priority_kind |= cands[pl->best[j]].kind == SCHED_PREEMPT_PRIORITY;
    if (!priority_kind || snap->policy->benefit_factor <= 0)
        return true;
    double wait_s = (double)(snap->now_ms - g->submit_ms) / 1000.0;
    int32_t p = g->priority > 0 ? g->priority : 0;
    double rate = (double)g->gpus * (1.0 + 0.1 * (double)p); /* benefit per second waited */
    double benefit = rate * (wait_s > PREEMPT_MIN_WAIT_S ? wait_s : PREEMPT_MIN_WAIT_S);
    double factor = snap->policy->benefit_factor;
    if (benefit >= factor * pl->cost)
        return true;
    /* When it would pay, both growing as now: the benefit by `rate` (past PREEMPT_MIN_WAIT_S,
     * which it is not short of then: the benefit at PREEMPT_MIN_WAIT_S is below the cost, and
     * the cost only grows), the victims' cost by their GPUs (x priority) per second since their
     * last checkpoint. Never when the cost grows as fast. */
    double grow = pl->grow;
    if (pc->wake_ms && rate > factor * grow) {
        /* in whole seconds, rounded up: at that instant it pays */
        double dt_s = ceil((factor * pl->cost - rate * wait_s) / (rate - factor * grow));
        if (dt_s < 3.0e7) { /* within a year: an instant worth a cycle */
            pc->pays_at_ms = snap->now_ms + (int64_t)(dt_s > 1 ? dt_s : 1) * 1000;
            sched_wake_at(pc->wake_ms, snap->now_ms, pc->pays_at_ms);
        }
    }
    return false;
}

/* The eviction of candidate x of the plan (vs holding the plan's victims): its whole gang, or
 * the members of it the plan takes alone (all at once, at the first of them). false: nothing
 * to add (a member of a gang that goes whole, or whose members are out already). Gives back
 * the quota of what it evicts. */
static bool plan_eviction(struct preempt_ctx *pc, const struct gang *g, const struct vset *vs,
                          const struct cand *x, struct sched_eviction *ev)
{
    const struct sched_running *r = &pc->snap->running[x->idx];
    const struct gang *v = r->gang;
    if (x->pod != NO_POD && ((x->sib != NO_SIB && vs->in[x->sib]) || pc->chosen[x->idx]))
        return false;
    double lost = preempt_lost_gpu_s(r, pc->snap->now_ms), share = 1;
    *ev = (struct sched_eviction){.victim = r, .preemptor = g, .kind = x->kind, .gpus = v->gpus};
    struct res_vec vn, one;
    if (x->pod == NO_POD) {
        gang_request(v, &vn);
    } else {
        uint32_t *pods = arena_alloc(pc->arena, vs->n_gone[x->idx] * sizeof(*pods));
        if (!pods)
            return pc->oom = true, false;
        memset(&vn, 0, sizeof(vn));
        int64_t gpus = 0;
        for (uint32_t k = 0; k < v->n_pods; k++)
            if (vs->gone[vs->pod_at[x->idx] + k]) {
                pods[ev->n_pods++] = k;
                gpus += gang_pods_request(v, k, k + 1, &one);
                res_add(&vn, &one);
            }
        ev->pods = pods;
        ev->gpus = gpus;
        share = v->gpus > 0 && v->spread ? (double)gpus / (double)v->gpus : 1; /* set_cost */
    }
    ev->lost_gpu_s = lost * share;
    ev->cost = x->cost * share;
    bool borrows;
    for (uint32_t k = 0; pc->qt && x->kind == SCHED_PREEMPT_RECLAIM && k < pc->qt->n_tracked; k++)
        ev->below_nominal |= leaves_below(pc, r, &vn, k, &borrows);
    if (pc->qt)
        quota_charge(pc->qt, v->queue, r->flavor, &vn, -1);
    pc->chosen[x->idx] = 1;
    pc->evicted_per_queue[v->queue]++;
    return true;
}

/* Commits a plan: its evictions, and a hold on the preemptor's trial placement. */
static int commit_plan(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                       const struct res_vec *need, struct vset *vs, const struct plan *pl,
                       struct sched_result *out, uint32_t *cap_evictions,
                       uint32_t *cap_reservations)
{
    const struct sched_snapshot *snap = pc->snap;
    for (uint32_t j = 0; j < pl->n; j++)
        vset_put(vs, pl->best[j], 1);
    for (uint32_t j = 0; j < pl->n && !pc->oom; j++) {
        struct sched_eviction ev;
        if (!plan_eviction(pc, g, vs, &vs->c[pl->best[j]], &ev))
            continue;
        struct sched_eviction *e =
            arena_grow(pc->arena, out->evictions, out->n_evictions, cap_evictions, sizeof(*e));
        if (!e)
            return SCHED_ENOMEM;
        out->evictions = e;
        out->evictions[out->n_evictions++] = ev;
    }
    for (uint32_t j = 0; j < pl->n; j++)
        vset_put(vs, pl->best[j], 0);
    if (pc->oom)
        return SCHED_ENOMEM;
    uint32_t *nodes = arena_alloc(pc->arena, (g->n_pods + 1) * sizeof(*nodes));
    if (!nodes)
        return SCHED_ENOMEM;
    uint32_t n_nodes = 0;
    for (uint32_t k = 0; k < g->n_pods; k++) {
        bool dup = false;
        for (uint32_t j = 0; j < n_nodes && !dup; j++)
            dup = nodes[j] == pl->trial[k].node;
        if (!dup)
            nodes[n_nodes++] = pl->trial[k].node;
    }
    /* The rest of this cycle sees the plan: the victims' quota is on its way back and the
     * preemptor's is spoken for (so a second reclaim cannot take a queue below its nominal),
     * and the nodes the preemptor will use are held for it (so no other gang, and no other
     * preemptor, counts on the same capacity). */
    if (pc->qt) /* the victims' quota was given back above */
        quota_charge(pc->qt, q, f, need, +1);
    place_hold_for(pc->st, g, nodes, n_nodes);
    struct sched_reservation *rv = arena_grow(pc->arena, out->reservations, out->n_reservations,
                                              cap_reservations, sizeof(*rv));
    if (!rv)
        return SCHED_ENOMEM;
    out->reservations = rv;
    out->reservations[out->n_reservations++] =
        (struct sched_reservation){.gang = g,
                                   .preemptor = true,
                                   .nodes = nodes,
                                   .n_nodes = n_nodes,
                                   .expected_start_ms = snap->now_ms};
    return 0;
}

/* Whether the victims of hold h are still leaving: a running gang being evicted (r->evicting)
 * has a pod on one of its nodes. A hold marked replan (restored by a new leader from the
 * handshakes it resumed, without what else the plan counted on) waits only for those: then its
 * preemptor plans again, its held nodes counted as its own. A scan of the running gangs per
 * such hold (rare). */
static bool hold_leaving(const struct sched_snapshot *snap, const struct sched_hold *h)
{
    for (uint32_t i = 0; i < snap->n_running; i++) {
        const struct sched_running *r = &snap->running[i];
        for (uint32_t p = 0; r->evicting && p < r->gang->n_pods; p++)
            for (uint32_t k = 0; k < h->n_nodes; k++)
                if (r->pods[p].node == h->nodes[k])
                    return true;
    }
    return false;
}

int preempt_plan(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                 struct sched_result *out, uint32_t *cap_evictions, uint32_t *cap_reservations,
                 bool *planned)
{
    const struct sched_snapshot *snap = pc->snap;
    *planned = false;
    pc->bound_waits = pc->class_none = false;
    pc->pays_at_ms = 0;
    if (!snap->policy->preempt || snap->n_running == 0 || g->n_pods == 0)
        return 0;
    for (uint32_t h = 0; h < snap->n_holds; h++)
        if (snap->holds[h].gang->id == g->id &&
            (!snap->holds[h].replan || hold_leaving(snap, &snap->holds[h])))
            return 0; /* its victims are still leaving: wait for them, evict nobody else */
    if (!pc->by_queue && index_running(pc) != 0)
        return SCHED_ENOMEM;
    struct res_vec need;
    gang_request(g, &need);
    int nominal = within_nominal(pc, q, f, &need);
    pc->class_none = true; /* until g's own wait decides (below) */
    if (!any_queue(pc, g, q, nominal))
        return 0; /* no running gang could be a victim of g */
    /* at most two per running gang: an elastic gang's shrink and the gang */
    struct vset vs;
    int rc = collect_cands(pc, g, q, f, &need, nominal, &vs);
    if (rc != 0 || vs.n == 0)
        return rc;
    if (none_can_help(pc, g, &vs))
        return 0;
    if (pc->oom)
        return SCHED_ENOMEM;
    struct plan pl;
    pc->straddle = pc->bound_hit = false;
    rc = best_plan(pc, g, q, f, &need, &vs, &pl);
    pc->class_none = rc == 0 && pl.n == 0 && !pc->bound_hit;
    if (rc == 0 && pl.n == 0 && pc->bound_hit) {
        /* no plan within reclaim's bound: once g has waited starvation.after, one may take a
         * borrowing queue below its nominal quota (reclaim_bounded) */
        int64_t from_ms = g->submit_ms + pc->starve_after_ms;
        if (pc->starve_after_ms > 0 && snap->now_ms >= from_ms) {
            pc->straddle = true;
            rc = best_plan(pc, g, q, f, &need, &vs, &pl);
            pc->straddle = false;
        } else {
            pc->bound_waits = true;
            if (pc->starve_after_ms > 0 && pc->wake_ms)
                sched_wake_at(pc->wake_ms, snap->now_ms, from_ms);
        }
    }
    if (rc == 0 && pc->oom)
        rc = SCHED_ENOMEM;
    if (rc != 0 || pl.n == 0 || !worth_it(pc, g, vs.c, &pl))
        return rc;
    rc = commit_plan(pc, g, q, f, &need, &vs, &pl, out, cap_evictions, cap_reservations);
    *planned = rc == 0;
    return rc;
}
