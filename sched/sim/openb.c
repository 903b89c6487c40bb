/* sched/sim/openb.c: openb CSV readers, FGD's arrivals and the allocation curve (see openb.h).
 *
 * The files are plain CSV without quoting (openb has none); a line is split on commas and must
 * have exactly the header's number of fields. Numbers are non-negative decimal integers.
 */
#include "sched/sim/openb.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/hash.h"

#define OPENB_MAX_LINE   4096
#define OPENB_MAX_FIELDS 16

static const char *const node_cols[] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};
static const char *const pod_cols[] = {
    "name", "cpu_milli", "memory_mib",    "num_gpu",       "gpu_milli",     "gpu_spec",
    "qos",  "pod_phase", "creation_time", "deletion_time", "scheduled_time"};

struct csv {
    FILE *f;
    const char *path;
    size_t line;
    char buf[OPENB_MAX_LINE];
    char *field[OPENB_MAX_FIELDS];
    int n;
};

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Next non-blank line split into fields: 1, 0 at the end, or an error code. */
static int csv_next(struct csv *c, struct sched_errbuf *eb)
{
    for (;;) {
        if (!fgets(c->buf, sizeof(c->buf), c->f))
            return ferror(c->f) ? sched_fail(eb, SCHED_EIO, "%s: read error", c->path) : 0;
        c->line++;
        size_t len = strlen(c->buf);
        if (len == sizeof(c->buf) - 1 && c->buf[len - 1] != '\n')
            return sched_fail(eb, SCHED_EINVAL, "%s:%zu: line longer than %d bytes", c->path,
                              c->line, OPENB_MAX_LINE - 2);
        while (len && (c->buf[len - 1] == '\n' || c->buf[len - 1] == '\r'))
            c->buf[--len] = '\0';
        if (c->line == 1 && len >= 3 && memcmp(c->buf, "\xEF\xBB\xBF", 3) == 0) {
            memmove(c->buf, c->buf + 3, len - 2); /* a UTF-8 byte order mark */
            len -= 3;
        }
        if (len == 0)
            continue;
        c->n = 0;
        char *p = c->buf;
        for (;;) {
            if (c->n == OPENB_MAX_FIELDS)
                return sched_fail(eb, SCHED_EINVAL, "%s:%zu: more than %d fields", c->path, c->line,
                                  OPENB_MAX_FIELDS);
            c->field[c->n++] = p;
            char *comma = strchr(p, ',');
            if (!comma)
                break;
            *comma = '\0';
            p = comma + 1;
        }
        return 1;
    }
}

static int csv_open(struct csv *c, const char *path, const char *const *cols, int n_cols,
                    const char *what, struct sched_errbuf *eb)
{
    memset(c, 0, sizeof(*c));
    c->path = path;
    c->f = fopen(path, "r");
    if (!c->f)
        return sched_fail(eb, errno == ENOENT ? SCHED_ENOENT : SCHED_EIO, "%s: cannot open: %s",
                          path, strerror(errno));
    int rc = csv_next(c, eb);
    if (rc < 0 || rc > 1)
        return rc;
    bool ok = rc == 1 && c->n == n_cols;
    for (int i = 0; ok && i < n_cols; i++)
        ok = strcmp(c->field[i], cols[i]) == 0;
    if (!ok) {
        char want[300] = "";
        for (int i = 0; i < n_cols; i++)
            snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s", i ? "," : "",
                     cols[i]);
        return sched_fail(eb, SCHED_EINVAL, "%s:1: not an openb %s (expected the header %s)", path,
                          what, want);
    }
    return 0;
}

/* A decimal integer in [0, max]. */
static int csv_int(const struct csv *c, int col, const char *name, int64_t max, int64_t *out,
                   struct sched_errbuf *eb)
{
    const char *s = c->field[col];
    int64_t v = 0;
    if (!*s)
        return sched_fail(eb, SCHED_EINVAL, "%s:%zu: column '%s': empty", c->path, c->line, name);
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return sched_fail(eb, SCHED_EINVAL, "%s:%zu: column '%s': '%.40s' is not an integer",
                              c->path, c->line, name, s);
        if (v > (max - (*p - '0')) / 10)
            return sched_fail(eb, SCHED_ERANGE, "%s:%zu: column '%s': %.40s is above %lld", c->path,
                              c->line, name, s, (long long)max);
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return 0;
}

void openb_nodes_free(struct openb_nodes *n)
{
    for (uint32_t i = 0; n->names && i < n->n; i++)
        free(n->names[i]);
    for (uint32_t m = 0; m < n->n_models; m++)
        free(n->models[m]);
    free(n->names);
    free(n->nodes);
    memset(n, 0, sizeof(*n));
}

