/* sched/kube/objects.h: decoding the API objects the scheduler reads (pods, PodGroups of both
 * APIs) from cJSON into compact, validated records.
 *
 * Owns: the records and every string in them; which fields are read and how they are checked;
 * the membership and queue conventions users already have:
 *   gang:  label scheduling.x-k8s.io/pod-group (scheduler-plugins PodGroup),
 *          annotation scheduling.k8s.io/group-name or scheduling.volcano.sh/group-name (Volcano),
 *          label kueue.x-k8s.io/pod-group-name with the annotation
 *          kueue.x-k8s.io/pod-group-total-count (Kueue's plain-pod groups: no PodGroup object,
 *          minMember = the total count); a pod without a group is a gang of one.
 *   queue: label gangsched.io/queue, else label kueue.x-k8s.io/queue-name (a Kueue LocalQueue
 *          of the namespace: the configuration maps it to a queue), else annotation
 *          scheduling.volcano.sh/queue-name; a PodGroup's own label or Volcano spec.queue wins
 *          for its pods.
 * Nodes are decoded by sched/k8s/nodes.c (nodes_decode), the same reader as NodeList files.
 * Every record is decoded once, when its object arrives, and keeps no cJSON tree.
 *
 * Must not touch: the cache, the network, the store. Pure functions of their input.
 * Errors: a malformed object is refused with SCHED_EINVAL and a message naming the object
 * ("pod default/w-0: spec.containers[1].resources.requests.cpu: ..."); callers log and skip it.
 */
#ifndef SCHED_KUBE_OBJECTS_H
#define SCHED_KUBE_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sched/core/arena.h"
#include "sched/core/err.h"
#include "sched/core/model.h"
#include "sched/core/res.h"

#define KOBJ_LABEL_QUEUE        "gangsched.io/queue"
#define KOBJ_LABEL_KUEUE_QUEUE  "kueue.x-k8s.io/queue-name"
#define KOBJ_ANNOT_VOLCANO_Q    "scheduling.volcano.sh/queue-name"
#define KOBJ_LABEL_XK8S_GROUP   "scheduling.x-k8s.io/pod-group"
#define KOBJ_ANNOT_KUBE_GROUP   "scheduling.k8s.io/group-name"
#define KOBJ_ANNOT_VOLCANO_GRP  "scheduling.volcano.sh/group-name"
#define KOBJ_LABEL_KUEUE_GROUP  "kueue.x-k8s.io/pod-group-name"
#define KOBJ_ANNOT_KUEUE_TOTAL  "kueue.x-k8s.io/pod-group-total-count"
#define KOBJ_ANNOT_GPU_IDS      "gangsched.io/gpu-ids"
#define KOBJ_GPU_CTRS           16 /* containers whose device counts are kept */
#define KOBJ_ANNOT_FLAVOR       "gangsched.io/flavor"
#define KOBJ_ANNOT_LAST_CKPT    "gangsched.io/last-checkpoint"
#define KOBJ_ANNOT_CKPT_ASKED   "gangsched.io/checkpoint-requested" /* RFC 3339 */
#define KOBJ_ANNOT_CKPT_UNTIL   "gangsched.io/checkpoint-deadline"  /* RFC 3339, a preemption's */
#define KOBJ_ANNOT_NONPREEMPT   "gangsched.io/non-preemptible"
#define KOBJ_ANNOT_MIN_RUNTIME  "gangsched.io/min-runtime"
#define KOBJ_ANNOT_RESTART_COST "gangsched.io/restart-cost"
#define KOBJ_ANNOT_BIND_FENCE   "gangsched.io/bind-fence" /* written to end a Binding's doubt */
#define KOBJ_ANNOT_MAX_RUNTIME  "gangsched.io/max-runtime"
#define KOBJ_ANNOT_USER         "gangsched.io/user" /* also a label of that name on pods */

#define KOBJ_NAME_MAX 253                     /* longest Kubernetes object name (DNS subdomain) */
#define KOBJ_KEY_MAX  (2 * KOBJ_NAME_MAX + 6) /* "namespace/cpg:name" and its NUL */

/* "namespace/name" into buf (namespace "" or NULL is "default"); SCHED_EINVAL for a missing or
 * too long name, or one containing '/'. */
int kobj_key(const char *ns, const char *name, char *buf, size_t n);

