/* config/model.h: the operator's configuration as the scheduler reads it: plain structs and
 * pure accessors.
 *
 * Owns: the in-memory form of a loaded configuration (resource flavors, the tree of cohorts and
 * queues with their quotas, fair-share settings, the starvation guard, preemption and lifecycle
 * knobs, scoring profiles, topology levels) and the lookups over it. A loaded config is never
 * modified; a reload builds a new one and the driver swaps the pointer between cycles. Pointers
 * into a config are valid until config_free().
 * Must not touch: YAML, files, I/O. The core (sched/core, queue, plugins) includes this header,
 * never config/config.h, so that it links without libyaml; config/config.h (the loader, the
 * printers, the importer) builds on it.
 */
#ifndef CONFIG_MODEL_H
#define CONFIG_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/core/err.h"

/* The default of starvation.probationMinGpus (docs/preemption.md, "Backfill on probation"):
 * more than two 8-GPU nodes. Measured: with 9 to 16, 16-GPU gangs of cluster02 evict and its
 * multi-node gangs wait longer than under fifo (docs/simulator.md). */
#define CONFIG_PROBATION_MIN_GPUS 17
#include "sched/core/model.h"
#include "sched/core/res.h"

#define CONFIG_NO_LIMIT         INT64_MAX /* borrowingLimit / lendingLimit absent */
/* Cohort levels in one tree, its root cohort included (docs/config.md): quota checks walk from
 * a queue to its root, so the chain's length bounds their cost. */
#define CONFIG_MAX_COHORT_DEPTH 32

/* Quota of one (flavor, resource) pair, base units (res.h). */
struct config_quota {
    int64_t nominal;         /* guaranteed; >= 0 */
    int64_t borrowing_limit; /* how much above nominal may be borrowed; CONFIG_NO_LIMIT = any */
    int64_t lending_limit;   /* how much of nominal others may borrow; CONFIG_NO_LIMIT = all;
                                <= nominal on a queue; on a cohort it bounds what the whole
                                subtree lends to the parent, so any value >= 0 */
};

/* A flavor's weight of one resource in the fair-share order (resourceWeights). */
struct config_res_weight {
    const char *name; /* as written */
    int res;          /* its resource id, resolved once the file's names are interned */
    double weight;    /* > 0; 1 when not given */
};

struct config_flavor {
    const char *name;
    const struct kv *node_labels; /* nodes of the flavor carry all of these; none = every node */
    uint32_t n_node_labels;
    /* resourceWeights: what one unit of a resource on this flavor counts in the fair-share
     * order (quota_share), as Kueue's flavor-aware dominant resource share (KEP-8902); every
     * resource not listed counts 1. File order. */
    const struct config_res_weight *weights;
    uint32_t n_weights;
};

/* One node of the quota tree: a cohort or a queue. */
struct config_quota_set {
    /* quota[f][r] for flavor index f, resource id r; `has[f][r]` tells whether it was given.
     * Never NULL after a load: nodes without a quota share one all-false table. */
    struct config_quota *quota; /* [n_flavors * RES_MAX] */
    bool *has;                  /* [n_flavors * RES_MAX] */
};

enum config_ordering { CONFIG_BEST_EFFORT_FIFO = 0, CONFIG_STRICT_FIFO };
enum config_within_queue {
    CONFIG_PREEMPT_NEVER = 0,
    CONFIG_PREEMPT_LOWER_PRIORITY,
    CONFIG_PREEMPT_LOWER_OR_NEWER_EQUAL,
};
enum config_reclaim { CONFIG_RECLAIM_NEVER = 0, CONFIG_RECLAIM_LOWER_PRIORITY, CONFIG_RECLAIM_ANY };

struct config_preemption {
    enum config_within_queue within_queue; /* default LowerPriority */
    enum config_reclaim reclaim;           /* default Any */
    bool fair_share;                       /* default false */
    int64_t min_runtime_ms;                /* default 0 */
    int64_t restart_cost_ms;               /* default 0 */
    int64_t checkpoint_grace_ms;           /* default 0 (no handshake) */
};

