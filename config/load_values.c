/* config/load_values.c: the loader's error reporting, typed values, mapping checks and name
 * tables (see load.h).
 *
 * Owns: "FILE:LINE:COLUMN: KEY.PATH: problem" messages (the key path is kept as a small stack of
 * segments while walking and only formatted when something fails; user text is quoted with
 * escapes), strict typed reading of YAML nodes (names, booleans, numbers, integers, enums,
 * durations through sched/core/duration.h, quantities), the key checks of a mapping (string keys,
 * no duplicates, only known keys) and the sorted name tables of the cross-reference checks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/load.h"
#include "sched/core/duration.h"
#include "sched/core/quantity.h"
#include "sched/k8s/names.h"

__attribute__((format(printf, 2, 3))) void cl_sb_printf(struct sbuf *b, const char *fmt, ...)
{
    if (b->len + 1 >= b->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->len = b->len + (size_t)n < b->cap ? b->len + (size_t)n : b->cap - 1;
}

/* Appends untrusted text: quotes and backslashes escaped, control and non-ASCII bytes as \xNN,
 * cut after QUOTE_MAX visible characters. */
void cl_sb_escape(struct sbuf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        if (i == QUOTE_MAX) {
            cl_sb_printf(b, "...");
            return;
        }
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            cl_sb_printf(b, "\\%c", c);
        else if (c < 0x20 || c > 0x7e)
            cl_sb_printf(b, "\\x%c%c", hex[c >> 4], hex[c & 15]);
        else
            cl_sb_printf(b, "%c", c);
    }
}

/* `s` escaped into a caller buffer, for %s in messages. */
const char *cl_esc(const char *s, size_t len, char *buf, size_t cap)
{
    struct sbuf b = {buf, cap, 0};
    buf[0] = '\0';
    cl_sb_escape(&b, s, len);
    return buf;
}

void cl_path_key(struct ctx *x, const char *key, size_t len)
{
    if (x->depth < PATH_DEPTH) {
        x->path[x->depth].key = key;
        x->path[x->depth].key_len = len;
    }
    x->depth++;
}

void cl_path_push(struct ctx *x, const char *key)
{
    cl_path_key(x, key, strlen(key));
}

void cl_path_index(struct ctx *x, long i)
{
    if (x->depth < PATH_DEPTH) {
        x->path[x->depth].key = NULL;
        x->path[x->depth].index = i;
    }
    x->depth++;
}

void cl_path_pop(struct ctx *x)
{
    if (x->depth > 0)
        x->depth--;
}

/* Resets the path to SECTION[i].key (key may be NULL). */
void cl_path_set(struct ctx *x, const char *section, long i, const char *key)
{
    x->depth = 0;
    cl_path_push(x, section);
    if (i >= 0)
        cl_path_index(x, i);
    if (key)
        cl_path_push(x, key);
}

void cl_format_path(const struct ctx *x, char *buf, size_t cap)
{
    struct sbuf b = {buf, cap, 0};
    buf[0] = '\0';
    int d = x->depth < PATH_DEPTH ? x->depth : PATH_DEPTH;
    for (int i = 0; i < d; i++) {
        const struct seg *s = &x->path[i];
        if (s->key) {
            if (i > 0)
                cl_sb_printf(&b, ".");
            cl_sb_escape(&b, s->key, s->key_len);
        } else {
            cl_sb_printf(&b, "[%ld]", s->index);
        }
    }
    if (x->depth > PATH_DEPTH)
        cl_sb_printf(&b, "...");
}

__attribute__((format(printf, 4, 0))) int cl_fail_v(struct ctx *x, size_t line, size_t column,
                                                    const char *fmt, va_list ap)
{
    char msg[SCHED_ERRBUF], path[256];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    cl_format_path(x, path, sizeof(path));
    return sched_fail(x->eb, SCHED_EINVAL, "%s:%zu:%zu: %s%s%s", x->file, line, column, path,
                      path[0] ? ": " : "", msg);
}

/* "FILE:LINE:COLUMN: KEY.PATH: message" at mark `m` (0-based libyaml mark). */
__attribute__((format(printf, 3, 4))) int cl_fail(struct ctx *x, const yaml_mark_t *m,
                                                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = cl_fail_v(x, m->line + 1, m->column + 1, fmt, ap);
    va_end(ap);
    return rc;
}

