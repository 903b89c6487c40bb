/* sched/core/model.h: the scheduling model shared by the core and its drivers.
 *
 * Owns: the types of nodes, GPUs and NVLink islands, topology domains, pod sets, gangs and
 * queues, and the cluster container that holds nodes and topology. It does not own usage: what
 * is running where lives in `struct node_state`, which drivers mutate and the core only reads.
 *
 * Memory management: a `struct cluster` owns every string and array reachable from its nodes
 * (one allocation pool, freed by cluster_free()). Gangs and pod sets are owned by the driver that
 * created them (the simulator's job table, later the Kubernetes cache); the core borrows them for
 * the length of one cycle.
 *
 * Units: time in milliseconds (int64, `_ms`), resources in base units (see res.h), GPU indices
 * 0..31 inside a node, GPU sets as bitmasks (bit i = GPU i).
 */
#ifndef SCHED_CORE_MODEL_H
#define SCHED_CORE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/core/err.h"
#include "sched/core/res.h"

#define NODE_MAX_GPUS    32 /* GPU indices per node fit a uint32_t mask */
#define NODE_MAX_ISLANDS 8  /* NVLink islands per node */
#define TOPO_MAX_LEVELS  8  /* topology levels, widest first */

struct kv {
    const char *key;
    const char *value;
};

enum taint_effect { TAINT_NO_SCHEDULE = 0, TAINT_PREFER_NO_SCHEDULE, TAINT_NO_EXECUTE };

struct taint {
    const char *key;
    const char *value; /* "" when absent */
    enum taint_effect effect;
};

/* How whole a node's GPUs are, from GPU feature discovery labels. */
enum gpu_sharing {
    GPU_WHOLE = 0,   /* exclusive devices: the only kind a multi-GPU gang may use */
    GPU_TIME_SLICED, /* nvidia.com/gpu.product ends in -SHARED or replicas > 1 */
    GPU_MIG,         /* MIG strategy "single"/"mixed": devices are slices */
};

struct node {
    /* read-only after cluster_finalize() */
    const char *name;
    struct res_vec alloc;    /* status.allocatable, base units */
    const struct kv *labels; /* sorted by key */
    uint32_t n_labels;
    const struct kv *annotations; /* sorted by key */
    uint32_t n_annotations;
    const struct taint *taints;
    uint32_t n_taints;
    bool ready;         /* Ready condition True */
    bool unschedulable; /* spec.unschedulable (cordoned) */
    bool dra_gpus;      /* its GPUs are ResourceSlice devices (dra_inv_apply), not a device
                           plugin's allocatable count: kubelet admits no pod asking them as an
                           extended resource */
    bool dra_mig;       /* some MIG profile's count is of ResourceSlice devices
                           (dra_inv_apply_mig): kubelet admits no pod asking it as an extended
                           resource */
    enum gpu_sharing gpu_sharing;
    uint8_t n_gpus;       /* GPU devices: min(alloc nvidia.com/gpu, NODE_MAX_GPUS) */
    uint8_t gpu_capacity; /* status.capacity GPUs; above n_gpus = unhealthy devices (0: unknown) */
    uint8_t n_islands;    /* >= 1 when n_gpus > 0 */
    uint8_t kind;         /* device kind of alloc (res.h "device kinds"; kinds are configured
                             before nodes are read), set by cluster_finalize */
    uint32_t islands[NODE_MAX_ISLANDS]; /* disjoint GPU masks, union = all GPUs */
    uint32_t dom[TOPO_MAX_LEVELS];      /* domain id at each topology level */
};

/* Topology levels are partitions of the nodes, widest first (zone, block, rack, NVLink clique,
 * node). A node without the level's label forms a domain of its own at that level: the scheduler
 * never assumes two nodes are close unless a label says so. The last level is always the node. */
struct topo_level {
    const char *name;  /* short name used in annotations and output: "zone", "rack", ... */
    const char *label; /* node label key; NULL for the node level */
    uint32_t n_domains;
    const char **domain_names; /* [n_domains]; label value, or node name for singletons */
    uint32_t *domain_first;    /* CSR: nodes of domain d are node_index[domain_first[d] ..   */
    uint32_t *node_index;      /*      domain_first[d+1]), ascending                         */
};

struct topo {
    uint32_t n_levels;
    struct topo_level levels[TOPO_MAX_LEVELS];
    int rack_level;   /* index of the rack level (used by metrics), or -1 */
    int nvlink_level; /* index of the NVLink-domain level (clique), or -1 */
};

