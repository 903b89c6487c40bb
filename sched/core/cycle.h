/* sched/core/cycle.h: the pure scheduling core.
 *
 * Owns: one scheduling cycle. sched_cycle() takes a const snapshot (cluster, usage, queues with
 * their pending gangs in queue order, policy, the time) and returns decisions: placements
 * (pod -> node and GPU indices), reservations, and a structured verdict for every gang it looked
 * at. It performs no I/O, reads no clock, keeps no state between calls (the placement base a
 * driver may pass is a cache of the snapshot, see place_base.h) and allocates only from the
 * caller's arena: the same snapshot always gives the same decisions.
 *
 * Invariant: a gang is placed whole (all n_pods pods) or not at all.
 *
 * Must not touch: the snapshot (const), the driver's node_state (it works on a copy), files,
 * sockets, clocks, globals other than the read-only resource-name table.
 */
#ifndef SCHED_CORE_CYCLE_H
#define SCHED_CORE_CYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/arena.h"
#include "sched/core/model.h"

struct sched_policy;
struct config;
struct place_base;

/* Pending gangs of one queue, in the queue's own order (queue/queue.h keeps it). */
struct sched_queue_view {
    const struct queue *queue;
    const struct gang *const *pending;
    uint32_t n_pending;
    /* [n_pending] backlog_gang_key() of each pending gang (queue_list.keys), or NULL: the
     * cycle then reads each gang's class from the gang */
    const uint64_t *class_keys;
    uint32_t n_classes; /* distinct class_keys (queue_list.n_classes), 0 = unknown */
};

/* A running gang, for preemption. */
struct sched_running {
    const struct gang *gang;
    const struct sched_assign *pods; /* [gang->n_pods] */
    uint32_t flavor;                 /* config flavor it is charged to */
    int64_t start_ms;                /* start of the current run */
    int64_t last_checkpoint_ms; /* last checkpoint (gangsched.io/last-checkpoint), else start */
    int64_t restart_cost_ms;    /* time a restart costs before useful work, per GPU */
    int64_t min_runtime_ms;     /* protected from preemption until start + this */
    bool non_preemptible;       /* never a victim */
    bool evicting;              /* eviction already under way */
    /* backfill on probation: started while probation_for held a starvation reservation, it
     * promised to be gone by probation_until_ms (that reservation's first expected start);
     * once the promise is broken, probation_for may evict it (SCHED_PREEMPT_OVERDUE). 0 and
     * NULL: not on probation (or that gang is not in this cycle) */
    int64_t probation_until_ms;
    const struct gang *probation_for;
};

/* A bound pod as inter-pod constraints see it. */
struct sched_pod {
    uint32_t node; /* index into cluster->nodes; others are ignored */
    const struct pod_meta *meta;
    bool deleting; /* being deleted: counts for affinity and ports, not for topology spreads
                      (kube-scheduler's PodTopologySpread skips terminating pods) */
    /* a pod of a running gang of the snapshot: that gang's pod set (a preemption plan that
     * releases the set's pods on this node lifts the pod's rules for its trial); NULL others */
    const struct podset *set;
};

/* Capacity a preemptor holds across cycles (freed by its victims): only that gang may use it. */
struct sched_hold {
    const struct gang *gang;
    const uint32_t *nodes;
    uint32_t n_nodes;
    /* a preemptor hold that may lack capacity its plan counted on (eng_hold.replan): it waits
     * only while gangs on its nodes are being evicted, then its gang plans again (preempt.c) */
    bool replan;
};

/* GPUs of a running pod and when they are expected back (start planner). A GPU that several
 * pods hold (shares) comes back once, when the last of them ends: by gpu_mask where the driver
 * names the devices, else counted (sched/core/eta.c). */
struct sched_release {
    uint32_t node;
    uint32_t gpus;     /* GPUs the pod holds there (read when gpu_mask is 0) */
    int64_t t_ms;      /* INT64_MAX: unknown */
    uint32_t gpu_mask; /* their indices on the node; 0: not known */
};

/* Run-time estimates on demand (sched_snapshot.runtime_src). */
struct sched_runtime_source {
    int64_t (*est)(void *ctx, const struct gang *g, bool typical); /* ms, 0 = unknown */
    void *ctx;
};