int cl_oom(struct ctx *x)
{
    return sched_fail(x->eb, SCHED_ENOMEM, "%s: out of memory", x->file);
}

int cl_yaml_fail(struct ctx *x, const yaml_parser_t *p)
{
    return ydoc_syntax_fail(x->file, x->data, x->len, p, x->eb);
}

/* ---- node access and typed values -------------------------------------------------------------
 */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Decimal integer: [-+]?[0-9]+ */
static bool text_is_int(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    if (i == n)
        return false;
    for (; i < n; i++) {
        if (!is_digit(s[i]))
            return false;
    }
    return true;
}

/* Decimal number: [-+]?(digits(.digits?)?|.digits)([eE][-+]?digits)? */
static bool text_is_number(const char *s, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    for (; i < n && is_digit(s[i]); i++)
        digits++;
    if (i < n && s[i] == '.') {
        for (i++; i < n && is_digit(s[i]); i++)
            digits++;
    }
    if (digits == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        size_t e = 0;
        for (; i < n && is_digit(s[i]); i++)
            e++;
        if (e == 0)
            return false;
    }
    return i == n;
}

/* What a node is, for "expected X, got Y" messages. */
const char *cl_describe(const yaml_node_t *n, char *buf, size_t cap)
{
    enum ydoc_kind k = ydoc_kind(n);
    if (k != YDOC_NUM && k != YDOC_STR)
        return ydoc_kind_name(k);
    if (k == YDOC_NUM)
        snprintf(buf, cap, "the number %.40s", ydoc_text(n));
    else {
        char e[ESC_CAP];
        snprintf(buf, cap, "the string \"%s\"", cl_esc(ydoc_text(n), ydoc_len(n), e, sizeof(e)));
    }
    return buf;
}

int cl_expect_fail(struct ctx *x, const yaml_node_t *n, const char *what)
{
    char d[ESC_CAP + 32];
    return cl_fail(x, &n->start_mark, "expected %s, got %s", what, cl_describe(n, d, sizeof(d)));
}

int cl_expect_mapping(struct ctx *x, const yaml_node_t *n)
{
    return n->type == YAML_MAPPING_NODE ? 0 : cl_expect_fail(x, n, "a mapping");
}

int cl_expect_sequence(struct ctx *x, const yaml_node_t *n)
{
    return n->type == YAML_SEQUENCE_NODE ? 0 : cl_expect_fail(x, n, "a sequence");
}

/* Any non-null scalar without NUL bytes. */
int cl_get_text(struct ctx *x, const yaml_node_t *n, const char **s, size_t *len)
{
    if (n->type != YAML_SCALAR_NODE || ydoc_is_null(n))
        return cl_expect_fail(x, n, "a string");
    if (strlen(ydoc_text(n)) != ydoc_len(n))
        return cl_fail(x, &n->start_mark, "the string contains a NUL character");
    *s = ydoc_text(n);
    *len = ydoc_len(n);
    return 0;
}

/* A name: 1..253 bytes, no control characters; copied into the result pool. */
int cl_get_name(struct ctx *x, const yaml_node_t *n, const char **out)
{
    const char *s;
    size_t len;
    int rc = cl_get_text(x, n, &s, &len);
    if (rc)
        return rc;
    if (len == 0)
        return cl_fail(x, &n->start_mark, "must not be empty");
    if (len > CONFIG_NAME_MAX)
        return cl_fail(x, &n->start_mark, "longer than %d characters", CONFIG_NAME_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f) {
            char e[ESC_CAP];
            return cl_fail(x, &n->start_mark, "\"%s\" contains a control character",
                           cl_esc(s, len, e, sizeof(e)));
        }
    }
    *out = config_pool_strndup(x->pool, s, len);
    return *out ? 0 : cl_oom(x);
}

int cl_get_bool(struct ctx *x, const yaml_node_t *n, bool *out)
{
    if (ydoc_bool(n, out) != 0)
        return cl_expect_fail(x, n, "a boolean (true or false)");
    return 0;
}

