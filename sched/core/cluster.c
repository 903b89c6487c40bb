/* sched/core/cluster.c: the cluster container (see model.h).
 *
 * Owns: the cluster's private allocation pool, the growable node array, label and annotation
 * lookup, NVLink island parsing, and cluster_finalize(): sorted labels, GPU counts and sharing,
 * islands, and the topology levels with their domain CSR.
 * Must not touch: node_state (usage), gangs and pod sets (gang_finalize lives elsewhere), the
 * resource name table (only read through the well-known ids).
 *
 * Pointer stability: cluster_add_node() grows `c->nodes` with realloc, so a `struct node *` it
 * returned is invalidated by the next cluster_add_node() call. Callers fill a node completely
 * before adding the next one, and keep indices, not pointers, across adds. Strings and arrays
 * allocated from the pool never move and live until cluster_free().
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/bits.h"
#include "sched/core/dra.h"
#include "sched/core/model.h"

/* ---- pool: chunked bump allocator, freed as a whole ------------------------------------------ */

#define POOL_CHUNK_BYTES (64u * 1024u)
#define POOL_ALIGN       alignof(max_align_t)
#define POOL_HDR         ((sizeof(struct pool_chunk) + POOL_ALIGN - 1) & ~(POOL_ALIGN - 1))

struct pool_chunk {
    struct pool_chunk *next;
    size_t cap;  /* usable bytes after the header */
    size_t used; /* bytes handed out */
};

struct cluster_pool {
    struct pool_chunk *head; /* current chunk first; big blocks are linked behind it */
};

static unsigned char *chunk_data(struct pool_chunk *ch)
{
    return (unsigned char *)ch + POOL_HDR;
}

static void *pool_alloc(struct cluster_pool *p, size_t size)
{
    if (size == 0)
        size = 1;
    if (size > SIZE_MAX - POOL_HDR - POOL_ALIGN)
        return NULL;
    size = (size + POOL_ALIGN - 1) & ~(POOL_ALIGN - 1);
    struct pool_chunk *h = p->head;
    if (h && h->cap - h->used >= size) {
        void *r = chunk_data(h) + h->used;
        h->used += size;
        return r;
    }
    /* Big blocks get a chunk of their own, linked behind the current one so that the space
     * left in the current chunk stays usable. */
    bool big = size > POOL_CHUNK_BYTES / 4;
    size_t cap = big ? size : POOL_CHUNK_BYTES;
    struct pool_chunk *ch = malloc(POOL_HDR + cap);
    if (!ch)
        return NULL;
    ch->cap = cap;
    ch->used = size;
    if (big && h) {
        ch->next = h->next;
        h->next = ch;
    } else {
        ch->next = h;
        p->head = ch;
    }
    return chunk_data(ch);
}

struct cluster *cluster_new(void)
{
    struct cluster *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->pool = calloc(1, sizeof(*c->pool));
    if (!c->pool) {
        free(c);
        return NULL;
    }
    c->topo.rack_level = -1;
    c->topo.nvlink_level = -1;
    return c;
}

void cluster_free(struct cluster *c)
{
    if (!c)
        return;
    dra_inv_free(c->dra);
    dra_inv_free(c->dra_mig);
    if (c->pool) {
        struct pool_chunk *ch = c->pool->head;
        while (ch) {
            struct pool_chunk *next = ch->next;
            free(ch);
            ch = next;
        }
        free(c->pool);
    }
    free(c->nodes);
    free(c);
}

void *cluster_alloc(struct cluster *c, size_t size)
{
    if (!c || !c->pool)
        return NULL;
    void *p = pool_alloc(c->pool, size);
    if (p)
        memset(p, 0, size);
    return p;
}

