/* sched/core/device.c: the accelerator's name and unit, and the "no node has it" check
 * (see device.h). The unit lives in static storage, set once by the driver after the config is
 * loaded, read by everyone afterwards. */
#include "sched/core/device.h"

#include <stdio.h>
#include <string.h>

#include "sched/core/res.h"

static char device_unit_word[DEVICE_UNIT_MAX] = "GPU";

const char *device_default_unit(const char *resource)
{
    if (!resource)
        return "GPU";
    if (strncmp(resource, "huawei.com/Ascend", 17) == 0)
        return "NPU";
    if (strcmp(resource, "google.com/tpu") == 0)
        return "TPU";
    if (strncmp(resource, "habana.ai/gaudi", 15) == 0)
        return "HPU";
    return "GPU";
}

int device_configure(const char *resource, const char *unit, struct sched_errbuf *eb)
{
    if (unit && *unit) {
        size_t n = strlen(unit);
        bool ok = n < DEVICE_UNIT_MAX;
        for (size_t i = 0; ok && i < n; i++)
            ok = (unit[i] >= 'a' && unit[i] <= 'z') || (unit[i] >= 'A' && unit[i] <= 'Z');
        if (!ok)
            return sched_fail(eb, SCHED_EINVAL,
                              "device unit \"%.40s\": expected 1 to %d letters (GPU, NPU, TPU)",
                              unit, DEVICE_UNIT_MAX - 1);
    }
    int rc = res_set_device(resource, eb);
    if (rc)
        return rc;
    const char *u = unit && *unit ? unit : device_default_unit(resource);
    memcpy(device_unit_word, u, strlen(u) + 1);
    return 0;
}

const char *device_resource(void)
{
    return res_name(RES_GPU);
}

const char *device_unit(void)
{
    return device_unit_word;
}

bool device_is_default(void)
{
    return strcmp(res_name(RES_GPU), RES_DEFAULT_DEVICE) == 0 && res_kind_count() == 1;
}

static char kind_units[RES_KINDS_MAX][DEVICE_UNIT_MAX];

int device_set_kinds(const char *const *names, const char *const *units, int n,
                     struct sched_errbuf *eb)
{
    int rc = res_set_kinds(names, n, eb);
    for (int k = 0; !rc && k < n; k++) {
        const char *u = units && units[k] && *units[k] ? units[k] : device_default_unit(names[k]);
        snprintf(kind_units[k + 1], DEVICE_UNIT_MAX, "%s", u);
    }
    return rc;
}

const char *device_kind_unit(int k)
{
    if (k == 0)
        return device_unit_word;
    return k > 0 && k < res_kind_count() ? kind_units[k] : "GPU";
}

const char *device_resources(void)
{
    static char buf[RES_KINDS_MAX * 320];
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < res_kind_count() && len < sizeof(buf); k++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", k ? ", " : "",
                                res_name(res_kind_res(k)));
    return buf;
}

/* Resources a device could be: extended resources other than storage and huge pages. */
static bool could_be_device(int r)
{
    const char *n = res_name(r);
    return r >= RES_N_WELLKNOWN && strcmp(n, "ephemeral-storage") != 0 &&
           strncmp(n, "hugepages-", 10) != 0 && strncmp(n, "attachable-volumes-", 19) != 0;
}

bool device_missing(const struct cluster *c, char *buf, size_t cap)
{
    if (!c || c->n_nodes == 0 || !buf || cap == 0)
        return false;
    bool seen[RES_MAX] = {false};
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        if (c->nodes[i].alloc.v[RES_GPU] > 0)
            return false;
        for (int r = 0; r < res_count(); r++)
            seen[r] = seen[r] || c->nodes[i].alloc.v[r] > 0;
    }
    size_t len = (size_t)snprintf(buf, cap,
                                  "no node of %u has the device resource %s; extended resources "
                                  "the nodes have: ",
                                  c->n_nodes, device_resources());
    int found = 0;
    for (int r = 0; r < res_count() && len < cap; r++) {
        if (!seen[r] || !could_be_device(r))
            continue;
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", found ? ", " : "", res_name(r));
        found++;
    }
    if (len < cap)
        snprintf(buf + len, cap - len, "%s",
                 found ? " (name the accelerator in the config: device.resource)"
                       : "none (no node has any accelerator)");
    return true;
}