/* A plain decimal number in [lo, hi]. */
int cl_get_number(struct ctx *x, const yaml_node_t *n, double lo, bool lo_open, double hi,
                  double *out)
{
    if (ydoc_kind(n) != YDOC_NUM || !text_is_number(ydoc_text(n), ydoc_len(n)))
        return cl_expect_fail(x, n, "a number");
    char *end;
    errno = 0;
    double v = strtod(ydoc_text(n), &end);
    if (!isfinite(v) || errno == ERANGE)
        return cl_fail(x, &n->start_mark, "number %.40s is out of range", ydoc_text(n));
    if (v < lo || (lo_open && v == lo) || v > hi)
        return cl_fail(x, &n->start_mark, "must be %s %.15g and <= %.15g, got %.40s",
                       lo_open ? ">" : ">=", lo, hi, ydoc_text(n));
    *out = v;
    return 0;
}

/* A plain decimal integer in [lo, hi]. */
int cl_get_int(struct ctx *x, const yaml_node_t *n, long long lo, long long hi, long long *out)
{
    if (ydoc_kind(n) != YDOC_NUM || !text_is_int(ydoc_text(n), ydoc_len(n)))
        return cl_expect_fail(x, n, "an integer");
    errno = 0;
    long long v = strtoll(ydoc_text(n), NULL, 10);
    if (errno == ERANGE || v < lo || v > hi)
        return cl_fail(x, &n->start_mark, "must be an integer in %lld..%lld, got %.40s", lo, hi,
                       ydoc_text(n));
    *out = v;
    return 0;
}

/* One of `words`, spelt exactly. */
int cl_get_enum(struct ctx *x, const yaml_node_t *n, const char *const *words, int *out)
{
    const char *s;
    size_t len;
    int rc = cl_get_text(x, n, &s, &len);
    if (rc)
        return rc;
    char allowed[256];
    struct sbuf b = {allowed, sizeof(allowed), 0};
    allowed[0] = '\0';
    for (int i = 0; words[i]; i++) {
        if (strlen(words[i]) == len && memcmp(words[i], s, len) == 0) {
            *out = i;
            return 0;
        }
        cl_sb_printf(&b, "%s%s", i ? ", " : "", words[i]);
    }
    char e[ESC_CAP];
    return cl_fail(x, &n->start_mark, "invalid value \"%s\" (allowed: %s)",
                   cl_esc(s, len, e, sizeof(e)), allowed);
}

int cl_get_duration(struct ctx *x, const yaml_node_t *n, int64_t *out)
{
    const char *s;
    size_t len;
    if (n->type != YAML_SCALAR_NODE || ydoc_is_null(n))
        return cl_expect_fail(x, n, "a duration such as 90s, 10m, 24h or 1h30m");
    int rc = cl_get_text(x, n, &s, &len);
    if (rc)
        return rc;
    const char *why = dur_parse(s, len, out);
    if (why) {
        char e[ESC_CAP];
        return cl_fail(x, &n->start_mark, "invalid duration \"%s\": %s",
                       cl_esc(s, len, e, sizeof(e)), why);
    }
    return 0;
}

/* A quantity of a resource whose values are stored at `scale` (res_scale). */
int cl_get_quantity(struct ctx *x, const yaml_node_t *n, int scale, int64_t *out)
{
    const char *s;
    size_t len;
    if (n->type != YAML_SCALAR_NODE || ydoc_is_null(n))
        return cl_expect_fail(x, n, "a quantity such as 8, 500m or 16Gi");
    int rc = cl_get_text(x, n, &s, &len);
    if (rc)
        return rc;
    struct sched_errbuf qe;
    int64_t v;
    if (qty_parse(s, scale, &v, &qe) != 0)
        return cl_fail(x, &n->start_mark, "%s", qe.msg);
    char e[ESC_CAP];
    if (v < 0)
        return cl_fail(x, &n->start_mark, "negative quantity \"%s\"", cl_esc(s, len, e, sizeof(e)));
    if (v > CONFIG_MAX_QTY)
        return cl_fail(x, &n->start_mark, "quantity \"%s\" is too large",
                       cl_esc(s, len, e, sizeof(e)));
    *out = v;
    return 0;
}

/* ---- mappings: key checks ---------------------------------------------------------------------
 */

struct key_ent {
    const char *s;
    size_t len;
    size_t pos;
};

static int key_ent_cmp(const void *a, const void *b)
{
    const struct key_ent *p = a, *q = b;
    size_t n = p->len < q->len ? p->len : q->len;
    int c = memcmp(p->s, q->s, n);
    if (c)
        return c;
    if (p->len != q->len)
        return p->len < q->len ? -1 : 1;
    return p->pos < q->pos ? -1 : p->pos > q->pos;
}