/* Default topology labels, widest first; the node level is appended by cluster_finalize(). */
#define TOPO_LABEL_ZONE   "topology.kubernetes.io/zone"
#define TOPO_LABEL_BLOCK  "network.topology.gangsched.io/block"
#define TOPO_LABEL_RACK   "network.topology.gangsched.io/rack"
#define TOPO_LABEL_CLIQUE "nvidia.com/gpu.clique"
#define ANNOT_GPU_ISLANDS "gangsched.io/gpu-islands"

struct cluster_pool; /* private string and array storage */

struct cluster {
    /* read-only after cluster_finalize() */
    struct node *nodes;
    uint32_t n_nodes;
    struct topo topo;
    int64_t total_gpus; /* sum of n_gpus over nodes */
    uint8_t max_node_gpus;
    uint32_t n_dra_nodes;     /* nodes whose GPUs are ResourceSlice devices (node.dra_gpus) */
    int64_t n_dra_gpus;       /* their GPUs */
    uint32_t n_dra_mig_nodes; /* nodes with node.dra_mig */
    /* private */
    uint32_t cap_nodes;
    struct cluster_pool *pool;
    struct dra_inv *dra;     /* ResourceSlices read with the nodes (sim --nodes), or NULL: applied
                                by cluster_finalize (sched/core/dra.h), freed with the cluster */
    struct dra_inv *dra_mig; /* their MIG devices, alike (dra_inv_apply_mig) */
};

struct cluster *cluster_new(void);
void cluster_free(struct cluster *c);
/* Copies `s` into the cluster's pool; NULL on out of memory. */
const char *cluster_strdup(struct cluster *c, const char *s);
void *cluster_alloc(struct cluster *c, size_t size);
/* Appends a zeroed node (name copied) and returns it; NULL on out of memory. The caller fills
 * alloc, labels (allocated with cluster_alloc, any order), taints, flags. */
struct node *cluster_add_node(struct cluster *c, const char *name);
/* Sorts labels and annotations, derives n_gpus, sharing and NVLink islands (annotation
 * gangsched.io/gpu-islands "0-3,4-7", else one island of all GPUs), builds the topology levels
 * from `level_labels` (widest first, n_levels entries, names parallel; NULL = defaults above).
 * Errors (bad island annotation, duplicate node names) name the node and the field. */
int cluster_finalize(struct cluster *c, const char *const *level_names,
                     const char *const *level_labels, uint32_t n_levels, struct sched_errbuf *eb);
/* Label lookup on a finalized node (binary search); NULL when absent. */
const char *node_label(const struct node *n, const char *key);
const char *node_annotation(const struct node *n, const char *key);
/* Parses "0-3,4-7" (or "0,1,2,3;4,5,6,7") into island masks; 0 or SCHED_EINVAL. */
int gpu_islands_parse(const char *s, uint8_t n_gpus, uint32_t *islands, uint8_t *n_islands,
                      struct sched_errbuf *eb);

/* Usage of one node: mutated by drivers between cycles, read-only inside a cycle. */
struct node_state {
    struct res_vec used; /* sum of requests of pods bound to the node, every scheduler */
    uint32_t gpu_used;   /* GPU indices held */
    int64_t release_ms;  /* when every pod on the node is expected to have ended: by its
                            declared maximum run time, else the driver's estimate (see
                            queue/estimate.h); 0 when empty, INT64_MAX when some pod's end is
                            unknown */
    bool not_ready;      /* down right now (failed, or NotReady past its grace) */
    bool quarantined;    /* excluded after repeated start failures, for a cooling-off time */
};

struct toleration {
    const char *key; /* NULL or "" with op Exists: tolerates everything */
    const char *value;
    bool op_exists; /* Exists, else Equal */
    int effect;     /* enum taint_effect, or -1 for all effects */
};

/* Required node affinity (spec.affinity.nodeAffinity.requiredDuringScheduling...): the terms
 * are ORed, the requirements of a term ANDed, as in Kubernetes. Gt and Lt compare the label's
 * value and the single requirement value as integers; a label that is not an integer does not
 * match. NotIn and DoesNotExist match nodes without the label. */
enum sel_op { SEL_IN = 0, SEL_NOT_IN, SEL_EXISTS, SEL_DOES_NOT_EXIST, SEL_GT, SEL_LT };

