/* sched/sim/nodegen.c: the "hgx:N,nvl72:N,pcie:N" cluster generator (nodes_generate, see
 * nodes.h and docs/simulator.md).
 *
 * Owns: naming, labelling and sizing generated nodes and their topology domains.
 * Must not touch: scheduling state, cluster_finalize() (callers finalize). On error every node
 * added by the failing call is removed again.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/model.h"
#include "sched/core/res.h"
#include "sched/sim/nodes.h"

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* ---- generator ------------------------------------------------------------------------------- */

#define GEN_MAX_COUNT       100000
#define GEN_NODES_PER_RACK  8
#define GEN_RACKS_PER_BLOCK 4
#define GEN_BLOCKS_PER_ZONE 32
#define GEN_NVL72_NODES     18
#define GEN_CLUSTER_UUID    "5f0c2b9e-7d41-4a63-9e8a-1c2d3b4a5f60"

enum gen_kind { GEN_HGX = 0, GEN_NVL72, GEN_PCIE, GEN_N_KINDS };

static const char *const gen_kind_names[GEN_N_KINDS] = {"hgx", "nvl72", "pcie"};

struct gen {
    struct cluster *c;
    uint32_t next[GEN_N_KINDS]; /* next node (hgx, pcie) or rack (nvl72) index per kind */
    /* shared strings, copied once per call */
    const char *k_host, *k_zone, *k_block, *k_rack, *k_clique, *k_product, *k_count, *k_mem;
    const char *k_islands, *v_islands;
    /* last domain strings handed out, reused while the index stays the same */
    const char *zone, *block, *rack;
    uint32_t zone_i, block_i, rack_i;
    int cache_kind;
};

static const char *gen_dup(struct gen *g, const char *s)
{
    return cluster_strdup(g->c, s);
}

