/* sched/http/metrics.h: a small Prometheus metrics registry (counters, gauges, histograms with
 * labels) and its text exposition format (version 0.0.4), served on /metrics.
 *
 * Owns: the families and series registered in one registry, and their rendering.
 * Must not touch: what the numbers mean (callers register and update their own families: the
 * daemon its cycles and binds, the server its requests, serve.c what a database holds).
 *
 * Threads: a registry is used by one thread (the daemon's loop). Errors: SCHED_EINVAL for a bad
 * name, label count or type; SCHED_ENOMEM. Names follow [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 * [a-zA-Z_][a-zA-Z0-9_]*; label values are any text (escaped when rendered).
 */
#ifndef SCHED_HTTP_METRICS_H
#define SCHED_HTTP_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "sched/core/err.h"

#define HTTP_METRIC_MAX_LABELS  4
#define HTTP_METRIC_MAX_BUCKETS 24

enum http_metric_type { HTTP_COUNTER = 0, HTTP_GAUGE, HTTP_HISTOGRAM };

struct http_metrics;
struct http_metric;

struct http_metrics *http_metrics_new(void);
void http_metrics_free(struct http_metrics *m);

/* Registers a family (or returns the one of that name when type and labels match). labels:
 * n_labels names; buckets: histogram upper bounds, ascending (+Inf is implicit). *out is owned by
 * the registry. */
int http_metric_add(struct http_metrics *m, const char *name, const char *help,
                    enum http_metric_type type, const char *const *labels, uint32_t n_labels,
                    const double *buckets, uint32_t n_buckets, struct http_metric **out);

/* Counter: adds v >= 0; gauge: adds v (any sign). values: one per label. */
int http_metric_add_value(struct http_metric *f, const char *const *values, double v);
/* Gauge only: sets the value. */
int http_metric_set(struct http_metric *f, const char *const *values, double v);
/* Histogram only: records one observation. */
int http_metric_observe(struct http_metric *f, const char *const *values, double v);

/* Appends the text exposition of every family, in registration order, to *buf (a malloc'd
 * string of *len bytes, NUL-terminated; *buf may be NULL to start). */
int http_metrics_render(const struct http_metrics *m, char **buf, size_t *len);

/* Registers and sets, in `m`, gangsched_build_info{version} and the process_* families of the
 * Prometheus client libraries (CPU seconds, start time, memory, file descriptors; read from
 * /proc, left out where it is missing). Call once per rendering, on a fresh registry. */
int http_metrics_process(struct http_metrics *m);

#endif
