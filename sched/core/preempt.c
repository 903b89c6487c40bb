/* sched/core/preempt.c: the preemption planner (see preempt.h for the rules and formulas). */
#include "sched/core/preempt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/policy.h"

#define MAX_DOMAINS        512    /* domains evaluated per preemptor and cycle (bounded work) */
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

struct cand {
    uint32_t idx; /* into snap->running */
    uint32_t id;  /* the victim gang's id: ties never depend on the order of snap->running */
    enum sched_preempt_kind kind;
    double key; /* sort key, lower first */
    double cost;
};

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->id < y->id ? -1 : (x->id > y->id);
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
                    enum sched_preempt_kind *kind)
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
    gang_request(v, &vn);
    for (int k = 0; k < res_count(); k++)
        vn.v[k] = -vn.v[k];
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

bool preempt_none(struct preempt_ctx *pc, const struct gang *g, uint32_t q)
{
    if (!pc->snap->policy->preempt || pc->snap->n_running == 0 || g->n_pods == 0)
        return true;
    if (!pc->by_queue && index_running(pc) != 0)
        return false; /* out of memory: the plan will say so */
    return !any_queue(pc, g, q, -1);
}

/* Reclaim is bounded: the victim's queue keeps at least its nominal quota. */
static bool reclaim_bounded(const struct preempt_ctx *pc, const struct sched_running *r)
{
    const struct gang *v = r->gang;
    struct res_vec vn;
    gang_request(v, &vn);
    for (uint32_t k = 0; k < pc->qt->n_tracked; k++) {
        int res = pc->qt->tracked[k];
        int64_t held = quota_need_of(pc->qt, &vn, res);
        if (held <= 0)
            continue;
        if (quota_used(pc->qt, v->queue, r->flavor, res) - held <
            quota_nominal(pc->qt, v->queue, r->flavor, res))
            return false;
    }
    return true;
}

static bool has_pod_in(const struct place_state *st, const struct sched_running *r, int level,
                       uint32_t d)
{
    if (level < 0)
        return true;
    for (uint32_t k = 0; k < r->gang->n_pods; k++)
        if (r->pods[k].node < st->c->n_nodes && st->c->nodes[r->pods[k].node].dom[level] == d)
            return true;
    return false;
}

static bool quota_ok(const struct preempt_ctx *pc, uint32_t q, uint32_t f,
                     const struct res_vec *need)
{
    return !pc->qt || quota_check(pc->qt, q, f, need, NULL) <= QUOTA_BORROWS;
}

static void charge_victim(struct preempt_ctx *pc, const struct sched_running *r, int sign)
{
    if (!pc->qt)
        return;
    struct res_vec vn;
    gang_request(r->gang, &vn);
    quota_charge(pc->qt, r->gang->queue, r->flavor, &vn, sign);
}

/* The level whose domains the preemptor should be placed in. */
static int target_level(const struct place_state *st, const struct gang *g)
{
    if (g->topo_required >= 0)
        return g->topo_required;
    for (int l = (int)st->c->topo.n_levels - 1; l >= 0; l--)
        if (!st->level_is_nodes[l] && st->level_max_gpus[l] >= g->gpus)
            return l;
    return -1;
}

/* Victims freed inside domain d so that g fits there; fills chosen[] (indices into cands, in
 * freeing order) and returns how many, or 0 when the domain cannot be made to fit. The working
 * state is restored before returning. */
