/* sched/core/hami.h: HAMi's wire format for shared GPUs.
 *
 * Owns: the names HAMi uses (resources, node and pod annotations) and pure conversions between
 * their strings and the share model of gpushare.h: the node register written by HAMi's device
 * plugin (hami.io/node-nvidia-register) read into per-device capacity, the allocation the
 * scheduler writes for the device plugin (hami.io/vgpu-devices-to-allocate, the same format in
 * hami.io/vgpu-devices-allocated) written from a choice of devices and read back into device
 * usage, the device filters a pod may set (nvidia.com/use-gpuuuid, nouse-gpuuuid, use-gputype,
 * nouse-gputype) and the policy annotations (hami.io/node-scheduler-policy,
 * hami.io/gpu-scheduler-policy). Where each format was checked is in docs/kubernetes.md.
 *
 * Must not touch: any I/O, the cluster model or scheduling state. Errors name the device (its
 * position in the list) and the field; input is never trusted.
 */
#ifndef SCHED_CORE_HAMI_H
#define SCHED_CORE_HAMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/core/err.h"
#include "sched/core/gpushare.h"

#define HAMI_RES_MEM     "nvidia.com/gpumem"            /* MiB per device */
#define HAMI_RES_MEM_PCT "nvidia.com/gpumem-percentage" /* percent of each device's memory */
#define HAMI_RES_CORES   "nvidia.com/gpucores"          /* percent of each device's cores */

#define HAMI_NODE_REGISTER "hami.io/node-nvidia-register"
#define HAMI_TO_ALLOCATE   "hami.io/vgpu-devices-to-allocate"
#define HAMI_ALLOCATED     "hami.io/vgpu-devices-allocated"
#define HAMI_VGPU_NODE     "hami.io/vgpu-node"
#define HAMI_VGPU_TIME     "hami.io/vgpu-time"
#define HAMI_BIND_PHASE    "hami.io/bind-phase" /* allocating, success, failed */
#define HAMI_BIND_TIME     "hami.io/bind-time"
#define HAMI_NODE_POLICY   "hami.io/node-scheduler-policy"
#define HAMI_GPU_POLICY    "hami.io/gpu-scheduler-policy"
#define HAMI_USE_UUID      "nvidia.com/use-gpuuuid"
#define HAMI_NOUSE_UUID    "nvidia.com/nouse-gpuuuid"
#define HAMI_USE_TYPE      "nvidia.com/use-gputype"
#define HAMI_NOUSE_TYPE    "nvidia.com/nouse-gputype"
#define HAMI_TYPE_NVIDIA   "NVIDIA" /* device type keyword in allocations */

#define HAMI_UUID_MAX 96 /* bytes of a device UUID, with its NUL */
#define HAMI_TYPE_MAX 96 /* bytes of a device type (model name), with its NUL */

/* One registered device: {uuid},{split count},{memory MiB},{cores},{type},{numa},{healthy}
 * [,{index},{mode}] (the nine-field form; the seven-field form has index 0 and mode
 * hami-core). */
struct hami_dev {
    char uuid[HAMI_UUID_MAX];
    char type[HAMI_TYPE_MAX];
    int32_t split;
    int64_t mem_mib;
    int32_t cores;
    int32_t numa;
    bool healthy;
    int32_t index; /* the device's index on the node */
    bool mig;      /* mode "mig": not shared by us (HAMi's MIG path) */
};

/* A node's register: devices in the order of their index (position = device index of the share
 * model, gpushare.h, and of gangsched.io/gpu-ids). */
struct hami_reg {
    uint8_t n;
    struct hami_dev dev[NODE_MAX_GPUS];
};

/* Parses a hami.io/node-nvidia-register value ("dev:dev:...:", the last ':' optional). Devices
 * are sorted by index; two devices with one index or one UUID, more than NODE_MAX_GPUS devices,
 * a bad number or a missing field are SCHED_EINVAL naming the device and field. */
int hami_parse_register(const char *s, struct hami_reg *out, struct sched_errbuf *eb);
/* The devices a node with this register offers for whole-device placement: its devices up to
 * the first unhealthy or MIG-mode one (device indices are register positions, so a device past a
 * sick one cannot be offered without offering the sick one). HAMi's plugin advertises
 * nvidia.com/gpu as devices x split count; this count replaces it. SCHED_EINVAL (message) when
 * the register cannot be read. */
int hami_node_devices(const char *reg, struct sched_errbuf *eb);
/* Fills n's capacity from the register (usage zero); MIG-mode devices count as unhealthy. */
void hami_reg_node(const struct hami_reg *r, struct gs_node *n);
/* Position of the device with this UUID, or -1. */
int hami_find(const struct hami_reg *r, const char *uuid, size_t len);

/* The devices a pod may use, from its annotations (each NULL when absent): use-gpuuuid and
 * nouse-gpuuuid are comma-separated UUIDs; use-gputype and nouse-gputype comma-separated words
 * matched case-insensitively inside the device type, as HAMi does. */
uint32_t hami_allowed(const struct hami_reg *r, const char *use_uuid, const char *nouse_uuid,
                      const char *use_type, const char *nouse_type);

/* Parses "binpack" or "spread" (HAMi's policy annotations and settings); SCHED_EINVAL otherwise. */
int hami_policy(const char *s, enum gs_policy *out, struct sched_errbuf *eb);

/* Writes the allocation of one pod in HAMi's format: for each of the pod's n_ctrs containers,
 * ctr_devs[c] of the devices in `mask` (ascending index, taken in container order) as
 * "{uuid},NVIDIA,{memory MiB},{cores}:" each, then ';'. The memory per device is gs_mem_need of
 * that device (a percentage is resolved per device). Whole or nothing: SCHED_EFULL when `cap` is
 * too small, SCHED_EINVAL when the counts do not add up to the devices of `mask`. */
int hami_format_alloc(const struct hami_reg *r, const struct gs_node *n, const struct gs_req *q,
                      uint32_t mask, const uint32_t *ctr_devs, uint32_t n_ctrs, char *buf,
                      size_t cap, struct sched_errbuf *eb);

/* Reads an allocation ("uuid,type,mem,cores:...;...") and applies it to n (sign 1) as the usage
 * of one running pod: each device entry adds its memory, cores and one task. *mask gets the
 * devices named. A UUID not in the register, a bad number or a missing field is SCHED_EINVAL
 * (nothing applied). */
int hami_apply_alloc(const struct hami_reg *r, struct gs_node *n, const char *s, uint32_t *mask,
                     struct sched_errbuf *eb);

#endif
