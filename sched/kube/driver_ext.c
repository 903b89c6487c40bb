/* sched/kube/driver_ext.c: KEP-5004 before a Binding (sched/kube/dra.h). A pod whose containers
 * ask the accelerator as an extended resource, placed on a node whose GPUs are ResourceSlice
 * devices, gets what kube-scheduler's DynamicResources PreBind writes for it
 * (extendeddynamicresources.go): a claim of an earlier attempt owned by the pod is deleted (its
 * finalizer dropped first, as deleteClaim does); the special claim is created with the pod's
 * requests and KDRA_FINALIZER; its status gets the allocation of the node's devices of the pod's
 * GPU mask (after those of its own claims, which take the first ones) and reservedFor the pod;
 * the pod's status.extendedResourceClaimStatus names it; then its claims and its Binding
 * (kdrv_claims_then_bind). A failed step fails the bind (the gang rolls back whole, and
 * kdrv_ext_rollback deletes the claim made).
 *
 * Owns: those writes and their order. Must not touch: the placement, the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/device.h"
#include "sched/core/log.h"
#include "sched/kube/driver_int.h"

#define RES_API "/apis/resource.k8s.io/v1/namespaces/"

struct kext {
    struct kdrv *d;
    struct kbind *b;
    char *flavor;
    cJSON *reqs, *maps;           /* the claim's requests, the pod's mappings (owned) */
    char stale[KOBJ_KEY_MAX];     /* an earlier attempt's claim to delete first, or "" */
    char path[KOBJ_KEY_MAX + 96]; /* of the write in flight */
};

static void ext_free(struct kext *x)
{
    cJSON_Delete(x->reqs);
    cJSON_Delete(x->maps);
    free(x->flavor);
    free(x);
}

static void ext_fail(struct kext *x, const char *what, const struct kube_resp *r)
{
    char why[600];
    snprintf(why, sizeof(why), "pod %s: %s: %s", x->b->pod_key, what,
             r && r->error ? r->error : "out of memory");
    kdrv_bind_fail(x->b, why);
    ext_free(x);
}

/* The pod as the API server answered its status patch goes into the cache: its new
 * resourceVersion the Binding's precondition, its extendedResourceClaimStatus counting the
 * claim through it at once. */
static void pod_answer_to_cache(struct kdrv *d, const struct kube_resp *r)
{
    cJSON *obj = cJSON_ParseWithLength(r->body, r->len);
    if (obj && kcache_pod_event(d->cache, obj, false) != 0)
        kdrv_fatal(d, "out of memory in the pod cache");
    cJSON_Delete(obj);
}

static void on_pod_status(void *ctx, const struct kube_resp *r)
{
    struct kext *x = ctx;
    if (r->status < 200 || r->status >= 300) {
        ext_fail(x, "status.extendedResourceClaimStatus not written", r);
        return;
    }
    struct kdrv *d = x->d;
    struct kbind *b = x->b;
    char *flavor = x->flavor;
    x->flavor = NULL;
    ext_free(x);
    pod_answer_to_cache(d, r);
    kdrv_claims_then_bind(d, b, flavor);
    free(flavor);
}

static void on_allocated(void *ctx, const struct kube_resp *r)
{
    struct kext *x = ctx;
    if (r->status < 200 || r->status >= 300) {
        ext_fail(x, "its extended-resource claim not allocated", r);
        return;
    }
    kdrv_claim_answer_to_cache(x->d, r);
    cJSON *body = kdra_ext_pod_status(x->b->ext_claim, x->maps);
    x->maps = NULL;
    snprintf(x->path, sizeof(x->path), "/api/v1/namespaces/%s/pods/%s/status", x->b->ns,
             x->b->name);
    kdrv_send_or_fail(x->d, KUBE_PATCH_STRATEGIC, x->path, body, on_pod_status, x);
}

