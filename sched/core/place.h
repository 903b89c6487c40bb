/* sched/core/place.h: whole-gang placement on a cycle's working copy of the cluster.
 *
 * Owns: the working state of one cycle (free capacity per node after the placements made so far
 * in this cycle, nodes held by reservations) and the placement algorithms: topology-blind first
 * fit (the baseline) and topology-aware best fit (tightest domain, fullest nodes, NVLink islands).
 * Every tentative assignment goes through an undo log: a gang is committed whole or rolled back.
 * Files: place.c (working state, filters, the algorithms, undo log), place_reserve.c
 * (reservations, lifting holds for backfill, never-fits, verdict counts), both through the
 * helpers of place_internal.h; place_base.c (state kept between cycles); place_fitc.c (the
 * domain sums of the search kept across the gangs of a cycle).
 *
 * Must not touch: the snapshot (copied at build time), anything outside the cycle's arena.
 */
#ifndef SCHED_CORE_PLACE_H
#define SCHED_CORE_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "plugins/plugins.h"
#include "sched/core/arena.h"
#include "sched/core/cycle.h"
#include "sched/core/gpushare.h"
#include "sched/core/model.h"
#include "sched/core/place_base.h"

struct place_undo {
    uint32_t node;
    uint32_t gpu_mask;
    const struct res_vec *req;
};

/* Why the winner won: its largest weighted score terms (term index into plugin_scores, raw
 * value 0..SCORE_MAX), largest contribution first. */
#define PLACE_TOP_TERMS 3
struct place_score {
    uint8_t n;
    uint8_t term[PLACE_TOP_TERMS];
    uint16_t value[PLACE_TOP_TERMS];
};

