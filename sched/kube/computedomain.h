/* sched/kube/computedomain.h: NVIDIA ComputeDomains (resource.nvidia.com/v1beta1, the
 * compute-domain.nvidia.com DRA driver): multi-node NVLink (GB200/GB300 NVL72) through IMEX
 * channel claims, as a scheduler sees them (docs/kubernetes.md, "ComputeDomains").
 *
 * What upstream publishes: per node a ResourceSlice of driver compute-domain.nvidia.com, pool =
 * the node's name, with the device "channel-0" (attributes type: channel, id: 0) and the device
 * "daemon"; the ComputeDomain controller makes a ResourceClaimTemplate (the CR's
 * spec.channel.resourceClaimTemplate.name) whose one request "channel" asks DeviceClass
 * compute-domain-default-channel.nvidia.com and whose opaque config for the driver carries
 * domainID = the ComputeDomain's uid. The NVLink clique is the node label nvidia.com/gpu.clique.
 *
 * Owns: the ComputeDomains seen (uid -> namespace/name), the IMEX channel devices of each node
 * (a second DRA inventory of sched/core/dra.h: the same pool and generation rule as GPUs), the
 * channel as a per-node resource ("compute-domain.nvidia.com/channel": a node's channel device
 * is allocated to one claim at a time, so the placement core keeps one channel pod per node per
 * device), and the gang rule: a gang with a channel claim is placed whole inside one clique, by
 * the core's required-topology machinery (the clique level becomes its required level).
 *
 * Must not touch: the network, the pods' map, the placement core (it only fills gang fields).
 */
#ifndef SCHED_KUBE_COMPUTEDOMAIN_H
#define SCHED_KUBE_COMPUTEDOMAIN_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sched/core/arena.h"
#include "sched/core/model.h"

#define KCD_DRIVER        "compute-domain.nvidia.com"
#define KCD_CHANNEL_CLASS "compute-domain-default-channel.nvidia.com"
#define KCD_DAEMON_CLASS  "compute-domain-daemon.nvidia.com"
#define KCD_RESOURCE      "compute-domain.nvidia.com/channel" /* gangsched's name, not upstream's */

struct kcd;
struct kclaims;
struct kpod;

struct kcd *kcd_new(void);
void kcd_free(struct kcd *cd);

/* ComputeDomain informer events (metadata.uid, namespace, name; spec.numNodes;
 * spec.channel.resourceClaimTemplate.name). A malformed object is logged and left out. 0 or
 * SCHED_ENOMEM. */
int kcd_event(struct kcd *cd, const cJSON *obj, bool deleted);
/* ResourceSlice events: slices of KCD_DRIVER feed the channel inventory (others are ignored).
 * 0 or SCHED_ENOMEM. */
int kcd_slice_event(struct kcd *cd, const cJSON *obj, bool deleted);

/* "namespace/name" of the ComputeDomain with this uid, or NULL when none is known. */
const char *kcd_name(const struct kcd *cd, const char *uid);
/* Whether the ComputeDomain with this uid lives in namespace ns (false when unknown). */
bool kcd_in_namespace(const struct kcd *cd, const char *uid, const char *ns);

/* The resource id of KCD_RESOURCE, interned on first use; -1 when the table is full. */
int kcd_res(void);
/* Sets alloc[KCD_RESOURCE] of every node of c (before cluster_finalize) to its channel devices;
 * nothing when no channel slice exists. 0, or -1 (resource table full: logged once). */
int kcd_apply(const struct kcd *cd, struct cluster *c);
/* The channel device a claim on `node` is given (the first of its complete newest pools), or
 * NULL; *driver and *pool (may be NULL) get its driver and pool. */
const char *kcd_channel(const struct kcd *cd, const char *node, const char **driver,
                        const char **pool);

/* Which ComputeDomain class a DeviceClass name is: 0 none, 1 the workload channel class, 2 the
 * daemon class (claimed by the driver's own DaemonSet pods, never by workloads). */
int kcd_class(const char *device_class);
/* The domainID of spec.devices.config[].opaque{driver: compute-domain.nvidia.com, parameters}
 * (borrowed from `devices`), or NULL. */
const char *kcd_config_domain(const cJSON *devices);

/* The ComputeDomain rule for a pending gang (sched/kube/cache_build.c, after its annotations): when
 * a member's claims hold an IMEX channel, the gang's required topology level becomes the clique
 * level (the level labelled nvidia.com/gpu.clique), unless it already asks a narrower one. 0, or
 * SCHED_EINVAL with *why (an arena string) when no level uses the clique label. */
int kcd_gang(const struct kclaims *c, const struct topo *t, struct kpod *const *members, uint32_t n,
             struct gang *g, struct arena *a, const char **why);

#endif
