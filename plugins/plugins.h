/* plugins/plugins.h: placement plugins, listed explicitly in plugins/registry.c.
 *
 * Owns: the node filters (hard constraints, one reason code each), the score terms (soft
 * preferences, each a normalised 0..1000 value, weighted per scoring profile) and the GPU choice
 * inside a node (NVLink islands). Filters are pure predicates over const model objects; the
 * placement engine (sched/core/place.c) evaluates them once per pod set and cycle and caches the
 * result, so a filter's cost is paid per node, not per pod. Score terms are pure functions of a
 * candidate's numbers (struct score_in); the engine combines them with the gang's weights. Adding
 * a filter or a score term is adding one file and one line in registry.c.
 *
 * Must not touch: usage (filters see only static node facts; free capacity is the engine's
 * business), any state between calls, I/O.
 */
#ifndef PLUGINS_PLUGINS_H
#define PLUGINS_PLUGINS_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/cycle.h"
#include "sched/core/model.h"

/* Facts about the whole cluster computed once per cycle, so filters can declare themselves
 * inactive cheaply. */
struct filter_env {
    const struct cluster *cluster;
    bool has_hard_taints;    /* some node has a NoSchedule or NoExecute taint */
    bool has_shared_gpus;    /* some node has time-sliced or MIG GPUs */
    bool has_unhealthy_gpus; /* some node offers fewer GPUs than its capacity */
};

struct sched_filter {
    const char *name;        /* stable: appears in reasons and docs */
    enum sched_filter_id id; /* reason code */
    bool node_only;          /* depends on the node alone: evaluated once per cycle */
    /* false when the filter cannot reject any node for this pod set (skip it). */
    bool (*active)(const struct filter_env *env, const struct gang *g, const struct podset *ps);
    /* true when the node may host pods of this set. */
    bool (*pass)(const struct gang *g, const struct podset *ps, const struct node *n);
};

/* NULL-terminated, in evaluation order. */
extern const struct sched_filter *const plugin_filters[];

extern const struct sched_filter plugin_node_ready;
extern const struct sched_filter plugin_cordon;
extern const struct sched_filter plugin_node_selector;
extern const struct sched_filter plugin_node_affinity;
extern const struct sched_filter plugin_gpu_health;
extern const struct sched_filter plugin_taints;
extern const struct sched_filter plugin_gpu_sharing;
extern const struct sched_filter plugin_device_kind;

void filter_env_init(struct filter_env *env, const struct cluster *c);

/* ---- score terms ------------------------------------------------------------------------- */

#define SCORE_MAX 1000 /* a term's best value; 0 is its worst */

/* What a score term sees of one candidate: a node (a one-pod gang's node, the order in which
 * the nodes of the chosen domain are filled) or a domain (the choice among the domains of one
 * topology level that can hold the whole gang, or among slice domains). */
struct score_in {
    int64_t free_gpus; /* free GPUs now: the node's, or those of the domain's nodes that can
                          take a pod of the gang */
    int64_t cap_gpus;  /* GPUs of the same nodes when empty */
    int64_t gang_gpus; /* GPUs going there: one pod's for a node, the gang's (slice's) for a
                          domain */
    int64_t norm_gpus; /* the normaliser: GPUs of the largest node of the cluster (nodes) or of
                          the largest domain of the level (domains); >= 1 */
};

struct sched_score {
    const char *name; /* stable: the weight key of profiles (docs/config.md), shown in reasons */
    /* 0..SCORE_MAX, higher is better. */
    uint32_t (*score)(const struct score_in *in);
};

/* NULL-terminated; a term's index here is its weight's index in a profile (config_profile) and
 * in gang.weights. The first three are binpack, topology, spread (CONFIG_SCORE_*). */
extern const struct sched_score *const plugin_scores[];
extern const struct sched_score plugin_score_binpack;
extern const struct sched_score plugin_score_topology;
extern const struct sched_score plugin_score_spread;
/* Number of terms in plugin_scores (at most SCORE_TERMS_MAX). */
uint32_t plugin_score_count(void);
/* Index of the term called `name`, or -1. */
int plugin_score_find(const char *name);
/* Weights of the built-in profiles, per term: training packs, inference spreads. */
extern const double plugin_weights_training[SCORE_TERMS_MAX];
extern const double plugin_weights_inference[SCORE_TERMS_MAX];
/* The weights that apply to g: its profile's, else the built-in inference weights for a gang
 * marked `spread`, else training's. */
