/* sched/cmd/gangctl.c: the tenant and operator CLI (also `kubectl gang`, via bin/kubectl-gang).
 *
 * Owns: argument parsing; the two sources of the tenant commands (quota, queues, jobs, explain,
 * top, reservations), which both yield the JSON documents of store/views.h: offline (`--db
 * FILE`: the views of a simulator or scheduler database opened STORE_READONLY, never written)
 * and remote (`--server URL` or $GANGSCHED_SERVER: the scheduler's HTTP API, docs/api.md,
 * through libcurl, with a bearer token from `--token-file FILE` or $GANGSCHED_TOKEN); the
 * operator commands (queue hold|resume|drain, reserve add|delete, checkpoint: writes of the API,
 * remote only); the output, rendered from the documents whatever their source (aligned tables,
 * `-o wide`, `-o json` through cJSON, `-o yaml` through the small emitter below; colour only on
 * a terminal); and the exit codes: 0 success, 1 not found (an unknown queue or job), 2 usage
 * error, an unreachable server, an operator command offline, or a database that cannot be
 * opened or read, 3 refused by the server (401 unauthorized, 403 forbidden).
 *
 * Must not touch: the database's content (read-only open), scheduling, the cluster.
 *
 * Documents are read defensively (a server's answer is input): missing or mistyped fields print
 * as absent, text is made harmless for the terminal. docs/cli.md is the user's reference.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "sched/core/cycle.h"
#include "sched/core/device.h"
#include "sched/core/err.h"
#include "sched/core/quantity.h"
#include "store/store.h"
#include "store/views.h"

#define EXIT_NOTFOUND 1
#define EXIT_USAGE    2
#define DEFAULT_LIMIT 50 /* explain: decisions shown by default */

static const char *prog = "gangctl";

/* ---- small helpers ---------------------------------------------------------------------- */

static void die_oom(void)
{
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_USAGE);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        die_oom();
    return q;
}

static char *xstrdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = xrealloc(NULL, n);
    memcpy(d, s, n);
    return d;
}

/* Grows *p (elements of size sz) so that index n fits. */
static void grow(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return;
    size_t c = *cap ? *cap * 2 : 16;
    while (c <= n)
        c *= 2;
    if (c > SIZE_MAX / sz)
        die_oom();
    *p = xrealloc(*p, c * sz);
    *cap = c;
}

/* vsnprintf into a new string (a first try on the stack, most strings fit). */
static char *xvasprintf(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0), nonnull(1)));
static char *xvasprintf(const char *fmt, va_list ap)
{
    char small[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    if (n < 0)
        n = 0;
    char *s = xrealloc(NULL, (size_t)n + 1);
    if ((size_t)n < sizeof(small))
        memcpy(s, small, (size_t)n + 1);
    else
        vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

static bool str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* ---- output settings ---------------------------------------------------------------------- */

enum out_fmt { OUT_TABLE = 0, OUT_WIDE, OUT_JSON, OUT_YAML };

static enum out_fmt out_fmt = OUT_TABLE;
static bool use_color;

enum color { C_NONE = 0, C_BOLD, C_RED, C_GREEN, C_YELLOW, C_CYAN, C_DIM };

static const char *color_seq(enum color c)
{
    switch (c) {
    case C_BOLD:
        return "\033[1m";
    case C_RED:
        return "\033[31m";
    case C_GREEN:
        return "\033[32m";
    case C_YELLOW:
        return "\033[33m";
    case C_CYAN:
        return "\033[36m";
    case C_DIM:
        return "\033[2m";
    case C_NONE:
        break;
    }
    return "";
}

/* ---- human units -------------------------------------------------------------------------- */

/* The accelerator of the database (meta 'device') and its unit word, set once it is open. */
static char gpu_resource[320] = STORE_GPU;
static char gpu_unit[DEVICE_UNIT_MAX] = "GPU";

static char gpus_col[DEVICE_UNIT_MAX + 1] = "GPUS"; /* the unit's column header */

static bool is_gpu(const char *resource)
{
    return str_eq(resource, gpu_resource);
}

/* A resource amount in base units, for humans: "64 GPU", "16Gi", "500m". */
static void fmt_amount(char *buf, size_t n, const char *resource, int64_t v)
{
    if (is_gpu(resource)) {
        snprintf(buf, n, "%lld %s", (long long)v, gpu_unit);
    } else if (str_eq(resource, "cpu")) {
        qty_format(v, 3, 0, buf, n);
    } else if (resource && (strcmp(resource, "memory") == 0 || strstr(resource, "storage") ||
                            strncmp(resource, "hugepages-", 10) == 0)) {
        qty_format(v, 0, 1, buf, n);
    } else {
        qty_format(v, 0, 0, buf, n);
    }
}

static void fmt_limit(char *buf, size_t n, const char *resource, int64_t v)
{
    if (v == STORE_NO_LIMIT)
        snprintf(buf, n, "none");
    else
        fmt_amount(buf, n, resource, v);
}

/* A duration: "45s", "12m30s", "2h05m", "3d04h". */
static void fmt_dur(char *buf, size_t n, int64_t ms)
{
    if (ms == STORE_NO_TIME || ms < 0) {
        snprintf(buf, n, "-");
        return;
    }
    long long s = (long long)(ms / 1000);
    if (s < 60)
        snprintf(buf, n, "%llds", s);
    else if (s < 3600)
        snprintf(buf, n, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, n, "%lldh%02lldm", s / 3600, s / 60 % 60);
    else
        snprintf(buf, n, "%lldd%02lldh", s / 86400, s / 3600 % 24);
}

/* A point in time of the driver's clock: wall-clock milliseconds (the daemon) print as UTC,
 * small values (the simulator's clock, from the start of the trace) as [Dd]HH:MM:SS. */
static void fmt_time(char *buf, size_t n, int64_t ms)
{
    if (ms == STORE_NO_TIME) {
        snprintf(buf, n, "-");
        return;
    }
    if (ms >= 1000000000000LL && ms < 253402300800000LL) { /* 2001 .. 9999 */
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        if (gmtime_r(&t, &tm) && strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0)
            return;
    }
    long long s = (long long)(ms / 1000);
    const char *sign = "";
    if (s < 0) {
        sign = "-";
        s = s == INT64_MIN / 1000 ? INT64_MAX / 1000 : -s;
    }
    if (s >= 86400)
        snprintf(buf, n, "%s%lldd%02lld:%02lld:%02lld", sign, s / 86400, s / 3600 % 24, s / 60 % 60,
                 s % 60);
    else
        snprintf(buf, n, "%s%02lld:%02lld:%02lld", sign, s / 3600, s / 60 % 60, s % 60);
}

/* ---- aligned tables ------------------------------------------------------------------------ */

struct table {
    int ncol;
    const char *const *hdr;
    unsigned right; /* bit i: column i aligned right */
    char **cell;
    unsigned char *color;
    size_t n, cap;
};

static void tbl_init(struct table *t, int ncol, const char *const *hdr, unsigned right)
{
    memset(t, 0, sizeof(*t));
    t->ncol = ncol;
    t->hdr = hdr;
    t->right = right;
}

static void tbl_cell(struct table *t, enum color c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tbl_cell(struct table *t, enum color c, const char *fmt, ...)
{
    size_t cap = t->cap;
    grow((void **)&t->cell, &t->cap, t->n, sizeof(*t->cell));
    grow((void **)&t->color, &cap, t->n, sizeof(*t->color));
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    /* never let database text move the cursor or change the terminal */
    for (char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    t->cell[t->n] = s;
    t->color[t->n] = (unsigned char)c;
    t->n++;
}

static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            w++;
    return w;
}

static void pad(FILE *f, size_t n)
{
    while (n-- > 0)
        fputc(' ', f);
}

static void tbl_print_cell(FILE *f, const struct table *t, int col, const char *s, enum color c,
                           size_t width)
{
    size_t w = text_width(s);
    bool right = (t->right >> col) & 1;
    bool last = col == t->ncol - 1;
    if (right)
        pad(f, width - w);
    if (use_color && c != C_NONE)
        fprintf(f, "%s%s\033[0m", color_seq(c), s);
    else
        fputs(s, f);
    if (!right && !last)
        pad(f, width - w);
    fputs(last ? "\n" : "   ", f);
}

static void tbl_print(FILE *f, const struct table *t)
{
    size_t width[32] = {0};
    int ncol = t->ncol < 32 ? t->ncol : 32;
    for (int c = 0; c < ncol; c++)
        width[c] = text_width(t->hdr[c]);
    for (size_t i = 0; i < t->n; i++) {
        size_t w = text_width(t->cell[i]);
        int c = (int)(i % (size_t)t->ncol);
        if (c < ncol && w > width[c])
            width[c] = w;
    }
    for (int c = 0; c < ncol; c++)
        tbl_print_cell(f, t, c, t->hdr[c], C_BOLD, width[c]);
    for (size_t i = 0; i + (size_t)t->ncol <= t->n; i += (size_t)t->ncol)
        for (int c = 0; c < ncol; c++)
            tbl_print_cell(f, t, c, t->cell[i + (size_t)c], (enum color)t->color[i + (size_t)c],
                           width[c]);
}

/* Ends a command's table: prints it (or `none` when `empty`), frees it, prints the database's
 * time when `now`, frees the document. Returns the command's exit code, 0. */
static int tbl_finish(struct table *t, cJSON *doc, bool empty, const char *none, bool now);

static void tbl_free(struct table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->cell[i]);
    free(t->cell);
    free(t->color);
    memset(t, 0, sizeof(*t));
}

/* ---- YAML and JSON documents ------------------------------------------------------------- */

static bool yaml_plain_ok(const char *s)
{
    static const char *const reserved[] = {"y",   "n",    "yes", "no",   "true",  "false", "on",
                                           "off", "null", "~",   ".inf", "-.inf", ".nan"};
    if (!*s)
        return false;
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_' || *s == '/'))
        return false;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '/' || c == '.' || c == '-';
        if (!ok)
            return false;
    }
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
        const char *a = s, *b = reserved[i];
        while (*a && *b && (*a | 0x20) == *b) {
            a++;
            b++;
        }
        if (!*a && !*b)
            return false;
    }
    return true;
}

