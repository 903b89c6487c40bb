/* sched/core/device.c: the accelerator's name and unit, and the "no node has it" check
 * (see device.h). The unit lives in static storage, set once by the driver after the config is
 * loaded, read by everyone afterwards. */
#include "sched/core/device.h"

#include <stdio.h>
#include <string.h>

#include "sched/core/res.h"

static char device_unit_word[DEVICE_UNIT_MAX] = "GPU";

/* ---- DRA identity ------------------------------------------------------------------------- */

#define DRA_NAME_MAX   254 /* a DNS subdomain (driver, DeviceClass) with its NUL */
#define DRA_SELECT_MAX 1024

static char dra_driver[DRA_NAME_MAX] = "gpu.nvidia.com", dra_class[DRA_NAME_MAX] = "gpu.nvidia.com",
            dra_type[DRA_NAME_MAX] = "gpu", dra_select[DRA_SELECT_MAX];
static struct device_dra dra_now = {
    .driver = dra_driver, .device_class = dra_class, .type = dra_type, .untyped = true};
static struct cel_prog *dra_prog;

struct device_dra device_dra_default(const char *resource)
{
    if (!resource || strcmp(resource, "nvidia.com/gpu") == 0) /* NVIDIA's DRA driver */
        return (struct device_dra){.driver = "gpu.nvidia.com",
                                   .device_class = "gpu.nvidia.com",
                                   .type = "gpu",
                                   .untyped = true};
    if (strcmp(resource, "amd.com/gpu") == 0) /* ROCm k8s-gpu-dra-driver: full GPUs */
        return (struct device_dra){
            .driver = "gpu.amd.com", .device_class = "gpu.amd.com", .type = "amdgpu"};
    return (struct device_dra){0};
}

const struct device_dra *device_dra(void)
{
    return &dra_now;
}

const char *device_dra_class(void)
{
    return dra_now.driver ? dra_now.device_class : NULL;
}

static size_t len_of(const char *s)
{
    return s ? strlen(s) : 0;
}

/* Copies s (NULL: "") into buf, whose size the caller checked. */
static void copy_into(char *buf, const char *s)
{
    size_t n = len_of(s);
    memcpy(buf, s ? s : "", n + 1);
}

int device_set_dra(const struct device_dra *d, struct sched_errbuf *eb)
{
    const char *cls = d->device_class && *d->device_class ? d->device_class : d->driver;
    if (len_of(d->driver) >= DRA_NAME_MAX || len_of(cls) >= DRA_NAME_MAX ||
        len_of(d->type) >= DRA_NAME_MAX)
        return sched_fail(eb, SCHED_EINVAL, "dra: a name longer than %d bytes", DRA_NAME_MAX - 1);
    if (len_of(d->select) >= DRA_SELECT_MAX)
        return sched_fail(eb, SCHED_EINVAL, "dra.selector: longer than %d bytes",
                          DRA_SELECT_MAX - 1);
    struct cel_prog *prog = NULL;
    if (d->select && *d->select) {
        int rc = cel_compile(d->select, &prog, eb);
        if (rc)
            return rc; /* nothing changed */
    }
    copy_into(dra_driver, d->driver);
    copy_into(dra_class, cls);
    copy_into(dra_type, d->type);
    copy_into(dra_select, d->select);
    cel_free(dra_prog);
    dra_prog = prog;
    dra_now = (struct device_dra){.driver = d->driver && *d->driver ? dra_driver : NULL,
                                  .device_class = dra_class,
                                  .type = d->type && *d->type ? dra_type : NULL,
                                  .untyped = d->untyped,
                                  .select = prog ? dra_select : NULL};
    return 0;
}

bool device_dra_whole(const struct cel_device *d, const char *type)
{
    const struct device_dra *x = &dra_now;
    if (!x->driver)
        return false;
    if (x->type && !(type ? strcmp(type, x->type) == 0 : x->untyped))
        return false;
    bool ok = true;
    if (d && dra_prog && cel_eval(dra_prog, d, &ok, NULL) != 0)
        return false;
    return ok;
}

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
    struct device_dra d = device_dra_default(resource);
    return device_set_dra(&d, eb);
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
