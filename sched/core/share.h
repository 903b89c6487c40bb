/* sched/core/share.h: placement of pods that share GPUs (fractions of one device, or whole
 * devices), one pod at a time, with per-GPU accounting.
 *
 * Owns: the state of a cluster of shared-GPU nodes (free cpu, memory and, per GPU index, free
 * GPU thousandths), the placement of one pod onto a node and specific GPU indices, and the
 * policies that choose among feasible nodes: best fit (the node and GPU left with the least free
 * capacity) and FGD (the placement that least increases the expected fragmentation of the
 * cluster for the distribution of recent requests; plugins/score_fgd.c), and spread (the
 * emptiest node and GPU, HAMi's spread policies). A pod asking for a
 * fraction (gpu_milli < 1000) uses one GPU; a pod asking for n whole GPUs uses n GPUs that are
 * entirely free: shares never span devices.
 *
 * Units: cpu in millicores, memory in MiB, GPU in thousandths of one device (milli).
 * Must not touch: the gang scheduler's model (model.h) or any driver; the caller owns inputs.
 */
#ifndef SCHED_CORE_SHARE_H
#define SCHED_CORE_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/err.h"
#include "sched/core/model.h"

#define SHARE_MILLI      1000 /* one whole GPU */
#define SHARE_MAX_MODELS 32   /* distinct GPU models; a pod's allowed models fit a mask */

struct share_node {
    int64_t cpu, mem;                /* allocatable */
    int64_t cpu_free, mem_free;      /* what is left */
    uint8_t n_gpus;                  /* <= NODE_MAX_GPUS */
    uint8_t model;                   /* index into the caller's model names */
    int16_t gpu_free[NODE_MAX_GPUS]; /* milli left per GPU index */
    uint32_t version;                /* bumped at every placement (memo key) */
};

struct share_pod {
    int64_t cpu, mem;
    uint8_t num_gpu;   /* 0..NODE_MAX_GPUS */
    int16_t gpu_milli; /* per GPU: < 1000 only when num_gpu == 1 */
    uint32_t models;   /* allowed GPU models as a mask; 0 = any */
    uint32_t type;     /* index into the typical-pod table (equal requests, equal type) */
};

/* One kind of request and how often it arrives (FGD's "typical pods"). */
struct share_type {
    struct share_pod req;
    double freq; /* share of arrivals, sum 1 */
};

/* HAMi's node-scheduler-policy and gpu-scheduler-policy: binpack is best fit (the fullest node,
 * then the fullest GPU that fits), spread the emptiest node, then the emptiest GPU.
 * FGD: the least growth of fragmentation, exact, plus a soft preference for the earlier node
 * (SHARE_FGD_ORDER in share.c).
 * The _PLAIN policies are FGD's simulator's score plugins as published, to compare on the same
 * arrivals: FGD_PLAIN scores a node int(100 x sigmoid(-growth / 1000)), BESTFIT_PLAIN
 * int(100 x (1 - free cpu and GPU left, each over the largest node's, halved and summed)); both
 * choose among the nodes of the highest integer score the one of the lowest `rank` (the
 * scheduler of FGD's experiments: a Kubernetes scheduler whose selectHost takes, of the nodes of
 * the highest score, the first by name, and the names begin with a seeded random permutation of
 * the nodes: `rank`); FGD_PLAIN's GPU is the first of the highest score on the node. */
enum share_policy {
    SHARE_BESTFIT = 0,
    SHARE_FGD,
    SHARE_SPREAD,
    SHARE_FGD_PLAIN,
    SHARE_BESTFIT_PLAIN
};

struct share_cluster {
    struct share_node *nodes;
    uint32_t n_nodes;
    const struct share_type *types; /* [n_types]: the typical requests of FGD's measure */
    uint32_t n_types;
    uint32_t n_classes;   /* pods whose `type` is below it have their FGD scores memoised */
    const uint32_t *rank; /* [n_nodes] or NULL: among equal scores the lower rank wins, else
                           * the lower index */
    int64_t max_cpu, max_gpu_milli; /* the largest node's (share_init), for BESTFIT_PLAIN */
    int64_t gpu_milli_total;        /* sum over nodes of n_gpus * 1000 */
    int64_t gpu_milli_used;
    /* FGD memo: [n_nodes][n_classes + 1] of the best placement of a request class on a node at
     * a version; the last column is the node's own fragmentation */
    struct share_memo *memo;
};

/* Where a pod went: node index and the GPUs it holds (bit i = GPU i). */
struct share_choice {
    int32_t node; /* -1: no node fits */
    uint32_t gpus;
};

/* Prepares the FGD memo for pods of `n_classes` classes (their `type`; requests of one class are
 * equal), with the typical requests `types` for the measure (NULL and 0 for the other
 * policies). 0 or SCHED_ENOMEM. */
int share_init(struct share_cluster *c, const struct share_type *types, uint32_t n_types,
               uint32_t n_classes, struct sched_errbuf *eb);
void share_fini(struct share_cluster *c);

/* Can node n host pod p at all (cpu, memory, model, GPUs)? */
bool share_fits(const struct share_node *n, const struct share_pod *p);
/* Chooses a node and GPUs for p under `pol`; does not change the state. */
struct share_choice share_choose(struct share_cluster *c, const struct share_pod *p,
                                 enum share_policy pol);
/* Applies a choice: takes cpu, memory and GPU milli. */
void share_commit(struct share_cluster *c, const struct share_pod *p, struct share_choice ch);

/* FGD (plugins/score_fgd.c): the expected GPU milli of node n that the typical pods could not
 * use, sum over types of freq x (all free GPU milli when the type asks for no GPU or its cpu,
 * model or GPUs do not fit the node, else the free milli of GPUs too small for it); memory is
 * not part of it, as in FGD's simulator. */
double fgd_node_frag(const struct share_node *n, const struct share_type *types, uint32_t n_types);

#endif
