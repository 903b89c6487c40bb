/* sched/kube/dra_ext.c: KEP-5004, the accelerator's extended resource backed by DRA devices:
 * which DeviceClass maps it, what a pod's containers ask of it, and the bodies of the special
 * claim and of the pod's status.extendedResourceClaimStatus (see dra.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/device.h"
#include "sched/core/res.h"
#include "sched/kube/dra.h"

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

/* Whether class a is picked before b for one extended resource name (extended/cache.go: the
 * newest creationTimestamp, then the first name). */
static bool before(const struct kdra_class *a, const struct kdra_class *b)
{
    const char *ta = a->created ? a->created : "", *tb = b->created ? b->created : "";
    int c = strcmp(ta, tb);
    return c != 0 ? c > 0 : strcmp(a->name, b->name) < 0;
}

const struct kdra_class *kdra_ext_class(const struct strmap *classes, const char *resource)
{
    const struct kdra_class *best = NULL;
    const char *key;
    void *v;
    for (size_t i = 0; resource && strmap_next(classes, &i, &key, &v);) {
        const struct kdra_class *k = v;
        if (k->ext_name && strcmp(k->ext_name, resource) == 0 && (!best || before(k, best)))
            best = k;
    }
    size_t pl = strlen(KDRA_EXT_IMPLICIT);
    if (!best && resource && strncmp(resource, KDRA_EXT_IMPLICIT, pl) == 0)
        best = strmap_get((struct strmap *)classes, resource + pl);
    return best;
}

/* ---- what a pod's containers ask ------------------------------------------------------------ */

/* The index of `name` among the distinct keys of requests and limits (what defaulting leaves in
 * requests), sorted. */
static uint16_t request_index(const cJSON *req, const cJSON *lim, const char *name)
{
    uint16_t n = 0;
    const cJSON *maps[2] = {req, lim}, *it;
    for (int k = 0; k < 2; k++) {
        const cJSON *m = cJSON_IsObject(maps[k]) ? maps[k] : NULL;
        cJSON_ArrayForEach(it, m)
        {
            if (k == 1 && get(req, it->string))
                continue; /* counted once */
            n += strcmp(it->string, name) < 0;
        }
    }
    return n;
}

int kdra_pod_ext(const cJSON *spec, struct arena *a, const struct kobj_ext_ctr **out,
                 uint32_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    const char *res = device_resource();
    const cJSON *lists[2] = {get(spec, "initContainers"), get(spec, "containers")};
    uint32_t total =
        (uint32_t)cJSON_GetArraySize(lists[0]) + (uint32_t)cJSON_GetArraySize(lists[1]);
    if (total == 0 || total > UINT16_MAX)
        return 0;
    struct kobj_ext_ctr *v = arena_calloc(a, total, sizeof(*v));
    if (!v)
        return SCHED_ENOMEM;
    uint32_t n = 0, idx = 0;
    for (int l = 0; l < 2; l++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, lists[l])
        {
            const cJSON *r = get(c, "resources"), *req = get(r, "requests"),
                        *lim = get(r, "limits");
            const cJSON *q = get(req, res) ? get(req, res) : get(lim, res);
            const char *name = cJSON_GetStringValue(get(c, "name"));
            const char *rp = cJSON_GetStringValue(get(c, "restartPolicy"));
            int64_t count = 0;
            struct sched_errbuf eb;
            if (q && (!name || kobj_quantity(q, RES_GPU, &count, &eb) != 0 || count < 0 ||
                      count > UINT32_MAX))
                return 0; /* unreadable: no mapping (the pod stays off DRA nodes) */
            if (count > 0)
                v[n++] = (struct kobj_ext_ctr){.name = arena_strdup(a, name),
                                               .idx = (uint16_t)idx,
                                               .ridx = request_index(req, lim, res),
                                               .count = (uint32_t)count,
                                               .short_lived =
                                                   l == 0 && !(rp && strcmp(rp, "Always") == 0)};
            if (count > 0 && !v[n - 1].name)
                return SCHED_ENOMEM;
            idx++;
        }
    }
    *out = v;
    *n_out = n;
    return 0;
}

/* ---- the special claim's requests and the pod's mappings ------------------------------------ */