static void yaml_string(FILE *f, const char *s)
{
    if (yaml_plain_ok(s)) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void yaml_number(FILE *f, double v)
{
    if (!isfinite(v))
        fputs("null", f);
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.17g", v);
}

/* Prints a scalar or an empty container; false when `v` needs a block. */
static bool yaml_inline(FILE *f, const cJSON *v)
{
    if (cJSON_IsString(v))
        yaml_string(f, v->valuestring ? v->valuestring : "");
    else if (cJSON_IsNumber(v))
        yaml_number(f, v->valuedouble);
    else if (cJSON_IsBool(v))
        fputs(cJSON_IsTrue(v) ? "true" : "false", f);
    else if (cJSON_IsObject(v) && !v->child)
        fputs("{}", f);
    else if (cJSON_IsArray(v) && !v->child)
        fputs("[]", f);
    else if (cJSON_IsObject(v) || cJSON_IsArray(v))
        return false;
    else
        fputs("null", f);
    return true;
}

static void yaml_seq(FILE *f, const cJSON *arr, int indent);

static void yaml_map(FILE *f, const cJSON *obj, int indent, bool first_inline)
{
    bool first = true;
    for (const cJSON *c = obj->child; c; c = c->next) {
        if (!(first && first_inline))
            pad(f, (size_t)indent);
        first = false;
        yaml_string(f, c->string ? c->string : "");
        fputc(':', f);
        if (!c->child) {
            fputc(' ', f);
            yaml_inline(f, c);
            fputc('\n', f);
        } else {
            fputc('\n', f);
            if (cJSON_IsObject(c))
                yaml_map(f, c, indent + 2, false);
            else
                yaml_seq(f, c, indent + 2);
        }
    }
}

static void yaml_seq(FILE *f, const cJSON *arr, int indent)
{
    for (const cJSON *c = arr->child; c; c = c->next) {
        pad(f, (size_t)indent);
        fputs("- ", f);
        if (yaml_inline(f, c)) {
            fputc('\n', f);
        } else if (cJSON_IsObject(c)) {
            yaml_map(f, c, indent + 2, true);
        } else {
            fputc('\n', f);
            yaml_seq(f, c, indent + 2);
        }
    }
}

/* Prints a document as JSON or YAML and frees it. */
static int emit_doc(cJSON *doc)
{
    if (!doc)
        die_oom();
    if (out_fmt == OUT_YAML) {
        if (cJSON_IsObject(doc) && doc->child)
            yaml_map(stdout, doc, 0, false);
        else if (yaml_inline(stdout, doc))
            fputc('\n', stdout);
    } else {
        char *s = cJSON_Print(doc);
        if (!s)
            die_oom();
        puts(s);
        free(s);
    }
    cJSON_Delete(doc);
    return 0;
}

/* ---- reading documents ------------------------------------------------------------------------
 * The views (store/views.h) offline and the HTTP API remotely give the same JSON documents; the
 * renderers below read them defensively: a missing or mistyped field prints as absent. */

static const cJSON *jget(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *gstr(const cJSON *o, const char *key)
{
    const cJSON *v = jget(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A number as int64 (saturated), `absent` when missing or null. */
static int64_t gint(const cJSON *o, const char *key, int64_t absent)
{
    const cJSON *v = jget(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return absent;
    double d = v->valuedouble;
    if (d >= 9.2e18)
        return INT64_MAX - 1;
    if (d <= -9.2e18)
        return INT64_MIN + 1;
    return (int64_t)d;
}

static double gnum(const cJSON *o, const char *key, double absent)
{
    const cJSON *v = jget(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : absent;
}

static bool gbool(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(jget(o, key));
}

static const char *or_dash(const char *s)
{
    return s ? s : "-";
}

/* Where the document came from, for -o wide's last line. */
static const char *source_kind = "database";
static const char *source_name = "";

static void print_now(const cJSON *doc)
{
    char t[64];
    fmt_time(t, sizeof(t), gint(doc, "now_ms", STORE_NO_TIME));
    if (out_fmt == OUT_WIDE)
        printf("(%s %s, latest time %s)\n", source_kind, source_name, t);
}

static int tbl_finish(struct table *t, cJSON *doc, bool empty, const char *none, bool now)
{
    if (empty)
        puts(none);
    else
        tbl_print(stdout, t);
    tbl_free(t);
    if (now)
        print_now(doc);
    cJSON_Delete(doc);
    return 0;
}

static enum color state_color(const char *s)
{
    if (str_eq(s, "pending"))
        return C_YELLOW;
    if (str_eq(s, "admitted"))
        return C_CYAN;
    if (str_eq(s, "running"))
        return C_GREEN;
    if (str_eq(s, "finished"))
        return C_DIM;
    if (str_eq(s, "failed"))
        return C_RED;
    return C_NONE;
}

#define EACH(it, arr)                                                                              \
    for (const cJSON *it = cJSON_IsArray(arr) ? (arr)->child : NULL; it; it = it->next)

/* ---- quota --------------------------------------------------------------------------------- */

static int show_quota(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    static const char *const hdr[] = {"QUEUE",      "FLAVOR",   "RESOURCE", "NOMINAL",
                                      "BORROW-LIM", "LEND-LIM", "USED",     "BORROWED",
                                      "AVAILABLE",  "SHARE",    "COHORT",   "WEIGHT"};
    struct table t;
    tbl_init(&t, out_fmt == OUT_WIDE ? 12 : 10, hdr, 0x3f8);
    EACH(q, jget(doc, "queues"))
    {
        const char *name = or_dash(gstr(q, "name"));
        char share[32] = "-";
        if (cJSON_IsNumber(jget(q, "share")))
            snprintf(share, sizeof(share), "%.3f", gnum(q, "share", 0));
        const cJSON *quotas = jget(q, "quotas");
        if (cJSON_GetArraySize(quotas) == 0) { /* a queue without quotas or usage: one line */
            tbl_cell(&t, C_NONE, "%s", name);
            for (int c = 1; c < 9; c++)
                tbl_cell(&t, C_NONE, "-");
            tbl_cell(&t, C_NONE, "%s", share);
            if (t.ncol > 10) {
                tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "cohort")));
                tbl_cell(&t, C_NONE, "%g", gnum(q, "weight", 1));
            }
        }
        EACH(l, quotas)
        {
            const char *res = or_dash(gstr(l, "resource"));
            bool configured = gbool(l, "configured");
            int64_t borrowed = gint(l, "borrowed", 0), avail = gint(l, "available", 0);
            char a[6][48];
            fmt_amount(a[0], sizeof(a[0]), res, gint(l, "nominal", 0));
            fmt_limit(a[1], sizeof(a[1]), res, gint(l, "borrowing_limit", STORE_NO_LIMIT));
            fmt_limit(a[2], sizeof(a[2]), res, gint(l, "lending_limit", STORE_NO_LIMIT));
            fmt_amount(a[3], sizeof(a[3]), res, gint(l, "used", 0));
            fmt_amount(a[4], sizeof(a[4]), res, borrowed);
            fmt_amount(a[5], sizeof(a[5]), res, avail);
            tbl_cell(&t, C_NONE, "%s", name);
            tbl_cell(&t, C_NONE, "%s", or_dash(gstr(l, "flavor")));
            tbl_cell(&t, C_NONE, "%s", res);
            tbl_cell(&t, C_NONE, "%s", configured ? a[0] : "-");
            tbl_cell(&t, C_NONE, "%s", configured ? a[1] : "-");
            tbl_cell(&t, C_NONE, "%s", configured ? a[2] : "-");
            tbl_cell(&t, C_NONE, "%s", a[3]);
            tbl_cell(&t, borrowed > 0 ? C_YELLOW : C_NONE, "%s", a[4]);
            tbl_cell(&t, avail == 0 ? C_RED : C_NONE, "%s", a[5]);
            tbl_cell(&t, C_NONE, "%s", share);
            if (t.ncol > 10) {
                tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "cohort")));
                tbl_cell(&t, C_NONE, "%g", gnum(q, "weight", 1));
            }
        }
    }
    return tbl_finish(&t, doc, false, "", true);
}