struct place_state {
    struct place_base *b; /* the per-node arrays below live there (see place_base.h) */
    const struct cluster *c;
    struct arena *arena;
    struct filter_env env;
    bool topology;         /* topology-aware algorithms and island-aware GPU choice */
    uint32_t island_limit; /* gpu_pick's limit: largest NVLink island in the cluster, 0 = blind */
    /* per node */
    struct res_vec *free; /* allocatable - used - tentatively placed */
    uint32_t *gpu_free;   /* GPU indices not held */
    uint8_t *ok;          /* passes node-ready and cordon, and not held by a reservation */
    uint8_t *held;        /* held by a reservation this cycle */
    const struct node_state *state; /* the snapshot's usage (release times) */
    int64_t hold_until_ms;          /* earliest expected start of this cycle's reservations */
    uint8_t *elig;                  /* scratch: [GANG_MAX_SETS][n] per-podset filter result */
    bool elig_on[GANG_MAX_SETS];    /* elig row s is meaningful (some filter is active) */
    /* island limit per pod set of the gang being placed: the largest island among the nodes
     * the set may use (a set restricted to 2x4 nodes may span their islands) */
    uint32_t cur_tp;              /* tp_size of the gang being placed (0 = whole pods) */
    const struct gang **held_for; /* preemptor holds: node usable only by this gang, or NULL */
    bool any_held_for;            /* some node is held for a preemptor this cycle */
    /* the nodes with held_for set and those with held set this cycle, each visited in
     * ascending order (what a scan of every node would do) without a scan of every node */
    struct place_nodes {
        uint32_t *v;
        uint32_t n, cap;
        bool sorted;
    } for_nodes, res_nodes;
    bool res_lost;  /* a held node could not be listed (out of memory): holds are never lifted */
    int only_level; /* trial placements inside one domain: level, -2 = anywhere */
    uint32_t only_domain;
    struct place_undo *rel; /* released pods of would-be victims, for undo */
    uint32_t n_rel, cap_rel;
    uint8_t *soft; /* node has a PreferNoSchedule taint the gang being placed does not tolerate */
    bool has_soft; /* some node has a PreferNoSchedule taint */
    /* preferred node affinity of the gang being placed: tier[i] 0 for the nodes its pod sets
     * prefer most (largest sum of weights), 1 for the next, ...; read only when n_tiers > 1 */
    uint8_t *tier;
    uint32_t n_tiers;
    /* the slots per tier of the domains of the level being searched, for place_pref_value
     * (place_pref.c): pref_src points at them (pref_cnt, or the kept sums'), NULL when none;
     * pref_cnt is summed for the domains listed in pref_doms */
    const uint32_t *pref_src;
    uint32_t *pref_cnt, *pref_doms, n_pref_doms;
    /* best near miss of the last failed domain search: the domain that held the most pods */
    int near_level;
    uint32_t near_domain;
    uint64_t near_pods;
    const struct podset *limit_set[GANG_MAX_SETS];
    uint32_t limit[GANG_MAX_SETS];
    /* nodes with ok=1 bucketed by free GPU count: b->key, b->free_gpus, pb_iter_* */
    uint8_t *key;
    /* undo log of the gang being placed */
    struct place_undo *log;
    uint32_t n_log, cap_log;
    /* scratch for domain search: per node slots, per domain sums, ordering */
    uint32_t *slots;
    uint64_t *dom_cap;
    int64_t *dom_free;
    uint32_t *order;
    uint32_t *useful;  /* nodes with a slot for the gang being placed */
    uint32_t *touched; /* domains with a useful node, at the level being summed */
    uint32_t max_domains;
    struct place_fitc *fitc; /* the domain sums kept across gangs (place_fitc.c), or NULL */
    bool no_shortcuts;       /* sched_snapshot.no_shortcuts */
    uint32_t fit_cached;     /* domain searches the cache summed (sched_result.n_fit_cached) */
    /* per level: GPUs of the largest domain (schedulable nodes), and whether the level only
     * repeats the node level (every domain a single node, e.g. no clique label on HGX) */
    int64_t level_max_gpus[TOPO_MAX_LEVELS];
    bool level_is_nodes[TOPO_MAX_LEVELS];
    /* scoring (plugins/registry.c): the weights of the gang being placed, and for its pod
     * size the preference order of nodes by free GPU count (rank: position of a count in that
     * order), cached while weights and pod size stay the same */
    const double *cur_w;
    const double *rank_w;
    int64_t rank_gpus;
    uint8_t key_order[NODE_MAX_GPUS + 1];
    uint8_t rank[NODE_MAX_GPUS + 1];
    int64_t node_norm; /* GPUs of the largest node (>= 1): normaliser of node scores */
    int64_t ok_gpus;   /* GPUs of the nodes that pass the node-only filters: the cluster's norm */
    int64_t *dom_capg; /* scratch per domain: GPUs of its useful nodes */
    struct place_score top; /* the top score terms of the last successful placement */
    /* static capacity (ready, schedulable nodes) for "never fits" */
    struct res_vec max_alloc; /* per resource, the largest node */
    int64_t static_gpus;
    /* GPU shares (place_share.c): ids of nvidia.com/gpumem, gpumem-percentage, gpucores (-1:
     * never named); the n_gs nodes with a HAMi register (gs_node: their node index, ascending;
     * gs_of: a node's entry or -1), their per-device capacity and usage (MiB, percent, pods;
     * kept in the base between cycles);
     * the undo log of the share gang being placed; the largest device memory (MiB) and device
     * count of a ready node; the policies of gangs that name none */
    int share_res[3];
    uint32_t n_gs;
    const uint32_t *gs_node;
    const int32_t *gs_of;
    struct gs_node *gs;
    struct place_gs_undo {
        uint32_t k, mask;
        struct gs_req req;
    } * gs_log;
    uint32_t n_gs_log, cap_gs_log;
    int64_t gs_max_mem;
    uint32_t gs_max_devs;
    enum gs_policy share_node_default, share_gpu_default;
    /* inter-pod constraints (place_pods.c): the snapshot's bound pods, the pods committed this
     * cycle, the indices of those that carry anti-affinity terms or host ports, and for the gang
     * being placed (pods_gang) the filter that rejected each node per pod set (FILTER_* + 1, 0
     * none; [GANG_MAX_SETS][n]), whether some earlier pod meets an affinity term of each set,
     * its affinity terms its own pods may meet, whether its pods constrain one another (placed
     * pod by pod) and the set of each pod placed so far */
    const struct sched_pod *bound;
    uint32_t n_bound;
    struct sched_pod *placed;
    uint32_t n_placed, cap_placed;
    uint32_t *rules;  /* those pods (bound first, then placed) with anti-affinity or host ports */
    uint32_t *scored; /* and those with affinity or preferred terms (place_podpref.c) */
    uint32_t n_scored, cap_scored;
    struct place_podpref *podpref; /* scratch of place_podpref.c, allocated at first use */
    struct place_podmark *podmark; /* kept marks of place_podmark.c, allocated at first use */
    struct place_podix *podix;     /* the bound pods by label, built at first need, or NULL */
    struct place_keydom **keydoms; /* the nodes by topology key, per key used this cycle */
    uint32_t n_keydoms;
    uint32_t *rel_on; /* per node: released pods of would-be victims (rel), when some bound pod
                         names its running gang's set (sched_pod.set), else NULL */
    uint32_t n_rules, cap_rules;
    bool pods_lost; /* a committed pod could not be recorded (out of memory) */
    const struct gang *pods_gang;
    uint8_t *pods_why;
    bool pods_any[GANG_MAX_SETS];
    struct place_pods_term *pods_terms;
    uint32_t n_pods_terms, cap_pods_terms;
    struct place_pods_spread *pods_spreads; /* its DoNotSchedule topology spreads */
    uint32_t n_pods_spreads, cap_pods_spreads;
    struct place_pods_kept *pods_kept; /* spreads kept for the cycle per shape of gang */
    uint32_t n_pods_kept, cap_pods_kept;
    uint64_t pods_kept_bytes;
    bool pods_self;
    bool pods_soft_self; /* its pods bear on one another's preferences (placed pod by pod) */
    uint32_t *pods_tset; /* [n_pods]: the set of each pod in fill order */
    struct sched_assign *pods_filled;    /* [n_pods]: its pods in fill order (place_set_order) */
    const struct sched_assign *pods_own; /* its pods placed so far, while pods_soft_self */
    uint32_t n_pods_own;
    /* the rows of set 0 in pods_why and elig are those of a gang of shape rows_shape (0: none
     * a replica may carry on) against the pods bound and the first rows_placed placed ones
     * (place_pods_carry) */
    uint64_t rows_shape;
    uint32_t rows_placed;
    uint8_t *rows_filt; /* [n]: set 0's filter row under them, when the shape has spreads (a
                           node a spread refused may be allowed again) */
    bool rows_carried;  /* the gang being placed carries them (place_pods_carry) */
    bool rows_reopened; /* and a spread allowed some node again (its smallest count grew) */
    /* where the last one-pod replica's search took its node (place_one), for the next replica
     * of its run: every node the search passed was refused or too full, and stays so while
     * the rows only refuse more (not rows_reopened) and no node but the replica's own (which
     * its rules then refuse) changed bucket (base->moves) */
    struct place_one_at {
        bool valid;
        int pass;
        uint32_t step, node, n_placed;
        uint64_t shape, moves;
        int only_level;
        uint32_t only_domain;
        struct pb_iter it;
    } one_at;
};

