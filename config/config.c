/* config/config.c: loading, validation, lookup and printing of the operator's configuration
 * (see config.h and docs/config.md).
 *
 * Owns: the whole path from YAML bytes to an immutable `struct config`: a pre-scan of libyaml's
 * event stream (syntax errors, aliases, a single document, empty input), the document walk with
 * strict per-key validation, the cross-reference checks (names, cohort tree, flavors, profiles),
 * the memory pool every loaded config lives in, and config_print_tree.
 *
 * Error messages are "FILE:LINE:COLUMN: KEY.PATH: problem"; the key path is kept as a small
 * stack of segments while walking and only formatted when something fails. Every config error
 * is SCHED_EINVAL; SCHED_ENOMEM and SCHED_EIO keep their codes.
 *
 * Resource names: a quota may name resources the process has never seen. Those names are only
 * interned (res_intern, process-wide, append-only) once the whole file has validated, so that a
 * rejected file (for example a bad hot reload) never consumes slots of the RES_MAX table.
 *
 * Memory: the result, its strings and arrays come from one `struct config_pool` (a chunked bump
 * allocator); scratch data of a load comes from a second pool freed at the end of the load. On
 * any error both are freed and nothing is returned. Large inputs stay linear or n log n: name
 * lookups and duplicate checks sort, the tree is walked without recursion.
 */
#include "config/config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "plugins/plugins.h"
#include "sched/core/device.h"
#include "sched/core/hash.h"
#include "sched/core/quantity.h"

#define CONFIG_API_VERSION "gangsched.io/v1alpha1"
#define CONFIG_KIND        "SchedulerConfig"

#define CONFIG_MAX_BYTES       ((size_t)4 << 20) /* file size limit */
#define CONFIG_MAX_FLAVORS     256
#define CONFIG_MAX_QUOTA_CELLS ((size_t)1 << 22) /* flavors x RES_MAX x nodes with a quota */
#define CONFIG_MAX_WEIGHT      1e6
#define CONFIG_MAX_QTY         ((int64_t)1 << 62)
#define CONFIG_MAX_DURATION_MS (3650LL * 86400000LL) /* ten years */
#define CONFIG_MAX_RESERVE     1000
#define CONFIG_NAME_MAX        253
#define CONFIG_MAX_LEVELS      (TOPO_MAX_LEVELS - 1)

#define CONFIG_MAX_DEPTH 32 /* nesting of YAML collections (the schema needs 7) */

#define PATH_DEPTH 8  /* key path segments kept for messages */
#define QUOTE_MAX  64 /* visible characters of user text quoted in a message */
#define KEY_CAP    80 /* bytes of a key kept by the pre-scan */

/* ---- memory pool ------------------------------------------------------------------------------
 */

struct pool_chunk {
    struct pool_chunk *next;
    size_t cap, used;
};

#define POOL_ALIGN 16
#define POOL_HDR   ((sizeof(struct pool_chunk) + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1))
#define POOL_CHUNK 16384

/* Sorted name -> index entry of the lookup tables kept with a config. */
struct name_idx {
    const char *name;
    uint32_t idx;
};

struct config_pool {
    struct pool_chunk *head;
    /* lookup tables and the tree, built at load (read-only afterwards) */
    struct name_idx *queue_idx, *flavor_idx;
    uint32_t *child_first; /* [n_cohorts + 2] CSR of cohorts by parent; bucket n_cohorts = roots */
    uint32_t *child;       /* [n_cohorts] */
    uint32_t *child_pos;   /* [n_cohorts] position of each cohort inside its parent's bucket */
    uint32_t *queue_first; /* [n_cohorts + 2] CSR of queues by cohort; bucket n_cohorts = none */
    uint32_t *queue_list;  /* [n_queues] */
};

static struct config_pool *pool_new(void)
{
    return calloc(1, sizeof(struct config_pool));
}

static void pool_free(struct config_pool *p)
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
static void *pool_alloc(struct config_pool *p, size_t size)
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

static void *pool_array(struct config_pool *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / 4 / size)
        return NULL;
    return pool_alloc(p, n * size);
}

static char *pool_strndup(struct config_pool *p, const char *s, size_t len)
{
    char *d = pool_alloc(p, len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

/* ---- text helpers -----------------------------------------------------------------------------
 */

struct sbuf {
    char *p;
    size_t cap, len;
};

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sbuf *b, const char *fmt, ...)
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
static void sb_escape(struct sbuf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        if (i == QUOTE_MAX) {
            sb_printf(b, "...");
            return;
        }
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            sb_printf(b, "\\%c", c);
        else if (c < 0x20 || c > 0x7e)
            sb_printf(b, "\\x%c%c", hex[c >> 4], hex[c & 15]);
        else
            sb_printf(b, "%c", c);
    }
}

/* `s` escaped into a caller buffer, for %s in messages. */
static const char *esc(const char *s, size_t len, char *buf, size_t cap)
{
    struct sbuf b = {buf, cap, 0};
    buf[0] = '\0';
    sb_escape(&b, s, len);
    return buf;
}

#define ESC_CAP (QUOTE_MAX * 4 + 8)

/* ---- load context and error reporting ---------------------------------------------------------
 */

struct seg {
    const char *key; /* NULL: a sequence index */
    size_t key_len;
    long index;
};

/* A resource name the process has not interned yet (see the file comment). */
struct pending_res {
    const char *name;
    yaml_mark_t mark;
    const char *path;
};

/* A cohort (owners[0 .. n_cohorts)) or a queue (owners[n_cohorts ..)) during the load. */
struct owner {
    struct config_quota_set *set;
    bool is_queue;
    uint32_t idx;
    const char *name;
    yaml_mark_t name_mark;
    const char *ref; /* parent (cohort) or cohort (queue); NULL when absent */
    yaml_mark_t ref_mark;
    yaml_mark_t quota_mark;
    uint32_t n_entries;
};

/* One (flavor, resource) quota read from the file. */
struct qentry {
    uint32_t owner;
    uint32_t flavor;
    int res; /* resource id >= 0, or -1 - index into pending */
    struct config_quota q;
};

/* Name table entry used for duplicate checks and lookups during the load. */
struct name_ent {
    const char *name;
    uint32_t idx;
    uint32_t kind; /* 0 cohort, 1 queue (only in the tree table) */
    yaml_mark_t mark;
};

struct ctx {
    const char *file;
    const char *data;
    size_t len;
    yaml_document_t *doc;
    struct sched_errbuf *eb;
    struct seg path[PATH_DEPTH];
    int depth;
    struct config *c;
    struct config_pool *pool; /* the result */
    struct config_pool *tmp;  /* scratch of this load */
    bool flavors_declared;
    struct name_ent *flavor_ents; /* sorted */
    struct name_ent *profile_ents;
    struct owner *owners;
    struct pending_res pending[RES_MAX];
    int n_pending;
    struct qentry *qe; /* malloc'd, grows */
    size_t n_qe, cap_qe;
};

static void path_key(struct ctx *x, const char *key, size_t len)
{
    if (x->depth < PATH_DEPTH) {
        x->path[x->depth].key = key;
        x->path[x->depth].key_len = len;
    }
    x->depth++;
}

static void path_push(struct ctx *x, const char *key)
{
    path_key(x, key, strlen(key));
}

static void path_index(struct ctx *x, long i)
{
    if (x->depth < PATH_DEPTH) {
        x->path[x->depth].key = NULL;
        x->path[x->depth].index = i;
    }
    x->depth++;
}

static void path_pop(struct ctx *x)
{
    if (x->depth > 0)
        x->depth--;
}

/* Resets the path to SECTION[i].key (key may be NULL). */
static void path_set(struct ctx *x, const char *section, long i, const char *key)
{
    x->depth = 0;
    path_push(x, section);
    if (i >= 0)
        path_index(x, i);
    if (key)
        path_push(x, key);
}

static void format_path(const struct ctx *x, char *buf, size_t cap)
{
    struct sbuf b = {buf, cap, 0};
    buf[0] = '\0';
    int d = x->depth < PATH_DEPTH ? x->depth : PATH_DEPTH;
    for (int i = 0; i < d; i++) {
        const struct seg *s = &x->path[i];
        if (s->key) {
            if (i > 0)
                sb_printf(&b, ".");
            sb_escape(&b, s->key, s->key_len);
        } else {
            sb_printf(&b, "[%ld]", s->index);
        }
    }
    if (x->depth > PATH_DEPTH)
        sb_printf(&b, "...");
}

__attribute__((format(printf, 4, 0))) static int fail_v(struct ctx *x, size_t line, size_t column,
                                                        const char *fmt, va_list ap)
{
    char msg[SCHED_ERRBUF], path[256];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    format_path(x, path, sizeof(path));
    return sched_fail(x->eb, SCHED_EINVAL, "%s:%zu:%zu: %s%s%s", x->file, line, column, path,
                      path[0] ? ": " : "", msg);
}

/* "FILE:LINE:COLUMN: KEY.PATH: message" at mark `m` (0-based libyaml mark). */
__attribute__((format(printf, 3, 4))) static int fail(struct ctx *x, const yaml_mark_t *m,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = fail_v(x, m->line + 1, m->column + 1, fmt, ap);
    va_end(ap);
    return rc;
}

static int oom(struct ctx *x)
{
    return sched_fail(x->eb, SCHED_ENOMEM, "%s: out of memory", x->file);
}

