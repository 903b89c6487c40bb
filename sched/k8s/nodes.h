/* sched/k8s/nodes.h: Kubernetes Nodes into the core's model, for both drivers.
 *
 * Owns: the one reader of the Node format: `kubectl get nodes -o yaml|json` output (a NodeList,
 * a List of Nodes and ResourceSlices, or a single Node) for the simulator's --nodes, and one Node
 * object from an API server (a list item or a watch event) for the daemon's cache, decoded once
 * into a record kept outside any cluster and copied into each cluster built from it. Which fields
 * are read (labels, annotations, spec.unschedulable, spec.taints, status.allocatable, capacity's
 * GPUs, the Ready condition) and how they are checked is written once, here.
 *
 * Must not touch: scheduling state, cluster_finalize() (callers finalize), either driver's
 * caches. sched/sim and sched/kube both include this module; it includes neither.
 */
#ifndef SCHED_K8S_NODES_H
#define SCHED_K8S_NODES_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "sched/core/arena.h"
#include "sched/core/err.h"
#include "sched/core/model.h"

/* Reads a NodeList (or a single Node, or a List of Nodes) in YAML or JSON. Nodes are added to
 * `c` (not finalized). Errors name file:line:column (YAML) or the node and the field. */
int nodes_load_file(struct cluster *c, const char *path, struct sched_errbuf *eb);
int nodes_load_buffer(struct cluster *c, const char *name, const char *data, size_t len,
                      struct sched_errbuf *eb);

/* One Node decoded from an API object, kept by the daemon's cache between cycles: `node` as
 * read (labels and annotations sorted; n_gpus, islands and domains are left to
 * cluster_finalize), every string and array in `mem`. */
struct nodes_rec {
    struct node node;
    const char *uid; /* metadata.uid, or NULL */
    struct arena mem;
};

/* Decodes one Node object with the same reader and checks as a NodeList file (the file-only
 * checks aside: more than 32 GPUs and bad islands are left to the model, which clamps them).
 * `source` names it in messages ("node gpu-7"). 0, SCHED_EINVAL, SCHED_ENOMEM. */
int nodes_decode(const cJSON *node, const char *source, struct nodes_rec **out,
                 struct sched_errbuf *eb);
void nodes_rec_free(struct nodes_rec *r);
/* Equal in everything the scheduler reads of a node (a heartbeat changes none of it; of the
 * annotations, only those it reads count). */
bool nodes_rec_same(const struct nodes_rec *a, const struct nodes_rec *b);
/* Two key-value lists (labels, annotations, a nodeSelector) equal entry by entry: sorted lists
 * are equal maps. */
bool nodes_kv_same(const struct kv *a, uint32_t na, const struct kv *b, uint32_t nb);
/* Appends a copy of r's node to `c` (strings in c's pool; not finalized). 0 or SCHED_ENOMEM. */
int nodes_rec_add(struct cluster *c, const struct nodes_rec *r);

#endif