struct sched_snapshot {
    int64_t now_ms;
    const struct cluster *cluster;
    const struct node_state *state; /* [cluster->n_nodes] */
    const struct sched_queue_view *queues;
    uint32_t n_queues;
    const struct sched_policy *policy;
    /* Operator configuration, or NULL (no quotas; policy defaults). With a config, queue view q
     * is config queue q, and: */
    const struct config *config;
    const int64_t *usage;     /* [n_queues][config->n_flavors][RES_MAX]: admitted requests */
    const double *hist_share; /* [n_queues]: decayed historical share (queue_decay), or NULL */
    bool verdict_every_gang;  /* also a verdict for gangs skipped by the same-shape memo */
    /* Verdicts only for the gangs the cycle tries: a gang passed over because its class was
     * refused by the quota at an unchanged state (sched/core/backlog.h) gets none, as a gang
     * passed over by the same-shape memo gets none. For drivers that use verdicts only to
     * reject gangs that can never run (never-fits and quota-never are always tried). Ignored
     * when verdict_every_gang is set. */
    bool tried_verdicts_only;
    const struct sched_running *running; /* for preemption; may be NULL */
    uint32_t n_running;
    /* running gangs, for the per-device usage of shared GPUs (HAMi: pods asking for
     * nvidia.com/gpumem or gpucores, sched/core/place_share.c); the core reads only the gangs
     * that hold shares, their pods' gpu_mask naming the devices. NULL = no share runs. */
    const struct sched_running *shares;
    uint32_t n_shares;
    /* the bound pods inter-pod constraints read (every scheduler's, those being deleted
     * included, as kube-scheduler counts them until they are gone): node index and what they
     * carry (model.h struct pod_meta, NULL: no labels). Read only when a pending gang's pods
     * or one of these carries a constraint; NULL, 0: none (the simulator) */
    const struct sched_pod *bound_pods;
    uint32_t n_bound_pods;
    const struct sched_hold *holds; /* preemptor holds from earlier cycles */
    uint32_t n_holds;
    /* the starvation reservations of the previous cycle (sched_result.reservations without
     * the preemptors'), or NULL: hints that keep a reservation on its nodes while they stay as
     * good (place_reserve); they hold nothing by themselves */
    const struct sched_hold *reserve_hints;
    uint32_t n_reserve_hints;
    /* expected run time per gang id (estimate.h: declared maximum, else learned from finished
     * gangs), 0 = unknown; NULL or ids >= n_runtime_est: the declared maximum only. Used to let
     * a gang backfill reserved capacity it will have left before the reservation starts, and by
     * the start-time planner. node_state.release_ms carries the same estimates for what runs. */
    const int64_t *runtime_est_ms;
    uint32_t n_runtime_est;
    /* for the start planner only: typical run times per gang id (a quantile the driver picks,
     * where the above is a safe high one) and each node's typical release [cluster->n_nodes];
     * NULL = the safe ones */
    const int64_t *runtime_typ_ms;
    const int64_t *release_typ_ms;
    /* for the start planner only: when the GPUs of running pods are typically given back, one
     * entry per running pod; NULL = per node, all of its GPUs at release_typ_ms */
    const struct sched_release *releases;
    uint32_t n_releases;
    /* Or, instead of the two arrays above, estimates computed when the cycle asks for them
     * (a cycle asks for few of its pending gangs: those it tries, those it plans): NULL = the
     * arrays. est(ctx, g, typical) answers what runtime_typ_ms[g->id] (typical) or
     * runtime_est_ms[g->id] would hold; the answer must not change within a cycle (the driver
     * may compute it on the first call and keep it). */
    const struct sched_runtime_source *runtime_src;
    bool plan_starts; /* fill sched_result.etas: an expected start for every gang that waits */
    /* every search from scratch: no domain sums kept across gangs (place_fitc.c), every pod of
     * a gang placed pod by pod scans the nodes from the first (place_pods.c); the same
     * decisions, slower: the unit tests compare the two */
    bool no_shortcuts;
    /* Placement state kept between cycles (sched/core/place_base.h), or NULL: the cycle then
     * builds it from `state` for every node. The driver touches a node in it after every change
     * of its node_state; the cycle changes it in place and leaves it to be restored by the next
     * cycle (a cache, not part of the decisions: with or without it they are the same). */
    struct place_base *base;
    /* A time budget (the daemon's: its cycle must end before its Lease's renew deadline): once
     * clock_ns() reaches deadline_ns the cycle tries no further gang (it tries one at least) and
     * sets sched_result.cut_short; the gangs not reached get no verdict, the decisions made are
     * those the whole cycle would have made first. NULL: none (the simulator, whose decisions
     * must not depend on the machine's speed). Nanoseconds of the driver's monotonic clock. */
    uint64_t (*clock_ns)(void);
    uint64_t deadline_ns;
    /* [n_pass_over], by gang id, or NULL: gangs this cycle passes over untried, without a
     * verdict (the daemon's: those that failed in the cut-short cycles just before, until a
     * cycle ends uncut, so that each cut cycle reaches gangs not tried yet). A gang passed over
     * still stops what a gang that waits stops: a StrictFIFO queue, a strict-FIFO cycle. */
    const bool *pass_over;
    uint32_t n_pass_over;
};