/* Line and column (1-based) of byte `off`, for reader errors that carry no mark. */
static void offset_mark(const struct ctx *x, size_t off, size_t *line, size_t *column)
{
    size_t l = 1, c = 1;
    if (off > x->len)
        off = x->len;
    for (size_t i = 0; i < off; i++) {
        if (x->data[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *column = c;
}

static int yaml_fail(struct ctx *x, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return oom(x);
    size_t line, column;
    if (p->error == YAML_READER_ERROR) {
        offset_mark(x, p->problem_offset, &line, &column);
    } else {
        line = p->problem_mark.line + 1;
        column = p->problem_mark.column + 1;
    }
    return sched_fail(x->eb, SCHED_EINVAL, "%s:%zu:%zu: YAML syntax error: %s%s%s%s", x->file, line,
                      column, p->problem ? p->problem : "unknown problem", p->context ? " (" : "",
                      p->context ? p->context : "", p->context ? ")" : "");
}

/* ---- pre-scan: syntax, aliases, one document --------------------------------------------------
 */

struct pframe {
    bool is_map;
    bool want_key;
    long index;
    char key[KEY_CAP];
    size_t key_len;
};

/* A node starts inside the innermost frame. */
static void pframe_node_start(struct pframe *f)
{
    if (!f->is_map)
        f->index++;
}

/* A node ended inside the innermost frame; `key` is its text when it was a scalar key. */
static void pframe_node_done(struct pframe *f, const yaml_event_t *ev)
{
    if (!f->is_map)
        return;
    if (f->want_key) {
        f->key_len = 0;
        if (ev && ev->type == YAML_SCALAR_EVENT) {
            size_t n = ev->data.scalar.length;
            f->key_len = n < KEY_CAP ? n : KEY_CAP;
            memcpy(f->key, ev->data.scalar.value, f->key_len);
        }
    }
    f->want_key = !f->want_key;
}

/* The key path of the node that just started inside the open frames. */
static void prescan_path(struct ctx *x, const struct pframe *fr, size_t depth)
{
    x->depth = 0;
    for (size_t i = 0; i < depth && i < PATH_DEPTH; i++) {
        if (!fr[i].is_map)
            path_index(x, fr[i].index);
        else if (!fr[i].want_key)
            path_key(x, fr[i].key, fr[i].key_len);
    }
    if (depth > PATH_DEPTH && x->depth < PATH_DEPTH)
        path_push(x, "...");
    else if (depth > PATH_DEPTH)
        x->depth = PATH_DEPTH + 1;
}

static int prescan(struct ctx *x)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return oom(x);
    yaml_parser_set_input_string(&p, (const unsigned char *)x->data, x->len);
    struct pframe fr[PATH_DEPTH];
    size_t depth = 0; /* frames open; only the first PATH_DEPTH are kept */
    int docs = 0, rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = yaml_fail(x, &p);
            break;
        }
        struct pframe *top = depth > 0 && depth <= PATH_DEPTH ? &fr[depth - 1] : NULL;
        bool done = false;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1)
                rc = fail(x, &ev.start_mark, "only one YAML document is allowed");
            break;
        case YAML_ALIAS_EVENT:
            if (top)
                pframe_node_start(top);
            prescan_path(x, fr, depth);
            rc = fail(x, &ev.start_mark, "aliases are not supported");
            break;
        case YAML_SCALAR_EVENT:
            if (top) {
                pframe_node_start(top);
                pframe_node_done(top, &ev);
            }
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (top)
                pframe_node_start(top);
            if (depth >= CONFIG_MAX_DEPTH) {
                /* also keeps libyaml's scanner, quadratic in flow nesting, fast */
                prescan_path(x, fr, depth);
                rc = fail(x, &ev.start_mark, "nesting deeper than %d levels", CONFIG_MAX_DEPTH);
                break;
            }
            if (depth < PATH_DEPTH) {
                struct pframe *f = &fr[depth];
                f->is_map = ev.type == YAML_MAPPING_START_EVENT;
                f->want_key = true;
                f->index = -1;
                f->key_len = 0;
            }
            depth++;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0)
                depth--;
            if (depth > 0 && depth <= PATH_DEPTH)
                pframe_node_done(&fr[depth - 1], NULL);
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
        if (rc || done)
            break;
    }
    yaml_parser_delete(&p);
    x->depth = 0;
    if (!rc && docs == 0) {
        yaml_mark_t m = {0, 0, 0};
        rc = fail(x, &m,
                  "empty file: expected a mapping with apiVersion: " CONFIG_API_VERSION
                  " and kind: " CONFIG_KIND);
    }
    return rc;
}

/* ---- node access and typed values -------------------------------------------------------------
 */

static yaml_node_t *node_at(struct ctx *x, int i)
{
    return yaml_document_get_node(x->doc, i);
}

static const char *sval(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static size_t slen(const yaml_node_t *n)
{
    return n->data.scalar.length;
}

static bool plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static bool plain_is(const yaml_node_t *n, const char *const *words)
{
    if (!plain(n))
        return false;
    for (; *words; words++) {
        if (strlen(*words) == slen(n) && memcmp(*words, sval(n), slen(n)) == 0)
            return true;
    }
    return false;
}

static const char *const yaml_nulls[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const yaml_trues[] = {"true", "True", "TRUE", NULL};
static const char *const yaml_falses[] = {"false", "False", "FALSE", NULL};

/* NULL node (absent key) or a plain null: the field is absent. */
static bool is_null(const yaml_node_t *n)
{
    return !n || plain_is(n, yaml_nulls);
}

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
static const char *describe(const yaml_node_t *n, char *buf, size_t cap)
{
    if (!n)
        return "nothing";
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE)
        return "a sequence";
    if (is_null(n))
        return "null";
    if (plain_is(n, yaml_trues) || plain_is(n, yaml_falses))
        return "a boolean";
    if (plain(n) && text_is_number(sval(n), slen(n)))
        snprintf(buf, cap, "the number %.40s", sval(n));
    else {
        char e[ESC_CAP];
        snprintf(buf, cap, "the string \"%s\"", esc(sval(n), slen(n), e, sizeof(e)));
    }
    return buf;
}

static int expect_fail(struct ctx *x, const yaml_node_t *n, const char *what)
{
    char d[ESC_CAP + 32];
    return fail(x, &n->start_mark, "expected %s, got %s", what, describe(n, d, sizeof(d)));
}

static int expect_mapping(struct ctx *x, const yaml_node_t *n)
{
    return n->type == YAML_MAPPING_NODE ? 0 : expect_fail(x, n, "a mapping");
}

static int expect_sequence(struct ctx *x, const yaml_node_t *n)
{
    return n->type == YAML_SEQUENCE_NODE ? 0 : expect_fail(x, n, "a sequence");
}

/* Any non-null scalar without NUL bytes. */
static int get_text(struct ctx *x, const yaml_node_t *n, const char **s, size_t *len)
{
    if (n->type != YAML_SCALAR_NODE || is_null(n))
        return expect_fail(x, n, "a string");
    if (strlen(sval(n)) != slen(n))
        return fail(x, &n->start_mark, "the string contains a NUL character");
    *s = sval(n);
    *len = slen(n);
    return 0;
}

/* A name: 1..253 bytes, no control characters; copied into the result pool. */
static int get_name(struct ctx *x, const yaml_node_t *n, const char **out)
{
    const char *s;
    size_t len;
    int rc = get_text(x, n, &s, &len);
    if (rc)
        return rc;
    if (len == 0)
        return fail(x, &n->start_mark, "must not be empty");
    if (len > CONFIG_NAME_MAX)
        return fail(x, &n->start_mark, "longer than %d characters", CONFIG_NAME_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f) {
            char e[ESC_CAP];
            return fail(x, &n->start_mark, "\"%s\" contains a control character",
                        esc(s, len, e, sizeof(e)));
        }
    }
    *out = pool_strndup(x->pool, s, len);
    return *out ? 0 : oom(x);
}

static int get_bool(struct ctx *x, const yaml_node_t *n, bool *out)
{
    if (plain_is(n, yaml_trues))
        *out = true;
    else if (plain_is(n, yaml_falses))
        *out = false;
    else
        return expect_fail(x, n, "a boolean (true or false)");
    return 0;
}

/* A plain decimal number in [lo, hi]. */
static int get_number(struct ctx *x, const yaml_node_t *n, double lo, bool lo_open, double hi,
                      double *out)
{
    if (!plain(n) || !text_is_number(sval(n), slen(n)))
        return expect_fail(x, n, "a number");
    char *end;
    errno = 0;
    double v = strtod(sval(n), &end);
    if (!isfinite(v) || errno == ERANGE)
        return fail(x, &n->start_mark, "number %.40s is out of range", sval(n));
    if (v < lo || (lo_open && v == lo) || v > hi)
        return fail(x, &n->start_mark, "must be %s %.15g and <= %.15g, got %.40s",
                    lo_open ? ">" : ">=", lo, hi, sval(n));
    *out = v;
    return 0;
}

/* A plain decimal integer in [lo, hi]. */
static int get_int(struct ctx *x, const yaml_node_t *n, long long lo, long long hi, long long *out)
{
    if (!plain(n) || !text_is_int(sval(n), slen(n)))
        return expect_fail(x, n, "an integer");
    errno = 0;
    long long v = strtoll(sval(n), NULL, 10);
    if (errno == ERANGE || v < lo || v > hi)
        return fail(x, &n->start_mark, "must be an integer in %lld..%lld, got %.40s", lo, hi,
                    sval(n));
    *out = v;
    return 0;
}

/* One of `words`, spelt exactly. */
static int get_enum(struct ctx *x, const yaml_node_t *n, const char *const *words, int *out)
{
    const char *s;
    size_t len;
    int rc = get_text(x, n, &s, &len);
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
        sb_printf(&b, "%s%s", i ? ", " : "", words[i]);
    }
    char e[ESC_CAP];
    return fail(x, &n->start_mark, "invalid value \"%s\" (allowed: %s)", esc(s, len, e, sizeof(e)),
                allowed);
}

/* Durations: "0", or integer components with units in decreasing order: 1d2h30m15s500ms. */
static const char *parse_duration(const char *s, size_t n, int64_t *out)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    if (n == 0)
        return "empty duration";
    if (s[0] == '-')
        return "negative duration";
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return NULL;
    }
    size_t i = 0;
    int last = -1; /* index of the previous unit */
    int64_t total = 0;
    while (i < n) {
        if (!is_digit(s[i]))
            return "expected a number followed by a unit (ms, s, m, h, d), e.g. 90s, 10m, 1h30m";
        int64_t v = 0;
        for (; i < n && is_digit(s[i]); i++) {
            if (v > CONFIG_MAX_DURATION_MS)
                return "duration too long (at most 3650d)";
            v = v * 10 + (s[i] - '0');
        }
        if (i < n && s[i] == '.')
            return "fractions are not supported: write 1h30m, not 1.5h";
        int u = -1;
        if (i + 1 < n && s[i] == 'm' && s[i + 1] == 's')
            u = 4;
        else if (i < n) {
            for (int k = 0; k < 4; k++) {
                if (s[i] == units[k].unit[0])
                    u = k;
            }
        }
        if (u < 0)
            return i < n ? "unknown unit (allowed: ms, s, m, h, d)"
                         : "missing unit (ms, s, m, h or d), e.g. 90s";
        if (u <= last)
            return "units must appear once each, largest first (d, h, m, s, ms)";
        last = u;
        i += strlen(units[u].unit);
        if (v > CONFIG_MAX_DURATION_MS / units[u].ms)
            return "duration too long (at most 3650d)";
        total += v * units[u].ms;
        if (total > CONFIG_MAX_DURATION_MS)
            return "duration too long (at most 3650d)";
    }
    *out = total;
    return NULL;
}

