/* sched/kube/dra.h: resource.k8s.io/v1 ResourceClaims as JSON into the records the daemon
 * allocates from (ResourceSlices are read by sched/k8s/slice.h, which both drivers share).
 *
 * Owns: which fields of a ResourceClaim and of a pod's spec.resourceClaims are read and their
 * checks; the bodies of the claim writes (the finalizer, the allocation, an adoption, an
 * Unreserve, a deallocation).
 *
 * Must not touch: the cache, the network. Errors name the claim and the field.
 */
#ifndef SCHED_KUBE_DRA_H
#define SCHED_KUBE_DRA_H

#include <cjson/cJSON.h>

#include "sched/core/dra.h"
#include "sched/core/err.h"
#include "sched/core/strmap.h"
#include "sched/k8s/slice.h"
#include "sched/kube/objects.h"

/* ---- ResourceClaims ---------------------------------------------------------------------------
 * What the daemon allocates (docs/kubernetes.md): requests `exactly` of the accelerator's
 * DeviceClass (device_dra(), sched/core/device.h: "gpu.nvidia.com" by default) with allocationMode
 * ExactCount (count, default 1), or All as the claim's only request. Anything else (another class,
 * firstAvailable, adminAccess, a selector outside the CEL subset of sched/core/cel.h) is refused
 * with a message naming the field: the pod waits with reason InvalidSpec, never a partial or wrong
 * allocation. */
/* One way to satisfy a request: its DeviceClass when not the accelerator's (whole accelerator
 * devices that pass that class's selectors too, struct kdra_class; NULL: the accelerator's) and
 * its own selectors. An `exactly` request has one; a firstAvailable one its subrequests. */
struct kclaim_alt {
    char *name;            /* a subrequest's name; NULL for `exactly` */
    char *cls;             /* NULL: the accelerator's class */
    struct cel_prog **sel; /* selectors[].cel.expression, compiled (sched/core/cel.h) */
    uint32_t n_sel;
    char *src; /* the expressions, each as "<length>:<expression>" ("" none; NULL when the
                  request was refused before its selectors were read): with cls, what the
                  alternative asks, for caches shared by claims alike (sched/kube/mig.c) */
};

struct kclaim_req {
    char *name;     /* request name */
    uint32_t count; /* devices (0 with allocationMode All) */
    bool all;       /* allocationMode All: every GPU device of the node */
    bool channel;   /* an IMEX channel of a ComputeDomain (sched/kube/computedomain.h) */
    /* its alternatives: `exactly`'s one, or firstAvailable's (DRAPrioritizedList, beta and on
     * by default since 1.34) in order, each ExactCount of `count`; the first whose class and
     * selectors accept the node's devices is allocated, a subrequest's result naming
     * "<request>/<subrequest>" (kdra_claim_subs) */
    struct kclaim_alt *alts;
    uint32_t n_alts;
    bool first_available;
};

struct kclaim {
    char *key; /* "namespace/name" */
    char *ns, *name, *uid;
    struct kclaim_req *reqs;
    uint32_t n_reqs;
    int64_t gpus;       /* sum of the requests' counts */
    bool all;           /* its one request has allocationMode All */
    char *unsupported;  /* why the claim cannot be allocated by gangsched, or NULL */
    bool allocated;     /* status.allocation set */
    struct kclaim_con { /* spec.devices.constraints[] */
        char *attr;     /* qualified attribute name */
        bool distinct;  /* distinctAttribute, else matchAttribute */
    } * cons;
    uint32_t n_cons;
    struct kclaim_dev { /* status.allocation.devices.results[] of the GPU driver */
        char *pool, *device;
    } * alloc;
    uint32_t n_alloc;
    char *alloc_node; /* status.allocation.nodeSelector: the node of a matchFields metadata.name
                         In [one node] term (how gangsched allocates), else NULL */
    char **reserved;  /* status.reservedFor[].uid */
    uint32_t n_reserved;
    uint32_t channels; /* requests of an IMEX channel (a claim holds channels or GPUs) */
    char *domain;      /* the ComputeDomain uid of its channel config (domainID), or NULL */
    cJSON *config;     /* spec.devices.config, copied into status.allocation.devices.config */
    char *rv;          /* metadata.resourceVersion (NULL: none) */
    bool deleting;     /* metadata.deletionTimestamp set: no new consumer may be added */
    bool finalizer;    /* metadata.finalizers holds KDRA_FINALIZER */
    char *ext_owner;   /* a scheduler's claim for a pod's extended resources (KEP-5004: annotation
                          KDRA_EXT_ANNOT "true"): the uid of its controller owner pod, else NULL */
    char *ext_pod;     /* then that pod's key "ns/name" */
};