struct sel_req {
    const char *key;
    bool field; /* matchFields: key "metadata.name" is the node's name (not a label) */
    enum sel_op op;
    const char *const *values;
    uint32_t n_values;
};

/* A node selector term: its requirements ANDed; a term without any matches no node (core/v1
 * NodeSelectorTerm: "a null or empty node selector term matches no objects"). */
struct sel_term {
    const struct sel_req *reqs;
    uint32_t n_reqs;
};

/* A preferred node affinity term (core/v1 PreferredSchedulingTerm): a node that meets `term`
 * adds `weight` (1..100) to the pod set's preference for it. */
struct pref_term {
    int32_t weight;
    struct sel_term term;
};

/* Inter-pod constraints (spec.affinity.podAffinity / podAntiAffinity, required and preferred
 * terms, and host ports), as kube-scheduler's InterPodAffinity and NodePorts plugins read them. A
 * term selects the pods whose namespace it names (none named: the namespace of the pod that carries
 * the term; all_namespaces: namespaceSelector {}) and whose labels meet every requirement
 * (matchLabels as In of one value; In, NotIn, Exists, DoesNotExist; none: every pod). Its
 * domain around a node is the nodes with the same value of topology_key; a node without that
 * label satisfies no affinity term and is outside every anti-affinity domain of that key. */
struct pod_term {
    const struct sel_req *reqs; /* op SEL_IN .. SEL_DOES_NOT_EXIST, never field */
    uint32_t n_reqs;
    const char *const *namespaces;
    uint32_t n_namespaces;
    bool all_namespaces; /* namespaceSelector {} */
    /* namespaceSelector with requirements (op SEL_IN .. SEL_DOES_NOT_EXIST): also the pods of
     * the namespaces whose labels meet them all (pod_meta.ns_labels), with those listed */
    const struct sel_req *ns_reqs;
    uint32_t n_ns_reqs;
    bool none;                /* labelSelector null: selects no pod */
    const char *topology_key; /* node label key */
    int32_t weight;           /* a preferred term's weight, 1..100; 0 for a required one */
};

/* A namespace's labels, sorted by key; the driver keeps them current between cycles. */
struct ns_labels {
    const struct kv *labels;
    uint32_t n_labels;
};

/* A topology spread constraint with whenUnsatisfiable DoNotSchedule (kube-scheduler's
 * PodTopologySpread filter; a ScheduleAnyway one is read alike and only scored, place_podpref.c):
 * on the nodes that count (every constraint's key present; passing
 * the pod's nodeSelector and required node affinity unless affinity_ignore; not tainted against
 * its tolerations when taints_honor), the pods sel selects (in the pod's own namespace) per
 * domain of sel.topology_key; a node is allowed when its domain's count, plus one when the pod
 * is selected itself, exceeds the smallest domain's by at most max_skew (the smallest is 0 while
 * fewer than min_domains domains exist). */
struct pod_spread {
    struct pod_term sel; /* namespaces: none (the pod's own) */
    int32_t max_skew;    /* >= 1 */
    int32_t min_domains; /* 0: not set */
    bool affinity_ignore, taints_honor;
};

/* What inter-pod constraints read of a pod: its namespace and labels (what others' terms
 * select), its own required and preferred terms and spreads, and its host ports (protocol << 16 |
 * port: a node takes each at most once, whatever the hostIP). Shared by the pods of a pod set and
 * by the bound pods the driver lists (sched_snapshot.bound_pods). NULL where a pod has none of it
 * (the simulator). */
struct pod_meta {
    const char *ns;          /* "" when unknown */
    const struct kv *labels; /* sorted by key */
    uint32_t n_labels;
    const struct pod_term *affinity; /* every one must be met (ANDed) */
    uint32_t n_affinity;
    const struct pod_term *anti; /* none may be violated, and bound pods' anti terms apply to it */
    uint32_t n_anti;
    const uint32_t *ports; /* sorted */
    uint32_t n_ports;
    const struct pod_spread *spread; /* DoNotSchedule topology spreads, every one met */
    uint32_t n_spread;
    /* preferences (kube-scheduler's InterPodAffinity and PodTopologySpread scores): preferred
     * affinity and anti-affinity terms (weight set), ScheduleAnyway spreads */
    const struct pod_term *pref_affinity;
    uint32_t n_pref_affinity;
    const struct pod_term *pref_anti;
    uint32_t n_pref_anti;
    const struct pod_spread *soft_spread;
    uint32_t n_soft_spread;
    const struct ns_labels *ns_labels; /* its namespace's labels, or NULL: none known */
};

