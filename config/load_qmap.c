/* config/load_qmap.c: the quotaMapping section (see load.h and config_qmap in model.h).
 *
 * Owns: reading and checking the entries that make one resource (an extended resource such as
 * nvidia.com/mig-1g.10gb, or the devices of a DeviceClass) count against the quota of another
 * with a weight. Three steps, so that a rejected file interns no resource name (load_tree.c's
 * rule): read and check the entries before the quota tree (cl_parse_qmap); refuse a mapped
 * source that has a quota and count the slots once the tree's entries are read, before it
 * interns its names (cl_qmap_check); intern after the tree (cl_qmap_intern).
 */
#include <stdlib.h>
#include <string.h>

#include "config/load.h"
#include "sched/core/dra.h"

/* Bounds on a weight's parts and on the per-target denominator (the quota tree keeps a mapped
 * target's quota in 1/lcm units: 10^6 keeps 64-bit counts exact up to 9.2e12 of the target). */
#define QMAP_MAX_NUM   1000000
#define QMAP_MAX_SCALE 1000000

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* "3", "0.125" or "1/7" into num/den, reduced; false when it is none of these or too large. */
static bool weight_parse(const char *s, size_t len, int64_t *num, int64_t *den)
{
    int64_t n = 0, d = 1, part = 0;
    int where = 0; /* 0 integer part, 1 decimals, 2 denominator */
    size_t digits = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9') {
            if (++digits > 7)
                return false;
            if (where == 2)
                part = part * 10 + (c - '0');
            else {
                n = n * 10 + (c - '0');
                if (where == 1)
                    d *= 10;
            }
        } else if ((c == '.' || c == '/') && where == 0 && digits > 0) {
            where = c == '.' ? 1 : 2;
            digits = 0;
        } else {
            return false;
        }
    }
    if (digits == 0)
        return false;
    if (where == 2) {
        if (part == 0)
            return false;
        d = part;
    }
    int64_t g = n ? gcd64(n, d) : d;
    *num = n / g;
    *den = d / g;
    return *num <= QMAP_MAX_NUM && *den <= QMAP_MAX_SCALE;
}

/* One entry as read, before its names are interned. */
struct qm_raw {
    const char *source, *target, *device_class;
    int64_t num, den;
    yaml_mark_t mark, source_mark;
};

static int read_name(struct ctx *x, yaml_node_t *e, const char *key, const char **out,
                     yaml_mark_t *mark)
{
    yaml_node_t *v = cl_map_opt(x, e, key);
    if (!v)
        return 0;
    cl_path_push(x, key);
    int rc = cl_get_name(x, v, out);
    struct sched_errbuf reb;
    if (!rc && strcmp(key, "deviceClass") != 0 && res_check_name(*out, &reb) != 0)
        rc = cl_fail(x, &v->start_mark, "%s", reb.msg);
    cl_path_pop(x);
    *mark = v->start_mark;
    return rc;
}

static int read_entry(struct ctx *x, yaml_node_t *e, struct qm_raw *r)
{
    static const char *const keys[] = {"resource", "deviceClass", "quotaResource", "weight", NULL};
    int rc = cl_expect_mapping(x, e);
    if (!rc)
        rc = cl_check_map(x, e, keys);
    if (rc)
        return rc;
    r->mark = e->start_mark;
    yaml_mark_t m;
    if ((rc = read_name(x, e, "resource", &r->source, &r->source_mark)) ||
        (rc = read_name(x, e, "deviceClass", &r->device_class, &m)) ||
        (rc = read_name(x, e, "quotaResource", &r->target, &m)))
        return rc;
    if ((r->source != NULL) == (r->device_class != NULL))
        return cl_fail(x, &e->start_mark,
                       "give exactly one of resource (an extended resource such as "
                       "nvidia.com/mig-1g.10gb) or deviceClass (a DeviceClass name)");
    if (!r->target)
        return cl_missing(x, e, "quotaResource", " (the quota resource it counts as)");
    if (r->device_class) {
        char name[CONFIG_NAME_MAX + 64];
        int k = snprintf(name, sizeof(name), "%s%s", DRA_CLASS_RES_PREFIX, r->device_class);
        struct sched_errbuf reb;
        r->source_mark = m;
        if (k < 0 || (size_t)k >= sizeof(name) || res_check_name(name, &reb) != 0)
            return cl_fail(x, &m,
                           "DeviceClass name \"%s\" is too long or not a DNS label "
                           "(at most 63 characters: a-z, 0-9, '-', '.')",
                           r->device_class);
        if (!(r->source = config_pool_strndup(x->pool, name, (size_t)k)))
            return cl_oom(x);
    }
    r->num = r->den = 1;
    yaml_node_t *w = cl_map_opt(x, e, "weight");
    if (w) {
        cl_path_push(x, "weight");
        const char *s;
        size_t len;
        rc = cl_get_text(x, w, &s, &len);
        if (!rc && !weight_parse(s, len, &r->num, &r->den)) {
            char q[ESC_CAP];
            rc = cl_fail(x, &w->start_mark,
                         "weight \"%s\": expected a number >= 0 such as 2, 0.125 or 1/7 "
                         "(numerator and denominator at most %d)",
                         cl_esc(s, len, q, sizeof(q)), QMAP_MAX_NUM);
        }
        cl_path_pop(x);
    }
    return rc;
}

