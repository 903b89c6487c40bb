/* sched/sim/summary.c: the simulator's results for people and programs: the summary table, the
 * JSON object (--json) and the HTML report's inputs (--report), all from one table of rows
 * (label, JSON key, format), so the three always show the same figures under the same names.
 *
 * Owns: stat_rows[] and the three renderings of struct sim_stats.
 * Must not touch: the simulation; the page itself is report.c's.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sched/core/device.h"
#include "sched/sim/report.h"
#include "sched/sim/sim.h"

enum row_fmt { F_COUNT, F_DUR, F_PCT, F_F1, F_F2 };
enum row_type { T_U32, T_U64, T_DBL };

struct stat_row {
    const char *label; /* the table's row and the report's label */
    const char *key;   /* the JSON key and the report's metric name */
    enum row_fmt fmt;
    enum row_type type;
    size_t off;   /* of the field in struct sim_stats */
    uint8_t only; /* 0: always; SHOW_FAILURES: in the table only when the run had failures;
                     SHOW_ELASTIC: only when the trace has elastic jobs (JSON too) */
};

#define SHOW_FAILURES 1
#define SHOW_ELASTIC  2
#define ROW(label, key, fmt, type, field, fail)                                                    \
    {                                                                                              \
        label, key, fmt, type, offsetof(struct sim_stats, field), fail                             \
    }

static const struct stat_row stat_rows[] = {
    ROW("jobs completed", "completed", F_COUNT, T_U32, completed, 0),
    ROW("jobs rejected (never fit)", "rejected", F_COUNT, T_U32, rejected, 0),
    ROW("jobs never started", "never_started", F_COUNT, T_U32, never_started, 0),
    ROW("mean queue time", "mean_queue_s", F_DUR, T_DBL, mean_queue_s, 0),
    ROW("mean wait (with re-waits)", "mean_wait_s", F_DUR, T_DBL, mean_wait_s, 0),
    ROW("p50 queue time", "p50_queue_s", F_DUR, T_DBL, p50_queue_s, 0),
    ROW("p95 queue time", "p95_queue_s", F_DUR, T_DBL, p95_queue_s, 0),
    ROW("p99 queue time", "p99_queue_s", F_DUR, T_DBL, p99_queue_s, 0),
    ROW("multi-node gangs' mean queue", "multinode_mean_queue_s", F_DUR, T_DBL,
        multinode_mean_queue_s, 0),
    ROW("mean job completion time", "mean_jct_s", F_DUR, T_DBL, mean_jct_s, 0),
    ROW("p95 job completion time", "p95_jct_s", F_DUR, T_DBL, p95_jct_s, 0),
    ROW("GPU utilization", "gpu_utilization", F_PCT, T_DBL, gpu_utilization, 0),
    ROW("makespan", "makespan_s", F_DUR, T_DBL, makespan_s, 0),
    ROW("tensor-parallel splits", "tp_splits", F_COUNT, T_U64, tp_splits, 0),
    ROW("racks per multi-node gang", "mean_racks_per_multinode_gang", F_F2, T_DBL,
        mean_racks_per_multinode_gang, 0),
    ROW("fragmentation", "fragmentation", F_PCT, T_DBL, fragmentation, 0),
    ROW("whole-node gang waiting", "whole_node_wait_share", F_PCT, T_DBL, whole_node_wait_share, 0),
    ROW("backfilled gangs", "backfilled", F_COUNT, T_U64, backfilled, 0),
    ROW("preemptions (evictions)", "preemptions", F_COUNT, T_U64, preemptions, 0),
    ROW("GPU-hours lost to preemption", "gpu_hours_lost_to_preemption", F_F1, T_DBL,
        gpu_hours_lost_to_preemption, 0),
    ROW("of which as members left", "gpu_hours_lost_at_shrink", F_F1, T_DBL,
        gpu_hours_lost_at_shrink, SHOW_ELASTIC),
    ROW("of which as members joined", "gpu_hours_lost_at_join", F_F1, T_DBL, gpu_hours_lost_at_join,
        SHOW_ELASTIC),
    ROW("elastic jobs", "elastic_jobs", F_COUNT, T_U32, elastic_jobs, SHOW_ELASTIC),
    ROW("member preemptions (ran on)", "member_preemptions", F_COUNT, T_U64, member_preemptions,
        SHOW_ELASTIC),
    ROW("members preempted", "members_preempted", F_COUNT, T_U64, members_preempted, SHOW_ELASTIC),
    ROW("members rejoined", "member_joins", F_COUNT, T_U64, member_joins, SHOW_ELASTIC),
    ROW("checkpoints asked for a join", "join_checkpoint_requests", F_COUNT, T_U64,
        join_checkpoint_requests, SHOW_ELASTIC),
    ROW("members replaced (node lost)", "members_replaced", F_COUNT, T_U64, members_replaced,
        SHOW_ELASTIC),
    ROW("node failures", "node_failures", F_COUNT, T_U64, node_failures, SHOW_FAILURES),
    ROW("failure restarts", "failure_restarts", F_COUNT, T_U64, failure_restarts, SHOW_FAILURES),
    ROW("jobs failed (retries exhausted)", "failed_jobs", F_COUNT, T_U64, failed_jobs,
        SHOW_FAILURES),
    ROW("GPU-hours lost to failures", "gpu_hours_lost_to_failures", F_F1, T_DBL,
        gpu_hours_lost_to_failures, SHOW_FAILURES),
    ROW("mean recovery time", "mean_recovery_s", F_DUR, T_DBL, mean_recovery_s, SHOW_FAILURES),
    ROW("partial-gang seconds", "partial_gang_seconds", F_COUNT, T_DBL, partial_gang_seconds,
        SHOW_FAILURES),
    ROW("quota violations", "quota_violations", F_COUNT, T_U64, quota_violations, 0),
    ROW("waited within nominal quota", "reclaim_wait_s", F_DUR, T_DBL, reclaim_wait_s, 0),
    ROW("start estimate error, median", "eta_median_rel_error", F_PCT, T_DBL, eta_median_rel_error,
        0),
    ROW("start estimate error, p90", "eta_p90_rel_error", F_PCT, T_DBL, eta_p90_rel_error, 0),
};
#define N_ROWS (sizeof(stat_rows) / sizeof(stat_rows[0]))

