/* sched/sim/nodes.h: simulated clusters: Kubernetes NodeLists and generator shorthands.
 *
 * Owns: turning `kubectl get nodes -o yaml|json` output, or a shorthand such as
 * "hgx:32,nvl72:2,pcie:4", into a finalized `struct cluster`.
 * Must not touch: scheduling state.
 */
#ifndef SCHED_SIM_NODES_H
#define SCHED_SIM_NODES_H

#include <stddef.h>

#include "sched/core/err.h"
#include "sched/core/model.h"

/* Reads a NodeList (or a single Node, or a List of Nodes) in YAML or JSON. Nodes are added to
 * `c` (not finalized). Errors name file:line:column (YAML) or the node and the field. */
int nodes_load_file(struct cluster *c, const char *path, struct sched_errbuf *eb);
int nodes_load_buffer(struct cluster *c, const char *name, const char *data, size_t len,
                      struct sched_errbuf *eb);

/* Adds one Node object already decoded from JSON (an API server's list item or watch event):
 * the same reader and checks as a NodeList file. `source` names it in messages ("node
 * gpu-7"). Used by the Kubernetes driver, so that a node means the same in both drivers. */
struct cJSON;
int nodes_add_object(struct cluster *c, const struct cJSON *node, const char *source,
                     struct sched_errbuf *eb);

/* Generator shorthand, comma-separated parts:
 *   hgx:N    N nodes x 8 GPUs, one NVSwitch island, 8 nodes per rack, 4 racks per block
 *   nvl72:N  N racks x 18 nodes x 4 GPUs, one NVLink clique (nvidia.com/gpu.clique) per rack
 *   pcie:N   N nodes x 8 GPUs in two NVLink islands of 4 ("0-3,4-7"), 8 nodes per rack
 * Nodes are labelled as in a real cluster (hostname, zone, block, rack, gpu.product, gpu.count,
 * gpu.memory, clique) with cpu, memory, pods and nvidia.com/gpu allocatable. Not finalized. */
int nodes_generate(struct cluster *c, const char *spec, struct sched_errbuf *eb);

#endif
