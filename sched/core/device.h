/* sched/core/device.h: which resource is the accelerator.
 *
 * Owns: the process-wide choice of the device resource (nvidia.com/gpu by default; amd.com/gpu,
 * huawei.com/Ascend910, google.com/tpu, alibabacloud.com/gpu-count or any extended resource by
 * configuration) and the word its counts are shown in ("GPU", "NPU", "TPU"). The device takes
 * the resource slot RES_GPU (res.h), so that every per-index rule (device indices 0..31 per
 * node, NVLink-style islands from gangsched.io/gpu-islands, tensor-parallel groups, the
 * gangsched.io/gpu-ids hint), quota, fragmentation and metric applies to it unchanged.
 *
 * Must not touch: the cluster or any scheduling state; it only names and checks.
 */
#ifndef SCHED_CORE_DEVICE_H
#define SCHED_CORE_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "sched/core/err.h"
#include "sched/core/model.h"

#define DEVICE_UNIT_MAX 16 /* bytes of a unit word, with its NUL */

/* Makes `resource` the accelerator (res_set_device()) and `unit` its word; unit NULL or "" =
 * the usual word for a well-known resource ("NPU" for huawei.com/Ascend*, "TPU" for
 * google.com/tpu), else "GPU". Errors as res_set_device(), or a unit that is not 1..15 letters. */
int device_configure(const char *resource, const char *unit, struct sched_errbuf *eb);
const char *device_resource(void); /* res_name(RES_GPU) */
const char *device_unit(void);     /* "GPU" unless configured */
/* The usual unit word of a resource name ("GPU" when unknown). */
const char *device_default_unit(const char *resource);
/* The other accelerator kinds (res_set_kinds()) and their unit words (NULL or "" = the usual). */
int device_set_kinds(const char *const *names, const char *const *units, int n,
                     struct sched_errbuf *eb);
/* Unit word of kind k (0 = the device's), "GPU" out of range. */
const char *device_kind_unit(int k);
/* Every accelerator counted in the slot: "nvidia.com/gpu" or "nvidia.com/gpu, amd.com/gpu". */
const char *device_resources(void);
/* true when `resource` is the default (nvidia.com/gpu) and the only kind: outputs that existed
 * before devices were configurable then stay exactly as they were. */
bool device_is_default(void);

/* When `c` has nodes but none with the device, writes a warning naming the device and the
 * extended resources the nodes do have (those a device could be: not cpu, memory, pods,
 * ephemeral-storage, hugepages-*), and returns true. */
bool device_missing(const struct cluster *c, char *buf, size_t cap);

#endif