/* ---- queues -------------------------------------------------------------------------------- */

static int show_queues(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    static const char *const hdr[] = {"QUEUE",    "COHORT",  "WEIGHT",  "PRIORITY", "NOMINAL",
                                      "USED",     "RUNNING", "PENDING", "BORROWED", "ADMITTED",
                                      "FINISHED", "FAILED",  "SHARE"};
    struct table t;
    tbl_init(&t, out_fmt == OUT_WIDE ? 13 : 8, hdr, 0x1ffc);
    const cJSON *qs = jget(doc, "queues");
    EACH(q, qs)
    {
        bool configured = gbool(q, "configured");
        long long nominal = (long long)gint(q, "nominal_gpus", 0);
        long long used = (long long)gint(q, "used_gpus", 0);
        long long pending = (long long)gint(q, "pending", 0);
        tbl_cell(&t, configured ? C_NONE : C_DIM, "%s%s", or_dash(gstr(q, "name")),
                 configured ? "" : " (not configured)");
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "cohort")));
        tbl_cell(&t, C_NONE, "%g", gnum(q, "weight", 1));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "priority", 0));
        tbl_cell(&t, C_NONE, "%lld %s", nominal, gpu_unit);
        tbl_cell(&t, used > nominal ? C_YELLOW : C_NONE, "%lld %s", used, gpu_unit);
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "running", 0));
        tbl_cell(&t, pending ? C_YELLOW : C_NONE, "%lld", pending);
        if (t.ncol > 8) {
            tbl_cell(&t, C_NONE, "%lld %s", (long long)gint(q, "borrowed_gpus", 0), gpu_unit);
            tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "admitted", 0));
            tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "finished", 0));
            tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "failed", 0));
            if (cJSON_IsNumber(jget(q, "share")))
                tbl_cell(&t, C_NONE, "%.3f", gnum(q, "share", 0));
            else
                tbl_cell(&t, C_NONE, "-");
        }
    }
    return tbl_finish(&t, doc, cJSON_GetArraySize(qs) == 0, "no queues", true);
}

/* ---- jobs ---------------------------------------------------------------------------------- */

/* "hgx-0001:8,hgx-0002:8": nodes and GPUs of a job's placed pods. */
static char *job_nodes(const cJSON *job)
{
    char *s = xstrdup("");
    EACH(n, jget(job, "nodes"))
    {
        char *x = xasprintf("%s%s%s:%lld", s, *s ? "," : "", or_dash(gstr(n, "node")),
                            (long long)gint(n, "gpus", 0));
        free(s);
        s = x;
    }
    return s;
}

