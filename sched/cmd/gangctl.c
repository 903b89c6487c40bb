/* sched/cmd/gangctl.c: the tenant and operator CLI (also `kubectl gang`, via bin/kubectl-gang).
 *
 * Owns: argument parsing, the offline mode (`--db FILE`: reads a simulator or scheduler database
 * through store/store.h, opened STORE_READONLY, never writing it), the tenant commands built on
 * it (quota, queues, jobs, explain, top, reservations), their output (aligned tables, `-o wide`,
 * `-o json` through cJSON, `-o yaml` through the small emitter below; colour only on a terminal)
 * and the exit codes: 0 success, 1 not found (an unknown queue or job), 2 usage error, an
 * unavailable server or operator command, or a database that cannot be opened or read.
 *
 * Must not touch: the database's content (read-only open), scheduling, the cluster. The
 * scheduler's HTTP API (--server, GANGSCHED_SERVER, --token-file, GANGSCHED_TOKEN) is parsed but
 * not built yet: such invocations, and the operator commands, fail with exit 2 and say why.
 *
 * Everything read from the database is validated (states, ranges, NULL strings) and copied; odd
 * content is shown as it is or skipped, never trusted for memory sizes or indices. docs/cli.md
 * is the user's reference.
 */
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

#include "sched/core/cycle.h"
#include "sched/core/err.h"
#include "sched/core/quantity.h"
#include "store/store.h"

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

static bool is_gpu(const char *resource)
{
    return str_eq(resource, STORE_GPU);
}