/* What init container i still lacks after the requests of the long-lived containers after it. */
static uint32_t short_extra(const struct kobj_ext_ctr *ctr, uint32_t n, uint32_t i)
{
    uint64_t sum = 0;
    for (uint32_t k = i + 1; k < n && sum < ctr[i].count; k++)
        sum += ctr[k].short_lived ? 0 : ctr[k].count;
    return sum >= ctr[i].count ? 0 : ctr[i].count - (uint32_t)sum;
}

uint64_t kdra_ext_devices(const struct kobj_ext_ctr *ctr, uint32_t n)
{
    uint64_t sum = 0;
    uint32_t max = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = ctr[i].short_lived ? short_extra(ctr, n, i) : 0;
        sum += ctr[i].short_lived ? 0 : ctr[i].count;
        max = x > max ? x : max;
    }
    return sum + max;
}

static cJSON *mapping(const char *ctr, const char *res, const char *req)
{
    cJSON *m = cJSON_CreateObject();
    if (m && cJSON_AddStringToObject(m, "containerName", ctr) &&
        cJSON_AddStringToObject(m, "resourceName", res) &&
        cJSON_AddStringToObject(m, "requestName", req))
        return m;
    cJSON_Delete(m);
    return NULL;
}

static cJSON *request(const char *name, const char *cls, uint32_t count)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *x = cJSON_AddObjectToObject(r, "exactly");
    if (x && cJSON_AddStringToObject(r, "name", name) &&
        cJSON_AddStringToObject(x, "deviceClassName", cls) &&
        cJSON_AddStringToObject(x, "allocationMode", "ExactCount") &&
        cJSON_AddNumberToObject(x, "count", count))
        return r;
    cJSON_Delete(r);
    return NULL;
}

static bool add(cJSON *list, cJSON *item)
{
    if (item && cJSON_AddItemToArray(list, item))
        return true;
    cJSON_Delete(item);
    return false;
}

static int by_name(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    return strcmp(cJSON_GetStringValue(get(x, "name")), cJSON_GetStringValue(get(y, "name")));
}

/* The long-lived containers' requests: one each, named by container and resource index. */
struct ext_req {
    char name[48];
    uint32_t count;
};

cJSON *kdra_ext_requests(const struct kobj_ext_ctr *ctr, uint32_t n, const char *resource,
                         const char *cls, cJSON **mappings, uint32_t *devices)
{
    *devices = 0;
    struct ext_req *own = calloc(n ? n : 1, sizeof(*own)); /* per ctr[] entry */
    cJSON *reqs = cJSON_CreateArray(), *longm = cJSON_CreateArray(), *shortm = cJSON_CreateArray();
    bool ok = own && reqs && longm && shortm;
    for (uint32_t i = 0; i < n && ok; i++) {
        snprintf(own[i].name, sizeof(own[i].name), "container-%u-request-%u", ctr[i].idx,
                 ctr[i].ridx);
        if (ctr[i].short_lived)
            continue;
        own[i].count = ctr[i].count;
        ok = add(longm, mapping(ctr[i].name, resource, own[i].name));
    }
    int32_t max = -1; /* the short-lived request kept: the largest, the first of equals */
    for (uint32_t i = 0; i < n && ok; i++) {
        if (!ctr[i].short_lived)
            continue;
        uint64_t sum = 0; /* the later long-lived containers' requests first */
        for (uint32_t k = i + 1; k < n && sum < ctr[i].count && ok; k++)
            if (!ctr[k].short_lived) {
                sum += own[k].count;
                ok = add(shortm, mapping(ctr[i].name, resource, own[k].name));
            }
        if (sum >= ctr[i].count || !ok)
            continue;
        own[i].count = ctr[i].count - (uint32_t)sum;
        ok = add(shortm, mapping(ctr[i].name, resource, own[i].name));
        if (max < 0 || own[(uint32_t)max].count < own[i].count)
            max = (int32_t)i;
    }
    cJSON *m, *kept = max >= 0 ? shortm : NULL;
    cJSON_ArrayForEach(m, kept) /* every short-lived one maps to the kept request */
    {
        const char *rn = cJSON_GetStringValue(get(m, "requestName"));
        for (uint32_t i = 0; i < n && ok; i++)
            if (ctr[i].short_lived && (int32_t)i != max && strcmp(rn, own[i].name) == 0) {
                ok = cJSON_ReplaceItemInObjectCaseSensitive(
                    m, "requestName", cJSON_CreateString(own[(uint32_t)max].name));
                break; /* rn was the replaced item's */
            }
    }
    for (uint32_t i = 0; i < n && ok; i++)
        if (own[i].count && (!ctr[i].short_lived || (int32_t)i == max)) {
            ok = add(reqs, request(own[i].name, cls, own[i].count));
            *devices += own[i].count;
        }
    uint32_t nr = (uint32_t)cJSON_GetArraySize(reqs);
    cJSON **v = ok && nr ? calloc(nr, sizeof(*v)) : NULL;
    if (v) { /* sorted by name, as upstream */
        for (uint32_t i = 0; i < nr; i++)
            v[i] = cJSON_DetachItemFromArray(reqs, 0);
        qsort(v, nr, sizeof(*v), by_name);
        for (uint32_t i = 0; i < nr; i++)
            cJSON_AddItemToArray(reqs, v[i]);
        free(v);
    }
    cJSON_ArrayForEach(m, shortm) /* long-lived mappings first, then the init containers' */
    {
        cJSON *c = cJSON_Duplicate(m, true);
        ok = ok && add(longm, c);
    }
    cJSON_Delete(shortm);
    free(own);
    if (!ok || (nr && !v)) {
        cJSON_Delete(reqs);
        cJSON_Delete(longm);
        *devices = 0;
        return NULL;
    }
    *mappings = longm;
    return reqs;
}