static const char *gen_fmt(struct gen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static const char *gen_fmt(struct gen *g, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return cluster_strdup(g->c, buf);
}

/* Zone names: zone-a .. zone-z, zone-aa, zone-ab, ... */
static const char *gen_zone_name(struct gen *g, uint32_t z)
{
    char letters[16];
    size_t n = 0;
    uint32_t x = z + 1;
    while (x > 0 && n < sizeof(letters) - 1) {
        x--;
        letters[n++] = (char)('a' + x % 26);
        x /= 26;
    }
    char name[32] = "zone-";
    for (size_t i = 0; i < n; i++)
        name[5 + i] = letters[n - 1 - i];
    name[5 + n] = '\0';
    return gen_dup(g, name);
}

/* Fills zone, block and rack strings for rack index `rack` of `kind`; false on out of memory. */
static bool gen_domains(struct gen *g, int kind, uint32_t rack)
{
    uint32_t block = rack / GEN_RACKS_PER_BLOCK, zone = block / GEN_BLOCKS_PER_ZONE;
    bool fresh = g->cache_kind != kind;
    if (fresh || !g->zone || g->zone_i != zone) {
        g->zone = gen_zone_name(g, zone);
        g->zone_i = zone;
    }
    if (fresh || !g->block || g->block_i != block) {
        g->block = gen_fmt(g, "%s-block-%02u", gen_kind_names[kind], block);
        g->block_i = block;
    }
    if (fresh || !g->rack || g->rack_i != rack) {
        g->rack = gen_fmt(g, "%s-rack-%03u", gen_kind_names[kind], rack);
        g->rack_i = rack;
    }
    g->cache_kind = kind;
    return g->zone && g->block && g->rack;
}

struct gen_shape {
    const char *product;
    const char *gpu_count;
    const char *gpu_memory;
    int64_t gpus, cpu_milli, memory, pods;
};

static const struct gen_shape gen_shapes[GEN_N_KINDS] = {
    [GEN_HGX] = {"NVIDIA-H100-80GB-HBM3", "8", "81559", 8, 192000, INT64_C(2) << 40, 110},
    [GEN_NVL72] = {"NVIDIA-GB200", "4", "189471", 4, 144000, INT64_C(880) << 30, 110},
    [GEN_PCIE] = {"NVIDIA-L40S", "8", "46068", 8, 192000, INT64_C(2) << 40, 110},
};

struct gen_strings {
    const char *product, *gpu_count, *gpu_memory, *clique; /* pool copies; clique may be NULL */
};

static int gen_node(struct gen *g, int kind, const char *name, const struct gen_strings *gs)
{
    const struct gen_shape *sh = &gen_shapes[kind];
    struct kv *labels = cluster_alloc(g->c, 8 * sizeof(*labels));
    struct kv *ann = NULL;
    if (!labels)
        return SCHED_ENOMEM;
    if (kind == GEN_PCIE) {
        ann = cluster_alloc(g->c, sizeof(*ann));
        if (!ann)
            return SCHED_ENOMEM;
        ann[0].key = g->k_islands;
        ann[0].value = g->v_islands;
    }
    struct node *n = cluster_add_node(g->c, name);
    if (!n)
        return SCHED_ENOMEM;
    uint32_t nl = 0;
    labels[nl++] = (struct kv){g->k_host, n->name};
    labels[nl++] = (struct kv){g->k_zone, g->zone};
    labels[nl++] = (struct kv){g->k_block, g->block};
    labels[nl++] = (struct kv){g->k_rack, g->rack};
    labels[nl++] = (struct kv){g->k_product, gs->product};
    labels[nl++] = (struct kv){g->k_count, gs->gpu_count};
    labels[nl++] = (struct kv){g->k_mem, gs->gpu_memory};
    if (gs->clique)
        labels[nl++] = (struct kv){g->k_clique, gs->clique};
    n->labels = labels;
    n->n_labels = nl;
    n->annotations = ann;
    n->n_annotations = ann ? 1 : 0;
    n->alloc.v[RES_CPU] = sh->cpu_milli;
    n->alloc.v[RES_MEMORY] = sh->memory;
    n->alloc.v[RES_PODS] = sh->pods;
    n->alloc.v[RES_GPU] = sh->gpus;
    n->ready = true;
    return 0;
}

static int gen_part(struct gen *g, int kind, uint32_t count)
{
    /* The value strings of gen_shapes are static; copy them once so that the cluster owns every
     * string it points to. */
    struct gen_strings gs = {gen_dup(g, gen_shapes[kind].product),
                             gen_dup(g, gen_shapes[kind].gpu_count),
                             gen_dup(g, gen_shapes[kind].gpu_memory), NULL};
    if (!gs.product || !gs.gpu_count || !gs.gpu_memory)
        return SCHED_ENOMEM;
    char name[64];
    if (kind == GEN_NVL72) {
        for (uint32_t r = 0; r < count; r++) {
            uint32_t rack = g->next[kind]++;
            if (!gen_domains(g, kind, rack))
                return SCHED_ENOMEM;
            gs.clique = gen_fmt(g, "%s.%u", GEN_CLUSTER_UUID, rack);
            if (!gs.clique)
                return SCHED_ENOMEM;
            for (uint32_t k = 0; k < GEN_NVL72_NODES; k++) {
                snprintf(name, sizeof(name), "nvl72-%02u-%02u", rack, k);
                int rc = gen_node(g, kind, name, &gs);
                if (rc)
                    return rc;
            }
        }
        return 0;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t idx = g->next[kind]++;
        if (!gen_domains(g, kind, idx / GEN_NODES_PER_RACK))
            return SCHED_ENOMEM;
        snprintf(name, sizeof(name), "%s-%04u", gen_kind_names[kind], idx);
        int rc = gen_node(g, kind, name, &gs);
        if (rc)
            return rc;
    }
    return 0;
}

struct gen_req {
    int kind;
    uint32_t count;
};

/* Validates the whole spec before generating anything. */
static int gen_parse(const char *spec, struct gen_req *reqs, size_t max, size_t *n_reqs,
                     struct sched_errbuf *eb)
{
    const char *p = spec;
    size_t n = 0;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *s = p, *e = p + len;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (s == e)
            return sched_fail(eb, SCHED_EINVAL, "cluster spec \"%s\": empty part", spec);
        const char *colon = memchr(s, ':', (size_t)(e - s));
        if (!colon)
            return sched_fail(eb, SCHED_EINVAL,
                              "cluster spec \"%s\": part \"%.*s\" is not kind:count "
                              "(e.g. hgx:32)",
                              spec, (int)(e - s), s);
        int kind = -1;
        for (int k = 0; k < GEN_N_KINDS; k++)
            if (strlen(gen_kind_names[k]) == (size_t)(colon - s) &&
                memcmp(gen_kind_names[k], s, (size_t)(colon - s)) == 0)
                kind = k;
        if (kind < 0)
            return sched_fail(eb, SCHED_EINVAL,
                              "cluster spec \"%s\": unknown kind \"%.*s\" (valid kinds: hgx, "
                              "nvl72, pcie)",
                              spec, (int)(colon - s), s);
        const char *c = colon + 1;
        uint32_t count = 0;
        bool ok = c < e;
        for (const char *q = c; q < e && ok; q++) {
            if (!is_digit(*q))
                ok = false;
            else if (count <= GEN_MAX_COUNT)
                count = count * 10 + (uint32_t)(*q - '0');
        }
        if (!ok || count == 0)
            return sched_fail(eb, SCHED_EINVAL,
                              "cluster spec \"%s\": count \"%.*s\" is not a positive integer", spec,
                              (int)(e - c), c);
        if (count > GEN_MAX_COUNT)
            return sched_fail(eb, SCHED_ERANGE,
                              "cluster spec \"%s\": count \"%.*s\" is too large (at most %d)", spec,
                              (int)(e - c), c, GEN_MAX_COUNT);
        if (n == max)
            return sched_fail(eb, SCHED_EINVAL, "cluster spec \"%s\": more than %zu parts", spec,
                              max);
        reqs[n].kind = kind;
        reqs[n].count = count;
        n++;
        if (!end)
            break;
        p = end + 1;
    }
    *n_reqs = n;
    return 0;
}

