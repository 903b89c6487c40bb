/* sched/core/eta.h: expected start times of the gangs that wait (the answer to "when will my
 * job start?", as `squeue --start`).
 *
 * Owns: the start planner run at the end of a cycle when the snapshot asks for it
 * (plan_starts). It walks the waiting gangs in the cycle's own order and gives each the
 * earliest time at which its pods fit, counting GPUs per node: a node's busy GPUs come back at
 * its release_ms (declared maximum run times, else the driver's estimates), and every gang
 * planned earlier claims the GPUs it will use from now until its expected end (expected start
 * plus its expected run time). With per-pod releases (sched_snapshot.releases) the GPUs come
 * back by index, as the cycle counts them: a GPU that several pods' shares hold comes back once,
 * when the last of them ends (never while one of an unknown end holds it); releases without
 * indices give back at most the node's held GPUs no index names, the latest ends first. A
 * waiting gang's shares are planned as whole GPUs (a pod of nvidia.com/gpu: 1 takes a free GPU):
 * device memory and cores are not modelled. Topology and non-GPU resources are not modelled
 * either: the estimate is what GPU capacity allows. A gang gets no estimate when it waits for quota
 * while the capacity is there, when a run time it depends on is unknown, when it never fits, or
 * when it is behind the first ETA_MAX_PLANNED gangs of the cycle or the planner's work budget
 * (ETA_MAX_STEPS) ran out before it (then `ahead` says how many gangs were planned before it).
 * After the plan, eta_plan (eta_evictions) moves the expected start of a gang whose reclaim
 * waits for starvation.after (sched_verdict.reclaim_after_ms), or whose priority preemption
 * pays once it has waited longer (sched_verdict.preempt_at_ms), to that time when it is later or
 * missing: the planner counts GPUs that free as gangs end, and knows no eviction.
 *
 * Cost per cycle: one pass over the nodes to set up (only when some gang waits), a sort of
 * the releases, then the events its walks pass (at most ETA_MAX_STEPS in all) and the nodes the
 * claims take; nothing else grows with the cluster. A walk is not restarted from now for each
 * gang: up to ETA_CURSORS walk states (per pod size and count) are kept for the whole plan and
 * go on from where they stand, because a claim only ever takes capacity, so a gang of at least
 * as many pods of one size cannot start before the last such gang could. The plan is the same
 * as walking every node from now for each gang (test_start_estimates_match_reference in
 * tests/unit/test_cycle_starts.c; same_decisions.sh).
 *
 * Must not touch: the snapshot, the cycle's placement state (read only), anything outside the
 * cycle's arena.
 */
#ifndef SCHED_CORE_ETA_H
#define SCHED_CORE_ETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/core/arena.h"
#include "sched/core/cycle.h"

#define ETA_MAX_PLANNED 256 /* gangs planned per cycle; those behind get SCHED_ETA_BEHIND */
/* Events the planner's walks may pass per cycle: the gang whose walk would exceed it, and every
 * gang behind, get SCHED_ETA_BEHIND. A deep backlog on a full cluster then costs a bounded time
 * per cycle, as Slurm's backfill bounds its own (bf_max_job_test, bf_max_time). On the bundled
 * ITP traces a cycle's walks pass at most 2^11 events, so only bursts of thousands of gangs
 * reach it (the 10,000-gang burst of bench_scale plans about 45 gangs a cycle). */
#define ETA_MAX_STEPS   (1u << 13)

struct place_state;

struct eta_item {
    const struct gang *gang;
    enum sched_why why; /* its verdict this cycle */
};

struct eta_env {
    const struct sched_snapshot *snap;
    const struct place_state *st; /* the cycle's state after its placements and holds */
    struct sched_result *out;     /* placements read, etas written */
    struct arena *arena;
    /* filled by eta_plan from out's verdicts: ids of the gangs the pod rules refused nodes this
     * cycle (verdict.by_pod_rules), ascending: no estimate for them (SCHED_ETA_PODS) */
    const uint32_t *refused;
    uint32_t n_refused;
};

/* Expected run time of g: its declared maximum, else the snapshot's estimate, 0 = unknown. */
int64_t eta_runtime(const struct sched_snapshot *snap, const struct gang *g);

/* Fills env->out->etas for the n waiting gangs, in order, then moves earlier the starts of
 * gangs whose reclaim or preemption is due at a known time (their verdicts' reclaim_after_ms,
 * preempt_at_ms). 0 or SCHED_ENOMEM. */
int eta_plan(struct eta_env *env, const struct eta_item *waiting, uint32_t n);

/* "in 2h05m", "no estimate: waiting for quota", "no estimate: behind 300 gangs", ... into buf. */
int eta_format(const struct sched_eta *e, int64_t now_ms, char *buf, size_t n);

/* The expected starts of a cycle's result by gang id: by_id[g->id] = its entry for every gang
 * of res->etas with an id below n. by_id is the driver's array of n entries, all NULL before;
 * eta_unindex() makes the same entries NULL again, so one array serves every cycle at the cost
 * of the cycle's estimates, not of the ids. */
void eta_index(const struct sched_result *res, const struct sched_eta **by_id, uint32_t n);
void eta_unindex(const struct sched_result *res, const struct sched_eta **by_id, uint32_t n);

/* For a decision log row of a gang whose entry is e (NULL: placed, or not planned): *has false
 * without one; else *at_ms (SCHED_ETA_AT) or the reason there is none written to note (note[0]
 * == 0 when there is a time). */
void eta_for_log(const struct sched_eta *e, int64_t now_ms, bool *has, int64_t *at_ms, char *note,
                 size_t n);

#endif
