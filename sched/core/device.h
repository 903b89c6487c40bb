/* sched/core/device.h: which resource is the accelerator.
 *
 * Owns: the process-wide choice of the device resource (nvidia.com/gpu by default; amd.com/gpu,
 * huawei.com/Ascend910, google.com/tpu, alibabacloud.com/gpu-count or any extended resource by
 * configuration) and the word its counts are shown in ("GPU", "NPU", "TPU"). The device takes
 * the resource slot RES_GPU (res.h), so that every per-index rule (device indices 0..31 per
 * node, NVLink-style islands from gangsched.io/gpu-islands, tensor-parallel groups, the
 * gangsched.io/gpu-ids hint), quota, fragmentation and metric applies to it unchanged.
 *
 * The device's DRA identity (device_dra): the driver whose ResourceSlice devices are the
 * accelerator, the DeviceClass its claims name, and which of the driver's devices are one whole
 * accelerator (its attribute "type", and a CEL selector). Built in for nvidia.com/gpu (NVIDIA's
 * driver gpu.nvidia.com: type "gpu" or none; MIG and VFIO devices are not whole GPUs) and for
 * amd.com/gpu (AMD's gpu.amd.com: type "amdgpu"; partitions and VFIO devices are not); any
 * other accelerator has DRA devices only as the config's device.dra says.
 *
 * Must not touch: the cluster or any scheduling state; it only names and checks.
 */
#ifndef SCHED_CORE_DEVICE_H
#define SCHED_CORE_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "sched/core/cel.h"
#include "sched/core/err.h"
#include "sched/core/model.h"

#define DEVICE_UNIT_MAX 16 /* bytes of a unit word, with its NUL */

/* How the accelerator is published with DRA (resource.k8s.io/v1) and claimed. */
struct device_dra {
    const char *driver;       /* spec.driver of its ResourceSlices; NULL: it has no DRA devices */
    const char *device_class; /* the DeviceClass its claims name (NULL: the driver's name) */
    const char *type;         /* a whole device's attribute "type" (unqualified, or qualified by
                                 the driver's domain); NULL: any device of the driver */
    bool untyped;             /* a device without the attribute is whole too */
    const char *select;       /* a CEL selector (cel.h subset) a whole device passes too, or NULL */
};

/* The built-in DRA identity of `resource` (driver NULL when there is none). */
struct device_dra device_dra_default(const char *resource);
/* The accelerator's DRA identity: the built-in of the configured resource (device_configure
 * resets it) unless device_set_dra replaced it. */
const struct device_dra *device_dra(void);
/* The accelerator's DeviceClass, NULL when it has no DRA devices. */
const char *device_dra_class(void);
/* Replaces it (strings copied; select compiled: SCHED_EINVAL with "column N: ..."). */
int device_set_dra(const struct device_dra *d, struct sched_errbuf *eb);
/* true when device d of the DRA driver (its attributes decoded, cel.h) is one whole
 * accelerator; type: its attribute "type" as read (NULL: absent). d NULL: the type rule alone
 * (a reader skips other devices before decoding them). A selector that fails to evaluate (a
 * missing attribute) excludes the device, as in Kubernetes. */
bool device_dra_whole(const struct cel_device *d, const char *type);

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
