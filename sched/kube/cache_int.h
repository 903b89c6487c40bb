/* sched/kube/cache_int.h: the cache's own record, shared by cache.c (events), cache_build.c (the
 * cycle's input), snapshot.c (the cluster and the placement state kept between cycles) and
 * cache_refused.c (PodGroups refused for a name another API's owns), cache_users.c (who
 * submits each gang) and cache_cpg.c (CompositePodGroups' trees as gangs). Private to those
 * files.
 *
 * Must not touch: anything outside the cache.
 */
#ifndef SCHED_KUBE_CACHE_INT_H
#define SCHED_KUBE_CACHE_INT_H

#include "sched/core/place_base.h"
#include "sched/core/podaff.h"
#include "sched/kube/cache.h"

struct kassume {
    char *node;
    uint32_t gpu_mask;
    uint32_t flavor;
};

struct kcache {
    char *scheduler;
    struct strmap nodes;   /* name -> struct nodes_rec* (the Node decoded, sched/k8s/nodes.h) */
    struct strmap pods;    /* "ns/name" -> struct kpod* */
    uint32_t n_rule_pods;  /* pods whose meta has terms for other pods (podaff_others) */
    uint32_t list_gen;     /* generation of kcache_bound_pods (kpod.listed) */
    struct strmap pgs;     /* "ns/name" -> struct kpg* */
    struct strmap assumed; /* "ns/name" -> struct kassume* */
    struct strmap deletes; /* "ns/name" -> char* uid: a delete of that pod was sent */
    bool nodes_dirty, dirty;
    struct cluster *cluster;
    struct strmap node_ix; /* node name -> index + 1 in cluster */
    uint64_t cluster_cfg;  /* config version the cluster's levels came from */
    uint64_t cluster_gen;  /* bumped by every rebuild of the cluster */
    struct kclaims *dra;   /* ResourceSlices and ResourceClaims (sched/kube/claims.h) */
    /* kept between cycles (snapshot.c): the placement state of cluster generation base_gen and
     * the node_state each of its nodes was last synced from ([cluster->n_nodes]) */
    struct place_base *base;
    struct node_state *kept;
    uint64_t base_gen;
    /* node usage kept by deltas (snapshot.c): node name -> struct knode_use*, every pod that
     * holds a node (bound, or assumed) counted in it except the pods with ResourceClaims (their
     * requests and GPUs depend on the claims at each build: counted then); use_ix[i] is the entry
     * of cluster node i (NULL: no pod), valid while use_ix_gen == cluster_gen and !use_new */
    struct strmap use;
    struct knode_use **use_ix;
    uint64_t use_ix_gen;
    bool use_new; /* an entry was added since use_ix was made */
    bool use_all; /* count every pod again at the next build (out of memory on the way) */
    /* the pods a build walks (snapshot.c kcache_hot_pod): "ns/name" -> struct kpod*, the pods of
     * this scheduler, the pods with ResourceClaims and the members of native PodGroups; the
     * others (most of a big cluster: other schedulers' running pods) count only in the usage */
    struct strmap hot;
    bool hot_all; /* make `hot` again from every pod at the next build (out of memory) */
    /* of the pods in `hot`: those with claims or waiting for one (kcache_claim_pod), and native
     * groups' members of other schedulers (kcache_foreign_pod); a build skips what reads only
     * them when there are none (each pod's fields are fixed for the life of its object) */
    uint32_t hot_claims, hot_foreign;
    bool full; /* kcache_set_full: count every pod and walk every pod at each build */
    /* PodGroups refused because another API's PodGroup owns their name (cache_refused.c):
     * "ns/name\x1f<api>" -> struct krefused*; refused_seq orders them */
    struct strmap refused;
    uint64_t refused_seq;
    /* users (cache_users.c): name -> id (1-based, as a pointer), user_names[id - 1] */
    struct strmap nss; /* namespace name -> struct kns* (cache_ns.c) */
    struct strmap users;
    char **user_names;
    uint32_t n_users, cap_users;
    /* members by phase per group (cache_counts.c): group key -> struct kcounts*; n_dirty of
     * them dirty; counts_lost: an entry could not be made (out of memory), so every group is
     * counted again from the pods before the next kcache_counts_each */
    struct strmap counts;
    uint32_t n_counts_dirty;
    bool counts_lost;
};