/* Pods of one gang that share a spec. */
struct podset {
    uint32_t count;     /* pods */
    struct res_vec req; /* per pod, base units */
    const struct kv *node_selector;
    uint32_t n_node_selector;
    const struct toleration *tolerations;
    uint32_t n_tolerations;
    const struct sel_term *affinity; /* required node affinity terms (ORed); none = any node */
    uint32_t n_affinity;
    const struct pref_term *pref; /* preferred node affinity terms (weights summed per node) */
    uint32_t n_pref;
    /* inter-pod constraints and the labels others' terms select, or NULL; the set's pods are
     * read as one: a driver gives it the labels of the set's first pod */
    const struct pod_meta *meta;
};

#define GANG_MAX_SETS   8            /* as Kueue's Workload podSets */
#define GANG_PREF_FREE  (1ull << 63) /* a bit gang.pref leaves clear */
#define SCORE_TERMS_MAX 8            /* score terms (plugins/registry.c), weights per profile */

struct gang {
    uint32_t id;       /* dense, driver-assigned; indexes driver tables */
    const char *name;  /* job id, or namespace/name */
    uint32_t queue;    /* index into the snapshot's queues */
    int32_t priority;  /* higher first */
    int64_t submit_ms; /* first submission; kept across requeues */
    uint32_t n_sets;   /* at most GANG_MAX_SETS */
    /* [n_sets], out of line: storage the driver owns and keeps while the gang is offered (its
     * build's arena, the trace's gangs); a copy of the gang shares them, so a copy that changes
     * a set first points sets at its own (cycle.c on_flavor) */
    struct podset *sets;
    uint32_t min_member;    /* a pending gang: 0 or n_pods (every pod is placed together); a
                               running one: the members it runs on (minMember), below n_pods
                               for an elastic gang, whose members above it preemption may take
                               alone (preempt.h); 0 = n_pods */
    int8_t topo_required;   /* topology level index the whole gang must fit in, or -1 */
    int8_t topo_preferred;  /* level to try first, widening one level at a time, or -1 */
    int64_t max_runtime_ms; /* declared maximum run time (gangsched.io/max-runtime), 0 = none */
    uint32_t user;          /* who submits it, for run-time estimates only (queue/estimate.h):
                               1 + an index the driver interns (trace column user,
                               gangsched.io/user), 0 = unknown; never part of shape */
    uint32_t tp_size;       /* GPUs per tensor-parallel group (gangsched.io/tp-size), 0 = the pod;
                               each group inside one NVLink island of a node */
    uint32_t slice_size;    /* pods per slice (gangsched.io/slice-size), 0 = no slices */
    int8_t slice_level;     /* level every slice must fit in (gangsched.io/slice-topology), -1 */
    bool spread;            /* profile spreads pods over nodes (inference) instead of packing */
    const double *weights;  /* score weights per term (plugins/registry.c order), the gang's
                               profile's; NULL = built-in (inference if spread, else training) */
    uint8_t share_node_pol; /* GPU shares (HAMi's hami.io/node-scheduler-policy): 0 = the
                               config's default, 1 + enum gs_policy (1 binpack, 2 spread) */
    uint8_t share_gpu_pol;  /* the same for hami.io/gpu-scheduler-policy */
    /* a pending gang that joins a running one (an elastic gang's new members): the nodes of its
     * running members (node indices; others ignored), set by gang_set_near(). It is placed in
     * the tightest domain that holds one of them, level by level up to the whole cluster
     * (place.c), so a training gang's members stay together. NULL, 0: none */
    const uint32_t *near;
    uint32_t n_near;
    /* a pending gang that joins a running training gang (set by gang_set_join): joining restarts
     * every worker from the job's last checkpoint, so it joins only while the job is at most
     * join_open_ms past a checkpoint; the job checkpointed at join_from_ms and does every
     * join_every_ms after it (wall time at its present speed), with join_live_gpus GPUs live.
     * join_every_ms 0: no such rule */
    int64_t join_from_ms, join_every_ms, join_open_ms, join_live_gpus;
    /* ... and when its job was last asked to checkpoint for it (ms; 0: never; set by the
     * driver): a request after the job's last checkpoint (gang_join_last) is still open */
    int64_t join_asked_ms;
    bool never_preempts;  /* preemptionPolicy Never (Kubernetes): it waits ahead of lower
                             priorities but takes no running gang's place (no preemption, no
                             reclaim); read by the cycle's preemption step only */
    bool non_preemptible; /* never a preemption victim (gangsched.io/non-preemptible, read
                             by the daemon); only backfill on probation reads it while the
                             gang waits (cycle.c): such a gang is never put on probation */
    /* derived by gang_finalize() */
    uint32_t n_pods;
    int64_t gpus;   /* GPUs over all pods */
    uint64_t shape; /* hash of every placement-relevant field: equal shapes, equal fate */
    uint64_t pref;  /* hash of the pod sets' preferred node affinity terms, 0 when none; never
                       with GANG_PREF_FREE set (placement's keys of its own) */
    bool share;     /* some pod set asks for a GPU share (HAMi: nvidia.com/gpumem,
                       gpumem-percentage or gpucores above 0; sched/core/place_share.c) */
};