static uint32_t plan_domain(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                            const struct res_vec *need, int level, uint32_t d,
                            const struct cand *cands, uint32_t n_cands, uint32_t *chosen,
                            struct sched_assign *trial, double *cost)
{
    struct place_state *st = pc->st;
    const struct sched_running *run = pc->snap->running;
    uint32_t mark = st->n_rel, n = 0;
    bool fits = false;
    /* pass 0: victims inside the domain (they free room and quota); pass 1, only when the room
     * is there by then and the quota is what is missing: victims anywhere else in the tree */
    for (int pass = 0; pass < 2 && !fits; pass++) {
        if (pass == 1 && !(pc->qt && place_trial(st, g, level, d, trial)))
            break;
        for (uint32_t c = 0; c < n_cands && !fits; c++) {
            const struct sched_running *r = &run[cands[c].idx];
            if (has_pod_in(st, r, level, d) != (pass == 0))
                continue;
            if (cands[c].kind != SCHED_PREEMPT_PRIORITY && cands[c].kind != SCHED_PREEMPT_OVERDUE &&
                !reclaim_bounded(pc, r))
                continue;
            if (!place_release(st, r))
                break;
            charge_victim(pc, r, -1);
            chosen[n++] = c;
            fits = quota_ok(pc, q, f, need) && place_trial(st, g, level, d, trial);
        }
    }
    if (fits) {
        /* fill-back: keep running every victim whose capacity turns out unnecessary (the last
         * one freed is needed by construction) */
        for (uint32_t k = n - 1; k-- > 0;) {
            const struct sched_running *r = &run[cands[chosen[k]].idx];
            place_release_undo(st, mark);
            charge_victim(pc, r, +1);
            for (uint32_t j = 0; j < n; j++)
                if (j != k)
                    place_release(st, &run[cands[chosen[j]].idx]);
            if (quota_ok(pc, q, f, need) && place_trial(st, g, level, d, trial)) {
                memmove(&chosen[k], &chosen[k + 1], (n - k - 1) * sizeof(*chosen));
                n--; /* not needed: stays running (its quota is already back) */
            } else {
                charge_victim(pc, r, -1);
            }
        }
        place_release_undo(st, mark);
        for (uint32_t j = 0; j < n; j++)
            place_release(st, &run[cands[chosen[j]].idx]);
        fits = place_trial(st, g, level, d, trial); /* the placement the preemptor will hold */
    }
    *cost = 0;
    for (uint32_t j = 0; j < n; j++)
        *cost += cands[chosen[j]].cost;
    for (uint32_t j = 0; j < n; j++)
        charge_victim(pc, &run[cands[chosen[j]].idx], +1);
    place_release_undo(st, mark);
    return fits ? n : 0;
}

/* The running gangs that may be victims of g (queue q, flavor f), in victim order (sorted by a
 * total order: the same list whatever order they are found in). Returns their count. */
static uint32_t collect_cands(const struct preempt_ctx *pc, const struct gang *g, uint32_t q,
                              uint32_t f, const struct res_vec *need, int nominal,
                              struct cand *cands)
{
    const struct sched_snapshot *snap = pc->snap;
    uint32_t n_cands = 0;
    for (uint32_t v = 0; v <= snap->n_queues; v++) {
        if (skip_queue(pc, g, q, v, nominal))
            continue;
        for (uint32_t x = pc->queue_first[v]; x < pc->queue_first[v + 1]; x++) {
            uint32_t i = pc->by_queue[x];
            const struct sched_running *r = &snap->running[i];
            enum sched_preempt_kind kind;
            if (pc->chosen[i] || !allowed(pc, r, g, q, f, need, &kind))
                continue;
            double cost = preempt_cost(r, snap->now_ms);
            /* checkpoint-aware: least lost work first (ties: fewer GPUs); blind, as Kueue: lowest
             * priority first, then most recently started */
            double key = snap->policy->checkpoint_aware
                             ? cost + (double)r->gang->gpus * 1e-6
                             : (double)r->gang->priority * 1e15 - (double)r->start_ms;
            cands[n_cands++] =
                (struct cand){.idx = i, .id = r->gang->id, .kind = kind, .key = key, .cost = cost};
        }
    }
    qsort(cands, n_cands, sizeof(*cands), cmp_cand);
    return n_cands;
}

/* The cheapest victim set of one gang over the candidate domains, and its placement. */
struct plan {
    uint32_t n;                 /* victims chosen (0: no domain works) */
    uint32_t *best;             /* [n]: indexes into cands */
    struct sched_assign *trial; /* [g->n_pods]: the placement the preemptor will hold */
    double cost;                /* the victims' cost (preempt_cost, summed) */
};

