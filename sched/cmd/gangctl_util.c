/* sched/cmd/gangctl_util.c: gangctl's output helpers: memory, human units, aligned tables,
 * JSON and YAML documents (YAML through libyaml's emitter), reading documents defensively.
 *
 * Owns: the output settings (format, colour, headers) and how every value is printed.
 * Must not touch: the database, the network, the command line.
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

#include <cjson/cJSON.h>
#include <yaml.h>

#include "sched/cmd/gangctl.h"
#include "sched/core/quantity.h"
#include "store/store.h"

const char *prog = "gangctl";

/* ---- small helpers ---------------------------------------------------------------------- */

void die_oom(void)
{
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(EXIT_USAGE);
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        die_oom();
    return q;
}

char *xstrdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = xrealloc(NULL, n);
    memcpy(d, s, n);
    return d;
}

/* Grows *p (elements of size sz) so that index n fits. */
void grow(void **p, size_t *cap, size_t n, size_t sz)
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
char *xvasprintf(const char *fmt, va_list ap)
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

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

bool str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* ---- output settings ---------------------------------------------------------------------- */

enum out_fmt out_fmt = OUT_TABLE;
bool use_color;
bool no_headers;

const char *color_seq(enum color c)
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

/* The accelerator of the database (meta 'device'), its unit word and column header. */
char gpu_resource[320] = STORE_GPU;
char gpu_unit[DEVICE_UNIT_MAX] = "GPU";
char gpus_col[DEVICE_UNIT_MAX + 1] = "GPUS";

void set_device(const char *resource, const char *unit)
{
    snprintf(gpu_resource, sizeof(gpu_resource), "%s", resource);
    snprintf(gpu_unit, sizeof(gpu_unit), "%s", unit);
    size_t k = 0;
    for (; gpu_unit[k] && k + 2 < sizeof(gpus_col); k++)
        gpus_col[k] = (char)toupper((unsigned char)gpu_unit[k]);
    memcpy(gpus_col + k, "S", 2);
}

bool is_gpu(const char *resource)
{
    return str_eq(resource, gpu_resource);
}

/* A resource amount in base units, for humans: "64 GPU", "16Gi", "500m". */
void fmt_amount(char *buf, size_t n, const char *resource, int64_t v)
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

void fmt_limit(char *buf, size_t n, const char *resource, int64_t v)
{
    if (v == STORE_NO_LIMIT)
        snprintf(buf, n, "none");
    else
        fmt_amount(buf, n, resource, v);
}

/* A duration: "45s", "12m30s", "2h05m", "3d04h". */
void fmt_dur(char *buf, size_t n, int64_t ms)
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
void fmt_time(char *buf, size_t n, int64_t ms)
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

void tbl_init(struct table *t, int ncol, const char *const *hdr, unsigned right)
{
    memset(t, 0, sizeof(*t));
    t->ncol = ncol;
    t->hdr = hdr;
    t->right = right;
}

/* Never let database text move the cursor or change the terminal: C0 controls and DEL, C1
 * controls (U+0080..U+009F, UTF-8 C2 80..C2 9F: U+009B is CSI), and bytes that are not UTF-8
 * (a raw 0x9B is CSI to an 8-bit terminal) each become one '?'. In place. */
static void printable(char *s)
{
    unsigned char *in = (unsigned char *)s, *out = in;
    while (*in) {
        unsigned char b = *in;
        size_t len = b < 0x80             ? 1
                     : (b & 0xe0) == 0xc0 ? 2
                     : (b & 0xf0) == 0xe0 ? 3
                     : (b & 0xf8) == 0xf0 ? 4
                                          : 0;
        size_t k = 1;
        while (k < len && (in[k] & 0xc0) == 0x80)
            k++;
        bool ok = len > 0 && k == len && !(b < 0x20 || b == 0x7f) &&
                  !(b == 0xc2 && in[1] <= 0x9f) && !(len == 2 && b < 0xc2);
        if (ok) {
            memmove(out, in, len);
            out += len;
            in += len;
        } else {
            *out++ = '?';
            in += len > 0 && k == len ? len : 1;
        }
    }
    *out = 0;
}

void tbl_cell(struct table *t, enum color c, const char *fmt, ...)
{
    size_t cap = t->cap;
    grow((void **)&t->cell, &t->cap, t->n, sizeof(*t->cell));
    grow((void **)&t->color, &cap, t->n, sizeof(*t->color));
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    printable(s);
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

void tbl_print(FILE *f, const struct table *t)
{
    size_t width[32] = {0};
    int ncol = t->ncol < 32 ? t->ncol : 32;
    for (int c = 0; c < ncol && !no_headers; c++)
        width[c] = text_width(t->hdr[c]);
    for (size_t i = 0; i < t->n; i++) {
        size_t w = text_width(t->cell[i]);
        int c = (int)(i % (size_t)t->ncol);
        if (c < ncol && w > width[c])
            width[c] = w;
    }
    for (int c = 0; c < ncol && !no_headers; c++)
        tbl_print_cell(f, t, c, t->hdr[c], C_BOLD, width[c]);
    for (size_t i = 0; i + (size_t)t->ncol <= t->n; i += (size_t)t->ncol)
        for (int c = 0; c < ncol; c++)
            tbl_print_cell(f, t, c, t->cell[i + (size_t)c], (enum color)t->color[i + (size_t)c],
                           width[c]);
}

void tbl_free(struct table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->cell[i]);
    free(t->cell);
    free(t->color);
    memset(t, 0, sizeof(*t));
}

/* ---- YAML and JSON documents ------------------------------------------------------------- */

/* A number as cJSON prints it (the shortest of %.15g and %.17g that reads back the same), so
 * that -o yaml and -o json agree, and offline and remote answers give the same bytes. */