/* A resource amount in base units, for humans: "64 GPU", "16Gi", "500m". */
static void fmt_amount(char *buf, size_t n, const char *resource, int64_t v)
{
    if (is_gpu(resource)) {
        snprintf(buf, n, "%lld GPU", (long long)v);
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

static cJSON *jobj(cJSON *parent, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        die_oom();
    if (parent) {
        if (cJSON_IsArray(parent))
            cJSON_AddItemToArray(parent, o);
        else
            cJSON_AddItemToObject(parent, key, o);
    }
    return o;
}

static cJSON *jarr(cJSON *parent, const char *key)
{
    cJSON *a = cJSON_AddArrayToObject(parent, key);
    if (!a)
        die_oom();
    return a;
}

static void jstr(cJSON *o, const char *key, const char *v)
{
    if (!(v ? cJSON_AddStringToObject(o, key, v) : cJSON_AddNullToObject(o, key)))
        die_oom();
}

static void jnum(cJSON *o, const char *key, double v)
{
    if (!(isfinite(v) ? cJSON_AddNumberToObject(o, key, v) : cJSON_AddNullToObject(o, key)))
        die_oom();
}

static void jint(cJSON *o, const char *key, int64_t v)
{
    jnum(o, key, (double)v);
}

/* An optional time or limit: null when absent. */
static void jopt(cJSON *o, const char *key, int64_t v, int64_t absent)
{
    if (v == absent) {
        if (!cJSON_AddNullToObject(o, key))
            die_oom();
    } else {
        jint(o, key, v);
    }
}

/* ---- the database in memory --------------------------------------------------------------- */

struct quota_rec {
    char *flavor, *resource;
    int64_t nominal, borrowing_limit, lending_limit;
};

struct queue_rec {
    char *name, *cohort;
    double weight;
    int32_t priority;
    bool configured; /* in the applied configuration (else only in the ledger, jobs or history) */
    struct quota_rec *quotas;
    size_t n_quotas;
    bool has_share;
    double share;
    int64_t share_ms;
    uint32_t n_state[5]; /* jobs per enum store_job_state */
};

struct ledger_rec {
    char *queue, *flavor, *resource;
    int64_t amount;
};

struct job_rec {
    char *gang, *queue, *flavor;
    int64_t gang_id, gpus;
    enum store_job_state state;
    int64_t submit_ms, admit_ms, start_ms, finish_ms;
    uint32_t preemptions, restarts;
    uint32_t position; /* pending: 1-based position in its queue; else 0 */
};

struct place_rec {
    char *gang, *pod, *node;
    uint32_t pod_index, gpu_mask;
    int64_t bound_ms;
};

struct resv_rec {
    int64_t id;
    enum store_res_kind kind;
    char *gang;
    char **nodes;
    uint32_t n_nodes;
    int64_t created_ms, expires_ms, expected_start_ms;
};

struct preempt_rec {
    int64_t cycle, ts_ms, gpus;
    char *victim, *preemptor;
    double lost_work_gpu_s, cost;
};

struct db {
    struct store *st;
    const char *path;
    struct queue_rec *queues;
    size_t n_queues, cap_queues;
    struct ledger_rec *ledger;
    size_t n_ledger, cap_ledger;
    struct job_rec *jobs;
    size_t n_jobs, cap_jobs;
    struct place_rec *places;
    size_t n_places, cap_places;
    struct resv_rec *resvs;
    size_t n_resvs, cap_resvs;
    struct preempt_rec *preempts;
    size_t n_preempts, cap_preempts;
    int64_t now_ms; /* the latest time found in the database; STORE_NO_TIME when none */
};

static void see_time(struct db *db, int64_t t)
{
    if (t != STORE_NO_TIME && (db->now_ms == STORE_NO_TIME || t > db->now_ms))
        db->now_ms = t;
}

static struct queue_rec *find_queue(struct db *db, const char *name)
{
    for (size_t i = 0; i < db->n_queues; i++)
        if (str_eq(db->queues[i].name, name))
            return &db->queues[i];
    return NULL;
}

/* The queue `name`, added as "not configured" when the config does not have it. */
static struct queue_rec *queue_ref(struct db *db, const char *name)
{
    struct queue_rec *q = find_queue(db, name);
    if (q)
        return q;
    grow((void **)&db->queues, &db->cap_queues, db->n_queues, sizeof(*db->queues));
    q = &db->queues[db->n_queues++];
    memset(q, 0, sizeof(*q));
    q->name = xstrdup(name);
    q->weight = 1;
    return q;
}

static int load_queue(void *ctx, const struct store_queue *sq)
{
    struct db *db = ctx;
    if (!sq->name || find_queue(db, sq->name))
        return 0;
    struct queue_rec *q = queue_ref(db, sq->name);
    q->cohort = xstrdup(sq->cohort);
    q->weight = sq->weight;
    q->priority = sq->priority;
    q->configured = true;
    if (sq->n_quotas > 0 && sq->quotas) {
        q->quotas = xrealloc(NULL, (size_t)sq->n_quotas * sizeof(*q->quotas));
        for (uint32_t i = 0; i < sq->n_quotas; i++) {
            const struct store_quota *sqq = &sq->quotas[i];
            if (!sqq->flavor || !sqq->resource || sqq->nominal < 0)
                continue;
            struct quota_rec *r = &q->quotas[q->n_quotas++];
            r->flavor = xstrdup(sqq->flavor);
            r->resource = xstrdup(sqq->resource);
            r->nominal = sqq->nominal;
            r->borrowing_limit = sqq->borrowing_limit < 0 ? STORE_NO_LIMIT : sqq->borrowing_limit;
            r->lending_limit = sqq->lending_limit < 0 ? STORE_NO_LIMIT : sqq->lending_limit;
        }
    }
    return 0;
}

static int load_ledger(void *ctx, const struct store_ledger_row *r)
{
    struct db *db = ctx;
    if (!r->queue || !r->flavor || !r->resource || r->amount < 0)
        return 0;
    grow((void **)&db->ledger, &db->cap_ledger, db->n_ledger, sizeof(*db->ledger));
    db->ledger[db->n_ledger++] =
        (struct ledger_rec){xstrdup(r->queue), xstrdup(r->flavor), xstrdup(r->resource), r->amount};
    return 0;
}

static int load_job(void *ctx, const struct store_job *j)
{
    struct db *db = ctx;
    if (!j->gang || !j->queue || (unsigned)j->state > STORE_JOB_FAILED)
        return 0;
    grow((void **)&db->jobs, &db->cap_jobs, db->n_jobs, sizeof(*db->jobs));
    struct job_rec *r = &db->jobs[db->n_jobs++];
    *r = (struct job_rec){
        .gang = xstrdup(j->gang),
        .queue = xstrdup(j->queue),
        .flavor = xstrdup(j->flavor),
        .gang_id = j->gang_id,
        .gpus = j->gpus < 0 ? 0 : j->gpus,
        .state = j->state,
        .submit_ms = j->submit_ms,
        .admit_ms = j->admit_ms,
        .start_ms = j->start_ms,
        .finish_ms = j->finish_ms,
        .preemptions = j->preemptions,
        .restarts = j->restarts,
    };
    see_time(db, j->submit_ms);
    see_time(db, j->admit_ms);
    see_time(db, j->start_ms);
    see_time(db, j->finish_ms);
    return 0;
}

static int load_place(void *ctx, const struct store_placement *p)
{
    struct db *db = ctx;
    if (!p->gang || !p->node)
        return 0;
    grow((void **)&db->places, &db->cap_places, db->n_places, sizeof(*db->places));
    db->places[db->n_places++] = (struct place_rec){xstrdup(p->gang), xstrdup(p->pod ? p->pod : ""),
                                                    xstrdup(p->node), p->pod_index,
                                                    p->gpu_mask,      p->bound_ms};
    see_time(db, p->bound_ms);
    return 0;
}

static int load_resv(void *ctx, const struct store_reservation *r)
{
    struct db *db = ctx;
    if (!r->gang || (unsigned)r->kind > STORE_RES_OPERATOR)
        return 0;
    grow((void **)&db->resvs, &db->cap_resvs, db->n_resvs, sizeof(*db->resvs));
    struct resv_rec *v = &db->resvs[db->n_resvs++];
    *v = (struct resv_rec){.id = r->id,
                           .kind = r->kind,
                           .gang = xstrdup(r->gang),
                           .created_ms = r->created_ms,
                           .expires_ms = r->expires_ms,
                           .expected_start_ms = r->expected_start_ms};
    if (r->nodes && r->n_nodes > 0) {
        v->nodes = xrealloc(NULL, (size_t)r->n_nodes * sizeof(*v->nodes));
        for (uint32_t i = 0; i < r->n_nodes; i++)
            if (r->nodes[i])
                v->nodes[v->n_nodes++] = xstrdup(r->nodes[i]);
    }
    see_time(db, r->created_ms);
    return 0;
}

static int load_preempt(void *ctx, const struct store_preemption *p)
{
    struct db *db = ctx;
    if (!p->victim || !p->preemptor)
        return 0;
    grow((void **)&db->preempts, &db->cap_preempts, db->n_preempts, sizeof(*db->preempts));
    db->preempts[db->n_preempts++] =
        (struct preempt_rec){p->cycle,
                             p->ts_ms,
                             p->gpus,
                             xstrdup(p->victim),
                             xstrdup(p->preemptor),
                             isfinite(p->lost_work_gpu_s) ? p->lost_work_gpu_s : 0,
                             isfinite(p->cost) ? p->cost : 0};
    see_time(db, p->ts_ms);
    return 0;
}

static int load_history(void *ctx, const char *queue, double share, int64_t updated_ms)
{
    struct db *db = ctx;
    if (!queue || !isfinite(share) || share < 0)
        return 0;
    struct queue_rec *q = queue_ref(db, queue);
    q->has_share = true;
    q->share = share;
    q->share_ms = updated_ms;
    see_time(db, updated_ms);
    return 0;
}

static int latest_decision(void *ctx, const struct store_decision *d)
{
    see_time(ctx, d->ts_ms);
    return 0;
}

static int cmp_queue(const void *a, const void *b)
{
    return strcmp(((const struct queue_rec *)a)->name, ((const struct queue_rec *)b)->name);
}

static int state_rank(enum store_job_state s)
{
    switch (s) {
    case STORE_JOB_PENDING:
        return 0;
    case STORE_JOB_ADMITTED:
        return 1;
    case STORE_JOB_RUNNING:
        return 2;
    case STORE_JOB_FINISHED:
        return 3;
    case STORE_JOB_FAILED:
        return 4;
    }
    return 5;
}

/* Queue, then pending (in queue order: submission time, then name), admitted, running,
 * finished, failed; each by submission time, then name. */
static int cmp_job(const void *a, const void *b)
{
    const struct job_rec *x = a, *y = b;
    int c = strcmp(x->queue, y->queue);
    if (c)
        return c;
    c = state_rank(x->state) - state_rank(y->state);
    if (c)
        return c;
    if (x->submit_ms != y->submit_ms)
        return x->submit_ms < y->submit_ms ? -1 : 1;
    return strcmp(x->gang, y->gang);
}

/* Opens the database read-only and reads every table but the decision log. Returns 0 or an exit
 * code (the store's message printed). */
static int db_load(struct db *db, const char *path)
{
    struct sched_errbuf eb = {{0}};
    memset(db, 0, sizeof(*db));
    db->path = path;
    db->now_ms = STORE_NO_TIME;
    if (store_open(path, STORE_READONLY, NULL, &db->st, &eb) != 0) {
        fprintf(stderr, "%s: %s\n", prog, eb.msg[0] ? eb.msg : "cannot open the database");
        return EXIT_USAGE;
    }
    int err = store_queue_list(db->st, load_queue, db, &eb);
    if (!err)
        err = store_ledger_list(db->st, load_ledger, db, &eb);
    if (!err)
        err = store_job_list(db->st, load_job, db, &eb);
    if (!err)
        err = store_placement_list(db->st, load_place, db, &eb);
    if (!err)
        err = store_reservation_list(db->st, load_resv, db, &eb);
    if (!err)
        err = store_preemption_list(db->st, load_preempt, db, &eb);
    if (!err)
        err = store_history_list(db->st, load_history, db, &eb);
    if (!err)
        err = store_decision_list(db->st, NULL, 1, latest_decision, db, &eb);
    if (err) {
        fprintf(stderr, "%s: %s\n", prog, eb.msg[0] ? eb.msg : sched_strerror(err));
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < db->n_ledger; i++)
        queue_ref(db, db->ledger[i].queue);
    for (size_t i = 0; i < db->n_jobs; i++)
        queue_ref(db, db->jobs[i].queue)->n_state[db->jobs[i].state]++;
    if (db->n_queues > 1)
        qsort(db->queues, db->n_queues, sizeof(*db->queues), cmp_queue);
    if (db->n_jobs > 1)
        qsort(db->jobs, db->n_jobs, sizeof(*db->jobs), cmp_job);
    uint32_t pos = 0;
    for (size_t i = 0; i < db->n_jobs; i++) {
        struct job_rec *j = &db->jobs[i];
        if (i == 0 || strcmp(j->queue, db->jobs[i - 1].queue) != 0)
            pos = 0;
        if (j->state == STORE_JOB_PENDING)
            j->position = ++pos;
    }
    return 0;
}

static void db_free(struct db *db)
{
    for (size_t i = 0; i < db->n_queues; i++) {
        struct queue_rec *q = &db->queues[i];
        for (size_t k = 0; k < q->n_quotas; k++) {
            free(q->quotas[k].flavor);
            free(q->quotas[k].resource);
        }
        free(q->quotas);
        free(q->name);
        free(q->cohort);
    }
    for (size_t i = 0; i < db->n_ledger; i++) {
        free(db->ledger[i].queue);
        free(db->ledger[i].flavor);
        free(db->ledger[i].resource);
    }
    for (size_t i = 0; i < db->n_jobs; i++) {
        free(db->jobs[i].gang);
        free(db->jobs[i].queue);
        free(db->jobs[i].flavor);
    }
    for (size_t i = 0; i < db->n_places; i++) {
        free(db->places[i].gang);
        free(db->places[i].pod);
        free(db->places[i].node);
    }
    for (size_t i = 0; i < db->n_resvs; i++) {
        for (uint32_t k = 0; k < db->resvs[i].n_nodes; k++)
            free(db->resvs[i].nodes[k]);
        free(db->resvs[i].nodes);
        free(db->resvs[i].gang);
    }
    for (size_t i = 0; i < db->n_preempts; i++) {
        free(db->preempts[i].victim);
        free(db->preempts[i].preemptor);
    }
    free(db->queues);
    free(db->ledger);
    free(db->jobs);
    free(db->places);
    free(db->resvs);
    free(db->preempts);
    store_close(db->st);
}

static int64_t ledger_used(const struct db *db, const char *queue, const char *flavor,
                           const char *resource)
{
    for (size_t i = 0; i < db->n_ledger; i++) {
        const struct ledger_rec *l = &db->ledger[i];
        if (str_eq(l->queue, queue) && (!flavor || str_eq(l->flavor, flavor)) &&
            str_eq(l->resource, resource))
            return l->amount;
    }
    return 0;
}

/* Sum over flavors of the queue's ledger (or nominal quota) for one resource. */
static int64_t queue_total(const struct db *db, const struct queue_rec *q, const char *resource,
                           bool nominal)
{
    int64_t sum = 0;
    if (nominal) {
        for (size_t k = 0; k < q->n_quotas; k++)
            if (str_eq(q->quotas[k].resource, resource) && sum <= INT64_MAX - q->quotas[k].nominal)
                sum += q->quotas[k].nominal;
        return sum;
    }
    for (size_t i = 0; i < db->n_ledger; i++)
        if (str_eq(db->ledger[i].queue, q->name) && str_eq(db->ledger[i].resource, resource) &&
            sum <= INT64_MAX - db->ledger[i].amount)
            sum += db->ledger[i].amount;
    return sum;
}

static const struct quota_rec *find_quota(const struct queue_rec *q, const char *flavor,
                                          const char *resource)
{
    for (size_t k = 0; k < q->n_quotas; k++)
        if (str_eq(q->quotas[k].flavor, flavor) && str_eq(q->quotas[k].resource, resource))
            return &q->quotas[k];
    return NULL;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

/* What queue q could still take of (flavor, resource) now. Without a cohort: its unused nominal
 * quota. In a cohort: what the cohort's queues leave unused (each other queue lends at most its
 * lending limit, and uses its unlent part first), within q's own borrowing limit. The store does
 * not record nested cohorts, so queues are pooled by cohort name. */
static int64_t quota_available(const struct db *db, const struct queue_rec *q,
                               const struct quota_rec *r, int64_t used)
{
    int64_t own = sat_add(r->nominal, -used);
    if (!q->cohort)
        return own > 0 ? own : 0;
    int64_t cap = r->borrowing_limit == STORE_NO_LIMIT
                      ? INT64_MAX
                      : sat_add(sat_add(r->nominal, r->borrowing_limit), -used);
    int64_t pool = own;
    for (size_t i = 0; i < db->n_queues; i++) {
        const struct queue_rec *o = &db->queues[i];
        if (o == q || !str_eq(o->cohort, q->cohort))
            continue;
        const struct quota_rec *oq = find_quota(o, r->flavor, r->resource);
        int64_t onom = oq ? oq->nominal : 0;
        int64_t lend = oq && oq->lending_limit != STORE_NO_LIMIT && oq->lending_limit < onom
                           ? oq->lending_limit
                           : onom;
        int64_t oused = ledger_used(db, o->name, r->flavor, r->resource);
        int64_t beyond = sat_add(oused, -(onom - lend)); /* what o takes from the shared part */
        pool = sat_add(pool, lend - (beyond > 0 ? beyond : 0));
    }
    int64_t avail = pool < cap ? pool : cap;
    return avail > 0 ? avail : 0;
}

static enum color state_color(enum store_job_state s)
{
    switch (s) {
    case STORE_JOB_PENDING:
        return C_YELLOW;
    case STORE_JOB_ADMITTED:
        return C_CYAN;
    case STORE_JOB_RUNNING:
        return C_GREEN;
    case STORE_JOB_FINISHED:
        return C_DIM;
    case STORE_JOB_FAILED:
        return C_RED;
    }
    return C_NONE;
}

static const char *why_name(int why)
{
    return why >= SCHED_WHY_PLACED && why <= SCHED_WHY_QUOTA_NEVER
               ? sched_why_name((enum sched_why)why)
               : "unknown";
}

static void print_now(const struct db *db)
{
    char t[64];
    fmt_time(t, sizeof(t), db->now_ms);
    if (out_fmt == OUT_WIDE)
        printf("(database %s, latest time %s)\n", db->path, t);
}

/* ---- quota --------------------------------------------------------------------------------- */

struct quota_line {
    const struct queue_rec *q;
    const char *flavor, *resource;
    int64_t nominal, borrowing_limit, lending_limit, used, borrowed, available;
    bool configured;
};

/* The quota lines of a queue: its configured quotas, then ledger rows it has no quota for. */
static size_t quota_lines(const struct db *db, const struct queue_rec *q, struct quota_line **out)
{
    size_t n = 0, cap = 0;
    struct quota_line *v = NULL;
    for (size_t k = 0; k < q->n_quotas; k++) {
        const struct quota_rec *r = &q->quotas[k];
        grow((void **)&v, &cap, n, sizeof(*v));
        int64_t used = ledger_used(db, q->name, r->flavor, r->resource);
        v[n++] = (struct quota_line){q,
                                     r->flavor,
                                     r->resource,
                                     r->nominal,
                                     r->borrowing_limit,
                                     r->lending_limit,
                                     used,
                                     used > r->nominal ? used - r->nominal : 0,
                                     quota_available(db, q, r, used),
                                     true};
    }
    for (size_t i = 0; i < db->n_ledger; i++) {
        const struct ledger_rec *l = &db->ledger[i];
        if (!str_eq(l->queue, q->name) || find_quota(q, l->flavor, l->resource))
            continue;
        grow((void **)&v, &cap, n, sizeof(*v));
        v[n++] = (struct quota_line){
            q,         l->flavor, l->resource, 0,    STORE_NO_LIMIT, STORE_NO_LIMIT,
            l->amount, l->amount, 0,           false};
    }
    *out = v;
    return n;
}

static int not_found_queue(const struct db *db, const char *name)
{
    fprintf(stderr, "%s: queue '%s' not found in %s\n", prog, name, db->path);
    return EXIT_NOTFOUND;
}

static int cmd_quota(struct db *db, const char *only)
{
    if (only && !find_queue(db, only))
        return not_found_queue(db, only);
    static const char *const hdr[] = {"QUEUE",      "FLAVOR",   "RESOURCE", "NOMINAL",
                                      "BORROW-LIM", "LEND-LIM", "USED",     "BORROWED",
                                      "AVAILABLE",  "SHARE",    "COHORT",   "WEIGHT"};
    struct table t;
    tbl_init(&t, out_fmt == OUT_WIDE ? 12 : 10, hdr, 0x3f8);
    cJSON *doc = out_fmt >= OUT_JSON ? jobj(NULL, NULL) : NULL;
    cJSON *jqs = doc ? jarr(doc, "queues") : NULL;
    for (size_t i = 0; i < db->n_queues; i++) {
        const struct queue_rec *q = &db->queues[i];
        if (only && strcmp(q->name, only) != 0)
            continue;
        struct quota_line *ln = NULL;
        size_t n = quota_lines(db, q, &ln);
        char share[32] = "-";
        if (q->has_share)
            snprintf(share, sizeof(share), "%.3f", q->share);
        if (doc) {
            cJSON *jq = jobj(jqs, NULL);
            jstr(jq, "name", q->name);
            jstr(jq, "cohort", q->cohort);
            jnum(jq, "weight", q->weight);
            jint(jq, "priority", q->priority);
            if (!cJSON_AddBoolToObject(jq, "configured", q->configured))
                die_oom();
            if (q->has_share) {
                jnum(jq, "share", q->share);
                jint(jq, "share_updated_ms", q->share_ms);
            } else {
                jstr(jq, "share", NULL);
                jstr(jq, "share_updated_ms", NULL);
            }
            cJSON *ja = jarr(jq, "quotas");
            for (size_t k = 0; k < n; k++) {
                cJSON *o = jobj(ja, NULL);
                jstr(o, "flavor", ln[k].flavor);
                jstr(o, "resource", ln[k].resource);
                jint(o, "nominal", ln[k].nominal);
                jopt(o, "borrowing_limit", ln[k].borrowing_limit, STORE_NO_LIMIT);
                jopt(o, "lending_limit", ln[k].lending_limit, STORE_NO_LIMIT);
                jint(o, "used", ln[k].used);
                jint(o, "borrowed", ln[k].borrowed);
                jint(o, "available", ln[k].available);
                if (!cJSON_AddBoolToObject(o, "configured", ln[k].configured))
                    die_oom();
            }
        } else {
            if (n == 0) { /* a queue without quotas or usage still gets a line */
                tbl_cell(&t, C_NONE, "%s", q->name);
                for (int c = 1; c < 9; c++)
                    tbl_cell(&t, C_NONE, "-");
                tbl_cell(&t, C_NONE, "%s", share);
                if (t.ncol > 10) {
                    tbl_cell(&t, C_NONE, "%s", q->cohort ? q->cohort : "-");
                    tbl_cell(&t, C_NONE, "%g", q->weight);
                }
            }
            for (size_t k = 0; k < n; k++) {
                const struct quota_line *l = &ln[k];
                char a[5][48];
                fmt_amount(a[0], sizeof(a[0]), l->resource, l->nominal);
                fmt_limit(a[1], sizeof(a[1]), l->resource, l->borrowing_limit);
                fmt_limit(a[2], sizeof(a[2]), l->resource, l->lending_limit);
                fmt_amount(a[3], sizeof(a[3]), l->resource, l->used);
                fmt_amount(a[4], sizeof(a[4]), l->resource, l->borrowed);
                char av[48];
                fmt_amount(av, sizeof(av), l->resource, l->available);
                tbl_cell(&t, C_NONE, "%s", q->name);
                tbl_cell(&t, C_NONE, "%s", l->flavor);
                tbl_cell(&t, C_NONE, "%s", l->resource);
                tbl_cell(&t, C_NONE, "%s", l->configured ? a[0] : "-");
                tbl_cell(&t, C_NONE, "%s", l->configured ? a[1] : "-");
                tbl_cell(&t, C_NONE, "%s", l->configured ? a[2] : "-");
                tbl_cell(&t, C_NONE, "%s", a[3]);
                tbl_cell(&t, l->borrowed > 0 ? C_YELLOW : C_NONE, "%s", a[4]);
                tbl_cell(&t, l->available == 0 ? C_RED : C_NONE, "%s", av);
                tbl_cell(&t, C_NONE, "%s", share);
                if (t.ncol > 10) {
                    tbl_cell(&t, C_NONE, "%s", q->cohort ? q->cohort : "-");
                    tbl_cell(&t, C_NONE, "%g", q->weight);
                }
            }
        }
        free(ln);
    }
    if (doc)
        return emit_doc(doc);
    tbl_print(stdout, &t);
    tbl_free(&t);
    print_now(db);
    return 0;
}

/* ---- queues -------------------------------------------------------------------------------- */

static int cmd_queues(struct db *db)
{
    static const char *const hdr[] = {"QUEUE",    "COHORT",  "WEIGHT",  "PRIORITY", "NOMINAL",
                                      "USED",     "RUNNING", "PENDING", "BORROWED", "ADMITTED",
                                      "FINISHED", "FAILED",  "SHARE"};
    struct table t;
    tbl_init(&t, out_fmt == OUT_WIDE ? 13 : 8, hdr, 0x1ffc);
    cJSON *doc = out_fmt >= OUT_JSON ? jobj(NULL, NULL) : NULL;
    cJSON *jqs = doc ? jarr(doc, "queues") : NULL;
    for (size_t i = 0; i < db->n_queues; i++) {
        const struct queue_rec *q = &db->queues[i];
        int64_t nominal = queue_total(db, q, STORE_GPU, true);
        int64_t used = queue_total(db, q, STORE_GPU, false);
        int64_t borrowed = 0;
        struct quota_line *ln = NULL;
        size_t n = quota_lines(db, q, &ln);
        for (size_t k = 0; k < n; k++)
            if (is_gpu(ln[k].resource))
                borrowed = sat_add(borrowed, ln[k].borrowed);
        free(ln);
        uint32_t running = q->n_state[STORE_JOB_RUNNING] + q->n_state[STORE_JOB_ADMITTED];
        if (doc) {
            cJSON *o = jobj(jqs, NULL);
            jstr(o, "name", q->name);
            jstr(o, "cohort", q->cohort);
            jnum(o, "weight", q->weight);
            jint(o, "priority", q->priority);
            if (!cJSON_AddBoolToObject(o, "configured", q->configured))
                die_oom();
            jint(o, "nominal_gpus", nominal);
            jint(o, "used_gpus", used);
            jint(o, "borrowed_gpus", borrowed);
            jint(o, "running", running);
            jint(o, "pending", q->n_state[STORE_JOB_PENDING]);
            jint(o, "admitted", q->n_state[STORE_JOB_ADMITTED]);
            jint(o, "finished", q->n_state[STORE_JOB_FINISHED]);
            jint(o, "failed", q->n_state[STORE_JOB_FAILED]);
            if (q->has_share)
                jnum(o, "share", q->share);
            else
                jstr(o, "share", NULL);
            continue;
        }
        tbl_cell(&t, q->configured ? C_NONE : C_DIM, "%s%s", q->name,
                 q->configured ? "" : " (not configured)");
        tbl_cell(&t, C_NONE, "%s", q->cohort ? q->cohort : "-");
        tbl_cell(&t, C_NONE, "%g", q->weight);
        tbl_cell(&t, C_NONE, "%d", (int)q->priority);
        tbl_cell(&t, C_NONE, "%lld GPU", (long long)nominal);
        tbl_cell(&t, used > nominal ? C_YELLOW : C_NONE, "%lld GPU", (long long)used);
        tbl_cell(&t, C_NONE, "%u", running);
        tbl_cell(&t, q->n_state[STORE_JOB_PENDING] ? C_YELLOW : C_NONE, "%u",
                 q->n_state[STORE_JOB_PENDING]);
        if (t.ncol > 8) {
            tbl_cell(&t, C_NONE, "%lld GPU", (long long)borrowed);
            tbl_cell(&t, C_NONE, "%u", q->n_state[STORE_JOB_ADMITTED]);
            tbl_cell(&t, C_NONE, "%u", q->n_state[STORE_JOB_FINISHED]);
            tbl_cell(&t, C_NONE, "%u", q->n_state[STORE_JOB_FAILED]);
            if (q->has_share)
                tbl_cell(&t, C_NONE, "%.3f", q->share);
            else
                tbl_cell(&t, C_NONE, "-");
        }
    }
    if (doc)
        return emit_doc(doc);
    if (db->n_queues == 0)
        puts("no queues");
    else
        tbl_print(stdout, &t);
    tbl_free(&t);
    print_now(db);
    return 0;
}

/* ---- jobs ---------------------------------------------------------------------------------- */

/* Pending: how long it has waited so far; otherwise how long it waited before its first start. */
static int64_t job_wait(const struct db *db, const struct job_rec *j)
{
    if (j->submit_ms == STORE_NO_TIME)
        return STORE_NO_TIME;
    int64_t end = j->state == STORE_JOB_PENDING  ? db->now_ms
                  : j->start_ms != STORE_NO_TIME ? j->start_ms
                  : j->admit_ms != STORE_NO_TIME ? j->admit_ms
                                                 : j->finish_ms;
    if (end == STORE_NO_TIME || end < j->submit_ms)
        return STORE_NO_TIME;
    return end - j->submit_ms;
}

static void job_json(const struct db *db, cJSON *o, const struct job_rec *j)
{
    jstr(o, "job", j->gang);
    jstr(o, "queue", j->queue);
    jstr(o, "flavor", j->flavor);
    jstr(o, "state", store_job_state_name(j->state));
    jint(o, "gpus", j->gpus);
    if (j->position)
        jint(o, "position", j->position);
    else
        jstr(o, "position", NULL);
    jopt(o, "submit_ms", j->submit_ms, STORE_NO_TIME);
    jopt(o, "admit_ms", j->admit_ms, STORE_NO_TIME);
    jopt(o, "start_ms", j->start_ms, STORE_NO_TIME);
    jopt(o, "finish_ms", j->finish_ms, STORE_NO_TIME);
    jopt(o, "wait_ms", job_wait(db, j), STORE_NO_TIME);
    jint(o, "preemptions", j->preemptions);
    jint(o, "restarts", j->restarts);
}

/* "hgx-0001:8,hgx-0002:8": nodes and GPUs of a job's placed pods. */
static char *job_nodes(const struct db *db, const char *gang)
{
    char *s = xstrdup("");
    for (size_t i = 0; i < db->n_places; i++) {
        const struct place_rec *p = &db->places[i];
        if (!str_eq(p->gang, gang))
            continue;
        char *n =
            xasprintf("%s%s%s:%d", s, *s ? "," : "", p->node, __builtin_popcount(p->gpu_mask));
        free(s);
        s = n;
    }
    return s;
}

static int cmd_jobs(struct db *db, const char *only, bool all)
{
    if (only && !find_queue(db, only))
        return not_found_queue(db, only);
    static const char *const hdr[] = {"JOB",      "QUEUE",     "STATE",       "GPUS",
                                      "POSITION", "WAITING",   "STARTED",     "FINISHED",
                                      "FLAVOR",   "SUBMITTED", "PREEMPTIONS", "NODES"};
    struct table t;
    tbl_init(&t, out_fmt == OUT_WIDE ? 12 : 8, hdr, 0x418);
    cJSON *doc = out_fmt >= OUT_JSON ? jobj(NULL, NULL) : NULL;
    cJSON *ja = NULL;
    if (doc) {
        jopt(doc, "now_ms", db->now_ms, STORE_NO_TIME);
        ja = jarr(doc, "jobs");
    }
    size_t shown = 0;
    for (size_t i = 0; i < db->n_jobs; i++) {
        const struct job_rec *j = &db->jobs[i];
        if (only && strcmp(j->queue, only) != 0)
            continue;
        if (!all && j->state != STORE_JOB_PENDING && j->state != STORE_JOB_ADMITTED &&
            j->state != STORE_JOB_RUNNING)
            continue;
        shown++;
        if (doc) {
            job_json(db, jobj(ja, NULL), j);
            continue;
        }
        char w[32], st[64], fin[64], sub[64];
        fmt_dur(w, sizeof(w), job_wait(db, j));
        fmt_time(st, sizeof(st), j->start_ms);
        fmt_time(fin, sizeof(fin), j->finish_ms);
        tbl_cell(&t, C_NONE, "%s", j->gang);
        tbl_cell(&t, C_NONE, "%s", j->queue);
        tbl_cell(&t, state_color(j->state), "%s", store_job_state_name(j->state));
        tbl_cell(&t, C_NONE, "%lld", (long long)j->gpus);
        if (j->position)
            tbl_cell(&t, C_NONE, "%u", j->position);
        else
            tbl_cell(&t, C_NONE, "-");
        tbl_cell(&t, C_NONE, "%s", w);
        tbl_cell(&t, C_NONE, "%s", st);
        tbl_cell(&t, C_NONE, "%s", fin);
        if (t.ncol > 8) {
            fmt_time(sub, sizeof(sub), j->submit_ms);
            char *nodes = job_nodes(db, j->gang);
            tbl_cell(&t, C_NONE, "%s", j->flavor ? j->flavor : "-");
            tbl_cell(&t, C_NONE, "%s", sub);
            tbl_cell(&t, C_NONE, "%u", j->preemptions);
            tbl_cell(&t, C_NONE, "%s", *nodes ? nodes : "-");
            free(nodes);
        }
    }
    if (doc)
        return emit_doc(doc);
    if (shown == 0)
        printf("no %sjobs%s%s\n", all ? "" : "pending or running ", only ? " in queue " : "",
               only ? only : "");
    else
        tbl_print(stdout, &t);
    tbl_free(&t);
    print_now(db);
    return 0;
}

/* ---- explain ------------------------------------------------------------------------------- */

struct dec_ctx {
    cJSON *arr; /* JSON/YAML */
    struct table *t;
    uint32_t limit, total;
};

static int collect_decision(void *ctx, const struct store_decision *d)
{
    struct dec_ctx *c = ctx;
    c->total++;
    if (c->limit && c->total > c->limit)
        return 0;
    const char *reason = d->reason ? d->reason : "";
    if (c->arr) {
        cJSON *o = jobj(c->arr, NULL);
        jint(o, "id", d->id);
        jint(o, "cycle", d->cycle);
        jopt(o, "ts_ms", d->ts_ms, STORE_NO_TIME);
        jstr(o, "why", why_name(d->why));
        jint(o, "why_code", d->why);
        jstr(o, "reason", reason);
    } else {
        char ts[64];
        fmt_time(ts, sizeof(ts), d->ts_ms);
        tbl_cell(c->t, C_NONE, "%lld", (long long)d->cycle);
        tbl_cell(c->t, C_NONE, "%s", ts);
        tbl_cell(c->t, d->why == SCHED_WHY_PLACED ? C_GREEN : C_YELLOW, "%s", why_name(d->why));
        tbl_cell(c->t, C_NONE, "%s", reason);
    }
    return 0;
}

static int cmd_explain(struct db *db, const char *name, uint32_t limit)
{
    const struct job_rec *j = NULL;
    for (size_t i = 0; i < db->n_jobs && !j; i++)
        if (strcmp(db->jobs[i].gang, name) == 0)
            j = &db->jobs[i];
    if (!j) {
        fprintf(stderr, "%s: job '%s' not found in %s\n", prog, name, db->path);
        return EXIT_NOTFOUND;
    }
    struct sched_errbuf eb = {{0}};
    cJSON *doc = out_fmt >= OUT_JSON ? jobj(NULL, NULL) : NULL;
    char b[6][64];
    if (doc) {
        jopt(doc, "now_ms", db->now_ms, STORE_NO_TIME);
        job_json(db, jobj(doc, "job"), j);
        cJSON *jp = jarr(doc, "placements");
        for (size_t i = 0; i < db->n_places; i++) {
            const struct place_rec *p = &db->places[i];
            if (!str_eq(p->gang, j->gang))
                continue;
            cJSON *o = jobj(jp, NULL);
            jint(o, "pod_index", p->pod_index);
            jstr(o, "pod", p->pod);
            jstr(o, "node", p->node);
            jint(o, "gpus", __builtin_popcount(p->gpu_mask));
            jint(o, "gpu_mask", p->gpu_mask);
            jopt(o, "bound_ms", p->bound_ms, STORE_NO_TIME);
        }
        cJSON *jr = jarr(doc, "reservations");
        for (size_t i = 0; i < db->n_resvs; i++) {
            const struct resv_rec *r = &db->resvs[i];
            if (!str_eq(r->gang, j->gang))
                continue;
            cJSON *o = jobj(jr, NULL);
            jint(o, "id", r->id);
            jstr(o, "kind", store_res_kind_name(r->kind));
            cJSON *nodes = jarr(o, "nodes");
            for (uint32_t k = 0; k < r->n_nodes; k++) {
                cJSON *s = cJSON_CreateString(r->nodes[k]);
                if (!s)
                    die_oom();
                cJSON_AddItemToArray(nodes, s);
            }
            jopt(o, "expected_start_ms", r->expected_start_ms, STORE_NO_TIME);
        }
    } else {
        fmt_time(b[0], sizeof(b[0]), j->submit_ms);
        fmt_time(b[1], sizeof(b[1]), j->admit_ms);
        fmt_time(b[2], sizeof(b[2]), j->start_ms);
        fmt_time(b[3], sizeof(b[3]), j->finish_ms);
        fmt_dur(b[4], sizeof(b[4]), job_wait(db, j));
        printf("Job:          %s\n", j->gang);
        printf("Queue:        %s\n", j->queue);
        printf("State:        ");
        if (use_color)
            printf("%s%s\033[0m\n", color_seq(state_color(j->state)),
                   store_job_state_name(j->state));
        else
            printf("%s\n", store_job_state_name(j->state));
        if (j->position)
            printf("Position:     %u in queue %s (submission order)\n", j->position, j->queue);
        printf("GPUs:         %lld GPU%s%s\n", (long long)j->gpus, j->flavor ? " on flavor " : "",
               j->flavor ? j->flavor : "");
        printf("Submitted:    %s\n", b[0]);
        printf("Admitted:     %s\n", b[1]);
        printf("Started:      %s\n", b[2]);
        printf("Finished:     %s\n", b[3]);
        printf("%s %s\n", j->state == STORE_JOB_PENDING ? "Waiting:     " : "Waited:      ", b[4]);
        printf("Preemptions:  %u, restarts %u\n", j->preemptions, j->restarts);
        char *nodes = job_nodes(db, j->gang);
        if (*nodes)
            printf("Placed on:    %s\n", nodes);
        free(nodes);
        if (j->state == STORE_JOB_PENDING) {
            struct queue_rec *q = find_queue(db, j->queue);
            struct quota_line *ln = NULL;
            size_t n = q ? quota_lines(db, q, &ln) : 0;
            for (size_t k = 0; k < n; k++) {
                if (!is_gpu(ln[k].resource))
                    continue;
                fmt_amount(b[0], sizeof(b[0]), ln[k].resource, ln[k].used);
                fmt_amount(b[1], sizeof(b[1]), ln[k].resource, ln[k].nominal);
                fmt_amount(b[2], sizeof(b[2]), ln[k].resource, ln[k].available);
                printf("Queue quota:  %s used of %s nominal on %s, %s available now\n", b[0], b[1],
                       ln[k].flavor, b[2]);
            }
            free(ln);
        }
        for (size_t i = 0; i < db->n_resvs; i++) {
            const struct resv_rec *r = &db->resvs[i];
            if (!str_eq(r->gang, j->gang))
                continue;
            fmt_time(b[0], sizeof(b[0]), r->expected_start_ms);
            printf("Reservation:  #%lld (%s) on %u node(s), expected start %s\n", (long long)r->id,
                   store_res_kind_name(r->kind), r->n_nodes, b[0]);
        }
    }

    static const char *const dhdr[] = {"CYCLE", "TIME", "WHY", "REASON"};
    struct table t;
    tbl_init(&t, 4, dhdr, 0x1);
    struct dec_ctx dc = {doc ? jarr(doc, "decisions") : NULL, &t, limit, 0};
    int err = store_decision_list(db->st, j->gang, 0, collect_decision, &dc, &eb);
    if (err) {
        fprintf(stderr, "%s: %s\n", prog, eb.msg[0] ? eb.msg : sched_strerror(err));
        tbl_free(&t);
        cJSON_Delete(doc);
        return EXIT_USAGE;
    }
    if (doc)
        jint(doc, "decisions_total", dc.total);
    else {
        uint32_t shown = limit && dc.total > limit ? limit : dc.total;
        printf("\nDecisions (newest first, %u of %u%s):\n", shown, dc.total,
               shown < dc.total ? "; --limit 0 shows all" : "");
        if (dc.total == 0)
            puts("  none in the decision log (never waited, or pruned by its retention)");
        else
            tbl_print(stdout, &t);
    }
    tbl_free(&t);

    static const char *const phdr[] = {"CYCLE", "TIME",       "ROLE", "OTHER JOB",
                                       "GPUS",  "LOST GPU-H", "COST"};
    tbl_init(&t, 7, phdr, 0x71);
    cJSON *jp = doc ? jarr(doc, "preemptions") : NULL;
    size_t np = 0;
    for (size_t i = 0; i < db->n_preempts; i++) {
        const struct preempt_rec *p = &db->preempts[i];
        bool victim = strcmp(p->victim, j->gang) == 0;
        bool preemptor = strcmp(p->preemptor, j->gang) == 0;
        if (!victim && !preemptor)
            continue;
        np++;
        if (jp) {
            cJSON *o = jobj(jp, NULL);
            jint(o, "cycle", p->cycle);
            jopt(o, "ts_ms", p->ts_ms, STORE_NO_TIME);
            jstr(o, "role", victim ? "victim" : "preemptor");
            jstr(o, "victim", p->victim);
            jstr(o, "preemptor", p->preemptor);
            jint(o, "gpus", p->gpus);
            jnum(o, "lost_work_gpu_s", p->lost_work_gpu_s);
            jnum(o, "cost", p->cost);
            continue;
        }
        fmt_time(b[0], sizeof(b[0]), p->ts_ms);
        tbl_cell(&t, C_NONE, "%lld", (long long)p->cycle);
        tbl_cell(&t, C_NONE, "%s", b[0]);
        tbl_cell(&t, victim ? C_RED : C_NONE, "%s", victim ? "victim" : "preemptor");
        tbl_cell(&t, C_NONE, "%s", victim ? p->preemptor : p->victim);
        tbl_cell(&t, C_NONE, "%lld", (long long)p->gpus);
        tbl_cell(&t, C_NONE, "%.2f", p->lost_work_gpu_s / 3600.0);
        tbl_cell(&t, C_NONE, "%.2f", p->cost);
    }
    if (doc) {
        tbl_free(&t);
        return emit_doc(doc);
    }
    printf("\nPreemptions (%zu):\n", np);
    if (np)
        tbl_print(stdout, &t);
    else
        puts("  none");
    tbl_free(&t);
    return 0;
}

/* ---- top ----------------------------------------------------------------------------------- */

struct node_use {
    const char *node;
    int64_t gpus;
    uint32_t pods, jobs;
    const char *last_gang;
};

static int cmp_node(const void *a, const void *b)
{
    return strcmp(((const struct node_use *)a)->node, ((const struct node_use *)b)->node);
}

static int cmd_top(struct db *db)
{
    cJSON *doc = out_fmt >= OUT_JSON ? jobj(NULL, NULL) : NULL;
    int64_t total = 0;
    static const char *const qhdr[] = {"QUEUE",   "FLAVOR",     "USED",
                                       "NOMINAL", "OF NOMINAL", "RUNNING"};
    struct table t;
    tbl_init(&t, 6, qhdr, 0x3c);
    cJSON *jq = doc ? jarr(doc, "queues") : NULL;
    for (size_t i = 0; i < db->n_ledger; i++) {
        const struct ledger_rec *l = &db->ledger[i];
        if (!is_gpu(l->resource))
            continue;
        total = sat_add(total, l->amount);
        const struct queue_rec *q = find_queue(db, l->queue);
        const struct quota_rec *r = q ? find_quota(q, l->flavor, l->resource) : NULL;
        int64_t nominal = r ? r->nominal : 0;
        uint32_t running = 0;
        for (size_t k = 0; k < db->n_jobs; k++)
            if (str_eq(db->jobs[k].queue, l->queue) && str_eq(db->jobs[k].flavor, l->flavor) &&
                (db->jobs[k].state == STORE_JOB_RUNNING || db->jobs[k].state == STORE_JOB_ADMITTED))
                running++;
        if (jq) {
            cJSON *o = jobj(jq, NULL);
            jstr(o, "queue", l->queue);
            jstr(o, "flavor", l->flavor);
            jint(o, "used_gpus", l->amount);
            jint(o, "nominal_gpus", nominal);
            jint(o, "running", running);
            continue;
        }
        tbl_cell(&t, C_NONE, "%s", l->queue);
        tbl_cell(&t, C_NONE, "%s", l->flavor);
        tbl_cell(&t, C_NONE, "%lld GPU", (long long)l->amount);
        tbl_cell(&t, C_NONE, "%lld GPU", (long long)nominal);
        if (nominal > 0)
            tbl_cell(&t, l->amount > nominal ? C_YELLOW : C_NONE, "%.0f%%",
                     100.0 * (double)l->amount / (double)nominal);
        else
            tbl_cell(&t, C_NONE, "-");
        tbl_cell(&t, C_NONE, "%u", running);
    }
    /* by node, from the placements (sorted by gang, so a gang's pods are adjacent) */
    struct node_use *nu = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < db->n_places; i++) {
        const struct place_rec *p = &db->places[i];
        struct node_use *u = NULL;
        for (size_t k = 0; k < n && !u; k++)
            if (strcmp(nu[k].node, p->node) == 0)
                u = &nu[k];
        if (!u) {
            grow((void **)&nu, &cap, n, sizeof(*nu));
            u = &nu[n++];
            *u = (struct node_use){p->node, 0, 0, 0, NULL};
        }
        u->gpus += __builtin_popcount(p->gpu_mask);
        u->pods++;
        if (!str_eq(u->last_gang, p->gang)) {
            u->jobs++;
            u->last_gang = p->gang;
        }
    }
    if (n > 1)
        qsort(nu, n, sizeof(*nu), cmp_node);
    int64_t placed = 0;
    for (size_t k = 0; k < n; k++)
        placed += nu[k].gpus;
    if (doc) {
        jint(doc, "used_gpus", total);
        jint(doc, "placed_gpus", placed);
        cJSON *jn = jarr(doc, "nodes");
        for (size_t k = 0; k < n; k++) {
            cJSON *o = jobj(jn, NULL);
            jstr(o, "node", nu[k].node);
            jint(o, "gpus", nu[k].gpus);
            jint(o, "pods", nu[k].pods);
            jint(o, "jobs", nu[k].jobs);
        }
        free(nu);
        tbl_free(&t);
        return emit_doc(doc);
    }
    printf("GPU usage by queue (ledger): %lld GPU in use\n", (long long)total);
    if (t.n)
        tbl_print(stdout, &t);
    tbl_free(&t);
    printf("\nGPU usage by node (placed pods): %lld GPU on %zu node(s)\n", (long long)placed, n);
    static const char *const nhdr[] = {"NODE", "GPUS", "PODS", "JOBS"};
    tbl_init(&t, 4, nhdr, 0xe);
    for (size_t k = 0; k < n; k++) {
        tbl_cell(&t, C_NONE, "%s", nu[k].node);
        tbl_cell(&t, C_NONE, "%lld GPU", (long long)nu[k].gpus);
        tbl_cell(&t, C_NONE, "%u", nu[k].pods);
        tbl_cell(&t, C_NONE, "%u", nu[k].jobs);
    }
    if (n)
        tbl_print(stdout, &t);
    else
        puts("  no placed pods");
    tbl_free(&t);
    free(nu);
    print_now(db);
    return 0;
}

/* ---- reservations -------------------------------------------------------------------------- */

static int cmd_reservations(struct db *db)
{
    cJSON *doc = out_fmt >= OUT_JSON ? jobj(NULL, NULL) : NULL;
    static const char *const hdr[] = {"ID",      "KIND",    "JOB",           "NODES",
                                      "CREATED", "EXPIRES", "EXPECTED START"};
    struct table t;
    tbl_init(&t, 7, hdr, 0x1);
    cJSON *ja = doc ? jarr(doc, "reservations") : NULL;
    for (size_t i = 0; i < db->n_resvs; i++) {
        const struct resv_rec *r = &db->resvs[i];
        if (ja) {
            cJSON *o = jobj(ja, NULL);
            jint(o, "id", r->id);
            jstr(o, "kind", store_res_kind_name(r->kind));
            jstr(o, "job", r->gang);
            cJSON *nodes = jarr(o, "nodes");
            for (uint32_t k = 0; k < r->n_nodes; k++) {
                cJSON *s = cJSON_CreateString(r->nodes[k]);
                if (!s)
                    die_oom();
                cJSON_AddItemToArray(nodes, s);
            }
            jopt(o, "created_ms", r->created_ms, STORE_NO_TIME);
            jopt(o, "expires_ms", r->expires_ms, STORE_NO_TIME);
            jopt(o, "expected_start_ms", r->expected_start_ms, STORE_NO_TIME);
            continue;
        }
        char *nodes = xstrdup("");
        for (uint32_t k = 0; k < r->n_nodes; k++) {
            if (out_fmt != OUT_WIDE && k == 3) {
                char *s = xasprintf("%s,+%u more", nodes, r->n_nodes - 3);
                free(nodes);
                nodes = s;
                break;
            }
            char *s = xasprintf("%s%s%s", nodes, k ? "," : "", r->nodes[k]);
            free(nodes);
            nodes = s;
        }
        char c[64], e[64], x[64];
        fmt_time(c, sizeof(c), r->created_ms);
        fmt_time(e, sizeof(e), r->expires_ms);
        fmt_time(x, sizeof(x), r->expected_start_ms);
        tbl_cell(&t, C_NONE, "%lld", (long long)r->id);
        tbl_cell(&t, C_NONE, "%s", store_res_kind_name(r->kind));
        tbl_cell(&t, C_NONE, "%s", r->gang);
        tbl_cell(&t, C_NONE, "%s", *nodes ? nodes : "-");
        tbl_cell(&t, C_NONE, "%s", c);
        tbl_cell(&t, C_NONE, "%s", r->expires_ms == STORE_NO_TIME ? "never" : e);
        tbl_cell(&t, C_NONE, "%s", r->expected_start_ms == STORE_NO_TIME ? "unknown" : x);
        free(nodes);
    }
    if (doc) {
        tbl_free(&t);
        return emit_doc(doc);
    }
    if (db->n_resvs == 0)
        puts("no reservations");
    else
        tbl_print(stdout, &t);
    tbl_free(&t);
    return 0;
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
            "operators (need a running scheduler, --server):\n"
            "  queue hold|resume|drain QUEUE, reserve ..., checkpoint NAMESPACE/PODGROUP\n"
            "\n"
            "flags:\n"
            "  --db FILE              read this simulator or scheduler database (read-only)\n"
            "  --server URL           the scheduler's HTTP API (default $GANGSCHED_SERVER);\n"
            "                         not available in this build\n"
            "  --token-file FILE      bearer token for --server (default $GANGSCHED_TOKEN)\n"
            "  -o, --output FMT       table (default), wide, json or yaml\n"
            "  --no-color             no colour (default: colour on a terminal, unless "
            "$NO_COLOR)\n"
            "  -h, --help             this help; '%s COMMAND --help' for one command\n"
            "\n"
            "exit: 0 ok, 1 unknown queue or job, 2 usage error or not available\n",
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
     "Operator command: needs a running scheduler (--server); not available offline.\n"},
    {"reserve", "reserve ...",
     "Operator command: needs a running scheduler (--server); not available offline.\n"},
    {"checkpoint", "checkpoint NAMESPACE/PODGROUP",
     "Operator command: needs a running scheduler (--server); not available offline.\n"},
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
    fprintf(f, "usage: %s [--db FILE] [-o table|wide|json|yaml] %s\n\n%s", prog, h->synopsis,
            h->text);
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
    if ((a.queue || a.all) && strcmp(cmd, "jobs") != 0)
        return usage_error(
            a.queue ? "-q applies to jobs only, not" : "-A applies to jobs only, not", cmd);
    if (a.have_limit && strcmp(cmd, "explain") != 0)
        return usage_error("--limit applies to explain only, not", cmd);

    if (!a.server && getenv("GANGSCHED_SERVER") && *getenv("GANGSCHED_SERVER"))
        a.server = getenv("GANGSCHED_SERVER");
    if (a.server_flag && a.db) {
        fprintf(stderr, "%s: use either --db FILE or --server URL, not both\n", prog);
        return EXIT_USAGE;
    }
    if (is_operator(cmd) || (a.server && !a.db)) {
        if (a.server)
            fprintf(stderr,
                    "%s: the scheduler's HTTP API is not available in this build: use --db FILE "
                    "(server %s)\n",
                    prog, a.server);
        else
            fprintf(stderr,
                    "%s: '%s%s%s' needs a running scheduler (--server); not available offline\n",
                    prog, cmd, strcmp(cmd, "queue") == 0 ? " " : "",
                    strcmp(cmd, "queue") == 0 ? a.pos[1] : "");
        return EXIT_USAGE;
    }
    if (!a.db) {
        fprintf(stderr,
                "%s: no database: use --db FILE (a 'gangsched simulate --db' or scheduler "
                "database)\n",
                prog);
        return EXIT_USAGE;
    }
    const char *nc = getenv("NO_COLOR");
    use_color = !a.no_color && (out_fmt == OUT_TABLE || out_fmt == OUT_WIDE) &&
                isatty(STDOUT_FILENO) && !(nc && *nc);

    struct db db;
    rc = db_load(&db, a.db);
    if (rc == 0) {
        const char *arg = a.n_pos > 1 ? a.pos[1] : NULL;
        if (strcmp(cmd, "quota") == 0)
            rc = cmd_quota(&db, arg);
        else if (strcmp(cmd, "queues") == 0)
            rc = cmd_queues(&db);
        else if (strcmp(cmd, "jobs") == 0)
            rc = cmd_jobs(&db, a.queue, a.all);
        else if (strcmp(cmd, "explain") == 0)
            rc = cmd_explain(&db, arg, a.limit);
        else if (strcmp(cmd, "top") == 0)
            rc = cmd_top(&db);
        else
            rc = cmd_reservations(&db);
    }
    db_free(&db);
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
