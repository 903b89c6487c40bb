/* sched/core/preempt_int.h: what the preemption planner's files share (preempt.c the plans,
 * preempt_dom.c the domains a plan tries and their order).
 *
 * Owns: the candidate and victim-set types of one plan.
 *
 * Must not touch: anything outside one cycle's plans (the types live in the cycle's arena).
 */
#ifndef SCHED_CORE_PREEMPT_INT_H
#define SCHED_CORE_PREEMPT_INT_H

#include "sched/core/preempt.h"

#define PREEMPT_MAX_DOMAINS 512 /* domains a plan evaluates per preemptor and cycle (bounded) */

#define NO_POD UINT32_MAX
#define NO_SIB UINT32_MAX

/* A would-be victim: a running gang whole, or one member of an elastic gang alone (a gang with
 * more members than its minMember may lose members down to it; beyond that it goes whole). */
struct cand {
    uint32_t idx; /* into snap->running */
    uint32_t id;  /* the victim gang's id: ties never depend on the order of snap->running */
    enum sched_preempt_kind kind;
    uint32_t pod; /* the member alone (index into its pods), or NO_POD: the whole gang */
    uint32_t sib; /* a member: its gang's whole candidate (index into the sorted list), or NO_SIB */
    double key;   /* sort key, lower first */
    double cost;  /* of the gang whole (preempt_cost); a set of its pods costs its share of
                     the gang's GPUs */
};

/* A victim set under construction over the candidates c[0 .. n): which are in, and the members
 * taken alone (gone[pod_at[i] + k] for pod k of running gang i; n_gone[i] of them). A whole
 * gang frees the members not taken alone. */
struct vset {
    const struct cand *c;
    uint32_t n;
    uint8_t *in;      /* [n] */
    uint32_t *pod_at; /* [n_running], NO_POD for a gang without member candidates; NULL: none */
    uint8_t *gone;
    uint32_t *n_gone; /* [n_running] */
    /* the candidates with a pod in each domain of the plan's level, in victim order: domain d's
     * are dom_list[dom_first[d] .. dom_first[d + 1]) (preempt_index_domains); NULL: not made */
    uint32_t *dom_first, *dom_list;
};

/* The candidates of each domain of the level, in victim order (vs->dom_first, dom_list): each
 * plan_domain then walks its domain's own, not every candidate (the plan's cost grows with the
 * candidates once, not once per domain). 0 or SCHED_ENOMEM. */
int preempt_index_domains(struct preempt_ctx *pc, struct vset *vs, int level);

/* The domains of the level a plan tries for g, in the order it tries them (best_plan; level
 * -1: the whole cluster, one domain). When every domain can be tried within
 * PREEMPT_MAX_DOMAINS, or the planner is the blind baseline
 * (it takes the first domain that works), d is NULL: all n domains in index order. Otherwise
 * only the domains that may fit g, by a lower bound of their score (the cost of the least
 * costly victims that could free the GPUs g lacks there, fractionally, plus the placement
 * order's bias), lowest first, ties by index: the plan tries the most promising first and
 * stops once no domain left can beat the best plan found. */
struct preempt_doms {
    uint32_t n;
    uint32_t *d;   /* [n] domains, or NULL: domain i is the i-th */
    double *bound; /* [n] with d: each one's lower bound, ascending */
};
int preempt_dom_order(struct preempt_ctx *pc, const struct gang *g, const struct vset *vs,
                      int level, struct preempt_doms *o);

#endif