/* Where one pod goes. */
struct sched_assign {
    uint32_t node;     /* index into cluster->nodes */
    uint32_t gpu_mask; /* GPU indices on that node */
};

struct sched_placement {
    const struct gang *gang;
    struct sched_assign *pods; /* [gang->n_pods], pods of set 0 first, then set 1, ... */
    int level;                 /* tightest topology level holding the whole gang, or -1 */
    uint32_t flavor;           /* config flavor charged (0 without a config) */
    bool borrowing;            /* admitted with quota lent by other queues */
    uint32_t domain;           /* domain at `level` */
    bool backfilled;           /* placed ahead of an older gang that still waits */
    /* started while this gang of its queue held the cycle's earliest starvation reservation:
     * on probation (sched_running.probation_for; the driver's engine gives the promised end)
     * or NULL */
    const struct gang *probation_for;
    /* why this node or domain won: its largest weighted score terms, largest first (term index
     * into plugin_scores, raw value 0..1000); n_terms 0 under first fit */
    uint8_t n_terms;
    uint8_t terms[3];
    uint16_t term_values[3];
};

/* Why a gang did not start this cycle. Codes are stable: they appear in logs, JSON and docs. */
enum sched_why {
    SCHED_WHY_PLACED = 0,
    SCHED_WHY_BLOCKED,     /* an earlier gang waits and holds it (blocked_by): of its queue,
                              waiting for the queue's quota with a starvation reservation, or
                              (pool_hold) of its quota tree, waiting for quota to borrow */
    SCHED_WHY_RESOURCES,   /* not enough free capacity anywhere right now */
    SCHED_WHY_TOPOLOGY,    /* capacity exists, but not inside one required domain */
    SCHED_WHY_RESERVED,    /* capacity is held for an older starving gang */
    SCHED_WHY_NEVER,       /* larger than the whole cluster could ever hold */
    SCHED_WHY_NO_NODES,    /* no node passes the static filters (selector, taints, ...) */
    SCHED_WHY_QUOTA,       /* the queue's quota (with what it may borrow) is used up */
    SCHED_WHY_QUOTA_NEVER, /* above what the queue could ever get, borrowing included */
    SCHED_WHY_CHECKPOINT,  /* new members of a training gang: they join after its next
                              checkpoint, at join_at_ms (gang_set_join) */
};

/* Per filter, how many nodes it rejected for the gang's first unplaced pod set. */
enum sched_filter_id {
    FILTER_NOT_READY = 0,
    FILTER_CORDONED,
    FILTER_SELECTOR,
    FILTER_AFFINITY,
    FILTER_TAINT,
    FILTER_SHARED_GPU,
    FILTER_GPU_HEALTH,
    FILTER_RESOURCES,
    FILTER_RESERVED,
    FILTER_QUARANTINED,
    FILTER_DEVICE_KIND,  /* a node of another accelerator kind (plugins/device_kind.c) */
    FILTER_POD_AFFINITY, /* a required inter-pod affinity term unmet (place_pods.c) */
    FILTER_POD_ANTI,     /* a required inter-pod anti-affinity term, its own or a bound pod's */
    FILTER_HOST_PORT,    /* a host port the node's pods already use */
    FILTER_SPREAD,       /* a DoNotSchedule topology spread would be exceeded */
    FILTER_N
};

