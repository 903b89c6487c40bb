/* sched/kube/dra.c: ResourceSlices into the DRA inventory (see dra.h). */
#include "sched/kube/dra.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KDRA_MAX_DEVICES 128 /* resource/v1 ResourceSliceMaxDevices */

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

/* A device is a whole GPU: attributes.type absent, or {string: "gpu"}. */
static bool whole_gpu(const cJSON *dev)
{
    const cJSON *t = get(get(dev, "attributes"), "type");
    if (!t)
        return true;
    const char *s = cJSON_GetStringValue(get(t, "string"));
    return s && strcmp(s, "gpu") == 0;
}

int kdra_slice_put(struct dra_inv *inv, const cJSON *slice, const char *gpu_driver,
                   struct sched_errbuf *eb)
{
    const cJSON *meta = get(slice, "metadata"), *spec = get(slice, "spec");
    const char *name = cJSON_GetStringValue(get(meta, "name"));
    if (!name || !*name)
        return sched_fail(eb, SCHED_EINVAL, "resourceslice: metadata.name: missing");
    const char *driver = cJSON_GetStringValue(get(spec, "driver"));
    const cJSON *pool = get(spec, "pool");
    const char *pname = cJSON_GetStringValue(get(pool, "name"));
    const cJSON *gen = get(pool, "generation"), *cnt = get(pool, "resourceSliceCount");
    if (!driver || !*driver)
        return sched_fail(eb, SCHED_EINVAL, "resourceslice %s: spec.driver: missing", name);
    if (!pname || !*pname)
        return sched_fail(eb, SCHED_EINVAL, "resourceslice %s: spec.pool.name: missing", name);
    if (gen && (!cJSON_IsNumber(gen) || gen->valuedouble < 0 || gen->valuedouble > 9e15))
        return sched_fail(eb, SCHED_EINVAL,
                          "resourceslice %s: spec.pool.generation: not an integer >= 0", name);
    if (cnt && (!cJSON_IsNumber(cnt) || cnt->valuedouble < 1 || cnt->valuedouble > 1e6))
        return sched_fail(eb, SCHED_EINVAL,
                          "resourceslice %s: spec.pool.resourceSliceCount: not an integer >= 1",
                          name);
    const cJSON *node = get(spec, "nodeName");
    if (node && !cJSON_IsNull(node) && !cJSON_IsString(node))
        return sched_fail(eb, SCHED_EINVAL, "resourceslice %s: spec.nodeName: not a string", name);
    const cJSON *devs = get(spec, "devices");
    if (devs && !cJSON_IsArray(devs))
        return sched_fail(eb, SCHED_EINVAL, "resourceslice %s: spec.devices: not a list", name);
    int n = cJSON_GetArraySize(devs);
    if (n > KDRA_MAX_DEVICES)
        return sched_fail(eb, SCHED_EINVAL,
                          "resourceslice %s: spec.devices: %d devices, at most %d", name, n,
                          KDRA_MAX_DEVICES);
    const char *names[KDRA_MAX_DEVICES];
    uint32_t k = 0;
    bool gpu_driver_ok = strcmp(driver, gpu_driver ? gpu_driver : DRA_GPU_DRIVER) == 0;
    for (int i = 0; i < n; i++) {
        const cJSON *dev = cJSON_GetArrayItem(devs, i);
        const char *dn = cJSON_GetStringValue(get(dev, "name"));
        if (!dn || !*dn)
            return sched_fail(eb, SCHED_EINVAL, "resourceslice %s: spec.devices[%d].name: missing",
                              name, i);
        if (gpu_driver_ok && whole_gpu(dev))
            names[k++] = dn;
    }
    struct dra_slice s = {.name = name,
                          .node =
                              cJSON_IsString(node) && *node->valuestring ? node->valuestring : NULL,
                          .driver = driver,
                          .pool = pname,
                          .generation = gen ? (int64_t)gen->valuedouble : 0,
                          .slice_count = cnt ? (uint32_t)cnt->valuedouble : 1,
                          .gpus = names,
                          .n_gpus = k};
    return dra_inv_put(inv, &s);
}

/* ---- ResourceClaims ------------------------------------------------------------------------ */

void kdra_claim_free(struct kclaim *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; i < c->n_reqs; i++)
        free(c->reqs[i].name);
    for (uint32_t i = 0; i < c->n_reserved; i++)
        free(c->reserved[i]);
    free(c->reqs);
    free(c->reserved);
    free(c->key);
    free(c->ns);
    free(c->name);
    free(c->uid);
    free(c->unsupported);
    free(c);
}