const char *cluster_strdup(struct cluster *c, const char *s)
{
    if (!c || !s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = pool_alloc(c->pool, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* The returned pointer is valid until the next cluster_add_node() (see the header comment). */
struct node *cluster_add_node(struct cluster *c, const char *name)
{
    if (!c || !name)
        return NULL;
    if (c->n_nodes == c->cap_nodes) {
        if (c->cap_nodes >= UINT32_MAX / 2)
            return NULL;
        uint32_t cap = c->cap_nodes ? c->cap_nodes * 2 : 64;
        if ((uint64_t)cap * sizeof(struct node) > SIZE_MAX)
            return NULL;
        struct node *nn = realloc(c->nodes, (size_t)cap * sizeof(struct node));
        if (!nn)
            return NULL;
        c->nodes = nn;
        c->cap_nodes = cap;
    }
    const char *nm = cluster_strdup(c, name);
    if (!nm)
        return NULL;
    struct node *n = &c->nodes[c->n_nodes++];
    memset(n, 0, sizeof(*n));
    n->name = nm;
    return n;
}

/* ---- lookup ---------------------------------------------------------------------------------- */

static const char *kv_find(const struct kv *kv, uint32_t n, const char *key)
{
    if (!kv || !key)
        return NULL;
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int r = strcmp(key, kv[mid].key);
        if (r == 0)
            return kv[mid].value;
        if (r < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *node_label(const struct node *n, const char *key)
{
    return n ? kv_find(n->labels, n->n_labels, key) : NULL;
}

const char *node_annotation(const struct node *n, const char *key)
{
    return n ? kv_find(n->annotations, n->n_annotations, key) : NULL;
}

/* ---- NVLink islands -------------------------------------------------------------------------- */

static void skip_spaces(const char **p)
{
    while (**p == ' ' || **p == '\t')
        (*p)++;
}

/* Reads a decimal GPU index; saturates far above any valid index. false when no digit. */
static bool read_index(const char **p, uint32_t *out)
{
    const char *s = *p;
    uint32_t v = 0;
    if (*s < '0' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9') {
        if (v < 100000)
            v = v * 10 + (uint32_t)(*s - '0');
        s++;
    }
    *p = s;
    *out = v;
    return true;
}

/* Two forms: "0-3,4-7" (each comma-separated item, a range or one index, is an island) and
 * "0,1,2,3;4,5,6,7" (islands separated by ';', members by ','; ranges allowed in members). */
int gpu_islands_parse(const char *s, uint8_t n_gpus, uint32_t *islands, uint8_t *n_islands,
                      struct sched_errbuf *eb)
{
    if (!s)
        return sched_fail(eb, SCHED_EINVAL, "gpu islands: missing value");
    if (!islands || !n_islands)
        return sched_fail(eb, SCHED_EINVAL, "gpu islands \"%s\": no output", s);
    const bool semi = strchr(s, ';') != NULL;
    const char island_sep = semi ? ';' : ',';
    uint32_t tmp[NODE_MAX_ISLANDS];
    uint32_t n = 0, seen = 0;
    const char *p = s;
    skip_spaces(&p);
    if (*p == '\0')
        return sched_fail(eb, SCHED_EINVAL, "gpu islands \"%s\": empty", s);
    for (;;) {
        uint32_t mask = 0;
        for (;;) {
            uint32_t a, b;
            skip_spaces(&p);
            if (!read_index(&p, &a))
                return sched_fail(eb, SCHED_EINVAL,
                                  "gpu islands \"%s\": expected a GPU index at offset %zu", s,
                                  (size_t)(p - s));
            b = a;
            skip_spaces(&p);
            if (*p == '-') {
                p++;
                skip_spaces(&p);
                if (!read_index(&p, &b))
                    return sched_fail(eb, SCHED_EINVAL,
                                      "gpu islands \"%s\": expected a GPU index at offset %zu", s,
                                      (size_t)(p - s));
                if (b < a)
                    return sched_fail(eb, SCHED_EINVAL,
                                      "gpu islands \"%s\": range %u-%u is reversed", s, a, b);
            }
            if (b >= n_gpus)
                return sched_fail(eb, SCHED_EINVAL,
                                  "gpu islands \"%s\": GPU index %u out of range (node has %u "
                                  "GPUs)",
                                  s, b, (unsigned)n_gpus);
            for (uint32_t i = a; i <= b; i++) {
                uint32_t bit = UINT32_C(1) << i;
                if ((mask | seen) & bit)
                    return sched_fail(eb, SCHED_EINVAL,
                                      "gpu islands \"%s\": GPU %u is listed twice (islands must "
                                      "be disjoint)",
                                      s, i);
                mask |= bit;
            }
            skip_spaces(&p);
            if (semi && *p == ',') {
                p++;
                continue;
            }
            break;
        }
        if (n == NODE_MAX_ISLANDS)
            return sched_fail(eb, SCHED_EINVAL, "gpu islands \"%s\": more than %d islands", s,
                              NODE_MAX_ISLANDS);
        tmp[n++] = mask;
        seen |= mask;
        if (*p == island_sep) {
            p++;
            continue;
        }
        if (*p == '\0')
            break;
        return sched_fail(eb, SCHED_EINVAL, "gpu islands \"%s\": unexpected '%c' at offset %zu", s,
                          *p, (size_t)(p - s));
    }
    uint32_t missing = bits_low32(n_gpus) & ~seen;
    if (missing) {
        uint32_t first = 0;
        while (!(missing & (UINT32_C(1) << first)))
            first++;
        return sched_fail(eb, SCHED_EINVAL,
                          "gpu islands \"%s\": GPU %u is in no island (islands must cover all %u "
                          "GPUs)",
                          s, first, (unsigned)n_gpus);
    }
    memcpy(islands, tmp, n * sizeof(tmp[0]));
    *n_islands = (uint8_t)n;
    return 0;
}

/* ---- finalize -------------------------------------------------------------------------------- */

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

/* Sorts in place (the arrays come from cluster_alloc, so they are writable) and rejects
 * duplicate keys, which would make lookups ambiguous. */
static int kv_sort(const struct node *n, const struct kv *kv, uint32_t cnt, const char *what,
                   struct sched_errbuf *eb)
{
    if (cnt == 0)
        return 0;
    if (!kv)
        return sched_fail(eb, SCHED_EINVAL, "node \"%s\": %u %ss but no array", n->name, cnt, what);
    struct kv *w = (struct kv *)kv;
    for (uint32_t i = 0; i < cnt; i++)
        if (!w[i].key || !w[i].value)
            return sched_fail(eb, SCHED_EINVAL, "node \"%s\": %s %u has no %s", n->name, what, i,
                              w[i].key ? "value" : "key");
    qsort(w, cnt, sizeof(*w), kv_cmp);
    for (uint32_t i = 1; i < cnt; i++)
        if (strcmp(w[i - 1].key, w[i].key) == 0)
            return sched_fail(eb, SCHED_EEXIST, "node \"%s\": duplicate %s \"%s\"", n->name, what,
                              w[i].key);
    return 0;
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = UINT64_C(1469598103934665603);
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= UINT64_C(1099511628211);
    }
    return h ^ (h >> 29);
}

/* Open addressing string table: slots hold index+1 into a caller-owned array of strings. */
struct strtab {
    uint32_t *slots;
    uint32_t mask;
};

static int strtab_init(struct strtab *t, uint32_t n)
{
    uint32_t size = 16;
    while (size < 2 * (uint64_t)n && size < (UINT32_C(1) << 31))
        size *= 2;
    t->slots = calloc(size, sizeof(uint32_t));
    t->mask = size - 1;
    return t->slots ? 0 : SCHED_ENOMEM;
}

/* Finds `key` among names[]; returns its index, or inserts `idx` and returns UINT32_MAX. */
static uint32_t strtab_find_or_add(struct strtab *t, const char *const *names, const char *key,
                                   uint32_t idx)
{
    uint32_t i = (uint32_t)str_hash(key) & t->mask;
    for (;;) {
        uint32_t s = t->slots[i];
        if (s == 0) {
            t->slots[i] = idx + 1;
            return UINT32_MAX;
        }
        if (strcmp(names[s - 1], key) == 0)
            return s - 1;
        i = (i + 1) & t->mask;
    }
}

static bool label_is_int_above_one(const char *v)
{
    if (!v || !*v)
        return false;
    uint64_t x = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        if (x < 1000)
            x = x * 10 + (uint64_t)(*p - '0');
    }
    return x > 1;
}

static enum gpu_sharing detect_sharing(const struct node *n)
{
    /* "single": every GPU is cut into equal MIG slices that nvidia.com/gpu then counts.
     * "mixed": nvidia.com/gpu counts only the GPUs without MIG, whole devices; the slices are
     * their own resources (nvidia.com/mig-<profile>), separate pools that never give a GPU
     * index, so a MIG gang never gets a whole GPU and a GPU gang never gets a slice. */
    const char *mig = node_label(n, "nvidia.com/mig.strategy");
    if (mig && strcmp(mig, "none") != 0 && strcmp(mig, "mixed") != 0)
        return GPU_MIG;
    const char *product = node_label(n, "nvidia.com/gpu.product");
    if (product) {
        size_t len = strlen(product), sl = strlen("-SHARED");
        if (len >= sl && strcmp(product + len - sl, "-SHARED") == 0)
            return GPU_TIME_SLICED;
    }
    if (label_is_int_above_one(node_label(n, "nvidia.com/gpu.replicas")))
        return GPU_TIME_SLICED;
    return GPU_WHOLE;
}

/* A node with more GPUs than a mask indexes (NODE_MAX_GPUS): the scheduler offers
 * NODE_MAX_GPUS of them, its allocatable cut to match so that placement, quota and the free
 * count agree. The readers say so before it gets here (a NodeList file refuses the node with
 * file:line, sched/k8s/nodes.c; a live node is cut with a warning naming it): the core never
 * logs. */
static void clamp_gpus(struct node *n)
{
    if (n->alloc.v[RES_GPU] > NODE_MAX_GPUS)
        n->alloc.v[RES_GPU] = NODE_MAX_GPUS;
}

static int finalize_node(struct node *n, struct sched_errbuf *eb)
{
    int rc = kv_sort(n, n->labels, n->n_labels, "label", eb);
    if (rc)
        return rc;
    rc = kv_sort(n, n->annotations, n->n_annotations, "annotation", eb);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < n->n_taints; i++)
        if (!n->taints || !n->taints[i].key || !n->taints[i].value)
            return sched_fail(eb, SCHED_EINVAL, "node \"%s\": taint %u is incomplete", n->name, i);
    clamp_gpus(n);
    int64_t g = n->alloc.v[RES_GPU];
    n->n_gpus = (uint8_t)(g <= 0 ? 0 : g);
    n->gpu_sharing = detect_sharing(n);
    memset(n->islands, 0, sizeof(n->islands));
    n->n_islands = 0;
    if (n->n_gpus == 0)
        return 0; /* no islands without GPUs; an annotation is ignored (GPUs may be down) */
    const char *ann = node_annotation(n, ANNOT_GPU_ISLANDS);
    if (ann) {
        struct sched_errbuf inner;
        inner.msg[0] = '\0';
        if (gpu_islands_parse(ann, n->n_gpus, n->islands, &n->n_islands, &inner) != 0)
            return sched_fail(eb, SCHED_EINVAL, "node \"%s\": annotation %s: %s", n->name,
                              ANNOT_GPU_ISLANDS, inner.msg);
    } else {
        n->islands[0] = bits_low32(n->n_gpus);
        n->n_islands = 1;
    }
    return 0;
}

static int check_duplicate_names(const struct cluster *c, const char **names,
                                 struct sched_errbuf *eb)
{
    struct strtab t;
    if (strtab_init(&t, c->n_nodes))
        return sched_fail(eb, SCHED_ENOMEM, "cluster: out of memory");
    int rc = 0;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        names[i] = c->nodes[i].name;
        uint32_t prev = strtab_find_or_add(&t, names, names[i], i);
        if (prev != UINT32_MAX) {
            rc = sched_fail(eb, SCHED_EEXIST, "node \"%s\": duplicate node name (nodes %u and %u)",
                            names[i], prev, i);
            break;
        }
    }
    free(t.slots);
    return rc;
}

/* Builds the CSR of one level from c->nodes[i].dom[l]; `cursor` is n_domains+1 scratch. */
static int build_csr(struct cluster *c, uint32_t l, uint32_t *cursor)
{
    struct topo_level *lv = &c->topo.levels[l];
    uint32_t nd = lv->n_domains;
    lv->domain_first = cluster_alloc(c, ((size_t)nd + 1) * sizeof(uint32_t));
    lv->node_index = cluster_alloc(c, (size_t)c->n_nodes * sizeof(uint32_t));
    if (!lv->domain_first || !lv->node_index)
        return SCHED_ENOMEM;
    for (uint32_t i = 0; i < c->n_nodes; i++)
        lv->domain_first[c->nodes[i].dom[l] + 1]++;
    for (uint32_t d = 0; d < nd; d++)
        lv->domain_first[d + 1] += lv->domain_first[d];
    memcpy(cursor, lv->domain_first, (size_t)nd * sizeof(uint32_t));
    for (uint32_t i = 0; i < c->n_nodes; i++)
        lv->node_index[cursor[c->nodes[i].dom[l]]++] = i;
    return 0;
}

/* Assigns domains for a labelled level: equal label values share a domain, ids in order of
 * first appearance; a node without the label is a singleton named after the node. */
static int build_label_level(struct cluster *c, uint32_t l, const char **names)
{
    struct topo_level *lv = &c->topo.levels[l];
    struct strtab t;
    if (strtab_init(&t, c->n_nodes))
        return SCHED_ENOMEM;
    uint32_t nd = 0;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        struct node *n = &c->nodes[i];
        const char *v = node_label(n, lv->label);
        if (!v) {
            names[nd] = n->name;
            n->dom[l] = nd++;
            continue;
        }
        names[nd] = v;
        uint32_t prev = strtab_find_or_add(&t, names, v, nd);
        if (prev == UINT32_MAX)
            n->dom[l] = nd++;
        else
            n->dom[l] = prev;
    }
    free(t.slots);
    lv->n_domains = nd;
    const char **dn = cluster_alloc(c, (size_t)nd * sizeof(*dn));
    if (!dn)
        return SCHED_ENOMEM;
    memcpy(dn, names, (size_t)nd * sizeof(*dn));
    lv->domain_names = dn;
    return 0;
}