static int get_duration(struct ctx *x, const yaml_node_t *n, int64_t *out)
{
    const char *s;
    size_t len;
    if (n->type != YAML_SCALAR_NODE || is_null(n))
        return expect_fail(x, n, "a duration such as 90s, 10m, 24h or 1h30m");
    int rc = get_text(x, n, &s, &len);
    if (rc)
        return rc;
    const char *why = parse_duration(s, len, out);
    if (why) {
        char e[ESC_CAP];
        return fail(x, &n->start_mark, "invalid duration \"%s\": %s", esc(s, len, e, sizeof(e)),
                    why);
    }
    return 0;
}

/* A quantity of a resource whose values are stored at `scale` (res_scale). */
static int get_quantity(struct ctx *x, const yaml_node_t *n, int scale, int64_t *out)
{
    const char *s;
    size_t len;
    if (n->type != YAML_SCALAR_NODE || is_null(n))
        return expect_fail(x, n, "a quantity such as 8, 500m or 16Gi");
    int rc = get_text(x, n, &s, &len);
    if (rc)
        return rc;
    struct sched_errbuf qe;
    int64_t v;
    if (qty_parse(s, scale, &v, &qe) != 0)
        return fail(x, &n->start_mark, "%s", qe.msg);
    char e[ESC_CAP];
    if (v < 0)
        return fail(x, &n->start_mark, "negative quantity \"%s\"", esc(s, len, e, sizeof(e)));
    if (v > CONFIG_MAX_QTY)
        return fail(x, &n->start_mark, "quantity \"%s\" is too large", esc(s, len, e, sizeof(e)));
    *out = v;
    return 0;
}

/* ---- mappings: key checks ---------------------------------------------------------------------
 */

static bool key_is(const yaml_node_t *k, const char *key)
{
    return strlen(key) == slen(k) && memcmp(key, sval(k), slen(k)) == 0;
}

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
    path_key(x, sval(again), slen(again));
    int rc = fail(x, &again->start_mark, "duplicate key (first at line %zu, column %zu)",
                  first->start_mark.line + 1, first->start_mark.column + 1);
    path_pop(x);
    return rc;
}

/* Checks a mapping: string keys, no duplicates, and (when `allowed` is given) known keys. */
static int check_map(struct ctx *x, yaml_node_t *m, const char *const *allowed)
{
    yaml_node_pair_t *ps = m->data.mapping.pairs.start;
    size_t n = (size_t)(m->data.mapping.pairs.top - ps);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *k = node_at(x, ps[i].key);
        if (!k || k->type != YAML_SCALAR_NODE)
            return fail(x, k ? &k->start_mark : &m->start_mark, "keys must be strings");
        if (strlen(sval(k)) != slen(k))
            return fail(x, &k->start_mark, "the key contains a NUL character");
    }
    if (n <= 16) {
        for (size_t j = 1; j < n; j++) {
            yaml_node_t *kj = node_at(x, ps[j].key);
            for (size_t i = 0; i < j; i++) {
                yaml_node_t *ki = node_at(x, ps[i].key);
                if (slen(ki) == slen(kj) && memcmp(sval(ki), sval(kj), slen(kj)) == 0)
                    return dup_key_fail(x, ki, kj);
            }
        }
    } else {
        struct key_ent *ke = pool_array(x->tmp, n, sizeof(*ke));
        if (!ke)
            return oom(x);
        for (size_t i = 0; i < n; i++) {
            yaml_node_t *k = node_at(x, ps[i].key);
            ke[i] = (struct key_ent){sval(k), slen(k), i};
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
            return dup_key_fail(x, node_at(x, ps[best_first].key), node_at(x, ps[best].key));
    }
    if (!allowed)
        return 0;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *k = node_at(x, ps[i].key);
        bool ok = false;
        for (int a = 0; allowed[a] && !ok; a++)
            ok = key_is(k, allowed[a]);
        if (!ok) {
            char list[256];
            struct sbuf b = {list, sizeof(list), 0};
            list[0] = '\0';
            for (int a = 0; allowed[a]; a++)
                sb_printf(&b, "%s%s", a ? ", " : "", allowed[a]);
            path_key(x, sval(k), slen(k));
            int rc = fail(x, &k->start_mark, "unknown key (allowed: %s)", list);
            path_pop(x);
            return rc;
        }
    }
    return 0;
}

/* Value of `key` in a checked mapping, or NULL. */
static yaml_node_t *map_get(struct ctx *x, yaml_node_t *m, const char *key)
{
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        if (key_is(node_at(x, p->key), key))
            return node_at(x, p->value);
    }
    return NULL;
}

/* Value of `key`, or NULL when absent or null. */
static yaml_node_t *map_opt(struct ctx *x, yaml_node_t *m, const char *key)
{
    yaml_node_t *v = map_get(x, m, key);
    return is_null(v) ? NULL : v;
}

static int missing(struct ctx *x, const yaml_node_t *m, const char *key, const char *extra)
{
    path_push(x, key);
    int rc = fail(x, &m->start_mark, "missing required field%s", extra);
    path_pop(x);
    return rc;
}

/* A cohort or queue entry: a mapping with only `keys` and a required valid `name`, which goes
 * into o->name (and its position into o->name_mark). 0 or the error. */
static int named_entry(struct ctx *x, yaml_node_t *n, const char *const *keys, struct owner *o)
{
    int rc = expect_mapping(x, n);
    if (!rc)
        rc = check_map(x, n, keys);
    yaml_node_t *name = rc ? NULL : map_opt(x, n, "name");
    if (!rc && !name)
        rc = missing(x, n, "name", "");
    if (!rc) {
        path_push(x, "name");
        rc = get_name(x, name, &o->name);
        path_pop(x);
    }
    if (!rc)
        o->name_mark = name->start_mark;
    return rc;
}

static size_t seq_len(const yaml_node_t *s)
{
    return (size_t)(s->data.sequence.items.top - s->data.sequence.items.start);
}

static yaml_node_t *seq_item(struct ctx *x, const yaml_node_t *s, size_t i)
{
    return node_at(x, s->data.sequence.items.start[i]);
}

/* A sequence of names (qualified: each "namespace/name") into a result-pool array. */
static int get_names(struct ctx *x, const yaml_node_t *v, bool qualified, const char ***out,
                     uint32_t *n)
{
    int rc = expect_sequence(x, v);
    if (rc)
        return rc;
    size_t k = seq_len(v);
    const char **arr = pool_array(x->pool, k ? k : 1, sizeof(*arr));
    if (!arr)
        return oom(x);
    for (size_t i = 0; i < k && !rc; i++) {
        const yaml_node_t *it = seq_item(x, v, i);
        rc = get_name(x, it, &arr[i]);
        const char *slash = rc ? NULL : strchr(arr[i], '/');
        if (!rc && qualified && (!slash || slash == arr[i] || !slash[1] || strchr(slash + 1, '/')))
            rc = fail(x, &it->start_mark, "\"%s\" is not NAMESPACE/NAME", arr[i]);
        else if (!rc && !qualified && slash)
            rc = fail(x, &it->start_mark, "\"%s\" is not a namespace name", arr[i]);
    }
    *out = arr;
    *n = (uint32_t)k;
    return rc;
}

/* ---- name tables ------------------------------------------------------------------------------
 */

static int name_ent_cmp(const void *a, const void *b)
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
static long name_sort_dups(struct name_ent *e, size_t n, size_t *first)
{
    if (n > 1)
        qsort(e, n, sizeof(*e), name_ent_cmp);
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

static const struct name_ent *name_find(const struct name_ent *e, size_t n, const char *name)
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
static const char *name_list(const char *const *names, size_t n, char *buf, size_t cap)
{
    struct sbuf b = {buf, cap, 0};
    buf[0] = '\0';
    for (size_t i = 0; i < n && i < 8; i++) {
        sb_printf(&b, "%s", i ? ", " : "");
        sb_escape(&b, names[i], strlen(names[i]));
    }
    if (n > 8)
        sb_printf(&b, ", ... (%zu in all)", n);
    if (n == 0)
        sb_printf(&b, "none");
    return buf;
}

/* ---- sections ---------------------------------------------------------------------------------
 */

static int parse_topology(struct ctx *x, yaml_node_t *t)
{
    static const char *const keys[] = {"levels", NULL};
    static const char *const level_keys[] = {"name", "label", NULL};
    int rc = expect_mapping(x, t);
    if (!rc)
        rc = check_map(x, t, keys);
    yaml_node_t *levels = rc ? NULL : map_opt(x, t, "levels");
    if (rc || !levels)
        return rc;
    path_push(x, "levels");
    rc = expect_sequence(x, levels);
    if (!rc && seq_len(levels) > CONFIG_MAX_LEVELS)
        rc = fail(x, &levels->start_mark,
                  "at most %d levels (the node level is implicit and always last), got %zu",
                  CONFIG_MAX_LEVELS, seq_len(levels));
    struct config *c = x->c;
    for (size_t i = 0; !rc && i < seq_len(levels); i++) {
        yaml_node_t *l = seq_item(x, levels, i);
        path_index(x, (long)i);
        rc = expect_mapping(x, l);
        if (!rc)
            rc = check_map(x, l, level_keys);
        yaml_node_t *name = rc ? NULL : map_opt(x, l, "name");
        yaml_node_t *label = rc ? NULL : map_opt(x, l, "label");
        if (!rc && !name)
            rc = missing(x, l, "name", "");
        if (!rc && !label)
            rc = missing(x, l, "label", " (a node label key)");
        if (!rc) {
            path_push(x, "name");
            rc = get_name(x, name, &c->level_names[i]);
            if (!rc && strcmp(c->level_names[i], "node") == 0)
                rc = fail(x, &name->start_mark,
                          "the level name \"node\" is reserved for the implicit node level");
            for (size_t j = 0; !rc && j < i; j++) {
                if (strcmp(c->level_names[j], c->level_names[i]) == 0)
                    rc = fail(x, &name->start_mark, "duplicate level name \"%s\" (levels[%zu])",
                              c->level_names[i], j);
            }
            path_pop(x);
        }
        if (!rc) {
            path_push(x, "label");
            rc = get_name(x, label, &c->level_labels[i]);
            for (size_t j = 0; !rc && j < i; j++) {
                if (strcmp(c->level_labels[j], c->level_labels[i]) == 0)
                    rc = fail(x, &label->start_mark, "duplicate level label (levels[%zu])", j);
            }
            path_pop(x);
        }
        path_pop(x);
    }
    if (!rc)
        c->n_levels = (uint32_t)seq_len(levels);
    path_pop(x);
    return rc;
}

static int parse_fair_share(struct ctx *x, yaml_node_t *f)
{
    static const char *const keys[] = {"halfLife", NULL};
    int rc = expect_mapping(x, f);
    if (!rc)
        rc = check_map(x, f, keys);
    yaml_node_t *v = rc ? NULL : map_opt(x, f, "halfLife");
    if (v) {
        path_push(x, "halfLife");
        rc = get_duration(x, v, &x->c->fair_half_life_ms);
        path_pop(x);
    }
    return rc;
}

static int parse_starvation(struct ctx *x, yaml_node_t *s)
{
    static const char *const keys[] = {"after", "maxReservations", NULL};
    int rc = expect_mapping(x, s);
    if (!rc)
        rc = check_map(x, s, keys);
    yaml_node_t *v = rc ? NULL : map_opt(x, s, "after");
    if (v) {
        path_push(x, "after");
        rc = get_duration(x, v, &x->c->starve_after_ms);
        path_pop(x);
    }
    v = rc ? NULL : map_opt(x, s, "maxReservations");
    if (v) {
        long long m;
        path_push(x, "maxReservations");
        rc = get_int(x, v, 0, CONFIG_MAX_RESERVE, &m);
        if (!rc)
            x->c->max_reservations = (uint32_t)m;
        path_pop(x);
    }
    return rc;
}

static int parse_device(struct ctx *x, yaml_node_t *d)
{
    static const char *const keys[] = {"resource", "unit", NULL};
    int rc = expect_mapping(x, d);
    if (!rc)
        rc = check_map(x, d, keys);
    yaml_node_t *v = rc ? NULL : map_get(x, d, "resource");
    if (!rc && !v)
        return missing(x, d, "resource", " (the accelerator's resource name, e.g. amd.com/gpu)");
    if (v) {
        path_push(x, "resource");
        const char *name = NULL;
        rc = get_name(x, v, &name);
        if (!rc) {
            struct sched_errbuf reb;
            /* the same rules as any resource name; renaming the slot is left to the driver */
            if (res_check_name(name, &reb) != 0)
                rc = fail(x, &v->start_mark, "%s", reb.msg);
            else
                x->c->device = name;
        }
        path_pop(x);
    }
    v = rc ? NULL : map_opt(x, d, "unit");
    if (v) {
        path_push(x, "unit");
        const char *s;
        size_t len;
        rc = get_text(x, v, &s, &len);
        bool ok = !rc && len > 0 && len < DEVICE_UNIT_MAX;
        for (size_t i = 0; ok && i < len; i++)
            ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z');
        if (!rc && !ok) {
            char e[ESC_CAP];
            rc = fail(x, &v->start_mark, "unit \"%s\": expected 1 to %d letters (GPU, NPU, TPU)",
                      esc(s, len, e, sizeof(e)), DEVICE_UNIT_MAX - 1);
        }
        if (!rc && !(x->c->device_unit = pool_strndup(x->pool, s, len)))
            rc = oom(x);
        path_pop(x);
    }
    return rc;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->key, ((const struct kv *)b)->key);
}