/* The name `name` would have in the tree: the accelerator's slot for the device's name. */
static bool is_device(const struct ctx *x, const char *name)
{
    return strcmp(name, x->c->device) == 0;
}

/* Any accelerator of the config (the device or another kind of `devices:`). */
static bool is_any_device(const struct ctx *x, const char *name)
{
    return config_device_kind(x->c, name) >= 0;
}

/* The checks across entries and against the quota tree. */
static int check_entry(struct ctx *x, const struct qm_raw *all, uint32_t i)
{
    const struct qm_raw *r = &all[i];
    char a[ESC_CAP], b[ESC_CAP];
    if (is_any_device(x, r->source))
        return cl_fail(x, &r->source_mark,
                       "\"%s\" is the device of this config: it counts as itself; map the "
                       "devices of a DeviceClass or another resource to it",
                       cl_esc(r->source, strlen(r->source), a, sizeof(a)));
    for (uint32_t j = 0; j < i; j++)
        if (strcmp(all[j].source, r->source) == 0)
            return cl_fail(x, &r->source_mark, "\"%s\" is mapped twice (first at line %zu)",
                           cl_esc(r->source, strlen(r->source), a, sizeof(a)),
                           all[j].mark.line + 1);
    for (uint32_t j = 0; j <= i; j++)
        if (strcmp(all[j].source, r->target) == 0 || strcmp(all[j].target, r->source) == 0)
            return cl_fail(x, &r->mark,
                           "\"%s\" and \"%s\": a mapped resource cannot be the quota resource of "
                           "another mapping (map each source to the final quota resource)",
                           cl_esc(r->source, strlen(r->source), a, sizeof(a)),
                           cl_esc(r->target, strlen(r->target), b, sizeof(b)));
    int64_t scale = 1;
    for (uint32_t j = 0; j <= i; j++)
        if (strcmp(all[j].target, r->target) == 0)
            scale = scale / gcd64(scale, all[j].den) * all[j].den;
    if (scale > QMAP_MAX_SCALE)
        return cl_fail(x, &r->mark,
                       "the weights mapped to \"%s\" need a common denominator of %lld (at most "
                       "%d): use simpler fractions",
                       cl_esc(r->target, strlen(r->target), b, sizeof(b)), (long long)scale,
                       QMAP_MAX_SCALE);
    return 0;
}

static int intern(struct ctx *x, const char *name, int *id)
{
    if (is_device(x, name)) {
        *id = RES_GPU;
        return 0;
    }
    struct sched_errbuf reb;
    if (res_intern(name, id, &reb) != 0)
        return sched_fail(x->eb, SCHED_EINVAL, "%s: quotaMapping: %s", x->file, reb.msg);
    return 0;
}