enum kpod_phase { KPOD_PENDING = 0, KPOD_RUNNING, KPOD_SUCCEEDED, KPOD_FAILED, KPOD_UNKNOWN };
/* The phases a PodGroup's status counts (status.running, succeeded, failed): index phase - 1. */
#define KPOD_COUNTS 3

struct kpod {
    /* first, together (one cache line): what a build reads of every hot pod (cache_build.c
     * read_pods) */
    char *key;            /* "namespace/name" */
    char *node;           /* spec.nodeName, NULL when unbound */
    char *group;          /* gang key "namespace/podgroup", NULL: a gang of one */
    char *pg_ref;         /* key of the group's object in the cache when it differs from group
                             (a 1.35 workloadRef: "ns/workload:podGroup", group adds
                             ":replicaKey"), else NULL */
    char *claim_wait;     /* a template's claim not created yet: what it waits for, or NULL */
    uint32_t n_claims;    /* of claims (below) */
    uint32_t group_total; /* Kueue plain-pod group: its total count (minMember), else 0 */
    bool native;          /* the group comes from spec.schedulingGroup or spec.workloadRef */
    bool ours;            /* spec.schedulerName is this scheduler's name */
    bool deleting;        /* metadata.deletionTimestamp set, or a delete of this uid was sent */
    bool gated;           /* spec.schedulingGates not empty: cannot be bound yet */
    enum kpod_phase phase;
    /* the rest */
    char *ns, *name; /* in key's block (freed with it) */
    char *uid;
    char *rv;              /* metadata.resourceVersion: the Binding's precondition, or NULL */
    uint64_t digest;       /* this scheduler's pods: kobj_pod_digest of the object (equal: the two
                              versions read alike); 0 for others: each event of theirs a change */
    char *ext_claim;       /* "ns/name" of status.extendedResourceClaimStatus.resourceClaimName
                              (KEP-5004's claim for its container GPUs, dra.h), or NULL */
    char **claims;         /* keys "ns/name" of its ResourceClaims (spec.resourceClaims, through
                              status.resourceClaimStatuses for templates) (sched/kube/dra.h) */
    uint32_t claims_adopt; /* bits of claims (index < 32) that are allocated already and that it
                              uses without allocating them (claims.h kclaims_demand, at each
                              build of a pending pod; 0 otherwise) */
    char **claims_entry;   /* parallel to claims: its spec.resourceClaims entry (dra.h
                              kdra_claim_entry) */
    uint32_t claims_group; /* bits of claims (index < 32) its native PodGroup lists alike in
                              spec.resourceClaims (KEP-5729): reserved for the PodGroup, not the
                              pod (claims.h kclaims_note_group, at each build) */
    char *group_uid;       /* with claims_group: that PodGroup's metadata.uid, else NULL */
    /* bound and ours: its gangsched.io/max-runtime in seconds, rounded up (0: none or not
     * readable), which its running gang keeps (spec, which holds it while pending, is gone) */
    uint32_t max_runtime_s;
    /* bound and ours: its gangsched.io/min-runtime, restart-cost and start-timeout (ms; -1: none
     * or not readable), max-restarts (UINT32_MAX: none) and non-preemptible (annot.c annot_run),
     * which its running gang of one keeps (a gang with a PodGroup reads the PodGroup's) */
    int64_t min_runtime_ms, restart_cost_ms, start_timeout_ms;
    uint32_t max_restarts;
    bool non_preemptible;
    /* ours: its gangsched.io/checkpoint-requested, checkpoint-deadline and last-checkpoint (ms
     * since the epoch; 0: none, or not RFC 3339): the checkpoint handshake of a gang asked on its
     * pods, and a job's answer on any of its pods (sched/kube/driver_ckpt.c) */
    int64_t ckpt_asked_ms, ckpt_until_ms, ckpt_last_ms;
    int64_t gpus_own; /* GPUs its containers request (req adds its claims' at each build) */
    struct kpod_mig { /* the MIG devices its claims added to req at the last build, per profile
                         resource (sched/kube/mig.h; taken back before the next) */
        int16_t res;
        int16_t n;
    } mig[4];
    uint8_t n_mig;
    char *queue;        /* the pod's own queue label or annotation, NULL when none */
    char *user;         /* gangsched.io/user annotation, else label (kept once bound, for
                           run-time estimates per user), NULL when none */
    bool queue_kueue;   /* queue is Kueue's label: it names a LocalQueue in the pod's namespace */
    char *flavor;       /* gangsched.io/flavor written at binding, or NULL */
    bool del_ts;        /* metadata.deletionTimestamp set (what the API says) */
    bool ready;         /* condition Ready=True */
    int32_t priority;   /* spec.priority, 0 when absent */
    bool preempt_never; /* spec.preemptionPolicy Never (its PriorityClass's, from admission) */
    int64_t created_ms;
    int64_t started_ms; /* status.startTime, else the time of PodScheduled=True (the binding),
                           else 0: the start of the pod's current run */
    int64_t bound_ms;   /* the time of PodScheduled=True (whole seconds, rounded down: the
                           Binding sets it, kube-apiserver's BindingREST through
                           UpdatePodCondition), else startTime, else 0: when its current run was
                           bound. The kubelet sets startTime later, seconds on a busy node */
    struct res_vec req; /* effective request (containers, init containers, overhead) */
    char *why;          /* the pod's own words when it is not starting or has failed: status
                           reason/message, or a container's waiting or terminated state
                           ("container main: CrashLoopBackOff: back-off 5m0s"), or NULL */
    char *sched_msg;    /* message of its condition PodScheduled=False, or NULL */
    uint32_t gpu_mask;  /* gangsched.io/gpu-ids, when has_gpu_ids */
    bool has_gpu_ids;
    struct kpod_spec *spec; /* unbound and ours: what placing it reads, else NULL */
    /* every pod: what inter-pod constraints read of it (namespace, labels, required pod affinity
     * and anti-affinity terms, host ports, DoNotSchedule spreads; objects_meta.c) */
    struct pod_meta *meta; /* = &meta_own once decoded */
    struct pod_meta meta_own;
    struct arena meta_mem; /* its strings and arrays (no chunk for a pod without labels) */
    uint64_t rules_h[2];   /* with spec: the hash of its inter-pod constraints without [0] and
                              with [1] its preferences, taken at decoding (kobj_same_spec) */
    uint32_t listed; /* the cache's: listed in its bound pods of that generation (snapshot.c) */
};

