/* sched/sim/nodes.h: simulated clusters: Kubernetes NodeLists and generator shorthands.
 *
 * Owns: the "hgx:32,nvl72:2,pcie:4" generator (nodegen.c). NodeList files are read by
 * sched/k8s/nodes.h (the Node reader both drivers share), included here for the simulator's
 * callers. Must not touch: scheduling state.
 */
#ifndef SCHED_SIM_NODES_H
#define SCHED_SIM_NODES_H

#include <stddef.h>

#include "sched/core/err.h"
#include "sched/core/model.h"
#include "sched/k8s/nodes.h"

/* Generator shorthand, comma-separated parts:
 *   hgx:N    N nodes x 8 GPUs, one NVSwitch island, 8 nodes per rack, 4 racks per block
 *   nvl72:N  N racks x 18 nodes x 4 GPUs, one NVLink clique (nvidia.com/gpu.clique) per rack
 *   pcie:N   N nodes x 8 GPUs in two NVLink islands of 4 ("0-3,4-7"), 8 nodes per rack
 * Nodes are labelled as in a real cluster (hostname, zone, block, rack, gpu.product, gpu.count,
 * gpu.memory, clique) with cpu, memory, pods and nvidia.com/gpu allocatable. Not finalized. */
int nodes_generate(struct cluster *c, const char *spec, struct sched_errbuf *eb);

#endif