/* When no domain of the target level can be cleared: overdue backfill alone (victims of kind
 * SCHED_PREEMPT_OVERDUE), freed anywhere in the cluster, as a gang without a required level may
 * span domains. Fills pl (indexes into cands) or leaves pl->n 0. */
static int overdue_plan(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                        const struct res_vec *need, const struct cand *cands, uint32_t n_cands,
                        uint32_t *chosen, struct sched_assign *trial, struct plan *pl)
{
    struct cand *od = NULL;
    uint32_t n_od = 0;
    for (uint32_t c = 0; c < n_cands; c++) {
        if (cands[c].kind != SCHED_PREEMPT_OVERDUE)
            continue;
        if (!od && !(od = arena_alloc(pc->arena, n_cands * sizeof(*od))))
            return SCHED_ENOMEM;
        od[n_od++] = cands[c]; /* still in victim order */
    }
    double cost;
    uint32_t n = n_od ? plan_domain(pc, g, q, f, need, -1, 0, od, n_od, chosen, trial, &cost) : 0;
    for (uint32_t j = 0; j < n; j++) { /* back to indexes into cands */
        uint32_t c = 0;
        while (cands[c].idx != od[chosen[j]].idx)
            c++;
        pl->best[j] = c;
    }
    if (n > 0) {
        pl->n = n;
        pl->cost = cost;
        memcpy(pl->trial, trial, g->n_pods * sizeof(*trial));
    }
    return 0;
}

/* Tries each target domain that has victims (or room, when only quota is missing) and keeps the
 * plan of least score: its cost plus the domain's place in the placement order, within
 * order_bias_gpu_s. The blind baseline stops at the first domain that works. */
static int best_plan(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                     const struct res_vec *need, const struct cand *cands, uint32_t n_cands,
                     struct plan *pl)
{
    const struct sched_snapshot *snap = pc->snap;
    const struct sched_policy *pol = snap->policy;
    struct place_state *st = pc->st;
    uint32_t *chosen = arena_alloc(pc->arena, snap->n_running * sizeof(*chosen));
    struct sched_assign *trial = arena_alloc(pc->arena, (g->n_pods + 1) * sizeof(*trial));
    pl->best = arena_alloc(pc->arena, snap->n_running * sizeof(*pl->best));
    pl->trial = arena_alloc(pc->arena, (g->n_pods + 1) * sizeof(*pl->trial));
    pl->n = 0;
    pl->cost = 0;
    if (!chosen || !trial || !pl->best || !pl->trial)
        return SCHED_ENOMEM;
    int level = target_level(st, g);
    uint32_t n_domains = level >= 0 ? st->c->topo.levels[level].n_domains : 1;
    double best_score = 0;
    for (uint32_t d = 0, tried = 0; d < n_domains && tried < MAX_DOMAINS; d++) {
        bool any = false;
        for (uint32_t c = 0; c < n_cands && !any; c++)
            any = has_pod_in(st, &snap->running[cands[c].idx], level, d);
        /* a domain without victims can still do, when it has the room and only quota is
         * missing (victims elsewhere free the quota) */
        if (!any && !(pc->qt && place_trial(st, g, level, d, trial)))
            continue;
        tried++;
        double cost;
        uint32_t n = plan_domain(pc, g, q, f, need, level, d, cands, n_cands, chosen, trial, &cost);
        /* the domain's place in the placement engine's order weighs in, within the bias:
         * preemption then packs where placement packs (docs/preemption.md, "Where") */
        double score = cost + pol->order_bias_gpu_s * (double)d / (double)n_domains;
        if (n == 0 || (pl->n > 0 && score >= best_score))
            continue;
        pl->n = n;
        pl->cost = cost;
        best_score = score;
        memcpy(pl->best, chosen, n * sizeof(*pl->best));
        memcpy(pl->trial, trial, g->n_pods * sizeof(*trial));
        if (!pol->checkpoint_aware)
            break; /* the blind baseline takes the first domain that works */
    }
    if (pl->n == 0 && level >= 0 && g->topo_required < 0)
        return overdue_plan(pc, g, q, f, need, cands, n_cands, chosen, trial, pl);
    return 0;
}

