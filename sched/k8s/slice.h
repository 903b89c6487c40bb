/* sched/k8s/slice.h: a resource.k8s.io/v1 ResourceSlice (JSON) into the DRA inventory of
 * sched/core/dra.h.
 *
 * Owns: which fields of a ResourceSlice are read (metadata.name, spec.driver, spec.nodeName,
 * spec.pool{name, generation, resourceSliceCount}, spec.devices[]{name, attributes, capacity})
 * and their checks. Used by the daemon's cache (informer events, sched/kube/claims.c) and by the
 * NodeList reader (sched/k8s/nodes.c: Lists holding Nodes and ResourceSlices), so that a slice
 * means the same in both drivers.
 *
 * Must not touch: the network, the caches of either driver. Errors name the slice and the field.
 */
#ifndef SCHED_K8S_SLICE_H
#define SCHED_K8S_SLICE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "sched/core/dra.h"
#include "sched/core/err.h"

/* Adds (or replaces) the slice in `inv`; its accelerator devices are those of the device's DRA
 * driver that are whole accelerators (device_dra_whole, sched/core/device.h: for NVIDIA's
 * gpu.nvidia.com attribute "type" absent or "gpu"). 0, SCHED_EINVAL (inv unchanged),
 * SCHED_ENOMEM. */
int k8s_slice_put(struct dra_inv *inv, const cJSON *slice, struct sched_errbuf *eb);
/* The same with the devices of `driver` whose attribute "type" is `type`: the IMEX channels of
 * compute-domain.nvidia.com (type "channel") use it. */
int k8s_slice_put_type(struct dra_inv *inv, const cJSON *slice, const char *driver,
                       const char *type, struct sched_errbuf *eb);
/* A ResourceSlice event for an inventory of such devices (k8s_slice_put_type): a slice deleted,
 * of another driver (a slice may change driver: never kept stale) or malformed (the GPU
 * inventory, which reads the same slice, logs why) leaves it; else it is put. 0 or
 * SCHED_ENOMEM. */
int k8s_slice_typed_event(struct dra_inv *inv, const cJSON *slice, bool deleted, const char *driver,
                          const char *type);

#endif
