/* plugins/plugins.h: placement plugins, listed explicitly in plugins/registry.c.
 *
 * Owns: the node filters (hard constraints, one reason code each) and the GPU choice inside a
 * node (NVLink islands). Filters are pure predicates over const model objects; the placement
 * engine (sched/core/place.c) evaluates them once per pod set and cycle and caches the result,
 * so a filter's cost is paid per node, not per pod. Adding a filter is adding one file and one
 * line in registry.c.
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

void filter_env_init(struct filter_env *env, const struct cluster *c);
/* true when node n satisfies one affinity requirement (Kubernetes rules, see model.h). */
bool sel_req_matches(const struct sel_req *r, const struct node *n);
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
/* Largest island of a node, in GPUs. */
uint32_t gpu_max_island(const struct node *n);
/* Number of islands a GPU mask touches (tp_splits counts pods with more than one). */
uint32_t gpu_islands_touched(const struct node *n, uint32_t mask);

#endif
