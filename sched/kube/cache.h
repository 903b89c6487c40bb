/* sched/kube/cache.h: the Kubernetes driver's view of the cluster, and the snapshot it hands the
 * core each cycle.
 *
 * Owns: the decoded nodes, pods and PodGroups (fed by informer events and by the answers of
 * the driver's writes; each object decoded once, when it arrives, into a record: node records of
 * sched/k8s/nodes.h, pod and PodGroup records of objects.h; no JSON tree is kept), the "assumed"
 * pods (binds sent, not yet seen bound in a watch event, as kube-scheduler assumes), the pods whose
 * delete was sent (deleting at once), and building a cycle's input from them: the cluster, per-node
 * usage by every scheduler's pods, the pending gangs of this scheduler per queue in queue order,
 * the running gangs (for preemption) and the quota usage per queue. A gang is offered to the core
 * only when minMember pods exist, and its pending members only when its bound members are none or a
 * whole gang already.
 *
 * Must not touch: the network, the store, the configuration file. Everything a snapshot points
 * to lives in the snapshot's arena or in the cache, and stays valid until the next event is
 * applied or the arena is reset (the loop runs the cycle and acts on it before either).
 */
#ifndef SCHED_KUBE_CACHE_H
#define SCHED_KUBE_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "sched/core/arena.h"
#include "sched/core/cycle.h"
#include "sched/core/strmap.h"
#include "sched/kube/dra.h"
#include "sched/kube/objects.h"

struct sched_policy;

/* A gang as the driver sees it in one cycle; gang.id indexes kcache_build.gangs. */
struct kgang {
    struct gang gang;
    const char *key;       /* group key "ns/podgroup", or "ns/pod" for a gang of one */
    const struct kpg *pg;  /* NULL for a gang of one, or when the PodGroup is not (yet) seen */
    struct kpod **members; /* [gang.n_pods], in placement order (set 0 first) */
    uint32_t *nodes;       /* running gangs: node index of each member (UINT32_MAX: a node the
                              cluster does not have), else NULL */
    bool running;          /* bound members, no pending ones */
    /* a running CompositePodGroup tree: per member, why its group runs below its own minimum
     * (the lifecycle deletes it, the tree goes on), else NULL; NULL when no member's does */
    const char **part_short;
    uint32_t min_member; /* the PodGroup's minMember, Kueue's total count, or 1 */
    /* pending gangs: the running gang of the same key, else NULL (an elastic gang: its new
     * members, offered as a pending gang of their own, join that one) */
    const struct kgang *run;
    /* running gangs, for the join rule of their new members (gang_set_join): where their
     * checkpoints count from, the later of the last checkpoint (gangsched.io/last-checkpoint,
     * else the run's start) and the newest member's start (a join restarts every worker), and
     * the declared interval (gangsched.io/checkpoint-interval, 0: none) */
    int64_t last_ckpt_ms, ckpt_every_ms;
    /* running gangs: when the current run was bound, the earliest member's kpod.bound_ms (a
     * member with neither time: the build's now). A checkpoint request shown from before it
     * belongs to an earlier run (driver_ckpt.c) */
    int64_t bound_ms;
    /* pending gangs: what the daemon adds to the core's reason when it is not placed, or NULL
     * (claims.h kclaims_ext_hint: a member kept off the DRA nodes) */
    const char *hint;
};

/* A gang that cannot be offered to the core, and why (written to status and events). */
struct kwaiting {
    const char *key;
    const struct kpg *pg;
    const char *queue;  /* its queue label, NULL when it has none */
    const char *reason; /* "WaitingForPods", "UnknownQueue", "NoQueue", "InvalidSpec",
                           "PartialGang", "WaitingForTeardown", "PodGroupNotFound",
                           "PodGroupDeleting" */
    const char *message;
    struct kpod **pods; /* its pending members (they get the PodScheduled=False condition) */
    uint32_t n_pods;
};

struct kcache_build {
    struct sched_snapshot snap;
    struct sched_queue_view *views; /* = snap.queues, writable: the driver may hold a queue */
    struct node_state *state;       /* = snap.state, writable: the driver sets node health */
    struct sched_running *running;  /* = snap.shares, writable: the driver sets probation */
    uint32_t n_running;
    struct kgang *gangs; /* [n_gangs] pending ones first, then running ones */
    uint32_t n_gangs;
    uint32_t n_pending;
    struct kwaiting *waiting;
    uint32_t n_waiting;
    /* KEP-5004 claims an earlier attempt left for pending pods of ours, neither assumed nor
     * being deleted (claims.h kclaims_ext_of): the driver deletes them (driver_ext.c) */
    const struct kclaim **ext_stale;
    uint32_t n_ext_stale;
};