static int dup_key_fail(struct ctx *x, const yaml_node_t *first, const yaml_node_t *again)
{
    cl_path_key(x, ydoc_text(again), ydoc_len(again));
    int rc = cl_fail(x, &again->start_mark, "duplicate key (first at line %zu, column %zu)",
                     first->start_mark.line + 1, first->start_mark.column + 1);
    cl_path_pop(x);
    return rc;
}

/* Checks a mapping: string keys, no duplicates, and (when `allowed` is given) known keys. */
int cl_check_map(struct ctx *x, yaml_node_t *m, const char *const *allowed)
{
    yaml_node_pair_t *ps = m->data.mapping.pairs.start;
    size_t n = (size_t)(m->data.mapping.pairs.top - ps);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *k = ydoc_node(x->y, ps[i].key);
        if (!k || k->type != YAML_SCALAR_NODE)
            return cl_fail(x, k ? &k->start_mark : &m->start_mark, "keys must be strings");
        if (strlen(ydoc_text(k)) != ydoc_len(k))
            return cl_fail(x, &k->start_mark, "the key contains a NUL character");
    }
    if (n <= 16) {
        for (size_t j = 1; j < n; j++) {
            yaml_node_t *kj = ydoc_node(x->y, ps[j].key);
            for (size_t i = 0; i < j; i++) {
                yaml_node_t *ki = ydoc_node(x->y, ps[i].key);
                if (ydoc_len(ki) == ydoc_len(kj) &&
                    memcmp(ydoc_text(ki), ydoc_text(kj), ydoc_len(kj)) == 0)
                    return dup_key_fail(x, ki, kj);
            }
        }
    } else {
        struct key_ent *ke = config_pool_array(x->tmp, n, sizeof(*ke));
        if (!ke)
            return cl_oom(x);
        for (size_t i = 0; i < n; i++) {
            yaml_node_t *k = ydoc_node(x->y, ps[i].key);
            ke[i] = (struct key_ent){ydoc_text(k), ydoc_len(k), i};
        }
        qsort(ke, n, sizeof(*ke), key_ent_cmp);
        size_t best = SIZE_MAX, best_first = 0, group = 0;
        for (size_t i = 1; i < n; i++) {
            if (ke[i].len == ke[group].len && memcmp(ke[i].s, ke[group].s, ke[i].len) == 0) {
                if (ke[i].pos < best) {
                    best = ke[i].pos;
                    best_first = ke[group].pos;
                }
            } else {
                group = i;
            }
        }
        if (best != SIZE_MAX)
            return dup_key_fail(x, ydoc_node(x->y, ps[best_first].key),
                                ydoc_node(x->y, ps[best].key));
    }
    if (!allowed)
        return 0;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *k = ydoc_node(x->y, ps[i].key);
        bool ok = false;
        for (int a = 0; allowed[a] && !ok; a++)
            ok = ydoc_key_is(k, allowed[a]);
        if (!ok) {
            char list[256];
            struct sbuf b = {list, sizeof(list), 0};
            list[0] = '\0';
            for (int a = 0; allowed[a]; a++)
                cl_sb_printf(&b, "%s%s", a ? ", " : "", allowed[a]);
            cl_path_key(x, ydoc_text(k), ydoc_len(k));
            int rc = cl_fail(x, &k->start_mark, "unknown key (allowed: %s)", list);
            cl_path_pop(x);
            return rc;
        }
    }
    return 0;
}

/* Value of `key`, or NULL when absent or null. */
yaml_node_t *cl_map_opt(struct ctx *x, yaml_node_t *m, const char *key)
{
    yaml_node_t *v = ydoc_get(x->y, m, key);
    return ydoc_is_null(v) ? NULL : v;
}

int cl_missing(struct ctx *x, const yaml_node_t *m, const char *key, const char *extra)
{
    cl_path_push(x, key);
    int rc = cl_fail(x, &m->start_mark, "missing required field%s", extra);
    cl_path_pop(x);
    return rc;
}

/* A named entry (flavor, profile, cohort, queue): a mapping with only `keys` and a required
 * valid `name`, which goes into *name (and its position into *mark). 0 or the error. */
