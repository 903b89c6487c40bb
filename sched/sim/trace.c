/* sched/sim/trace.c: CSV job traces (see trace.h).
 *
 * Owns: the strict CSV reader (the whole file is read at once and parsed in place, fields are
 * slices of the buffer), the private string pool that holds job ids, queue names and file names
 * in big chunks, and the stable sort of the job table.
 * Must not touch: the cluster or the scheduler.
 */
#include "sched/sim/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- string pool ------------------------------------------------------------------------- */

#define POOL_CHUNK ((size_t)64 * 1024)

struct pool_chunk {
    struct pool_chunk *next; /* older chunk */
    size_t size;             /* bytes in data[] */
    size_t used;             /* bytes handed out */
    char data[];
};

struct trace_pool {
    struct pool_chunk *head; /* newest chunk first; allocation only ever happens in head */
};

/* Everything allocated after a mark is released by pool_rollback(). */
struct pool_mark {
    struct pool_chunk *chunk;
    size_t used;
};

static char *pool_alloc(struct trace_pool *p, size_t n)
{
    struct pool_chunk *c = p->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > POOL_CHUNK ? n : POOL_CHUNK;
        if (size > SIZE_MAX - sizeof *c)
            return NULL;
        c = malloc(sizeof *c + size);
        if (!c)
            return NULL;
        c->next = p->head;
        c->size = size;
        c->used = 0;
        p->head = c;
    }
    char *s = c->data + c->used;
    c->used += n;
    return s;
}

/* Gives back the last `n` bytes of the most recent allocation. */
static void pool_shrink(struct trace_pool *p, size_t n)
{
    p->head->used -= n;
}

static struct pool_mark pool_mark(const struct trace_pool *p)
{
    struct pool_mark m = {p->head, p->head ? p->head->used : 0};
    return m;
}

static void pool_rollback(struct trace_pool *p, struct pool_mark m)
{
    while (p->head && p->head != m.chunk) {
        struct pool_chunk *next = p->head->next;
        free(p->head);
        p->head = next;
    }
    if (p->head)
        p->head->used = m.used;
}

static void pool_free(struct trace_pool *p)
{
    pool_rollback(p, (struct pool_mark){NULL, 0});
    free(p);
}

/* ---- trace ------------------------------------------------------------------------------- */

void trace_init(struct trace *t)
{
    t->jobs = NULL;
    t->n_jobs = 0;
    t->cap_jobs = 0;
    t->files = NULL;
    t->n_files = 0;
    t->pool = NULL;
}

void trace_free(struct trace *t)
{
    if (!t)
        return;
    free(t->jobs);
    free(t->files);
    if (t->pool)
        pool_free(t->pool);
    trace_init(t);
}

static int reserve_jobs(struct trace *t, size_t want)
{
    if (want <= t->cap_jobs)
        return 0;
    size_t cap = t->cap_jobs ? t->cap_jobs : 256;
    while (cap < want)
        cap = cap > SIZE_MAX / 2 ? want : cap * 2;
    if (cap > SIZE_MAX / sizeof *t->jobs)
        return SCHED_ENOMEM;
    struct trace_job *jobs = realloc(t->jobs, cap * sizeof *jobs);
    if (!jobs)
        return SCHED_ENOMEM;
    t->jobs = jobs;
    t->cap_jobs = cap;
    return 0;
}

/* ---- parser ------------------------------------------------------------------------------ */

#define MAX_SECONDS ((int64_t)1000000000000) /* 10^12 s */
#define MAX_NUM_GPU 1000000
#define MAX_POD     100000
#define SHOW_VALUE  40  /* bytes of a bad value quoted in a message */
#define SHOW_HEADER 160 /* bytes of the header line quoted in a message */

enum col {
    COL_SUBMIT,
    COL_DURATION,
    COL_NUM_GPU,
    COL_JOB_ID,
    COL_QUEUE,
    COL_PRIORITY,
    COL_GPUS_PER_POD,
    COL_PODS,
    COL_MAX_RUNTIME,
    COL_TOPO_REQUIRED,
    COL_TOPO_PREFERRED,
    COL_TP_SIZE,
    COL_SLICE_SIZE,
    COL_SLICE_TOPOLOGY,
    COL_PROFILE,
    COL_CKPT_INTERVAL,
    COL_RESTART_COST,
    COL_TOLERATIONS,
    COL_RESOURCE,
    COL_GPUMEM,
    COL_GPUCORES,
    COL_USER,
    COL_MIN_PODS,
    COL_COUNT
};
#define COL_REQUIRED 3 /* the first three are required */

