/* sched/kube/cache_int.h: the cache's own record, shared by cache.c (events and the cycle's
 * input) and snapshot.c (the cluster and the placement state kept between cycles). Private to
 * those two files.
 *
 * Must not touch: anything outside the cache.
 */
#ifndef SCHED_KUBE_CACHE_INT_H
#define SCHED_KUBE_CACHE_INT_H

#include "sched/core/place_base.h"
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
};

/* Rebuilds the cluster from the decoded nodes (snapshot.c). 0, SCHED_ENOMEM or SCHED_EINVAL. */
int kcache_rebuild_cluster(struct kcache *c, const struct config *cfg, struct sched_errbuf *eb);
/* Frees the kept placement state (snapshot.c). */
void kcache_base_free(struct kcache *c);

#endif