const double *plugin_gang_weights(const struct gang *g);
/* Weighted mean of every term for `in` under weights w, scaled to 0..SCORE_MAX*1000 (integer so
 * comparisons are exact and deterministic); all weights 0 gives 0. */
int64_t plugin_score(const double *w, const struct score_in *in);
/* The terms with the largest weighted contributions for `in`: up to `max` entries of term index
 * and raw value (0..SCORE_MAX), terms of weight 0 left out, largest contribution first. */
uint32_t plugin_score_top(const double *w, const struct score_in *in, uint8_t *terms,
                          uint16_t *values, uint32_t max);
/* true when node n satisfies one affinity requirement (Kubernetes rules, see model.h). */
bool sel_req_matches(const struct sel_req *r, const struct node *n);
/* true when node n meets every requirement of term t (an empty term: never). */
bool sel_term_matches(const struct sel_term *t, const struct node *n);
/* The sum of the weights of ps's preferred node affinity terms that node n meets (0: none). */
uint32_t sel_pref_weight(const struct podset *ps, const struct node *n);
/* true when `tols` tolerate taint `t` (Kubernetes rules). */
bool taint_tolerated(const struct taint *t, const struct toleration *tols, uint32_t n_tols);

/* GPU choice inside one node. `free_mask` = GPUs not held. Returns the chosen mask with exactly
 * `count` bits, or 0 when the pod does not fit (count 0 always "fits" with mask 0; callers check
 * count first).
 * island_limit 0: topology-blind, the lowest free indices (what device plugins do by default).
 * island_limit L > 0 (island-aware): a pod of at most L GPUs must get GPUs of one NVLink island,
 * the fullest island that still fits (best fit, keeps free islands whole), or it does not fit on
 * this node; a pod larger than L takes the fewest islands, whole islands first. The engine passes
 * the largest island in the cluster as L, so a pod is split across islands only when no node
 * anywhere could hold it inside one. */
uint32_t gpu_pick(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t island_limit);
/* How many pods of `count` GPUs gpu_pick could place in turn on these free GPUs. */
uint32_t gpu_slots(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t island_limit);
/* true when the GPUs of `mask` cannot be cut into tensor-parallel groups of `tp` GPUs that each
 * stay inside one NVLink island (some island holds a number of them that is not a multiple of
 * tp). tp = 0 or 1 never splits. */
bool gpu_tp_split(const struct node *n, uint32_t mask, uint32_t tp);
/* Explicit tensor-parallel groups: `count` GPUs in groups of `tp` (tp < count), each group inside
 * one island, fullest islands first; 0 when the free GPUs cannot be grouped so. */
uint32_t gpu_pick_groups(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t tp);
/* How many pods of `count` GPUs in groups of `tp` the free GPUs hold. */
uint32_t gpu_slots_groups(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t tp);
/* ---- the reserve step: GPU indices for a pod on a chosen node -------------------------------- */

/* How a pod's GPUs are chosen inside a node once the engine has picked the node. tp is the
 * gang's tensor-parallel group size (0: none): a pod larger than tp gets groups of tp GPUs each
 * inside one island; a pod no larger than tp is one group inside one island; without tp a pod
 * of at most island_limit GPUs gets one island (see gpu_pick). */
struct sched_reserve {
    const char *name;
    /* The GPUs for one pod of `count` GPUs, or 0 when it does not fit. */
    uint32_t (*pick)(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t tp,
                     uint32_t island_limit);
    /* How many such pods the free GPUs hold. */
    uint32_t (*slots)(const struct node *n, uint32_t free_mask, uint32_t count, uint32_t tp,
                      uint32_t island_limit);
};

/* The reserve plugin the engine uses (registry.c): NVLink islands. */
extern const struct sched_reserve *const plugin_reserve;
extern const struct sched_reserve plugin_reserve_islands;

/* Largest island of a node, in GPUs. */
uint32_t gpu_max_island(const struct node *n);
/* Number of islands a GPU mask touches (tp_splits counts pods with more than one). */
uint32_t gpu_islands_touched(const struct node *n, uint32_t mask);

#endif