struct kcache;

/* `scheduler`: this scheduler's name (spec.schedulerName of its pods). */
struct kcache *kcache_new(const char *scheduler);
void kcache_free(struct kcache *c);

/* Informer events (the objects are decoded and copied; nothing is kept of `obj`). A malformed
 * object is logged with its name and dropped (a node: the node is treated as gone). Return 0,
 * or SCHED_ENOMEM. `deleted` removes. */
int kcache_node_event(struct kcache *c, const cJSON *obj, bool deleted);
/* kcache_pod_event also takes the answer of a write to a pod (a fence, a status patch, a
 * read-back): a watch event older than what the cache holds (smaller resourceVersion, same uid)
 * is then ignored. */
int kcache_pod_event(struct kcache *c, const cJSON *obj, bool deleted);
int kcache_pg_event(struct kcache *c, const cJSON *obj, enum kpg_api api, bool deleted);
/* A PodGroup refused because another API's PodGroup under its namespace/name (`owner`, NULL
 * when gone since) owns the name: the one seen first owns it while it exists; the refused one
 * takes it when the owner is deleted (the earliest refused first). kcache_refused_announce calls
 * fn once for each refused object not announced yet (each uid once, the cache's records borrowed
 * for the call), then marks it announced. */
typedef void kcache_refused_fn(void *ctx, const struct kpg *refused, const struct kpg *owner);
void kcache_refused_announce(struct kcache *c, kcache_refused_fn *fn, void *ctx);
/* A resource.k8s.io/v1 ResourceSlice: GPUs of nodes without nvidia.com/gpu (sched/core/dra.h). */
int kcache_slice_event(struct kcache *c, const cJSON *obj, bool deleted);
/* A resource.k8s.io/v1 ResourceClaim: pods with claims request their GPUs (sched/kube/dra.h). */
int kcache_claim_event(struct kcache *c, const cJSON *obj, bool deleted);
int kcache_class_event(struct kcache *c, const cJSON *obj, bool deleted); /* DeviceClasses */
int kcache_cd_event(struct kcache *c, const cJSON *obj, bool deleted);    /* ComputeDomains */
/* A core/v1 Namespace: its labels, which namespaceSelectors of pod affinity terms read. */
int kcache_ns_event(struct kcache *c, const cJSON *obj, bool deleted);
/* The IMEX channel device a ComputeDomain claim on `node` is given (computedomain.h), or NULL. */
const char *kcache_cd_channel(const struct kcache *c, const char *node, const char **driver,
                              const char **pool);
const struct kclaim *kcache_claim(const struct kcache *c, const char *key);
/* KEP-5004 (claims.h): the DeviceClass serving pending pod p's container GPUs on DRA nodes, and
 * the claim made for pod `uid`'s (NULL: none). */
const struct kdra_class *kcache_ext_class(const struct kcache *c, const struct kpod *p);
const struct kclaim *kcache_ext_of(const struct kcache *c, const char *uid);
/* kclaims_adopted of the cache's claims (sched/kube/claims.h). 0 or SCHED_ENOMEM. */
int kcache_claim_adopted(struct kcache *c, const char *key, const char *uid);
/* kclaims_subs of the cache's claims: the firstAvailable subrequests claim x takes on node. */
bool kcache_claim_subs(const struct kcache *c, const struct kclaim *x, const char *node,
                       uint8_t *sub);
/* MIG devices at binding (claims.h kclaims_mig_pick, kclaims_mig_release). */
int kcache_mig_pick(const struct kcache *c, const char *key, const char *node, const char **dev,
                    const char **drv, const char **pool, uint32_t n_max, uint32_t *n, uint8_t *sub);
void kcache_mig_release(const struct kcache *c, const char *key);
/* GPU `index` of node as a DRA device name (NULL: the node's GPUs are not DRA devices). */
const char *kcache_dra_device(const struct kcache *c, const char *node, uint32_t index,
                              const char **driver, const char **pool);

/* Marks a pod as bound to node (a bind was sent, or succeeded) until a watch event shows it
 * bound or it disappears; kcache_unassume forgets it (a failed bind). */
int kcache_assume(struct kcache *c, const char *pod_key, const char *node, uint32_t gpu_mask,
                  uint32_t flavor);
void kcache_unassume(struct kcache *c, const char *pod_key);

/* A delete of the pod is about to be sent: from now on the pod counts as deleting (a delete
 * sent counts at once, as an assumed bind counts as bound) until it is gone or another pod takes
 * its name. false when a delete of this pod (same uid) was sent already, or the pod is unknown:
 * send nothing (a pod is deleted once). kcache_delete_failed undoes the mark (the delete failed
 * for a reason other than the pod being gone: it may be sent again). */
