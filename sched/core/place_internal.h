/* sched/core/place_internal.h: helpers shared by the files of placement (place.c, which owns
 * them, and place_reserve.c). Not for any other module: everything here works on the cycle's
 * working state (struct place_state, place.h) and its scratch arrays.
 *
 * Must not touch: anything outside place_state; callers outside sched/core/place*.c use place.h.
 */
#ifndef SCHED_CORE_PLACE_INTERNAL_H
#define SCHED_CORE_PLACE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/place.h"

/* Per pod set of g: the active pod-level filters' verdict per node (st->elig), the island limit,
 * the score weights and the node ranking for the gang's pod size. */
void place_prepare_elig(struct place_state *st, const struct gang *g);
/* The island limit that applies to pod set `ps` of the gang being placed. */
uint32_t place_set_limit(const struct place_state *st, const struct podset *ps);
/* Adds node i to list l (false on out of memory); place_nodes_sort: ascending, each node once. */
bool place_nodes_add(struct place_state *st, struct place_nodes *l, uint32_t i);
void place_nodes_sort(struct place_nodes *l);
/* GPUs for one pod of `ps` on node i now (*mask), or false. */
bool place_pod_fits(const struct place_state *st, const struct podset *ps, uint32_t i,
                    uint32_t *mask);
/* Nodes of domain d of `level` (the cluster when level < 0) in score order into st->order;
 * returns their count. */
uint32_t place_order_domain(struct place_state *st, int level, uint32_t d);
/* Per-domain sums over st->useful (dom_cap, dom_free, dom_capg), the touched domains listed in
 * st->touched; returns their count. place_clear_domains marks them unvisited again. */
uint32_t place_sum_domains(struct place_state *st, const struct gang *g, int level,
                           uint32_t n_useful);
void place_clear_domains(struct place_state *st, uint32_t nt);
/* Slots of every eligible node for g into st->slots, by `slots_fn`; the nodes with a slot in
 * st->useful; returns their count. */
uint32_t place_collect_useful(struct place_state *st, const struct gang *g,
                              uint32_t (*slots_fn)(const struct place_state *,
                                                   const struct podset *, uint32_t));
/* The order the fills take g's pod sets in (most GPUs per pod first, ties in set order) into
 * ord; first (or NULL): each set's first pod in the placement's pods. Returns the sets. */
uint32_t place_set_order(const struct gang *g, uint8_t ord[GANG_MAX_SETS],
                         uint32_t first[GANG_MAX_SETS]);
/* Pods of `ps` that node i can take now (resources and GPUs), filters not applied. */
uint32_t place_pod_slots(const struct place_state *st, const struct podset *ps, uint32_t i);

/* ---- preferred node affinity (place_pref.c) ----------------------------------------------- */

/* The preference tiers of the nodes for g (st->tier, st->n_tiers: 1 when g has no preferences
 * or every node scores alike). */
void place_pref_tiers(struct place_state *st, const struct gang *g);
/* Node i's preference tier for the gang being placed (0: most preferred). */
static inline uint32_t place_tier_of(const struct place_state *st, uint32_t i)
{
    return st->n_tiers > 1 ? st->tier[i] : 0;
}

/* May what place_podpref.c (tallies), place_podmark.c (marks) and place_pods.c (spreads) keep
 * for the cycle be read and kept: not in a preemption trial (what is kept does not see its
 * releases), not while every search runs from scratch (sched_snapshot.no_shortcuts). */
static inline bool place_keeps(const struct place_state *st)
{
    return !st->no_shortcuts && st->n_rel == 0;
}

/* ---- inter-pod preferences (place_podpref.c) ---------------------------------------------- */

/* Do inter-pod preferences bear on where g goes: a preferred term or ScheduleAnyway spread of
 * its own, or an earlier pod's term (st->scored) that selects one of its pod sets? */
bool place_podpref_applies(struct place_state *st, const struct gang *g);
/* Adds g's inter-pod preference score of each node to w[i] (every node): per pod set,
 * kube-scheduler's InterPodAffinity and PodTopologySpread scores, each normalised to 0..100 over
 * the cluster's nodes; false on out of memory (w partly added). */
bool place_podpref_scores(struct place_state *st, const struct gang *g, uint32_t *w);

