/* sched/http/metrics.c: the metrics registry and its Prometheus text rendering; see metrics.h.
 *
 * Owns: families (name, help, type, label names, buckets) and their series (label values, value
 * or bucket counts, sum and count), kept in registration and creation order.
 * Must not touch: anything outside the registry; the meaning of the numbers.
 */
#include "sched/http/metrics.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct series {
    struct series *next;
    char *values[HTTP_METRIC_MAX_LABELS];
    double value; /* counter, gauge; histogram: sum */
    uint64_t count;
    uint64_t buckets[HTTP_METRIC_MAX_BUCKETS];
};

struct http_metric {
    struct http_metric *next;
    char *name, *help;
    enum http_metric_type type;
    char *labels[HTTP_METRIC_MAX_LABELS];
    uint32_t n_labels;
    double bounds[HTTP_METRIC_MAX_BUCKETS];
    uint32_t n_bounds;
    struct series *series, *last;
};

struct http_metrics {
    struct http_metric *first, *last;
};

static char *mdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static bool name_ok(const char *s, bool colon)
{
    if (!s || !*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || (colon && *s == ':')))
            return false;
    return true;
}

struct http_metrics *http_metrics_new(void)
{
    return calloc(1, sizeof(struct http_metrics));
}

static void free_family(struct http_metric *f)
{
    for (struct series *s = f->series, *n; s; s = n) {
        n = s->next;
        for (uint32_t i = 0; i < f->n_labels; i++)
            free(s->values[i]);
        free(s);
    }
    for (uint32_t i = 0; i < f->n_labels; i++)
        free(f->labels[i]);
    free(f->name);
    free(f->help);
    free(f);
}

void http_metrics_free(struct http_metrics *m)
{
    if (!m)
        return;
    for (struct http_metric *f = m->first, *n; f; f = n) {
        n = f->next;
        free_family(f);
    }
    free(m);
}

static struct series *find_series(struct http_metric *f, const char *const *values, int *err)
{
    for (uint32_t i = 0; i < f->n_labels; i++)
        if (!values || !values[i]) {
            *err = SCHED_EINVAL;
            return NULL;
        }
    for (struct series *s = f->series; s; s = s->next) {
        uint32_t i = 0;
        while (i < f->n_labels && strcmp(s->values[i], values[i]) == 0)
            i++;
        if (i == f->n_labels)
            return s;
    }
    struct series *s = calloc(1, sizeof(*s));
    if (!s) {
        *err = SCHED_ENOMEM;
        return NULL;
    }
    for (uint32_t i = 0; i < f->n_labels; i++)
        if (!(s->values[i] = mdup(values[i]))) {
            for (uint32_t k = 0; k < i; k++)
                free(s->values[k]);
            free(s);
            *err = SCHED_ENOMEM;
            return NULL;
        }
    if (f->last)
        f->last->next = s;
    else
        f->series = s;
    f->last = s;
    return s;
}

int http_metric_add(struct http_metrics *m, const char *name, const char *help,
                    enum http_metric_type type, const char *const *labels, uint32_t n_labels,
                    const double *buckets, uint32_t n_buckets, struct http_metric **out)
{
    if (!m || !name_ok(name, true) || n_labels > HTTP_METRIC_MAX_LABELS ||
        n_buckets > HTTP_METRIC_MAX_BUCKETS || (unsigned)type > HTTP_HISTOGRAM ||
        (n_labels && !labels) || (n_buckets && !buckets))
        return SCHED_EINVAL;
    for (uint32_t i = 0; i < n_labels; i++)
        if (!name_ok(labels[i], false) || strcmp(labels[i], "le") == 0)
            return SCHED_EINVAL;
    for (uint32_t i = 0; i < n_buckets; i++)
        if (!isfinite(buckets[i]) || (i > 0 && buckets[i] <= buckets[i - 1]))
            return SCHED_EINVAL;
    for (struct http_metric *f = m->first; f; f = f->next)
        if (strcmp(f->name, name) == 0) {
            if (f->type != type || f->n_labels != n_labels)
                return SCHED_EINVAL;
            *out = f;
            return 0;
        }
    struct http_metric *f = calloc(1, sizeof(*f));
    if (!f)
        return SCHED_ENOMEM;
    f->name = mdup(name);
    f->help = mdup(help ? help : "");
    f->type = type;
    bool oom = !f->name || !f->help;
    for (uint32_t i = 0; i < n_labels; i++) {
        f->labels[i] = mdup(labels[i]);
        oom = oom || !f->labels[i];
    }
    f->n_labels = n_labels;
    if (type == HTTP_HISTOGRAM) {
        memcpy(f->bounds, buckets, n_buckets * sizeof(*buckets));
        f->n_bounds = n_buckets;
    }
    if (oom) {
        free_family(f);
        return SCHED_ENOMEM;
    }
    /* a family without labels has its one series from the start, 0 until told otherwise, as
     * Prometheus' client libraries export an unlabelled counter (a rule on its increase sees
     * the first one, not a series appearing) */
    int err = 0;
    if (n_labels == 0 && !find_series(f, NULL, &err)) {
        free_family(f);
        return err;
    }
    if (m->last)
        m->last->next = f;
    else
        m->first = f;
    m->last = f;
    *out = f;
    return 0;
}

