/* sched/engine/fair.h: the fair-share history (fairShare.halfLife), one rule for both drivers.
 *
 * The rule. A queue's history is the exponentially weighted average of its share over time
 * (queue_decay, queue/queue.h: the past's weight halves every half-life). The share of an
 * instant is the dominant share of the usage the instant's decisions left (eng_fair_observe:
 * quota_share with nothing added) and holds until the next instant; before an instant's cycle
 * the history is integrated over the interval since the previous one with the share that
 * instant left:
 *     before the cycle at t_k:  hist_q = queue_decay(hist_q, share_q(t_k-1), t_k - t_k-1, halfLife)
 *                               sched_snapshot.hist_share[q] = hist_q
 *     after it:                 share_q(t_k) = eng_fair_observe(usage after t_k's decisions)
 * The simulator keeps hist and share in arrays by queue index (sched/sim/stats.c, at each
 * instant of its virtual clock); the daemon keeps them here, in a struct eng_fair, by queue
 * name and on the wall clock (sched/kube/driver_fair.c restores and persists it).
 *
 * Owns (struct eng_fair, by queue name, so that a reload that renames, reorders or removes
 * queues keeps each queue's own history): per queue, the history, the time it was integrated up
 * to, and the share the last observation left. Two cases the simulator never meets:
 *   - an interval nobody observed (a restart or fail-over: a history restored from the store;
 *     a queue absent from the configuration for a while): it is integrated with the share of
 *     the usage the next cycle sees before its decisions (what runs survived the gap);
 *   - a queue the configuration no longer has: not integrated, kept as it was (a reload that
 *     brings it back resumes it as after a gap).
 *
 * Must not touch: I/O of any kind, the config (read-only), the drivers' structures. Memory
 * through eng_realloc() (the tests' out-of-memory loops); the arena only for the quota tree.
 */
#ifndef SCHED_ENGINE_FAIR_H
#define SCHED_ENGINE_FAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "config/model.h"
#include "queue/quota.h"
#include "sched/core/arena.h"

/* share[q] = the dominant share of queue q's usage in qt (quota_share, nothing added), for the
 * n_queues queues of qt's configuration: what the history integrates until the next instant. */
void eng_fair_observe(const struct quota_tree *qt, double *share);

struct eng_fair;

struct eng_fair *eng_fair_new(void); /* NULL when out of memory */
void eng_fair_free(struct eng_fair *f);

/* Queue's history was hist at at_ms (restored from the store): the share since is unknown
 * (integrated as a gap, see above). A later call for the same queue replaces it. 0, SCHED_EINVAL
 * (hist not finite or negative, no queue) or SCHED_ENOMEM. */
int eng_fair_restore(struct eng_fair *f, const char *queue, double hist, int64_t at_ms);

/* Before a cycle at now: every queue of cfg integrated up to now (a queue never seen starts at 0
 * now; a time before the one it was integrated to integrates nothing), its history written to
 * hist[q] (cfg->n_queues entries). usage: the cycle's admitted requests in the layout of
 * sched_snapshot.usage, read only when a queue has a gap to integrate (its quota tree built in
 * a). 0 or SCHED_ENOMEM. */
int eng_fair_advance(struct eng_fair *f, const struct config *cfg, const int64_t *usage,
                     struct arena *a, int64_t now, double *hist);

/* After the cycle's decisions: each queue of cfg keeps the share of `usage` (the same layout:
 * what runs and what the cycle admitted) until the next eng_fair_advance. 0 or SCHED_ENOMEM (then
 * the queues not taken are integrated as after a gap, as with eng_fair_skip). */
int eng_fair_take(struct eng_fair *f, const struct config *cfg, const int64_t *usage,
                  struct arena *a);

/* No observation after this cycle (the driver could not take one: out of memory): the next
 * eng_fair_advance integrates every queue's interval as after a gap, with the share of the
 * usage it sees. eng_fair_take failing does the same. */
void eng_fair_skip(struct eng_fair *f);

/* The driver's wall clock stepped by step_ms (eng_clock_step): the time each queue was
 * integrated up to moves by it, so that the next interval counts real time (a forward step of an
 * hour integrated an hour of share; a step back froze the history until the clock caught up). */
void eng_fair_clock_stepped(struct eng_fair *f, int64_t step_ms);

/* Queue's history and the time it was integrated up to; false when the queue has none. */
bool eng_fair_find(const struct eng_fair *f, const char *queue, double *hist, int64_t *at_ms);

#endif
