/* sched/k8s/slice.c: ResourceSlices into the DRA inventory (see slice.h). */
#include "sched/k8s/slice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/device.h"
#include "sched/core/quantity.h"

#define K8S_SLICE_MAX_DEVICES 128 /* resource/v1 ResourceSliceMaxDevices */

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

/* A device's attribute "type" (unqualified, or qualified by its driver's domain) as a string,
 * NULL when absent ("" when it is not a string: no type a rule names). */
static const char *type_of(const cJSON *dev, const char *driver)
{
    const cJSON *attrs = get(dev, "attributes"), *t = get(attrs, "type");
    char q[300];
    if (!t && snprintf(q, sizeof(q), "%s/type", driver) < (int)sizeof(q))
        t = get(attrs, q);
    const char *v = t ? cJSON_GetStringValue(get(t, "string")) : NULL;
    return v ? v : t ? "" : NULL;
}

/* One device's attributes ({int|bool|string|version}; list types are left out) or capacities
 * ({value: quantity}) as CEL values. Names "domain/name" are split (domain copied into dom,
 * K8S_SLICE_MAX_ATTRS x 64 bytes); unqualified names have domain "" (the driver's). 0, SCHED_EINVAL
 * (field named), SCHED_ENOMEM. */
#define K8S_SLICE_MAX_ATTRS 32 /* resource/v1 ResourceSliceMaxAttributesAndCapacitiesPerDevice */
static int device_values(const cJSON *map, bool caps, const char *where, struct cel_attr *out,
                         uint32_t *n, char (*dom)[64], struct sched_errbuf *eb)
{
    const cJSON *a;
    *n = 0;
    cJSON_ArrayForEach(a, map)
    {
        if (*n == K8S_SLICE_MAX_ATTRS)
            return sched_fail(eb, SCHED_EINVAL, "%s: more than %d entries", where,
                              K8S_SLICE_MAX_ATTRS);
        struct cel_attr *v = &out[*n];
        memset(v, 0, sizeof(*v));
        const char *slash = strrchr(a->string, '/');
        size_t dl = slash ? (size_t)(slash - a->string) : 0;
        if (dl >= sizeof(dom[0]))
            return sched_fail(eb, SCHED_EINVAL, "%s: %s: domain too long", where, a->string);
        memcpy(dom[*n], a->string, dl);
        dom[*n][dl] = 0;
        v->domain = dom[*n];
        v->name = slash ? slash + 1 : a->string;
        const cJSON *x;
        if (caps) {
            const char *q = cJSON_GetStringValue(get(a, "value"));
            struct sched_errbuf qe;
            if (!q || qty_parse(q, 3, &v->i, &qe) != 0)
                return sched_fail(eb, SCHED_EINVAL, "%s.%s.value: not a quantity", where,
                                  a->string);
            v->type = CEL_QTY;
        } else if ((x = get(a, "string")) && cJSON_IsString(x)) {
            v->type = CEL_STR;
            v->s = x->valuestring;
        } else if ((x = get(a, "version")) && cJSON_IsString(x)) {
            v->type = CEL_VER;
            v->s = x->valuestring;
        } else if ((x = get(a, "int")) && cJSON_IsNumber(x)) {
            v->type = CEL_INT;
            v->i = (int64_t)x->valuedouble;
        } else if ((x = get(a, "bool")) && cJSON_IsBool(x)) {
            v->type = CEL_BOOL;
            v->b = cJSON_IsTrue(x);
        } else {
            continue; /* a list type (ints, strings, ...): not read */
        }
        (*n)++;
    }
    return 0;
}

static int put(struct dra_inv *inv, const cJSON *slice, const char *want_driver, const char *type,
               struct sched_errbuf *eb);

int k8s_slice_put(struct dra_inv *inv, const cJSON *slice, struct sched_errbuf *eb)
{
    return put(inv, slice, device_dra()->driver, NULL, eb);
}