/* KEP-5004 (DRA extended resources; beta and on by default since 1.36): a pod asking the
 * accelerator as an extended resource in its containers (nvidia.com/gpu: 2) may run on a node
 * whose GPUs are ResourceSlice devices when a DeviceClass maps that name (its
 * spec.extendedResourceName, or the implicit deviceclass.resource.kubernetes.io/<class>). The
 * scheduler then writes, before the Binding, a ResourceClaim owned by the pod (generateName
 * "<pod>-extended-resources-", this annotation "true"), one request "container-<i>-request-<j>"
 * per container and resource, allocated and reserved for the pod, and the pod's
 * status.extendedResourceClaimStatus naming it (kube-scheduler's DynamicResources,
 * extendeddynamicresources.go). */
#define KDRA_EXT_ANNOT    "resource.kubernetes.io/extended-resource-claim"
#define KDRA_EXT_IMPLICIT "deviceclass.resource.kubernetes.io/"

/* The finalizer kube-scheduler puts on a claim before it writes an allocation (the resource
 * API's resourceapi.Finalizer): the claim cannot go away while allocated; kube-controller-
 * manager's resourceclaim controller removes it when it deallocates. */
#define KDRA_FINALIZER "resource.kubernetes.io/delete-protection"

/* gpu_class: the DeviceClass allocated, NULL: the accelerator's (device_dra()); its
 * allocation results count when of the accelerator's DRA driver. */
int kdra_claim_decode(const cJSON *o, const char *gpu_class, struct kclaim **out,
                      struct sched_errbuf *eb);
void kdra_claim_free(struct kclaim *c);
/* ---- DeviceClasses ------------------------------------------------------------------------
 * A claim's request of a DeviceClass other than the accelerator's (an operator's class per GPU
 * model, say) is allocated from the accelerator's whole devices that its class's
 * spec.selectors accept too, as kube-scheduler applies a class's selectors before the
 * request's. */
struct kdra_class {
    char *name;
    struct cel_prog **sel; /* spec.selectors[].cel.expression, compiled */
    uint32_t n_sel;
    char *ext_name;    /* spec.extendedResourceName, or NULL */
    char *created;     /* metadata.creationTimestamp (RFC 3339, compares as text), or NULL */
    char *unsupported; /* "deviceclass x: spec.selectors[0].cel.expression: column N: ..." */
    /* a cache of its user (claims.c): whether some whole device passes, and whether every one
     * does, as of slices generation any_gen - 1 (0: not known) */
    uint64_t any_gen;
    bool any, every;
    uint64_t mig_gen; /* the same for MIG devices (sched/kube/mig.h) */
    bool mig_any;
};
int kdra_class_decode(const cJSON *o, struct kdra_class **out, struct sched_errbuf *eb);
void kdra_class_free(struct kdra_class *k);

/* The DeviceClass whose devices serve extended resource `resource` (extended/cache.go's
 * resolver): the classes naming it in spec.extendedResourceName, the newest by
 * creationTimestamp, then the first by name; else the class its implicit name
 * KDRA_EXT_IMPLICIT<class> names. NULL: none (classes: name -> struct kdra_class). */
const struct kdra_class *kdra_ext_class(const struct strmap *classes, const char *resource);

/* What the containers of a pod spec ask of the accelerator's resource (device_resource()), those
 * asking some, in order; none when a quantity cannot be read. Strings in `a`. 0 or
 * SCHED_ENOMEM. */
int kdra_pod_ext(const cJSON *spec, struct arena *a, const struct kobj_ext_ctr **out,
                 uint32_t *n_out);

/* The devices kdra_ext_requests asks for ctr[n]. */
uint64_t kdra_ext_devices(const struct kobj_ext_ctr *ctr, uint32_t n);

/* The special claim's spec.devices.requests and the pod's requestMappings for containers
 * ctr[n] (objects.h; in idx order) asking `resource` of DeviceClass `cls`, as kube-scheduler's
 * createRequestsAndMappings: one ExactCount request per long-lived container; an init container
 * that runs before them uses the later long-lived containers' requests first, and the largest of
 * what those still lack is one request they all map to; requests sorted by name. *devices: the
 * sum of the counts. NULL out of memory. */
cJSON *kdra_ext_requests(const struct kobj_ext_ctr *ctr, uint32_t n, const char *resource,
                         const char *cls, cJSON **mappings, uint32_t *devices);