static int show_jobs(cJSON *doc, const char *only, bool all)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    const char *const hdr[] = {"JOB",      "QUEUE",     "STATE",       gpus_col,
                               "POSITION", "WAITING",   "STARTED",     "FINISHED",
                               "FLAVOR",   "SUBMITTED", "PREEMPTIONS", "NODES"};
    struct table t;
    tbl_init(&t, out_fmt == OUT_WIDE ? 12 : 8, hdr, 0x418);
    const cJSON *jobs = jget(doc, "jobs");
    EACH(j, jobs)
    {
        const char *state = or_dash(gstr(j, "state"));
        int64_t pos = gint(j, "position", 0);
        char w[32], st[64], fin[64], sub[64];
        fmt_dur(w, sizeof(w), gint(j, "wait_ms", STORE_NO_TIME));
        fmt_time(st, sizeof(st), gint(j, "start_ms", STORE_NO_TIME));
        fmt_time(fin, sizeof(fin), gint(j, "finish_ms", STORE_NO_TIME));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "job")));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "queue")));
        tbl_cell(&t, state_color(state), "%s", state);
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(j, "gpus", 0));
        if (pos > 0)
            tbl_cell(&t, C_NONE, "%lld", (long long)pos);
        else
            tbl_cell(&t, C_NONE, "-");
        tbl_cell(&t, C_NONE, "%s", w);
        tbl_cell(&t, C_NONE, "%s", st);
        tbl_cell(&t, C_NONE, "%s", fin);
        if (t.ncol > 8) {
            fmt_time(sub, sizeof(sub), gint(j, "submit_ms", STORE_NO_TIME));
            char *nodes = job_nodes(j);
            tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "flavor")));
            tbl_cell(&t, C_NONE, "%s", sub);
            tbl_cell(&t, C_NONE, "%lld", (long long)gint(j, "preemptions", 0));
            tbl_cell(&t, C_NONE, "%s", *nodes ? nodes : "-");
            free(nodes);
        }
    }
    if (cJSON_GetArraySize(jobs) == 0)
        printf("no %sjobs%s%s\n", all ? "" : "pending or running ", only ? " in queue " : "",
               only ? only : "");
    else
        tbl_print(stdout, &t);
    tbl_free(&t);
    print_now(doc);
    cJSON_Delete(doc);
    return 0;
}

/* ---- explain ------------------------------------------------------------------------------- */

static int show_explain(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    const cJSON *j = jget(doc, "job");
    const char *state = or_dash(gstr(j, "state"));
    const char *queue = or_dash(gstr(j, "queue"));
    const char *flavor = gstr(j, "flavor");
    bool pending = strcmp(state, "pending") == 0;
    char b[6][64];
    fmt_time(b[0], sizeof(b[0]), gint(j, "submit_ms", STORE_NO_TIME));
    fmt_time(b[1], sizeof(b[1]), gint(j, "admit_ms", STORE_NO_TIME));
    fmt_time(b[2], sizeof(b[2]), gint(j, "start_ms", STORE_NO_TIME));
    fmt_time(b[3], sizeof(b[3]), gint(j, "finish_ms", STORE_NO_TIME));
    fmt_dur(b[4], sizeof(b[4]), gint(j, "wait_ms", STORE_NO_TIME));
    struct table t;
    tbl_init(&t, 1, NULL, 0);
    tbl_cell(&t, C_NONE, "%s", or_dash(gstr(j, "job"))); /* control bytes made harmless */
    tbl_cell(&t, C_NONE, "%s", queue);
    tbl_cell(&t, C_NONE, "%s", flavor ? flavor : "");
    printf("Job:          %s\n", t.cell[0]);
    printf("Queue:        %s\n", t.cell[1]);
    printf("State:        ");
    if (use_color)
        printf("%s%s\033[0m\n", color_seq(state_color(state)), state);
    else
        printf("%s\n", state);
    if (gint(j, "position", 0) > 0)
        printf("Position:     %lld in queue %s (submission order)\n",
               (long long)gint(j, "position", 0), t.cell[1]);
    printf("%ss:         %lld %s%s%s\n", gpu_unit, (long long)gint(j, "gpus", 0), gpu_unit,
           flavor ? " on flavor " : "", t.cell[2]);
    tbl_free(&t);
    printf("Submitted:    %s\n", b[0]);
    printf("Admitted:     %s\n", b[1]);
    printf("Started:      %s\n", b[2]);
    printf("Finished:     %s\n", b[3]);
    printf("%s %s\n", pending ? "Waiting:     " : "Waited:      ", b[4]);
    printf("Preemptions:  %lld, restarts %lld\n", (long long)gint(j, "preemptions", 0),
           (long long)gint(j, "restarts", 0));
    char *nodes = job_nodes(j);
    if (*nodes)
        printf("Placed on:    %s\n", nodes);
    free(nodes);
    EACH(l, jget(doc, "queue_quota"))
    {
        const char *res = or_dash(gstr(l, "resource"));
        fmt_amount(b[0], sizeof(b[0]), res, gint(l, "used", 0));
        fmt_amount(b[1], sizeof(b[1]), res, gint(l, "nominal", 0));
        fmt_amount(b[2], sizeof(b[2]), res, gint(l, "available", 0));
        printf("Queue quota:  %s used of %s nominal on %s, %s available now\n", b[0], b[1],
               or_dash(gstr(l, "flavor")), b[2]);
    }
    EACH(r, jget(doc, "reservations"))
    {
        fmt_time(b[0], sizeof(b[0]), gint(r, "expected_start_ms", STORE_NO_TIME));
        printf("Reservation:  #%lld (%s) on %d node(s), expected start %s\n",
               (long long)gint(r, "id", 0), or_dash(gstr(r, "kind")),
               cJSON_GetArraySize(jget(r, "nodes")), b[0]);
    }

    static const char *const dhdr[] = {"CYCLE", "TIME", "WHY", "REASON"};
    tbl_init(&t, 4, dhdr, 0x1);
    const cJSON *decs = jget(doc, "decisions");
    EACH(d, decs)
    {
        const char *why = or_dash(gstr(d, "why"));
        fmt_time(b[0], sizeof(b[0]), gint(d, "ts_ms", STORE_NO_TIME));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(d, "cycle", 0));
        tbl_cell(&t, C_NONE, "%s", b[0]);
        tbl_cell(&t, strcmp(why, "placed") == 0 ? C_GREEN : C_YELLOW, "%s", why);
        tbl_cell(&t, C_NONE, "%s", gstr(d, "reason") ? gstr(d, "reason") : "");
    }
    long long shown = cJSON_GetArraySize(decs);
    long long total = (long long)gint(doc, "decisions_total", shown);
    printf("\nDecisions (newest first, %lld of %lld%s):\n", shown, total,
           shown < total ? "; --limit 0 shows all" : "");
    if (total == 0)
        puts("  none in the decision log (never waited, or pruned by its retention)");
    else
        tbl_print(stdout, &t);
    tbl_free(&t);

    const char *const phdr[] = {"CYCLE",  "TIME",       "ROLE", "OTHER JOB",
                                gpus_col, "LOST GPU-H", "COST"};
    tbl_init(&t, 7, phdr, 0x71);
    const cJSON *pre = jget(doc, "preemptions");
    EACH(p, pre)
    {
        bool victim = str_eq(gstr(p, "role"), "victim");
        fmt_time(b[0], sizeof(b[0]), gint(p, "ts_ms", STORE_NO_TIME));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(p, "cycle", 0));
        tbl_cell(&t, C_NONE, "%s", b[0]);
        tbl_cell(&t, victim ? C_RED : C_NONE, "%s", victim ? "victim" : "preemptor");
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(p, victim ? "preemptor" : "victim")));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(p, "gpus", 0));
        tbl_cell(&t, C_NONE, "%.2f", gnum(p, "lost_work_gpu_s", 0) / 3600.0);
        tbl_cell(&t, C_NONE, "%.2f", gnum(p, "cost", 0));
    }
    printf("\nPreemptions (%d):\n", cJSON_GetArraySize(pre));
    if (cJSON_GetArraySize(pre))
        tbl_print(stdout, &t);
    else
        puts("  none");
    tbl_free(&t);
    cJSON_Delete(doc);
    return 0;
}

/* ---- top ----------------------------------------------------------------------------------- */