static const char *const col_names[COL_COUNT] = {
    "submission_time",
    "duration",
    "num_gpu",
    "job_id",
    "queue",
    "priority",
    "gpus_per_pod",
    "pods",
    "max_runtime",
    /* the topology columns carry the names of the PodGroup annotations without their prefix */
    "topology-required",
    "topology-preferred",
    "tp-size",
    "slice-size",
    "slice-topology",
    "profile",
    "checkpoint_interval",
    "restart_cost",
    "tolerations",
    "resource",
    "gpumem",
    "gpucores",
    "user",
    "min_pods",
};

/* One CSV field: a slice of the input. Quoted fields point between the quotes and may still hold
 * "" pairs (escaped); unquoted fields are trimmed of spaces and tabs. */
struct field {
    const char *p;
    size_t n;
    bool escaped;
};

struct parser {
    struct trace *t;
    struct sched_errbuf *eb;
    const char *name; /* for messages */
    uint32_t line;
    uint16_t file;
    const char *stem; /* pooled; default queue and id prefix */
    size_t stem_len;
    const char *last_queue; /* last queue string pooled, reused while rows repeat it */
    struct field *hdr;      /* ncols header names (trimmed) */
    struct field *row;      /* ncols fields of the current row */
    struct field *block;    /* the one allocation behind hdr and row */
    size_t ncols;
    int col[COL_COUNT]; /* header index of each known column, -1 when absent */
};

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Printable rendering of a value for messages: non-printable bytes as \xNN, "" as ", cut after
 * `limit` input bytes with "...". Always NUL-terminates `out` (cap >= 1). */