/* For place_podpref.c (place_pods.c): pod k of the bound then placed ones, or NULL while a
 * preemption plan has released it (its running gang's pods of its set on its node: an elastic
 * gang's members taken alone release the set's pods on that node as one); fn(ctx, p) for each
 * earlier pod (bound, by the label index, then placed) that term t, carried by a pod of
 * namespace ns, selects and no preemption trial has released; does node i pass spread sp's
 * policies for pod set s (the set's node selector, required node affinity and taints as the
 * constraint says; a node counts when it also has every key of the set's spreads of the kind)? */
const struct sched_pod *place_pods_at(const struct place_state *st, uint32_t k);
void place_pods_selected(struct place_state *st, const struct pod_term *t, const char *ns,
                         void (*fn)(void *ctx, const struct sched_pod *p), void *ctx);
bool place_pods_spread_policy(const struct place_state *st, const struct gang *g, uint32_t s,
                              const struct pod_spread *sp, uint32_t i);

/* ---- domain sums kept across the gangs of a cycle (place_fitc.c) -------------------------- */

/* The sums of one level: per domain d, pods of set s its useful nodes take (cap[d * GANG_MAX_SETS
 * + s]), their free GPUs (free[d]) and GPUs (capg[d]). The domains with a useful node are those
 * with cnt[d] > 0, d < n_dom (the cache), or the nt listed in st->touched (cnt NULL: summed from
 * scratch); place_dsum_next visits them. */
struct place_dsum {
    const uint64_t *cap;
    const int64_t *free, *capg;
    const uint32_t *cnt;
    uint32_t n_dom, nt;
};
/* The next domain with a useful node (*d), from position *k (0 at the start), or false. */
static inline bool place_dsum_next(const struct place_state *st, const struct place_dsum *ds,
                                   uint32_t *k, uint32_t *d)
{
    if (ds->cnt) {
        while (*k < ds->n_dom && !ds->cnt[*k])
            (*k)++;
        if (*k >= ds->n_dom)
            return false;
        *d = (*k)++;
        return true;
    }
    if (*k >= ds->nt)
        return false;
    *d = st->touched[(*k)++];
    return true;
}
/* true when g's domain sums come from the cycle's cache, brought up to date (g's sets filtered
 * by nothing but the nodes' state, no trial, the second gang in a row of its signature or
 * later); false: sum them from scratch (place_sum_domains). */
bool place_fitc_ready(struct place_state *st, const struct gang *g);
/* After place_fitc_ready: the cached sums of `level` (-1: the whole cluster). */
void place_fitc_level(const struct place_state *st, int level, struct place_dsum *ds);

/* Level l is worth searching for g (large enough, not a repeat of the node level). */
bool place_level_useful(const struct place_state *st, const struct gang *g, int l);
/* Domain d's sums (dom_cap) hold every pod set of g. */
bool place_domain_holds(const struct place_state *st, const struct gang *g, uint32_t d);
/* Node i passes the filters of pod set s of the gang being placed (and the trial's domain). */
bool place_eligible(const struct place_state *st, uint32_t s, uint32_t i);
/* Takes `req` and the GPUs of `mask` on node i, logged for rollback; false on out of memory. */
bool place_apply(struct place_state *st, uint32_t i, uint32_t mask, const struct res_vec *req);
/* The level the domain search starts at (the node level, or the gang's preferred level). */
int place_start_level(const struct place_state *st, const struct gang *g);

/* Undoes every tentative assignment of the gang being placed (the undo log). */
void place_rollback(struct place_state *st);

/* ---- inter-pod constraints (place_pods.c) ------------------------------------------------ */

/* Reads the snapshot's bound pods (at place_state_build). */
void place_pods_build(struct place_state *st, const struct sched_snapshot *snap);
/* ANDs into st->elig, per pod set of g, the nodes the constraints allow against the pods bound
 * or placed earlier, and notes whether g's pods constrain one another (st->pods_self). Out of
 * memory makes every node ineligible. Called by place_prepare_elig. */
void place_pods_rows(struct place_state *st, const struct gang *g);
/* The rows of a replica of the gang whose rows are in place (the same shape, one pod set of
 * anti-affinity terms and, for a gang of one pod, DoNotSchedule spreads only, no trial,
 * no_shortcuts off), brought up to date with the pods placed since instead of made again from
 * every node; false (nothing done that matters) when they cannot be: place_prepare_elig then
 * makes them. */
bool place_pods_carry(struct place_state *st, const struct gang *g);
/* The FILTER_* that rejected node i for set s of g at the last place_pods_rows, or -1. */
int place_pods_why(const struct place_state *st, const struct gang *g, uint32_t s, uint32_t i);
/* Places a gang whose pods constrain one another pod by pod (see place_pods.c); leaves its
 * assignments in the undo log like the other algorithms. */