static int show_top(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    static const char *const qhdr[] = {"QUEUE",   "FLAVOR",     "USED",
                                       "NOMINAL", "OF NOMINAL", "RUNNING"};
    struct table t;
    tbl_init(&t, 6, qhdr, 0x3c);
    EACH(q, jget(doc, "queues"))
    {
        long long used = (long long)gint(q, "used_gpus", 0);
        long long nominal = (long long)gint(q, "nominal_gpus", 0);
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "queue")));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(q, "flavor")));
        tbl_cell(&t, C_NONE, "%lld %s", used, gpu_unit);
        tbl_cell(&t, C_NONE, "%lld %s", nominal, gpu_unit);
        if (nominal > 0)
            tbl_cell(&t, used > nominal ? C_YELLOW : C_NONE, "%.0f%%",
                     100.0 * (double)used / (double)nominal);
        else
            tbl_cell(&t, C_NONE, "-");
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(q, "running", 0));
    }
    printf("%s usage by queue (ledger): %lld %s in use\n", gpu_unit,
           (long long)gint(doc, "used_gpus", 0), gpu_unit);
    if (t.n)
        tbl_print(stdout, &t);
    tbl_free(&t);
    const cJSON *nodes = jget(doc, "nodes");
    int n = cJSON_GetArraySize(nodes);
    printf("\n%s usage by node (placed pods): %lld %s on %d node(s)\n", gpu_unit,
           (long long)gint(doc, "placed_gpus", 0), gpu_unit, n);
    const char *const nhdr[] = {"NODE", gpus_col, "PODS", "JOBS"};
    tbl_init(&t, 4, nhdr, 0xe);
    EACH(u, nodes)
    {
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(u, "node")));
        tbl_cell(&t, C_NONE, "%lld %s", (long long)gint(u, "gpus", 0), gpu_unit);
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(u, "pods", 0));
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(u, "jobs", 0));
    }
    return tbl_finish(&t, doc, n == 0, "  no placed pods", true);
}

/* ---- reservations -------------------------------------------------------------------------- */

static int show_reservations(cJSON *doc)
{
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    static const char *const hdr[] = {"ID",      "KIND",    "JOB",           "NODES",
                                      "CREATED", "EXPIRES", "EXPECTED START"};
    struct table t;
    tbl_init(&t, 7, hdr, 0x1);
    const cJSON *rs = jget(doc, "reservations");
    EACH(r, rs)
    {
        const cJSON *list = jget(r, "nodes");
        int n_nodes = cJSON_GetArraySize(list), k = 0;
        char *nodes = xstrdup("");
        EACH(node, list)
        {
            if (out_fmt != OUT_WIDE && k == 3) {
                char *s = xasprintf("%s,+%d more", nodes, n_nodes - 3);
                free(nodes);
                nodes = s;
                break;
            }
            char *s = xasprintf("%s%s%s", nodes, k ? "," : "",
                                cJSON_IsString(node) ? node->valuestring : "?");
            free(nodes);
            nodes = s;
            k++;
        }
        int64_t expires = gint(r, "expires_ms", STORE_NO_TIME);
        int64_t expected = gint(r, "expected_start_ms", STORE_NO_TIME);
        char c[64], e[64], x[64];
        fmt_time(c, sizeof(c), gint(r, "created_ms", STORE_NO_TIME));
        fmt_time(e, sizeof(e), expires);
        fmt_time(x, sizeof(x), expected);
        tbl_cell(&t, C_NONE, "%lld", (long long)gint(r, "id", 0));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(r, "kind")));
        tbl_cell(&t, C_NONE, "%s", or_dash(gstr(r, "job")));
        tbl_cell(&t, C_NONE, "%s", *nodes ? nodes : "-");
        tbl_cell(&t, C_NONE, "%s", c);
        tbl_cell(&t, C_NONE, "%s", expires == STORE_NO_TIME ? "never" : e);
        tbl_cell(&t, C_NONE, "%s", expected == STORE_NO_TIME ? "unknown" : x);
        free(nodes);
    }
    return tbl_finish(&t, doc, cJSON_GetArraySize(rs) == 0, "no reservations", false);
}

