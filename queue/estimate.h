/* queue/estimate.h: run-time estimates learned from finished gangs.
 *
 * Owns: per queue and gang shape (GPU count, rounded up to a power of two), and per user and
 * shape where the driver knows users (struct gang.user), a ring of the run times of the last
 * EST_RING finished gangs (and the same values sorted), and the estimates a scheduler may use for
 * a gang that did not declare gangsched.io/max-runtime: a quantile of the recent run times of the
 * same user and shape, else of the same queue and shape, else of the same queue, else of the same
 * shape in every queue (the first with at least EST_RING_MIN runs, else the first with any); for a
 * running gang, of the run times longer than it has already run. The safe
 * quantile (EST_QUANTILE, rarely exceeded) protects reservations and backfill (est_runtime,
 * est_end). Start-time estimates use est_typical_*: a quantile the driver picks (the simulator
 * gives each gang a fixed draw, see sched/sim/estimates.c) of the run times of its batch when
 * enough of it has finished (gangs of the same user and shape, else of the same queue and shape,
 * submitted within EST_BATCH_MS of it: a sweep or a job array, the nearest thing to a per-user
 * estimate in traces without users), else of the same rings as above, always of the runs longer
 * than it has already run.
 * A gang that declared a maximum run time is estimated by it. The estimator learns only what a real
 * scheduler sees: the run time of a gang once it has finished (never a trace's duration ahead of
 * time).
 *
 * Units: milliseconds. An estimate of 0 means "unknown" (nothing learned yet, nothing declared).
 *
 * Must not touch: gangs (read only), the cluster, the scheduling decisions, any I/O.
 * Memory management: est_model owns its rings; est_free() releases them.
 */
#ifndef QUEUE_ESTIMATE_H
#define QUEUE_ESTIMATE_H

#include <stdint.h>

#include "sched/core/model.h"

#define EST_RING      64            /* run times remembered per (queue, shape) */
#define EST_SHAPES    12            /* shape classes: 1, 2, 4, ... 2048+ GPUs */
#define EST_QUANTILE  0.95          /* the safe quantile: reservations and backfill use it */
#define EST_BATCH_MS  (3600 * 1000) /* a batch: submitted within an hour of each other */
#define EST_BATCH_MIN 3             /* finished runs of its batch before a gang is judged by them */
#define EST_RING_MIN  4             /* runs a ring needs to be preferred to a less specific one */
#define EST_USERS_MAX (1u << 16)    /* users learned per model (more are learned as unknown) */

struct est_ring {
    int64_t v[EST_RING];    /* in arrival order (a ring) */
    int64_t s[EST_RING];    /* the same values sorted ascending */
    int64_t sub[EST_RING];  /* submit time of v[k]'s gang, ms */
    int64_t ssub[EST_RING]; /* submit time of s[k]'s gang, ms (a batch comes out sorted) */
    uint32_t n;             /* filled entries, <= EST_RING */
    uint32_t next;          /* slot of the next observation */
};

struct est_model {
    uint32_t n_queues;
    struct est_ring *rings; /* [n_queues + 1][EST_SHAPES + 1]: shape EST_SHAPES is "any shape",
                               queue n_queues is "any queue" */
    uint32_t n_users;       /* users with room for rings (grown as they finish gangs) */
    struct est_ring **user_rings; /* [n_users][EST_SHAPES + 1], user u at row u - 1, NULL until
                                     its first run of that shape (a user runs a few shapes:
                                     about 2 KiB per ring used); a ring index past the queues'
                                     (n_queues + 1) * (EST_SHAPES + 1) names one of these */
};

#define EST_READS 4 /* rings an observation goes into; rings a gang's estimates may read */

/* 0 or SCHED_ENOMEM. */
int est_init(struct est_model *m, uint32_t n_queues);
/* Makes room for the rings of users 1..n now (each ring is made at its first run). 0 or
 * SCHED_ENOMEM. */
int est_reserve_users(struct est_model *m, uint32_t n);
/* The rings (ring indices, see est_model) an observation of a gang of `queue`, `user` (0:
 * unknown) and `gpus` GPUs goes into: 3, 4 with a user, or 0 (not learned: no model, or no such
 * queue). A user's rings need not exist yet (est_observe creates them). */
uint32_t est_rings_observed(const struct est_model *m, uint32_t queue, uint32_t user, int64_t gpus,
                            uint32_t idx[EST_READS]);
/* The rings every estimate of g (est_runtime, est_end, est_typical_*) depends on, ring indices:
 * the ones read and the ones whose count decides which is read. While none of them changes
 * (est_observe into another ring does not), g's estimates stay the same; a user's rings that do
 * not exist yet are listed too (its first run changes them). Returns how many (1 to EST_READS),
 * 0 without a model. */
uint32_t est_rings_read(const struct est_model *m, const struct gang *g, uint32_t idx[EST_READS]);
/* The least run time above x learned in rings idx[0..n) (INT64_MAX: none). */
int64_t est_next_run(const struct est_model *m, const uint32_t *idx, uint32_t n, int64_t x);
void est_free(struct est_model *m);
/* A gang of `queue`, `user` (0: unknown) and `gpus` GPUs, submitted at submit_ms, finished
 * after running `runtime_ms`. 0, or SCHED_ENOMEM when the user's rings could not be made (the
 * queue's rings learned it all the same). A user above EST_USERS_MAX is learned as unknown. */
int est_observe(struct est_model *m, uint32_t queue, uint32_t user, int64_t gpus,
                int64_t runtime_ms, int64_t submit_ms);
/* Run time of g from its start: its declared maximum, else the quantile q (0..1] of the learned
 * run times, else 0 (unknown). */
int64_t est_runtime(const struct est_model *m, const struct gang *g, double q);
/* End of g started at start_ms, seen at now_ms: start plus the quantile q of the learned run
 * times; once it has run longer, start plus the quantile q of the run times longer than it has
 * already run (else twice what it has run); start plus its declared maximum when it has one;
 * INT64_MAX when nothing is known. */
int64_t est_end(const struct est_model *m, const struct gang *g, int64_t start_ms, int64_t now_ms,
                double q);

/* For start-time estimates (not for decisions): g's run time from its start, the quantile u of
 * its batch's run times, else of the learned ones; its declared maximum first; 0 = unknown. */
int64_t est_typical_runtime(const struct est_model *m, const struct gang *g, double u);
/* For start-time estimates: the end of g started at start_ms, seen at now_ms: start plus the
 * quantile u of its batch's run times longer than it has run (at least EST_BATCH_MIN of them),
 * else of the learned ones longer than it has run, else now plus what it has run; start plus its
 * declared maximum when it has one; INT64_MAX when nothing is known. */
int64_t est_typical_end(const struct est_model *m, const struct gang *g, int64_t start_ms,
                        int64_t now_ms, double u);

/* A fixed draw in (0, 1) for the gang numbered id (splitmix64 of id + 1): the quantile u of its
 * run time the start planner uses. One draw per gang, not the median for all: a waiting gang
 * starts at the k-th release among many running gangs, and the k-th of the medians is much later
 * than the k-th of the run times themselves (the first of many releases comes early); drawn
 * quantiles give the planner releases spread as the run times are. */
double est_draw(uint64_t id);

#endif