void fmt_number(char *buf, size_t n, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "null");
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, n, "%.0f", v);
        return;
    }
    snprintf(buf, n, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, n, "%.17g", v);
}

/* True when a plain scalar `s` would read back as something other than a string (a number,
 * a boolean, null: YAML 1.1 and 1.2 core schema), so it must be quoted. */
static bool yaml_needs_quotes(const char *s)
{
    static const char *const reserved[] = {"y",   "n",    "yes", "no",   "true",  "false", "on",
                                           "off", "null", "~",   ".inf", "-.inf", ".nan",  "+.inf"};
    if (!*s)
        return true;
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
        const char *a = s, *b = reserved[i];
        while (*a && *b && (*a | 0x20) == *b) {
            a++;
            b++;
        }
        if (!*a && !*b)
            return true;
    }
    /* anything starting like a number (digits, sign, dot): 1e3, 0x1f, .5, -2, 1_000 */
    return (*s >= '0' && *s <= '9') || ((*s == '-' || *s == '+' || *s == '.') && s[1] &&
                                        ((s[1] >= '0' && s[1] <= '9') || s[1] == '.'));
}

static int yaml_write(void *ctx, unsigned char *buf, size_t n)
{
    return fwrite(buf, 1, n, ctx) == n;
}

static bool yaml_scalar(yaml_emitter_t *e, const char *text, bool is_string)
{
    yaml_event_t ev;
    yaml_scalar_style_t style = is_string && yaml_needs_quotes(text)
                                    ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                                    : YAML_ANY_SCALAR_STYLE;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)(uintptr_t)text,
                                      (int)strlen(text), 1, 1, style))
        return false;
    return yaml_emitter_emit(e, &ev) != 0;
}

/* Emits one value (recursively); false when libyaml refuses (out of memory, invalid UTF-8). */
static bool yaml_value(yaml_emitter_t *e, const cJSON *v, int depth)
{
    yaml_event_t ev;
    char num[64];
    if (depth > 64)
        return false;
    if (cJSON_IsString(v))
        return yaml_scalar(e, v->valuestring ? v->valuestring : "", true);
    if (cJSON_IsNumber(v)) {
        fmt_number(num, sizeof(num), v->valuedouble);
        return yaml_scalar(e, num, false);
    }
    if (cJSON_IsBool(v))
        return yaml_scalar(e, cJSON_IsTrue(v) ? "true" : "false", false);
    if (cJSON_IsObject(v)) {
        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                                 v->child ? YAML_BLOCK_MAPPING_STYLE
                                                          : YAML_FLOW_MAPPING_STYLE) ||
            !yaml_emitter_emit(e, &ev))
            return false;
        for (const cJSON *c = v->child; c; c = c->next)
            if (!yaml_scalar(e, c->string ? c->string : "", true) || !yaml_value(e, c, depth + 1))
                return false;
        return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
    }
    if (cJSON_IsArray(v)) {
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                                  v->child ? YAML_BLOCK_SEQUENCE_STYLE
                                                           : YAML_FLOW_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(e, &ev))
            return false;
        for (const cJSON *c = v->child; c; c = c->next)
            if (!yaml_value(e, c, depth + 1))
                return false;
        return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
    }
    return yaml_scalar(e, "null", false);
}

/* A document as YAML through libyaml's emitter: block style, UTF-8 kept, no line folding. */
static bool yaml_print(FILE *f, const cJSON *doc)
{
    yaml_emitter_t e;
    yaml_event_t ev;
    if (!yaml_emitter_initialize(&e))
        return false;
    yaml_emitter_set_output(&e, yaml_write, f);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1);
    yaml_emitter_set_indent(&e, 2);
    bool ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
              yaml_emitter_emit(&e, &ev) &&
              yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
              yaml_emitter_emit(&e, &ev) && yaml_value(&e, doc, 0) &&
              yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev) &&
              yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev) &&
              yaml_emitter_flush(&e);
    if (!ok && e.problem)
        fprintf(stderr, "%s: writing YAML: %s\n", prog, e.problem);
    yaml_emitter_delete(&e);
    return ok;
}

/* Prints a document as JSON or YAML and frees it. */
int emit_doc(cJSON *doc)
{
    if (!doc)
        die_oom();
    int rc = 0;
    if (out_fmt == OUT_YAML) {
        if (!yaml_print(stdout, doc))
            rc = EXIT_USAGE;
    } else {
        char *s = cJSON_Print(doc);
        if (!s)
            die_oom();
        puts(s);
        free(s);
    }
    cJSON_Delete(doc);
    return rc;
}

/* ---- reading documents ------------------------------------------------------------------------
 * The views (store/views.h) offline and the HTTP API remotely give the same JSON documents; the
 * renderers below read them defensively: a missing or mistyped field prints as absent. */

const cJSON *jget(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

const char *gstr(const cJSON *o, const char *key)
{
    const cJSON *v = jget(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A number as int64 (saturated), `absent` when missing or null. */
int64_t gint(const cJSON *o, const char *key, int64_t absent)
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

double gnum(const cJSON *o, const char *key, double absent)
{
    const cJSON *v = jget(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : absent;
}

bool gbool(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(jget(o, key));
}

const char *or_dash(const char *s)
{
    return s ? s : "-";
}

/* Where the document came from, for -o wide's last line. */
const char *source_kind = "database";
const char *source_name = "";

void print_now(const cJSON *doc)
{
    char t[64];
    fmt_time(t, sizeof(t), gint(doc, "now_ms", STORE_NO_TIME));
    if (out_fmt == OUT_WIDE)
        printf("(%s %s, latest time %s)\n", source_kind, source_name, t);
}

int tbl_finish(struct table *t, cJSON *doc, bool empty, const char *none, bool now)
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

enum color state_color(const char *s)
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