int http_metric_add_value(struct http_metric *f, const char *const *values, double v)
{
    if (!f || f->type == HTTP_HISTOGRAM || !isfinite(v) || (f->type == HTTP_COUNTER && v < 0))
        return SCHED_EINVAL;
    int err = 0;
    struct series *s = find_series(f, values, &err);
    if (s)
        s->value += v;
    return err;
}

int http_metric_set(struct http_metric *f, const char *const *values, double v)
{
    if (!f || f->type != HTTP_GAUGE || isnan(v))
        return SCHED_EINVAL;
    int err = 0;
    struct series *s = find_series(f, values, &err);
    if (s)
        s->value = v;
    return err;
}

int http_metric_observe(struct http_metric *f, const char *const *values, double v)
{
    if (!f || f->type != HTTP_HISTOGRAM || isnan(v))
        return SCHED_EINVAL;
    int err = 0;
    struct series *s = find_series(f, values, &err);
    if (!s)
        return err;
    for (uint32_t i = 0; i < f->n_bounds; i++)
        if (v <= f->bounds[i])
            s->buckets[i]++;
    s->count++;
    s->value += v;
    return 0;
}

/* ---- rendering ------------------------------------------------------------------------------ */

struct out {
    char *p;
    size_t n, cap;
    bool oom;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    if (o->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(o->p ? o->p + o->n : NULL, o->p ? o->cap - o->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            o->oom = true;
            return;
        }
        if (o->p && o->n + (size_t)k < o->cap) {
            o->n += (size_t)k;
            return;
        }
        size_t c = o->cap ? o->cap * 2 : 4096;
        while (c <= o->n + (size_t)k)
            c *= 2;
        char *q = realloc(o->p, c);
        if (!q) {
            o->oom = true;
            return;
        }
        o->p = q;
        o->cap = c;
    }
}

static void put_escaped(struct out *o, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            put(o, "\\\\");
        else if (*s == '\n')
            put(o, "\\n");
        else if (*s == '"' && quote)
            put(o, "\\\"");
        else
            put(o, "%c", *s);
    }
}

static void put_num(struct out *o, double v)
{
    if (isnan(v))
        put(o, "NaN");
    else if (isinf(v))
        put(o, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        put(o, "%.0f", v);
    else
        put(o, "%.17g", v);
}

static void put_labels(struct out *o, const struct http_metric *f, const struct series *s,
                       const char *le)
{
    if (f->n_labels == 0 && !le)
        return;
    put(o, "{");
    for (uint32_t i = 0; i < f->n_labels; i++) {
        put(o, "%s%s=\"", i ? "," : "", f->labels[i]);
        put_escaped(o, s->values[i], true);
        put(o, "\"");
    }
    if (le)
        put(o, "%sle=\"%s\"", f->n_labels ? "," : "", le);
    put(o, "}");
}

int http_metrics_render(const struct http_metrics *m, char **buf, size_t *len)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    struct out o = {*buf, *len, *buf ? *len + 1 : 0, false};
    for (const struct http_metric *f = m ? m->first : NULL; f; f = f->next) {
        put(&o, "# HELP %s ", f->name);
        put_escaped(&o, f->help, false);
        put(&o, "\n# TYPE %s %s\n", f->name, types[f->type]);
        for (const struct series *s = f->series; s; s = s->next) {
            if (f->type != HTTP_HISTOGRAM) {
                put(&o, "%s", f->name);
                put_labels(&o, f, s, NULL);
                put(&o, " ");
                put_num(&o, s->value);
                put(&o, "\n");
                continue;
            }
            for (uint32_t i = 0; i < f->n_bounds; i++) {
                char le[40];
                if (f->bounds[i] == floor(f->bounds[i]) && fabs(f->bounds[i]) < 1e15)
                    snprintf(le, sizeof(le), "%.1f", f->bounds[i]);
                else
                    snprintf(le, sizeof(le), "%.17g", f->bounds[i]);
                put(&o, "%s_bucket", f->name);
                put_labels(&o, f, s, le);
                put(&o, " %llu\n", (unsigned long long)s->buckets[i]);
            }
            put(&o, "%s_bucket", f->name);
            put_labels(&o, f, s, "+Inf");
            put(&o, " %llu\n%s_sum", (unsigned long long)s->count, f->name);
            put_labels(&o, f, s, NULL);
            put(&o, " ");
            put_num(&o, s->value);
            put(&o, "\n%s_count", f->name);
            put_labels(&o, f, s, NULL);
            put(&o, " %llu\n", (unsigned long long)s->count);
        }
    }
    if (!o.p)
        put(&o, "%s", "");
    if (o.oom) {
        *buf = o.p;
        return SCHED_ENOMEM;
    }
    *buf = o.p;
    *len = o.n;
    return 0;
}

