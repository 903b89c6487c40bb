/* sched/kube/claims.h: the daemon's DRA state: the devices ResourceSlices publish (the
 * inventory of sched/core/dra.h) and the ResourceClaims of pods, and what a cycle needs of them.
 *
 * Owns: the claim map, the DeviceClasses and the inventory, fed by informer events; a pod's GPU
 * demand from its
 * claims (none from an allocated claim it adopts) and what keeps it waiting; the adoptions our
 * binds wrote; the node filter of claims with CEL selectors or constraints;
 * the GPUs another scheduler's pods hold through their claims, and the devices of every allocated
 * claim no counted pod holds. Used by sched/kube/cache_build.c and snapshot.c.
 *
 * Must not touch: the network, the store, the pods' map (pods are handed in).
 */
#ifndef SCHED_KUBE_CLAIMS_H
#define SCHED_KUBE_CLAIMS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config/model.h"
#include "sched/core/arena.h"
#include "sched/core/dra.h"
#include "sched/core/model.h"
#include "sched/kube/dra.h"
#include "sched/kube/objects.h"

struct kclaims;

struct kclaims *kclaims_new(void);
void kclaims_free(struct kclaims *c);
struct dra_inv *kclaims_inv(const struct kclaims *c);
struct kcd *kclaims_cd(const struct kclaims *c); /* ComputeDomains (computedomain.h) */

/* Reads the config's quotaMapping: when it counts the GPU DeviceClass (gpu.nvidia.com), a pod's
 * claimed devices also go to that class's slot (DRA_CLASS_RES_PREFIX + class) and DRA nodes
 * hold as many of it as GPUs; else the slot is unused. Call before each cluster rebuild. */
void kclaims_configure(struct kclaims *c, const struct config *cfg);

/* Shared claims (a ResourceClaim named by several pods): each build notes every pod's claims
 * first (reset, then note each pod not being deleted). A claim not allocated yet is allocated
 * by gangsched for the pods of one gang of ours, the claim being their only GPUs: its devices
 * count on its first consumer by key only, the others ask none for it and the gang must sit on
 * one node (kclaims_shared); anything else waits with a reason starting "resourceclaim ". A
 * claim allocated already (by anyone) is adopted (kclaims_demand). */
void kclaims_consumers_reset(struct kclaims *c);
int kclaims_note_pod(struct kclaims *c, const struct kpod *p); /* 0 or SCHED_ENOMEM */
bool kclaims_shared(const struct kclaims *c, const struct kpod *p);
/* Our write reserves allocated claim `key` for pod `uid` as an adoption (the bind, before it is
 * sent): while the claim lists the pod and the pod is not bound, it stays an adoption (the
 * pod asks none of its devices, a rollback never deallocates it), not an earlier attempt's
 * allocation to write again. In memory: a new process takes a claim reserved for a pending pod
 * of ours alone as an earlier attempt's. 0 or SCHED_ENOMEM. */
int kclaims_adopted(struct kclaims *c, const char *key, const char *uid);

/* MIG devices (sched/kube/mig.h). At binding: kmig_pick for claim key on node (1 picked, 0 not
 * a MIG claim or unknown, -1 too few free devices; sub[KDRA_MAX_REQS] the subrequests), and
 * kmig_release once its write is answered. */
struct kmig *kclaims_mig(const struct kclaims *c);
int kclaims_mig_pick(const struct kclaims *c, const char *key, const char *node, const char **dev,
                     const char **drv, const char **pool, uint32_t n_max, uint32_t *n,
                     uint8_t *sub);
void kclaims_mig_release(const struct kclaims *c, const char *key);

/* Informer events; a malformed object is logged and left out. 0 or SCHED_ENOMEM. */
int kclaims_slice_event(struct kclaims *c, const cJSON *obj, bool deleted);
int kclaims_claim_event(struct kclaims *c, const cJSON *obj, bool deleted);
/* DeviceClasses (resource.k8s.io/v1): a claim's request of a class other than the
 * accelerator's takes the accelerator's whole devices its selectors accept (dra.h). */
int kclaims_class_event(struct kclaims *c, const cJSON *obj, bool deleted);
const struct kclaim *kclaims_get(const struct kclaims *c, const char *key);
/* KEP-5004 (dra.h): the claim a scheduler made for the container GPUs of pod `uid` (its
 * controller owner), or NULL. */
const struct kclaim *kclaims_ext_of(const struct kclaims *c, const char *uid);
/* The DeviceClass that maps the accelerator's extended resource (kdra_ext_class) when it can
 * serve the container GPUs of pending pod p of ours: its selectors compile and accept some whole
 * device, and the containers' counts of that resource make all the pod's GPUs (not another
 * accelerator kind). NULL: p's container GPUs stay off DRA nodes. */
const struct kdra_class *kclaims_ext_class(const struct kclaims *c, const struct kpod *p);
/* Why pending pod p of ours, asking GPUs in its containers, can start nowhere: every GPU of the
 * cluster is a ResourceSlice device and no DeviceClass maps the resource (an arena string
 * starting "no DeviceClass maps "); NULL otherwise. */
