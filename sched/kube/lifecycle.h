/* sched/kube/lifecycle.h: what happens to a gang after it is bound, in a real cluster: the start
 * watchdog and the detection of broken gangs (docs/lifecycle.md, "Kubernetes").
 *
 * Owns: the decision, for every running gang of a cycle's input, whether it must be torn down
 * and why, from the pods' phases, readiness and own words, the nodes' readiness, and the
 * queue's lifecycle settings (or the PodGroup's annotations gangsched.io/start-timeout,
 * gangsched.io/max-restarts). Pure: it reads the cache's build and the times the driver gives,
 * and writes actions into an arena; the driver deletes pods, writes status and keeps strikes.
 *
 * Rules, per running gang with minMember m:
 *   - start timeout: not every member Running and Ready within the start timeout after its
 *     binds completed: torn down, the job's own failure (a strike on the node of a member that
 *     did not start);
 *   - a member Failed (phase): torn down, the job's own failure;
 *   - a member on a node NotReady for longer than the failure grace: torn down, not the job's
 *     failure (node failures never consume the retry budget);
 *   - members deleted or evicted by someone else leave fewer than m live members, some still
 *     running: torn down, not the job's failure; an elastic gang with more than m members goes
 *     on; a gang with no live member left is going away whole and is left alone;
 *   - a gang whose profile spreads (inference) replaces only the lost members: the action names
 *     them and `whole` is false.
 * Must not touch: the network, the store, the cache.
 */
#ifndef SCHED_KUBE_LIFECYCLE_H
#define SCHED_KUBE_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "sched/core/arena.h"
#include "sched/kube/cache.h"

enum klife_reason {
    KLIFE_START_TIMEOUT = 0, /* StartTimeout */
    KLIFE_MEMBER_FAILED,     /* MemberFailed */
    KLIFE_NODE_LOST,         /* NodeLost */
    KLIFE_MEMBER_LOST,       /* MemberLost */
};

struct klife_action {
    const struct kgang *gang;
    enum klife_reason reason;
    bool own;                 /* the job's own failure: counts against its retry budget */
    bool whole;               /* delete every member; else only lost[] (inference) */
    uint32_t max_restarts;    /* the gang's budget (queue default or annotation) */
    const struct kpod **lost; /* members to delete when !whole */
    uint32_t n_lost;
    const char *strike_node; /* node of a member that failed to start, or NULL */
    const char *message;     /* readable, with the pods' own words */
};

/* Times the driver keeps: when a gang's binds completed (first seen running after a restart;
 * KLIFE_TEARING: being torn down: a member still live was bound after it began and is torn
 * down too; KLIFE_EVICTING: a preemption evicts it, PodDisruptionBudgets decide when: skip), and
 * for each node of the build's cluster since when it is NotReady (0: ready). */
typedef int64_t klife_bound_fn(void *ctx, const char *gang_key);
#define KLIFE_TEARING  INT64_MIN       /* bound_ms: being deleted (teardown, rollback) */
#define KLIFE_EVICTING (INT64_MIN + 1) /* bound_ms: being evicted (preemption): left alone */

/* One action per gang that must be torn down (or lose members) now. */
int klife_check(const struct kcache_build *kb, const struct config *cfg, int64_t now_ms,
                klife_bound_fn *bound_ms, void *ctx, const int64_t *node_down_since,
                struct arena *a, struct klife_action **out, uint32_t *n_out);

const char *klife_reason_name(enum klife_reason r);

#endif
