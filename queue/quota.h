/* queue/quota.h: the quota tree of cohorts and queues, and the admission arithmetic.
 *
 * Owns: per cycle, for every cohort and queue, per flavor and quota-tracked resource: subtree
 * quota, the private (non-lendable) part, usage, and from them what a queue may still take now
 * (available) and could ever take (potential). The recurrences follow Kueue's resource nodes so
 * that operators who know Kueue get the same numbers (docs/config.md, "Quota semantics"):
 *
 *   subtree(queue)  = nominal
 *   subtree(cohort) = own nominal + sum over children c of (subtree(c) - local(c))
 *   local(n)        = lendingLimit set ? max(0, subtree(n) - lendingLimit) : 0
 *   usage(cohort)   = sum over children c of max(0, usage(c) - local(c))
 *   available(root) = subtree - usage
 *   available(n)    = max(0, local - usage)
 *                     + min(available(parent),
 *                           borrowingLimit set ? subtree - local - max(0, usage - local) + BL :
 * inf) potential(root) = subtree potential(n)    = min(local + potential(parent), borrowingLimit
 * set ? subtree + BL : inf)
 *
 * A request fits queue q on flavor f when, for every tracked resource it asks for, the request
 * is <= available(q). It borrows when usage + request > nominal. It can never fit when the
 * request is > potential(q). Resources no quota mentions are not limited.
 *
 * quotaMapping (config_qmap): a request is first projected onto the tracked resources: a mapped
 * source adds weight x its request to its target, and the devices of a mapped DeviceClass leave
 * the accelerator's count for their target. A target with fractional weights keeps every figure
 * of the tree in 1/scale units (scale = the lcm of its weights' denominators), so fractions add
 * up exactly (7 slices of weight 1/7 are one GPU). Without a mapping every scale is 1 and the
 * projection is the request itself.
 *
 * Device kinds (`devices:`, res.h): a pod of another kind (amd.com/gpu next to nvidia.com/gpu)
 * has its count under the kind's own resource and mirrored in the accelerator slot; the slot's
 * projection leaves those out, so each kind counts under its own name. When any kind has a quota
 * every kind is tracked: a queue without quota of a kind has nominal 0 of it.
 *
 * Must not touch: the config (read-only), the cluster, I/O. Memory: everything in the arena.
 */
#ifndef QUEUE_QUOTA_H
#define QUEUE_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

#include "config/model.h"
#include "sched/core/arena.h"
#include "sched/core/res.h"

#define QUOTA_INF INT64_MAX

struct quota_tree {
    const struct config *cfg;
    uint32_t n_nodes; /* cohorts first (index = cohort index), then queues */
    uint32_t n_flavors;
    uint32_t n_tracked; /* resources with a quota somewhere */
    int tracked[RES_MAX];
    int64_t scale[RES_MAX]; /* [n_tracked]: quota units per base unit of tracked[k] (>= 1) */
    int32_t *parent;        /* [n_nodes]: node index or -1 */
    /* [n_nodes][n_flavors][n_tracked] */
    int64_t *nominal, *borrow_limit, *lend_limit, *subtree, *local, *usage;
    int64_t *borrowed; /* at a root: what the queues of its tree use above their nominal quota,
                          kept by quota_charge (quota_waits_for_pool's only use) */
    bool *queue_uses_flavor; /* [n_queues][n_flavors]: flavors a queue admits on, in order */
    double *weight;          /* [n_flavors][n_tracked]: a unit's fair-share weight (flavors'
                                resourceWeights, 1 unless given), quota_share's only use */
};

/* Builds the tree from the config and the queues' current usage, given per queue as
 * usage[(q * n_flavors + f) * RES_MAX + r] in base units (NULL = nothing in use). */
int quota_build(struct quota_tree *t, const struct config *cfg, const int64_t *usage,
                struct arena *a);

static inline uint32_t quota_queue_node(const struct quota_tree *t, uint32_t q)
{
    return t->cfg->n_cohorts + q;
}

/* Per tracked resource k (0..n_tracked-1) of node n on flavor f. */
int64_t quota_available(const struct quota_tree *t, uint32_t n, uint32_t f, uint32_t k);
int64_t quota_potential(const struct quota_tree *t, uint32_t n, uint32_t f, uint32_t k);