int place_state_build(struct place_state *st, const struct sched_snapshot *snap,
                      struct arena *arena);

/* Places every pod of g or nothing. On success writes g->n_pods assignments into `out`, the
 * tightest domain holding the gang into *level / *domain (-1 when it spans the cluster) and the
 * winner's top score terms into st->top, commits and returns SCHED_WHY_PLACED. On failure the state
 * is unchanged and the return value says why: SCHED_WHY_RESOURCES (not enough free capacity
 * anywhere) or SCHED_WHY_TOPOLOGY (enough in total, but not inside one domain of the required
 * level). */
enum sched_why place_gang(struct place_state *st, const struct gang *g, struct sched_assign *out,
                          int *level, uint32_t *domain);

/* true when g could never fit even on an empty cluster (per-pod request above every node's
 * allocatable, or more GPUs than all schedulable nodes have). */
bool place_never_fits(const struct place_state *st, const struct gang *g, int *short_res);
/* The thorough form, O(nodes): some pod set fits no schedulable node even when empty (all of
 * its resources together, GPUs inside one island when the island rule applies). Used after a
 * failed placement, once per failing shape and cycle. */
bool place_never_fits_any_node(const struct place_state *st, const struct gang *g, int *short_res);
/* Part of it: no domain of g's required topology level could hold all of g even when empty. */
bool place_required_never_fits(const struct place_state *st, const struct gang *g);

/* Holds capacity for a starving gang: picks the tightest domain that could hold g once running
 * pods finish, preferring the one with the most free GPUs now, and marks enough of its nodes
 * held (no other gang may use them this cycle). `hint` (n_hint nodes, may be NULL/0) is the
 * gang's reservation of the previous cycle: it is kept when it still holds g inside one domain
 * of the chosen level and is expected free no later than the new pick. Returns the number of
 * nodes written to `nodes` (capacity st->c->n_nodes), 0 when nothing suitable. */
