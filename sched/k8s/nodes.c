/* sched/k8s/nodes.c: Nodes from NodeList files and from API objects (see nodes.h).
 *
 * Owns: reading `kubectl get nodes -o yaml|json` output (YAML through config/yaml_doc.h,
 * JSON through cJSON) behind one small read-only view, strict type checks with located error
 * messages; the daemon's node records (one Node object decoded once, copied into each cluster).
 * Must not touch: scheduling state, cluster_finalize() (callers finalize), node internals
 * beyond filling fresh nodes. Nodes are added to the caller's cluster; on error every node added
 * by the failing call is removed again (strings stay in the pool until cluster_free()).
 */
#include "sched/k8s/nodes.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "config/yaml_doc.h"
#include "sched/core/device.h"
#include "sched/core/hami.h"
#include "sched/core/log.h"
#include "sched/core/quantity.h"
#include "sched/core/res.h"
#include "sched/k8s/slice.h"

#define NODES_MAX_FILE (1024L * 1024 * 1024) /* refuse inputs larger than 1 GiB */

/* ---- a read-only view over a libyaml document or a cJSON tree -------------------------------- */

/* The kinds of config/yaml_doc.h, for JSON values too. */
enum vkind {
    VK_NONE = YDOC_NONE,
    VK_NULL = YDOC_NULL,
    VK_BOOL = YDOC_BOOL,
    VK_NUM = YDOC_NUM,
    VK_STR = YDOC_STR,
    VK_MAP = YDOC_MAP,
    VK_SEQ = YDOC_SEQ,
};

static const char *vkind_name(enum vkind k)
{
    return ydoc_kind_name((enum ydoc_kind)k);
}

/* Exactly one of y and j is set for a present value; both NULL means absent. */
struct val {
    yaml_node_t *y;
    const cJSON *j;
};

struct doc {
    const char *file;
    struct ydoc *yd; /* NULL when reading JSON */
    struct cluster *c;
    struct sched_errbuf *eb;
    const char *node_name; /* node being read, once known */
    long item;             /* its index in items[], or -1 */
    char num[64];          /* text of the last JSON number or boolean asked for */
    bool is_yaml;
    bool strict; /* a file: >32 GPUs, bad islands, duplicate names are refused here,
                    with their place (the live cache leaves such nodes to the model) */
    long *where; /* per node added: its line (YAML) or items[] index (JSON) */
    size_t n_where, cap_where;
};

static enum vkind vkind(struct val v)
{
    if (v.y)
        return (enum vkind)ydoc_kind(v.y);
    if (v.j) {
        if (cJSON_IsObject(v.j))
            return VK_MAP;
        if (cJSON_IsArray(v.j))
            return VK_SEQ;
        if (cJSON_IsString(v.j))
            return VK_STR;
        if (cJSON_IsNumber(v.j))
            return VK_NUM;
        if (cJSON_IsBool(v.j))
            return VK_BOOL;
        if (cJSON_IsNull(v.j))
            return VK_NULL;
    }
    return VK_NONE;
}

/* A value of kind VK_BOOL: whether it is true. */
static bool vtrue(struct val v)
{
    bool b = false;
    if (v.y)
        (void)ydoc_bool(v.y, &b);
    else
        b = cJSON_IsTrue(v.j);
    return b;
}

static bool absent_or_null(struct val v)
{
    enum vkind k = vkind(v);
    return k == VK_NONE || k == VK_NULL;
}

/* Text of a scalar; NULL for collections or a YAML scalar with an embedded NUL byte. */
static const char *vtext(struct doc *d, struct val v)
{
    if (v.y) {
        if (v.y->type != YAML_SCALAR_NODE)
            return NULL;
        const char *s = (const char *)v.y->data.scalar.value;
        return strlen(s) == v.y->data.scalar.length ? s : NULL;
    }
    if (!v.j)
        return NULL;
    if (cJSON_IsString(v.j))
        return v.j->valuestring;
    if (cJSON_IsNumber(v.j)) {
        double x = v.j->valuedouble;
        if (x >= -9e15 && x <= 9e15 && x == (double)(long long)x) {
            snprintf(d->num, sizeof(d->num), "%lld", (long long)x);
        } else {
            /* the shortest text that reads back as the same double: 0.1, not 0.10000000000000001 */
            for (int prec = 15; prec <= 17; prec++) {
                snprintf(d->num, sizeof(d->num), "%.*g", prec, x);
                if (strtod(d->num, NULL) == x)
                    break;
            }
        }
        return d->num;
    }
    if (cJSON_IsBool(v.j))
        return cJSON_IsTrue(v.j) ? "true" : "false";
    if (cJSON_IsNull(v.j))
        return "null";
    return NULL;
}

static struct val yval(const struct doc *d, int index)
{
    struct val v = {ydoc_node(d->yd, index), NULL};
    return v;
}

static size_t vcount(struct val v)
{
    if (v.y)
        return ydoc_count(v.y);
    if (v.j && (cJSON_IsObject(v.j) || cJSON_IsArray(v.j)))
        return (size_t)cJSON_GetArraySize(v.j);
    return 0;
}

/* Mapping and sequence iteration. */
struct iter {
    yaml_node_pair_t *pair, *pair_end;
    yaml_node_item_t *item, *item_end;
    const cJSON *j;
};

