/* sched/core/dra.c: DRA GPU inventory (see dra.h). */
#include "sched/core/dra.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/device.h"
#include "sched/core/res.h"
#include "sched/core/strmap.h"

struct dra_dev {
    char *name;
    struct cel_device info; /* attrs and caps owned (strings too); driver = the record's */
};

struct dra_rec {
    char *name, *node, *driver, *pool;
    int64_t generation;
    uint32_t slice_count;
    struct dra_dev *gpus; /* sorted by name */
    uint32_t n_gpus;
};

/* A node's counted slices in name order (the index behind dra_inv_device). */
struct node_slices {
    const struct dra_rec **recs;
    uint32_t n;
};

struct dra_inv {
    struct strmap slices;  /* name -> struct dra_rec* */
    struct strmap by_node; /* node -> struct node_slices*, built on demand; empty when stale */
    bool indexed;
    int class_res; /* dra_inv_set_class_res, -1 none */
};

struct dra_inv *dra_inv_new(void)
{
    struct dra_inv *inv = calloc(1, sizeof(*inv));
    if (inv) {
        strmap_init(&inv->slices);
        strmap_init(&inv->by_node);
        inv->class_res = -1;
    }
    return inv;
}

void dra_inv_set_class_res(struct dra_inv *inv, int res)
{
    if (inv)
        inv->class_res = res >= 0 && res < RES_MAX && res != RES_GPU ? res : -1;
}

static void rec_free(struct dra_rec *r)
{
    if (!r)
        return;
    for (uint32_t i = 0; r->gpus && i < r->n_gpus; i++) {
        struct dra_dev *g = &r->gpus[i];
        for (int pass = 0; pass < 2; pass++) {
            struct cel_attr *v = (struct cel_attr *)(pass ? g->info.caps : g->info.attrs);
            uint32_t n = pass ? g->info.n_caps : g->info.n_attrs;
            for (uint32_t k = 0; v && k < n; k++) {
                free((char *)v[k].domain);
                free((char *)v[k].name);
                free((char *)v[k].s);
            }
            free(v);
        }
        free(g->name);
    }
    free(r->gpus);
    free(r->name);
    free(r->node);
    free(r->driver);
    free(r->pool);
    free(r);
}

static void index_drop(struct dra_inv *inv)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&inv->by_node, &i, &k, &v);) {
        struct node_slices *ns = v;
        free(ns->recs);
        free(ns);
    }
    strmap_fini(&inv->by_node);
    strmap_init(&inv->by_node);
    inv->indexed = false;
}

void dra_inv_free(struct dra_inv *inv)
{
    if (!inv)
        return;
    index_drop(inv);
    strmap_fini(&inv->by_node);
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&inv->slices, &i, &k, &v);)
        rec_free(v);
    strmap_fini(&inv->slices);
    free(inv);
}

static char *dup(const char *s)
{
    return strdup(s ? s : "");
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct dra_dev *)a)->name, ((const struct dra_dev *)b)->name);
}

/* Deep copy of attributes or capacities; false out of memory (what was copied is freed with
 * the record: *out and *n_out are set as it goes). */
static bool copy_attrs(const struct cel_attr *src, uint32_t n, const struct cel_attr **out,
                       uint32_t *n_out)
{
    struct cel_attr *v = calloc(n + 1, sizeof(*v));
    *out = v;
    *n_out = 0;
    if (!v)
        return false;
    for (uint32_t k = 0; k < n; k++) {
        v[k] = src[k];
        v[k].domain = dup(src[k].domain);
        v[k].name = dup(src[k].name);
        v[k].s = src[k].s ? strdup(src[k].s) : NULL;
        (*n_out)++;
        if (!v[k].domain || !v[k].name || (src[k].s && !v[k].s))
            return false;
    }
    return true;
}