/* What happens to a queue's gangs after they are bound (the daemon's start watchdog and
 * failure handling, docs/lifecycle.md); PodGroup annotations override per gang. */
struct config_lifecycle {
    int64_t start_timeout_ms; /* all members Running and Ready by then; default 5m */
    uint32_t max_restarts;    /* the gang's own failures it may survive; default 3 */
    int64_t failure_grace_ms; /* a member lost to a NotReady node breaks the gang after this
                                 long; default 30s */
    int64_t backoff_max_ms;   /* the retry delay after an own failure doubles up to this
                                 (ms, > 0); default 1h (sched/engine ENG_BACKOFF_MAX_MS) */
};

#define CONFIG_DEFAULT_START_TIMEOUT_MS (5 * 60 * 1000)
#define CONFIG_DEFAULT_MAX_RESTARTS     3
#define CONFIG_DEFAULT_FAILURE_GRACE_MS (30 * 1000)
#define CONFIG_DEFAULT_BACKOFF_MAX_MS   (60 * 60 * 1000)

struct config_cohort {
    const char *name;
    int32_t parent; /* cohort index, or -1 for a root */
    struct config_quota_set q;
    uint32_t line, column; /* where it was declared, for messages */
};

struct config_queue {
    const char *name;
    int32_t cohort; /* cohort index, or -1 */
    double weight;  /* > 0, default 1 */
    int32_t priority;
    enum config_ordering ordering;
    int32_t profile; /* profile index, or -1 for the default */
    struct config_preemption preemption;
    struct config_lifecycle lifecycle;
    struct config_quota_set q;
    const char **namespaces; /* namespaces that may submit to it; n_namespaces 0 = any */
    uint32_t n_namespaces;
    const char **local_queues; /* Kueue LocalQueues ("namespace/name") mapped to it */
    uint32_t n_local_queues;
    uint32_t line, column;
};

/* Profile weights are indexed like plugin_scores (plugins/registry.c): the weight keys of a
 * profile are the names of the score terms listed there. The first three are these. */
enum config_score_term { CONFIG_SCORE_BINPACK = 0, CONFIG_SCORE_TOPOLOGY, CONFIG_SCORE_SPREAD };

struct config_profile {
    const char *name;
    double weights[SCORE_TERMS_MAX]; /* >= 0 each; terms not listed in the file are 0 */
};

/* One quotaMapping entry: requests of `source` count against the quota of `target`, `num/den`
 * units of the target (its base units, res.h) per base unit of the source. A mapped source has
 * no quota of its own. A DeviceClass source (`device_class` set) is the slot where the drivers
 * count the devices of that class a pod claims (sched/core/dra.h); those devices are also in the
 * accelerator's count (placement needs them there), so quota takes them out of it. */
struct config_qmap {
    int source, target;       /* resource ids */
    int64_t num, den;         /* weight, reduced; den >= 1 */
    const char *device_class; /* the DeviceClass name, or NULL for a resource source */
    uint32_t line, column;    /* where the entry was declared */
};

/* device.dra: how the accelerator is published with DRA when not as built in
 * (sched/core/device.h device_dra_default: NVIDIA's and AMD's drivers). */
struct config_dra {
    bool set;                 /* given in the file */
    const char *driver;       /* ResourceSlice spec.driver */
    const char *device_class; /* the DeviceClass claims name; default: the driver's name */
    const char *type;         /* a whole device's attribute "type", NULL: any device */
    bool untyped;             /* a device without "type" is whole too */
    const char *selector;     /* CEL a whole device passes too, NULL: none */
};

/* One more accelerator kind of a `devices:` list. */
struct config_device {
    const char *resource; /* e.g. amd.com/gpu */
    const char *unit;     /* "" = the usual one */
};

struct config_pool;