int cl_parse_qmap(struct ctx *x, yaml_node_t *seq)
{
    if (!seq)
        return 0;
    cl_path_push(x, "quotaMapping");
    int rc = cl_expect_sequence(x, seq);
    if (!rc && ydoc_count(seq) > RES_MAX)
        rc = cl_fail(x, &seq->start_mark, "%zu entries: at most %d (one per resource name)",
                     ydoc_count(seq), RES_MAX);
    uint32_t n = rc ? 0 : (uint32_t)ydoc_count(seq);
    struct qm_raw *raw = n ? config_pool_array(x->tmp, n, sizeof(*raw)) : NULL;
    if (!rc && n && !raw)
        rc = cl_oom(x);
    for (uint32_t i = 0; !rc && i < n; i++) {
        cl_path_index(x, i);
        rc = read_entry(x, ydoc_item(x->y, seq, i), &raw[i]);
        if (!rc)
            rc = check_entry(x, raw, i);
        cl_path_pop(x);
    }
    cl_path_pop(x);
    x->qm = raw;
    x->n_qm = rc ? 0 : n;
    return rc;
}

/* The name of quota entry e's resource (interned or pending). */
static const char *qentry_name(const struct ctx *x, const struct qentry *e)
{
    return e->res >= 0 ? (e->res == RES_GPU ? x->c->device : res_name(e->res))
                       : x->pending[-1 - e->res].name;
}

int cl_qmap_check(struct ctx *x)
{
    char a[ESC_CAP], b[ESC_CAP];
    for (uint32_t i = 0; i < x->n_qm; i++) {
        const struct qm_raw *r = &x->qm[i];
        for (size_t k = 0; k < x->n_qe; k++) {
            const struct qentry *e = &x->qe[k];
            if (strcmp(qentry_name(x, e), r->source) != 0)
                continue;
            const struct owner *o = &x->owners[e->owner];
            cl_path_set(x, "quotaMapping", (long)i, NULL);
            return cl_fail(x, &r->source_mark,
                           "\"%s\" counts as \"%s\" here, so it cannot also have a quota (%s "
                           "'%s' gives it one); remove one of the two",
                           cl_esc(r->source, strlen(r->source), a, sizeof(a)),
                           cl_esc(r->target, strlen(r->target), b, sizeof(b)),
                           o->is_queue ? "queue" : "cohort", o->name);
        }
    }
    int fresh = 0; /* names neither interned nor pending in the tree */
    for (uint32_t i = 0; i < x->n_qm * 2; i++) {
        const char *nm = i & 1 ? x->qm[i / 2].target : x->qm[i / 2].source;
        bool seen = is_device(x, nm) || res_lookup(nm) >= 0;
        for (int k = 0; !seen && k < x->n_pending; k++)
            seen = strcmp(x->pending[k].name, nm) == 0;
        for (uint32_t j = 0; !seen && j < i; j++)
            seen = strcmp(j & 1 ? x->qm[j / 2].target : x->qm[j / 2].source, nm) == 0;
        if (!seen && res_count() + x->n_pending + ++fresh > RES_MAX) {
            cl_path_set(x, "quotaMapping", (long)(i / 2), NULL);
            return cl_fail(x, &x->qm[i / 2].mark,
                           "too many resource names: \"%s\" would be name number %d, at most %d "
                           "distinct resource names are supported",
                           cl_esc(nm, strlen(nm), a, sizeof(a)), res_count() + x->n_pending + fresh,
                           RES_MAX);
        }
    }
    return 0;
}

int cl_qmap_intern(struct ctx *x)
{
    if (x->n_qm == 0)
        return 0;
    struct config_qmap *out = config_pool_array(x->pool, x->n_qm, sizeof(*out));
    if (!out)
        return cl_oom(x);
    for (uint32_t i = 0; i < x->n_qm; i++) {
        const struct qm_raw *r = &x->qm[i];
        struct config_qmap *m = &out[i];
        int rc = intern(x, r->source, &m->source);
        if (!rc)
            rc = intern(x, r->target, &m->target);
        if (rc)
            return rc;
        m->num = r->num;
        m->den = r->den;
        m->device_class = r->device_class;
        m->line = (uint32_t)r->mark.line + 1;
        m->column = (uint32_t)r->mark.column + 1;
    }
    x->c->qmaps = out;
    x->c->n_qmaps = x->n_qm;
    return 0;
}