/* ---- command line ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [FLAGS] COMMAND [ARGS]\n"
            "\n"
            "tenants (read a database offline with --db FILE):\n"
            "  quota [QUEUE]          quota per flavor and resource: nominal, limits, used,\n"
            "                         borrowed, available; fair-share history\n"
            "  queues                 queues with GPUs nominal and used, running and pending jobs\n"
            "  jobs [-q QUEUE] [-A]   pending and running jobs (-A: all) with position in queue\n"
            "  explain JOB            a job, its decisions (newest first) and preemptions;\n"
            "                         JOB is NAMESPACE/PODGROUP, or the simulator's job id\n"
            "  top                    GPU usage by queue and by node\n"
            "  reservations           capacity held for waiting jobs\n"
            "operators (need a running scheduler, --server, and a write token):\n"
            "  queue hold|resume|drain QUEUE\n"
            "  reserve add JOB NODE...  hold nodes for a waiting job; reserve delete ID\n"
            "  checkpoint NAMESPACE/PODGROUP\n"
            "\n"
            "flags:\n"
            "  --db FILE              read this simulator or scheduler database (read-only)\n"
            "  --server URL           the scheduler's HTTP API (default $GANGSCHED_SERVER)\n"
            "  --token-file FILE      bearer token for --server (default: the token in\n"
            "                         $GANGSCHED_TOKEN)\n"
            "  -o, --output FMT       table (default), wide, json or yaml\n"
            "  --no-color             no colour (default: colour on a terminal, unless "
            "$NO_COLOR)\n"
            "  -h, --help             this help; '%s COMMAND --help' for one command\n"
            "\n"
            "exit: 0 ok, 1 unknown queue or job, 2 usage error, server unreachable or not\n"
            "available, 3 refused by the server (401, 403)\n",
            prog, prog);
}

struct cmd_help {
    const char *name, *synopsis, *text;
};

static const struct cmd_help helps[] = {
    {"quota", "quota [QUEUE]",
     "Per queue, flavor and resource: nominal quota, borrowing and lending limits (none =\n"
     "unlimited), used (the usage ledger), borrowed = max(0, used - nominal), and available:\n"
     "what the queue could still take now (its unused nominal quota; in a cohort, what the\n"
     "cohort's queues leave unused within its borrowing limit). SHARE is the queue's decayed\n"
     "historical fair share. -o wide adds cohort and weight. Exit 1 for an unknown queue.\n"},
    {"queues", "queues",
     "One line per queue: cohort, weight, priority, nominal and used GPUs, running (admitted\n"
     "or running) and pending jobs. -o wide adds borrowed GPUs, admitted, finished and failed\n"
     "jobs and the fair share. Queues only found in the ledger or the jobs (no longer in the\n"
     "configuration) are marked \"not configured\".\n"},
    {"jobs", "jobs [-q QUEUE] [-A]",
     "Pending and running jobs (-A, --all: every job), by queue. POSITION is a pending job's\n"
     "place in its queue in submission order (the database does not record priorities, so\n"
     "the scheduler may admit in another order). WAITING is the time since submission for a\n"
     "pending job, the time from submission to its start otherwise; \"now\" is the latest time in "
     "the\n"
     "database. -o wide adds flavor, submission time, preemptions and nodes.\n"},
    {"explain", "explain JOB  [--limit N]",
     "A job's record (state, GPUs, times, position, placement, its queue's GPU quota while\n"
     "pending, reservations held for it), its scheduling decisions from the decision log,\n"
     "newest first (at most N, default 50; --limit 0 for all), and the preemptions where it\n"
     "was the victim or the preemptor. JOB is matched exactly: NAMESPACE/PODGROUP for the\n"
     "daemon, the trace's job id for the simulator. Exit 1 for an unknown job.\n"},
    {"top", "top",
     "GPUs in use per queue and flavor (the ledger), against nominal quota, and per node\n"
     "(GPUs, pods and jobs placed there, from the placements).\n"},
    {"reservations", "reservations",
     "Capacity held for waiting jobs: id, kind (starvation, preemptor, operator), job, nodes,\n"
     "creation, expiry and expected start. -o wide lists every node.\n"},
    {"queue", "queue hold|resume|drain QUEUE",
     "Operator command (--server and a write token): hold stops admitting the queue's jobs,\n"
     "resume admits them again, drain stops admitting and lets running jobs finish. The\n"
     "scheduler records the request and applies it; exit 1 for an unknown queue.\n"},
    {"reserve", "reserve add JOB NODE... | reserve delete ID",
     "Operator command (--server and a write token): add holds the nodes for a waiting job\n"
     "(an operator reservation); delete removes reservation ID.\n"},
    {"checkpoint", "checkpoint NAMESPACE/PODGROUP",
     "Operator command (--server and a write token): asks the job to checkpoint (the\n"
     "checkpoint handshake of docs/lifecycle.md). Exit 1 for an unknown job.\n"},
};

static const struct cmd_help *find_help(const char *cmd)
{
    for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
        if (strcmp(helps[i].name, cmd) == 0)
            return &helps[i];
    return NULL;
}

static void usage_cmd(FILE *f, const struct cmd_help *h)
{
    fprintf(f, "usage: %s [--db FILE | --server URL] [-o table|wide|json|yaml] %s\n\n%s", prog,
            h->synopsis, h->text);
}

struct args {
    const char *db, *server, *token_file, *queue;
    bool all, help, no_color, server_flag, have_limit;
    uint32_t limit;
    const char *pos[8];
    int n_pos;
};

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "%s: %s%s%s%s\n", prog, msg, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
    fprintf(stderr, "run '%s --help' for usage\n", prog);
    return EXIT_USAGE;
}

/* Value of "--flag VALUE", "--flag=VALUE" or "-oVALUE"; NULL when missing. */
static const char *flag_value(int argc, char **argv, int *i, size_t name_len)
{
    const char *a = argv[*i];
    if (a[name_len] == '=')
        return a + name_len + 1;
    if (a[name_len] && a[1] != '-') /* -ojson */
        return a + name_len;
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

static bool is_flag(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 &&
           (arg[n] == 0 || arg[n] == '=' || (name[1] != '-' && arg[n] != 0));
}

/* Returns 0, or an exit code. */
static int parse_args(int argc, char **argv, struct args *a)
{
    bool flags_done = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (flags_done || arg[0] != '-' || arg[1] == 0) {
            if (a->n_pos >= (int)(sizeof(a->pos) / sizeof(a->pos[0])))
                return usage_error("too many arguments at", arg);
            a->pos[a->n_pos++] = arg;
            continue;
        }
        const char *names[] = {"--db", "--server", "--token-file", "--output",
                               "-o",   "--queue",  "-q",           "--limit"};
        int which = -1;
        for (int k = 0; k < (int)(sizeof(names) / sizeof(names[0])) && which < 0; k++)
            if (is_flag(arg, names[k]))
                which = k;
        if (strcmp(arg, "--") == 0) {
            flags_done = true;
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            a->help = true;
        } else if (strcmp(arg, "-A") == 0 || strcmp(arg, "--all") == 0 ||
                   strcmp(arg, "--all-jobs") == 0) {
            a->all = true;
        } else if (strcmp(arg, "--no-color") == 0 || strcmp(arg, "--no-colour") == 0) {
            a->no_color = true;
        } else if (which >= 0) {
            const char *v = flag_value(argc, argv, &i, strlen(names[which]));
            if (!v || !*v)
                return usage_error("flag needs a value:", names[which]);
            switch (which) {
            case 0:
                a->db = v;
                break;
            case 1:
                a->server = v;
                a->server_flag = true;
                break;
            case 2:
                a->token_file = v;
                break;
            case 3:
            case 4:
                if (strcmp(v, "json") == 0)
                    out_fmt = OUT_JSON;
                else if (strcmp(v, "yaml") == 0)
                    out_fmt = OUT_YAML;
                else if (strcmp(v, "wide") == 0)
                    out_fmt = OUT_WIDE;
                else if (strcmp(v, "table") == 0)
                    out_fmt = OUT_TABLE;
                else
                    return usage_error("unknown output format (table, wide, json, yaml):", v);
                break;
            case 5:
            case 6:
                a->queue = v;
                break;
            default: {
                char *end = NULL;
                unsigned long n = strtoul(v, &end, 10);
                if (*v < '0' || *v > '9' || *end || n > UINT32_MAX)
                    return usage_error("--limit needs a number, not", v);
                a->limit = (uint32_t)n;
                a->have_limit = true;
            }
            }
        } else {
            return usage_error("unknown flag", arg);
        }
    }
    return 0;
}

static bool is_operator(const char *cmd)
{
    return strcmp(cmd, "queue") == 0 || strcmp(cmd, "reserve") == 0 ||
           strcmp(cmd, "checkpoint") == 0;
}

/* Renders one tenant command's document (and frees it). */
static int show(cJSON *doc, const char *cmd, const struct args *a)
{
    if (strcmp(cmd, "quota") == 0)
        return show_quota(doc);
    if (strcmp(cmd, "queues") == 0)
        return show_queues(doc);
    if (strcmp(cmd, "jobs") == 0)
        return show_jobs(doc, a->queue, a->all);
    if (strcmp(cmd, "explain") == 0)
        return show_explain(doc);
    if (strcmp(cmd, "top") == 0)
        return show_top(doc);
    return show_reservations(doc);
}

/* ---- the scheduler's HTTP API (--server) ------------------------------------------------------
 */

#define EXIT_DENIED 3 /* 401 or 403 from the server */

struct remote {
    const char *server; /* base URL, e.g. http://127.0.0.1:8080 */
    char *token;        /* bearer token, or NULL */
};