/* Sets c->unsupported (first reason wins); false out of memory. */
static bool refuse(struct kclaim *c, const char *field, const char *why)
{
    if (c->unsupported)
        return true;
    size_t n = strlen(c->key) + strlen(field) + strlen(why) + 32;
    c->unsupported = malloc(n);
    if (!c->unsupported)
        return false;
    snprintf(c->unsupported, n, "resourceclaim %s: %s: %s", c->key, field, why);
    return true;
}

static int decode_requests(struct kclaim *c, const cJSON *devices, const char *gpu_class)
{
    const cJSON *reqs = get(devices, "requests");
    int n = cJSON_GetArraySize(reqs);
    c->reqs = calloc((size_t)(n > 0 ? n : 1), sizeof(*c->reqs));
    if (!c->reqs)
        return SCHED_ENOMEM;
    char field[96];
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        const cJSON *r = cJSON_GetArrayItem(reqs, i), *ex = get(r, "exactly");
        const char *rn = cJSON_GetStringValue(get(r, "name"));
        snprintf(field, sizeof(field), "spec.devices.requests[%d]", i);
        if (!rn || !*rn) {
            ok = refuse(c, field, "name missing");
            continue;
        }
        struct kclaim_req *q = &c->reqs[c->n_reqs++];
        if (!(q->name = strdup(rn)))
            return SCHED_ENOMEM;
        if (get(r, "firstAvailable") || !ex) {
            ok = refuse(c, field,
                        "only `exactly` requests are allocated by gangsched "
                        "(firstAvailable is not)");
            continue;
        }
        const char *cls = cJSON_GetStringValue(get(ex, "deviceClassName"));
        const char *mode = cJSON_GetStringValue(get(ex, "allocationMode"));
        const cJSON *cnt = get(ex, "count");
        if (!cls || strcmp(cls, gpu_class) != 0)
            ok = refuse(c, field,
                        "exactly.deviceClassName: not the GPU DeviceClass gangsched "
                        "allocates");
        else if (mode && strcmp(mode, "ExactCount") != 0)
            ok = refuse(c, field, "exactly.allocationMode: only ExactCount is allocated");
        else if (cJSON_GetArraySize(get(ex, "selectors")) > 0)
            ok = refuse(c, field, "exactly.selectors: CEL selectors are not evaluated");
        else if (cJSON_IsTrue(get(ex, "adminAccess")))
            ok = refuse(c, field, "exactly.adminAccess: not allocated by gangsched");
        else if (cnt && (!cJSON_IsNumber(cnt) || cnt->valuedouble < 1 || cnt->valuedouble > 32))
            ok = refuse(c, field, "exactly.count: not an integer in 1..32");
        q->count = cnt ? (uint32_t)cnt->valuedouble : 1;
        c->gpus += q->count;
    }
    if (ok && cJSON_GetArraySize(get(devices, "constraints")) > 0)
        ok = refuse(c, "spec.devices.constraints",
                    "matchAttribute and distinctAttribute are not "
                    "evaluated");
    return ok ? 0 : SCHED_ENOMEM;
}