enum quota_fit {
    QUOTA_FITS = 0, /* within nominal */
    QUOTA_BORROWS,  /* fits, using quota lent by others */
    QUOTA_WAIT,     /* does not fit now */
    QUOTA_NEVER,    /* above what the queue could ever get */
};

/* The limiting resource, for reasons, in base units of `res` (with a fractional mapping: need and
 * used rounded up, the others down). */
struct quota_short {
    int res; /* resource id */
    uint32_t flavor;
    int64_t need;      /* request */
    int64_t nominal;   /* queue's nominal */
    int64_t used;      /* queue's usage */
    int64_t available; /* what it may still take, borrowing included */
    int64_t potential; /* the most it could ever take */
};

/* Checks `need` (a gang's total request) for queue q on flavor f. Fills *why on WAIT/NEVER. */
enum quota_fit quota_check(const struct quota_tree *t, uint32_t q, uint32_t f,
                           const struct res_vec *need, struct quota_short *why);
/* Adds (sign +1) or removes (-1) a request to queue q's usage, propagated up the tree. */
void quota_charge(struct quota_tree *t, uint32_t q, uint32_t f, const struct res_vec *need,
                  int sign);
/* Dominant share of queue q: max over tracked resources of usage (plus `extra` when not NULL,
 * charged on flavor f; QUOTA_FIRST_FLAVOR: the first flavor the queue admits on) over the
 * queue's nominal summed over flavors (or, when the nominal is 0, over its root cohort's subtree
 * quota); above a nonzero nominal, 1 plus the part above it over the root cohort's subtree quota
 * (borrowers compare by how much of the shared pool they take, as Kueue's dominant resource
 * share, so a small tenant borrowing a little is not ranked behind a large one borrowing much).
 * Each flavor's units count with its resourceWeights weight (quota_tree.weight; Kueue's
 * flavor-aware share, KEP-8902): usage, nominal and pool are weighted sums over flavors, so with
 * every weight 1 they are plain sums. 0 when nothing is tracked. */
#define QUOTA_FIRST_FLAVOR UINT32_MAX
double quota_share(const struct quota_tree *t, uint32_t q, uint32_t f, const struct res_vec *extra);
/* true when queues a and b are in the same cohort tree (same root). */
bool quota_same_tree(const struct quota_tree *t, uint32_t a, uint32_t b);
/* `need` projected on tracked resource r (quotaMapping applied), in the unit of quota_used and
 * quota_nominal; 0 when r is not tracked. */
int64_t quota_need_of(const struct quota_tree *t, const struct res_vec *need, int r);
/* Queue q's usage and nominal quota of resource r on flavor f (0 when r has no quota), in quota
 * units: base units times the tracked resource's scale (1 without fractional mappings). */
int64_t quota_used(const struct quota_tree *t, uint32_t q, uint32_t f, int r);
int64_t quota_nominal(const struct quota_tree *t, uint32_t q, uint32_t f, int r);
/* Would queue q stay within its nominal quota on flavor f, every tracked resource, with `need`
 * admitted on top of its usage (with_usage), or on its own once the queue's running gangs have
 * given theirs back (!with_usage)? Reclaim and firm reservations are for such gangs. */
bool quota_within_nominal(const struct quota_tree *t, uint32_t q, uint32_t f,
                          const struct res_vec *need, bool with_usage);
/* Does `need` wait for the cohort's lendable quota on flavor f, a wait that borrowers prolong
 * and can end: on some tracked resource it is more than queue q may take now and would still be
 * with q's own borrowingLimit lifted (it waits for what the rest of its quota tree uses, not for
 * its own limit), and on each such resource it is no more than that plus what the tree's queues
 * use above their nominal quota (were it more, only lenders' use within their own guarantee
 * could end the wait). The cohort hold (sched/core/cycle.c) is for these gangs only. */
bool quota_waits_for_pool(const struct quota_tree *t, uint32_t q, uint32_t f,
                          const struct res_vec *need);
/* Usage over nominal + borrowing limit on some (flavor, tracked resource): a violation. */
bool quota_violated(const struct quota_tree *t, uint32_t q);

#endif