struct grow_buf {
    char *p;
    size_t n;
    bool too_big;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct grow_buf *b = ctx;
    size_t n = size * nmemb;
    if (b->n + n > (64u << 20)) { /* 64 MiB: more than any answer of ours */
        b->too_big = true;
        return 0;
    }
    b->p = xrealloc(b->p, b->n + n + 1);
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

/* "ns/name" -> "ns/name" with every other byte of each segment percent-escaped. */
static char *escape_path(CURL *c, const char *s)
{
    char *out = xstrdup("");
    const char *seg = s;
    for (;;) {
        const char *slash = strchr(seg, '/');
        size_t len = slash ? (size_t)(slash - seg) : strlen(seg);
        char *e = curl_easy_escape(c, seg, (int)len);
        if (!e)
            die_oom();
        char *x = xasprintf("%s%s%s", out, seg == s ? "" : "/", e);
        curl_free(e);
        free(out);
        out = x;
        if (!slash)
            break;
        seg = slash + 1;
    }
    return out;
}

/* Calls the API; returns 0 with *doc (a JSON document), or an exit code after printing why. */
static int remote_call(const struct remote *r, const char *method, const char *path,
                       const char *body, cJSON **doc)
{
    CURL *c = curl_easy_init();
    if (!c)
        die_oom();
    size_t base_len = strlen(r->server);
    while (base_len > 0 && r->server[base_len - 1] == '/')
        base_len--;
    char *url = xasprintf("%.*s%s", (int)base_len, r->server, path);
    struct grow_buf b = {0};
    struct curl_slist *h = NULL;
    char *auth = NULL;
    if (r->token) {
        auth = xasprintf("Authorization: Bearer %s", r->token);
        h = curl_slist_append(h, auth);
    }
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gangctl");
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    free(auth);
    curl_easy_cleanup(c);
    int rc = 0;
    if (cc != CURLE_OK) {
        fprintf(stderr, "%s: cannot reach the scheduler at %s: %s\n", prog, r->server,
                b.too_big ? "answer too large" : curl_easy_strerror(cc));
        rc = EXIT_USAGE;
    } else {
        cJSON *d = b.p ? cJSON_ParseWithLength(b.p, b.n) : NULL;
        if (status >= 200 && status < 300 && cJSON_IsObject(d)) {
            *doc = d;
            d = NULL;
        } else {
            const char *msg = gstr(jget(d, "error"), "message");
            struct table t; /* only to make the server's text harmless on a terminal */
            tbl_init(&t, 1, NULL, 0);
            tbl_cell(&t, C_NONE, "%s", msg ? msg : "no error message");
            if (status >= 200 && status < 300)
                fprintf(stderr, "%s: %s %s: the server's answer is not a JSON object\n", prog,
                        method, url);
            else if (status == 401)
                fprintf(stderr, "%s: unauthorized (401): %s%s\n", prog, t.cell[0],
                        r->token ? "" : " (give a token: --token-file FILE or $GANGSCHED_TOKEN)");
            else if (status == 403)
                fprintf(stderr, "%s: forbidden (403): %s\n", prog, t.cell[0]);
            else
                fprintf(stderr, "%s: %s (HTTP %ld from %s)\n", prog, t.cell[0], status, r->server);
            tbl_free(&t);
            rc = status == 404                    ? EXIT_NOTFOUND
                 : status == 401 || status == 403 ? EXIT_DENIED
                                                  : EXIT_USAGE;
        }
        cJSON_Delete(d);
    }
    free(b.p);
    free(url);
    return rc;
}

/* A GET of a path built from a format; escapes nothing (callers escape names). */
static int remote_get(const struct remote *r, const char *path, cJSON **doc)
{
    return remote_call(r, "GET", path, NULL, doc);
}

/* The token: --token-file FILE (its first line), else $GANGSCHED_TOKEN. Returns 0 or an exit
 * code. */
static int load_token(const char *file, char **out)
{
    *out = NULL;
    if (!file) {
        const char *env = getenv("GANGSCHED_TOKEN");
        if (env && *env)
            *out = xstrdup(env);
        return 0;
    }
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot read the token file %s: %s\n", prog, file, strerror(errno));
        return EXIT_USAGE;
    }
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    buf[strcspn(buf, "\r\n")] = 0;
    char *s = buf;
    while (*s == ' ' || *s == '\t')
        s++;
    size_t len = strlen(s);
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        s[--len] = 0;
    if (len > 0)
        *out = xstrdup(s);
    return 0;
}

/* The operator commands: one write each; prints the server's message (or the document). */
static int remote_write(const struct remote *r, const struct args *a)
{
    const char *cmd = a->pos[0];
    CURL *c = curl_easy_init();
    if (!c)
        die_oom();
    char *path = NULL, *body = NULL;
    const char *method = "POST";
    if (strcmp(cmd, "queue") == 0) {
        char *q = escape_path(c, a->pos[2]);
        path = xasprintf("/v1/queues/%s/%s", q, a->pos[1]);
        free(q);
    } else if (strcmp(cmd, "checkpoint") == 0) {
        char *j = escape_path(c, a->pos[1]);
        path = xasprintf("/v1/jobs/%s/checkpoint", j);
        free(j);
    } else if (a->n_pos >= 3 && strcmp(a->pos[1], "delete") == 0) {
        char *id = escape_path(c, a->pos[2]);
        path = xasprintf("/v1/reservations/%s", id);
        method = "DELETE";
        free(id);
    } else {
        cJSON *d = cJSON_CreateObject();
        cJSON *nodes = d ? cJSON_AddArrayToObject(d, "nodes") : NULL;
        if (!nodes || !cJSON_AddStringToObject(d, "job", a->pos[2]))
            die_oom();
        for (int i = 3; i < a->n_pos; i++) {
            cJSON *s = cJSON_CreateString(a->pos[i]);
            if (!s)
                die_oom();
            cJSON_AddItemToArray(nodes, s);
        }
        body = cJSON_PrintUnformatted(d);
        cJSON_Delete(d);
        if (!body)
            die_oom();
        path = xstrdup("/v1/reservations");
    }
    curl_easy_cleanup(c);
    cJSON *doc = NULL;
    int rc = remote_call(r, method, path, body ? body : "", &doc);
    free(path);
    free(body);
    if (rc)
        return rc;
    if (out_fmt >= OUT_JSON)
        return emit_doc(doc);
    const char *msg = gstr(doc, "message");
    struct table t;
    tbl_init(&t, 1, NULL, 0);
    tbl_cell(&t, C_NONE, "%s", msg ? msg : "done");
    puts(t.cell[0]);
    tbl_free(&t);
    cJSON_Delete(doc);
    return 0;
}

/* A tenant command against the API: the same documents as offline, the same renderers. */
static int remote_read(const struct remote *r, const struct args *a)
{
    const char *cmd = a->pos[0];
    const char *arg = a->n_pos > 1 ? a->pos[1] : NULL;
    CURL *c = curl_easy_init();
    if (!c)
        die_oom();
    char *path = NULL;
    if (strcmp(cmd, "quota") == 0 && arg) {
        char *q = escape_path(c, arg);
        path = xasprintf("/v1/queues/%s", q);
        free(q);
    } else if (strcmp(cmd, "quota") == 0) {
        path = xstrdup("/v1/quota");
    } else if (strcmp(cmd, "queues") == 0) {
        path = xstrdup("/v1/queues");
    } else if (strcmp(cmd, "jobs") == 0) {
        char *q = a->queue ? curl_easy_escape(c, a->queue, 0) : NULL;
        path = xasprintf("/v1/jobs%s%s%s%s", q || a->all ? "?" : "", q ? "queue=" : "", q ? q : "",
                         a->all ? (q ? "&all=1" : "all=1") : "");
        curl_free(q);
    } else if (strcmp(cmd, "explain") == 0) {
        char *j = escape_path(c, arg);
        path = xasprintf("/v1/jobs/%s?limit=%u", j, a->limit);
        free(j);
    } else if (strcmp(cmd, "top") == 0) {
        path = xstrdup("/v1/top");
    } else {
        path = xstrdup("/v1/reservations");
    }
    curl_easy_cleanup(c);
    cJSON *doc = NULL;
    int rc = remote_get(r, path, &doc);
    free(path);
    if (rc)
        return rc;
    return show(doc, cmd, a);
}