static int build_node_level(struct cluster *c, uint32_t l)
{
    struct topo_level *lv = &c->topo.levels[l];
    const char **dn = cluster_alloc(c, (size_t)c->n_nodes * sizeof(*dn));
    if (!dn)
        return SCHED_ENOMEM;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        dn[i] = c->nodes[i].name;
        c->nodes[i].dom[l] = i;
    }
    lv->n_domains = c->n_nodes;
    lv->domain_names = dn;
    return 0;
}

static int setup_levels(struct cluster *c, const char *const *level_names,
                        const char *const *level_labels, uint32_t n_levels, struct sched_errbuf *eb)
{
    static const char *const def_names[] = {"zone", "block", "rack", "clique"};
    static const char *const def_labels[] = {TOPO_LABEL_ZONE, TOPO_LABEL_BLOCK, TOPO_LABEL_RACK,
                                             TOPO_LABEL_CLIQUE};
    if (!level_labels) {
        level_names = def_names;
        level_labels = def_labels;
        n_levels = (uint32_t)(sizeof(def_labels) / sizeof(def_labels[0]));
    }
    if (n_levels > TOPO_MAX_LEVELS - 1)
        return sched_fail(eb, SCHED_EINVAL,
                          "topology: %u levels given, at most %d (the node level is added)",
                          n_levels, TOPO_MAX_LEVELS - 1);
    struct topo *t = &c->topo;
    memset(t, 0, sizeof(*t));
    t->rack_level = -1;
    t->nvlink_level = -1;
    for (uint32_t l = 0; l < n_levels; l++) {
        const char *label = level_labels[l];
        const char *name = level_names ? level_names[l] : label;
        if (!label || !*label)
            return sched_fail(eb, SCHED_EINVAL, "topology: level %u has no label", l);
        if (!name || !*name)
            return sched_fail(eb, SCHED_EINVAL, "topology: level %u (label %s) has no name", l,
                              label);
        if (strcmp(name, "node") == 0)
            return sched_fail(eb, SCHED_EINVAL,
                              "topology: level name \"node\" is reserved for the last level");
        for (uint32_t k = 0; k < l; k++)
            if (strcmp(t->levels[k].name, name) == 0)
                return sched_fail(eb, SCHED_EINVAL, "topology: level name \"%s\" used twice", name);
        t->levels[l].name = cluster_strdup(c, name);
        t->levels[l].label = cluster_strdup(c, label);
        if (!t->levels[l].name || !t->levels[l].label)
            return sched_fail(eb, SCHED_ENOMEM, "topology: out of memory");
        if (strcmp(name, "rack") == 0)
            t->rack_level = (int)l;
        else if (strcmp(name, "clique") == 0)
            t->nvlink_level = (int)l;
    }
    t->levels[n_levels].name = cluster_strdup(c, "node");
    t->levels[n_levels].label = NULL;
    if (!t->levels[n_levels].name)
        return sched_fail(eb, SCHED_ENOMEM, "topology: out of memory");
    t->n_levels = n_levels + 1;
    return 0;
}

