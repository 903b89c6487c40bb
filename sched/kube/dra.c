/* sched/kube/dra.c: ResourceSlices into the DRA inventory (see dra.h). */
#include "sched/kube/dra.h"

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