/* Computes n_pods, gpus, shape and share; call after filling the gang. */
void gang_finalize(struct gang *g);
/* The gang joins running members on nodes[0 .. n) (kept by reference; see gang.near), after
 * gang_finalize(): its shape then differs from a gang free to go anywhere. */
void gang_set_near(struct gang *g, const uint32_t *nodes, uint32_t n);
/* the shortest window: a cycle a little late still joins, and an interval of 10 s or less has no
 * rule (never a cycle per millisecond for "checkpoint-interval: 1ms") */
#define GANG_JOIN_MIN_OPEN_MS 10000
/* The gang joins a running training gang of live_gpus GPUs that last checkpointed at
 * last_ckpt_ms and checkpoints every every_ms (wall time at its present speed; <= 0: not known,
 * no rule; the window is at least GANG_JOIN_MIN_OPEN_MS). Joining at t ms past a checkpoint loses
 * the job's progress of those t ms at its present speed f = live / (live + joining GPUs), and gains
 * full speed until its next checkpoint; waiting for that checkpoint loses nothing: joining now wins
 * while t < every_ms x (1 - f), the window it is given (docs/preemption.md "Members join after a
 * checkpoint"). No rule for a gang that spreads (inference: a join loses nothing). */
void gang_set_join(struct gang *g, int64_t last_ckpt_ms, int64_t every_ms, int64_t live_gpus);
/* The earliest time >= t at which the gang may join (t itself without a rule, or while its job
 * is still restarting: t before join_from_ms). */
int64_t gang_join_at(const struct gang *g, int64_t t);
/* Whether, at t, asking its job for a checkpoint that comes within grace_ms (<= 0: it is never
 * asked) costs less than the gang's other choice: waiting for the next window costs its GPUs
 * idle until then, joining inside the window the job's progress since its checkpoint at its
 * live GPUs; asking costs its GPUs idle for the grace at most (docs/preemption.md "Asking for
 * the checkpoint"). */
bool gang_join_asks(const struct gang *g, int64_t t, int64_t grace_ms);
/* The earliest time >= t at which the gang may join when it asks where gang_join_asks says so:
 * t + grace_ms then, else gang_join_at. */
int64_t gang_join_asked(const struct gang *g, int64_t t, int64_t grace_ms);
/* The job's last checkpoint at t by the rule (join_from_ms, then every join_every_ms); t itself
 * without a rule. */
int64_t gang_join_last(const struct gang *g, int64_t t);
/* The gang's device kind (res.h "device kinds"): that of its first pod set of another kind, else
 * 0 (the device, or no devices). */
int gang_kind(const struct gang *g);
/* The gang's whole request: the sum over its pods (what quota charges). */
void gang_request(const struct gang *g, struct res_vec *need);
/* The same over its pods from .. to - 1 only (in pod order: the sets in order), into acc (NULL:
 * not wanted); returns their GPUs. */
int64_t gang_pods_request(const struct gang *g, uint32_t from, uint32_t to, struct res_vec *acc);
/* Adds what `pods` pods of request `req` charge to `acc`: the request, with HAMi's per-device
 * share resources (nvidia.com/gpumem, gpumem-percentage, gpucores) once per device the pod
 * takes (nvidia.com/gpu). gang_request is its sum over the pod sets. */
void gang_pod_charge(const struct res_vec *req, int64_t pods, struct res_vec *acc);

struct queue {
    const char *name;
    int32_t priority; /* higher first */
    double weight;    /* fair-share weight, > 0 */
};

#endif