bool kcache_delete_sent(struct kcache *c, const char *pod_key);
void kcache_delete_failed(struct kcache *c, const char *pod_key, const char *uid);

/* Something changed since the last build (a cycle is worth running). */
bool kcache_dirty(const struct kcache *c);
uint32_t kcache_n_nodes(const struct kcache *c);
uint32_t kcache_n_pods(const struct kcache *c);
const struct kpod *kcache_pod(const struct kcache *c, const char *key);
/* fn on each pod of the gang of key `key`, in no order: the pod named key when it is a gang of
 * one, else each pod of ours whose group (kpod.group) is key, by a walk of this scheduler's pods
 * (the Events of a group that has no object to be about, driver_status.c; an operator's
 * checkpoint request on pods, driver_ckpt.c). */
void kcache_each_gang_pod(struct kcache *c, const char *key,
                          void (*fn)(void *ctx, const struct kpod *p), void *ctx);
/* Users (gangsched.io/user, sched/kube/cache_users.c): the id of a user's name, interned at its
 * first sight (0: NULL, empty, longer than KCACHE_USER_MAX bytes, past EST_USERS_MAX users, or
 * out of memory), and the name of an id (NULL for 0 or unknown). Ids are gang.user. */
#define KCACHE_USER_MAX 256
uint32_t kcache_user_id(struct kcache *c, const char *name);
const char *kcache_user_name(const struct kcache *c, uint32_t id);
const struct kpg *kcache_pg(const struct kcache *c, const char *key);
/* The CompositePodGroup pg names as its parent (sched/kube/cache_cpg.c), or NULL: none named,
 * or not seen; its cache key in key (n bytes; "" when none is named), unless key is NULL. */
const struct kpg *kcache_pg_parent(const struct kcache *c, const struct kpg *pg, char *key,
                                   size_t n);
/* A group's members by phase (sched/kube/cache_counts.c): this scheduler's pods whose group
 * (kpod.group, not a native group) is the key, kept by every pod event. The driver writes them
 * to the PodGroup's status.running, succeeded and failed (driver_counts.c). */
struct kcounts {
    int32_t n[KPOD_COUNTS];    /* members running, succeeded, failed (kpod_phase - 1) */
    uint32_t pods;             /* members in the cache */
    bool dirty;                /* changed (or its PodGroup seen) since the driver last took it */
    int64_t written_ms;        /* the driver's: when it last wrote them (0: never) */
    const char *phase_written; /* the driver's: the phase that write carried (a string
                                  constant), or NULL */
};
/* The counts of a group key, or NULL (no member known). */
const struct kcounts *kcache_counts(struct kcache *c, const char *group);
/* fn on each dirty group's counts; fn returns true when done with them (no longer dirty),
 * false to be called again at the next kcache_counts_each. Groups left without members are
 * forgotten once done with. */
void kcache_counts_each(struct kcache *c,
                        bool (*fn)(void *ctx, const char *group, struct kcounts *k), void *ctx);
const char *kcache_node_uid(const struct kcache *c, const char *name); /* or NULL */
/* Calls fn for every pod (fn must not change the cache). */
void kcache_each_pod(const struct kcache *c, void (*fn)(void *ctx, const struct kpod *p),
                     void *ctx);
/* Index of a node in kcache_cluster(), or -1 (hash lookup). */
int kcache_node_index(const struct kcache *c, const char *name);
/* The current cluster (rebuilt at kcache_build when nodes changed), or NULL before any build. */
const struct cluster *kcache_cluster(const struct kcache *c);

/* Builds a cycle's input at now_ms for `cfg` and `pol`. Everything lives in `a` or in the
 * cache. Returns 0, SCHED_ENOMEM, or SCHED_EINVAL when the cluster cannot be built (message in
 * eb). */
int kcache_build(struct kcache *c, const struct config *cfg, const struct sched_policy *pol,
                 int64_t now_ms, struct arena *a, struct kcache_build *out,
                 struct sched_errbuf *eb);
/* Sets kb->snap.base to the placement state the cache keeps between cycles (place_base.h),
 * touched for every node whose state in kb differs from the last cycle's; call it after the
 * driver's last change to kb->state, just before the cycle. A new cluster (kcache_build rebuilt
 * it) gets a new base. SCHED_ENOMEM leaves snap.base NULL: the cycle then builds its own (same
 * decisions, the cost of every node). */
int kcache_base(struct kcache *c, struct kcache_build *kb);
/* For comparison (--kube-full-cycles): each build counts the usage of every pod again and walks
 * every pod, as before the usage and the walked set were kept by deltas. */
void kcache_set_full(struct kcache *c, bool full);

#endif