int kdra_claim_decode(const cJSON *o, const char *gpu_class, struct kclaim **out,
                      struct sched_errbuf *eb)
{
    const cJSON *meta = get(o, "metadata");
    const char *ns = cJSON_GetStringValue(get(meta, "namespace"));
    const char *name = cJSON_GetStringValue(get(meta, "name"));
    const char *uid = cJSON_GetStringValue(get(meta, "uid"));
    if (!name || !*name || strchr(name, '/') || (ns && strchr(ns, '/')))
        return sched_fail(eb, SCHED_EINVAL, "resourceclaim: metadata.name: missing or invalid");
    struct kclaim *c = calloc(1, sizeof(*c));
    if (!c)
        return SCHED_ENOMEM;
    ns = ns && *ns ? ns : "default";
    size_t kn = strlen(ns) + strlen(name) + 2;
    c->key = malloc(kn);
    c->ns = strdup(ns);
    c->name = strdup(name);
    c->uid = uid ? strdup(uid) : NULL;
    int rc = c->key && c->ns && c->name && (!uid || c->uid) ? 0 : SCHED_ENOMEM;
    if (rc == 0) {
        snprintf(c->key, kn, "%s/%s", ns, name);
        rc = decode_requests(c, get(get(o, "spec"), "devices"),
                             gpu_class ? gpu_class : DRA_GPU_DRIVER);
    }
    const cJSON *st = get(o, "status"), *rf = get(st, "reservedFor");
    c->allocated = get(st, "allocation") && !cJSON_IsNull(get(st, "allocation"));
    int nr = cJSON_GetArraySize(rf);
    c->reserved = calloc((size_t)(nr > 0 ? nr : 1), sizeof(*c->reserved));
    if (!c->reserved)
        rc = SCHED_ENOMEM;
    for (int i = 0; rc == 0 && i < nr; i++) {
        const char *u = cJSON_GetStringValue(get(cJSON_GetArrayItem(rf, i), "uid"));
        if (u && !(c->reserved[c->n_reserved++] = strdup(u)))
            rc = SCHED_ENOMEM;
    }
    if (rc) {
        kdra_claim_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

bool kdra_claim_free_for(const struct kclaim *c, const char *uid)
{
    if (!c->allocated && c->n_reserved == 0)
        return true;
    for (uint32_t i = 0; i < c->n_reserved; i++)
        if (!uid || strcmp(c->reserved[i], uid) != 0)
            return false;
    return c->n_reserved > 0 || !c->allocated;
}

cJSON *kdra_claim_allocation(const struct kclaim *c, const char *node, const char *const *devices,
                             const char *const *drivers, const char *const *pools,
                             uint32_t n_devices, const char *pod_name, const char *pod_uid)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *st = cJSON_AddObjectToObject(body, "status");
    cJSON *alloc = cJSON_AddObjectToObject(st, "allocation");
    cJSON *res = cJSON_AddArrayToObject(cJSON_AddObjectToObject(alloc, "devices"), "results");
    uint32_t k = 0;
    for (uint32_t r = 0; r < c->n_reqs; r++)
        for (uint32_t i = 0; i < c->reqs[r].count && k < n_devices; i++, k++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "request", c->reqs[r].name);
            cJSON_AddStringToObject(x, "driver", drivers[k]);
            cJSON_AddStringToObject(x, "pool", pools[k]);
            cJSON_AddStringToObject(x, "device", devices[k]);
            cJSON_AddItemToArray(res, x);
        }
    cJSON *term = cJSON_CreateObject();
    cJSON *mf = cJSON_CreateObject();
    cJSON_AddStringToObject(mf, "key", "metadata.name");
    cJSON_AddStringToObject(mf, "operator", "In");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(mf, "values"), cJSON_CreateString(node));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(term, "matchFields"), mf);
    cJSON_AddItemToArray(
        cJSON_AddArrayToObject(cJSON_AddObjectToObject(alloc, "nodeSelector"), "nodeSelectorTerms"),
        term);
    cJSON *who = cJSON_CreateObject();
    cJSON_AddStringToObject(who, "resource", "pods");
    cJSON_AddStringToObject(who, "name", pod_name);
    cJSON_AddStringToObject(who, "uid", pod_uid ? pod_uid : "");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(st, "reservedFor"), who);
    if (!cJSON_GetArraySize(res) || k != n_devices) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

int kdra_pod_claims(const cJSON *pod, const char *ns, struct kpod *p, struct sched_errbuf *eb)
{
    const cJSON *rcs = get(get(pod, "spec"), "resourceClaims");
    const cJSON *sts = get(get(pod, "status"), "resourceClaimStatuses");
    int n = cJSON_GetArraySize(rcs);
    if (n <= 0)
        return 0;
    if (!(p->claims = calloc((size_t)n, sizeof(*p->claims))))
        return SCHED_ENOMEM;
    for (int i = 0; i < n; i++) {
        const cJSON *rc = cJSON_GetArrayItem(rcs, i);
        const char *cn = cJSON_GetStringValue(get(rc, "name"));
        const char *claim = cJSON_GetStringValue(get(rc, "resourceClaimName"));
        const char *tmpl = cJSON_GetStringValue(get(rc, "resourceClaimTemplateName"));
        if (!cn || !*cn || !claim == !tmpl)
            return sched_fail(eb, SCHED_EINVAL,
                              "pod %s: spec.resourceClaims[%d]: a name and exactly one of "
                              "resourceClaimName and resourceClaimTemplateName",
                              p->key, i);
        if (tmpl) {
            const cJSON *s;
            cJSON_ArrayForEach(s, sts)
            {
                const char *sn = cJSON_GetStringValue(get(s, "name"));
                if (sn && strcmp(sn, cn) == 0)
                    claim = cJSON_GetStringValue(get(s, "resourceClaimName"));
            }
        }
        if (!claim) {
            if (p->claim_wait)
                continue;
            size_t len = strlen(tmpl) + strlen(cn) + 120;
            if (!(p->claim_wait = malloc(len)))
                return SCHED_ENOMEM;
            snprintf(p->claim_wait, len,
                     "waiting for the ResourceClaim of claim \"%s\" (template %s) to be created",
                     cn, tmpl);
            continue;
        }
        size_t len = strlen(ns) + strlen(claim) + 2;
        if (!(p->claims[p->n_claims] = malloc(len)))
            return SCHED_ENOMEM;
        snprintf(p->claims[p->n_claims++], len, "%s/%s", ns, claim);
    }
    return 0;
}
