/* sched/kube/mig.h: MIG devices published as DRA devices, and the ResourceClaims that take them.
 *
 * NVIDIA's DRA driver (static MIG) publishes each MIG device of a node as a device of its pool
 * beside the whole GPUs: attribute "type" "mig", "profile" (e.g. "1g.10gb"), "parentUUID"; its
 * DeviceClass mig.nvidia.com selects them (device.attributes['gpu.nvidia.com'].type == 'mig').
 * gangsched counts a node's MIG devices of one profile as the extended resource the device
 * plugin's mixed strategy names them by ("nvidia.com/mig-1g.10gb"), so that
 * placement, quota (quotaMapping weights included) and usage treat both alike, and allocates a
 * claim's MIG devices at binding.
 *
 * A MIG claim: a request whose DeviceClass (not the accelerator's own) selects MIG devices of the
 * accelerator's driver and no whole device. Each of its requests must be ExactCount of such
 * classes, `exactly` or firstAvailable (every subrequest of a MIG class: the first whose profile
 * has `count` free devices in the cluster when the build begins is taken, else the first with a
 * profile). It takes devices of one profile, among those its class's and own selectors accept
 * (over the cluster) the one with the most devices (the smallest, as a rule) among those with
 * enough free devices when the build begins, else among all, then the first by name (a request
 * for "any MIG device" is given the commonest profile while it has room, another once it has
 * not): the pod asks that many of the profile's resource. Anything else (All, constraints, a
 * class selecting whole GPUs and MIG devices, a claim mixing whole GPUs and MIG devices) waits
 * with a reason naming the claim.
 *
 * Owns: the MIG inventory (a dra_inv of the accelerator driver's type "mig" devices), the
 * profile resources, each claim's MIG view (kept per generation of slices and classes), the
 * devices allocated claims hold (kept from claim events) and the devices picked by allocation
 * writes in flight, so that two binds never pick one device.
 *
 * Must not touch: the network, the pods' map, the claim map (claims.c hands claims in).
 */
#ifndef SCHED_KUBE_MIG_H
#define SCHED_KUBE_MIG_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sched/core/model.h"
#include "sched/core/strmap.h"
#include "sched/kube/dra.h"

/* A MIG device's type and profile attributes, and the resource a profile counts as, are the
 * core's rule (sched/core/dra.h dra_mig_res), which the simulator's nodes share. */

struct kmig;

struct kmig *kmig_new(void);
void kmig_free(struct kmig *m);

/* ResourceSlice events: the MIG devices of the accelerator's DRA driver. 0 or SCHED_ENOMEM (a
 * malformed slice is logged by the GPU inventory, which reads the same slice). */
int kmig_slice_event(struct kmig *m, const cJSON *obj, bool deleted);
/* Whether any MIG device is known (the rest of this module has nothing to do otherwise). */
bool kmig_any(const struct kmig *m);

/* A build begins: requests accepting several profiles are given the one with the most free
 * devices now (kmig_claim), kept until the next build (so that binding picks what placement
 * counted). */
void kmig_build_begin(struct kmig *m);

/* dra_inv_apply_mig of the MIG inventory on c (before cluster_finalize). 0. */
int kmig_apply(const struct kmig *m, struct cluster *c);

/* Claim events: the devices allocated claims hold (old: the claim replaced or deleted, now: its
 * new version; either NULL). Also forgets the claim's view. */
void kmig_claim_changed(struct kmig *m, const char *key, const struct kclaim *old,
                        const struct kclaim *now);

/* How claims.c tells whether a DeviceClass selects some whole device of the accelerator. */
struct kmig_ctx {
    const struct strmap *classes; /* DeviceClass name -> struct kdra_class* */
    uint64_t classes_gen;         /* changes with every DeviceClass event */
    bool (*whole)(const void *ctx, struct kdra_class *k);
    const void *ctx;
};

/* What a MIG claim takes, per request: the profile's resource id and the alternative it is
 * given (0 for `exactly`; of firstAvailable, the subrequest's index). */
struct kmig_choice {
    int16_t res[KDRA_MAX_REQS];
    uint8_t alt[KDRA_MAX_REQS];
};

/* Claim x (key) as MIG: false when none of its requests' classes selects MIG devices. Else true,
 * with *ch its choice and *why NULL, or *why saying why it cannot be allocated ("resourceclaim
 * <key>: ...", valid until the claim, the slices or the classes change). */
bool kmig_claim(struct kmig *m, const struct kmig_ctx *cx, const char *key, const struct kclaim *x,
                const struct kmig_choice **ch, const char **why);

/* The profile resource id of allocated device (pool, device) on node, or -1 (not a MIG device
 * known there). */
int kmig_device_res(const struct kmig *m, const char *node, const char *pool, const char *device);

/* Whether the MIG devices of node suit MIG claim x whatever devices of their profiles are
 * picked: every device of each request's profile passes its class and selectors. */
bool kmig_node_ok(const struct kmig *m, const struct kmig_ctx *cx, const struct kclaim *x,
                  const struct kmig_choice *ch, const char *node);
/* Whether kmig_node_ok holds on every node (the claim's selectors name the profile only). */
bool kmig_every_node(struct kmig *m, const struct kmig_ctx *cx, const char *key,
                     const struct kclaim *x);

/* At binding: picks the devices of MIG claim x (key) on node, per request in order, of its
 * profile, passing its class and selectors (its chosen subrequest's), held by no other allocated
 * claim (its own earlier allocation's devices may be picked again) and picked by no write in
 * flight, in name order, into dev/drv/pool (n_max entries, *n set), the subrequests into
 * sub[KDRA_MAX_REQS] (may be NULL; for kdra_claim_allocation_subs), and marks them picked for
 * key until kmig_release(key). 1 picked, 0 not a MIG claim, -1 too few free devices (or out of
 * memory). */
int kmig_pick(struct kmig *m, const struct kmig_ctx *cx, const char *key, const struct kclaim *x,
              const char *node, const char **dev, const char **drv, const char **pool,
              uint32_t n_max, uint32_t *n, uint8_t *sub);
/* The write of claim key was answered (its answer, on success, is in the claim map already):
 * its picks are no longer in flight. */
void kmig_release(struct kmig *m, const char *key);

#endif
