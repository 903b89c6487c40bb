/* config/model.c: the configuration model: its memory and its lookups (see model.h).
 *
 * Owns: the pool every loaded config lives in (config_pool_*, config_free) and the pure
 * accessors the core and the drivers call (queue, flavor and LocalQueue lookups, namespace
 * admission, scoring profiles, quotas). Nothing here reads YAML: the loader (config/load*.c)
 * builds the struct and its lookup tables, and the core links this file without libyaml.
 * Must not touch: the loader, the scheduler state.
 */
#include "config/model.h"

#include <stdlib.h>
#include <string.h>

#include "config/internal.h"
#include "sched/core/device.h"

struct config_pool *config_pool_new(void)
{
    return calloc(1, sizeof(struct config_pool));
}

void config_pool_free(struct config_pool *p)
{
    if (!p)
        return;
    struct pool_chunk *ch = p->head;
    while (ch) {
        struct pool_chunk *next = ch->next;
        free(ch);
        ch = next;
    }
    free(p);
}

/* Zeroed, 16-byte aligned; NULL on out of memory. */
void *config_pool_alloc(struct config_pool *p, size_t size)
{
    if (size > SIZE_MAX / 4)
        return NULL;
    size = size ? (size + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1) : POOL_ALIGN;
    struct pool_chunk *ch = p->head;
    if (!ch || ch->cap - ch->used < size) {
        size_t cap = size > POOL_CHUNK ? size : POOL_CHUNK;
        ch = malloc(POOL_HDR + cap);
        if (!ch)
            return NULL;
        ch->cap = cap;
        ch->used = 0;
        if (size > POOL_CHUNK / 4 && p->head) {
            /* a big block gets a chunk of its own; keep filling the current one */
            ch->next = p->head->next;
            p->head->next = ch;
        } else {
            ch->next = p->head;
            p->head = ch;
        }
    }
    void *r = (char *)ch + POOL_HDR + ch->used;
    ch->used += size;
    memset(r, 0, size);
    return r;
}

void *config_pool_array(struct config_pool *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / 4 / size)
        return NULL;
    return config_pool_alloc(p, n * size);
}

char *config_pool_strndup(struct config_pool *p, const char *s, size_t len)
{
    char *d = config_pool_alloc(p, len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

void config_free(struct config *c)
{
    if (c)
        config_pool_free(c->pool);
}

/* ---- lookups ----------------------------------------------------------------------------------
 */

static int idx_find(const struct name_idx *t, uint32_t n, const char *name)
{
    if (!t || !name)
        return -1;
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(t[mid].name, name);
        if (cmp == 0)
            return (int)t[mid].idx;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int config_apply_device(const struct config *c, struct sched_errbuf *eb)
{
    if (!c)
        return 0;
    int rc = device_configure(c->device, c->device_unit, eb);
    if (rc)
        return sched_fail(eb, rc, "%s: device: %s", c->path, eb->msg);
    if (c->dra.set) {
        struct device_dra d = {.driver = c->dra.driver,
                               .device_class = c->dra.device_class,
                               .type = c->dra.type,
                               .untyped = c->dra.untyped,
                               .select = c->dra.selector};
        if ((rc = device_set_dra(&d, eb)) != 0)
            return sched_fail(eb, rc, "%s: device.%s", c->path, eb->msg);
    }
    const char *names[RES_KINDS_MAX], *units[RES_KINDS_MAX];
    for (uint32_t k = 0; k < c->n_kinds && k < RES_KINDS_MAX; k++) {
        names[k] = c->kinds[k].resource;
        units[k] = c->kinds[k].unit;
    }
    rc = device_set_kinds(names, units, (int)c->n_kinds, eb);
    if (rc)
        return sched_fail(eb, rc, "%s: devices: %s", c->path, eb->msg);
    return 0;
}

int config_device_kind(const struct config *c, const char *name)
{
    if (!c || !name)
        return -1;
    if (strcmp(name, c->device) == 0)
        return 0;
    for (uint32_t k = 0; k < c->n_kinds; k++)
        if (strcmp(name, c->kinds[k].resource) == 0)
            return (int)k + 1;
    return -1;
}

int config_qmap_class(const struct config *c, const char *device_class)
{
    for (uint32_t i = 0; c && device_class && i < c->n_qmaps; i++)
        if (c->qmaps[i].device_class && strcmp(c->qmaps[i].device_class, device_class) == 0)
            return c->qmaps[i].source;
    return -1;
}

int config_queue_index(const struct config *c, const char *name)
{
    return c ? idx_find(c->pool->queue_idx, c->n_queues, name) : -1;
}

int config_local_queue(const struct config *c, const char *ns, const char *name)
{
    if (!c || !ns || !name)
        return -1;
    size_t nl = strlen(ns);
    for (uint32_t q = 0; q < c->n_queues; q++)
        for (uint32_t k = 0; k < c->queues[q].n_local_queues; k++) {
            const char *lq = c->queues[q].local_queues[k];
            if (strncmp(lq, ns, nl) == 0 && lq[nl] == '/' && strcmp(lq + nl + 1, name) == 0)
                return (int)q;
        }
    return config_queue_index(c, name);
}

bool config_queue_admits(const struct config *c, uint32_t q, const char *ns)
{
    if (!c || q >= c->n_queues || c->queues[q].n_namespaces == 0)
        return true;
    for (uint32_t k = 0; k < c->queues[q].n_namespaces; k++)
        if (ns && strcmp(c->queues[q].namespaces[k], ns) == 0)
            return true;
    return false;
}

int config_flavor_index(const struct config *c, const char *name)
{
    return c ? idx_find(c->pool->flavor_idx, c->n_flavors, name) : -1;
}

int config_profile_apply(const struct config *c, uint32_t queue, const char *name, struct gang *g)
{
    int prof = c && queue < c->n_queues ? c->queues[queue].profile : -1;
    if (name) {
        prof = -1;
        for (uint32_t k = 0; c && k < c->n_profiles; k++)
            if (strcmp(c->profiles[k].name, name) == 0)
                prof = (int)k;
        if (prof < 0)
            return SCHED_ENOENT;
    }
    if (prof >= 0) { /* the profile's weights score candidates; it spreads (inference) when its
                        spread weight is above its binpack weight, else it packs */
        g->weights = c->profiles[prof].weights;
        g->spread = c->profiles[prof].weights[CONFIG_SCORE_SPREAD] >
                    c->profiles[prof].weights[CONFIG_SCORE_BINPACK];
    }
    return 0;
}

const struct config_quota *config_quota_get(const struct config *c,
                                            const struct config_quota_set *qs, uint32_t f, int r)
{
    if (!c || !qs || !qs->quota || !qs->has || f >= c->n_flavors || r < 0 || r >= RES_MAX)
        return NULL;
    size_t cell = (size_t)f * RES_MAX + (size_t)r;
    return qs->has[cell] ? &qs->quota[cell] : NULL;
}

double config_res_weight(const struct config *c, uint32_t f, int r)
{
    if (!c || f >= c->n_flavors)
        return 1.0;
    const struct config_flavor *fl = &c->flavors[f];
    for (uint32_t i = 0; i < fl->n_weights; i++)
        if (fl->weights[i].res == r)
            return fl->weights[i].weight;
    return 1.0;
}