void openb_pods_free(struct openb_pods *p)
{
    for (uint32_t i = 0; p->names && i < p->n; i++)
        free(p->names[i]);
    free(p->names);
    free(p->pods);
    free(p->types);
    memset(p, 0, sizeof(*p));
}

static int model_index(struct openb_nodes *n, const char *name)
{
    for (uint32_t m = 0; m < n->n_models; m++)
        if (strcmp(n->models[m], name) == 0)
            return (int)m;
    if (n->n_models == SHARE_MAX_MODELS)
        return -1;
    if (!(n->models[n->n_models] = dup_str(name)))
        return -2;
    return (int)n->n_models++;
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    void *q = realloc(*p, c * size);
    if (!q)
        return SCHED_ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

static int node_row(struct csv *c, struct openb_nodes *out, struct sched_errbuf *eb)
{
    int64_t cpu, mem, gpu;
    int rc = csv_int(c, 1, "cpu_milli", INT64_MAX / 4, &cpu, eb);
    if (!rc)
        rc = csv_int(c, 2, "memory_mib", INT64_MAX / 4, &mem, eb);
    if (!rc)
        rc = csv_int(c, 3, "gpu", NODE_MAX_GPUS, &gpu, eb);
    if (rc)
        return rc;
    if (!*c->field[0])
        return sched_fail(eb, SCHED_EINVAL, "%s:%zu: column 'sn': empty", c->path, c->line);
    if (gpu > 0 && !*c->field[4])
        return sched_fail(eb, SCHED_EINVAL, "%s:%zu: column 'model': empty for a node with GPUs",
                          c->path, c->line);
    struct share_node *n = &out->nodes[out->n];
    memset(n, 0, sizeof(*n));
    n->cpu = n->cpu_free = cpu;
    n->mem = n->mem_free = mem;
    n->n_gpus = (uint8_t)gpu;
    for (uint8_t g = 0; g < n->n_gpus; g++)
        n->gpu_free[g] = SHARE_MILLI;
    if (gpu > 0) {
        int m = model_index(out, c->field[4]);
        if (m == -2)
            return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", c->path);
        if (m < 0)
            return sched_fail(eb, SCHED_ERANGE, "%s:%zu: column 'model': more than %d GPU models",
                              c->path, c->line, SHARE_MAX_MODELS);
        n->model = (uint8_t)m;
    }
    if (!(out->names[out->n] = dup_str(c->field[0])))
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", c->path);
    out->n++;
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Node names are unique (a sorted copy of the pointers). */
static int check_unique(const char *path, const struct openb_nodes *n, struct sched_errbuf *eb)
{
    char **sorted = malloc(n->n * sizeof(*sorted));
    if (!sorted)
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
    memcpy(sorted, n->names, n->n * sizeof(*sorted));
    qsort(sorted, n->n, sizeof(*sorted), name_cmp);
    int rc = 0;
    for (uint32_t i = 1; i < n->n && !rc; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            rc = sched_fail(eb, SCHED_EINVAL, "%s: node \"%.100s\" appears twice", path, sorted[i]);
    free(sorted);
    return rc;
}

/* The next row, which must have n fields (the header's): 1, 0 at the end, or an error. */
static int csv_row(struct csv *c, int n, const char *path, struct sched_errbuf *eb)
{
    int more = csv_next(c, eb);
    if (more > 0 && c->n != n)
        return sched_fail(eb, SCHED_EINVAL, "%s:%zu: %d fields, the header has %d", path, c->line,
                          c->n, n);
    return more;
}

int openb_nodes_read(const char *path, struct openb_nodes *out, struct sched_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    struct csv c;
    int rc = csv_open(&c, path, node_cols, 5, "node list", eb);
    size_t cap = 0, cap_names = 0;
    while (rc == 0) {
        int more = csv_row(&c, 5, path, eb);
        if (more <= 0) {
            rc = more;
            break;
        }
        if (grow((void **)&out->nodes, &cap, out->n, sizeof(*out->nodes)) ||
            grow((void **)&out->names, &cap_names, out->n, sizeof(*out->names))) {
            rc = sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
            break;
        }
        rc = node_row(&c, out, eb);
    }
    if (c.f)
        fclose(c.f);
    if (rc == 0 && out->n == 0)
        rc = sched_fail(eb, SCHED_EINVAL, "%s: no nodes", path);
    if (rc == 0)
        rc = check_unique(path, out, eb);
    if (rc)
        openb_nodes_free(out);
    return rc;
}

/* gpu_spec "V100M16|V100M32" into a mask of the nodes' models; "" = any (0). A spec naming only
 * models no node has gets the mask of an impossible model, so that it never fits. */
static uint32_t spec_mask(const struct openb_nodes *nodes, char *spec)
{
    if (!*spec)
        return 0;
    uint32_t mask = 0;
    for (char *tok = strtok(spec, "|"); tok; tok = strtok(NULL, "|"))
        for (uint32_t m = 0; m < nodes->n_models; m++)
            if (strcmp(nodes->models[m], tok) == 0)
                mask |= 1u << m;
    return mask ? mask : 1u << (SHARE_MAX_MODELS - 1);
}

static int pod_row(struct csv *c, const struct openb_nodes *nodes, struct openb_pods *out,
                   struct sched_errbuf *eb)
{
    int64_t cpu, mem, num, milli, t;
    int rc = csv_int(c, 1, "cpu_milli", INT64_MAX / 4, &cpu, eb);
    if (!rc)
        rc = csv_int(c, 2, "memory_mib", INT64_MAX / 4, &mem, eb);
    if (!rc)
        rc = csv_int(c, 3, "num_gpu", NODE_MAX_GPUS, &num, eb);
    if (!rc)
        rc = csv_int(c, 4, "gpu_milli", SHARE_MILLI, &milli, eb);
    for (int col = 8; !rc && col <= 10; col++) /* times: checked, unused (no departures) */
        if (*c->field[col])
            rc = csv_int(c, col, pod_cols[col], INT64_MAX / 4, &t, eb);
    if (rc)
        return rc;
    if (!*c->field[0])
        return sched_fail(eb, SCHED_EINVAL, "%s:%zu: column 'name': empty", c->path, c->line);
    if (num > 0 && milli == 0)
        return sched_fail(eb, SCHED_EINVAL, "%s:%zu: column 'gpu_milli': 0 for a pod with %lld GPU",
                          c->path, c->line, (long long)num);
    if (num > 1 && milli != SHARE_MILLI)
        return sched_fail(eb, SCHED_EINVAL,
                          "%s:%zu: column 'gpu_milli': %lld with num_gpu %lld (a share of one GPU "
                          "is for 1-GPU pods; several GPUs are whole: 1000)",
                          c->path, c->line, (long long)milli, (long long)num);
    struct share_pod *p = &out->pods[out->n];
    memset(p, 0, sizeof(*p));
    p->cpu = cpu;
    p->mem = mem;
    p->num_gpu = (uint8_t)num;
    p->gpu_milli = (int16_t)(num ? milli : 0);
    p->models = num ? spec_mask(nodes, c->field[5]) : 0;
    if (!(out->names[out->n] = dup_str(c->field[0])))
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", c->path);
    out->n++;
    return 0;
}

static bool same_req(const struct share_pod *a, const struct share_pod *b)
{
    return a->cpu == b->cpu && a->mem == b->mem && a->num_gpu == b->num_gpu &&
           a->gpu_milli == b->gpu_milli && a->models == b->models;
}

/* FGD's key of a typical pod: cpu, GPU count, milli per GPU and model; no memory. */
static bool same_typical(const struct share_pod *a, const struct share_pod *b)
{
    return a->cpu == b->cpu && a->num_gpu == b->num_gpu && a->gpu_milli == b->gpu_milli &&
           a->models == b->models;
}

/* Typical pods in FGD's order: more pods first, then the larger request (cpu, milli, count,
 * model), as the simulator's reversed sort of its TargetPodList. */
static int typical_cmp(const void *x, const void *y)
{
    const struct share_type *a = x, *b = y;
    if (a->freq != b->freq)
        return a->freq > b->freq ? -1 : 1;
    const struct share_pod *p = &a->req, *q = &b->req;
    if (p->cpu != q->cpu)
        return p->cpu > q->cpu ? -1 : 1;
    if (p->gpu_milli != q->gpu_milli)
        return p->gpu_milli > q->gpu_milli ? -1 : 1;
    if (p->num_gpu != q->num_gpu)
        return p->num_gpu > q->num_gpu ? -1 : 1;
    return p->models == q->models ? 0 : p->models > q->models ? -1 : 1;
}

/* Request classes (equal requests; each pod's `type`) and FGD's typical pods (GetTypicalPods
 * with the experiments' settings: CPU-only pods included, the most popular requests until they
 * cover 95% of the pods, one at a time, their shares renormalised to sum 1). */
static int build_types(struct openb_pods *p, struct sched_errbuf *eb)
{
    struct share_pod *cls = calloc(p->n ? p->n : 1, sizeof(*cls));
    p->types = calloc(p->n ? p->n : 1, sizeof(*p->types));
    if (!cls || !p->types) {
        free(cls);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    p->n_classes = 0;
    p->n_types = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        uint32_t k = 0, t = 0;
        while (k < p->n_classes && !same_req(&cls[k], &p->pods[i]))
            k++;
        if (k == p->n_classes)
            cls[p->n_classes++] = p->pods[i];
        p->pods[i].type = k;
        while (t < p->n_types && !same_typical(&p->types[t].req, &p->pods[i]))
            t++;
        if (t == p->n_types)
            p->types[p->n_types++].req = p->pods[i];
        p->types[t].freq += 1.0; /* a count until normalised */
    }
    free(cls);
    qsort(p->types, p->n_types, sizeof(*p->types), typical_cmp);
    double cum = 0;
    uint32_t n = 0;
    while (n < p->n_types && cum < 95.0 * (double)p->n / 100.0) /* as FGD computes it */
        cum += p->types[n++].freq;
    p->n_types = n;
    for (uint32_t t = 0; t < n; t++)
        p->types[t].freq /= cum;
    return 0;
}

int openb_pods_read(const char *path, const struct openb_nodes *nodes, struct openb_pods *out,
                    struct sched_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    struct csv c;
    int rc = csv_open(&c, path, pod_cols, 11, "pod list", eb);
    size_t cap = 0, cap_names = 0;
    while (rc == 0) {
        int more = csv_row(&c, 11, path, eb);
        if (more <= 0) {
            rc = more;
            break;
        }
        if (grow((void **)&out->pods, &cap, out->n, sizeof(*out->pods)) ||
            grow((void **)&out->names, &cap_names, out->n, sizeof(*out->names))) {
            rc = sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
            break;
        }
        rc = pod_row(&c, nodes, out, eb);
    }
    if (c.f)
        fclose(c.f);
    if (rc == 0 && out->n == 0)
        rc = sched_fail(eb, SCHED_EINVAL, "%s: no pods", path);
    if (rc == 0)
        rc = build_types(out, eb);
    if (rc)
        openb_pods_free(out);
    return rc;
}

/* splitmix64: small, seedable, the same sequence on every platform. */
static uint64_t rng_next(uint64_t *s)
{
    return sched_mix64(*s += 0x9E3779B97F4A7C15ULL);
}

static uint32_t rng_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(((rng_next(s) >> 32) * (uint64_t)n) >> 32); /* n < 2^32: unbiased enough */
}

static int64_t pod_milli(const struct share_pod *p)
{
    return p->num_gpu == 1 ? p->gpu_milli : (int64_t)p->num_gpu * SHARE_MILLI;
}

int openb_arrivals(const struct openb_pods *p, int64_t gpu_milli_total, uint64_t seed,
                   uint32_t **out, uint32_t *n_out, struct sched_errbuf *eb)
{
    size_t cap = (size_t)p->n * 2 + 16, n = 0;
    uint32_t *o = malloc(cap * sizeof(*o));
    if (!o)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    uint64_t s = seed;
    int64_t demand = 0, target = gpu_milli_total * OPENB_CURVE_MAX / 100;
    /* every pod of the file, in a seeded random order (Fisher-Yates) */
    for (uint32_t i = 0; i < p->n; i++)
        o[n++] = i;
    for (uint32_t i = p->n; i > 1; i--) {
        uint32_t j = rng_below(&s, i);
        uint32_t t = o[i - 1];
        o[i - 1] = o[j];
        o[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        demand += pod_milli(&p->pods[o[i]]);
    /* then random draws from the file until the next would pass the target */
    for (;;) {
        uint32_t k = rng_below(&s, p->n);
        if (demand + pod_milli(&p->pods[k]) > target)
            break;
        if (n == cap) {
            cap *= 2;
            uint32_t *g = realloc(o, cap * sizeof(*o));
            if (!g) {
                free(o);
                return sched_fail(eb, SCHED_ENOMEM, "out of memory");
            }
            o = g;
        }
        o[n++] = k;
        demand += pod_milli(&p->pods[k]);
    }
    *out = o;
    *n_out = (uint32_t)n;
    return 0;
}

/* A seeded random permutation of n (FGD's simulator prefixes the node names with one; its
 * scheduler breaks ties by name), on a stream apart from the arrivals'. */
static uint32_t *node_ranks(uint32_t n, uint64_t seed)
{
    uint32_t *r = malloc((n ? n : 1) * sizeof(*r));
    if (!r)
        return NULL;
    uint64_t s = seed ^ 0x6A09E667F3BCC909ULL;
    for (uint32_t i = 0; i < n; i++)
        r[i] = i;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = rng_below(&s, i), t = r[i - 1];
        r[i - 1] = r[j];
        r[j] = t;
    }
    return r;
}

/* FGD's windows: sum and count of the allocated percentages per rounded arrived percentage,
 * and the point value when the arrived demand first reached each percentage. */
struct curve_acc {
    double sum[OPENB_CURVE_MAX + 2];
    uint32_t cnt[OPENB_CURVE_MAX + 2];
    double first[OPENB_CURVE_MAX + 1];
    int next; /* next whole percent whose first value is unset */
};

static void curve_add(struct curve_acc *a, double arrived_pct, double alloc_pct)
{
    double k = rint(arrived_pct); /* half to even, as Python's round() */
    if (k >= 0 && k <= OPENB_CURVE_MAX + 1) {
        a->sum[(int)k] += rint(alloc_pct * 100.0) / 100.0;
        a->cnt[(int)k]++;
    }
    while (a->next <= OPENB_CURVE_MAX && arrived_pct >= a->next)
        a->first[a->next++] = alloc_pct;
}

static void curve_finish(struct curve_acc *a, double alloc_pct, double *curve)
{
    for (; a->next <= OPENB_CURVE_MAX; a->next++) /* arrivals stop just short of 130% */
        a->first[a->next] = alloc_pct;
    for (int k = 0; k <= OPENB_CURVE_MAX; k++) {
        double sum = a->sum[k];
        uint32_t cnt = a->cnt[k];
        if (cnt == 0) {
            sum = (k > 0 ? a->sum[k - 1] : 0) + a->sum[k + 1];
            cnt = (k > 0 ? a->cnt[k - 1] : 0) + a->cnt[k + 1];
        }
        curve[k] = cnt ? sum / cnt : a->first[k];
    }
}

int openb_run(const struct openb_nodes *nodes, const struct openb_pods *pods, const uint32_t *order,
              uint32_t n_order, enum share_policy pol, uint64_t seed, struct openb_result *res,
              struct sched_errbuf *eb)
{
    memset(res, 0, sizeof(*res));
    struct share_cluster c = {0};
    c.n_nodes = nodes->n;
    c.nodes = malloc((size_t)nodes->n * sizeof(*c.nodes));
    struct curve_acc *acc = calloc(1, sizeof(*acc));
    if (!c.nodes || !acc) {
        free(c.nodes);
        free(acc);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    memcpy(c.nodes, nodes->nodes, (size_t)nodes->n * sizeof(*c.nodes));
    bool fgd = pol == SHARE_FGD || pol == SHARE_FGD_PLAIN;
    int rc = share_init(&c, fgd ? pods->types : NULL, fgd ? pods->n_types : 0, pods->n_classes, eb);
    if (rc) {
        free(c.nodes);
        free(acc);
        return rc;
    }
    uint32_t *rank = NULL;
    if (pol == SHARE_FGD_PLAIN || pol == SHARE_BESTFIT_PLAIN) {
        if (!(rank = node_ranks(nodes->n, seed))) {
            share_fini(&c);
            free(c.nodes);
            free(acc);
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        }
        c.rank = rank;
    }
    double total = (double)c.gpu_milli_total;
    int64_t arrived = 0;
    for (uint32_t i = 0; i < n_order; i++) {
        const struct share_pod *p = &pods->pods[order[i]];
        struct share_choice ch = share_choose(&c, p, pol);
        if (ch.node >= 0) {
            share_commit(&c, p, ch);
            res->placed++;
        } else {
            res->failed++;
        }
        res->arrived++;
        arrived += pod_milli(p);
        if (total > 0)
            curve_add(acc, 100.0 * (double)arrived / total,
                      100.0 * (double)c.gpu_milli_used / total);
    }
    curve_finish(acc, total > 0 ? 100.0 * (double)c.gpu_milli_used / total : 0.0, res->curve);
    free(acc);
    free(rank);
    share_fini(&c);
    free(c.nodes);
    return 0;
}

bool openb_sniff(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char head[64] = "";
    size_t n = fread(head, 1, sizeof(head) - 1, f);
    fclose(f);
    head[n] = '\0';
    const char *h = strncmp(head, "\xEF\xBB\xBF", 3) == 0 ? head + 3 : head;
    return strncmp(h, "sn,cpu_milli,memory_mib,gpu,model", 33) == 0 ||
           strncmp(h, "name,cpu_milli,memory_mib,num_gpu,gpu_milli", 43) == 0;
}
