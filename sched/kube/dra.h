/* sched/kube/dra.h: resource.k8s.io/v1 objects as JSON (ResourceSlices today) into the DRA
 * inventory of sched/core/dra.h.
 *
 * Owns: which fields of a ResourceSlice are read (metadata.name, spec.driver, spec.nodeName,
 * spec.pool{name, generation, resourceSliceCount}, spec.devices[]{name, attributes.type}) and
 * their checks. Used by the daemon's cache (informer events) and by the simulator's --nodes
 * reader (Lists holding Nodes and ResourceSlices), so that a slice means the same in both.
 *
 * Must not touch: the cache, the network. Errors name the slice and the field.
 */
#ifndef SCHED_KUBE_DRA_H
#define SCHED_KUBE_DRA_H

#include <cjson/cJSON.h>

#include "sched/core/dra.h"
#include "sched/core/err.h"

/* Adds (or replaces) the slice in `inv`; GPU devices are those of `gpu_driver` (NULL:
 * DRA_GPU_DRIVER) whose attribute "type" is absent or "gpu". 0, SCHED_EINVAL (inv unchanged),
 * SCHED_ENOMEM. */
int kdra_slice_put(struct dra_inv *inv, const cJSON *slice, const char *gpu_driver,
                   struct sched_errbuf *eb);

#endif