static struct iter viter(struct val v)
{
    struct iter it = {NULL, NULL, NULL, NULL, NULL};
    if (v.y && v.y->type == YAML_MAPPING_NODE) {
        it.pair = v.y->data.mapping.pairs.start;
        it.pair_end = v.y->data.mapping.pairs.top;
    } else if (v.y && v.y->type == YAML_SEQUENCE_NODE) {
        it.item = v.y->data.sequence.items.start;
        it.item_end = v.y->data.sequence.items.top;
    } else if (v.j) {
        it.j = v.j->child;
    }
    return it;
}

/* Next mapping entry: `key` is the key's value (for JSON, the entry itself, whose text is taken
 * from its name by vkey()). */
static bool map_next(const struct doc *d, struct iter *it, struct val *key, struct val *value)
{
    if (d->yd) {
        if (!it->pair || it->pair >= it->pair_end)
            return false;
        *key = yval(d, it->pair->key);
        *value = yval(d, it->pair->value);
        it->pair++;
        return true;
    }
    if (!it->j)
        return false;
    key->y = NULL;
    key->j = it->j;
    value->y = NULL;
    value->j = it->j;
    it->j = it->j->next;
    return true;
}

static bool seq_next(const struct doc *d, struct iter *it, struct val *value)
{
    if (d->yd) {
        if (!it->item || it->item >= it->item_end)
            return false;
        *value = yval(d, *it->item);
        it->item++;
        return true;
    }
    if (!it->j)
        return false;
    value->y = NULL;
    value->j = it->j;
    it->j = it->j->next;
    return true;
}

/* Text of a mapping key returned by map_next(); NULL when it is not a string. */
static const char *vkey(struct doc *d, struct val key)
{
    if (key.j)
        return key.j->string;
    return vkind(key) == VK_STR ? vtext(d, key) : NULL;
}

static struct val vget(struct doc *d, struct val m, const char *name)
{
    struct val none = {NULL, NULL};
    if (vkind(m) != VK_MAP)
        return none;
    if (m.j) {
        struct val r = {NULL, cJSON_GetObjectItemCaseSensitive(m.j, name)};
        return r;
    }
    struct iter it = viter(m);
    struct val k, v;
    while (map_next(d, &it, &k, &v)) {
        const char *ks = vkey(d, k);
        if (ks && strcmp(ks, name) == 0)
            return v;
    }
    return none;
}

/* ---- located errors -------------------------------------------------------------------------- */