/* One container's request of the accelerator's extended resource (device_resource()), as
 * KEP-5004's special claim maps it (sched/kube/dra.h kdra_ext_requests). */
struct kobj_ext_ctr {
    const char *name; /* the container's name */
    uint16_t idx;     /* its index in initContainers + containers */
    uint16_t ridx;    /* the resource's index among the container's sorted request names */
    uint32_t count;   /* devices */
    bool short_lived; /* an init container that is not a sidecar (restartPolicy Always) */
};

/* What placing an unbound pod of ours reads, decoded when it arrives (every pointer into mem). */
struct kpod_spec {
    struct arena mem;
    const struct kv *node_selector; /* sorted by key */
    uint32_t n_node_selector;
    const struct toleration *tolerations;
    uint32_t n_tolerations;
    const struct sel_term *affinity; /* required node affinity terms */
    uint32_t n_affinity;
    const struct pref_term *pref; /* preferred node affinity terms (weight > 0, non-empty) */
    uint32_t n_pref;
    const char *err;      /* why those cannot be read ("pod ns/x: spec.tolerations: ..."): the gang
                             waits with InvalidSpec; NULL when they were read */
    const struct kv *ann; /* metadata.annotations, sorted by key */
    uint32_t n_ann;
    const char *claim_shape; /* spec.resourceClaims as compact JSON (the pods of one template
                                share it), or NULL */
    uint8_t gpu_ctrs[KOBJ_GPU_CTRS]; /* devices each of spec.containers asks, in order (HAMi's
                                        allocation has one entry per container) */
    uint8_t n_gpu_ctrs;              /* 0: unknown (more than KOBJ_GPU_CTRS containers) */
    const struct kobj_ext_ctr *ext;  /* the containers asking the accelerator by its resource
                                        name (n_ext of them; their counts sum to the pod's
                                        device GPUs), or NULL when they cannot be told */
    uint32_t n_ext;
};

/* Decodes a Pod. `scheduler` is this scheduler's name. */
int kobj_pod_decode(const cJSON *o, const char *scheduler, struct kpod **out,
                    struct sched_errbuf *eb);
void kobj_pod_free(struct kpod *p);

/* The meta of a pod set whose first pod's is m: m, or without prefs (kobj_sets overflowing with
 * them) a
 * copy in `a` without inter-pod preferences; NULL on out of memory. */