int cluster_finalize(struct cluster *c, const char *const *level_names,
                     const char *const *level_labels, uint32_t n_levels, struct sched_errbuf *eb)
{
    if (!c)
        return sched_fail(eb, SCHED_EINVAL, "cluster: NULL");
    int rc = setup_levels(c, level_names, level_labels, n_levels, eb);
    if (rc)
        return rc;
    if (c->dra && dra_inv_apply(c->dra, c) < 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (c->dra_mig) /* MIG devices, as the daemon counts them (sched/kube/mig.h) */
        dra_inv_apply_mig(c->dra_mig, c);
    c->total_gpus = 0;
    c->max_node_gpus = 0;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        struct node *n = &c->nodes[i];
        if (!n->name)
            return sched_fail(eb, SCHED_EINVAL, "cluster: node %u has no name", i);
        rc = finalize_node(n, eb);
        if (rc)
            return rc;
        n->kind = (uint8_t)res_kind_of(&n->alloc); /* once: the device-kind filter reads it */
        memset(n->dom, 0, sizeof(n->dom));
        c->total_gpus += n->n_gpus;
        if (n->n_gpus > c->max_node_gpus)
            c->max_node_gpus = n->n_gpus;
    }
    /* Scratch: strings for the duplicate check and domain names, then CSR cursors. */
    size_t scratch = (size_t)c->n_nodes + 1;
    const char **names = malloc(scratch * sizeof(*names));
    uint32_t *cursor = malloc(scratch * sizeof(*cursor));
    if (!names || !cursor) {
        rc = sched_fail(eb, SCHED_ENOMEM, "cluster: out of memory");
        goto out;
    }
    rc = check_duplicate_names(c, names, eb);
    if (rc)
        goto out;
    for (uint32_t l = 0; l < c->topo.n_levels; l++) {
        if (c->topo.levels[l].label)
            rc = build_label_level(c, l, names);
        else
            rc = build_node_level(c, l);
        if (!rc)
            rc = build_csr(c, l, cursor);
        if (rc) {
            rc = sched_fail(eb, SCHED_ENOMEM, "cluster: out of memory building topology");
            goto out;
        }
    }
out:
    free(names);
    free(cursor);
    return rc;
}