struct sched_verdict {
    const struct gang *gang;
    enum sched_why why;
    int short_res;     /* resource id that was short, or -1 */
    bool by_pod_rules; /* the pod rules refused it some node (place_pods.c): its failure says
                          nothing of a gang of its shape with other labels */
    bool never_domain; /* never-fits: no domain of the required level could ever hold
                          the whole gang (every pod fits some node) */
    int64_t need;      /* of short_res: what one pod needs */
    int64_t best_free; /* of short_res: the most any node offers */
    uint32_t filtered[FILTER_N];   /* nodes rejected per filter */
    uint32_t n_nodes;              /* nodes considered */
    const struct gang *blocked_by; /* SCHED_WHY_BLOCKED: the starving gang ahead in the queue
                                      (or in its quota tree: pool_hold);
                                      SCHED_WHY_RESERVED: the gang holding the capacity it would
                                      start on (NULL: not named) */
    bool held_for_preemptor;       /* SCHED_WHY_RESERVED: blocked_by holds it for its victims'
                                      capacity, not as a starvation reservation */
    bool hold_start_unknown;       /* SCHED_WHY_RESERVED: no reservation of the cycle so far has
                                      an expected start, so no gang may backfill into them */
    /* the domain that came closest: at near_level (-1 = cluster, -2 = none), near_pods of the
     * gang's pods fit in it now */
    int near_level;
    uint32_t near_domain;
    uint64_t near_pods;
    /* SCHED_WHY_QUOTA*: the limiting resource of the queue, base units */
    int quota_res;
    uint32_t quota_flavor;
    int64_t quota_need, quota_nominal, quota_used, quota_available, quota_potential;
    /* SCHED_WHY_QUOTA within the queue's nominal quota, when reclaim found the borrowers' gangs
     * past its bound (each would leave its queue below its own nominal quota): > 0, reclaim may
     * take one once the gang has waited this long (starvation.after); -1, never (the
     * starvation guard is off); 0, not so */
    int64_t reclaim_after_ms;
    /* a preemption plan was found that does not pay yet (its benefit grows with the wait): the
     * time it would, ms (the start planner's latest expected start for the gang); 0 none */
    int64_t preempt_at_ms;
    /* The cohort hold: SCHED_WHY_QUOTA, this gang must borrow, has waited starvation.after and
     * holds its quota tree's lendable quota (no other gang of the tree borrows while it waits);
     * SCHED_WHY_BLOCKED, blocked_by is such a gang (not a starving gang of its own queue),
     * holding the pool of flavor quota_flavor */
    bool pool_hold;
    /* SCHED_WHY_CHECKPOINT: when they may join (gang_join_at), and how far past its last
     * checkpoint the running gang is now (ms). asked: they would start now and the running
     * gang's queue answers within a checkpointGrace shorter than the wait: its job is asked to
     * checkpoint (their room held for them in this cycle), and they join once it has;
     * ask_checkpoint: the driver sends that request now (else it is open since
     * join_waited_ms ago, gang.join_asked_ms) */
    int64_t join_at_ms, join_past_ms, join_waited_ms;
    bool asked, ask_checkpoint;
};

enum sched_preempt_kind {
    SCHED_PREEMPT_PRIORITY = 0, /* a higher-priority gang of the same queue */
    SCHED_PREEMPT_RECLAIM,      /* a queue below its nominal quota takes back what was lent */
    SCHED_PREEMPT_FAIR_SHARE,   /* between borrowing queues, toward equal weighted shares */
    SCHED_PREEMPT_OVERDUE,      /* backfill on probation that overran its promise, by the
                                   starving gang it promised to */
};

struct sched_eviction {
    const struct sched_running *victim;
    const struct gang *preemptor;
    enum sched_preempt_kind kind;
    /* NULL: the whole gang is evicted. Else a shrink of an elastic gang: only its pods
     * pods[0 .. n_pods) (indices into victim->pods, ascending) are evicted, and it runs on with
     * at least gang->min_member members (preempt.h) */
    const uint32_t *pods;
    uint32_t n_pods;
    int64_t gpus;       /* GPUs of the pods evicted (the whole gang's when pods is NULL) */
    double lost_gpu_s;  /* work since the last checkpoint plus the restart, GPU-seconds, of the
                           pods evicted */
    double cost;        /* lost_gpu_s weighted by the victim's priority */
    bool below_nominal; /* a reclaim past its bound: the victim's queue borrowed through this
                           gang and is left below its own nominal quota (preempt.c) */
};

struct sched_reservation {
    const struct gang *gang; /* the starving gang or the preemptor that holds it */
    bool preemptor;          /* held for a preemptor until its victims are gone */
    uint32_t *nodes;         /* nodes whose free capacity is held */
    uint32_t n_nodes;
    int64_t expected_start_ms; /* when the held nodes are expected free (node_state.release_ms:
                                  declared maximum run times, else estimates), INT64_MAX when
                                  unknown; a gang expected to end before it may use the held
                                  capacity */
};