const struct pod_meta *kobj_set_meta(struct arena *a, const struct pod_meta *m, bool prefs);
/* true when two unbound pods can share a pod set: same request, priority, constraints and
 * claim shape, and (prefs) the same preferred node affinity and inter-pod preferences. */
bool kobj_same_spec(const struct kpod *a, const struct kpod *b, bool prefs);
/* The pod sets of pods[0..n) (kobj_same_spec with prefs; a pod joins the first set it matches):
 * their number, set_of[s] the index of set s's first pod, set_id[i] pod i's set. *over when a
 * pod matches none of GANG_MAX_SETS sets: the sets returned are those made before it, and the
 * set_id of it and the pods after it are not set. */
uint32_t kobj_sets(struct kpod *const *pods, uint32_t n, bool prefs, uint32_t set_of[GANG_MAX_SETS],
                   uint8_t *set_id, bool *over);

/* KPG_NATIVE_*: scheduling.k8s.io PodGroups (1.36 v1alpha2, 1.37 v1beta1 and v1alpha3);
 * KPG_WORKLOAD_V1ALPHA1:
 * one pod group of a 1.35 Workload (sched/kube/native.h). */
enum kpg_api {
    KPG_XK8S = 0,
    KPG_VOLCANO,
    KPG_NATIVE_V1ALPHA2,
    KPG_NATIVE_V1BETA1,
    KPG_WORKLOAD_V1ALPHA1,
    KPG_NATIVE_V1ALPHA3, /* 1.37's alpha PodGroup (CompositePodGroup's version): as v1beta1 */
    KPG_CPG_V1ALPHA3,    /* 1.37's alpha CompositePodGroup: a gang of child PodGroups, keyed
                            "namespace/cpg:name" (knative_cpg_key; a PodGroup may have its name) */
    KPG_N_API
};

/* A PodGroup's spec.resourceClaims: at most 4 (upstream's MaxPodGroupResourceClaims). */
#define KPG_MAX_CLAIMS 4

struct kpg {
    char *key; /* "namespace/name" */
    char *ns, *name, *uid, *rv;
    enum kpg_api api;
    uint32_t min_member; /* >= 1 (Volcano allows 0: read as 1) */
    char *queue;         /* gangsched.io/queue label, Kueue label, or Volcano spec.queue */
    bool queue_kueue;    /* queue is Kueue's label (a LocalQueue of the namespace) */
    char *priority_class;
    int64_t created_ms;
    bool deleting; /* metadata.deletionTimestamp set (a finalizer keeps it): none of its pending
                      pods is started (cache_build.c why_waiting), its status not written */
    /* what later reads need of the object (kobj_pg_keep), strings and arrays in mem: */
    struct arena *mem;
    const struct kv *ann; /* metadata.annotations, sorted by key */
    uint32_t n_ann;
    const char *nt_mode; /* Volcano spec.networkTopology.mode, or NULL */
    bool has_nt_tier;    /* Volcano spec.networkTopology.highestTierAllowed given: */
    int32_t nt_tier;
    bool has_start_time; /* scheduler-plugins status.scheduleStartTime set */
    /* scheduler-plugins and Volcano: status.running, succeeded, failed as seen (absent or
     * not a count: 0, as their Go types omit a zero), which the driver keeps equal to its
     * members' phases (driver_counts.c) */
    int32_t seen_counts[KPOD_COUNTS];
    const char *phase; /* scheduler-plugins and Volcano: status.phase as seen, or NULL */
    const char *raw;   /* Volcano: the object as last seen, compact JSON (its status is
                          written by a PUT of the object), else NULL */
    const struct kpg_cond {
        const char *type, *status, *last_transition; /* status.conditions[] (native groups) */
    } * conds;
    uint32_t n_conds;
    /* native groups only (sched/kube/native.c) */
    bool basic;                   /* schedulingPolicy basic: no gang, each pod placed alone */
    bool disrupt_all;             /* disruptionMode all ({all: {}}; v1alpha2 "PodGroup") */
    bool has_priority;            /* spec.priority given */
    bool has_preempt_policy;      /* spec.preemptionPolicy given (gate PodGroupPreemptionPolicy): */
    bool preempt_never;           /* it is Never */
    int32_t priority;             /* spec.priority */
    bool initially_scheduled;     /* PodGroupInitiallyScheduled (v1alpha2 PodGroupScheduled) True */
    int64_t generation;           /* metadata.generation (the conditions' observedGeneration) */
    int64_t sched_generation;     /* observedGeneration of the True scheduled condition, 0: none */
    char *topology_key;           /* schedulingConstraints.topology[0].key, or NULL */
    char *parent;                 /* spec.parentCompositePodGroupName (same namespace), or NULL */
    uint32_t min_groups;          /* a CompositePodGroup's gang.minGroupCount; 0 when basic */
    char *claims[KPG_MAX_CLAIMS]; /* spec.resourceClaims entries (dra.h kdra_claim_entry; gate
                                     DRAWorkloadResourceClaims, KEP-5729) */
    uint32_t n_claims;
};

