/* sched/http/store_metrics.c: the metrics a database yields (http_store_metrics): jobs by state,
 * admission waits, admissions, evictions and preemptions, quotas, usage and shares, named as
 * Kueue's where the concept is the same (docs/metrics.md).
 *
 * Owns: the families derived from a store, rebuilt at each rendering on a fresh registry.
 * Must not touch: the store's content (reads only), the registry's rendering (metrics.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/res.h"
#include "sched/http/server.h"

struct mctx {
    struct http_metrics *m;
    struct http_metric *jobs, *wait, *admitted, *evicted, *preempted, *lost, *nominal, *borrow,
        *lend, *used, *share;
    /* victim -> queue, from the jobs */
    char **gang, **queue;
    size_t n, cap;
    /* queue -> cohort, from the queues ("" without one) */
    char **qname, **qcohort;
    size_t nq, capq;
    int err;
};

/* A quantity in base units (cores, bytes, GPUs), as Prometheus wants: the store keeps cpu in
 * thousandths. */
static double base_units(const char *resource, int64_t v)
{
    int r = res_lookup(resource);
    double div = 1;
    for (int k = r >= 0 ? res_scale(r) : 0; k > 0; k--)
        div *= 10;
    return (double)v / div;
}

static const char *cohort_of(const struct mctx *c, const char *queue)
{
    for (size_t i = 0; i < c->nq; i++)
        if (strcmp(c->qname[i], queue) == 0)
            return c->qcohort[i];
    return "";
}

static const char *queue_of(const struct mctx *c, const char *gang)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->gang[i], gang) == 0)
            return c->queue[i];
    return "unknown";
}

static int m_job(void *ctx, const struct store_job *j)
{
    struct mctx *c = ctx;
    const char *state = store_job_state_name(j->state);
    if (!state)
        return 0;
    const char *qs[] = {j->queue, state};
    int err = http_metric_add_value(c->jobs, qs, 1);
    const char *q[] = {j->queue};
    int64_t admit = j->admit_ms != STORE_NO_TIME ? j->admit_ms : j->start_ms;
    if (!err && admit != STORE_NO_TIME && j->submit_ms != STORE_NO_TIME && admit >= j->submit_ms) {
        err = http_metric_observe(c->wait, q, (double)(admit - j->submit_ms) / 1000.0);
        if (!err)
            err = http_metric_add_value(c->admitted, q, 1);
    }
    const char *pre[] = {j->queue, "Preempted"};
    const char *fail[] = {j->queue, "Failure"};
    if (!err && j->preemptions)
        err = http_metric_add_value(c->evicted, pre, j->preemptions);
    if (!err && j->restarts)
        err = http_metric_add_value(c->evicted, fail, j->restarts);
    if (!err && c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        char **g = realloc(c->gang, nc * sizeof(*g));
        if (g)
            c->gang = g;
        char **qq = g ? realloc(c->queue, nc * sizeof(*qq)) : NULL;
        if (qq)
            c->queue = qq;
        if (!g || !qq)
            return SCHED_ENOMEM;
        c->cap = nc;
    }
    if (!err) {
        c->gang[c->n] = strdup(j->gang);
        c->queue[c->n] = strdup(j->queue);
        if (!c->gang[c->n] || !c->queue[c->n]) {
            free(c->gang[c->n]);
            free(c->queue[c->n]);
            return SCHED_ENOMEM;
        }
        c->n++;
    }
    return err;
}

static int m_preempt(void *ctx, const struct store_preemption *p)
{
    struct mctx *c = ctx;
    const char *q[] = {queue_of(c, p->victim)};
    int err = http_metric_add_value(c->preempted, q, 1);
    if (!err)
        err = http_metric_add_value(c->lost, q, p->lost_work_gpu_s);
    return err;
}

static int m_queue(void *ctx, const struct store_queue *q)
{
    struct mctx *c = ctx;
    if (c->nq == c->capq) {
        size_t nc = c->capq ? c->capq * 2 : 16;
        char **a = realloc(c->qname, nc * sizeof(*a));
        if (a)
            c->qname = a;
        char **b = a ? realloc(c->qcohort, nc * sizeof(*b)) : NULL;
        if (b)
            c->qcohort = b;
        if (!a || !b)
            return SCHED_ENOMEM;
        c->capq = nc;
    }
    c->qname[c->nq] = strdup(q->name);
    c->qcohort[c->nq] = strdup(q->cohort ? q->cohort : "");
    if (!c->qname[c->nq] || !c->qcohort[c->nq]) {
        free(c->qname[c->nq]);
        free(c->qcohort[c->nq]);
        return SCHED_ENOMEM;
    }
    c->nq++;
    for (uint32_t i = 0; i < q->n_quotas; i++) {
        const struct store_quota *sq = &q->quotas[i];
        const char *l[] = {q->cohort ? q->cohort : "", q->name, sq->flavor, sq->resource};
        int err = http_metric_set(c->nominal, l, base_units(sq->resource, sq->nominal));
        if (!err && sq->borrowing_limit >= 0 && sq->borrowing_limit != STORE_NO_LIMIT)
            err = http_metric_set(c->borrow, l, base_units(sq->resource, sq->borrowing_limit));
        if (!err && sq->lending_limit >= 0 && sq->lending_limit != STORE_NO_LIMIT)
            err = http_metric_set(c->lend, l, base_units(sq->resource, sq->lending_limit));
        if (err)
            return err;
    }
    return 0;
}