/* ---- build and process ------------------------------------------------------------------------
 * The families every Prometheus client library exports: gangsched_build_info, and process_*
 * from /proc (Linux; left out elsewhere), read when the page is rendered. */

#ifndef GANGSCHED_VERSION
#define GANGSCHED_VERSION "0.1.0"
#endif

/* Fields 14 (utime), 15 (stime), 22 (starttime), 23 (vsize), 24 (rss) of /proc/self/stat. */
static bool proc_stat(double *cpu_s, double *start_s, double *vsize, double *rss)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long ut, st, start, vs;
    long long rs;
    if (!p || sscanf(p + 2,
                     "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
                     "%*d %llu %llu %lld",
                     &ut, &st, &start, &vs, &rs) != 5)
        return false;
    long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    double boot = 0;
    f = fopen("/proc/stat", "r");
    for (char line[256]; f && fgets(line, sizeof(line), f);)
        if (sscanf(line, "btime %lf", &boot) == 1)
            break;
    if (f)
        fclose(f);
    if (hz <= 0 || page <= 0 || boot <= 0)
        return false;
    *cpu_s = (double)(ut + st) / (double)hz;
    *start_s = boot + (double)start / (double)hz;
    *vsize = (double)vs;
    *rss = (double)rs * (double)page;
    return true;
}

static double open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    double n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

int http_metrics_process(struct http_metrics *m)
{
    static const char *const ver[] = {"version"};
    static const char *const val[] = {GANGSCHED_VERSION};
    struct http_metric *f = NULL;
    int err = http_metric_add(m, "gangsched_build_info",
                              "1, labelled with the version of the running gangsched", HTTP_GAUGE,
                              ver, 1, NULL, 0, &f);
    if (!err)
        err = http_metric_set(f, val, 1);
    double cpu, start, vsize, rss, fds = open_fds();
    if (err || !proc_stat(&cpu, &start, &vsize, &rss))
        return err;
    struct rlimit rl;
    const struct {
        const char *name, *help;
        enum http_metric_type type;
        double v;
    } rows[] = {
        {"process_cpu_seconds_total", "Total user and system CPU time spent in seconds",
         HTTP_COUNTER, cpu},
        {"process_start_time_seconds", "Start time of the process since unix epoch in seconds",
         HTTP_GAUGE, start},
        {"process_virtual_memory_bytes", "Virtual memory size in bytes", HTTP_GAUGE, vsize},
        {"process_resident_memory_bytes", "Resident memory size in bytes", HTTP_GAUGE, rss},
        {"process_open_fds", "Number of open file descriptors", HTTP_GAUGE, fds},
        {"process_max_fds", "Maximum number of open file descriptors", HTTP_GAUGE,
         getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (double)rl.rlim_cur
                                                                            : -1},
    };
    for (size_t i = 0; !err && i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (rows[i].v < 0)
            continue;
        err = http_metric_add(m, rows[i].name, rows[i].help, rows[i].type, NULL, 0, NULL, 0, &f);
        if (!err && rows[i].type == HTTP_COUNTER)
            err = http_metric_add_value(f, NULL, rows[i].v);
        else if (!err)
            err = http_metric_set(f, NULL, rows[i].v);
    }
    return err;
}