/* Per queue: the same for struct sim_queue_stats. */
#define QROW(label, key, fmt, field)                                                               \
    {                                                                                              \
        label, key, fmt, T_DBL, offsetof(struct sim_queue_stats, field), 0                         \
    }
static const struct stat_row queue_rows[] = {
    {"jobs", "jobs", F_COUNT, T_U32, offsetof(struct sim_queue_stats, jobs), 0},
    QROW("mean queue time", "mean_queue_s", F_DUR, mean_queue_s),
    QROW("p95 queue time", "p95_queue_s", F_DUR, p95_queue_s),
    QROW("GPU-hours", "gpu_hours", F_F1, gpu_hours),
    QROW("nominal GPUs", "nominal_gpus", F_COUNT, nominal_gpus),
    QROW("most GPUs at once", "max_usage_gpus", F_COUNT, max_usage_gpus),
    QROW("GPU-hours borrowed", "borrowed_gpu_hours", F_F1, borrowed_gpu_hours),
    QROW("GPU-hours lent", "lent_gpu_hours", F_F1, lent_gpu_hours),
    QROW("waited within nominal quota", "reclaim_wait_s", F_DUR, reclaim_wait_s),
    QROW("multi-node mean queue", "multinode_mean_queue_s", F_DUR, multinode_mean_queue_s),
    {"multi-node gangs", "multinode_jobs", F_COUNT, T_U32,
     offsetof(struct sim_queue_stats, multinode_jobs), 0},
};
#define N_QROWS (sizeof(queue_rows) / sizeof(queue_rows[0]))

static double row_value(const void *base, const struct stat_row *r)
{
    const char *p = (const char *)base + r->off;
    switch (r->type) {
    case T_U32:
        return (double)*(const uint32_t *)(const void *)p;
    case T_U64:
        return (double)*(const uint64_t *)(const void *)p;
    case T_DBL:
        break;
    }
    return *(const double *)(const void *)p;
}

static bool had_failures(const struct sim_stats *s)
{
    return s->node_failures || s->failure_restarts;
}