const char *kclaims_ext_why(const struct kclaims *c, const struct cluster *cl, const struct kpod *p,
                            struct arena *a);
/* What the daemon adds to the core's reason for pending pod p of ours asking GPUs in its
 * containers when some GPU nodes are not DRA-only: how many nodes whose GPUs are ResourceSlice
 * devices it is kept off because no DeviceClass maps the resource (kube-scheduler would not use
 * them either), or NULL. */
const char *kclaims_ext_hint(const struct kclaims *c, const struct cluster *cl,
                             const struct kpod *p, struct arena *a);

/* Sets p->req's GPUs to its containers' plus its known claims'; returns what keeps the pod from
 * being placed (a claim missing, being deleted, allocated to another consumer, or not
 * allocatable by gangsched: then the text starts "resourceclaim "), as an arena string, or
 * NULL. A claim with allocationMode All asks every GPU of a node: as many as the largest node
 * has (nodes of that size only, kclaims_node_filter), and must hold the pod's only GPUs. A
 * ComputeDomain channel claim asks one KCD_RESOURCE of the node; its ComputeDomain must be known
 * and in the claim's namespace (the driver refuses to prepare it otherwise).
 * Adoption (kube-scheduler's DynamicResources for a claim with status.allocation: Filter keeps
 * the nodes its nodeSelector matches, PreBind adds the pod to status.reservedFor): a pending
 * pod naming a claim that is allocated already, unless only pending pods of its own gang are
 * reserved in it (an earlier attempt's allocation, written again), asks none of its devices,
 * channels or quota (they stay in use where they are: kclaims_held_use, or the pod holding
 * them), goes only to the allocation's node (kclaims_node_filter) and sets the claim's bit in
 * p->claims_adopt (its bind appends it to reservedFor). Refused: a claim being deleted, one
 * listing KDRA_MAX_CONSUMERS pods already, one whose node cannot be told. */
const char *kclaims_demand(const struct kclaims *c, const struct cluster *cl, struct kpod *p,
                           struct arena *a);

/* A pending pod whose claims have CEL selectors or constraints goes only to nodes that suit
 * them whatever GPUs are picked there (kdra_claim_node_ok), and a pod adopting allocated claims
 * (p->claims_adopt) only to their node (none when they are on different nodes; their selectors
 * are not read: the devices are chosen), and a pod whose containers ask GPUs as an extended
 * resource to a node whose GPUs are ResourceSlice devices (node.dra_gpus) only when a
 * DeviceClass maps that resource (kclaims_ext_class) and its selectors accept every GPU device
 * of the node (its bind then writes KEP-5004's claim; without it the kubelet would not hand
 * the pod those devices): a matchFields requirement (metadata.name In [...]) ANDed into each of
 * ps's required node affinity terms. 0 or SCHED_ENOMEM. */
int kclaims_node_filter(const struct kclaims *c, const struct cluster *cl, const struct kpod *p,
                        struct arena *a, struct podset *ps);

/* The GPU indices of node that the pod's claims hold (status.allocation, written by whoever
 * allocated them), of the claims the pod holds (a claim several pods use counts on one of them:
 * the first by key, a bound pod of ours whose gangsched.io/gpu-ids hold its devices, never
 * a pod that adopted it), and of its KEP-5004 claim (p->ext_claim); false when they do not account
 * for all its GPUs. */
bool kclaims_mask(const struct kclaims *c, const struct kpod *p, const char *node, uint32_t *mask);
/* For claim x with firstAvailable requests: the subrequest each takes on node, whose GPU devices
 * the node filter judged whole (kdra_claim_subs), into sub[KDRA_MAX_REQS]; false when one has
 * none there. */
bool kclaims_subs(const struct kclaims *c, const struct kclaim *x, const char *node, uint8_t *sub);

/* Every allocated claim's devices are in use on its node, whoever reserves it (nobody, pods not
 * seen yet, pods of another scheduler) and while it is being deleted, until its allocation is
 * gone, as kube-scheduler's DynamicResources plugin counts them (every device named in any
 * claim's status.allocation is allocated: allocateddevices.go, foreachAllocatedDevice and the
 * allocatedDevices set fed by the claim informer; the DRA manager's ListAllAllocatedDevices).
 * Exactly once: each build, after kclaims_note_pod, kclaims_note_counted notes every pod counted
 * on a node (bound or assumed); the claims it holds (kclaims_mask: not a shared claim another
 * pod holds, nor an adopted one) count through it. kclaims_held_use then adds each other
 * allocated claim's devices on the allocation's node (node_ix(ctx, name): its index, or -1)
 * to state[].gpu_used, and their number to used GPUs (and to the GPU class's quota slot when it
 * is counted): except a claim reserved for the one pending pod of ours that names it alone (an
 * earlier attempt's), whose demand asks its GPUs. */
typedef int kclaims_node_ix_fn(const void *ctx, const char *node);
void kclaims_note_counted(struct kclaims *c, const struct kpod *p); /* and p->ext_claim */
void kclaims_held_use(const struct kclaims *c, kclaims_node_ix_fn *node_ix, const void *ctx,
                      struct node_state *state);

#endif