/* The created claim's allocation: the node's devices of the last gpus_own GPUs of the mask. */
static void on_created(void *ctx, const struct kube_resp *r)
{
    struct kext *x = ctx;
    struct kdrv *d = x->d;
    struct kbind *b = x->b;
    cJSON *obj = r->status == 201 ? cJSON_ParseWithLength(r->body, r->len) : NULL;
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name"));
    if (name)
        snprintf(b->ext_claim, sizeof(b->ext_claim), "%s", name);
    cJSON_Delete(obj);
    name = name ? b->ext_claim : NULL; /* obj's is gone */
    if (!name) {
        ext_fail(x, "its extended-resource claim not created", r);
        return;
    }
    kdrv_claim_answer_to_cache(d, r);
    char key[KOBJ_KEY_MAX];
    snprintf(key, sizeof(key), "%s/%s", b->ns, name);
    const struct kclaim *cl = kcache_claim(d->cache, key);
    const struct kpod *p = kcache_pod(d->cache, b->pod_key);
    const char *dev[32], *drv[32], *pool[32];
    uint32_t n = 0;
    if (!kdrv_mask_devices(d, b->node, b->gpu_mask, dev, drv, pool, &n))
        n = 0; /* a GPU of the mask that is no DRA device: none */
    int64_t own = p ? p->gpus_own : 0;
    struct kdra_ref me = {.name = b->name, .uid = p ? p->uid : ""};
    cJSON *body = cl && p && p->uid && own > 0 && own <= n
                      ? kdra_claim_allocation(cl, b->node, dev + (n - own), drv + (n - own),
                                              pool + (n - own), (uint32_t)own, &me, 1)
                      : NULL;
    if (!body) {
        struct kube_resp none = {.status = 0, .error = "no allocation of the node's devices"};
        ext_fail(x, "its extended-resource claim", &none);
        return;
    }
    snprintf(x->path, sizeof(x->path), RES_API "%s/resourceclaims/%s/status", b->ns, name);
    kdrv_send_or_fail(d, KUBE_PATCH_MERGE, x->path, body, on_allocated, x);
}

static void create(struct kext *x)
{
    const struct kpod *p = kcache_pod(x->d->cache, x->b->pod_key);
    cJSON *body = p && p->uid ? kdra_ext_claim(x->b->ns, x->b->name, p->uid, x->reqs) : NULL;
    x->reqs = NULL;
    if (!body) {
        ext_fail(x, "its extended-resource claim", NULL);
        return;
    }
    snprintf(x->path, sizeof(x->path), RES_API "%s/resourceclaims", x->b->ns);
    kdrv_send_or_fail(x->d, KUBE_POST, x->path, body, on_created, x);
}

static void on_stale_deleted(void *ctx, const struct kube_resp *r)
{
    struct kext *x = ctx;
    if ((r->status < 200 || r->status >= 300) && r->status != 404) {
        ext_fail(x, "an earlier attempt's extended-resource claim not deleted", r);
        return;
    }
    LOG_INFO(KDRV_MOD, "extended-resource claim of an earlier attempt deleted: claim=%s", x->stale);
    create(x);
}

static void on_stale_unprotected(void *ctx, const struct kube_resp *r)
{
    struct kext *x = ctx;
    if ((r->status < 200 || r->status >= 300) && r->status != 404) {
        ext_fail(x, "an earlier attempt's extended-resource claim kept its finalizer", r);
        return;
    }
    const char *slash = strchr(x->stale, '/');
    snprintf(x->path, sizeof(x->path), RES_API "%s/resourceclaims/%s", x->b->ns,
             slash ? slash + 1 : x->stale);
    kdrv_send_or_fail(x->d, KUBE_DELETE, x->path, NULL, on_stale_deleted, x);
}

bool kdrv_ext_needed(struct kdrv *d, const struct kbind *b)
{
    const struct kpod *p = kcache_pod(d->cache, b->pod_key);
    const char *drv, *pool;
    uint32_t g = b->gpu_mask ? (uint32_t)__builtin_ctz(b->gpu_mask) : 0;
    return p && p->gpus_own > 0 && b->gpu_mask &&
           kcache_dra_device(d->cache, b->node, g, &drv, &pool) != NULL;
}