/* A tenant command on a database file: the views of store/views.h, then the renderers. */
static int offline(const char *path, const struct args *a)
{
    const char *cmd = a->pos[0];
    const char *arg = a->n_pos > 1 ? a->pos[1] : NULL;
    struct sched_errbuf eb = {{0}};
    struct store *st = NULL;
    struct store_views *v = NULL;
    cJSON *doc = NULL;
    int err = store_open(path, STORE_READONLY, NULL, &st, &eb);
    if (!err) {
        snprintf(gpu_resource, sizeof(gpu_resource), "%s", store_device(st));
        snprintf(gpu_unit, sizeof(gpu_unit), "%s", store_device_unit(st));
        size_t k = 0;
        for (; gpu_unit[k] && k + 2 < sizeof(gpus_col); k++)
            gpus_col[k] = (char)toupper((unsigned char)gpu_unit[k]);
        memcpy(gpus_col + k, "S", 2);
        err = store_views_load(st, &v, &eb);
    }
    if (!err) {
        if (strcmp(cmd, "quota") == 0)
            err = store_view_quota(v, arg, &doc, &eb);
        else if (strcmp(cmd, "queues") == 0)
            err = store_view_queues(v, &doc, &eb);
        else if (strcmp(cmd, "jobs") == 0)
            err = store_view_jobs(v, a->queue, a->all, &doc, &eb);
        else if (strcmp(cmd, "explain") == 0)
            err = store_view_explain(v, arg, a->limit, &doc, &eb);
        else if (strcmp(cmd, "top") == 0)
            err = store_view_top(v, &doc, &eb);
        else
            err = store_view_reservations(v, &doc, &eb);
    }
    int rc = 0;
    if (err) {
        fprintf(stderr, "%s: %s\n", prog, eb.msg[0] ? eb.msg : sched_strerror(err));
        rc = err == SCHED_ENOENT && v ? EXIT_NOTFOUND : EXIT_USAGE;
    } else {
        source_kind = "database";
        source_name = path;
        rc = show(doc, cmd, a);
    }
    store_views_free(v);
    store_close(st);
    return rc;
}

static int run(int argc, char **argv)
{
    struct args a = {.limit = DEFAULT_LIMIT};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    const char *cmd = a.n_pos > 0 ? a.pos[0] : NULL;
    if (cmd && strcmp(cmd, "help") == 0) {
        const struct cmd_help *h = a.n_pos > 1 ? find_help(a.pos[1]) : NULL;
        if (a.n_pos > 1 && !h)
            return usage_error("unknown command", a.pos[1]);
        if (h)
            usage_cmd(stdout, h);
        else
            usage(stdout);
        return 0;
    }
    if (!cmd) {
        usage(a.help ? stdout : stderr);
        return a.help ? 0 : EXIT_USAGE;
    }
    const struct cmd_help *h = find_help(cmd);
    if (!h)
        return usage_error("unknown command", cmd);
    if (a.help) {
        usage_cmd(stdout, h);
        return 0;
    }
    int max_pos = strcmp(cmd, "quota") == 0 || strcmp(cmd, "explain") == 0 ? 2
                  : strcmp(cmd, "queue") == 0                              ? 3
                  : strcmp(cmd, "reserve") == 0                            ? 8
                  : strcmp(cmd, "checkpoint") == 0                         ? 2
                                                                           : 1;
    if (a.n_pos > max_pos)
        return usage_error("unexpected argument", a.pos[max_pos]);
    if ((strcmp(cmd, "explain") == 0 || strcmp(cmd, "checkpoint") == 0) && a.n_pos < 2) {
        fprintf(stderr, "%s: %s needs a job: %s %s\n", prog, cmd, prog, h->synopsis);
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "queue") == 0 &&
        (a.n_pos < 3 || (strcmp(a.pos[1], "hold") != 0 && strcmp(a.pos[1], "resume") != 0 &&
                         strcmp(a.pos[1], "drain") != 0))) {
        fprintf(stderr, "%s: usage: %s %s\n", prog, prog, h->synopsis);
        return EXIT_USAGE;
    }
    if (strcmp(cmd, "reserve") == 0 && !(a.n_pos >= 4 && strcmp(a.pos[1], "add") == 0) &&
        !(a.n_pos == 3 && strcmp(a.pos[1], "delete") == 0)) {
        fprintf(stderr, "%s: usage: %s %s\n", prog, prog, h->synopsis);
        return EXIT_USAGE;
    }
    if ((a.queue || a.all) && strcmp(cmd, "jobs") != 0)
        return usage_error(
            a.queue ? "-q applies to jobs only, not" : "-A applies to jobs only, not", cmd);
    if (a.have_limit && strcmp(cmd, "explain") != 0)
        return usage_error("--limit applies to explain only, not", cmd);

    if (!a.server && !a.db && getenv("GANGSCHED_SERVER") && *getenv("GANGSCHED_SERVER"))
        a.server = getenv("GANGSCHED_SERVER");
    if (a.server_flag && a.db) {
        fprintf(stderr, "%s: use either --db FILE or --server URL, not both\n", prog);
        return EXIT_USAGE;
    }
    if (is_operator(cmd) && !a.server) {
        fprintf(stderr,
                "%s: '%s%s%s' needs a running scheduler (--server); not available offline\n", prog,
                cmd, strcmp(cmd, "queue") == 0 ? " " : "",
                strcmp(cmd, "queue") == 0 ? a.pos[1] : "");
        return EXIT_USAGE;
    }
    if (!a.db && !a.server) {
        fprintf(stderr,
                "%s: no database and no server: use --db FILE (a 'gangsched simulate --db' or "
                "scheduler database) or --server URL\n",
                prog);
        return EXIT_USAGE;
    }
    const char *nc = getenv("NO_COLOR");
    use_color = !a.no_color && (out_fmt == OUT_TABLE || out_fmt == OUT_WIDE) &&
                isatty(STDOUT_FILENO) && !(nc && *nc);

    if (a.server) {
        if (strncmp(a.server, "http://", 7) != 0 && strncmp(a.server, "https://", 8) != 0) {
            fprintf(stderr, "%s: --server needs an http:// or https:// URL, not '%s'\n", prog,
                    a.server);
            return EXIT_USAGE;
        }
        struct remote r = {a.server, NULL};
        rc = load_token(a.token_file, &r.token);
        if (rc)
            return rc;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
            fprintf(stderr, "%s: cannot initialise libcurl\n", prog);
            free(r.token);
            return EXIT_USAGE;
        }
        source_kind = "server";
        source_name = a.server;
        rc = is_operator(cmd) ? remote_write(&r, &a) : remote_read(&r, &a);
        free(r.token);
        curl_global_cleanup();
    } else {
        rc = offline(a.db, &a);
    }
    if (fflush(stdout) != 0 && rc == 0) {
        fprintf(stderr, "%s: cannot write the output\n", prog);
        rc = EXIT_USAGE;
    }
    return rc;
}

int main(int argc, char **argv)
{
    const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
    base = base ? base + 1 : (argc > 0 && argv[0] ? argv[0] : "gangctl");
    if (strcmp(base, "kubectl-gang") == 0)
        prog = "kubectl gang";
    return run(argc, argv);
}