int dra_inv_put(struct dra_inv *inv, const struct dra_slice *s)
{
    struct dra_rec *r = calloc(1, sizeof(*r));
    if (!r)
        return SCHED_ENOMEM;
    r->name = dup(s->name);
    r->node = s->node ? strdup(s->node) : NULL;
    r->driver = dup(s->driver);
    r->pool = dup(s->pool);
    r->generation = s->generation;
    r->slice_count = s->slice_count ? s->slice_count : 1;
    r->gpus = calloc(s->n_gpus + 1, sizeof(*r->gpus));
    bool ok = r->name && (!s->node || r->node) && r->driver && r->pool && r->gpus;
    for (uint32_t i = 0; ok && i < s->n_gpus; i++) {
        struct dra_dev *g = &r->gpus[r->n_gpus++];
        ok = (g->name = dup(s->gpus[i])) != NULL;
        if (ok && s->info)
            ok = copy_attrs(s->info[i].attrs, s->info[i].n_attrs, &g->info.attrs,
                            &g->info.n_attrs) &&
                 copy_attrs(s->info[i].caps, s->info[i].n_caps, &g->info.caps, &g->info.n_caps);
    }
    for (uint32_t i = 0; ok && i < r->n_gpus; i++)
        r->gpus[i].info.driver = r->driver;
    void *old = NULL;
    if (!ok || strmap_put(&inv->slices, r->name, r, &old) != 0) {
        rec_free(r);
        return SCHED_ENOMEM;
    }
    qsort(r->gpus, r->n_gpus, sizeof(*r->gpus), cmp_name);
    index_drop(inv);
    rec_free(old);
    return 0;
}

void dra_inv_remove(struct dra_inv *inv, const char *name)
{
    index_drop(inv);
    rec_free(strmap_del(&inv->slices, name));
}

uint32_t dra_inv_n_slices(const struct dra_inv *inv)
{
    return inv ? (uint32_t)inv->slices.n : 0;
}

/* Per pool ("driver/pool"): newest generation and how many of its slices are seen. */
struct pool_state {
    int64_t generation;
    uint32_t seen, want;
};

static int pool_key(const struct dra_rec *r, char *buf, size_t n)
{
    size_t a = strlen(r->driver), b = strlen(r->pool);
    if (a + b + 2 > n)
        return -1;
    memcpy(buf, r->driver, a);
    buf[a] = '/';
    memcpy(buf + a + 1, r->pool, b + 1);
    return 0;
}

/* Fills `pools` with the state of every pool; -1 out of memory. */
static int pool_states(const struct dra_inv *inv, struct strmap *pools)
{
    const char *k;
    void *v;
    char key[600];
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; strmap_next((struct strmap *)&inv->slices, &i, &k, &v);) {
            const struct dra_rec *r = v;
            if (pool_key(r, key, sizeof(key)) != 0)
                continue;
            struct pool_state *ps = strmap_get(pools, key);
            if (!ps) {
                if (!(ps = calloc(1, sizeof(*ps))) || strmap_put(pools, key, ps, NULL) != 0) {
                    free(ps);
                    return -1;
                }
                ps->generation = r->generation;
            }
            if (pass == 0 && r->generation > ps->generation)
                ps->generation = r->generation;
            if (pass == 1 && r->generation == ps->generation) {
                ps->seen++;
                ps->want = r->slice_count;
            }
        }
    return 0;
}

static void pools_free(struct strmap *pools)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(pools, &i, &k, &v);)
        free(v);
    strmap_fini(pools);
}

/* The slice counts: newest generation of a complete pool. */
static bool counts(const struct dra_rec *r, struct strmap *pools)
{
    char key[600];
    if (!r->node || pool_key(r, key, sizeof(key)) != 0)
        return false;
    const struct pool_state *ps = strmap_get(pools, key);
    return ps && ps->generation == r->generation && ps->seen >= ps->want;
}

static int node_islands(struct dra_inv *inv, struct cluster *c, struct node *nd);

