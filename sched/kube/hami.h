/* sched/kube/hami.h: HAMi's allocation annotations on the Bindings of the Kubernetes driver.
 *
 * Owns: the annotations HAMi's device plugin reads to learn which devices a pod was given
 * (hami.io/vgpu-devices-to-allocate and hami.io/vgpu-devices-allocated with the devices' UUIDs,
 * memory and cores; hami.io/vgpu-node, hami.io/vgpu-time, hami.io/bind-phase "allocating",
 * hami.io/bind-time), written in the pod's Binding next to gangsched.io/gpu-ids: the API server
 * copies a Binding's annotations onto the pod in the same write, so they land with the binding or
 * not at all, and a rolled-back gang takes them away with its pods. The format is
 * sched/core/hami.h's.
 *
 * Must not touch: placement (the device indices come from the core's GPU mask), the bind
 * journal, any other annotation.
 */
#ifndef SCHED_KUBE_HAMI_H
#define SCHED_KUBE_HAMI_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "sched/core/err.h"
#include "sched/core/model.h"

/* When node nd carries HAMi's register and the pod holds devices (mask, bit i = register position
 * i), adds HAMi's annotations to `ann` (the Binding's metadata.annotations): the pod's share of
 * each device from its request `req` (nvidia.com/gpumem MiB or gpumem-percentage, and gpucores
 * percent, per device, as HAMi reads a container's request), or each device whole (all its
 * memory, 100 cores) when it asks none of them or req is NULL, an entry per
 * container with ctr_devs[c] of the devices in index order (n_ctrs 0, or counts that do not add
 * up to the mask, as when init containers ask for devices: one entry with them all). now_s: Unix
 * seconds. Returns 0 (also when nothing applies), or SCHED_EINVAL /
 * SCHED_ENOMEM with the reason (the register changed under the cache, a device past it). */
int khami_annotate(cJSON *ann, const struct node *nd, uint32_t mask, const struct res_vec *req,
                   const uint8_t *ctr_devs, uint32_t n_ctrs, int64_t now_s,
                   struct sched_errbuf *eb);

#endif