struct config {
    /* read-only after load */
    const char *path;        /* file it came from ("<buffer>" for buffers) */
    uint64_t version;        /* FNV-1a hash of the file bytes: changes when content does */
    const char *device;      /* the accelerator's resource name; default nvidia.com/gpu */
    const char *device_unit; /* its unit word; "" = the usual one (device_default_unit()) */
    struct config_dra dra;   /* the device's DRA identity, when the file gives it */
    /* `devices:` entries after the first: other accelerator kinds (res.h "device kinds"), each
     * counted in the accelerator slot on its own nodes and under its own name in quota */
    const struct config_device *kinds;
    uint32_t n_kinds;
    uint32_t n_levels; /* topology levels, widest first; 0 = built-in defaults */
    const char *level_names[TOPO_MAX_LEVELS - 1];
    const char *level_labels[TOPO_MAX_LEVELS - 1];
    int64_t fair_half_life_ms;     /* default 24h; 0 = no history */
    int64_t starve_after_ms;       /* default 10m; 0 = no reservations */
    uint32_t max_reservations;     /* default 1 */
    uint32_t probation_min_gpus;   /* starvation.probationMinGpus: a starving gang of at least
                                      this many GPUs may evict overdue backfill (policy.h);
                                      default CONFIG_PROBATION_MIN_GPUS; 0 = never */
    uint8_t share_node_policy;     /* hami.nodeSchedulerPolicy: 0 = binpack (HAMi's default),
                                      else 1 + enum gs_policy (1 binpack, 2 spread) */
    uint8_t share_gpu_policy;      /* hami.gpuSchedulerPolicy: 0 = spread, else as above */
    struct config_flavor *flavors; /* at least one: a config without flavors gets "default" */
    uint32_t n_flavors;
    struct config_cohort *cohorts;
    uint32_t n_cohorts;
    struct config_queue *queues;
    uint32_t n_queues;
    struct config_profile *profiles; /* [0] "training", [1] "inference" (built-in or overridden),
                                        then the other declared profiles in file order */
    uint32_t n_profiles;
    const struct config_qmap *qmaps; /* quotaMapping, file order; none by default */
    uint32_t n_qmaps;
    /* private */
    struct config_pool *pool;
};

/* Releases a config from config_load*() (NULL is fine). */
void config_free(struct config *c);

/* Makes the config's device the process's accelerator (device_configure()); call once after
 * the first load, before reading nodes or pods. */
int config_apply_device(const struct config *c, struct sched_errbuf *eb);

/* The device kind named `name`: 0 for the device, k for kinds[k - 1], -1 for none. */
int config_device_kind(const struct config *c, const char *name);

/* Index lookups; -1 when absent. */
int config_queue_index(const struct config *c, const char *name);
/* The queue a Kueue LocalQueue (its namespace and name) maps to: the queue listing
 * "namespace/name" in localQueues, else the queue of the same name; -1 when neither. */
int config_local_queue(const struct config *c, const char *ns, const char *name);
/* Whether namespace ns may submit to queue q (its namespaces list, empty = any). */
bool config_queue_admits(const struct config *c, uint32_t q, const char *ns);
int config_flavor_index(const struct config *c, const char *name);
/* The resource slot quotaMapping gives DeviceClass `device_class` (its config_qmap source), or -1
 * when no entry names the class (c may be NULL). */
int config_qmap_class(const struct config *c, const char *device_class);

/* Gives g the scoring profile `name` (NULL: the queue's default profile): its weights and
 * whether it spreads. SCHED_ENOENT when no profile has that name (g unchanged). */
int config_profile_apply(const struct config *c, uint32_t queue, const char *name, struct gang *g);

/* Quota of queue/cohort set `qs` for (flavor f, resource r), or NULL when not given. */
/* The fair-share weight of resource r on flavor f (1 unless resourceWeights names it). */
double config_res_weight(const struct config *c, uint32_t f, int r);
const struct config_quota *config_quota_get(const struct config *c,
                                            const struct config_quota_set *qs, uint32_t f, int r);

#endif