int cl_named_entry(struct ctx *x, yaml_node_t *n, const char *const *keys, const char **name,
                   yaml_mark_t *mark)
{
    int rc = cl_expect_mapping(x, n);
    if (!rc)
        rc = cl_check_map(x, n, keys);
    yaml_node_t *v = rc ? NULL : cl_map_opt(x, n, "name");
    if (!rc && !v)
        rc = cl_missing(x, n, "name", "");
    if (!rc) {
        cl_path_push(x, "name");
        rc = cl_get_name(x, v, name);
        cl_path_pop(x);
    }
    if (!rc)
        *mark = v->start_mark;
    return rc;
}

/* A sequence of names (qualified: each "namespace/name") into a result-pool array. */
int cl_get_names(struct ctx *x, const yaml_node_t *v, bool qualified, const char ***out,
                 uint32_t *n)
{
    int rc = cl_expect_sequence(x, v);
    if (rc)
        return rc;
    size_t k = ydoc_count(v);
    const char **arr = config_pool_array(x->pool, k ? k : 1, sizeof(*arr));
    if (!arr)
        return cl_oom(x);
    for (size_t i = 0; i < k && !rc; i++) {
        const yaml_node_t *it = ydoc_item(x->y, v, i);
        rc = cl_get_name(x, it, &arr[i]);
        const char *slash = rc ? NULL : strchr(arr[i], '/');
        if (!rc && qualified && (!slash || slash == arr[i] || !slash[1] || strchr(slash + 1, '/')))
            rc = cl_fail(x, &it->start_mark, "\"%s\" is not NAMESPACE/NAME", arr[i]);
        else if (!rc && qualified && !k8s_dns_label(arr[i], (size_t)(slash - arr[i])))
            rc = cl_fail(x, &it->start_mark, "\"%s\": \"%.*s\" is not a namespace name (%s)",
                         arr[i], (int)(slash - arr[i]), arr[i], K8S_LABEL_RULE);
        else if (!rc && qualified && !k8s_dns_subdomain(slash + 1, strlen(slash + 1)))
            rc = cl_fail(x, &it->start_mark,
                         "\"%s\": \"%s\" is not a LocalQueue name (a DNS-1123 subdomain: labels "
                         "of %s, joined by '.', at most 253)",
                         arr[i], slash + 1, K8S_LABEL_RULE);
        else if (!rc && !qualified && !k8s_dns_label(arr[i], strlen(arr[i])))
            rc = cl_fail(x, &it->start_mark, "\"%s\" is not a namespace name (%s)", arr[i],
                         K8S_LABEL_RULE);
    }
    *out = arr;
    *n = (uint32_t)k;
    return rc;
}

/* ---- name tables ------------------------------------------------------------------------------
 */

int cl_name_ent_cmp(const void *a, const void *b)
{
    const struct name_ent *p = a, *q = b;
    int c = strcmp(p->name, q->name);
    if (c)
        return c;
    if (p->mark.index != q->mark.index)
        return p->mark.index < q->mark.index ? -1 : 1;
    return p->idx < q->idx ? -1 : p->idx > q->idx;
}

/* Sorts `e`; returns the index in `e` of the duplicate declared earliest in the file (its first
 * declaration is at the returned index - k, the start of its group, stored in *first), or -1. */
long cl_name_sort_dups(struct name_ent *e, size_t n, size_t *first)
{
    if (n > 1)
        qsort(e, n, sizeof(*e), cl_name_ent_cmp);
    long best = -1;
    size_t group = 0;
    for (size_t i = 1; i < n; i++) {
        if (strcmp(e[i].name, e[group].name) == 0) {
            if (best < 0 || e[i].mark.index < e[best].mark.index) {
                best = (long)i;
                *first = group;
            }
        } else {
            group = i;
        }
    }
    return best;
}

const struct name_ent *cl_name_find(const struct name_ent *e, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(e[mid].name, name);
        if (c == 0)
            return &e[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* "a, b, c" (at most 8 names, in declaration order) into buf. */
const char *cl_name_list(const char *const *names, size_t n, char *buf, size_t cap)
{
    struct sbuf b = {buf, cap, 0};
    buf[0] = '\0';
    for (size_t i = 0; i < n && i < 8; i++) {
        cl_sb_printf(&b, "%s", i ? ", " : "");
        cl_sb_escape(&b, names[i], strlen(names[i]));
    }
    if (n > 8)
        cl_sb_printf(&b, ", ... (%zu in all)", n);
    if (n == 0)
        cl_sb_printf(&b, "none");
    return buf;
}
