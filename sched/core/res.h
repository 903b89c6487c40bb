/* sched/core/res.h: resource names and resource vectors.
 *
 * Owns: the process-wide table of interned resource names (append-only; ids are dense small
 * integers, stable for the life of the process) and fixed-width resource vectors. Base units:
 * cpu in millicores, memory and storage in bytes, everything else (pods, nvidia.com/gpu, MIG
 * profiles such as nvidia.com/mig-1g.10gb, any extended resource) in whole counts.
 *
 * The table is filled by drivers while they read input; the pure core only reads it.
 */
#ifndef SCHED_CORE_RES_H
#define SCHED_CORE_RES_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/err.h"

#define RES_MAX 32 /* distinct resource names per process */

/* Pre-interned ids, always present. RES_GPU is the accelerator: its name is nvidia.com/gpu
 * unless the configuration names another device resource (sched/core/device.h). */
enum res_id { RES_CPU = 0, RES_MEMORY = 1, RES_PODS = 2, RES_GPU = 3, RES_N_WELLKNOWN = 4 };

#define RES_DEFAULT_DEVICE "nvidia.com/gpu"

struct res_vec {
    int64_t v[RES_MAX]; /* indexed by resource id; base units (see above) */
};

/* Interns `name`; returns 0 and its id, or SCHED_EFULL (message in eb) past RES_MAX names, or
 * SCHED_EINVAL for a name that is not a valid Kubernetes resource name. */
int res_intern(const char *name, int *id, struct sched_errbuf *eb);
int res_lookup(const char *name); /* id, or -1 when the name was never interned */
const char *res_name(int id);
/* Renames the accelerator slot RES_GPU to `name` (a no-op when it already has that name). The
 * previous name is forgotten (read later, it becomes an ordinary resource). SCHED_EINVAL for an
 * invalid name or one already interned as another resource (the accelerator must be named before
 * any input that uses it is read). Drivers call it once, right after loading the config. */
/* 0 when `name` is a valid Kubernetes resource name, else SCHED_EINVAL with the reason. */
int res_check_name(const char *name, struct sched_errbuf *eb);
int res_set_device(const char *name, struct sched_errbuf *eb);
int res_count(void); /* ids in use are 0 .. res_count()-1 */

/* Device kinds: several accelerator resources in one cluster (the config's `devices:` list).
 * Kind 0 is the device itself (the resource RES_GPU is named after); kinds 1.. are the others
 * (amd.com/gpu next to nvidia.com/gpu). A pod or node of kind k > 0 keeps its count under the
 * kind's own resource id (so that fits and quota see the kind) and has the same count mirrored
 * into RES_GPU (so that device indices, islands, TP groups and fragmentation apply unchanged).
 * A node of kind k offers RES_GPU only to pods of kind k (plugins/device_kind.c); quota counts
 * kind 0 as RES_GPU minus the other kinds (queue/quota.c). With one kind nothing changes. */
#define RES_KINDS_MAX 8 /* kinds per process, the device included */
/* Sets kinds 1..n to `names` (interned; a well-known name or the device's is SCHED_EINVAL).
 * Replaces any earlier list. Drivers call it once, with res_set_device(), before reading input. */
int res_set_kinds(const char *const *names, int n, struct sched_errbuf *eb);
int res_kind_count(void);   /* 1 + the other kinds */
int res_kind_res(int kind); /* resource id of kind `kind` (RES_GPU for 0), -1 out of range */
/* The kind `v` asks for or offers: the first kind k > 0 with a positive count, else 0. */
int res_kind_of(const struct res_vec *v);
/* Mirrors the count of a kind k > 0 into RES_GPU. Call once per vector, where a reader has
 * filled it from resource names. SCHED_EINVAL (message names both) when v has counts of two
 * kinds: a pod or node has one kind of accelerator. */
int res_kinds_fold(struct res_vec *v, struct sched_errbuf *eb);
/* The power-of-ten scale values of this resource are stored at: 3 for cpu, 0 otherwise. */
int res_scale(int id);

/* Parses a quantity for resource `id` into base units (rounded up). */
int res_parse(int id, const char *quantity, int64_t *out, struct sched_errbuf *eb);

/* true when every component of `need` is <= the same component of `have`. */
bool res_fits(const struct res_vec *need, const struct res_vec *have);
void res_add(struct res_vec *acc, const struct res_vec *x);
void res_sub(struct res_vec *acc, const struct res_vec *x);
/* First resource id where need > have, or -1. */
int res_first_short(const struct res_vec *need, const struct res_vec *have);

#endif