/* The POST body of the special claim of pod ns/name (uid) with requests `reqs` (taken): the
 * annotation, the pod as controller owner, generateName "<name>-extended-resources-" and
 * KDRA_FINALIZER, which kube-scheduler adds before it writes an allocation. NULL out of
 * memory. */
cJSON *kdra_ext_claim(const char *ns, const char *name, const char *uid, cJSON *reqs);

/* The strategic merge patch of pods/status setting status.extendedResourceClaimStatus
 * {requestMappings (taken), resourceClaimName}. NULL out of memory. */
cJSON *kdra_ext_pod_status(const char *claim, cJSON *mappings);

/* The strategic merge patch of a claim that drops KDRA_FINALIZER (kube-scheduler's deleteClaim
 * removes it before the delete, so that the claim goes at once). */
cJSON *kdra_claim_unprotect(void);

/* Whether every selector of every request accepts the device, its class's first (classes: name
 * -> struct kdra_class; a class not there accepts nothing). An evaluation error does not accept:
 * the device is not chosen (kube-scheduler's allocator instead stops allocating the claim with
 * "selector #i: CEL runtime error"). */
bool kdra_claim_matches(const struct kclaim *c, const struct strmap *classes,
                        const struct cel_device *d);
/* Whether alternative x's class (NULL: the accelerator's) and its own selectors accept d. */
bool kdra_alt_matches(const struct kclaim_alt *x, const struct strmap *classes,
                      const struct cel_device *d);
/* Whether one class's selectors accept the device. */
bool kdra_class_matches(const struct kdra_class *k, const struct cel_device *d);
/* selectors, constraints, another DeviceClass, or allocationMode All */
bool kdra_claim_has_selectors(const struct kclaim *c);
/* Whether a node whose GPU devices are devs[n] suits the claim whatever devices of it are
 * chosen: every device accepted by the selectors, and for each constraint all devices having
 * the attribute with one value (matchAttribute) or pairwise different values
 * (distinctAttribute). Conservative: a node where only a subset would qualify is not used. */
bool kdra_claim_node_ok(const struct kclaim *c, const struct strmap *classes,
                        const struct cel_device *const *devs, uint32_t n);

/* Whether the claim is free for the pod `uid`: not allocated, or allocated and reserved for no
 * one but that pod (our own earlier attempt). */
bool kdra_claim_free_for(const struct kclaim *c, const char *uid);

/* A claim shared by several pods (KEP-4381): status.reservedFor holds at most this many
 * consumers (upstream's ResourceClaimReservedForMaxSize). */
#define KDRA_MAX_CONSUMERS 256

/* Whether every consumer the claim is reserved for is one of uids[n] (our earlier attempt for
 * the same consumers), or it is not allocated. */
bool kdra_claim_free_for_all(const struct kclaim *c, const char *const *uids, uint32_t n);

/* Whether the claim's status.reservedFor lists pod `uid`. */
bool kdra_claim_reserved_for(const struct kclaim *c, const char *uid);

/* A consumer in a claim's status.reservedFor: a pod {resource: pods, name, uid}, or (KEP-5729,
 * a claim its native PodGroup's spec.resourceClaims lists as the pod does) the PodGroup
 * {apiGroup: scheduling.k8s.io, resource: podgroups, name, uid}. */
struct kdra_ref {
    const char *name, *uid;
    bool group; /* the PodGroup */
};

/* A pod using a claim that is already allocated (by anyone: a pod of another gang or scheduler,
 * an earlier member of its elastic gang, nobody any more) adds itself as one more consumer, as
 * kube-scheduler's PreBind (bindClaim) does for an allocated claim: the body is a strategic
 * merge patch of resourceclaims/status whose status.reservedFor holds the one entry `who` (the
 * pod, or its PodGroup: struct kdra_ref) (the list merges by its key uid: the others stay), with
 * the claim's metadata.uid (claim_uid, may be NULL) as the precondition that it is the same claim.
 * The allocation, immutable once set, is not written. NULL out of memory. */
cJSON *kdra_claim_adopt(const char *claim_uid, const struct kdra_ref *who);

/* The body of the resourceclaims/status write that allocates the claim on `node` to its
 * consumers: status.allocation.devices.results[] (request, driver, pool, device: devices taken in
 * order, count per request; an All request takes them all), status.allocation.devices.config (the
 * claim's spec.devices.config entries with source FromClaim, as kube-scheduler copies them: the
 * driver reads its opaque parameters there), status.allocation.nodeSelector (metadata.name In
 * [node]) and status.reservedFor listing the n_who consumers (struct kdra_ref: pods, or a
 * PodGroup for the pods of it that list the claim as it does; 1 to KDRA_MAX_CONSUMERS; a shared
 * claim lists them all, so that each consumer's write is the same). NULL out of memory or on
 * bad counts. */