enum sched_why place_pods_gang(struct place_state *st, const struct gang *g,
                               struct sched_assign *out, int *level, uint32_t *domain);
/* fn(ctx, k) for each pod k (of the bound then placed ones) that term t could select, by the
 * pods' label index (place_podix.c): those with a value of t's In requirement, none when t
 * selects no pod; false (and no call) when t has no In requirement, or out of memory: every pod
 * is a candidate. Callers still test each with podaff_selects. place_podix_placed adds placed
 * pod k (its meta m) to the index. */
bool place_podix_each(struct place_state *st, const struct pod_term *t,
                      void (*fn)(void *ctx, uint32_t k), void *ctx);
void place_podix_placed(struct place_state *st, uint32_t k, const struct pod_meta *m);
/* The nodes by their value of a topology key (place_podix.c): dom[node] its domain id in
 * 0 .. n_dom - 1, UINT32_MAX without the key; the nodes of domain d are
 * nodes[first[d] .. first[d + 1]), ascending. Kept for the cycle; NULL on out of memory. */
struct place_keydom {
    const char *key;
    uint32_t *dom;
    uint32_t n_dom;
    uint32_t *first, *nodes;
};
const struct place_keydom *place_keydom(struct place_state *st, const char *key);
/* Sets why[i] = code on each node whose why[i] is 0 and whose domain is marked (mark[d],
 * d < kd->n_dom; mark[kd->n_dom] must be 0). Costs the marked domains' nodes and n_dom / 8
 * word reads. */
void place_keydom_reject(const struct place_keydom *kd, const uint8_t *mark, uint8_t *why,
                         uint8_t code);
/* Kept marks of required pod rules (place_podmark.c). place_podmark_term: the domains of kd
 * holding an earlier pod that term t, carried by a pod of namespace ns, selects, brought up to
 * date (*any: some such pod on a node with the key), or NULL when none is kept (read the pods);
 * place_podmark_scan: a clear mark of kd's domains to read them into, valid until the next call
 * (NULL out of memory); place_podmark_keep: offers such a mark just made from `seen` pods (kept
 * from MARK_MIN, which then owns it); place_podmark_rules: the host ports and anti-affinity terms
 * of the earlier pods that carry some (st->rules) against a pod m (NULL: none) into why (FILTER_* +
 * 1 where 0), false on out of memory. */
const uint8_t *place_podmark_term(struct place_state *st, const struct pod_term *t, const char *ns,
                                  const struct place_keydom *kd, bool *any);
uint8_t *place_podmark_scan(struct place_state *st, const struct place_keydom *kd);
void place_podmark_keep(struct place_state *st, const struct pod_term *t, const char *ns,
                        const struct place_keydom *kd, uint8_t *mark, bool any, uint32_t seen);
bool place_podmark_rules(struct place_state *st, const struct pod_meta *m, uint8_t *why);
/* Records the committed pods of g (out: its assignments) for the gangs placed after it. */
void place_pods_commit(struct place_state *st, const struct gang *g,
                       const struct sched_assign *out);

/* ---- preferred node affinity: domain values (place_pref.c) ------------------------------- */

/* The slots per tier of each domain of `level`, for place_pref_value: summed over the useful
 * nodes (st->useful, n_useful; slots in st->slots), or (place_pref_kept) from the domain sums
 * kept across gangs; false on out of memory (no values: st->pref_src NULL). place_pref_clear
 * forgets them. */
bool place_pref_domains(struct place_state *st, const struct gang *g, int level, uint32_t n_useful);
bool place_pref_kept(struct place_state *st, int level);
void place_pref_clear(struct place_state *st);
/* Domain d's preference value for g: the sum of the tier weights of the g->n_pods slots a fill
 * in tier order would take there. Only while st->pref_src is set. */
uint64_t place_pref_value(const struct place_state *st, const struct gang *g, uint32_t d);
/* For place_pref_kept: the kept slots of node i (every set; 0 when not useful), and the kept
 * slots per tier of `level` for the current tiers (place_base.tier_key; [d * PLACE_PREF_TIERS +
 * t]), (re)built when they follow other tiers; NULL on out of memory. */
uint32_t place_fitc_slots(const struct place_state *st, uint32_t i);
const uint32_t *place_fitc_tiers(struct place_state *st, int level);

#endif