static int parse_flavor(struct ctx *x, yaml_node_t *fn, struct config_flavor *f)
{
    static const char *const keys[] = {"name", "nodeLabels", NULL};
    int rc = expect_mapping(x, fn);
    if (!rc)
        rc = check_map(x, fn, keys);
    yaml_node_t *name = rc ? NULL : map_opt(x, fn, "name");
    if (!rc && !name)
        rc = missing(x, fn, "name", "");
    if (!rc) {
        path_push(x, "name");
        rc = get_name(x, name, &f->name);
        path_pop(x);
    }
    yaml_node_t *labels = rc ? NULL : map_opt(x, fn, "nodeLabels");
    if (!labels)
        return rc;
    path_push(x, "nodeLabels");
    rc = expect_mapping(x, labels);
    if (!rc)
        rc = check_map(x, labels, NULL);
    size_t n = rc ? 0 : (size_t)(labels->data.mapping.pairs.top - labels->data.mapping.pairs.start);
    struct kv *kv = n ? pool_array(x->pool, n, sizeof(*kv)) : NULL;
    if (n && !kv)
        rc = oom(x);
    for (size_t i = 0; !rc && i < n; i++) {
        yaml_node_pair_t *p = &labels->data.mapping.pairs.start[i];
        yaml_node_t *k = node_at(x, p->key), *v = node_at(x, p->value);
        path_key(x, sval(k), slen(k));
        rc = get_name(x, k, &kv[i].key);
        if (!rc && is_null(v)) {
            kv[i].value = "";
        } else if (!rc) {
            const char *s;
            size_t len;
            rc = v->type == YAML_SCALAR_NODE ? get_text(x, v, &s, &len)
                                             : expect_fail(x, v, "a label value (a string)");
            if (!rc) {
                kv[i].value = pool_strndup(x->pool, s, len);
                if (!kv[i].value)
                    rc = oom(x);
            }
        }
        path_pop(x);
    }
    if (!rc && n > 1)
        qsort(kv, n, sizeof(*kv), kv_cmp);
    f->node_labels = kv;
    f->n_node_labels = (uint32_t)n;
    path_pop(x);
    return rc;
}

static int parse_flavors(struct ctx *x, yaml_node_t *fl)
{
    struct config *c = x->c;
    size_t n = 0;
    int rc = 0;
    if (fl) {
        path_push(x, "flavors");
        rc = expect_sequence(x, fl);
        if (!rc) {
            n = seq_len(fl);
            if (n > CONFIG_MAX_FLAVORS)
                rc = fail(x, &fl->start_mark, "at most %d flavors, got %zu", CONFIG_MAX_FLAVORS, n);
        }
        path_pop(x);
        if (rc)
            return rc;
    }
    x->flavors_declared = n > 0;
    c->n_flavors = n ? (uint32_t)n : 1;
    c->flavors = pool_array(x->pool, c->n_flavors, sizeof(*c->flavors));
    x->flavor_ents = pool_array(x->tmp, c->n_flavors, sizeof(*x->flavor_ents));
    if (!c->flavors || !x->flavor_ents)
        return oom(x);
    if (n == 0) {
        c->flavors[0].name = "default";
        x->flavor_ents[0] = (struct name_ent){"default", 0, 0, {0, 0, 0}};
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *f = seq_item(x, fl, i);
        path_set(x, "flavors", (long)i, NULL);
        rc = parse_flavor(x, f, &c->flavors[i]);
        if (rc)
            return rc;
        x->flavor_ents[i] = (struct name_ent){c->flavors[i].name, (uint32_t)i, 0,
                                              map_get(x, f, "name")->start_mark};
    }
    size_t first;
    long d = name_sort_dups(x->flavor_ents, n, &first);
    if (d >= 0) {
        const struct name_ent *e = &x->flavor_ents[d], *f = &x->flavor_ents[first];
        path_set(x, "flavors", (long)e->idx, "name");
        char q[ESC_CAP];
        return fail(x, &e->mark, "duplicate flavor name \"%s\" (first declared at line %zu)",
                    esc(e->name, strlen(e->name), q, sizeof(q)), f->mark.line + 1);
    }
    return 0;
}

static int parse_profiles(struct ctx *x, yaml_node_t *pl)
{
    static const char *const keys[] = {"name", "weights", NULL};
    const char *weight_keys[SCORE_TERMS_MAX + 1] = {NULL}; /* the score terms of plugins/ */
    uint32_t n_terms = plugin_score_count();
    for (uint32_t t = 0; t < n_terms; t++)
        weight_keys[t] = plugin_scores[t]->name;
    struct config *c = x->c;
    size_t n = 0;
    if (pl) {
        path_push(x, "profiles");
        int rc = expect_sequence(x, pl);
        path_pop(x);
        if (rc)
            return rc;
        n = seq_len(pl);
    }
    c->profiles = pool_array(x->pool, n + 2, sizeof(*c->profiles));
    struct name_ent *ents = pool_array(x->tmp, n + 2, sizeof(*ents));
    if (!c->profiles || !ents)
        return oom(x);
    c->profiles[0] = (struct config_profile){.name = "training"};
    c->profiles[1] = (struct config_profile){.name = "inference"};
    memcpy(c->profiles[0].weights, plugin_weights_training, sizeof(c->profiles[0].weights));
    memcpy(c->profiles[1].weights, plugin_weights_inference, sizeof(c->profiles[1].weights));
    c->n_profiles = 2;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *p = seq_item(x, pl, i);
        path_set(x, "profiles", (long)i, NULL);
        struct config_profile prof = {NULL, {0}};
        int rc = expect_mapping(x, p);
        if (!rc)
            rc = check_map(x, p, keys);
        yaml_node_t *name = rc ? NULL : map_opt(x, p, "name");
        if (!rc && !name)
            rc = missing(x, p, "name", "");
        if (!rc) {
            path_push(x, "name");
            rc = get_name(x, name, &prof.name);
            path_pop(x);
        }
        yaml_node_t *w = rc ? NULL : map_opt(x, p, "weights");
        if (w) {
            path_push(x, "weights");
            rc = expect_mapping(x, w);
            if (!rc)
                rc = check_map(x, w, weight_keys);
            for (uint32_t t = 0; !rc && t < n_terms; t++) {
                yaml_node_t *v = map_opt(x, w, weight_keys[t]);
                if (v) {
                    path_push(x, weight_keys[t]);
                    rc = get_number(x, v, 0, false, CONFIG_MAX_WEIGHT, &prof.weights[t]);
                    path_pop(x);
                }
            }
            path_pop(x);
        }
        if (rc)
            return rc;
        ents[i] = (struct name_ent){prof.name, (uint32_t)i, 0, name->start_mark};
        uint32_t slot = c->n_profiles;
        for (uint32_t b = 0; b < 2; b++) {
            if (strcmp(prof.name, c->profiles[b].name) == 0)
                slot = b;
        }
        if (slot == c->n_profiles)
            c->n_profiles++;
        c->profiles[slot] = prof;
    }
    size_t first;
    long d = name_sort_dups(ents, n, &first);
    if (d >= 0) {
        const struct name_ent *e = &ents[d];
        path_set(x, "profiles", (long)e->idx, "name");
        char q[ESC_CAP];
        return fail(x, &e->mark, "duplicate profile name \"%s\" (first declared at line %zu)",
                    esc(e->name, strlen(e->name), q, sizeof(q)), ents[first].mark.line + 1);
    }
    /* final table: index into c->profiles */
    x->profile_ents = pool_array(x->tmp, c->n_profiles, sizeof(*x->profile_ents));
    if (!x->profile_ents)
        return oom(x);
    for (uint32_t i = 0; i < c->n_profiles; i++)
        x->profile_ents[i] = (struct name_ent){c->profiles[i].name, i, 0, {0, 0, 0}};
    qsort(x->profile_ents, c->n_profiles, sizeof(*x->profile_ents), name_ent_cmp);
    return 0;
}