uint32_t place_reserve(struct place_state *st, const struct gang *g, uint32_t *nodes,
                       const uint32_t *hint, uint32_t n_hint);

/* How the rules among g's own pods bear on where it may wait (starvation reservations, the
 * start planner), as flags: PODS_SELF_NODE: two of its pods may not share a node (host ports,
 * anti-affinity by a key whose domains are single nodes): a node takes one of its pods;
 * PODS_SELF_LEVEL: an affinity among them by the label of a topology level, all in one domain of
 * *level (the tightest such level); PODS_SELF_OTHER: any other rule among them (anti-affinity by a
 * wider key, a spread of its own pods, affinity by a key that is no level): not modelled. 0: no
 * rule among its own pods. */
enum { PODS_SELF_NODE = 1, PODS_SELF_LEVEL = 2, PODS_SELF_OTHER = 4 };
unsigned place_pods_self(const struct place_state *st, const struct gang *g, int *level);

/* Expected start of a reservation over `nodes`: the latest release time among them. */
int64_t place_expected_start(const struct place_state *st, const uint32_t *nodes, uint32_t n);
/* Makes held nodes usable (lift true) or held again (false), for a gang that will end before
 * the reservations start. Nodes keep their holds across the call pair. */
void place_lift_holds(struct place_state *st, bool lift);

/* Would g be placed if the held nodes were free for it? Leaves the state unchanged; `out` is
 * scratch of g->n_pods entries. Tells "waits for a reservation" from "waits for capacity". */
bool place_fits_if_unheld(struct place_state *st, const struct gang *g, struct sched_assign *out);

/* Frees the capacity of a running gang in the working state (a would-be victim). Returns false on
 * out of memory. place_release_undo() restores everything released since `mark` (n_rel). */
bool place_release(struct place_state *st, const struct sched_running *r);
/* The same for its pods from .. to - 1 only (in pod order: the sets in order, count pods each),
 * but those skip[k] marks (skip NULL: none). */
bool place_release_pods(struct place_state *st, const struct sched_running *r, uint32_t from,
                        uint32_t to, const uint8_t *skip);
void place_release_undo(struct place_state *st, uint32_t mark);
/* Holds nodes for gang g for the rest of the cycle (a preemptor waiting for its victims): other
 * gangs cannot use them; g can (own holds). */
void place_hold_for(struct place_state *st, const struct gang *g, const uint32_t *nodes,
                    uint32_t n);
/* true when some node is held for g (by a snapshot hold or a plan of this cycle). */
bool place_has_hold(const struct place_state *st, const struct gang *g);

/* Trial: would g be placed now (inside domain d of `level` when level >= -1)? Leaves the state
 * unchanged. `out` is scratch of g->n_pods entries and holds the trial placement on success. */
bool place_trial(struct place_state *st, const struct gang *g, int level, uint32_t d,
                 struct sched_assign *out);

/* GPU shares (HAMi, place_share.c). place_is_share: g's pods ask for nvidia.com/gpumem,
 * gpumem-percentage or gpucores (g->share, set by gang_finalize) and some node has a HAMi
 * register. The others are used by place.c and place_reserve.c for such gangs (placement,
 * undo, never-fits, wait reason). */
static inline bool place_is_share(const struct place_state *st, const struct gang *g)
{
    return st->n_gs > 0 && g->share;
}
int place_share_build(struct place_state *st, const struct sched_snapshot *snap);
enum sched_why place_share(struct place_state *st, const struct gang *g, struct sched_assign *out);
void place_share_rollback(struct place_state *st);
bool place_share_never_fits(const struct place_state *st, const struct gang *g, int *short_res);
bool place_share_never_fits_any_node(const struct place_state *st, const struct gang *g,
                                     int *short_res);
void place_share_diagnose(const struct place_state *st, const struct gang *g,
                          struct sched_verdict *v);

/* Did the pod rules (place_pods.c) refuse g some node at its last placement attempt? */
bool place_pods_refused(const struct place_state *st, const struct gang *g);

/* Fills the filter and resource counts of a verdict for g (called on failure only). */
void place_diagnose(const struct place_state *st, const struct gang *g, struct sched_verdict *v);

#endif