cJSON *kdra_ext_claim(const char *ns, const char *name, const char *uid, cJSON *reqs)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(body, "metadata");
    cJSON *ann = cJSON_AddObjectToObject(meta, "annotations");
    cJSON *owners = cJSON_AddArrayToObject(meta, "ownerReferences");
    cJSON *fins = cJSON_AddArrayToObject(meta, "finalizers");
    cJSON *own = cJSON_CreateObject();
    if (!add(owners, own))
        own = NULL; /* freed */
    cJSON *devs = cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "spec"), "devices");
    char gen[300];
    snprintf(gen, sizeof(gen), "%s-extended-resources-", name);
    bool ok = ann && own && fins && devs &&
              cJSON_AddStringToObject(body, "apiVersion", "resource.k8s.io/v1") &&
              cJSON_AddStringToObject(body, "kind", "ResourceClaim") &&
              cJSON_AddStringToObject(meta, "generateName", gen) &&
              cJSON_AddStringToObject(meta, "namespace", ns) &&
              cJSON_AddStringToObject(ann, KDRA_EXT_ANNOT, "true") &&
              cJSON_AddStringToObject(own, "apiVersion", "v1") &&
              cJSON_AddStringToObject(own, "kind", "Pod") &&
              cJSON_AddStringToObject(own, "name", name) &&
              cJSON_AddStringToObject(own, "uid", uid) && cJSON_AddTrueToObject(own, "controller");
    ok = ok && add(fins, cJSON_CreateString(KDRA_FINALIZER));
    if (!ok || !cJSON_AddItemToObject(devs, "requests", reqs)) {
        cJSON_Delete(reqs);
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

cJSON *kdra_ext_pod_status(const char *claim, cJSON *mappings)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *st = cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "status"),
                                        "extendedResourceClaimStatus");
    if (!st || !cJSON_AddStringToObject(st, "resourceClaimName", claim) ||
        !cJSON_AddItemToObject(st, "requestMappings", mappings)) {
        cJSON_Delete(mappings);
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}

cJSON *kdra_claim_unprotect(void)
{
    cJSON *body = cJSON_CreateObject();
    cJSON *del = cJSON_AddArrayToObject(cJSON_AddObjectToObject(body, "metadata"),
                                        "$deleteFromPrimitiveList/finalizers");
    if (!del || !add(del, cJSON_CreateString(KDRA_FINALIZER))) {
        cJSON_Delete(body);
        return NULL;
    }
    return body;
}
