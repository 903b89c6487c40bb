/* sched/core/dra.h: a cluster's GPUs published as DRA ResourceSlice devices (resource.k8s.io/v1).
 *
 * Owns: the inventory rule both drivers use: a node's GPUs are its allocatable nvidia.com/gpu
 * when it has any (the device plugin), else the GPU devices of the ResourceSlices naming it in
 * spec.nodeName (NVIDIA's DRA driver). Of each pool (driver, pool name) only the slices of the
 * newest spec.pool.generation count, and only once all spec.pool.resourceSliceCount slices of
 * that generation are seen (kube-scheduler's rule: an incomplete pool is not allocated from).
 * A GPU device is a whole accelerator of the device's DRA driver (sched/core/device.h
 * device_dra: NVIDIA's gpu.nvidia.com with attribute "type" absent or "gpu", MIG and VFIO
 * devices of the same driver being no whole GPUs; AMD's gpu.amd.com with "amdgpu"; or as the
 * config says); the readers apply the rule (sched/k8s/slice.c). Device names are
 * kept per node, sorted, so that GPU index i of a node is its i-th device name.
 * NVLink partitions: when every GPU device of a node carries an int attribute partition<N> (the
 * id of the Fabric Manager partition of N GPUs holding it, as NVIDIA's driver names them), the
 * largest such N below the node's GPU count splits the node into NVLink islands, one per id
 * (written as the node's gangsched.io/gpu-islands annotation unless it has one), so the islands
 * rule of cluster_finalize, tensor-parallel groups included, applies unchanged.
 *
 * Must not touch: JSON or YAML (the readers in sched/k8s/nodes.c and sched/k8s/slice.c decode
 * slices into dra_slice records), scheduling state. Pure data structure.
 */
#ifndef SCHED_CORE_DRA_H
#define SCHED_CORE_DRA_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/cel.h"
#include "sched/core/model.h"

/* The resource slot where the drivers count the devices of DeviceClass C that a pod claims,
 * named PREFIX + C (Kubernetes' own name for a class's implicit extended resource), when the
 * config's quotaMapping names the class (config_qmap); otherwise claims count only as the
 * accelerator. */
#define DRA_CLASS_RES_PREFIX "deviceclass.resource.kubernetes.io/"

/* One ResourceSlice as the inventory needs it (strings borrowed for the call). */
struct dra_slice {
    const char *name;              /* metadata.name: the slice's identity */
    const char *node;              /* spec.nodeName, or NULL (not node-local: not counted) */
    const char *driver;            /* spec.driver */
    const char *pool;              /* spec.pool.name */
    int64_t generation;            /* spec.pool.generation */
    uint32_t slice_count;          /* spec.pool.resourceSliceCount (0 read as 1) */
    const char *const *gpus;       /* names of its GPU devices (the filter above applied) */
    const struct cel_device *info; /* [n_gpus] their attributes and capacities, or NULL */
    uint32_t n_gpus;
};

struct dra_inv;

struct dra_inv *dra_inv_new(void);
void dra_inv_free(struct dra_inv *inv);
/* Adds or replaces (same name) a slice. SCHED_ENOMEM or 0. */
int dra_inv_put(struct dra_inv *inv, const struct dra_slice *s);
void dra_inv_remove(struct dra_inv *inv, const char *name);
uint32_t dra_inv_n_slices(const struct dra_inv *inv);

/* The resource slot (res.h id, or -1: none, the default) that dra_inv_apply fills with the same
 * count as the accelerator: DRA_CLASS_RES_PREFIX + the GPU DeviceClass when the config's
 * quotaMapping counts that class (a pod's claimed devices go there too, so only DRA nodes hold
 * them). */
void dra_inv_set_class_res(struct dra_inv *inv, int res);

/* Sets alloc nvidia.com/gpu of every node of `c` (before cluster_finalize) that has none to the
 * GPU devices its complete newest pools publish (at most NODE_MAX_GPUS), marking it dra_gpus;
 * returns how many nodes got GPUs this way (also c->n_dra_nodes; their GPUs c->n_dra_gpus), or
 * -1 out of memory. */
int dra_inv_apply(const struct dra_inv *inv, struct cluster *c);

/* MIG devices (NVIDIA's static MIG: sched/kube/mig.h): the devices of the accelerator's DRA
 * driver whose attribute "type" is DRA_MIG_TYPE, kept in an inventory of their own. A node's MIG
 * devices of one profile (attribute DRA_MIG_PROFILE, e.g. "1g.10gb") count as the extended
 * resource "<the accelerator resource's domain>/mig-<profile>" (the device plugin's mixed
 * strategy names them so), in both drivers. */
#define DRA_MIG_TYPE    "mig"
#define DRA_MIG_PROFILE "profile"
/* The profile resource of MIG device d (interned at first sight), or -1: no profile attribute,
 * or one that makes no resource name (logged once). */
int dra_mig_res(const struct cel_device *d);
/* Whether some profile was not counted: its name is no resource name, or the resource table
 * (RES_MAX names) is full; the drivers say so once. */
bool dra_mig_uncounted(void);
/* Whether resource r is a MIG profile's, as dra_mig_res has given it. */
bool dra_res_mig(int r);
/* Sets alloc of each profile's resource of every node of c to its MIG devices of that profile
 * in complete newest pools, unless the node reports that resource (the device plugin's count
 * wins), marking such a node dra_mig (c->n_dra_mig_nodes). Returns how many nodes have MIG
 * devices. */
int dra_inv_apply_mig(const struct dra_inv *inv, struct cluster *c);

/* Calls each(pool, device name, attributes, ctx) for every GPU device of every slice until it
 * returns true; whether one did. */
bool dra_inv_each(const struct dra_inv *inv,
                  bool (*each)(const char *pool, const char *device, const struct cel_device *d,
                               void *ctx),
                  void *ctx);
/* Whether accept(device, ctx) holds for some GPU device of any slice. */
bool dra_inv_any(const struct dra_inv *inv,
                 bool (*accept)(const struct cel_device *d, const void *ctx), const void *ctx);

/* The index of device `device` of pool `pool` among node's GPUs, or -1. */
int dra_inv_index(const struct dra_inv *inv, const char *node, const char *pool,
                  const char *device);

/* The name of GPU device `index` (0-based, in name order) of `node`, or NULL; *info (may be
 * NULL) gets its attributes and capacities (valid until the slice changes). */
const char *dra_inv_device(const struct dra_inv *inv, const char *node, uint32_t index,
                           const char **driver, const char **pool, const struct cel_device **info);

#endif