cJSON *kdra_claim_allocation(const struct kclaim *c, const char *node, const char *const *devices,
                             const char *const *drivers, const char *const *pools,
                             uint32_t n_devices, const struct kdra_ref *who, uint32_t n_who);
/* A claim with firstAvailable requests: the subrequest each request takes on a node whose
 * devices are devs[n] (kdra_claim_sub), into sub[request] (KDRA_MAX_REQS entries), for
 * kdra_claim_allocation to name "<request>/<subrequest>"; false when a request has none. */
#define KDRA_MAX_REQS 32
bool kdra_claim_subs(const struct kclaim *c, const struct strmap *classes,
                     const struct cel_device *const *devs, uint32_t n, uint8_t *sub);
/* kdra_claim_allocation with the subrequests sub[] (NULL: a claim without firstAvailable). */
cJSON *kdra_claim_allocation_subs(const struct kclaim *c, const uint8_t *sub, const char *node,
                                  const char *const *devices, const char *const *drivers,
                                  const char *const *pools, uint32_t n_devices,
                                  const struct kdra_ref *who, uint32_t n_who);

/* The write that protects a claim before its allocation is written (kube-scheduler's bindClaim
 * adds KDRA_FINALIZER with an Update of the claim): a strategic merge patch of the claim
 * (finalizers merge as a set) carrying metadata.resourceVersion as its precondition, so that a
 * claim changed since it was read (being deleted, say) answers 409 and is read again. NULL out
 * of memory or when the claim's resourceVersion is unknown. */
cJSON *kdra_claim_protect(const struct kclaim *c);

/* Unreserve (kube-scheduler's DynamicResources Unreserve): the strategic merge patch of
 * resourceclaims/status deleting the reservedFor entry of pod `pod_uid` by its merge key, with
 * metadata.uid (claim_uid, may be NULL) as the precondition that it is the same claim. */
cJSON *kdra_claim_unreserve(const char *claim_uid, const char *pod_uid);

/* The deallocation of a claim reserved for nobody (what kube-scheduler's PostFilter does to
 * free such a claim): a merge patch of resourceclaims/status setting allocation to null, with
 * metadata.resourceVersion `rv` as its precondition (a consumer added meanwhile: 409). */
cJSON *kdra_claim_deallocate(const char *rv);

/* ---- KEP-5729 (DRAWorkloadResourceClaims): claims of a native PodGroup -------------------------
 * A spec.resourceClaims entry of a pod or of a PodGroup {name, resourceClaimName |
 * resourceClaimTemplateName} as one string, "<name> claim <claim name>" or "<name> template
 * <template name>" (names hold no space), into *out (malloc'd). A pod's entry equal to one of its
 * PodGroup's is the PodGroup's claim (upstream's PodGroupResourceClaim: "Pods consume the devices
 * allocated to a PodGroup's claim by defining a claim in its own Spec.ResourceClaims that matches
 * the PodGroup's claim exactly"), reserved for the PodGroup instead of the pod. 0, SCHED_EINVAL
 * (no name, or not exactly one of the two) or SCHED_ENOMEM. */
int kdra_claim_entry(const cJSON *rc, char **out);
/* KEP-5729 (gate DRAWorkloadResourceClaims, kube-scheduler's resourceclaim.BindTo): a claim of
 * pod p whose spec.resourceClaims entry equals one of its native PodGroup pg's (the group it
 * names in spec.schedulingGroup.podGroupName; NULL: none) is reserved for the PodGroup, one
 * status.reservedFor entry for all its pods, not for the pod. Sets p->claims_group and
 * p->group_uid; each build, before kclaims_note_pod (claims.h). 0 or SCHED_ENOMEM. */
int kdra_note_group(struct kpod *p, const struct kpg *pg);
/* The uid claim i of pod p is reserved under: its PodGroup's for a PodGroup's claim, else the
 * pod's own. */
const char *kdra_who(const struct kpod *p, uint32_t i);

/* A pod's claims: spec.resourceClaims[]{name, resourceClaimName | resourceClaimTemplateName};
 * a template's claim is the one status.resourceClaimStatuses names (created by the resourceclaim
 * controller; for a PodGroup's claim, KEP-5729, the one it made for the PodGroup), else
 * p->claim_wait says it is awaited. Sets p->claims, claims_entry, n_claims, claim_wait. */
struct kpod;
int kdra_pod_claims(const cJSON *pod, const char *ns, struct kpod *p, struct sched_errbuf *eb);

#endif