/* Whether evicting by priority pays: a gang that outranks its victims is worth at least
 * PREEMPT_MIN_WAIT_S of waiting; its benefit (GPUs x wait x priority bonus) must reach
 * benefit_factor times the victims' cost. Reclaims always pay. */
static bool worth_it(const struct preempt_ctx *pc, const struct gang *g, const struct cand *cands,
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
    double grow = 0;
    for (uint32_t j = 0; j < pl->n; j++) {
        const struct sched_running *r = &snap->running[cands[pl->best[j]].idx];
        int32_t vp = r->gang->priority > 0 ? r->gang->priority : 0;
        grow += (double)r->gang->gpus * (1.0 + 0.1 * (double)vp);
    }
    if (pc->wake_ms && rate > factor * grow) {
        /* in whole seconds, rounded up: at that instant it pays */
        double dt_s = ceil((factor * pl->cost - rate * wait_s) / (rate - factor * grow));
        if (dt_s < 3.0e7) /* within a year: an instant worth a cycle */
            sched_wake_at(pc->wake_ms, snap->now_ms,
                          snap->now_ms + (int64_t)(dt_s > 1 ? dt_s : 1) * 1000);
    }
    return false;
}

/* Commits a plan: its evictions, and a hold on the preemptor's trial placement. */
static int commit_plan(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                       const struct res_vec *need, const struct cand *cands, const struct plan *pl,
                       struct sched_result *out, uint32_t *cap_evictions,
                       uint32_t *cap_reservations)
{
    const struct sched_snapshot *snap = pc->snap;
    for (uint32_t j = 0; j < pl->n; j++) {
        const struct cand *c = &cands[pl->best[j]];
        const struct sched_running *r = &snap->running[c->idx];
        struct sched_eviction *e =
            arena_grow(pc->arena, out->evictions, out->n_evictions, cap_evictions, sizeof(*e));
        if (!e)
            return SCHED_ENOMEM;
        out->evictions = e;
        out->evictions[out->n_evictions++] =
            (struct sched_eviction){.victim = r,
                                    .preemptor = g,
                                    .kind = c->kind,
                                    .lost_gpu_s = preempt_lost_gpu_s(r, snap->now_ms),
                                    .cost = c->cost};
        pc->chosen[c->idx] = 1;
        pc->evicted_per_queue[r->gang->queue]++;
    }
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
    for (uint32_t j = 0; j < pl->n; j++)
        charge_victim(pc, &snap->running[cands[pl->best[j]].idx], -1);
    if (pc->qt)
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

int preempt_plan(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                 struct sched_result *out, uint32_t *cap_evictions, uint32_t *cap_reservations,
                 bool *planned)
{
    const struct sched_snapshot *snap = pc->snap;
    *planned = false;
    if (!snap->policy->preempt || snap->n_running == 0 || g->n_pods == 0)
        return 0;
    for (uint32_t h = 0; h < snap->n_holds; h++)
        if (snap->holds[h].gang->id == g->id)
            return 0; /* its victims are still leaving: wait for them, evict nobody else */
    if (!pc->by_queue && index_running(pc) != 0)
        return SCHED_ENOMEM;
    struct res_vec need;
    gang_request(g, &need);
    int nominal = within_nominal(pc, q, f, &need);
    if (!any_queue(pc, g, q, nominal))
        return 0; /* no running gang could be a victim of g */
    struct cand *cands = arena_alloc(pc->arena, snap->n_running * sizeof(*cands));
    if (!cands)
        return SCHED_ENOMEM;
    uint32_t n_cands = collect_cands(pc, g, q, f, &need, nominal, cands);
    if (n_cands == 0)
        return 0;
    struct plan pl;
    int rc = best_plan(pc, g, q, f, &need, cands, n_cands, &pl);
    if (rc != 0 || pl.n == 0 || !worth_it(pc, g, cands, &pl))
        return rc;
    rc = commit_plan(pc, g, q, f, &need, cands, &pl, out, cap_evictions, cap_reservations);
    *planned = rc == 0;
    return rc;
}