/* Expected start of a gang that waits (see eta.h). */
enum sched_eta_kind {
    SCHED_ETA_AT = 0,    /* start_ms is the expected start */
    SCHED_ETA_QUOTA,     /* no estimate: capacity is there, the queue's quota is not */
    SCHED_ETA_BEHIND,    /* no estimate: behind `ahead` gangs the planner did not look past */
    SCHED_ETA_UNKNOWN,   /* no estimate: a run time it depends on is unknown */
    SCHED_ETA_NEVER,     /* it can never start as it is */
    SCHED_ETA_PODS,      /* no estimate: the pod rules refused it nodes (place_pods.c), which
                            the planner does not model */
    SCHED_ETA_PODS_SELF, /* no estimate: rules among its own pods the planner does not model
                            (place_pods_self: PODS_SELF_OTHER); no reservation either */
};

struct sched_eta {
    const struct gang *gang;
    int64_t start_ms; /* SCHED_ETA_AT: expected start (>= the cycle's now), else INT64_MAX */
    uint32_t ahead;   /* gangs planned ahead of it in this cycle */
    enum sched_eta_kind kind;
};

struct sched_result {
    struct sched_placement *placements;
    uint32_t n_placements;
    struct sched_verdict *verdicts; /* one per gang examined and not placed */
    uint32_t n_verdicts;
    struct sched_reservation *reservations;
    uint32_t n_reservations;
    struct sched_eviction *evictions;
    uint32_t n_evictions;
    uint32_t n_examined;    /* gangs examined (placed or not) */
    uint32_t n_fit_cached;  /* domain searches summed by the cycle's cache (place_fitc.c) */
    struct sched_eta *etas; /* snapshot.plan_starts: one per gang examined and not placed, in the
                               cycle's order */
    uint32_t n_etas;
    /* The earliest instant after now_ms at which time alone may change what this cycle decided
     * (sched_wake_at): a waiting gang reaches starvation.after, a priority preemption that did
     * not pay starts to (its benefit and its victims' cost both grow with time), a would-be
     * victim's minimum run time ends, a backfill promise passes. INT64_MAX: none known. Both
     * drivers run a cycle then (the simulator's FIN_WAKE, the daemon's kdrv_next_due). */
    int64_t wake_ms;
    bool cut_short; /* the time budget ran out (snapshot.clock_ns): gangs were left untried, and
                       the driver runs the next cycle at once */
};

/* Lowers *wake_ms to t when t is after now_ms (a time at which the cycle's outcome may change). */
static inline void sched_wake_at(int64_t *wake_ms, int64_t now_ms, int64_t t)
{
    if (t > now_ms && t < *wake_ms)
        *wake_ms = t;
}

/* Runs one cycle. Everything in *out lives in `arena`. Returns 0 or SCHED_ENOMEM. */
int sched_cycle(const struct sched_snapshot *snap, struct arena *arena, struct sched_result *out);

/* The checkpointGrace of gang g's queue (ms; 0: none, or no config): how soon a job of that
 * queue answers a request to checkpoint. */
int64_t sched_ckpt_grace(const struct sched_snapshot *snap, const struct gang *g);

/* Writes a one-line, human-readable reason ("needs 8 nvidia.com/gpu per pod x 2 pods; 0/64
 * nodes fit: 60 insufficient nvidia.com/gpu (best 4 free), 4 cordoned"). */
int sched_verdict_format(const struct sched_verdict *v, const struct cluster *c,
                         const struct config *cfg, char *buf, size_t n);
const char *sched_why_name(enum sched_why why);
/* The reason of a placement's decision row, one text for both drivers: "placed", or for a gang
 * backfilled on probation ahead of gang `to`'s reservation (to NULL: none) its promise to be
 * gone by `until` (the driver's time text), which `past` says has passed already at the
 * placement (the starving gang may evict it at once). Into buf; returns buf. */
const char *sched_placed_format(const char *to, const char *until, bool past, char *buf, size_t n);
/* "priority", "reclaim", "fair_share", "overdue": the metric label and log word of a kind. */
const char *sched_preempt_kind_name(enum sched_preempt_kind kind);
/* Why a gang is evicted, one text for both drivers (the simulator's `evict` event, the
 * daemon's Preempted Event and PodGroup condition): "preempted by B", "reclaimed by B",
 * "fair-share preempted by B", "overdue backfill evicted by B: ...", `by` the preemptor's name,
 * with what a reclaim past its bound did. Into buf; returns buf. */
const char *sched_eviction_format(const struct sched_eviction *ev, const char *by, char *buf,
                                  size_t n);

#endif