/* Row r shown for the runs s (in JSON: json, where failure rows always are). */
static bool shown(const struct stat_row *r, const struct sim_stats *s, bool json)
{
    return r->only == 0 || (r->only == SHOW_FAILURES && (json || had_failures(s))) ||
           (r->only == SHOW_ELASTIC && s->elastic_jobs > 0);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static cJSON *stats_json(const struct sim_stats *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", s->policy);
    cJSON_AddNumberToObject(o, "jobs", s->jobs);
    cJSON_AddNumberToObject(o, "started", s->started);
    for (size_t i = 0; i < N_ROWS; i++)
        if (shown(&stat_rows[i], s, true))
            cJSON_AddNumberToObject(o, stat_rows[i].key, row_value(s, &stat_rows[i]));
    cJSON_AddNumberToObject(o, "multinode_gangs", (double)s->multinode_gangs);
    cJSON_AddNumberToObject(o, "preempted_gangs", (double)s->preempted_gangs);
    cJSON_AddNumberToObject(o, "checkpoint_requests", (double)s->checkpoint_requests);
    cJSON_AddNumberToObject(o, "quarantines", (double)s->quarantines);
    cJSON_AddNumberToObject(o, "reservations", (double)s->reservations);
    cJSON_AddNumberToObject(o, "cycles", (double)s->cycles);
    cJSON_AddNumberToObject(o, "multinode_jobs", s->multinode_jobs);
    cJSON_AddNumberToObject(o, "eta_waited", s->eta_waited);
    cJSON_AddNumberToObject(o, "eta_covered", s->eta_covered);
    cJSON *pp = cJSON_AddObjectToObject(o, "per_priority");
    for (uint32_t k = 0; k < s->n_prio; k++) {
        char key[16];
        snprintf(key, sizeof(key), "%d", s->prio_values[k]);
        cJSON *e = cJSON_AddObjectToObject(pp, key);
        cJSON_AddNumberToObject(e, "jobs", s->prio_jobs[k]);
        cJSON_AddNumberToObject(e, "mean_queue_s", s->prio_mean_queue_s[k]);
        cJSON_AddNumberToObject(e, "mean_wait_s", s->prio_mean_wait_s[k]);
    }
    cJSON *pq = cJSON_AddObjectToObject(o, "per_queue");
    for (uint32_t q = 0; q < s->n_queues; q++) {
        cJSON *e = cJSON_AddObjectToObject(pq, s->per_queue[q].name);
        for (size_t i = 0; i < N_QROWS; i++)
            cJSON_AddNumberToObject(e, queue_rows[i].key,
                                    row_value(&s->per_queue[q], &queue_rows[i]));
    }
    return o;
}

void sim_print_json(const struct sim_stats *s, int n)
{
    cJSON *root = cJSON_CreateObject();
    if (!device_is_default()) { /* what every *gpu* figure counts, when not nvidia.com/gpu */
        cJSON *d = cJSON_AddObjectToObject(root, "device");
        cJSON_AddStringToObject(d, "resource", device_resource());
        cJSON_AddStringToObject(d, "unit", device_unit());
        cJSON *kinds = res_kind_count() > 1 ? cJSON_AddArrayToObject(d, "kinds") : NULL;
        for (int k = 0; kinds && k < res_kind_count(); k++) { /* every kind the slot counts */
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "resource", res_name(res_kind_res(k)));
            cJSON_AddStringToObject(o, "unit", device_kind_unit(k));
            cJSON_AddItemToArray(kinds, o);
        }
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "policies");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, stats_json(&s[i]));
    char *txt = cJSON_Print(root);
    if (txt)
        puts(txt);
    free(txt);
    cJSON_Delete(root);
}

/* ---- the table ------------------------------------------------------------------------------- */

static void dur(char *buf, size_t n, double s)
{
    if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%.1fm", s / 60);
    else if (s < 86400 * 2)
        snprintf(buf, n, "%.2fh", s / 3600);
    else
        snprintf(buf, n, "%.2fd", s / 86400);
}

static void cell(enum row_fmt fmt, double v)
{
    char b[32];
    switch (fmt) {
    case F_COUNT:
        printf("%14.0f", v);
        return;
    case F_DUR:
        dur(b, sizeof(b), v);
        printf("%14s", b);
        return;
    case F_PCT:
        printf("%13.1f%%", 100.0 * v);
        return;
    case F_F1:
        printf("%14.1f", v);
        return;
    case F_F2:
        break;
    }
    printf("%14.2f", v);
}

void sim_print_table(const struct sim_stats *s, int n, const char *cluster, int64_t gpus,
                     uint32_t nodes)
{
    /* a configured accelerator is named; the default's line stays as it always was */
    if (device_is_default())
        printf("cluster %s: %u nodes, %lld GPUs; %u jobs\n\n", cluster, nodes, (long long)gpus,
               n ? s[0].jobs : 0);
    else
        printf("cluster %s: %u nodes, %lld %ss (%s); %u jobs\n\n", cluster, nodes, (long long)gpus,
               device_unit(), device_resources(), n ? s[0].jobs : 0);
    printf("%-32s", "metric");
    for (int i = 0; i < n; i++)
        printf("%14s", s[i].policy);
    putchar('\n');
    for (size_t r = 0; r < N_ROWS; r++) {
        if (n > 0 ? !shown(&stat_rows[r], &s[0], false) : stat_rows[r].only != 0)
            continue;
        printf("%-32s", stat_rows[r].label);
        for (int i = 0; i < n; i++)
            cell(stat_rows[r].fmt, row_value(&s[i], &stat_rows[r]));
        putchar('\n');
    }
    if (n > 0 && s[0].n_queues > 1) {
        printf("\nmean queue time per queue\n");
        for (uint32_t q = 0; q < s[0].n_queues; q++) {
            char label[64];
            snprintf(label, sizeof(label), "  %.20s (%u jobs)", s[0].per_queue[q].name,
                     s[0].per_queue[q].jobs);
            printf("%-32s", label);
            for (int i = 0; i < n; i++)
                cell(F_DUR, s[i].per_queue[q].mean_queue_s);
            putchar('\n');
        }
    }
}

