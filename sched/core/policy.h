/* sched/core/policy.h: scheduling policies, one table.
 *
 * Owns: the named policies the core can run. A policy is data (flags and limits) read by the
 * cycle; adding a policy is adding a row to the table in policy.c. The simulator runs several
 * policies on the same input to compare them.
 */
#ifndef SCHED_CORE_POLICY_H
#define SCHED_CORE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

struct sched_policy {
    const char *name;
    const char *summary;         /* one line for --help and reports */
    bool strict_fifo;            /* stop the cycle at the first gang that cannot start */
    bool by_priority;            /* order by job priority before submission time */
    bool topology;               /* tightest-domain best fit, NVLink-island-aware GPU choice;
                                    else first fit over nodes and lowest free GPU indices */
    int64_t starve_after_ms;     /* a gang waiting longer holds a reservation; 0 = never */
    uint32_t max_reservations;   /* reservations held at once */
    bool preempt;                /* priority preemption and reclaim, per the queues' settings */
    bool checkpoint_aware;       /* victims by lost work since their checkpoint (else Kueue's
                                    order: lowest priority, then most recently started) */
    double benefit_factor;       /* priority preemption only when benefit >= factor x cost */
    double order_bias_gpu_s;     /* checkpoint-aware planner: a domain at position d of n in the
                                    placement engine's tie-break order (lowest index first) adds
                                    bias x d / n GPU-seconds to its victim set's cost when domains
                                    are compared, so that near-equal victim sets are taken where
                                    placement packs (see docs/preemption.md); 0 = cost only */
    uint32_t max_evictions;      /* victim gangs per queue and cycle */
    uint32_t probation_min_gpus; /* a starving gang of at least this many GPUs may evict its
                                    queue's backfill that overran its promise (cycle.h,
                                    SCHED_PREEMPT_OVERDUE); 0 = never */
    bool private_slices;         /* simulator only: each queue alone on a cluster the size of its
                                    nominal quota (sched/sim/private.c), the other fields as
                                    gangsched; the daemon refuses it */
};

/* NULL when unknown. */
const struct sched_policy *sched_policy_find(const char *name);
/* The table, for listings; NULL-terminated. */
extern const struct sched_policy *const sched_policies[];
/* The daemon's and simulator's default policy ("gangsched"). */
const struct sched_policy *sched_policy_default(void);

#endif