int dra_inv_apply(const struct dra_inv *inv, struct cluster *c)
{
    if (!inv || inv->slices.n == 0)
        return 0;
    struct strmap pools, per_node;
    strmap_init(&pools);
    strmap_init(&per_node);
    int rc = pool_states(inv, &pools);
    const char *k;
    void *v;
    for (size_t i = 0; rc == 0 && strmap_next((struct strmap *)&inv->slices, &i, &k, &v);) {
        const struct dra_rec *r = v;
        if (!counts(r, &pools) || r->n_gpus == 0)
            continue;
        uintptr_t n = (uintptr_t)strmap_get(&per_node, r->node);
        if (strmap_put(&per_node, r->node, (void *)(n + r->n_gpus), NULL) != 0)
            rc = -1;
    }
    int got = 0;
    c->n_dra_gpus = 0;
    for (uint32_t i = 0; rc == 0 && i < c->n_nodes; i++) {
        struct node *nd = &c->nodes[i];
        uintptr_t n = (uintptr_t)strmap_get(&per_node, nd->name);
        if (n == 0 || nd->alloc.v[RES_GPU] > 0)
            continue;
        nd->alloc.v[RES_GPU] = (int64_t)(n > NODE_MAX_GPUS ? NODE_MAX_GPUS : n);
        nd->dra_gpus = true;
        c->n_dra_gpus += nd->alloc.v[RES_GPU];
        if (inv->class_res >= 0)
            nd->alloc.v[inv->class_res] = nd->alloc.v[RES_GPU];
        if (node_islands((struct dra_inv *)inv, c, nd) != 0) /* the index is a cache */
            rc = -1;
        got++;
    }
    strmap_fini(&per_node);
    pools_free(&pools);
    c->n_dra_nodes = (uint32_t)got;
    return rc ? -1 : got;
}

static int cmp_rec(const void *a, const void *b)
{
    return strcmp((*(const struct dra_rec *const *)a)->name,
                  (*(const struct dra_rec *const *)b)->name);
}

/* Builds by_node: every node's counted slices sorted by name; -1 out of memory. */
static int index_build(struct dra_inv *inv)
{
    struct strmap pools;
    strmap_init(&pools);
    int rc = pool_states(inv, &pools);
    const char *k;
    void *v;
    for (size_t i = 0; rc == 0 && strmap_next(&inv->slices, &i, &k, &v);) {
        const struct dra_rec *r = v;
        if (!counts(r, &pools))
            continue;
        struct node_slices *ns = strmap_get(&inv->by_node, r->node);
        if (!ns &&
            (!(ns = calloc(1, sizeof(*ns))) || strmap_put(&inv->by_node, r->node, ns, NULL) != 0)) {
            free(ns);
            rc = -1;
            break;
        }
        const struct dra_rec **nr = realloc(ns->recs, (ns->n + 1) * sizeof(*nr));
        if (!nr) {
            rc = -1;
            break;
        }
        ns->recs = nr;
        ns->recs[ns->n++] = r;
    }
    for (size_t i = 0; rc == 0 && strmap_next(&inv->by_node, &i, &k, &v);) {
        struct node_slices *ns = v;
        qsort(ns->recs, ns->n, sizeof(*ns->recs), cmp_rec);
    }
    pools_free(&pools);
    if (rc)
        index_drop(inv);
    else
        inv->indexed = true;
    return rc;
}

bool dra_inv_each(const struct dra_inv *inv,
                  bool (*each)(const char *pool, const char *device, const struct cel_device *d,
                               void *ctx),
                  void *ctx)
{
    const char *k;
    void *v;
    for (size_t i = 0; inv && strmap_next(&inv->slices, &i, &k, &v);) {
        const struct dra_rec *r = v;
        for (uint32_t g = 0; g < r->n_gpus; g++)
            if (each(r->pool, r->gpus[g].name, &r->gpus[g].info, ctx))
                return true;
    }
    return false;
}

struct any_ctx {
    bool (*accept)(const struct cel_device *d, const void *ctx);
    const void *ctx;
};

static bool any_each(const char *pool, const char *device, const struct cel_device *d, void *ctx)
{
    (void)pool;
    (void)device;
    const struct any_ctx *a = ctx;
    return a->accept(d, a->ctx);
}

bool dra_inv_any(const struct dra_inv *inv,
                 bool (*accept)(const struct cel_device *d, const void *ctx), const void *ctx)
{
    struct any_ctx a = {.accept = accept, .ctx = ctx};
    return dra_inv_each(inv, any_each, &a);
}

