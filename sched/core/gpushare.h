/* sched/core/gpushare.h: GPU shares in HAMi's model: per-device memory, core and task
 * accounting, and the placement of a gang of share pods onto specific device indices.
 *
 * Owns: the rule that decides whether one device can take one share (HAMi's per-device filter:
 * task count below the device's split count, enough free memory, enough free cores, a request of
 * all cores only on an unused device, no zero-core share on a device whose cores are all taken),
 * the per-device and per-node scores of HAMi's gpu-scheduler-policy and node-scheduler-policy
 * (binpack: the fullest after placement wins; spread: the emptiest), the choice of N distinct
 * devices of one node for a pod (a pod's shares never span devices: each of its N devices holds
 * one whole share), and whole-gang placement with undo (every pod placed or none).
 *
 * Units: device memory in MiB (HAMi's nvidia.com/gpumem), cores in percent of one device
 * (nvidia.com/gpucores; a device's total is 100 unless its register says otherwise, 0 = the
 * device does not meter cores), tasks in pods per device. Device indices 0..NODE_MAX_GPUS-1,
 * device sets as bitmasks (bit i = device i), as in model.h.
 *
 * Must not touch: the cluster model, the cycle's placement state or any driver. Callers own every
 * array passed in; nothing here allocates.
 */
#ifndef SCHED_CORE_GPUSHARE_H
#define SCHED_CORE_GPUSHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/model.h"

#define GS_CORES_FULL  100 /* HAMi: a request of 100 cores wants the device to itself */
#define GS_ALL_DEVICES UINT32_MAX

/* One physical device: capacity from the node's register, usage from the pods bound to it. */
struct gs_dev {
    int64_t mem_total;   /* MiB */
    int32_t cores_total; /* percent; 0 = cores not metered */
    int32_t split;       /* pods the device may hold at once; <= 0 = no limit */
    bool healthy;
    int64_t mem_used;   /* MiB */
    int32_t cores_used; /* percent */
    int32_t tasks;      /* pods holding a share of the device */
};

struct gs_node {
    uint8_t n_devs; /* <= NODE_MAX_GPUS */
    struct gs_dev dev[NODE_MAX_GPUS];
};

/* One pod's device request (HAMi's per-container request summed over the pod's containers):
 * `devs` distinct devices (nvidia.com/gpu), each with mem_mib of memory (nvidia.com/gpumem) or,
 * when mem_mib is 0, mem_pct percent of that device's memory (nvidia.com/gpumem-percentage;
 * 0 = 100, HAMi's default memory of 0 meaning the whole device), and cores percent
 * (nvidia.com/gpucores, 0..100). `allowed`: the devices the pod may use (use-/nouse-gpuuuid,
 * use-/nouse-gputype; GS_ALL_DEVICES = any). */
struct gs_req {
    uint32_t devs;
    int64_t mem_mib;
    int32_t mem_pct;
    int32_t cores;
    uint32_t allowed;
};

/* HAMi's node-scheduler-policy and gpu-scheduler-policy values. HAMi's defaults are binpack for
 * nodes and spread for devices. */
enum gs_policy { GS_BINPACK = 0, GS_SPREAD = 1 };

/* Memory (MiB) the request takes on device d. */
int64_t gs_mem_need(const struct gs_dev *d, const struct gs_req *r);
/* Can device d take one share of r? (HAMi's per-device filter, see above.) */
bool gs_dev_fits(const struct gs_dev *d, const struct gs_req *r);
/* Adds (sign 1) or removes (sign -1) one share of r on device d. */
void gs_dev_take(struct gs_dev *d, const struct gs_req *r, int sign);
/* HAMi's device score after placing r: cores used share + memory used share (each 0..1, a term
 * whose total is 0 counts 0). Binpack prefers the highest, spread the lowest. */
double gs_dev_score(const struct gs_dev *d, const struct gs_req *r);
/* HAMi's node score after placing r: tasks over split counts + cores used share + memory used
 * share, over the node's healthy devices. */
double gs_node_score(const struct gs_node *n, const struct gs_req *r);

/* r->devs distinct devices of n that can each take a share of r, chosen by `gpu_pol` (ties to the
 * lower index); 0 when the node cannot hold the pod (or r->devs is 0 or above the node's devices).
 */
uint32_t gs_pick(const struct gs_node *n, const struct gs_req *r, enum gs_policy gpu_pol);
/* Applies (sign 1) or removes (sign -1) r on the devices of `mask`. */
void gs_take(struct gs_node *n, const struct gs_req *r, uint32_t mask, int sign);

/* Where one pod of a gang went: node index, devices (bit i = device i). node -1: not placed. */
struct gs_assign {
    int32_t node;
    uint32_t mask;
};

/* The devices of node i pod p may use (bit i = device i), 0 when the pod may not go there at all
 * (selectors, taints, cpu and memory, devices held whole by other pods). NULL = every device of
 * every node. */
typedef uint32_t (*gs_eligible_fn)(void *ctx, uint32_t pod, uint32_t node);

/* Places every pod of a gang or none: pods in order, each on the node `node_pol` prefers among
 * those where gs_pick finds devices (ties to the lower index), its devices chosen by `gpu_pol`,
 * the usage applied to `nodes` before the next pod is placed. On success writes n_pods entries to
 * `out` and returns true with the usage applied; on failure every change is undone, the entry of
 * the first pod that found no node holds node -1, and it returns false. */
bool gs_place_gang(struct gs_node *nodes, uint32_t n_nodes, const struct gs_req *pods,
                   uint32_t n_pods, gs_eligible_fn eligible, void *ctx, enum gs_policy node_pol,
                   enum gs_policy gpu_pol, struct gs_assign *out);

#endif