/* ---- quotas -----------------------------------------------------------------------------------
 */

/* Resource id of `name`, or -1 - i for the i-th pending (not yet interned) name. */
static int resolve_res(struct ctx *x, const yaml_node_t *k, const char *name, int *code)
{
    if (strcmp(name, x->c->device) == 0) {
        *code = RES_GPU;
        return 0;
    }
    int id = res_lookup(name);
    if (id == RES_GPU) {
        char e[ESC_CAP], d[ESC_CAP];
        return fail(x, &k->start_mark,
                    "\"%s\" is not the device of this config (device.resource is \"%s\"); a "
                    "quota of the accelerator is written under the device's name",
                    esc(name, strlen(name), e, sizeof(e)),
                    esc(x->c->device, strlen(x->c->device), d, sizeof(d)));
    }
    if (id >= 0) {
        *code = id;
        return 0;
    }
    for (int i = 0; i < x->n_pending; i++) {
        if (strcmp(x->pending[i].name, name) == 0) {
            *code = -1 - i;
            return 0;
        }
    }
    char e[ESC_CAP];
    if (res_count() + x->n_pending >= RES_MAX)
        return fail(x, &k->start_mark,
                    "too many resource names: \"%s\" would be name number %d, at most %d distinct "
                    "resource names are supported",
                    esc(name, strlen(name), e, sizeof(e)), res_count() + x->n_pending + 1, RES_MAX);
    char path[256];
    format_path(x, path, sizeof(path));
    struct pending_res *p = &x->pending[x->n_pending];
    p->name = pool_strndup(x->tmp, name, strlen(name));
    p->path = pool_strndup(x->tmp, path, strlen(path));
    if (!p->name || !p->path)
        return oom(x);
    p->mark = k->start_mark;
    *code = -1 - x->n_pending++;
    return 0;
}

static int add_entry(struct ctx *x, const struct qentry *e)
{
    if (x->n_qe == x->cap_qe) {
        size_t cap = x->cap_qe ? x->cap_qe * 2 : 64;
        struct qentry *g = realloc(x->qe, cap * sizeof(*g));
        if (!g)
            return oom(x);
        x->qe = g;
        x->cap_qe = cap;
    }
    x->qe[x->n_qe++] = *e;
    return 0;
}

static int fmt_qty(int64_t v, int res_code, char *buf, size_t cap)
{
    int scale = res_code >= 0 ? res_scale(res_code) : 0;
    bool binary =
        res_code == RES_MEMORY || (res_code >= 0 && strstr(res_name(res_code), "storage") != NULL);
    return qty_format(v, scale, binary, buf, cap);
}

/* One resource entry: a quantity (nominal) or {nominal, borrowingLimit, lendingLimit}. */
static int parse_quota_value(struct ctx *x, yaml_node_t *v, struct owner *o, int res,
                             struct config_quota *q)
{
    static const char *const keys[] = {"nominal", "borrowingLimit", "lendingLimit", NULL};
    int scale = res >= 0 ? res_scale(res) : 0;
    q->borrowing_limit = CONFIG_NO_LIMIT;
    q->lending_limit = CONFIG_NO_LIMIT;
    if (v->type == YAML_SCALAR_NODE)
        return get_quantity(x, v, scale, &q->nominal);
    if (v->type != YAML_MAPPING_NODE)
        return expect_fail(x, v,
                           "a quantity or a mapping with nominal, borrowingLimit, lendingLimit");
    int rc = check_map(x, v, keys);
    if (rc)
        return rc;
    yaml_node_t *nom = map_opt(x, v, "nominal");
    if (!nom)
        return missing(x, v, "nominal", "");
    path_push(x, "nominal");
    rc = get_quantity(x, nom, scale, &q->nominal);
    path_pop(x);
    const char *needs = o->is_queue ? "a cohort" : "a parent cohort";
    yaml_node_t *bl = rc ? NULL : map_opt(x, v, "borrowingLimit");
    if (bl) {
        path_push(x, "borrowingLimit");
        rc = o->ref ? get_quantity(x, bl, scale, &q->borrowing_limit)
                    : fail(x, &bl->start_mark, "borrowingLimit needs %s", needs);
        path_pop(x);
    }
    yaml_node_t *ll = rc ? NULL : map_opt(x, v, "lendingLimit");
    if (ll) {
        path_push(x, "lendingLimit");
        rc = o->ref ? get_quantity(x, ll, scale, &q->lending_limit)
                    : fail(x, &ll->start_mark, "lendingLimit needs %s", needs);
        if (!rc && o->is_queue && q->lending_limit > q->nominal) {
            char a[64], b[64];
            fmt_qty(q->lending_limit, res, a, sizeof(a));
            fmt_qty(q->nominal, res, b, sizeof(b));
            rc = fail(x, &ll->start_mark, "lendingLimit %s is above nominal %s", a, b);
        }
        path_pop(x);
    }
    return rc;
}

static int parse_quota(struct ctx *x, yaml_node_t *qn, uint32_t owner)
{
    struct owner *o = &x->owners[owner];
    o->quota_mark = qn->start_mark;
    int rc = expect_mapping(x, qn);
    if (!rc)
        rc = check_map(x, qn, NULL);
    for (yaml_node_pair_t *p = qn->data.mapping.pairs.start; !rc && p < qn->data.mapping.pairs.top;
         p++) {
        yaml_node_t *fk = node_at(x, p->key), *fv = node_at(x, p->value);
        path_key(x, sval(fk), slen(fk));
        const struct name_ent *fe = name_find(x->flavor_ents, x->c->n_flavors, sval(fk));
        if (!fe) {
            const char **names = pool_array(x->tmp, x->c->n_flavors, sizeof(*names));
            if (!names) {
                rc = oom(x);
            } else {
                for (uint32_t i = 0; i < x->c->n_flavors; i++)
                    names[i] = x->c->flavors[i].name;
                char list[300], e[ESC_CAP];
                rc = fail(x, &fk->start_mark, "unknown flavor \"%s\" (declared: %s)",
                          esc(sval(fk), slen(fk), e, sizeof(e)),
                          name_list(names, x->c->n_flavors, list, sizeof(list)));
            }
        }
        if (!rc && !is_null(fv)) {
            rc = expect_mapping(x, fv);
            if (!rc)
                rc = check_map(x, fv, NULL);
        }
        for (yaml_node_pair_t *r = is_null(fv) ? NULL : fv->data.mapping.pairs.start;
             !rc && r && r < fv->data.mapping.pairs.top; r++) {
            yaml_node_t *rk = node_at(x, r->key), *rv = node_at(x, r->value);
            path_key(x, sval(rk), slen(rk));
            struct qentry e = {owner, fe->idx, 0, {0, 0, 0}};
            if (slen(rk) == 0)
                rc = fail(x, &rk->start_mark, "empty resource name");
            if (!rc)
                rc = resolve_res(x, rk, sval(rk), &e.res);
            if (!rc && !is_null(rv)) {
                rc = parse_quota_value(x, rv, o, e.res, &e.q);
                if (!rc)
                    rc = add_entry(x, &e);
                if (!rc)
                    o->n_entries++;
            }
            path_pop(x);
        }
        path_pop(x);
    }
    return rc;
}

/* ---- cohorts and queues -----------------------------------------------------------------------
 */

static int parse_cohort(struct ctx *x, yaml_node_t *n, uint32_t i)
{
    static const char *const keys[] = {"name", "parent", "quota", NULL};
    struct config_cohort *co = &x->c->cohorts[i];
    struct owner *o = &x->owners[i];
    co->line = (uint32_t)n->start_mark.line + 1;
    co->column = (uint32_t)n->start_mark.column + 1;
    co->parent = -1;
    int rc = named_entry(x, n, keys, o);
    if (rc)
        return rc;
    co->name = o->name;
    yaml_node_t *parent = map_opt(x, n, "parent");
    if (parent) {
        path_push(x, "parent");
        rc = get_name(x, parent, &o->ref);
        path_pop(x);
        o->ref_mark = parent->start_mark;
    }
    yaml_node_t *quota = rc ? NULL : map_opt(x, n, "quota");
    if (quota) {
        path_push(x, "quota");
        rc = parse_quota(x, quota, i);
        path_pop(x);
    }
    return rc;
}

static int parse_preemption(struct ctx *x, yaml_node_t *p, struct config_preemption *pre)
{
    static const char *const keys[] = {"withinQueue", "reclaimWithinCohort", "fairSharePreemption",
                                       "minRuntime",  "restartCost",         "checkpointGrace",
                                       NULL};
    static const char *const within[] = {"Never", "LowerPriority", "LowerOrNewerEqualPriority",
                                         NULL};
    static const char *const reclaim[] = {"Never", "LowerPriority", "Any", NULL};
    int rc = expect_mapping(x, p);
    if (!rc)
        rc = check_map(x, p, keys);
    yaml_node_t *v;
    int e;
    if (!rc && (v = map_opt(x, p, "withinQueue")) != NULL) {
        path_push(x, "withinQueue");
        rc = get_enum(x, v, within, &e);
        pre->within_queue = (enum config_within_queue)e;
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, p, "reclaimWithinCohort")) != NULL) {
        path_push(x, "reclaimWithinCohort");
        rc = get_enum(x, v, reclaim, &e);
        pre->reclaim = (enum config_reclaim)e;
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, p, "fairSharePreemption")) != NULL) {
        path_push(x, "fairSharePreemption");
        rc = get_bool(x, v, &pre->fair_share);
        path_pop(x);
    }
    static const char *const durs[] = {"minRuntime", "restartCost", "checkpointGrace"};
    int64_t *dst[] = {&pre->min_runtime_ms, &pre->restart_cost_ms, &pre->checkpoint_grace_ms};
    for (int k = 0; !rc && k < 3; k++) {
        if ((v = map_opt(x, p, durs[k])) != NULL) {
            path_push(x, durs[k]);
            rc = get_duration(x, v, dst[k]);
            path_pop(x);
        }
    }
    return rc;
}

static int parse_lifecycle(struct ctx *x, yaml_node_t *p, struct config_lifecycle *lc)
{
    static const char *const keys[] = {"startTimeout", "maxRestarts", "failureGrace", NULL};
    int rc = expect_mapping(x, p);
    if (!rc)
        rc = check_map(x, p, keys);
    yaml_node_t *v;
    if (!rc && (v = map_opt(x, p, "startTimeout")) != NULL) {
        path_push(x, "startTimeout");
        rc = get_duration(x, v, &lc->start_timeout_ms);
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, p, "failureGrace")) != NULL) {
        path_push(x, "failureGrace");
        rc = get_duration(x, v, &lc->failure_grace_ms);
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, p, "maxRestarts")) != NULL) {
        long long n;
        path_push(x, "maxRestarts");
        rc = get_int(x, v, 0, 1000, &n);
        lc->max_restarts = (uint32_t)n;
        path_pop(x);
    }
    return rc;
}