/* GPU `index` of a node: its counted slices in name order, devices in name order. */
const char *dra_inv_device(const struct dra_inv *inv, const char *node, uint32_t index,
                           const char **driver, const char **pool, const struct cel_device **info)
{
    if (!inv || !node)
        return NULL;
    struct dra_inv *w = (struct dra_inv *)inv; /* the index is a cache, not state */
    if (!w->indexed && index_build(w) != 0)
        return NULL;
    const struct node_slices *ns = strmap_get(&w->by_node, node);
    for (uint32_t k = 0; ns && k < ns->n; k++) {
        const struct dra_rec *r = ns->recs[k];
        if (index >= r->n_gpus) {
            index -= r->n_gpus;
            continue;
        }
        if (info)
            *info = &r->gpus[index].info;
        if (driver)
            *driver = r->driver;
        if (pool)
            *pool = r->pool;
        return r->gpus[index].name;
    }
    return NULL;
}

int dra_inv_index(const struct dra_inv *inv, const char *node, const char *pool, const char *device)
{
    if (!inv || !node || !pool || !device)
        return -1;
    struct dra_inv *w = (struct dra_inv *)inv; /* the index is a cache, not state */
    if (!w->indexed && index_build(w) != 0)
        return -1;
    const struct node_slices *ns = strmap_get(&w->by_node, node);
    int base = 0;
    for (uint32_t k = 0; ns && k < ns->n; k++) {
        const struct dra_rec *r = ns->recs[k];
        if (strcmp(r->pool, pool) == 0)
            for (uint32_t g = 0; g < r->n_gpus; g++)
                if (strcmp(r->gpus[g].name, device) == 0)
                    return base + (int)g;
        base += (int)r->n_gpus;
    }
    return -1;
}

/* ---- NVLink partitions as islands (see dra.h) ------------------------------------------------ */

/* N of an int attribute "partition<N>" (unqualified or in the driver's domain), else 0. */
static uint32_t part_size(const struct cel_attr *a, const char *driver)
{
    if (a->type != CEL_INT || (a->domain[0] && strcmp(a->domain, driver) != 0) ||
        strncmp(a->name, "partition", 9) != 0)
        return 0;
    uint32_t n = 0;
    const char *p = a->name + 9;
    for (; *p >= '0' && *p <= '9' && n <= NODE_MAX_GPUS; p++)
        n = n * 10 + (uint32_t)(*p - '0');
    return *p || p == a->name + 9 || n < 2 || n > NODE_MAX_GPUS ? 0 : n;
}

/* Device i's partition<size> id, or -1 when it has none. */
static int64_t part_id(const struct cel_device *d, uint32_t size)
{
    for (uint32_t k = 0; k < d->n_attrs; k++)
        if (part_size(&d->attrs[k], d->driver) == size)
            return d->attrs[k].i;
    return -1;
}

/* Writes the node's islands annotation from its devices' partition<N> attributes: the largest N
 * that every GPU device of the node has, when smaller than the node, groups the devices by its
 * value (GPUs of one partition are NVLink-connected). Nothing when no such N, when the node already
 * has the annotation (the operator's word wins) or when the groups are not a partition of
 * the node's devices. 0, or -1 out of memory. */