int kobj_pg_decode(const cJSON *o, enum kpg_api api, struct kpg **out, struct sched_errbuf *eb);
void kobj_pg_free(struct kpg *g);
/* Fills g->mem and what it holds from the group's object o (any API). 0 or SCHED_ENOMEM. */
int kobj_pg_keep(struct kpg *g, const cJSON *o);
/* Two strings alike, NULL only like NULL. */
static inline bool kobj_same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}
/* Do two decodings of one PodGroup read alike for a cycle: equal but for what only the status
 * writer reads (resourceVersion, metadata.generation, the Volcano object kept for its PUT,
 * status.conditions and scheduleStartTime, which this scheduler writes; PodGroupInitiallyScheduled
 * is compared: it changes a gang's minimum)? Then the later one is no reason for a cycle
 * (kcache_pg_event). generation is left out because a CRD without a status subresource
 * (Volcano's) bumps it for a status write too: a spec change that matters changes a field
 * compared here. */
bool kobj_pg_same(const struct kpg *a, const struct kpg *b);
/* A PodGroup's annotation (binary search), or NULL; pg may be NULL. */
const char *kobj_pg_annotation(const struct kpg *pg, const char *key);

/* What inter-pod constraints read of pod o into p->meta (objects_meta.c): 0, SCHED_ENOMEM, or
 * SCHED_EINVAL naming the field (p->meta then holds what was read before it). */
int kobj_pod_meta(const cJSON *o, struct kpod *p, struct sched_errbuf *eb);
/* A digest of everything pod object o says but its resourceVersion, managedFields and
 * PodScheduled condition (what this scheduler writes on a waiting pod): two versions with one
 * digest decode alike but for those, so the later one is no reason for a cycle
 * (kcache_pod_event). 0 when o is not an object. */
uint64_t kobj_pod_digest(const cJSON *o);
/* A map of strings copied into `a`, sorted by key (a value that is not a string is skipped, or
 * refused naming `where` when it is not NULL); a list of strings (SCHED_EINVAL: not one). */
int kobj_kv_copy(const cJSON *map, const char *where, struct arena *a, const struct kv **out,
                 uint32_t *n, struct sched_errbuf *eb);
int kobj_strings(const cJSON *arr, struct arena *a, const char *const **out, uint32_t *n);
/* A matchExpressions list (not a list: none) appended at r[*k] on: each needs a string key and
 * one of the first n_ops operators of In, NotIn, Exists, DoesNotExist, Gt, Lt (label selectors
 * allow 4, node selectors 6, a node selector's matchFields 2) and values that are a list of
 * strings; a refusal names where[j]. 0, SCHED_ENOMEM or SCHED_EINVAL. */
int kobj_sel_exprs(const cJSON *exprs, int n_ops, const char *where, struct arena *a,
                   struct sel_req *r, uint32_t *k, struct sched_errbuf *eb);

/* resourceVersion a is older than b: they are opaque, but when both are decimal (etcd
 * revisions, as client-go assumes) they compare as numbers; false otherwise. */
bool kobj_rv_older(const char *a, const char *b);

/* A string field at a dotted path ("metadata.labels"), or NULL. */
const char *kobj_str(const cJSON *o, const char *path);
/* RFC 3339 ("2025-01-01T12:00:00Z", fractions and offsets accepted) to Unix ms; 0 or
 * SCHED_EINVAL. */
int kobj_time(const char *s, int64_t *ms);
/* A JSON quantity (a string, or a number as some clients write it) of resource `id` in its base
 * units (sched/core/res.h res_parse); SCHED_EINVAL naming what is wrong. */
int kobj_quantity(const cJSON *v, int id, int64_t *out, struct sched_errbuf *eb);
/* Unix ms to RFC 3339 with microseconds ("2025-01-01T12:00:00.000000Z", MicroTime). */
void kobj_format_time(int64_t ms, char *buf, size_t n);

#endif
