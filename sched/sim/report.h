/* sched/sim/report.h: the simulator's self-contained HTML report.
 *
 * Owns: rendering one HTML page with inline SVG charts (no scripts, no external resources):
 * a table of the summary metrics (with human labels), GPU utilisation over time, queue length
 * over time (one line per policy on shared axes, told apart by colour and dashes), the queue-time
 * CDF per policy, a per-queue section (a table of each queue's figures, and per queue its GPUs in
 * use against its nominal quota over time, borrowing shaded, and its queue-time CDF), and a
 * heat map of GPU use by rack.
 * Must not touch: simulation state; it renders what it is given.
 */
#ifndef SCHED_SIM_REPORT_H
#define SCHED_SIM_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "sched/core/err.h"

struct report_point {
    double t_s;    /* simulated seconds since the first submission */
    double util;   /* busy GPUs / total GPUs, 0..1, at that instant */
    double queued; /* gangs waiting at that instant */
};

struct report_metric {
    const char *name; /* "mean_queue_s", ...: the JSON key, which also selects the format */
    double value;
    const char *label; /* "mean queue time": what the page shows; NULL = the name */
};

/* One queue of the configuration (the same queues, in the same order, for every policy). */
struct report_queue {
    const char *name;
    double nominal_gpus;                 /* nvidia.com/gpu nominal quota, all flavors */
    const struct report_metric *metrics; /* the queue's figures under this policy */
    size_t n_metrics;
};

/* GPU use of one rack (the cluster's rack level; nodes without one count as their own). */
struct report_rack {
    const char *name;
    double gpus;  /* GPUs of its nodes */
    double gpu_s; /* GPU-seconds its nodes ran pods for */
};

struct report_policy {
    const char *name;
    const struct report_point *series; /* time-ordered */
    size_t n_series;
    const double *queue_s; /* queue time of every started job, seconds, any order */
    size_t n_queue_s;
    const struct report_metric *metrics;
    size_t n_metrics;
    /* optional (NULL / 0: the section is left out) */
    const struct report_queue *queues;
    size_t n_queues;
    const double *queue_used; /* [n_series][n_queues]: GPUs admitted per queue at each point */
    const uint32_t *queue_of; /* [n_queue_s]: the queue of each queue time */
    const struct report_rack *racks;
    size_t n_racks;
    double span_s; /* the run's length: a rack's use is gpu_s / (gpus x span_s) */
};

/* Writes the page to `path`. `title` is shown on top (cluster and trace names). */
int report_write_html(const char *path, const char *title, const struct report_policy *p, size_t n,
                      struct sched_errbuf *eb);

#endif