static int node_islands(struct dra_inv *inv, struct cluster *c, struct node *nd)
{
    uint32_t n = (uint32_t)nd->alloc.v[RES_GPU];
    const struct cel_device *dev[NODE_MAX_GPUS];
    for (uint32_t i = 0; i < nd->n_annotations; i++)
        if (strcmp(nd->annotations[i].key, ANNOT_GPU_ISLANDS) == 0)
            return 0;
    for (uint32_t i = 0; i < n; i++)
        if (!dra_inv_device(inv, nd->name, i, NULL, NULL, &dev[i]))
            return inv->indexed ? 0 : -1;
    uint32_t best = 0;
    for (uint32_t k = 0; n && k < dev[0]->n_attrs; k++) {
        uint32_t sz = part_size(&dev[0]->attrs[k], dev[0]->driver);
        bool all = sz > best;
        for (uint32_t i = 1; all && i < n; i++)
            all = part_id(dev[i], sz) >= 0;
        if (all)
            best = sz;
    }
    if (best == 0 || best >= n)
        return 0; /* no partitions, or one spanning the node: one island */
    char buf[NODE_MAX_GPUS * 4 + 8];
    size_t at = 0;
    uint32_t done = 0, groups = 0;
    while (done != (n == 32 ? UINT32_MAX : (1u << n) - 1) && groups < NODE_MAX_ISLANDS) {
        uint32_t first = 0;
        while (done >> first & 1)
            first++;
        int64_t id = part_id(dev[first], best);
        for (uint32_t i = first; i < n; i++)
            if (!(done >> i & 1) && part_id(dev[i], best) == id) {
                done |= 1u << i;
                at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%u",
                                       at == 0      ? ""
                                       : i == first ? ";"
                                                    : ",",
                                       i);
            }
        groups++;
    }
    if (done != (n == 32 ? UINT32_MAX : (1u << n) - 1))
        return 0; /* more groups than islands a node may have */
    struct kv *kv = cluster_alloc(c, (nd->n_annotations + 1) * sizeof(*kv));
    const char *v = cluster_strdup(c, buf);
    if (!kv || !v)
        return -1;
    if (nd->n_annotations)
        memcpy(kv, nd->annotations, nd->n_annotations * sizeof(*kv));
    kv[nd->n_annotations] = (struct kv){ANNOT_GPU_ISLANDS, v};
    nd->annotations = kv;
    nd->n_annotations++;
    return 0;
}

/* ---- MIG devices (see dra.h) ----------------------------------------------------------------- */

static bool mig_uncounted;    /* a profile's name could not be interned (dra_mig_uncounted) */
static bool mig_res[RES_MAX]; /* resources dra_mig_res has given (resource ids are global) */

int dra_mig_res(const struct cel_device *d)
{
    const char *prof = NULL;
    for (uint32_t k = 0; d && k < d->n_attrs && !prof; k++) {
        const struct cel_attr *a = &d->attrs[k];
        bool own = !a->domain || !*a->domain || (d->driver && strcmp(a->domain, d->driver) == 0);
        if (a->type == CEL_STR && own && strcmp(a->name, DRA_MIG_PROFILE) == 0)
            prof = a->s;
    }
    if (!prof || !*prof)
        return -1;
    const char *gpu = device_resource(), *slash = strchr(gpu, '/');
    char name[256];
    int len = slash ? (int)(slash - gpu) : 0;
    if (snprintf(name, sizeof(name), "%.*s%smig-%s", len, gpu, slash ? "/" : "", prof) >=
        (int)sizeof(name))
        return -1;
    int id = res_lookup(name);
    struct sched_errbuf eb;
    if (id < 0 && res_intern(name, &id, &eb) != 0) {
        mig_uncounted = true;
        return -1;
    }
    if (id >= 0 && id < RES_MAX && id != RES_GPU)
        mig_res[id] = true;
    return id == RES_GPU ? -1 : id;
}

bool dra_res_mig(int r)
{
    return r >= 0 && r < RES_MAX && mig_res[r];
}

bool dra_mig_uncounted(void)
{
    return mig_uncounted;
}

int dra_inv_apply_mig(const struct dra_inv *inv, struct cluster *c)
{
    int nodes = 0;
    c->n_dra_mig_nodes = 0;
    for (uint32_t i = 0; inv && i < c->n_nodes; i++) {
        struct node *nd = &c->nodes[i];
        int64_t count[RES_MAX] = {0};
        const struct cel_device *info;
        uint32_t g = 0;
        for (; dra_inv_device(inv, nd->name, g, NULL, NULL, &info); g++) {
            int r = dra_mig_res(info);
            if (r >= 0 && r < RES_MAX)
                count[r]++;
        }
        nodes += g > 0;
        bool from_dra = false;
        for (int r = 0; r < RES_MAX; r++)
            if (count[r] > 0 && nd->alloc.v[r] == 0) {
                nd->alloc.v[r] = count[r];
                from_dra = true;
            }
        nd->dra_mig = from_dra;
        c->n_dra_mig_nodes += from_dra;
    }
    return nodes;
}