/* One node's usage by the pods that hold it (snapshot.c). */
struct knode_use {
    struct res_vec used; /* sum of the pods' requests */
    uint32_t ids[32];    /* pods holding GPU index g by their GPU ids */
    int64_t anon;        /* GPUs of pods without ids (another scheduler's): the lowest free */
};

/* cache.c. A PodGroup event's object decoded (0, *out set), or skipped with a warning when it
 * does not decode (0, *out NULL), or SCHED_ENOMEM. */
int kcache_pg_decode(const cJSON *obj, enum kpg_api api, struct kpg **out);
/* One native PodGroup served as v1beta1 and v1alpha3 (1.37) is one object, written through
 * v1beta1: the API of a record that had API `had` and is now seen through `api`. */
static inline enum kpg_api kcache_pg_api(enum kpg_api had, enum kpg_api api)
{
    return had == KPG_NATIVE_V1BETA1 && api == KPG_NATIVE_V1ALPHA3 ? KPG_NATIVE_V1BETA1 : api;
}

/* cache_refused.c. kcache_refuse: the event of key's PodGroup of api (obj), refused because own
 * (another API's, another uid) has the name: kept decoded (deleted: dropped), logged and marked
 * for announcing at its first refusal. 0 or SCHED_ENOMEM. kcache_adopt_refused: key's owner
 * was deleted: the PodGroup refused first takes the name (the caller's c->pgs has no entry). */
int kcache_refuse(struct kcache *c, const char *key, const cJSON *obj, enum kpg_api api,
                  bool deleted, const struct kpg *own);
void kcache_adopt_refused(struct kcache *c, const char *key);
/* The group key's PodGroup of api with uid is in the cache's record now (an adoption whose
 * record failed, then its next event): a refused copy of it is dropped, never adopted later. */
void kcache_refused_drop(struct kcache *c, const char *key, enum kpg_api api, const char *uid);
void kcache_refused_free(struct kcache *c);
/* cache_users.c: a gang's user id (its PodGroup's gangsched.io/user annotation, else its first
 * member's), 0 when not known; the table's release. */
uint32_t kcache_gang_user(struct kcache *c, const struct kpg *pg, const struct kpod *first);
void kcache_users_free(struct kcache *c);
/* The labels of namespace `name`, kept current (a record made at first sight, cache_ns.c), or
 * NULL out of memory. */
const struct ns_labels *kcache_ns_labels(struct kcache *c, const char *name);
void kcache_ns_free(struct kcache *c);

/* Rebuilds the cluster from the decoded nodes (snapshot.c). 0, SCHED_ENOMEM or SCHED_EINVAL. */
int kcache_rebuild_cluster(struct kcache *c, const struct config *cfg, struct sched_errbuf *eb);
/* Frees the kept placement state and usage (snapshot.c). */
void kcache_base_free(struct kcache *c);
/* Counts (sign +1) or uncounts (-1) pod p (may be NULL) in the usage of the node it holds, as
 * the cache holds it now: call with -1 before any change to p's record or to its assumption,
 * and with +1 after. */
void kcache_use_pod(struct kcache *c, const struct kpod *p, int sign);
/* Per-node usage into state[cluster->n_nodes] (zeroed by the caller): the kept counts, then the
 * pods with claims, then the GPUs of pods without ids (the lowest free indices, in this order:
 * the same as taking them pod by pod). anon[n_nodes]: zeroed scratch. */
void kcache_usage(struct kcache *c, struct node_state *state, int64_t *anon);
void kcache_use_free(struct kcache *c);
/* b->snap.bound_pods: the pods holding a node (bound, or assumed; not finished) with what
 * inter-pod constraints read of them, the running gangs' with their pod set, in `a`; none unless
 * some pod carries terms for other pods (podaff_others) or a pod set of a pending gang a
 * constraint or a preference. 0 or SCHED_ENOMEM. */
