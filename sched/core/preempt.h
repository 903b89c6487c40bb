/* sched/core/preempt.h: choosing victims so that a waiting gang can start.
 *
 * Owns: the preemption planner of one cycle. Victims are whole gangs, or members of an elastic
 * gang alone: a running gang with more pods than its min_member may lose members down to it
 * (each member a candidate of its own, before the gang in the victim order; an inference
 * gang's member costs its share of the gang's cost, a training gang's members the gang's whole
 * cost once, as every worker restarts from the checkpoint; sched_eviction.pods names them), and
 * goes whole when that is not enough. Kinds
 * (per the preemptor's queue settings, config/config.h):
 *   priority - a gang of the same queue with lower priority (or, with LowerOrNewerEqualPriority,
 *              equal priority and started after the preemptor was submitted);
 *   reclaim  - a gang of another queue that borrows, when the preemptor's queue stays within its
 *              nominal quota; never below the victim queue's own nominal quota.
 *   fair share (opt-in: fairSharePreemption) - between borrowing queues: the preemptor's queue's
 *              weighted share with the gang admitted must stay strictly below the victim queue's
 *              weighted share without the victim; also bounded by the victim's nominal quota.
 *              Strict inequalities both ways cannot hold, so two queues never preempt each other
 *              back and forth.
 *   overdue  - backfill on probation (cycle.h, sched_running.probation_for): a gang of the same
 *              queue started while the preemptor held the cycle's earliest starvation
 *              reservation, which promised to be gone by that reservation's first expected
 *              start and has overrun it; only for a preemptor that still starves, holds its
 *              reservation and has at least probation_min_gpus GPUs. When no domain of the
 *              target level can be cleared, overdue victims alone are freed across the cluster.
 *              Like reclaim, it needs no benefit: the victim broke its promise.
 * Never victims: non-preemptible gangs, gangs inside their minimum run time, gangs already
 * being evicted.
 *
 * Cost of a victim (GPU-seconds of lost work, weighted by priority):
 *   lost = GPUs x ((now - last checkpoint) + restart cost per GPU)
 *   cost = lost x (1 + 0.1 x max(0, victim priority))
 * Topology-aware: the planner targets one domain at the level the preemptor needs (its required
 * level, else the tightest level whose largest domain holds its GPUs), frees victims there in
 * order (checkpoint-aware: cheapest lost work per GPU first; blind: lowest priority, then most
 * recently started, as Kueue), simulates the preemptor's placement after each, drops the victims
 * that turn out unnecessary (fill-back), and keeps the cheapest domain, where a domain's
 * position in the placement engine's order adds up to policy->order_bias_gpu_s (so that of two
 * near-equal victim sets the one where placement packs is taken); of more domains than a plan
 * may try (512), the most promising first by a lower bound of their score (preempt_dom.c),
 * stopping once none left can beat the best found. A priority preemption
 * happens only when benefit = GPUs x max(waiting seconds, 3600) x (1 + 0.1 x max(0, priority))
 * >= factor x cost (so a one-GPU gang never restarts a large gang with hours of unsaved work);
 * reclaim is a right and needs no benefit. The preemptor then holds the capacity its
 * victims free (a reservation) so that nothing else takes it.
 *
 * Must not touch: anything but the cycle's working state (restored before returning) and arena.
 */
#ifndef SCHED_CORE_PREEMPT_H
#define SCHED_CORE_PREEMPT_H

#include <stdbool.h>
#include <stdint.h>

#include "queue/quota.h"
#include "sched/core/cycle.h"
#include "sched/core/place.h"

struct preempt_ctx {
    const struct sched_snapshot *snap;
    struct place_state *st;
    struct quota_tree *qt; /* NULL without a config */
    struct arena *arena;
    uint8_t *chosen;             /* [n_running]: already a victim this cycle */
    uint32_t *evicted_per_queue; /* [n_queues] */
    /* the running gangs by queue (built at the first plan of the cycle): queue v's are
     * by_queue[queue_first[v] .. queue_first[v + 1]), queue n_queues holds any other; min_prio
     * is the lowest priority among them. A queue none of whose gangs could be a victim of the
     * preemptor is skipped whole (same candidates, found without a scan of every gang). */
    uint32_t *by_queue, *queue_first;
    int32_t *min_prio;
    bool any_overdue; /* some running gang's probation promise has passed (index_running) */
    /* backfill on probation (the cycle's settings): a gang that waited starve_after_ms, holds a
     * starvation reservation and has at least probation_min_gpus GPUs (0: never) may evict the
     * gangs of its queue started on probation for it whose promise has passed */
    int64_t starve_after_ms;
    uint32_t probation_min_gpus;
    bool oom; /* out of memory within a plan: preempt_plan fails */
    /* reclaim's bound (reclaim_bounded): `straddle` set, a victim may take its queue below its
     * nominal quota on a resource the queue borrows until then (the second try of a plan);
     * `bound_hit`: a candidate was passed over for the bound in this plan */
    bool straddle, bound_hit;
    /* the last plan found nothing but gangs past reclaim's bound, which its preemptor may not
     * take yet (or ever, without a starvation guard): the verdict says so */
    bool bound_waits;
    /* the last plan found no victims whatever its preemptor's own wait and identity: any
     * gang of its class (preempt_alike) finds none either until the cycle's state changes */
    bool class_none;
    /* the last plan was found but does not pay yet (worth_it): when it would, ms; 0 none */
    int64_t pays_at_ms;
    int64_t *wake_ms; /* the cycle's sched_result.wake_ms (sched_wake_at): lowered to when a
                         victim's minimum run time ends, a backfill promise passes, or a plan
                         that did not pay would */
};

int preempt_ctx_init(struct preempt_ctx *pc, const struct sched_snapshot *snap,
                     struct place_state *st, struct quota_tree *qt, struct arena *arena);

/* Plans victims for g (queue q, flavor f). On success appends evictions and a preemptor
 * reservation to `out` and sets *planned. Returns 0 or SCHED_ENOMEM. */
int preempt_plan(struct preempt_ctx *pc, const struct gang *g, uint32_t q, uint32_t f,
                 struct sched_result *out, uint32_t *cap_evictions, uint32_t *cap_reservations,
                 bool *planned);

/* true when preempt_plan() for g depends on nothing of g's own beyond its class (what places
 * it, its queue q, flavor and priority): no hold or starvation reservation of its own (victims
 * still leaving, overdue backfill) and no rule of submission order in its queue. */
bool preempt_alike(const struct preempt_ctx *pc, const struct gang *g, uint32_t q);

/* true when preempt_plan() would find no victim for any gang of queue q with g's priority (no
 * preemption, nothing running, or no running gang's queue could supply one), so it would do
 * nothing. */
bool preempt_none(struct preempt_ctx *pc, const struct gang *g, uint32_t q);

/* The cost model, exposed for the simulator's accounting and the tests. */
double preempt_lost_gpu_s(const struct sched_running *r, int64_t now_ms);
double preempt_cost(const struct sched_running *r, int64_t now_ms);

#endif