void kdrv_ext_then_bind(struct kdrv *d, struct kbind *b, const char *flavor)
{
    const struct kpod *p = kcache_pod(d->cache, b->pod_key);
    const struct kdra_class *k = p ? kcache_ext_class(d->cache, p) : NULL;
    struct kext *x = calloc(1, sizeof(*x));
    if (!x || (flavor && !(x->flavor = strdup(flavor)))) {
        free(x);
        kdrv_bind_fail(b, "out of memory");
        return;
    }
    x->d = d;
    x->b = b;
    b->ext_claim[0] = '\0';
    if (!k) {
        struct kube_resp none = {.status = 0,
                                 .error = "no DeviceClass maps its container GPUs to the node's "
                                          "ResourceSlice devices (any more)"};
        ext_fail(x, device_resource(), &none);
        return;
    }
    uint32_t devices = 0;
    x->reqs = kdra_ext_requests(p->spec->ext, p->spec->n_ext, device_resource(), k->name, &x->maps,
                                &devices);
    if (!x->reqs || devices != (uint64_t)p->gpus_own) {
        ext_fail(x, "its extended-resource claim's requests", NULL);
        return;
    }
    const struct kclaim *old = kcache_ext_of(d->cache, p->uid);
    if (!old) {
        create(x);
        return;
    }
    snprintf(x->stale, sizeof(x->stale), "%s", old->key);
    snprintf(x->path, sizeof(x->path), RES_API "%s/resourceclaims/%s", old->ns, old->name);
    kdrv_send_or_fail(d, KUBE_PATCH_STRATEGIC, x->path, kdra_claim_unprotect(),
                      on_stale_unprotected, x);
}

/* ---- rollback: the claim made for a member never bound goes ---------------------------------- */

struct kext_del {
    struct kdrv *d;
    char path[KOBJ_KEY_MAX + 96];
};

static void on_rollback_deleted(void *ctx, const struct kube_resp *r)
{
    struct kext_del *u = ctx;
    if ((r->status < 200 || r->status >= 300) && r->status != 404)
        LOG_WARN(KDRV_MOD, "extended-resource claim not deleted: path=%s status=%d error=%s",
                 u->path, r->status, r->error ? r->error : "");
    if (u->d->unreserves_left > 0)
        u->d->unreserves_left--;
    free(u);
}

static void on_rollback_unprotected(void *ctx, const struct kube_resp *r)
{
    struct kext_del *u = ctx;
    (void)r; /* deleted either way: without the finalizer at once, else once deallocated */
    kdrv_send_or_fail(u->d, KUBE_DELETE, u->path, NULL, on_rollback_deleted, u);
}

/* Drops the finalizer of claim ns/name, then deletes it; the next cycle waits for it. */
static void ext_delete(struct kdrv *d, const char *ns, const char *name)
{
    struct kext_del *u = calloc(1, sizeof(*u));
    if (!u) {
        LOG_ERROR(KDRV_MOD, "out of memory deleting claim %s/%s", ns, name);
        return;
    }
    u->d = d;
    snprintf(u->path, sizeof(u->path), RES_API "%s/resourceclaims/%s", ns, name);
    d->unreserves_left++;
    kdrv_send_or_fail(d, KUBE_PATCH_STRATEGIC, u->path, kdra_claim_unprotect(),
                      on_rollback_unprotected, u);
}

void kdrv_ext_rollback(struct kdrv *d, struct kbind *b)
{
    if (b->ext_claim[0] && kdrv_may_lead(d))
        ext_delete(d, b->ns, b->ext_claim);
    b->ext_claim[0] = '\0';
}

void kdrv_ext_sweep(struct kdrv *d, const struct kcache_build *kb)
{
    for (uint32_t i = 0; i < kb->n_ext_stale && kdrv_may_lead(d); i++) {
        const struct kclaim *x = kb->ext_stale[i];
        LOG_INFO(KDRV_MOD, "deleting the extended-resource claim an earlier attempt left: claim=%s",
                 x->key);
        ext_delete(d, x->ns, x->name);
    }
}