int kcache_bound_pods(struct kcache *c, struct kcache_build *b, struct arena *a);
/* Pod p (NULL: none) enters (sign 1) or leaves (-1) the cache: its usage (kcache_use_pod), its
 * group's counts (kcache_counts_pod) and n_rule_pods, the pods whose meta carries terms for other
 * pods. */
/* cache_counts.c: pod p (NULL: none) counted (sign 1) or uncounted (-1) in its group's
 * members by phase; a PodGroup event of key marks its counts dirty (to be compared with the
 * status seen), or forgets them when it is deleted and no member is left; the table's
 * release. */
void kcache_counts_pod(struct kcache *c, const struct kpod *p, int sign);
void kcache_counts_seen(struct kcache *c, const char *key, bool deleted);
void kcache_counts_free(struct kcache *c);
static inline void kcache_pod_in(struct kcache *c, const struct kpod *p, int sign)
{
    kcache_use_pod(c, p, sign);
    kcache_counts_pod(c, p, sign);
    if (p && podaff_others(p->meta))
        c->n_rule_pods += (uint32_t)sign;
}
/* Pod p (the cache's record, or NULL: gone) of key in or out of the walked set. */
void kcache_hot_pod(struct kcache *c, const char *key, struct kpod *p);
/* p has ResourceClaims or waits for one to be created; p is a native group's member of another
 * scheduler. */
bool kcache_claim_pod(const struct kpod *p);
bool kcache_foreign_pod(const struct kpod *p);
/* The walked set, made again from every pod when it was lost to out of memory. */
const struct strmap *kcache_hot(struct kcache *c);

/* cache_cpg.c. The gang key of pod p's group, written to buf (n bytes) for a tree: the key
 * "ns/cpg:name" of the highest CompositePodGroup above its PodGroup reached through gang ones
 * (*cpg set; *pg that CompositePodGroup, or NULL when one above is not seen: then its key), a
 * layout gangsched does not schedule said in *why (static text); else p->group (*pg its
 * PodGroup, or NULL), or p->key for a gang of one and for a native basic group's pod. */
const char *kcache_gang_of(const struct kcache *c, const struct kpod *p, char *buf, size_t n,
                           const struct kpg **pg, bool *cpg, const char **why);

#define KCPG_PINS 6 /* a domain per level of a tree: 4 CompositePodGroups and the PodGroup */

/* A live pod of a group that runs below its own minimum in a running tree, and why. */
struct kcpg_short {
    const struct kpod *pod;
    const char *why; /* "podgroup ns/b: 1 of minCount 2 pods live" */
};

/* What a build offers of one CompositePodGroup's tree (kcache_cpg_plan). */
struct kcpg_plan {
    uint32_t min; /* the gang's minimum members: the pending gang's pods, or (running) the
                     least the tree's whole part needs, above its live members when below
                     quorum */
    bool whole;   /* minGroupCount groups have their minimum live, down the tree */
    /* pending: the gang's pods in placement order (a group's together), or a waiting reason */
    struct kpod **members;
    uint32_t n_members;
    const char *reason, *message;
    const char *topo_key;  /* node label of the gang's required level, or NULL */
    const char *slice_key; /* groups of one level as slices: node label of their level, or NULL */
    uint32_t slice_size;   /* pods per slice */
    struct kv *pins;       /* node labels the gang's nodes must carry (the running tree's) */
    uint32_t n_pins;
    /* a running tree's live pods in groups below their own minimum (find_short), by address */
    struct kcpg_short *shorts;
    uint32_t n_short;
};

/* The tree of CompositePodGroup cpg from its pods (both arrays reordered: by PodGroup, then
 * name), in `a`: 0 or SCHED_ENOMEM. why: kcache_gang_of's (the tree waits with it). With no
 * pending pod only min, whole and shorts are set. */
int kcache_cpg_plan(const struct kcache *c, const struct kpg *cpg, const char *why,
                    struct kpod **pending, uint32_t n_pending, struct kpod **bound,
                    uint32_t n_bound, struct arena *a, struct kcpg_plan *out);

/* Why pod p's group runs below its own minimum in plan's running tree (it goes, the tree goes
 * on), or NULL. */
const char *kcache_cpg_short(const struct kcpg_plan *plan, const struct kpod *p);

#endif