/* ---- the report ------------------------------------------------------------------------------ */

/* Racks of the cluster (its rack level; without one, every node is its own) and the GPU-seconds
 * each ran pods for. Returns the number of racks; *out is calloc'ed (NULL on failure). */
static size_t racks_of(const struct cluster *c, const double *node_gpu_s, struct report_rack **out)
{
    int lv = c->topo.rack_level;
    size_t n = lv >= 0 ? c->topo.levels[lv].n_domains : c->n_nodes;
    *out = calloc(n + 1, sizeof(**out));
    if (!*out)
        return 0;
    for (size_t d = 0; d < n; d++)
        (*out)[d].name = lv >= 0 ? c->topo.levels[lv].domain_names[d] : c->nodes[d].name;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        uint32_t d = lv >= 0 ? c->nodes[i].dom[lv] : i;
        if (d >= n)
            continue;
        (*out)[d].gpus += c->nodes[i].n_gpus;
        (*out)[d].gpu_s += node_gpu_s ? node_gpu_s[i] : 0;
    }
    return n;
}

int sim_write_report(const char *path, const char *title, const struct sim_stats *s, int n,
                     const struct cluster *c, struct sched_errbuf *eb)
{
    struct report_policy *rp = calloc((size_t)n + 1, sizeof(*rp));
    struct report_metric *m = calloc((size_t)n * N_ROWS + 1, sizeof(*m));
    uint32_t nq = n > 0 ? s[0].n_queues : 0;
    struct report_queue *rq = calloc((size_t)n * nq + 1, sizeof(*rq));
    struct report_metric *qm = calloc((size_t)n * nq * N_QROWS + 1, sizeof(*qm));
    struct report_rack **racks = calloc((size_t)n + 1, sizeof(*racks));
    int rc = 0;
    if (!rp || !m || !rq || !qm || !racks)
        rc = sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
    for (int i = 0; i < n && rc == 0; i++) {
        const struct sim_stats *x = &s[i];
        struct report_metric *mm = m + (size_t)i * N_ROWS;
        size_t k = 0;
        for (size_t r = 0; r < N_ROWS; r++)
            if (shown(&stat_rows[r], &s[0], false))
                mm[k++] = (struct report_metric){stat_rows[r].key, row_value(x, &stat_rows[r]),
                                                 stat_rows[r].label};
        for (uint32_t q = 0; q < nq && q < x->n_queues; q++) {
            struct report_metric *qq = qm + ((size_t)i * nq + q) * N_QROWS;
            for (size_t r = 0; r < N_QROWS; r++)
                qq[r] = (struct report_metric){queue_rows[r].key,
                                               row_value(&x->per_queue[q], &queue_rows[r]),
                                               queue_rows[r].label};
            rq[(size_t)i * nq + q] = (struct report_queue){
                x->per_queue[q].name, x->per_queue[q].nominal_gpus, qq, N_QROWS};
        }
        size_t n_racks = c && x->node_gpu_s ? racks_of(c, x->node_gpu_s, &racks[i]) : 0;
        rp[i] = (struct report_policy){.name = x->policy,
                                       .series = x->series,
                                       .n_series = x->n_series,
                                       .queue_s = x->queue_s,
                                       .n_queue_s = x->n_queue_s,
                                       .metrics = mm,
                                       .n_metrics = k,
                                       .queues = rq + (size_t)i * nq,
                                       .n_queues = x->n_queues == nq ? nq : 0,
                                       .queue_used = x->queue_used,
                                       .queue_of = x->queue_of,
                                       .racks = racks[i],
                                       .n_racks = racks[i] ? n_racks : 0,
                                       .span_s = x->makespan_s};
    }
    if (rc == 0)
        rc = report_write_html(path, title, rp, (size_t)n, eb);
    for (int i = 0; racks && i < n; i++)
        free(racks[i]);
    free(racks), free(qm), free(rq), free(m), free(rp);
    return rc;
}