int nodes_generate(struct cluster *c, const char *spec, struct sched_errbuf *eb)
{
    if (!spec)
        return sched_fail(eb, SCHED_EINVAL, "cluster spec: missing");
    if (!c)
        return sched_fail(eb, SCHED_EINVAL, "cluster spec \"%s\": no cluster", spec);
    struct gen_req reqs[16];
    size_t n_reqs = 0;
    int rc = gen_parse(spec, reqs, sizeof(reqs) / sizeof(reqs[0]), &n_reqs, eb);
    if (rc)
        return rc;
    uint64_t total = c->n_nodes;
    for (size_t i = 0; i < n_reqs; i++)
        total += (uint64_t)reqs[i].count * (reqs[i].kind == GEN_NVL72 ? GEN_NVL72_NODES : 1);
    if (total > UINT32_MAX / 4)
        return sched_fail(eb, SCHED_ERANGE, "cluster spec \"%s\": too many nodes", spec);

    struct gen g;
    memset(&g, 0, sizeof(g));
    g.c = c;
    g.cache_kind = -1;
    g.k_host = gen_dup(&g, "kubernetes.io/hostname");
    g.k_zone = gen_dup(&g, TOPO_LABEL_ZONE);
    g.k_block = gen_dup(&g, TOPO_LABEL_BLOCK);
    g.k_rack = gen_dup(&g, TOPO_LABEL_RACK);
    g.k_clique = gen_dup(&g, TOPO_LABEL_CLIQUE);
    g.k_product = gen_dup(&g, "nvidia.com/gpu.product");
    g.k_count = gen_dup(&g, "nvidia.com/gpu.count");
    g.k_mem = gen_dup(&g, "nvidia.com/gpu.memory");
    g.k_islands = gen_dup(&g, ANNOT_GPU_ISLANDS);
    g.v_islands = gen_dup(&g, "0-3,4-7");
    uint32_t n0 = c->n_nodes;
    if (!g.k_host || !g.k_zone || !g.k_block || !g.k_rack || !g.k_clique || !g.k_product ||
        !g.k_count || !g.k_mem || !g.k_islands || !g.v_islands)
        rc = SCHED_ENOMEM;
    /* Numbering continues across the parts of one spec ("hgx:4,hgx:4" is "hgx:8"). A second
     * call starts again at 0, so its names repeat and cluster_finalize() rejects them. */
    for (size_t i = 0; !rc && i < n_reqs; i++)
        rc = gen_part(&g, reqs[i].kind, reqs[i].count);
    if (rc) {
        c->n_nodes = n0;
        return sched_fail(eb, rc, "cluster spec \"%s\": out of memory", spec);
    }
    return 0;
}