static int parse_queue(struct ctx *x, yaml_node_t *n, uint32_t i)
{
    static const char *const keys[] = {"name",      "cohort",     "weight",      "priority",
                                       "ordering",  "profile",    "quota",       "preemption",
                                       "lifecycle", "namespaces", "localQueues", NULL};
    static const char *const orderings[] = {"BestEffortFIFO", "StrictFIFO", NULL};
    struct config_queue *q = &x->c->queues[i];
    struct owner *o = &x->owners[x->c->n_cohorts + i];
    q->line = (uint32_t)n->start_mark.line + 1;
    q->column = (uint32_t)n->start_mark.column + 1;
    q->cohort = -1;
    q->weight = 1;
    q->ordering = CONFIG_BEST_EFFORT_FIFO;
    q->profile = -1;
    q->preemption.within_queue = CONFIG_PREEMPT_LOWER_PRIORITY;
    q->preemption.reclaim = CONFIG_RECLAIM_ANY;
    q->lifecycle.start_timeout_ms = CONFIG_DEFAULT_START_TIMEOUT_MS;
    q->lifecycle.max_restarts = CONFIG_DEFAULT_MAX_RESTARTS;
    q->lifecycle.failure_grace_ms = CONFIG_DEFAULT_FAILURE_GRACE_MS;
    int rc = named_entry(x, n, keys, o);
    if (rc)
        return rc;
    q->name = o->name;
    yaml_node_t *v;
    if ((v = map_opt(x, n, "cohort")) != NULL) {
        path_push(x, "cohort");
        rc = get_name(x, v, &o->ref);
        o->ref_mark = v->start_mark;
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, n, "weight")) != NULL) {
        path_push(x, "weight");
        rc = get_number(x, v, 0, true, CONFIG_MAX_WEIGHT, &q->weight);
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, n, "priority")) != NULL) {
        long long p;
        path_push(x, "priority");
        rc = get_int(x, v, INT32_MIN, INT32_MAX, &p);
        q->priority = (int32_t)p;
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, n, "ordering")) != NULL) {
        int e;
        path_push(x, "ordering");
        rc = get_enum(x, v, orderings, &e);
        q->ordering = (enum config_ordering)e;
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, n, "profile")) != NULL) {
        const char *pname;
        path_push(x, "profile");
        rc = get_name(x, v, &pname);
        const struct name_ent *pe = rc ? NULL : name_find(x->profile_ents, x->c->n_profiles, pname);
        if (!rc && !pe) {
            const char **names = pool_array(x->tmp, x->c->n_profiles, sizeof(*names));
            if (!names) {
                rc = oom(x);
            } else {
                for (uint32_t k = 0; k < x->c->n_profiles; k++)
                    names[k] = x->c->profiles[k].name;
                char list[300], e[ESC_CAP];
                rc = fail(x, &v->start_mark, "unknown profile \"%s\" (known: %s)",
                          esc(pname, strlen(pname), e, sizeof(e)),
                          name_list(names, x->c->n_profiles, list, sizeof(list)));
            }
        }
        if (!rc)
            q->profile = (int32_t)pe->idx;
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, n, "preemption")) != NULL) {
        path_push(x, "preemption");
        rc = parse_preemption(x, v, &q->preemption);
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, n, "lifecycle")) != NULL) {
        path_push(x, "lifecycle");
        rc = parse_lifecycle(x, v, &q->lifecycle);
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, n, "namespaces")) != NULL) {
        path_push(x, "namespaces");
        rc = get_names(x, v, false, &q->namespaces, &q->n_namespaces);
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, n, "localQueues")) != NULL) {
        path_push(x, "localQueues");
        rc = get_names(x, v, true, &q->local_queues, &q->n_local_queues);
        for (uint32_t k = 0; !rc && k < q->n_local_queues; k++)
            for (uint32_t j = 0; !rc && j <= i; j++) {
                const struct config_queue *o2 = &x->c->queues[j];
                for (uint32_t m = 0; !rc && m < (j == i ? k : o2->n_local_queues); m++)
                    if (strcmp(o2->local_queues[m], q->local_queues[k]) == 0)
                        rc = fail(x, &seq_item(x, v, k)->start_mark,
                                  "LocalQueue \"%s\" is mapped twice (also to queue %s)",
                                  q->local_queues[k], j == i ? q->name : o2->name);
            }
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, n, "quota")) != NULL) {
        path_push(x, "quota");
        rc = parse_quota(x, v, x->c->n_cohorts + i);
        path_pop(x);
    }
    return rc;
}

static int parse_list(struct ctx *x, yaml_node_t *l, const char *section, uint32_t *n)
{
    *n = 0;
    if (!l)
        return 0;
    path_push(x, section);
    int rc = expect_sequence(x, l);
    path_pop(x);
    if (!rc && seq_len(l) > INT32_MAX / 2)
        rc = fail(x, &l->start_mark, "too many %s", section);
    if (!rc)
        *n = (uint32_t)seq_len(l);
    return rc;
}

/* Names unique across cohorts and queues; parents and cohorts resolved; no cycles. */
static int resolve_tree(struct ctx *x)
{
    struct config *c = x->c;
    uint32_t nc = c->n_cohorts, n = nc + c->n_queues;
    struct name_ent *ents = pool_array(x->tmp, n ? n : 1, sizeof(*ents));
    if (!ents)
        return oom(x);
    for (uint32_t i = 0; i < n; i++) {
        struct owner *o = &x->owners[i];
        ents[i] = (struct name_ent){o->name, o->idx, o->is_queue, o->name_mark};
    }
    size_t first;
    long d = name_sort_dups(ents, n, &first);
    if (d >= 0) {
        const struct name_ent *e = &ents[d], *f = &ents[first];
        path_set(x, e->kind ? "queues" : "cohorts", (long)e->idx, "name");
        char q[ESC_CAP];
        esc(e->name, strlen(e->name), q, sizeof(q));
        if (e->kind == f->kind)
            return fail(x, &e->mark, "duplicate %s name \"%s\" (first declared at line %zu)",
                        e->kind ? "queue" : "cohort", q, f->mark.line + 1);
        return fail(x, &e->mark,
                    "name \"%s\" is used by both a cohort and a queue (the %s at line %zu)", q,
                    f->kind ? "queue" : "cohort", f->mark.line + 1);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct owner *o = &x->owners[i];
        if (!o->ref)
            continue;
        const struct name_ent *e = name_find(ents, n, o->ref);
        const char *field = o->is_queue ? "cohort" : "parent";
        if (!e || e->kind == 1) {
            char q[ESC_CAP];
            path_set(x, o->is_queue ? "queues" : "cohorts", (long)o->idx, field);
            esc(o->ref, strlen(o->ref), q, sizeof(q));
            if (e)
                return fail(x, &o->ref_mark, "\"%s\" is a queue, not a cohort", q);
            return fail(x, &o->ref_mark, "unknown cohort \"%s\"", q);
        }
        if (o->is_queue)
            c->queues[o->idx].cohort = (int32_t)e->idx;
        else
            c->cohorts[o->idx].parent = (int32_t)e->idx;
    }
    /* cycles: follow parents; 0 unvisited, 1 on the current walk, 2 done */
    uint8_t *st = pool_array(x->tmp, nc ? nc : 1, 1);
    if (!st)
        return oom(x);
    for (uint32_t i = 0; i < nc; i++) {
        int32_t k = (int32_t)i;
        while (k >= 0 && st[k] == 0) {
            st[k] = 1;
            k = c->cohorts[k].parent;
        }
        if (k >= 0 && st[k] == 1) {
            /* the cycle through k; name it from its earliest declared member */
            int32_t start = k, m = c->cohorts[k].parent;
            while (m != k) {
                if (m < start)
                    start = m;
                m = c->cohorts[m].parent;
            }
            char cyc[400];
            struct sbuf b = {cyc, sizeof(cyc), 0};
            cyc[0] = '\0';
            m = start;
            do {
                sb_escape(&b, c->cohorts[m].name, strlen(c->cohorts[m].name));
                sb_printf(&b, " -> ");
                m = c->cohorts[m].parent;
            } while (m != start);
            sb_escape(&b, c->cohorts[start].name, strlen(c->cohorts[start].name));
            path_set(x, "cohorts", start, "parent");
            return fail(x, &x->owners[start].ref_mark, "cohort cycle: %s", cyc);
        }
        for (k = (int32_t)i; k >= 0 && st[k] == 1; k = c->cohorts[k].parent)
            st[k] = 2;
    }
    /* depth (levels from the root, the root being 1), each cohort once: a chain walked up to
     * the first cohort whose depth is known, then filled in on the way back */
    uint32_t *dep = pool_array(x->tmp, nc ? nc : 1, sizeof(*dep));
    uint32_t *walk = pool_array(x->tmp, nc ? nc : 1, sizeof(*walk));
    if (!dep || !walk)
        return oom(x);
    memset(dep, 0, (nc ? nc : 1) * sizeof(*dep));
    for (uint32_t i = 0; i < nc; i++) {
        uint32_t wn = 0;
        int32_t k = (int32_t)i;
        while (k >= 0 && dep[k] == 0) {
            walk[wn++] = (uint32_t)k;
            k = c->cohorts[k].parent;
        }
        uint32_t dk = k >= 0 ? dep[k] : 0;
        while (wn > 0)
            dep[walk[--wn]] = ++dk;
    }
    for (uint32_t i = 0; i < nc; i++)
        if (dep[i] > CONFIG_MAX_COHORT_DEPTH) {
            int32_t root = (int32_t)i;
            while (c->cohorts[root].parent >= 0)
                root = c->cohorts[root].parent;
            path_set(x, "cohorts", i, "parent");
            return fail(x, &x->owners[i].ref_mark,
                        "cohort '%s' is %u levels deep under root cohort '%s' (at most %d)",
                        c->cohorts[i].name, dep[i], c->cohorts[root].name, CONFIG_MAX_COHORT_DEPTH);
        }
    return 0;
}

