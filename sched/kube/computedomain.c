/* sched/kube/computedomain.c: ComputeDomains and IMEX channels (see computedomain.h). */
#include "sched/kube/computedomain.h"

#include <stdlib.h>
#include <string.h>

#include "sched/core/annot.h"
#include "sched/core/dra.h"
#include "sched/core/log.h"
#include "sched/core/strmap.h"
#include "sched/k8s/slice.h"
#include "sched/kube/claims.h"

struct kcd {
    struct strmap by_uid;     /* metadata.uid -> "namespace/name" (malloc'd) */
    struct dra_inv *channels; /* channel devices of compute-domain.nvidia.com slices */
};

struct kcd *kcd_new(void)
{
    struct kcd *cd = calloc(1, sizeof(*cd));
    if (!cd)
        return NULL;
    strmap_init(&cd->by_uid);
    if (!(cd->channels = dra_inv_new())) {
        free(cd);
        return NULL;
    }
    return cd;
}

void kcd_free(struct kcd *cd)
{
    if (!cd)
        return;
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&cd->by_uid, &i, &k, &v);)
        free(v);
    strmap_fini(&cd->by_uid);
    dra_inv_free(cd->channels);
    free(cd);
}

int kcd_event(struct kcd *cd, const cJSON *obj, bool deleted)
{
    const char *uid = kobj_str(obj, "metadata.uid");
    const char *ns = kobj_str(obj, "metadata.namespace");
    const char *name = kobj_str(obj, "metadata.name");
    char key[KOBJ_KEY_MAX];
    if (!uid || !*uid || !name || kobj_key(ns, name, key, sizeof(key)) != 0) {
        LOG_WARN("kube", "computedomain without a valid metadata.uid and name skipped");
        return 0;
    }
    if (deleted) {
        free(strmap_del(&cd->by_uid, uid));
        return 0;
    }
    char *val = strdup(key);
    void *old = NULL;
    if (!val || strmap_put(&cd->by_uid, uid, val, &old) != 0) {
        free(val);
        return SCHED_ENOMEM;
    }
    free(old);
    return 0;
}

int kcd_slice_event(struct kcd *cd, const cJSON *obj, bool deleted)
{
    return k8s_slice_typed_event(cd->channels, obj, deleted, KCD_DRIVER, "channel");
}

const char *kcd_name(const struct kcd *cd, const char *uid)
{
    return uid ? strmap_get(&cd->by_uid, uid) : NULL;
}

bool kcd_in_namespace(const struct kcd *cd, const char *uid, const char *ns)
{
    const char *key = kcd_name(cd, uid);
    size_t n = ns ? strlen(ns) : 0;
    return key && n && strncmp(key, ns, n) == 0 && key[n] == '/';
}

int kcd_res(void)
{
    static int id = -1;
    struct sched_errbuf eb;
    if (id < 0 && res_intern(KCD_RESOURCE, &id, &eb) != 0) {
        static bool said;
        if (!said)
            LOG_ERROR("kube", "ComputeDomain channels not counted: error=%s", eb.msg);
        said = true;
        id = -1;
    }
    return id;
}

int kcd_apply(const struct kcd *cd, struct cluster *c)
{
    if (!cd || dra_inv_n_slices(cd->channels) == 0)
        return 0;
    int r = kcd_res();
    if (r < 0)
        return -1;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        struct node *nd = &c->nodes[i];
        int64_t n = 0;
        while (dra_inv_device(cd->channels, nd->name, (uint32_t)n, NULL, NULL, NULL))
            n++;
        nd->alloc.v[r] = n;
    }
    return 0;
}

const char *kcd_channel(const struct kcd *cd, const char *node, const char **driver,
                        const char **pool)
{
    return dra_inv_device(cd->channels, node, 0, driver, pool, NULL);
}

int kcd_class(const char *device_class)
{
    if (!device_class)
        return 0;
    if (strcmp(device_class, KCD_CHANNEL_CLASS) == 0)
        return 1;
    return strcmp(device_class, KCD_DAEMON_CLASS) == 0 ? 2 : 0;
}

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

const char *kcd_config_domain(const cJSON *devices)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, get(devices, "config"))
    {
        const cJSON *op = get(e, "opaque");
        const char *drv = cJSON_GetStringValue(get(op, "driver"));
        const char *dom = cJSON_GetStringValue(get(get(op, "parameters"), "domainID"));
        if (drv && strcmp(drv, KCD_DRIVER) == 0 && dom && *dom)
            return dom;
    }
    return NULL;
}

int kcd_gang(const struct kclaims *c, const struct topo *t, struct kpod *const *members, uint32_t n,
             struct gang *g, struct arena *a, const char **why)
{
    const char *domain = NULL;
    for (uint32_t i = 0; i < n && !domain; i++)
        for (uint32_t k = 0; k < members[i]->n_claims && !domain; k++) {
            const struct kclaim *x = kclaims_get(c, members[i]->claims[k]);
            if (x && x->channels)
                domain = x->domain ? x->domain : "";
        }
    if (!domain)
        return 0;
    int l = annot_level_by_label(t, TOPO_LABEL_CLIQUE);
    if (l < 0) {
        const char *name = kcd_name(kclaims_cd(c), domain);
        *why = arena_printf(a,
                            "ComputeDomain %s: its pods must share one NVLink clique, and no "
                            "topology level of the configuration uses the node label %s",
                            name ? name : domain, TOPO_LABEL_CLIQUE);
        return SCHED_EINVAL;
    }
    if (g->topo_required < l) /* one rule: the core's required level (place.c) */
        g->topo_required = (int8_t)l;
    return 0;
}