static void render(char *out, size_t cap, const char *p, size_t n, bool escaped, size_t limit)
{
    size_t o = 0, i = 0;
    while (i < n && i < limit) {
        unsigned char c = (unsigned char)p[i];
        char tmp[8];
        size_t k;
        if (escaped && c == '"' && i + 1 < n && p[i + 1] == '"')
            i++;
        if (c >= 0x20 && c < 0x7f) {
            tmp[0] = (char)c;
            k = 1;
        } else {
            snprintf(tmp, sizeof tmp, "\\x%02x", c);
            k = 4;
        }
        if (o + k + 4 > cap)
            break;
        memcpy(out + o, tmp, k);
        o += k;
        i++;
    }
    if (i < n && o + 4 <= cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

static int fail_at(struct parser *ps, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(struct parser *ps, int err, const char *fmt, ...)
{
    char msg[SCHED_ERRBUF];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sched_fail(ps->eb, err, "%s:%" PRIu32 ": %s", ps->name, ps->line, msg);
}

/* "column 'duration'" for a header column, "field 7" beyond the header (or in the header). */
static void col_label(const struct parser *ps, size_t idx, char *out, size_t cap)
{
    if (ps->hdr && idx < ps->ncols) {
        char v[4 * SHOW_VALUE + 8];
        render(v, sizeof v, ps->hdr[idx].p, ps->hdr[idx].n, ps->hdr[idx].escaped, SHOW_VALUE);
        snprintf(out, cap, "column '%s'", v);
    } else {
        snprintf(out, cap, "field %zu", idx + 1);
    }
}

/* "<file>:<line>: column '<name>': '<value>' is not <what>" */
static int fail_value(struct parser *ps, int err, size_t idx, const char *what)
{
    char label[4 * SHOW_VALUE + 32], v[4 * SHOW_VALUE + 8];
    const struct field *f = &ps->row[idx];
    col_label(ps, idx, label, sizeof label);
    render(v, sizeof v, f->p, f->n, f->escaped, SHOW_VALUE);
    return fail_at(ps, err, "%s: '%s' is not %s", label, v, what);
}

enum split_err { SPLIT_OK, SPLIT_UNTERMINATED, SPLIT_STRAY_QUOTE, SPLIT_AFTER_QUOTE };

/* Splits [p, end) into fields. Stores at most `cap` of them but counts all in *count; on error
 * *bad is the index of the offending field. */
static enum split_err split_line(const char *p, const char *end, struct field *f, size_t cap,
                                 size_t *count, size_t *bad)
{
    size_t k = 0;
    for (;;) {
        struct field cur = {NULL, 0, false};
        while (p < end && is_blank(*p))
            p++;
        if (p < end && *p == '"') {
            const char *s = ++p;
            for (;;) {
                const char *q = memchr(p, '"', (size_t)(end - p));
                if (!q) {
                    *bad = k;
                    return SPLIT_UNTERMINATED;
                }
                if (q + 1 < end && q[1] == '"') {
                    cur.escaped = true;
                    p = q + 2;
                    continue;
                }
                cur.p = s;
                cur.n = (size_t)(q - s);
                p = q + 1;
                break;
            }
            while (p < end && is_blank(*p))
                p++;
            if (p < end && *p != ',') {
                *bad = k;
                return SPLIT_AFTER_QUOTE;
            }
        } else {
            const char *s = p;
            const char *q = memchr(p, ',', (size_t)(end - p));
            if (!q)
                q = end;
            if (memchr(s, '"', (size_t)(q - s))) {
                *bad = k;
                return SPLIT_STRAY_QUOTE;
            }
            p = q;
            while (q > s && is_blank(q[-1]))
                q--;
            cur.p = s;
            cur.n = (size_t)(q - s);
        }
        if (k < cap)
            f[k] = cur;
        k++;
        if (p >= end)
            break;
        p++; /* the comma */
    }
    *count = k;
    return SPLIT_OK;
}

static int fail_split(struct parser *ps, enum split_err e, size_t bad)
{
    static const char *const what[] = {
        [SPLIT_UNTERMINATED] = "unterminated quoted field (quoted fields end on their line)",
        [SPLIT_STRAY_QUOTE] = "stray '\"' in an unquoted field",
        [SPLIT_AFTER_QUOTE] = "text after the closing '\"'",
    };
    char label[4 * SHOW_VALUE + 32];
    col_label(ps, bad, label, sizeof label);
    return fail_at(ps, SCHED_EINVAL, "%s: %s", label, what[e]);
}

enum num_status { NUM_OK, NUM_SYNTAX, NUM_NEGATIVE, NUM_DECIMALS, NUM_RANGE };

/* Plain decimal seconds ("12", "1.5", "0.125") to exact milliseconds. */
static enum num_status parse_seconds(const char *p, size_t n, int64_t *ms)
{
    size_t i = 0;
    bool neg = false, big = false, extra = false;
    int64_t whole = 0, frac = 0;
    if (i < n && p[i] == '-') {
        neg = true;
        i++;
    }
    size_t d0 = i;
    for (; i < n && is_digit(p[i]); i++) {
        if (!big) {
            whole = whole * 10 + (p[i] - '0');
            big = whole > MAX_SECONDS;
        }
    }
    if (i == d0)
        return NUM_SYNTAX;
    if (i < n && p[i] == '.') {
        size_t f0 = ++i, nd = 0;
        for (; i < n && is_digit(p[i]); i++) {
            if (nd < 3) {
                frac = frac * 10 + (p[i] - '0');
                nd++;
            } else if (p[i] != '0') {
                extra = true;
            }
        }
        if (i == f0)
            return NUM_SYNTAX;
        for (; nd < 3; nd++)
            frac *= 10;
    }
    if (i != n)
        return NUM_SYNTAX;
    if (neg)
        return NUM_NEGATIVE;
    if (extra)
        return NUM_DECIMALS;
    if (big || whole * 1000 + frac > MAX_SECONDS * 1000)
        return NUM_RANGE;
    *ms = whole * 1000 + frac;
    return NUM_OK;
}

/* Decimal integer with an optional '-'. */
static enum num_status parse_int(const char *p, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
    size_t i = 0;
    bool neg = false, big = false;
    int64_t v = 0;
    if (i < n && p[i] == '-') {
        neg = true;
        i++;
    }
    size_t d0 = i;
    for (; i < n && is_digit(p[i]); i++) {
        if (!big) {
            v = v * 10 + (p[i] - '0');
            big = v > (int64_t)10000000000; /* beyond every range used here */
        }
    }
    if (i == d0 || i != n)
        return NUM_SYNTAX;
    if (neg)
        v = -v;
    if (big || v < lo || v > hi)
        return NUM_RANGE;
    *out = v;
    return NUM_OK;
}

/* Reads column `c` as seconds. Optional columns may be empty (0). */
static int get_seconds(struct parser *ps, enum col c, int64_t *out)
{
    *out = 0;
    if (ps->col[c] < 0)
        return 0;
    size_t idx = (size_t)ps->col[c];
    const struct field *f = &ps->row[idx];
    if (f->n == 0 && c >= COL_REQUIRED)
        return 0;
    switch (parse_seconds(f->p, f->n, out)) {
    case NUM_OK:
        return 0;
    case NUM_SYNTAX:
        return fail_value(ps, SCHED_EINVAL, idx, "a number");
    case NUM_NEGATIVE:
        return fail_value(ps, SCHED_ERANGE, idx, "a number >= 0");
    case NUM_DECIMALS:
        return fail_value(ps, SCHED_EINVAL, idx, "a number with at most 3 decimals");
    case NUM_RANGE:
        break;
    }
    return fail_value(ps, SCHED_ERANGE, idx, "a number of seconds <= 1000000000000");
}

static int get_int(struct parser *ps, enum col c, int64_t lo, int64_t hi, int64_t *out)
{
    *out = 0;
    if (ps->col[c] < 0)
        return 0;
    size_t idx = (size_t)ps->col[c];
    const struct field *f = &ps->row[idx];
    if (f->n == 0 && c >= COL_REQUIRED)
        return 0;
    switch (parse_int(f->p, f->n, lo, hi, out)) {
    case NUM_OK:
        return 0;
    case NUM_RANGE: {
        char what[80];
        snprintf(what, sizeof what, "an integer in %" PRId64 "..%" PRId64, lo, hi);
        return fail_value(ps, SCHED_ERANGE, idx, what);
    }
    default:
        return fail_value(ps, SCHED_EINVAL, idx, "an integer");
    }
}

/* Copies a field's text (unescaping "") into the pool. */
static const char *pool_field(struct trace_pool *pool, const struct field *f, size_t *len)
{
    char *s = pool_alloc(pool, f->n + 1);
    if (!s)
        return NULL;
    size_t o = 0;
    if (f->escaped) {
        for (size_t i = 0; i < f->n; i++) {
            s[o++] = f->p[i];
            if (f->p[i] == '"')
                i++; /* inside quotes a '"' always comes in pairs */
        }
        pool_shrink(pool, f->n - o);
    } else {
        memcpy(s, f->p, f->n);
        o = f->n;
    }
    s[o] = '\0';
    *len = o;
    return s;
}

static const char *default_id(struct parser *ps)
{
    char num[16];
    int k = snprintf(num, sizeof num, ":%" PRIu32, ps->line);
    char *s = pool_alloc(ps->t->pool, ps->stem_len + (size_t)k + 1);
    if (!s)
        return NULL;
    memcpy(s, ps->stem, ps->stem_len);
    memcpy(s + ps->stem_len, num, (size_t)k + 1);
    return s;
}

static int parse_row(struct parser *ps, const char *p, const char *end)
{
    size_t count = 0, bad = 0;
    enum split_err e = split_line(p, end, ps->row, ps->ncols, &count, &bad);
    if (e != SPLIT_OK)
        return fail_split(ps, e, bad);
    if (count != ps->ncols)
        return fail_at(ps, SCHED_EINVAL, "expected %zu fields, found %zu", ps->ncols, count);

    struct trace_job j;
    memset(&j, 0, sizeof j);
    int64_t v;
    int rc;
    if ((rc = get_seconds(ps, COL_SUBMIT, &j.submit_ms)) ||
        (rc = get_seconds(ps, COL_DURATION, &j.duration_ms)) ||
        (rc = get_int(ps, COL_NUM_GPU, 0, MAX_NUM_GPU, &j.num_gpu)) ||
        (rc = get_seconds(ps, COL_MAX_RUNTIME, &j.max_runtime_ms)) ||
        (rc = get_seconds(ps, COL_CKPT_INTERVAL, &j.checkpoint_interval_ms)) ||
        (rc = get_seconds(ps, COL_RESTART_COST, &j.restart_cost_ms)))
        return rc;
    j.has_checkpoint_interval =
        ps->col[COL_CKPT_INTERVAL] >= 0 && ps->row[ps->col[COL_CKPT_INTERVAL]].n > 0;
    j.has_restart_cost = ps->col[COL_RESTART_COST] >= 0 && ps->row[ps->col[COL_RESTART_COST]].n > 0;
    if ((rc = get_int(ps, COL_PRIORITY, INT32_MIN, INT32_MAX, &v)))
        return rc;
    j.priority = (int32_t)v;
    if ((rc = get_int(ps, COL_GPUS_PER_POD, 1, MAX_POD, &v)))
        return rc;
    j.gpus_per_pod = (int32_t)v;
    if ((rc = get_int(ps, COL_PODS, 1, MAX_POD, &v)))
        return rc;
    j.pods = (int32_t)v;
    if ((rc = get_int(ps, COL_MIN_PODS, 1, MAX_POD, &v)))
        return rc;
    j.min_pods = (int32_t)v;
    if ((rc = get_int(ps, COL_TP_SIZE, 1, MAX_POD, &v)))
        return rc;
    j.tp_size = (int32_t)v;
    if ((rc = get_int(ps, COL_SLICE_SIZE, 1, MAX_POD, &v)))
        return rc;
    j.slice_size = (int32_t)v;
    if ((rc = get_int(ps, COL_GPUMEM, 1, 1ll << 40, &v)))
        return rc;
    j.gpumem_mib = v;
    if ((rc = get_int(ps, COL_GPUCORES, 0, 100, &v)))
        return rc;
    j.gpucores = (int32_t)v;

    struct trace_pool *pool = ps->t->pool;
    size_t len;
    static const enum col str_cols[7] = {COL_TOPO_REQUIRED, COL_TOPO_PREFERRED, COL_SLICE_TOPOLOGY,
                                         COL_PROFILE,       COL_TOLERATIONS,    COL_RESOURCE,
                                         COL_USER};
    const char **str_out[7] = {&j.topology_required,
                               &j.topology_preferred,
                               &j.slice_topology,
                               &j.profile,
                               &j.tolerations,
                               &j.resource,
                               &j.user};
    for (int k = 0; k < 7; k++) {
        int col = ps->col[str_cols[k]];
        if (col >= 0 && ps->row[col].n > 0 &&
            !(*str_out[k] = pool_field(pool, &ps->row[col], &len)))
            return fail_at(ps, SCHED_ENOMEM, "out of memory");
    }
    if (j.user && !trace_utf8_valid(j.user)) /* it reaches JSON: the store's views, gangctl */
        return fail_value(ps, SCHED_EINVAL, (size_t)ps->col[COL_USER], "UTF-8 text");
    int c = ps->col[COL_JOB_ID];
    if (c >= 0 && ps->row[c].n > 0)
        j.id = pool_field(pool, &ps->row[c], &len);
    else
        j.id = default_id(ps);
    if (!j.id)
        return fail_at(ps, SCHED_ENOMEM, "out of memory");
    if (c >= 0 && ps->row[c].n > 0 && !trace_utf8_valid(j.id))
        return fail_value(ps, SCHED_EINVAL, (size_t)c, "UTF-8 text");

    c = ps->col[COL_QUEUE];
    if (c >= 0 && ps->row[c].n > 0) {
        const char *q = pool_field(pool, &ps->row[c], &len);
        if (!q)
            return fail_at(ps, SCHED_ENOMEM, "out of memory");
        if (ps->last_queue && strcmp(ps->last_queue, q) == 0) {
            pool_shrink(pool, len + 1); /* same queue as the row before: share its string */
            q = ps->last_queue;
        }
        ps->last_queue = q;
        j.queue = q;
    } else {
        j.queue = ps->stem;
    }
    j.line = ps->line;
    j.file = ps->file;

    if (reserve_jobs(ps->t, ps->t->n_jobs + 1))
        return fail_at(ps, SCHED_ENOMEM, "out of memory");
    ps->t->jobs[ps->t->n_jobs++] = j;
    return 0;
}

static int parse_header(struct parser *ps, const char *p, const char *end)
{
    size_t commas = 0;
    for (const char *q = p; (q = memchr(q, ',', (size_t)(end - q))) != NULL; q++)
        commas++;
    size_t cap = commas + 1;
    if (cap > SIZE_MAX / (2 * sizeof(struct field)))
        return fail_at(ps, SCHED_ENOMEM, "out of memory");
    struct field *f = malloc(2 * cap * sizeof *f);
    if (!f)
        return fail_at(ps, SCHED_ENOMEM, "out of memory");
    ps->block = f;
    ps->row = f + cap;
    size_t count = 0, bad = 0;
    enum split_err e = split_line(p, end, f, cap, &count, &bad);
    ps->hdr = f;
    if (e != SPLIT_OK) {
        ps->hdr = NULL; /* messages say "field N" */
        return fail_split(ps, e, bad);
    }
    ps->ncols = count;
    for (int c = 0; c < COL_COUNT; c++)
        ps->col[c] = -1;
    for (size_t i = 0; i < count; i++) {
        while (f[i].n > 0 && is_blank(f[i].p[0])) {
            f[i].p++;
            f[i].n--;
        }
        while (f[i].n > 0 && is_blank(f[i].p[f[i].n - 1]))
            f[i].n--;
        for (int c = 0; c < COL_COUNT; c++) {
            if (strlen(col_names[c]) != f[i].n || memcmp(col_names[c], f[i].p, f[i].n) != 0)
                continue;
            if (ps->col[c] >= 0)
                return fail_at(ps, SCHED_EINVAL, "column '%s' appears twice in the header",
                               col_names[c]);
            ps->col[c] = (int)i;
        }
    }
    for (int c = 0; c < COL_REQUIRED; c++) {
        if (ps->col[c] >= 0)
            continue;
        char h[4 * SHOW_HEADER + 8];
        render(h, sizeof h, p, (size_t)(end - p), false, SHOW_HEADER);
        return fail_at(ps, SCHED_EINVAL, "missing required column '%s' (header: %s)", col_names[c],
                       h);
    }
    return 0;
}

/* Basename without its last extension; "trace" when that is empty. */
static const char *pool_stem(struct trace_pool *pool, const char *name, size_t *len)
{
    const char *b = strrchr(name, '/');
    b = b ? b + 1 : name;
    const char *dot = strrchr(b, '.');
    size_t n = dot && dot > b ? (size_t)(dot - b) : strlen(b);
    if (n == 0) {
        b = "trace";
        n = 5;
    }
    char *s = pool_alloc(pool, n + 1);
    if (!s)
        return NULL;
    memcpy(s, b, n);
    s[n] = '\0';
    *len = n;
    return s;
}

static int parse_lines(struct parser *ps, const char *data, size_t len)
{
    const char *p = data, *end = data + len;
    bool have_header = false;
    int rc = 0;

    if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
        p += 3; /* UTF-8 byte order mark */
    while (p < end) {
        if (ps->line == UINT32_MAX)
            return fail_at(ps, SCHED_ERANGE, "too many lines");
        ps->line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (le > p && le[-1] == '\r')
            le--;
        const char *q = p;
        while (q < le && is_blank(*q))
            q++;
        if (q < le) {
            rc = have_header ? parse_row(ps, p, le) : parse_header(ps, p, le);
            if (rc)
                return rc;
            have_header = true;
        }
        p = next;
    }
    if (!have_header) {
        ps->line = 1;
        return fail_at(ps, SCHED_EINVAL, "empty file: no header line");
    }
    return 0;
}

size_t trace_utf8_seq(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
               : s[0] >= 0xe0 && s[0] <= 0xef ? 3
               : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                              : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0; /* overlong forms, surrogates, past U+10FFFF */
    return n;
}

bool trace_utf8_valid(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = trace_utf8_seq(p);
        if (!n)
            return false;
        p += n;
    }
    return true;
}

static const struct trace *ids_t;

static int cmp_id(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int k = strcmp(ids_t->jobs[x].id, ids_t->jobs[y].id);
    return k ? k : (x > y) - (x < y);
}

/* Job ids are the store's keys: two rows with one id (in this file, or this file and an earlier
 * one) are refused at the later row, naming the first. */
static int check_ids(const struct trace *t, size_t first_new, const char *name,
                     struct sched_errbuf *eb)
{
    size_t n = t->n_jobs;
    if (n - first_new == 0 || n < 2)
        return 0;
    size_t *ix = malloc(n * sizeof(*ix));
    if (!ix)
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", name);
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    ids_t = t;
    qsort(ix, n, sizeof(*ix), cmp_id);
    size_t best = SIZE_MAX, first = 0;
    for (size_t i = 1; i < n; i++) {
        if (strcmp(t->jobs[ix[i]].id, t->jobs[ix[i - 1]].id) != 0)
            continue;
        size_t g = i - 1; /* the group's first row (lowest index: earliest file and line) */
        while (i < n && strcmp(t->jobs[ix[i]].id, t->jobs[ix[g]].id) == 0) {
            if (ix[i] >= first_new && ix[i] < best) {
                best = ix[i];
                first = ix[g];
            }
            i++;
        }
    }
    int rc = 0;
    if (best != SIZE_MAX) {
        char q[160];
        sched_quote(t->jobs[best].id, strlen(t->jobs[best].id), q, sizeof(q));
        const struct trace_job *a = &t->jobs[first];
        const char *afile = a->file < t->n_files ? t->files[a->file] : name;
        rc = sched_fail(eb, SCHED_EEXIST,
                        "%s:%" PRIu32 ": job id '%s' is already used at %s:%" PRIu32
                        " (ids must be unique)",
                        name, t->jobs[best].line, q, afile, a->line);
    }
    free(ix);
    return rc;
}

int trace_parse(struct trace *t, const char *name, const char *data, size_t len,
                struct sched_errbuf *eb)
{
    if (!name)
        name = "trace";
    if (!t || (!data && len > 0))
        return sched_fail(eb, SCHED_EINVAL, "%s: no trace or no data", name);
    if (!data)
        data = "";

    struct parser ps;
    memset(&ps, 0, sizeof ps);
    ps.t = t;
    ps.eb = eb;
    ps.name = name;

    const char *nul = memchr(data, '\0', len);
    if (nul) {
        ps.line = 1;
        for (const char *q = data; (q = memchr(q, '\n', (size_t)(nul - q))) != NULL; q++)
            ps.line++;
        return fail_at(&ps, SCHED_EINVAL, "NUL byte in the data (not a text file?)");
    }
    if (t->n_files > UINT16_MAX)
        return sched_fail(eb, SCHED_EFULL, "%s: too many trace files (at most %d)", name,
                          UINT16_MAX + 1);
    if (!t->pool) {
        t->pool = calloc(1, sizeof *t->pool);
        if (!t->pool)
            return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", name);
    }
    char **files = realloc(t->files, (t->n_files + 1) * sizeof *files);
    if (!files)
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", name);
    t->files = files;

    size_t old_jobs = t->n_jobs;
    struct pool_mark mark = pool_mark(t->pool);
    int rc = SCHED_ENOMEM;
    size_t name_len = strlen(name);
    char *fname = pool_alloc(t->pool, name_len + 1);
    ps.stem = pool_stem(t->pool, name, &ps.stem_len);
    if (!fname || !ps.stem) {
        sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", name);
        goto fail;
    }
    memcpy(fname, name, name_len + 1);
    ps.file = (uint16_t)t->n_files;

    /* One allocation for every row: at most one per line, and a row takes at least 6 bytes
     * ("0,0,0" and its newline). */
    size_t lines = 1;
    for (const char *q = data; (q = memchr(q, '\n', len - (size_t)(q - data))) != NULL; q++)
        lines++;
    if (lines > len / 6 + 1)
        lines = len / 6 + 1;
    if (lines > SIZE_MAX - t->n_jobs || reserve_jobs(t, t->n_jobs + lines)) {
        sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", name);
        goto fail;
    }

    rc = parse_lines(&ps, data, len);
    free(ps.block);
    if (!rc)
        rc = check_ids(t, old_jobs, name, eb);
    if (rc)
        goto fail;
    t->files[t->n_files++] = fname;
    return 0;

fail:
    t->n_jobs = old_jobs;
    pool_rollback(t->pool, mark);
    return rc;
}

/* ---- reading files ----------------------------------------------------------------------- */

static int read_all(const char *path, char **out, size_t *out_len, struct sched_errbuf *eb)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return sched_fail(eb, e == ENOENT ? SCHED_ENOENT : SCHED_EIO, "%s: cannot open: %s", path,
                          strerror(e));
    }
    struct stat st;
    size_t cap = 64 * 1024;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > TRACE_MAX_FILE) {
        close(fd);
        return sched_fail(eb, SCHED_ERANGE, "%s: larger than %llu bytes (a trace's limit)", path,
                          (unsigned long long)TRACE_MAX_FILE);
    }
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
        (uintmax_t)st.st_size < SIZE_MAX - 1)
        cap = (size_t)st.st_size + 1; /* +1: EOF is seen without growing */
    char *buf = malloc(cap);
    size_t len = 0;
    if (!buf) {
        close(fd);
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
    }
    if (cap > TRACE_MAX_FILE + 1)
        cap = TRACE_MAX_FILE + 1;
    for (;;) {
        if (len > TRACE_MAX_FILE) {
            free(buf);
            close(fd);
            return sched_fail(eb, SCHED_ERANGE, "%s: larger than %llu bytes (a trace's limit)",
                              path, (unsigned long long)TRACE_MAX_FILE);
        }
        if (len == cap) {
            size_t ncap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
            if (ncap > TRACE_MAX_FILE + 1)
                ncap = TRACE_MAX_FILE + 1;
            char *nbuf = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!nbuf) {
                free(buf);
                close(fd);
                return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
            }
            buf = nbuf;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return sched_fail(eb, SCHED_EIO, "%s: cannot read: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    *out = buf;
    *out_len = len;
    return 0;
}

int trace_read(struct trace *t, const char *path, struct sched_errbuf *eb)
{
    if (!t || !path)
        return sched_fail(eb, SCHED_EINVAL, "trace_read: no trace or no path");
    char *buf = NULL;
    size_t len = 0;
    int rc = read_all(path, &buf, &len, eb);
    if (rc)
        return rc;
    rc = trace_parse(t, path, buf, len, eb);
    free(buf);
    return rc;
}

/* ---- sorting ----------------------------------------------------------------------------- */

/* The full key: (file, line) is unique in a trace, so the order is total. */
static bool job_before(const struct trace_job *a, const struct trace_job *b)
{
    if (a->submit_ms != b->submit_ms)
        return a->submit_ms < b->submit_ms;
    if (a->file != b->file)
        return a->file < b->file;
    return a->line < b->line;
}

static int job_cmp(const void *pa, const void *pb)
{
    const struct trace_job *a = pa, *b = pb;
    return job_before(a, b) ? -1 : job_before(b, a) ? 1 : 0;
}

/* Stable top-down merge sort; tmp holds at least n/2 + 1 jobs. */
static void merge_sort(struct trace_job *a, struct trace_job *tmp, size_t n)
{
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            struct trace_job x = a[i];
            size_t k = i;
            for (; k > 0 && job_before(&x, &a[k - 1]); k--)
                a[k] = a[k - 1];
            a[k] = x;
        }
        return;
    }
    size_t h = n / 2;
    merge_sort(a, tmp, h);
    merge_sort(a + h, tmp, n - h);
    if (!job_before(&a[h], &a[h - 1]))
        return; /* already in order */
    memcpy(tmp, a, h * sizeof *a);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        a[k++] = job_before(&a[j], &tmp[i]) ? a[j++] : tmp[i++];
    while (i < h)
        a[k++] = tmp[i++];
}

void trace_sort(struct trace *t)
{
    if (!t || t->n_jobs < 2)
        return;
    size_t n = t->n_jobs, i = 1;
    while (i < n && !job_before(&t->jobs[i], &t->jobs[i - 1]))
        i++;
    if (i == n)
        return; /* already sorted (the usual case for one trace file) */
    struct trace_job *tmp = malloc((n / 2 + 1) * sizeof *tmp);
    if (tmp) {
        merge_sort(t->jobs, tmp, n);
        free(tmp);
    } else {
        qsort(t->jobs, n, sizeof *t->jobs, job_cmp); /* total key: same order */
    }
}