/* Interns the new resource names, then fills the dense quota tables. */
static int build_quotas(struct ctx *x)
{
    struct config *c = x->c;
    int ids[RES_MAX];
    for (int i = 0; i < x->n_pending; i++) {
        struct pending_res *p = &x->pending[i];
        struct sched_errbuf reb;
        if (res_intern(p->name, &ids[i], &reb) != 0)
            return sched_fail(x->eb, SCHED_EINVAL, "%s:%zu:%zu: %s: %s", x->file, p->mark.line + 1,
                              p->mark.column + 1, p->path, reb.msg);
    }
    size_t cells = (size_t)c->n_flavors * RES_MAX;
    /* nodes without a quota share one empty table (the config is read-only) */
    struct config_quota *empty_q = pool_array(x->pool, cells, sizeof(*empty_q));
    bool *empty_has = pool_array(x->pool, cells, sizeof(*empty_has));
    if (!empty_q || !empty_has)
        return oom(x);
    size_t used = cells;
    uint32_t n = c->n_cohorts + c->n_queues;
    for (uint32_t i = 0; i < n; i++) {
        struct owner *o = &x->owners[i];
        o->set->quota = empty_q;
        o->set->has = empty_has;
        if (o->n_entries == 0)
            continue;
        used += cells;
        if (used > CONFIG_MAX_QUOTA_CELLS) {
            path_set(x, o->is_queue ? "queues" : "cohorts", (long)o->idx, "quota");
            return fail(x, &o->quota_mark,
                        "too many quotas: %zu quota tables of %u flavors x %d resources exceed "
                        "the limit of %zu cells; use fewer flavors or fewer queues with a quota",
                        used / cells - 1, c->n_flavors, RES_MAX, (size_t)CONFIG_MAX_QUOTA_CELLS);
        }
        o->set->quota = pool_array(x->pool, cells, sizeof(*o->set->quota));
        o->set->has = pool_array(x->pool, cells, sizeof(*o->set->has));
        if (!o->set->quota || !o->set->has)
            return oom(x);
    }
    for (size_t k = 0; k < x->n_qe; k++) {
        const struct qentry *e = &x->qe[k];
        int r = e->res >= 0 ? e->res : ids[-1 - e->res];
        struct config_quota_set *s = x->owners[e->owner].set;
        size_t cell = (size_t)e->flavor * RES_MAX + (size_t)r;
        s->quota[cell] = e->q;
        s->has[cell] = true;
    }
    return 0;
}

static int name_idx_cmp(const void *a, const void *b)
{
    return strcmp(((const struct name_idx *)a)->name, ((const struct name_idx *)b)->name);
}

/* Counting sort of `n` items into `nb` buckets: first[b] .. first[b + 1] index `list`, items in
 * declaration order. `first` has nb + 1 entries, zeroed. */
static void csr_fill(uint32_t *first, uint32_t nb, uint32_t *list, uint32_t n,
                     const uint32_t *bucket_of)
{
    for (uint32_t i = 0; i < n; i++)
        first[bucket_of[i] + 1]++;
    for (uint32_t b = 0; b < nb; b++)
        first[b + 1] += first[b];
    for (uint32_t i = 0; i < n; i++)
        list[first[bucket_of[i]]++] = i; /* first[b] moves to the end of bucket b */
    for (uint32_t b = nb; b > 0; b--)
        first[b] = first[b - 1];
    first[0] = 0;
}

/* Lookup tables and the CSR tree used by lookups and config_print_tree. */
static int build_indices(struct ctx *x)
{
    struct config *c = x->c;
    struct config_pool *p = x->pool;
    uint32_t nc = c->n_cohorts, nq = c->n_queues;
    p->queue_idx = pool_array(p, nq ? nq : 1, sizeof(*p->queue_idx));
    p->flavor_idx = pool_array(p, c->n_flavors, sizeof(*p->flavor_idx));
    p->child_first = pool_array(p, nc + 2, sizeof(uint32_t));
    p->child = pool_array(p, nc ? nc : 1, sizeof(uint32_t));
    p->child_pos = pool_array(p, nc ? nc : 1, sizeof(uint32_t));
    p->queue_first = pool_array(p, nc + 2, sizeof(uint32_t));
    p->queue_list = pool_array(p, nq ? nq : 1, sizeof(uint32_t));
    uint32_t *bucket = pool_array(x->tmp, nc + nq + 1, sizeof(uint32_t));
    if (!p->queue_idx || !p->flavor_idx || !p->child_first || !p->child || !p->child_pos ||
        !p->queue_first || !p->queue_list || !bucket)
        return oom(x);
    for (uint32_t i = 0; i < nq; i++)
        p->queue_idx[i] = (struct name_idx){c->queues[i].name, i};
    for (uint32_t i = 0; i < c->n_flavors; i++)
        p->flavor_idx[i] = (struct name_idx){c->flavors[i].name, i};
    qsort(p->queue_idx, nq, sizeof(*p->queue_idx), name_idx_cmp);
    qsort(p->flavor_idx, c->n_flavors, sizeof(*p->flavor_idx), name_idx_cmp);
    /* bucket nc holds the roots (cohorts) and the queues without a cohort */
    for (uint32_t i = 0; i < nc; i++)
        bucket[i] = c->cohorts[i].parent >= 0 ? (uint32_t)c->cohorts[i].parent : nc;
    csr_fill(p->child_first, nc + 1, p->child, nc, bucket);
    for (uint32_t k = 0; k < nc; k++)
        p->child_pos[p->child[k]] = k;
    for (uint32_t i = 0; i < nq; i++)
        bucket[i] = c->queues[i].cohort >= 0 ? (uint32_t)c->queues[i].cohort : nc;
    csr_fill(p->queue_first, nc + 1, p->queue_list, nq, bucket);
    return 0;
}

/* ---- load -------------------------------------------------------------------------------------
 */

static int load_root(struct ctx *x, yaml_node_t *root)
{
    static const char *const keys[] = {"apiVersion", "kind",       "device",  "topology",
                                       "fairShare",  "starvation", "flavors", "cohorts",
                                       "queues",     "profiles",   NULL};
    struct config *c = x->c;
    if (root->type != YAML_MAPPING_NODE) {
        char d[ESC_CAP + 32];
        return fail(x, &root->start_mark,
                    "the document must be a mapping with apiVersion and kind, got %s",
                    describe(root, d, sizeof(d)));
    }
    /* the header first, so that a file of another kind is named as such */
    int rc = check_map(x, root, NULL);
    if (rc)
        return rc;
    static const struct {
        const char *key, *want;
    } ids[] = {{"apiVersion", CONFIG_API_VERSION}, {"kind", CONFIG_KIND}};
    for (int i = 0; i < 2; i++) {
        yaml_node_t *v = map_opt(x, root, ids[i].key);
        if (!v) {
            char extra[64];
            snprintf(extra, sizeof(extra), " (%s: %s)", ids[i].key, ids[i].want);
            return missing(x, root, ids[i].key, extra);
        }
        path_push(x, ids[i].key);
        const char *s;
        size_t len;
        rc = get_text(x, v, &s, &len);
        if (!rc && (len != strlen(ids[i].want) || memcmp(s, ids[i].want, len) != 0)) {
            char e[ESC_CAP];
            rc = fail(x, &v->start_mark, "unsupported %s \"%s\" (expected %s)", ids[i].key,
                      esc(s, len, e, sizeof(e)), ids[i].want);
        }
        path_pop(x);
        if (rc)
            return rc;
    }
    rc = check_map(x, root, keys);
    if (rc)
        return rc;
    yaml_node_t *v;
    if ((v = map_opt(x, root, "device")) != NULL) {
        path_push(x, "device");
        rc = parse_device(x, v);
        path_pop(x);
        if (rc)
            return rc;
    }
    if ((v = map_opt(x, root, "topology")) != NULL) {
        path_push(x, "topology");
        rc = parse_topology(x, v);
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, root, "fairShare")) != NULL) {
        path_push(x, "fairShare");
        rc = parse_fair_share(x, v);
        path_pop(x);
    }
    if (!rc && (v = map_opt(x, root, "starvation")) != NULL) {
        path_push(x, "starvation");
        rc = parse_starvation(x, v);
        path_pop(x);
    }
    if (!rc)
        rc = parse_flavors(x, map_opt(x, root, "flavors"));
    if (!rc)
        rc = parse_profiles(x, map_opt(x, root, "profiles"));
    yaml_node_t *cl = map_opt(x, root, "cohorts"), *ql = map_opt(x, root, "queues");
    if (!rc)
        rc = parse_list(x, cl, "cohorts", &c->n_cohorts);
    if (!rc)
        rc = parse_list(x, ql, "queues", &c->n_queues);
    if (rc)
        return rc;
    uint32_t nc = c->n_cohorts, nq = c->n_queues;
    c->cohorts = pool_array(x->pool, nc ? nc : 1, sizeof(*c->cohorts));
    c->queues = pool_array(x->pool, nq ? nq : 1, sizeof(*c->queues));
    x->owners = pool_array(x->tmp, nc + nq + 1, sizeof(*x->owners));
    if (!c->cohorts || !c->queues || !x->owners)
        return oom(x);
    for (uint32_t i = 0; i < nc + nq; i++) {
        struct owner *o = &x->owners[i];
        o->is_queue = i >= nc;
        o->idx = o->is_queue ? i - nc : i;
        o->set = o->is_queue ? &c->queues[o->idx].q : &c->cohorts[o->idx].q;
    }
    for (uint32_t i = 0; !rc && i < nc; i++) {
        path_set(x, "cohorts", i, NULL);
        rc = parse_cohort(x, seq_item(x, cl, i), i);
    }
    for (uint32_t i = 0; !rc && i < nq; i++) {
        path_set(x, "queues", i, NULL);
        rc = parse_queue(x, seq_item(x, ql, i), i);
    }
    x->depth = 0;
    if (!rc)
        rc = resolve_tree(x);
    if (!rc)
        rc = build_quotas(x);
    if (!rc)
        rc = build_indices(x);
    return rc;
}

int config_load_buffer(const char *name, const char *data, size_t len, struct config **out,
                       struct sched_errbuf *eb)
{
    if (!name)
        name = "<buffer>";
    if (!out)
        return sched_fail(eb, SCHED_EINVAL, "%s: no output", name);
    if (!data && len)
        return sched_fail(eb, SCHED_EINVAL, "%s: no data", name);
    if (len > CONFIG_MAX_BYTES)
        return sched_fail(eb, SCHED_EINVAL, "%s: larger than 4 MiB (%zu bytes)", name, len);
    if (!data)
        data = "";
    struct ctx x;
    memset(&x, 0, sizeof(x));
    x.file = name;
    x.data = data;
    x.len = len;
    x.eb = eb;
    int rc = prescan(&x);
    if (rc)
        return rc;