int k8s_slice_put_type(struct dra_inv *inv, const cJSON *slice, const char *driver,
                       const char *type, struct sched_errbuf *eb)
{
    return put(inv, slice, driver, type, eb);
}

int k8s_slice_typed_event(struct dra_inv *inv, const cJSON *slice, bool deleted, const char *driver,
                          const char *type)
{
    const char *name = cJSON_GetStringValue(get(get(slice, "metadata"), "name"));
    const char *drv = cJSON_GetStringValue(get(get(slice, "spec"), "driver"));
    if (!name)
        return 0;
    if (deleted || !driver || !drv || strcmp(drv, driver) != 0) {
        dra_inv_remove(inv, name);
        return 0;
    }
    struct sched_errbuf eb;
    int rc = put(inv, slice, driver, type, &eb);
    if (rc == SCHED_EINVAL)
        dra_inv_remove(inv, name);
    return rc == SCHED_EINVAL ? 0 : rc;
}

/* The slice into inv, its devices those of want_driver (NULL: none) that are whole
 * accelerators (type NULL: device_dra_whole) or whose attribute "type" is `type`. */
static int put(struct dra_inv *inv, const cJSON *slice, const char *want_driver, const char *type,
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
    if (n > K8S_SLICE_MAX_DEVICES)
        return sched_fail(eb, SCHED_EINVAL,
                          "resourceslice %s: spec.devices: %d devices, at most %d", name, n,
                          K8S_SLICE_MAX_DEVICES);
    const char *names[K8S_SLICE_MAX_DEVICES];
    struct cel_device *info = calloc(K8S_SLICE_MAX_DEVICES, sizeof(*info));
    struct cel_attr(*vals)[2][K8S_SLICE_MAX_ATTRS] = calloc(K8S_SLICE_MAX_DEVICES, sizeof(*vals));
    char(*doms)[2][K8S_SLICE_MAX_ATTRS][64] = calloc(K8S_SLICE_MAX_DEVICES, sizeof(*doms));
    uint32_t k = 0;
    int rc = info && vals && doms ? 0 : SCHED_ENOMEM;
    bool driver_ok = want_driver && strcmp(driver, want_driver) == 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        const cJSON *dev = cJSON_GetArrayItem(devs, i);
        const char *dn = cJSON_GetStringValue(get(dev, "name"));
        if (!dn || !*dn) {
            rc = sched_fail(eb, SCHED_EINVAL, "resourceslice %s: spec.devices[%d].name: missing",
                            name, i);
            break;
        }
        const char *ty = driver_ok ? type_of(dev, driver) : NULL;
        if (!driver_ok || (type ? !ty || strcmp(ty, type) != 0 : !device_dra_whole(NULL, ty)))
            continue;
        if (type && cJSON_GetArraySize(get(dev, "consumesCounters")) > 0)
            continue; /* a partitionable device (KEP-4815: dynamic MIG) shares its GPU's counters
                         with the others: not a device of its own */
        char where[300];
        snprintf(where, sizeof(where), "resourceslice %s: spec.devices[%d].attributes", name, i);
        rc = device_values(get(dev, "attributes"), false, where, vals[k][0], &info[k].n_attrs,
                           doms[k][0], eb);
        snprintf(where, sizeof(where), "resourceslice %s: spec.devices[%d].capacity", name, i);
        if (rc == 0)
            rc = device_values(get(dev, "capacity"), true, where, vals[k][1], &info[k].n_caps,
                               doms[k][1], eb);
        info[k].driver = driver;
        info[k].attrs = vals[k][0];
        info[k].caps = vals[k][1];
        if (rc == 0 && !type && !device_dra_whole(&info[k], ty))
            continue; /* the accelerator's selector */
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
                          .info = info,
                          .n_gpus = k};
    if (rc == 0)
        rc = dra_inv_put(inv, &s);
    free(info);
    free(vals);
    free(doms);
    return rc;
}
