/* sched/core/dra.c: DRA GPU inventory (see dra.h). */
#include "sched/core/dra.h"

#include <stdlib.h>
#include <string.h>

#include "sched/core/strmap.h"

struct dra_rec {
    char *name, *node, *driver, *pool;
    int64_t generation;
    uint32_t slice_count;
    char **gpus;
    uint32_t n_gpus;
};

struct dra_inv {
    struct strmap slices; /* name -> struct dra_rec* */
};

struct dra_inv *dra_inv_new(void)
{
    struct dra_inv *inv = calloc(1, sizeof(*inv));
    if (inv)
        strmap_init(&inv->slices);
    return inv;
}

static void rec_free(struct dra_rec *r)
{
    if (!r)
        return;
    for (uint32_t i = 0; i < r->n_gpus; i++)
        free(r->gpus[i]);
    free(r->gpus);
    free(r->name);
    free(r->node);
    free(r->driver);
    free(r->pool);
    free(r);
}

void dra_inv_free(struct dra_inv *inv)
{
    if (!inv)
        return;
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
    return strcmp(*(char *const *)a, *(char *const *)b);
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
    for (uint32_t i = 0; ok && i < s->n_gpus; i++)
        ok = (r->gpus[r->n_gpus++] = dup(s->gpus[i])) != NULL;
    void *old = NULL;
    if (!ok || strmap_put(&inv->slices, r->name, r, &old) != 0) {
        rec_free(r);
        return SCHED_ENOMEM;
    }
    qsort(r->gpus, r->n_gpus, sizeof(*r->gpus), cmp_name);
    rec_free(old);
    return 0;
}

void dra_inv_remove(struct dra_inv *inv, const char *name)
{
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
    for (uint32_t i = 0; rc == 0 && i < c->n_nodes; i++) {
        struct node *nd = &c->nodes[i];
        uintptr_t n = (uintptr_t)strmap_get(&per_node, nd->name);
        if (n == 0 || nd->alloc.v[RES_GPU] > 0)
            continue;
        nd->alloc.v[RES_GPU] = (int64_t)(n > NODE_MAX_GPUS ? NODE_MAX_GPUS : n);
        got++;
    }
    strmap_fini(&per_node);
    pools_free(&pools);
    return rc ? -1 : got;
}

/* The device names of one node's counted slices in (slice name, device name) order. */
const char *dra_inv_device(const struct dra_inv *inv, const char *node, uint32_t index,
                           const char **driver, const char **pool)
{
    if (!inv || !node)
        return NULL;
    struct strmap pools;
    strmap_init(&pools);
    const char *found = NULL;
    if (pool_states(inv, &pools) == 0) {
        /* slices of the node in name order, so that indices are stable */
        const struct dra_rec *best = NULL;
        uint32_t base = 0;
        for (;;) {
            const struct dra_rec *next = NULL;
            const char *k;
            void *v;
            for (size_t i = 0; strmap_next((struct strmap *)&inv->slices, &i, &k, &v);) {
                const struct dra_rec *r = v;
                if (!counts(r, &pools) || strcmp(r->node, node) != 0)
                    continue;
                if ((!best || strcmp(r->name, best->name) > 0) &&
                    (!next || strcmp(r->name, next->name) < 0))
                    next = r;
            }
            if (!next)
                break;
            if (index < base + next->n_gpus) {
                found = next->gpus[index - base];
                if (driver)
                    *driver = next->driver;
                if (pool)
                    *pool = next->pool;
                break;
            }
            base += next->n_gpus;
            best = next;
        }
    }
    pools_free(&pools);
    return found;
}