/* "file:line:col: node "x": " (YAML) or "file: node "x" (items[3]): " (JSON), then the message. */
static int fail_at(struct doc *d, struct val at, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_at(struct doc *d, struct val at, int err, const char *fmt, ...)
{
    char prefix[320];
    char msg[SCHED_ERRBUF];
    size_t n = 0;
    if (at.y)
        n = (size_t)snprintf(prefix, sizeof(prefix), "%s:%zu:%zu: ", d->file,
                             at.y->start_mark.line + 1, at.y->start_mark.column + 1);
    else
        n = (size_t)snprintf(prefix, sizeof(prefix), "%s: ", d->file);
    if (n < sizeof(prefix)) {
        if (d->node_name && d->item >= 0 && !d->yd)
            snprintf(prefix + n, sizeof(prefix) - n, "node \"%s\" (items[%ld]): ", d->node_name,
                     d->item);
        else if (d->node_name)
            snprintf(prefix + n, sizeof(prefix) - n, "node \"%s\": ", d->node_name);
        else if (d->item >= 0)
            snprintf(prefix + n, sizeof(prefix) - n, "items[%ld]: ", d->item);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sched_fail(d->eb, err, "%s%s", prefix, msg);
}

static int fail_type(struct doc *d, struct val at, const char *field, const char *want)
{
    return fail_at(d, at, SCHED_EINVAL, "field %s: expected %s, got %s", field, want,
                   vkind_name(vkind(at)));
}

static int fail_nomem(struct doc *d, struct val at)
{
    return fail_at(d, at, SCHED_ENOMEM, "out of memory");
}

/* A required or optional string field: *out is NULL when absent (optional) or null. */
static int get_string(struct doc *d, struct val m, const char *key, const char *field,
                      bool required, const char **out)
{
    struct val v = vget(d, m, key);
    *out = NULL;
    if (absent_or_null(v)) {
        if (required)
            return fail_at(d, m, SCHED_EINVAL, "field %s: missing", field);
        return 0;
    }
    if (vkind(v) != VK_STR)
        return fail_type(d, v, field, "a string");
    *out = vtext(d, v);
    if (!*out)
        return fail_at(d, v, SCHED_EINVAL, "field %s: contains a NUL byte", field);
    if (required && !**out)
        return fail_at(d, v, SCHED_EINVAL, "field %s: empty", field);
    return 0;
}

/* An optional mapping or sequence: *out is absent when missing or null. */
static int get_coll(struct doc *d, struct val m, const char *key, const char *field,
                    enum vkind want, struct val *out)
{
    struct val v = vget(d, m, key);
    out->y = NULL;
    out->j = NULL;
    if (absent_or_null(v))
        return 0;
    if (vkind(v) != want)
        return fail_type(d, v, field, vkind_name(want));
    *out = v;
    return 0;
}

/* ---- one Node -------------------------------------------------------------------------------- */

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

/* metadata.labels / metadata.annotations: a mapping of strings to strings. */
static int read_kv(struct doc *d, struct val m, const char *field, const struct kv **out,
                   uint32_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t cnt = vcount(m);
    if (cnt == 0)
        return 0;
    if (cnt > UINT32_MAX / 2)
        return fail_at(d, m, SCHED_ERANGE, "field %s: too many entries", field);
    struct kv *kv = cluster_alloc(d->c, cnt * sizeof(*kv));
    if (!kv)
        return fail_nomem(d, m);
    struct iter it = viter(m);
    struct val k, v;
    size_t n = 0;
    while (map_next(d, &it, &k, &v) && n < cnt) {
        const char *ks = vkey(d, k);
        if (!ks || !*ks)
            return fail_at(d, k, SCHED_EINVAL, "field %s: key must be a non-empty string, got %s",
                           field, ks ? "an empty string" : vkind_name(vkind(k)));
        const char *vs = NULL;
        if (vkind(v) == VK_STR)
            vs = vtext(d, v);
        else
            return fail_at(d, v, SCHED_EINVAL, "field %s.%s: expected a string, got %s%s", field,
                           ks, vkind_name(vkind(v)),
                           d->yd && v.y && v.y->type == YAML_SCALAR_NODE ? " (quote it)" : "");
        if (!vs)
            return fail_at(d, v, SCHED_EINVAL, "field %s.%s: contains a NUL byte", field, ks);
        kv[n].key = cluster_strdup(d->c, ks);
        kv[n].value = cluster_strdup(d->c, vs);
        if (!kv[n].key || !kv[n].value)
            return fail_nomem(d, v);
        n++;
    }
    qsort(kv, n, sizeof(*kv), kv_cmp);
    for (size_t i = 1; i < n; i++)
        if (strcmp(kv[i - 1].key, kv[i].key) == 0)
            return fail_at(d, m, SCHED_EINVAL, "field %s: duplicate key \"%s\"", field, kv[i].key);
    *out = kv;
    *n_out = (uint32_t)n;
    return 0;
}

static int read_taints(struct doc *d, struct val seq, struct node *tmp)
{
    size_t cnt = vcount(seq);
    if (cnt == 0)
        return 0;
    if (cnt > UINT32_MAX / 2)
        return fail_at(d, seq, SCHED_ERANGE, "field spec.taints: too many entries");
    struct taint *t = cluster_alloc(d->c, cnt * sizeof(*t));
    if (!t)
        return fail_nomem(d, seq);
    struct iter it = viter(seq);
    struct val v;
    size_t n = 0;
    char field[64];
    while (seq_next(d, &it, &v) && n < cnt) {
        snprintf(field, sizeof(field), "spec.taints[%zu]", n);
        if (vkind(v) != VK_MAP)
            return fail_type(d, v, field, "a mapping");
        const char *key, *value, *effect;
        char sub[96];
        snprintf(sub, sizeof(sub), "%s.key", field);
        int rc = get_string(d, v, "key", sub, true, &key);
        if (rc)
            return rc;
        snprintf(sub, sizeof(sub), "%s.value", field);
        rc = get_string(d, v, "value", sub, false, &value);
        if (rc)
            return rc;
        snprintf(sub, sizeof(sub), "%s.effect", field);
        rc = get_string(d, v, "effect", sub, true, &effect);
        if (rc)
            return rc;
        if (strcmp(effect, "NoSchedule") == 0)
            t[n].effect = TAINT_NO_SCHEDULE;
        else if (strcmp(effect, "PreferNoSchedule") == 0)
            t[n].effect = TAINT_PREFER_NO_SCHEDULE;
        else if (strcmp(effect, "NoExecute") == 0)
            t[n].effect = TAINT_NO_EXECUTE;
        else
            return fail_at(d, vget(d, v, "effect"), SCHED_EINVAL,
                           "field %s: unknown effect \"%s\" (valid: NoSchedule, "
                           "PreferNoSchedule, NoExecute)",
                           sub, effect);
        t[n].key = cluster_strdup(d->c, key);
        t[n].value = cluster_strdup(d->c, value ? value : "");
        if (!t[n].key || !t[n].value)
            return fail_nomem(d, v);
        n++;
    }
    tmp->taints = t;
    tmp->n_taints = (uint32_t)n;
    return 0;
}

static int read_resources(struct doc *d, struct val m, const char *field, struct res_vec *out)
{
    bool seen[RES_MAX] = {false};
    struct iter it = viter(m);
    struct val k, v;
    while (map_next(d, &it, &k, &v)) {
        const char *name = vkey(d, k);
        if (!name || !*name)
            return fail_at(d, k, SCHED_EINVAL, "field %s: resource name must be a non-empty string",
                           field);
        struct sched_errbuf inner;
        inner.msg[0] = '\0';
        int id;
        int rc = res_intern(name, &id, &inner);
        if (rc)
            return fail_at(d, k, rc, "field %s.%s: %s", field, name, inner.msg);
        if (id < 0 || id >= RES_MAX)
            return fail_at(d, k, SCHED_ERANGE, "field %s.%s: bad resource id", field, name);
        if (seen[id])
            return fail_at(d, k, SCHED_EINVAL, "field %s.%s: listed twice", field, name);
        seen[id] = true;
        enum vkind kind = vkind(v);
        if (kind != VK_STR && kind != VK_NUM)
            return fail_at(d, v, SCHED_EINVAL,
                           "field %s.%s: expected a quantity (string or number), "
                           "got %s",
                           field, name, vkind_name(kind));
        const char *q = vtext(d, v);
        if (!q)
            return fail_at(d, v, SCHED_EINVAL, "field %s.%s: contains a NUL byte", field, name);
        int64_t val = 0;
        /* res_parse() with the resource's scale, called directly so that the message reads
         * "field status.allocatable.cpu: invalid quantity "abc": ..." without repeating the
         * resource name. */
        rc = qty_parse(q, res_scale(id), &val, &inner);
        if (rc)
            return fail_at(d, v, rc, "field %s.%s: %s", field, name, inner.msg);
        if (val < 0)
            return fail_at(d, v, SCHED_EINVAL,
                           "field %s.%s: negative quantity "
                           "\"%s\"",
                           field, name, q);
        out->v[id] = val;
    }
    return 0;
}

/* Another accelerator kind's count (amd.com/gpu next to nvidia.com/gpu) into the accelerator
 * slot too (res.h "device kinds"). */
static int fold_kinds(struct doc *d, struct val m, const char *field, struct res_vec *v)
{
    struct sched_errbuf inner;
    if (res_kinds_fold(v, &inner) != 0)
        return fail_at(d, m, SCHED_EINVAL, "field %s: %s", field, inner.msg);
    return 0;
}

static int read_conditions(struct doc *d, struct val seq, struct node *tmp)
{
    struct iter it = viter(seq);
    struct val v;
    size_t i = 0;
    bool any = false, ready = false;
    char field[64], sub[96];
    for (; seq_next(d, &it, &v); i++) {
        snprintf(field, sizeof(field), "status.conditions[%zu]", i);
        if (vkind(v) != VK_MAP)
            return fail_type(d, v, field, "a mapping");
        const char *type, *status;
        snprintf(sub, sizeof(sub), "%s.type", field);
        int rc = get_string(d, v, "type", sub, true, &type);
        if (rc)
            return rc;
        snprintf(sub, sizeof(sub), "%s.status", field);
        rc = get_string(d, v, "status", sub, true, &status);
        if (rc)
            return rc;
        if (strcmp(status, "True") != 0 && strcmp(status, "False") != 0 &&
            strcmp(status, "Unknown") != 0)
            return fail_at(d, vget(d, v, "status"), SCHED_EINVAL,
                           "field %s: expected \"True\", \"False\" or \"Unknown\", got \"%s\"", sub,
                           status);
        any = true;
        if (strcmp(type, "Ready") == 0)
            ready = strcmp(status, "True") == 0;
    }
    /* No conditions at all: a hand-written node, taken as ready. Conditions without Ready: the
     * node controller has not reported, so not ready. */
    tmp->ready = any ? ready : true;
    return 0;
}

/* The value of annotation `key` among a node's unsorted annotations, or NULL. */
static const char *node_kv(const struct node *n, const char *key)
{
    for (uint32_t i = 0; i < n->n_annotations; i++)
        if (strcmp(n->annotations[i].key, key) == 0)
            return n->annotations[i].value;
    return NULL;
}

/* HAMi's device plugin advertises nvidia.com/gpu as devices x split count and names the devices
 * in hami.io/node-nvidia-register: the node offers those devices (sched/core/hami.h). A register
 * that cannot be read: a file is refused; a live node offers no device, said once per decode. */
static int hami_gpus(struct doc *d, struct val ann_map, struct node *n)
{
    const char *reg = node_kv(n, HAMI_NODE_REGISTER);
    if (!reg || n->alloc.v[RES_GPU] <= 0)
        return 0;
    struct sched_errbuf eb = {{0}};
    int k = hami_node_devices(reg, &eb);
    if (k >= 0) {
        n->alloc.v[RES_GPU] = k;
        return 0;
    }
    if (d->strict)
        return fail_at(d, vget(d, ann_map, HAMI_NODE_REGISTER), SCHED_EINVAL, "annotation %s",
                       eb.msg);
    LOG_WARN("nodes", "%s: %s: the node offers no %s", d->file, eb.msg, res_name(RES_GPU));
    n->alloc.v[RES_GPU] = 0;
    return 0;
}

static int load_node(struct doc *d, struct val v, bool in_list)
{
    d->node_name = NULL;
    if (vkind(v) != VK_MAP)
        return fail_at(d, v, SCHED_EINVAL, "expected a Node (a mapping), got %s",
                       vkind_name(vkind(v)));
    if (in_list) {
        const char *kind;
        int rc = get_string(d, v, "kind", "kind", false, &kind);
        if (rc)
            return rc;
        if (kind && strcmp(kind, "Node") != 0)
            return fail_at(d, vget(d, v, "kind"), SCHED_EINVAL,
                           "field kind: \"%s\" is not Node or ResourceSlice", kind);
    }
    struct val meta;
    int rc = get_coll(d, v, "metadata", "metadata", VK_MAP, &meta);
    if (rc)
        return rc;
    if (vkind(meta) == VK_NONE)
        return fail_at(d, v, SCHED_EINVAL, "field metadata: missing");
    const char *name;
    rc = get_string(d, meta, "name", "metadata.name", true, &name);
    if (rc)
        return rc;
    d->node_name = name;

    struct node tmp;
    memset(&tmp, 0, sizeof(tmp));
    struct val m;
    if ((rc = get_coll(d, meta, "labels", "metadata.labels", VK_MAP, &m)) ||
        (rc = read_kv(d, m, "metadata.labels", &tmp.labels, &tmp.n_labels)))
        return rc;
    if ((rc = get_coll(d, meta, "annotations", "metadata.annotations", VK_MAP, &m)) ||
        (rc = read_kv(d, m, "metadata.annotations", &tmp.annotations, &tmp.n_annotations)))
        return rc;
    struct val ann_map = m;

    struct val spec, status;
    if ((rc = get_coll(d, v, "spec", "spec", VK_MAP, &spec)))
        return rc;
    if (vkind(spec) == VK_MAP) {
        struct val u = vget(d, spec, "unschedulable");
        if (vkind(u) == VK_BOOL)
            tmp.unschedulable = vtrue(u);
        else if (!absent_or_null(u))
            return fail_type(d, u, "spec.unschedulable", "a boolean");
        if ((rc = get_coll(d, spec, "taints", "spec.taints", VK_SEQ, &m)) ||
            (rc = read_taints(d, m, &tmp)))
            return rc;
    }
    tmp.ready = true;
    if ((rc = get_coll(d, v, "status", "status", VK_MAP, &status)))
        return rc;
    if (vkind(status) == VK_MAP) {
        if ((rc = get_coll(d, status, "allocatable", "status.allocatable", VK_MAP, &m)) ||
            (rc = read_resources(d, m, "status.allocatable", &tmp.alloc)) ||
            (rc = fold_kinds(d, m, "status.allocatable", &tmp.alloc)))
            return rc;
        if ((rc = hami_gpus(d, ann_map, &tmp)))
            return rc;
        if (d->strict && tmp.alloc.v[RES_GPU] > NODE_MAX_GPUS)
            return fail_at(d, m, SCHED_ERANGE,
                           "field status.allocatable: %lld GPUs; a node may have at most %d "
                           "(GPU sets are 32-bit masks)",
                           (long long)tmp.alloc.v[RES_GPU], NODE_MAX_GPUS);
        struct res_vec cap;
        memset(&cap, 0, sizeof(cap));
        if ((rc = get_coll(d, status, "capacity", "status.capacity", VK_MAP, &m)) ||
            (rc = read_resources(d, m, "status.capacity", &cap)) ||
            (rc = fold_kinds(d, m, "status.capacity", &cap)))
            return rc;
        if (d->strict && cap.v[RES_GPU] > NODE_MAX_GPUS)
            return fail_at(d, m, SCHED_ERANGE,
                           "field status.capacity: %lld GPUs; a node may have at most %d "
                           "(GPU sets are 32-bit masks)",
                           (long long)cap.v[RES_GPU], NODE_MAX_GPUS);
        if (cap.v[RES_GPU] > tmp.alloc.v[RES_GPU] && node_kv(&tmp, HAMI_NODE_REGISTER))
            cap.v[RES_GPU] = tmp.alloc.v[RES_GPU]; /* HAMi: capacity counts virtual devices */
        /* devices the kubelet no longer offers: capacity above allocatable */
        tmp.gpu_capacity =
            (uint8_t)(cap.v[RES_GPU] > NODE_MAX_GPUS ? NODE_MAX_GPUS : cap.v[RES_GPU]);
        if ((rc = get_coll(d, status, "conditions", "status.conditions", VK_SEQ, &m)) ||
            (rc = read_conditions(d, m, &tmp)))
            return rc;
    }

    for (uint32_t i = 0; d->strict && i < tmp.n_annotations && tmp.alloc.v[RES_GPU] > 0; i++) {
        if (strcmp(tmp.annotations[i].key, ANNOT_GPU_ISLANDS) != 0)
            continue;
        uint32_t isl[NODE_MAX_ISLANDS];
        uint8_t n_isl = 0;
        struct sched_errbuf inner = {{0}};
        if (gpu_islands_parse(tmp.annotations[i].value, (uint8_t)tmp.alloc.v[RES_GPU], isl, &n_isl,
                              &inner) != 0)
            return fail_at(d, vget(d, ann_map, ANNOT_GPU_ISLANDS), SCHED_EINVAL,
                           "annotation %s: %s", ANNOT_GPU_ISLANDS, inner.msg);
    }
    if (d->strict) {
        if (d->n_where == d->cap_where) {
            size_t nc = d->cap_where ? d->cap_where * 2 : 64;
            long *w = realloc(d->where, nc * sizeof(*w));
            if (!w)
                return fail_nomem(d, v);
            d->where = w;
            d->cap_where = nc;
        }
        d->where[d->n_where++] = v.y ? (long)v.y->start_mark.line + 1 : d->item;
    }
    struct node *n = cluster_add_node(d->c, name);
    if (!n)
        return fail_nomem(d, v);
    const char *keep = n->name;
    *n = tmp;
    n->name = keep;
    return 0;
}

/* ---- ResourceSlices (DRA devices: sched/kube/dra.h reads them, sched/core/dra.h counts) ---- */

/* The value as cJSON (a YAML scalar stays a string unless it reads as a number or boolean). */
static cJSON *val_json(struct doc *d, struct val v)
{
    if (v.j)
        return cJSON_Duplicate(v.j, 1);
    struct val k, x;
    struct iter it = viter(v);
    cJSON *o = NULL;
    switch (vkind(v)) {
    case VK_MAP:
        o = cJSON_CreateObject();
        while (o && map_next(d, &it, &k, &x)) {
            cJSON *c = val_json(d, x);
            if (!c || !vkey(d, k) || !cJSON_AddItemToObject(o, vkey(d, k), c)) {
                cJSON_Delete(c);
                cJSON_Delete(o);
                return NULL;
            }
        }
        return o;
    case VK_SEQ:
        o = cJSON_CreateArray();
        while (o && seq_next(d, &it, &x)) {
            cJSON *c = val_json(d, x);
            if (!c || !cJSON_AddItemToArray(o, c)) {
                cJSON_Delete(c);
                cJSON_Delete(o);
                return NULL;
            }
        }
        return o;
    case VK_NUM:
        return cJSON_CreateNumber(strtod(vtext(d, v), NULL));
    case VK_BOOL:
        return cJSON_CreateBool(vtrue(v));
    case VK_STR:
        return cJSON_CreateString(vtext(d, v) ? vtext(d, v) : "");
    default:
        return cJSON_CreateNull();
    }
}

static int load_slice(struct doc *d, struct val v)
{
    d->node_name = NULL;
    if ((!d->c->dra && !(d->c->dra = dra_inv_new())) ||
        (!d->c->dra_mig && !(d->c->dra_mig = dra_inv_new())))
        return fail_nomem(d, v);
    cJSON *o = val_json(d, v);
    if (!o)
        return fail_nomem(d, v);
    struct sched_errbuf inner;
    int rc = k8s_slice_put(d->c->dra, o, &inner);
    if (rc == 0) /* its MIG devices too, as the daemon reads them (sched/kube/mig.h) */
        rc = k8s_slice_typed_event(d->c->dra_mig, o, false, device_dra()->driver, DRA_MIG_TYPE);
    cJSON_Delete(o);
    return rc ? fail_at(d, v, rc, "%s", inner.msg) : 0;
}

/* A document: a Node, a ResourceSlice, or a NodeList / List of them. */
static int load_root(struct doc *d, struct val root)
{
    d->node_name = NULL;
    d->item = -1;
    if (vkind(root) != VK_MAP)
        return fail_at(d, root, SCHED_EINVAL,
                       "expected a Node, NodeList or List (a mapping), got %s",
                       vkind_name(vkind(root)));
    const char *kind;
    int rc = get_string(d, root, "kind", "kind", true, &kind);
    if (rc)
        return rc;
    if (strcmp(kind, "Node") == 0)
        return load_node(d, root, false);
    if (strcmp(kind, "ResourceSlice") == 0)
        return load_slice(d, root);
    if (strcmp(kind, "NodeList") != 0 && strcmp(kind, "List") != 0)
        return fail_at(d, vget(d, root, "kind"), SCHED_EINVAL,
                       "field kind: \"%s\" is not Node, ResourceSlice, NodeList or List", kind);
    struct val items;
    if ((rc = get_coll(d, root, "items", "items", VK_SEQ, &items)))
        return rc;
    struct iter it = viter(items);
    struct val v;
    for (long i = 0; vkind(items) == VK_SEQ && seq_next(d, &it, &v); i++) {
        d->item = i;
        const char *ik = NULL;
        if (vkind(v) == VK_MAP && (rc = get_string(d, v, "kind", "kind", false, &ik)))
            return rc;
        if ((rc =
                 ik && strcmp(ik, "ResourceSlice") == 0 ? load_slice(d, v) : load_node(d, v, true)))
            return rc;
    }
    d->node_name = NULL;
    d->item = -1;
    return 0;
}

/* ---- JSON and YAML front ends ---------------------------------------------------------------- */

static void line_col(const char *data, size_t len, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (data[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static int load_json(struct doc *d, const char *data, size_t len)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, 0);
    size_t line, col;
    if (!root) {
        size_t off = end && end >= data ? (size_t)(end - data) : 0;
        line_col(data, len, off, &line, &col);
        return sched_fail(d->eb, SCHED_EINVAL, "%s:%zu:%zu: invalid JSON", d->file, line, col);
    }
    size_t off = end && end >= data ? (size_t)(end - data) : len;
    while (off < len && (data[off] == ' ' || data[off] == '\t' || data[off] == '\r' ||
                         data[off] == '\n' || data[off] == '\0'))
        off++;
    int rc;
    if (off < len) {
        line_col(data, len, off, &line, &col);
        rc = sched_fail(d->eb, SCHED_EINVAL, "%s:%zu:%zu: invalid JSON: data after the value",
                        d->file, line, col);
    } else {
        struct val v = {NULL, root};
        rc = load_root(d, v);
    }
    cJSON_Delete(root);
    return rc;
}

/* Every document of the stream (config/yaml_doc.h: nesting guard, syntax errors with
 * file:line:column). */
static int load_yaml(struct doc *d, const char *data, size_t len)
{
    struct ydoc y;
    int rc = ydoc_open(&y, d->file, data, len, YDOC_MAX_DEPTH, d->eb), docs = 0;
    while (!rc) {
        yaml_node_t *root;
        if ((rc = ydoc_next(&y, &root)) || !root)
            break;
        docs++;
        d->yd = &y;
        d->is_yaml = true;
        struct val v = {root, NULL};
        rc = load_root(d, v);
        d->yd = NULL;
    }
    ydoc_close(&y);
    if (!rc && docs == 0)
        rc = sched_fail(d->eb, SCHED_EINVAL, "%s: no YAML document", d->file);
    return rc;
}

static const struct cluster *sort_c;
static uint32_t sort_n0;

static int cmp_node_name(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int k = strcmp(sort_c->nodes[sort_n0 + x].name, sort_c->nodes[sort_n0 + y].name);
    return k ? k : (x > y) - (x < y);
}

/* Two nodes of one file with the same name: refused at the second, naming the first. */
static int check_names(struct doc *d, uint32_t n0)
{
    uint32_t n = d->c->n_nodes - n0;
    if (n < 2 || d->n_where != n)
        return 0;
    uint32_t *ix = malloc(n * sizeof(*ix));
    if (!ix)
        return sched_fail(d->eb, SCHED_ENOMEM, "%s: out of memory", d->file);
    for (uint32_t i = 0; i < n; i++)
        ix[i] = i;
    sort_c = d->c;
    sort_n0 = n0;
    qsort(ix, n, sizeof(*ix), cmp_node_name);
    int64_t best = -1, first = -1;
    for (uint32_t i = 1; i < n; i++)
        if (strcmp(d->c->nodes[n0 + ix[i]].name, d->c->nodes[n0 + ix[i - 1]].name) == 0 &&
            (best < 0 || ix[i] < best)) {
            best = ix[i];
            first = ix[i - 1];
            while (i + 1 < n &&
                   strcmp(d->c->nodes[n0 + ix[i + 1]].name, d->c->nodes[n0 + ix[i]].name) == 0)
                i++;
        }
    int rc = 0;
    if (best >= 0) {
        const char *name = d->c->nodes[n0 + best].name;
        if (d->is_yaml)
            rc = sched_fail(d->eb, SCHED_EEXIST,
                            "%s:%ld: node \"%s\": duplicate node name (first at line %ld)", d->file,
                            d->where[best], name, d->where[first]);
        else
            rc = sched_fail(d->eb, SCHED_EEXIST,
                            "%s: node \"%s\" (items[%ld]): duplicate node name (first at "
                            "items[%ld])",
                            d->file, name, d->where[best], d->where[first]);
    }
    free(ix);
    return rc;
}

int nodes_load_buffer(struct cluster *c, const char *name, const char *data, size_t len,
                      struct sched_errbuf *eb)
{
    if (!name)
        name = "<input>";
    if (!c)
        return sched_fail(eb, SCHED_EINVAL, "%s: no cluster", name);
    if (!data && len)
        return sched_fail(eb, SCHED_EINVAL, "%s: no data", name);
    size_t i = 0;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        i = 3; /* UTF-8 byte order mark */
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i >= len)
        return sched_fail(eb, SCHED_EINVAL, "%s: empty input", name);
    struct doc d;
    memset(&d, 0, sizeof(d));
    d.file = name;
    d.c = c;
    d.eb = eb;
    d.item = -1;
    d.strict = true;
    uint32_t n0 = c->n_nodes;
    int rc = data[i] == '{' ? load_json(&d, data, len) : load_yaml(&d, data, len);
    if (!rc)
        rc = check_names(&d, n0);
    free(d.where);
    if (rc)
        c->n_nodes = n0;
    return rc;
}

int nodes_load_file(struct cluster *c, const char *path, struct sched_errbuf *eb)
{
    if (!path)
        return sched_fail(eb, SCHED_EINVAL, "nodes: no file name");
    FILE *f = fopen(path, "rb");
    if (!f)
        return sched_fail(eb, SCHED_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 64 * 1024, len = 0;
    char *buf = malloc(cap);
    int rc = 0;
    if (!buf) {
        fclose(f);
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
    }
    for (;;) {
        if (len == cap) {
            if (cap >= (size_t)NODES_MAX_FILE) {
                rc =
                    sched_fail(eb, SCHED_ERANGE, "%s: larger than %ld bytes", path, NODES_MAX_FILE);
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                rc = sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                rc = sched_fail(eb, SCHED_EIO, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (!rc)
        rc = nodes_load_buffer(c, path, buf, len, eb);
    free(buf);
    return rc;
}

/* ---- one Node object, kept by the daemon's cache ------------------------------------------- */

static size_t rounded(size_t n)
{
    return (n + 15u) & ~(size_t)15u;
}

static size_t kv_bytes(const struct kv *kv, uint32_t n)
{
    size_t b = rounded(n * sizeof(*kv));
    for (uint32_t i = 0; i < n; i++)
        b += rounded(strlen(kv[i].key) + 1) + rounded(strlen(kv[i].value) + 1);
    return b;
}

/* Where node_copy puts what it copies: a record's arena or a cluster's pool. */
typedef void *alloc_fn(void *ctx, size_t n);

static void *in_arena(void *ctx, size_t n)
{
    return arena_alloc(ctx, n);
}

static void *in_pool(void *ctx, size_t n)
{
    return cluster_alloc(ctx, n);
}

static const char *dup_in(alloc_fn *fn, void *ctx, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = fn(ctx, n);
    return d ? memcpy(d, s, n) : NULL;
}

static bool kv_copy(alloc_fn *fn, void *ctx, const struct kv *kv, uint32_t n, const struct kv **out)
{
    struct kv *v = n ? fn(ctx, n * sizeof(*v)) : NULL;
    for (uint32_t i = 0; v && i < n; i++)
        if (!(v[i].key = dup_in(fn, ctx, kv[i].key)) ||
            !(v[i].value = dup_in(fn, ctx, kv[i].value)))
            return false;
    *out = v;
    return v || n == 0;
}

/* Node `src` into dst, its labels, annotations and taints copied (not its name). */
static bool node_copy(alloc_fn *fn, void *ctx, const struct node *src, struct node *dst)
{
    *dst = *src;
    struct taint *t = src->n_taints ? fn(ctx, src->n_taints * sizeof(*t)) : NULL;
    if (src->n_taints && !t)
        return false;
    for (uint32_t i = 0; i < src->n_taints; i++) {
        t[i] = src->taints[i];
        if (!(t[i].key = dup_in(fn, ctx, src->taints[i].key)) ||
            !(t[i].value = dup_in(fn, ctx, src->taints[i].value)))
            return false;
    }
    dst->taints = t;
    return kv_copy(fn, ctx, src->labels, src->n_labels, &dst->labels) &&
           kv_copy(fn, ctx, src->annotations, src->n_annotations, &dst->annotations);
}

int nodes_decode(const cJSON *node, const char *source, struct nodes_rec **out,
                 struct sched_errbuf *eb)
{
    *out = NULL;
    struct cluster *tmp = cluster_new(); /* the reader fills a cluster: one node, then dropped */
    struct nodes_rec *r = calloc(1, sizeof(*r));
    if (!tmp || !r) {
        cluster_free(tmp);
        free(r);
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", source ? source : "node");
    }
    struct doc d;
    memset(&d, 0, sizeof(d));
    d.file = source ? source : "<input>";
    d.c = tmp;
    d.eb = eb;
    d.item = -1;
    struct val v = {NULL, node};
    int rc = node ? load_node(&d, v, false) : sched_fail(eb, SCHED_EINVAL, "%s: no node", d.file);
    if (rc == 0) {
        const struct node *n = &tmp->nodes[0];
        const char *uid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(node, "metadata"), "uid"));
        size_t bytes = rounded(strlen(n->name) + 1) + (uid ? rounded(strlen(uid) + 1) : 0) +
                       kv_bytes(n->labels, n->n_labels) +
                       kv_bytes(n->annotations, n->n_annotations) +
                       rounded(n->n_taints * sizeof(struct taint));
        for (uint32_t i = 0; i < n->n_taints; i++)
            bytes +=
                rounded(strlen(n->taints[i].key) + 1) + rounded(strlen(n->taints[i].value) + 1);
        arena_init(&r->mem, bytes); /* one chunk holds it all */
        if (!node_copy(in_arena, &r->mem, n, &r->node) ||
            !(r->node.name = arena_strdup(&r->mem, n->name)) ||
            (uid && !(r->uid = arena_strdup(&r->mem, uid))))
            rc = sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", d.file);
    }
    cluster_free(tmp);
    if (rc) {
        nodes_rec_free(r);
        return rc;
    }
    /* A live node is never refused (a file is: see load_node): one with more GPUs than a mask
     * indexes is offered with NODE_MAX_GPUS of them, said once per decode (once per change of
     * the node: the cache keeps the record). */
    int64_t gpus = r->node.alloc.v[RES_GPU];
    if (gpus > NODE_MAX_GPUS) {
        LOG_WARN("nodes",
                 "%s: %s %lld is more than the %d per node the scheduler can place on: only %d "
                 "are used",
                 d.file, res_name(RES_GPU), (long long)gpus, NODE_MAX_GPUS, NODE_MAX_GPUS);
        r->node.alloc.v[RES_GPU] = NODE_MAX_GPUS;
    }
    *out = r;
    return 0;
}

void nodes_rec_free(struct nodes_rec *r)
{
    if (r) {
        arena_fini(&r->mem);
        free(r);
    }
}

bool nodes_kv_same(const struct kv *a, uint32_t na, const struct kv *b, uint32_t nb)
{
    if (na != nb)
        return false;
    for (uint32_t i = 0; i < na; i++)
        if (strcmp(a[i].key, b[i].key) != 0 || strcmp(a[i].value, b[i].value) != 0)
            return false;
    return true;
}

/* The node annotations the scheduler reads (the islands, HAMi's register). Any other may change
 * without a rebuild: HAMi rewrites hami.io/node-handshake-nvidia on every node every 15 to 30 s.
 * A new reader of a node annotation adds its key here. */
static const char *const read_annotations[] = {ANNOT_GPU_ISLANDS, HAMI_NODE_REGISTER};

static bool annotations_same(const struct node *x, const struct node *y)
{
    for (size_t i = 0; i < sizeof(read_annotations) / sizeof(read_annotations[0]); i++) {
        const char *a = node_kv(x, read_annotations[i]), *b = node_kv(y, read_annotations[i]);
        if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
            return false;
    }
    return true;
}

bool nodes_rec_same(const struct nodes_rec *a, const struct nodes_rec *b)
{
    const struct node *x = &a->node, *y = &b->node;
    if (strcmp(x->name, y->name) != 0 || memcmp(&x->alloc, &y->alloc, sizeof(x->alloc)) != 0 ||
        x->ready != y->ready || x->unschedulable != y->unschedulable ||
        x->gpu_capacity != y->gpu_capacity || x->n_taints != y->n_taints ||
        !nodes_kv_same(x->labels, x->n_labels, y->labels, y->n_labels) || !annotations_same(x, y))
        return false;
    for (uint32_t i = 0; i < x->n_taints; i++)
        if (x->taints[i].effect != y->taints[i].effect ||
            strcmp(x->taints[i].key, y->taints[i].key) != 0 ||
            strcmp(x->taints[i].value, y->taints[i].value) != 0)
            return false;
    return true;
}

int nodes_rec_add(struct cluster *c, const struct nodes_rec *r)
{
    struct node tmp;
    if (!node_copy(in_pool, c, &r->node, &tmp))
        return SCHED_ENOMEM;
    struct node *n = cluster_add_node(c, r->node.name);
    if (!n)
        return SCHED_ENOMEM;
    const char *keep = n->name;
    *n = tmp;
    n->name = keep;
    return 0;
}