static int m_ledger(void *ctx, const struct store_ledger_row *r)
{
    struct mctx *c = ctx;
    const char *l[] = {cohort_of(c, r->queue), r->queue, r->flavor, r->resource};
    return http_metric_set(c->used, l, base_units(r->resource, r->amount));
}

static int m_share(void *ctx, const char *queue, double share, int64_t updated_ms)
{
    struct mctx *c = ctx;
    (void)updated_ms;
    const char *l[] = {queue};
    return isfinite(share) ? http_metric_set(c->share, l, share) : 0;
}

/* The families of a database, named and labelled as Kueue's where the concept is the same
 * (kueue_cluster_queue_nominal_quota -> gangsched_cluster_queue_nominal_quota, label
 * cluster_queue), quantities in base units; docs/metrics.md. */
int http_store_metrics(struct store *st, struct http_metrics *m, struct sched_errbuf *eb)
{
    static const double wait_buckets[] = {1,   5,    15,   30,   60,    120,   300,
                                          600, 1800, 3600, 7200, 14400, 43200, 86400};
    static const char *const q[] = {"cluster_queue"};
    static const char *const qs[] = {"cluster_queue", "state"};
    static const char *const qr[] = {"cluster_queue", "reason"};
    static const char *const cqfr[] = {"cohort", "cluster_queue", "flavor", "resource"};
    struct mctx c = {.m = m};
    const struct {
        const char *name, *help;
        enum http_metric_type type;
        const char *const *labels;
        uint32_t n_labels;
        struct http_metric **out;
    } fams[] = {
        {"gangsched_jobs", "Jobs in the database by queue and state", HTTP_GAUGE, qs, 2, &c.jobs},
        {"gangsched_admission_wait_time_seconds",
         "Time from submission to admission of admitted jobs, per queue", HTTP_HISTOGRAM, q, 1,
         &c.wait},
        {"gangsched_admitted_workloads_total", "Jobs admitted, per queue", HTTP_COUNTER, q, 1,
         &c.admitted},
        {"gangsched_evicted_workloads_total",
         "Evictions of running jobs, per queue and reason (Preempted, Failure)", HTTP_COUNTER, qr,
         2, &c.evicted},
        {"gangsched_preemptions_total", "Preemptions, per queue of the victim", HTTP_COUNTER, q, 1,
         &c.preempted},
        {"gangsched_preemption_lost_gpu_seconds_total",
         "GPU-seconds of work lost to preemption, per queue of the victim", HTTP_COUNTER, q, 1,
         &c.lost},
        {"gangsched_cluster_queue_nominal_quota",
         "Nominal quota per queue, flavor and resource (base units: cores, bytes, GPUs)",
         HTTP_GAUGE, cqfr, 4, &c.nominal},
        {"gangsched_cluster_queue_borrowing_limit",
         "Borrowing limit per queue, flavor and resource, when one is set (base units)", HTTP_GAUGE,
         cqfr, 4, &c.borrow},
        {"gangsched_cluster_queue_lending_limit",
         "Lending limit per queue, flavor and resource, when one is set (base units)", HTTP_GAUGE,
         cqfr, 4, &c.lend},
        {"gangsched_cluster_queue_resource_usage",
         "Usage admitted per queue, flavor and resource (base units)", HTTP_GAUGE, cqfr, 4,
         &c.used},
        {"gangsched_queue_share", "Decayed historical fair share of the queue", HTTP_GAUGE, q, 1,
         &c.share},
    };
    int err = http_metrics_process(m);
    for (size_t i = 0; !err && i < sizeof(fams) / sizeof(fams[0]); i++) {
        bool hist = fams[i].type == HTTP_HISTOGRAM;
        err = http_metric_add(m, fams[i].name, fams[i].help, fams[i].type, fams[i].labels,
                              fams[i].n_labels, hist ? wait_buckets : NULL, hist ? 14 : 0,
                              fams[i].out);
    }
    if (err)
        return sched_fail(eb, err, "metrics: cannot register the store families");
    err = store_job_list(st, m_job, &c, eb);
    if (!err)
        err = store_preemption_list(st, m_preempt, &c, eb);
    if (!err)
        err = store_queue_list(st, m_queue, &c, eb);
    if (!err)
        err = store_ledger_list(st, m_ledger, &c, eb);
    if (!err)
        err = store_history_list(st, m_share, &c, eb);
    for (size_t i = 0; i < c.n; i++) {
        free(c.gang[i]);
        free(c.queue[i]);
    }
    for (size_t i = 0; i < c.nq; i++) {
        free(c.qname[i]);
        free(c.qcohort[i]);
    }
    free(c.gang), free(c.queue), free(c.qname), free(c.qcohort);
    if (err && !eb->msg[0])
        sched_fail(eb, err, "metrics from %s: %s", store_path(st), sched_strerror(err));
    return err;
}
