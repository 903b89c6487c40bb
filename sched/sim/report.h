/* sched/sim/report.h: the simulator's self-contained HTML report.
 *
 * Owns: rendering one HTML page with inline SVG charts (no scripts, no external resources):
 * GPU utilisation over time, queue length over time (one line per policy on shared axes), the
 * queue-time CDF per policy, and a table of the summary metrics.
 * Must not touch: simulation state; it renders what it is given.
 */
#ifndef SCHED_SIM_REPORT_H
#define SCHED_SIM_REPORT_H

#include <stddef.h>

#include "sched/core/err.h"

struct report_point {
    double t_s;    /* simulated seconds since the first submission */
    double util;   /* busy GPUs / total GPUs, 0..1, at that instant */
    double queued; /* gangs waiting at that instant */
};

struct report_metric {
    const char *name; /* "mean_queue_s", ... */
    double value;
};

struct report_policy {
    const char *name;
    const struct report_point *series; /* time-ordered */
    size_t n_series;
    const double *queue_s; /* queue time of every started job, seconds, any order */
    size_t n_queue_s;
    const struct report_metric *metrics;
    size_t n_metrics;
};

/* Writes the page to `path`. `title` is shown on top (cluster and trace names). */
int report_write_html(const char *path, const char *title, const struct report_policy *p, size_t n,
                      struct sched_errbuf *eb);

#endif