    x.pool = pool_new();
    x.tmp = pool_new();
    struct config *c = x.pool ? pool_alloc(x.pool, sizeof(*c)) : NULL;
    if (c) {
        c->pool = x.pool;
        c->path = pool_strndup(x.pool, name, strlen(name));
    }
    if (!x.tmp || !c || !c->path) {
        pool_free(x.pool);
        pool_free(x.tmp);
        return oom(&x);
    }
    x.c = c;
    c->version = sched_hash(SCHED_HASH_INIT, data, len);
    c->fair_half_life_ms = 24LL * 3600000;
    c->starve_after_ms = 10LL * 60000;
    c->max_reservations = 1;
    c->device = RES_DEFAULT_DEVICE;
    c->device_unit = "";

    yaml_parser_t parser;
    yaml_document_t doc;
    bool have_parser = false, have_doc = false;
    if (!yaml_parser_initialize(&parser)) {
        rc = oom(&x);
    } else {
        have_parser = true;
        yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
        if (!yaml_parser_load(&parser, &doc))
            rc = yaml_fail(&x, &parser);
        else
            have_doc = true;
    }
    yaml_node_t *root = have_doc ? yaml_document_get_root_node(&doc) : NULL;
    if (!rc && !root) {
        yaml_mark_t m = {0, 0, 0};
        rc = fail(&x, &m, "empty file");
    }
    if (!rc) {
        x.doc = &doc;
        rc = load_root(&x, root);
    }
    if (have_doc)
        yaml_document_delete(&doc);
    if (have_parser)
        yaml_parser_delete(&parser);
    free(x.qe);
    pool_free(x.tmp);
    if (rc) {
        pool_free(x.pool);
        return rc;
    }
    *out = c;
    return 0;
}

int config_load_file(const char *path, struct config **out, struct sched_errbuf *eb)
{
    if (!path)
        return sched_fail(eb, SCHED_EINVAL, "config: no file name");
    if (!out)
        return sched_fail(eb, SCHED_EINVAL, "%s: no output", path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return sched_fail(eb, SCHED_EIO, "cannot read %s: %s", path, strerror(errno));
    size_t cap = CONFIG_MAX_BYTES + 1;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
    }
    size_t len = 0;
    while (len < cap) {
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0)
            break;
        len += got;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    int rc;
    if (err)
        rc = sched_fail(eb, SCHED_EIO, "cannot read %s: %s", path, strerror(err));
    else if (len > CONFIG_MAX_BYTES)
        rc = sched_fail(eb, SCHED_EINVAL, "%s: larger than 4 MiB", path);
    else
        rc = config_load_buffer(path, buf, len, out, eb);
    free(buf);
    return rc;
}

void config_free(struct config *c)
{
    if (c)
        pool_free(c->pool);
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
    return 0;
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

/* ---- printing ---------------------------------------------------------------------------------
 */

static const char *fmt_duration(int64_t ms, char *buf, size_t cap)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    struct sbuf b = {buf, cap, 0};
    buf[0] = '\0';
    if (ms <= 0) {
        sb_printf(&b, "0");
        return buf;
    }
    for (int i = 0; i < 4; i++) {
        if (ms >= units[i].ms) {
            sb_printf(&b, "%lld%s", (long long)(ms / units[i].ms), units[i].unit);
            ms %= units[i].ms;
        }
    }
    return buf;
}

#define INDENT_MAX 16 /* tree levels shown by indentation; deeper ones are numbered */
#define NAME_COL   40 /* widest name column */

static void print_indent(FILE *f, uint32_t depth)
{
    uint32_t d = depth < INDENT_MAX ? depth : INDENT_MAX;
    fprintf(f, "%*s", (int)(2 + 2 * d), "");
}

/* The config's name of resource r: the accelerator slot under the config's device name. */
static const char *quota_res_name(const struct config *c, int r)
{
    return r == RES_GPU ? c->device : res_name(r);
}

static void print_quotas(const struct config *c, const struct config_quota_set *qs, uint32_t depth,
                         FILE *f)
{
    int nres = res_count();
    int width = 0;
    for (uint32_t fl = 0; fl < c->n_flavors; fl++) {
        for (int r = 0; r < nres; r++) {
            if (config_quota_get(c, qs, fl, r)) {
                int w = (int)(strlen(quota_res_name(c, r)) + 1 + strlen(c->flavors[fl].name));
                width = w > width ? w : width;
            }
        }
    }
    if (width > NAME_COL)
        width = NAME_COL;
    for (uint32_t fl = 0; fl < c->n_flavors; fl++) {
        for (int r = 0; r < nres; r++) {
            const struct config_quota *q = config_quota_get(c, qs, fl, r);
            if (!q)
                continue;
            char key[600], a[64];
            snprintf(key, sizeof(key), "%s@%s:", quota_res_name(c, r), c->flavors[fl].name);
            print_indent(f, depth + 2);
            fmt_qty(q->nominal, r, a, sizeof(a));
            fprintf(f, "%-*s nominal %s", width + 1, key, a);
            if (q->borrowing_limit != CONFIG_NO_LIMIT) {
                fmt_qty(q->borrowing_limit, r, a, sizeof(a));
                fprintf(f, ", borrow <=%s", a);
            }
            if (q->lending_limit != CONFIG_NO_LIMIT) {
                fmt_qty(q->lending_limit, r, a, sizeof(a));
                fprintf(f, ", lend <=%s", a);
            }
            fprintf(f, "\n");
        }
    }
}

/* "kind name", padded to the attribute column when `pad` (cohort lines have no attributes). */
static void print_node_name(FILE *f, uint32_t depth, const char *kind, const char *name, bool pad)
{
    print_indent(f, depth);
    int used = (int)(2 + 2 * (depth < INDENT_MAX ? depth : INDENT_MAX));
    if (depth > INDENT_MAX)
        fprintf(f, "[%u] ", depth);
    int w = NAME_COL - used - (int)strlen(kind) - 1;
    fprintf(f, "%s %-*s", kind, pad && w > 0 ? w : 0, name);
}

static void print_queue(const struct config *c, uint32_t qi, uint32_t depth, FILE *f)
{
    static const char *const orderings[] = {"BestEffortFIFO", "StrictFIFO"};
    static const char *const within[] = {"Never", "LowerPriority", "LowerOrNewerEqualPriority"};
    static const char *const reclaim[] = {"Never", "LowerPriority", "Any"};
    const struct config_queue *q = &c->queues[qi];
    print_node_name(f, depth, "queue", q->name, true);
    fprintf(f, " weight %-4g priority %-4d %-14s profile %s\n", q->weight, (int)q->priority,
            orderings[q->ordering == CONFIG_STRICT_FIFO],
            q->profile >= 0 ? c->profiles[q->profile].name : "(default)");
    const struct config_preemption *p = &q->preemption;
    if (p->within_queue != CONFIG_PREEMPT_LOWER_PRIORITY || p->reclaim != CONFIG_RECLAIM_ANY ||
        p->fair_share || p->min_runtime_ms || p->restart_cost_ms || p->checkpoint_grace_ms) {
        char a[48], b[48], g[48];
        print_indent(f, depth + 2);
        fprintf(f,
                "preemption: withinQueue %s, reclaimWithinCohort %s, fairShare %s, minRuntime %s, "
                "restartCost %s, checkpointGrace %s\n",
                within[p->within_queue % 3], reclaim[p->reclaim % 3], p->fair_share ? "on" : "off",
                fmt_duration(p->min_runtime_ms, a, sizeof(a)),
                fmt_duration(p->restart_cost_ms, b, sizeof(b)),
                fmt_duration(p->checkpoint_grace_ms, g, sizeof(g)));
    }
    print_quotas(c, &q->q, depth, f);
}

static void print_queues_of(const struct config *c, uint32_t bucket, uint32_t depth, FILE *f)
{
    const struct config_pool *p = c->pool;
    for (uint32_t k = p->queue_first[bucket]; k < p->queue_first[bucket + 1]; k++)
        print_queue(c, p->queue_list[k], depth, f);
}

void config_print_tree(const struct config *c, FILE *f)
{
    if (!c || !f)
        return;
    const struct config_pool *p = c->pool;
    uint32_t nc = c->n_cohorts;
    char a[48], b[48];
    fprintf(f, "config %s (version %016llx)\n", c->path, (unsigned long long)c->version);
    fprintf(f, "  fairShare.halfLife %s, starvation.after %s, maxReservations %u\n",
            fmt_duration(c->fair_half_life_ms, a, sizeof(a)),
            fmt_duration(c->starve_after_ms, b, sizeof(b)), c->max_reservations);
    fprintf(f, "topology:");
    if (c->n_levels == 0)
        fprintf(f, " built-in levels");
    for (uint32_t i = 0; i < c->n_levels; i++)
        fprintf(f, " %s=%s,", c->level_names[i], c->level_labels[i]);
    fprintf(f, "%s\n", c->n_levels ? " node" : "");
    fprintf(f, "profiles:\n");
    for (uint32_t i = 0; i < c->n_profiles; i++) {
        fprintf(f, "  %-20s", c->profiles[i].name);
        for (uint32_t t = 0; t < plugin_score_count(); t++)
            fprintf(f, "%s%s %g", t ? ", " : " ", plugin_scores[t]->name,
                    c->profiles[i].weights[t]);
        fputc('\n', f);
    }
    fprintf(f, "flavors:\n");
    for (uint32_t i = 0; i < c->n_flavors; i++) {
        const struct config_flavor *fl = &c->flavors[i];
        fprintf(f, "  %-20s", fl->name);
        if (fl->n_node_labels == 0)
            fprintf(f, " (every node)");
        for (uint32_t k = 0; k < fl->n_node_labels; k++)
            fprintf(f, "%s %s=%s", k ? "," : "", fl->node_labels[k].key, fl->node_labels[k].value);
        fprintf(f, "\n");
    }
    fprintf(f, "queues:\n");
    /* depth-first over the cohort forest without a stack: CSR children plus parent links */
    uint32_t bucket = nc, pos = p->child_first[nc], depth = 0;
    for (;;) {
        if (pos < p->child_first[bucket + 1]) {
            uint32_t co = p->child[pos];
            print_node_name(f, depth, "cohort", c->cohorts[co].name, false);
            fprintf(f, "\n");
            print_quotas(c, &c->cohorts[co].q, depth, f);
            print_queues_of(c, co, depth + 1, f);
            bucket = co;
            pos = p->child_first[co];
            depth++;
            continue;
        }
        if (bucket == nc)
            break;
        /* climb: continue after `bucket` inside its parent's children */
        int32_t par = c->cohorts[bucket].parent;
        pos = p->child_pos[bucket] + 1;
        bucket = par >= 0 ? (uint32_t)par : nc;
        depth--;
    }
    print_queues_of(c, nc, 0, f);
}
