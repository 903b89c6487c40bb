/* sched/http/serve.c: `gangsched serve`: the HTTP API over a database (a simulator run's --db
 * output, or a copy of the daemon's), and the metrics a database yields (http_store_metrics).
 *
 * Owns: the command's flags, its loop and signals, the store-backed provider (reads from the
 * file; operator writes validated against it and recorded as operator_actions rows for a
 * scheduler to apply), and the families derived from a store.
 * Must not touch: the queues, jobs and reservations themselves (writes are requests only).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/core/res.h"
#include "sched/http/server.h"

/* ---- metrics from a store ---------------------------------------------------------------------
 */

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

/* ---- the serve command ------------------------------------------------------------------------
 */

struct serve {
    struct store *rw;
    uv_signal_t sigint, sigterm;
    struct http_server *srv;
};

struct find {
    const char *name;
    int64_t id;
    bool found;
};

static int find_queue(void *ctx, const struct store_queue *q)
{
    struct find *f = ctx;
    if (strcmp(q->name, f->name) == 0)
        f->found = true;
    return 0;
}

static int find_resv(void *ctx, const struct store_reservation *r)
{
    struct find *f = ctx;
    if (r->id == f->id)
        f->found = true;
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int serve_write(void *ctx, const struct http_write *w, cJSON **result,
                       struct sched_errbuf *eb)
{
    struct serve *sv = ctx;
    struct find f = {w->target, 0, false};
    int err = 0;
    const char *what = "queue";
    switch (w->kind) {
    case STORE_ACT_HOLD:
    case STORE_ACT_RESUME:
    case STORE_ACT_DRAIN:
        err = store_queue_list(sv->rw, find_queue, &f, eb);
        break;
    case STORE_ACT_RESERVE:
    case STORE_ACT_CHECKPOINT: {
        what = "job";
        struct store_job j;
        err = store_job_get(sv->rw, w->target, &j, eb);
        f.found = err == 0;
        if (err == SCHED_ENOENT)
            err = 0;
        break;
    }
    case STORE_ACT_UNRESERVE:
        what = "reservation";
        f.id = strtoll(w->target, NULL, 10);
        err = store_reservation_list(sv->rw, find_resv, &f, eb);
        break;
    }
    if (err)
        return err;
    char q[160];
    sched_quote(w->target, strlen(w->target), q, sizeof(q));
    if (!f.found)
        return sched_fail(eb, SCHED_ENOENT, "%s '%s' not found", what, q);
    struct store_action a = {.ts_ms = now_ms(),
                             .kind = w->kind,
                             .target = w->target,
                             .detail = w->detail,
                             .actor = w->actor};
    int64_t id = 0;
    err = store_action_add(sv->rw, &a, &id, eb);
    if (err)
        return err;
    cJSON *doc = cJSON_CreateObject();
    cJSON *act = doc ? cJSON_AddObjectToObject(doc, "action") : NULL;
    char msg[300];
    snprintf(msg, sizeof(msg), "%s of %s '%s' requested (action %lld, pending)",
             store_action_kind_name(w->kind), what, q, (long long)id);
    if (!act || !cJSON_AddNumberToObject(act, "id", (double)id) ||
        !cJSON_AddStringToObject(act, "kind", store_action_kind_name(w->kind)) ||
        !cJSON_AddStringToObject(act, "target", w->target) ||
        !cJSON_AddStringToObject(act, "state", "pending") ||
        !cJSON_AddStringToObject(doc, "message", msg)) {
        cJSON_Delete(doc);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    *result = doc;
    return 0;
}

static void on_signal(uv_signal_t *h, int sig)
{
    struct serve *sv = h->data;
    (void)sig;
    http_server_stop(sv->srv);
    sv->srv = NULL;
    uv_close((uv_handle_t *)&sv->sigint, NULL);
    uv_close((uv_handle_t *)&sv->sigterm, NULL);
}

static int serve_usage(FILE *f, int rc)
{
    fputs("usage: gangsched serve --db FILE [--listen HOST:PORT] [--token-file FILE]\n"
          "                       [--read-token-file FILE] [--port-file FILE]\n"
          "\n"
          "Serves the HTTP API (docs/api.md) over a database until SIGINT or SIGTERM: reads show\n"
          "the file as it is now; operator writes are checked against it and recorded as\n"
          "pending operator actions (docs/store.md) for a scheduler to apply.\n"
          "\n"
          "  --db FILE               the database (a 'gangsched simulate --db' run; migrated to\n"
          "                          the current schema if older)\n"
          "  --listen HOST:PORT      default 127.0.0.1:8080; port 0 picks a free port\n"
          "  --token-file FILE       bearer token for writes (re-read when it changes); without\n"
          "                          it writes are refused\n"
          "  --read-token-file FILE  bearer token reads need (the write token works too)\n"
          "  --port-file FILE        write the bound port there once listening\n"
          "  --max-stale MS          accepted, no effect: every read queries the database\n"
          "                          and shows the last commit\n",
          f);
    fputs(http_limit_help, f);
    return rc;
}

int http_serve_main(int argc, char **argv)
{
    const char *db = NULL, *port_file = NULL;
    long max_stale = 0;
    struct http_opts o = {.listen = "127.0.0.1:8080"};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = strcmp(a, "--db") == 0                ? &db
                           : strcmp(a, "--listen") == 0          ? &o.listen
                           : strcmp(a, "--token-file") == 0      ? &o.write_token_file
                           : strcmp(a, "--read-token-file") == 0 ? &o.read_token_file
                           : strcmp(a, "--port-file") == 0       ? &port_file
                                                                 : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return serve_usage(stdout, 0);
        if (strcmp(a, "--max-stale") == 0 && i + 1 < argc) {
            char *end = NULL;
            max_stale = strtol(argv[++i], &end, 10);
            if (!*argv[i] || *end || max_stale < 0 || max_stale > 3600000) {
                fprintf(stderr, "gangsched serve: --max-stale '%s': expected 0..3600000 ms\n",
                        argv[i]);
                return 2;
            }
            continue;
        }
        struct sched_errbuf leb = {{0}};
        int lf = i + 1 < argc ? http_limit_flag(&o.limits, a, argv[i + 1], &leb) : 0;
        if (lf < 0) {
            fprintf(stderr, "gangsched serve: %s\n", leb.msg);
            return 2;
        }
        if (lf == 1) {
            i++;
            continue;
        }
        if (!dst || i + 1 >= argc) {
            fprintf(stderr, "gangsched serve: %s '%s'\n",
                    dst ? "flag needs a value:" : "unknown flag", a);
            return serve_usage(stderr, 2);
        }
        *dst = argv[++i];
    }
    if (!db) {
        fputs("gangsched serve: --db FILE is required\n", stderr);
        return serve_usage(stderr, 2);
    }
    struct serve sv = {0};
    struct sched_errbuf eb = {{0}};
    if (store_open(db, 0, NULL, &sv.rw, &eb) != 0) {
        store_rebuild_hint(&eb, "gangsched run and simulate can start a new store: "
                                "--rebuild-store");
        fprintf(stderr, "gangsched serve: %s\n", eb.msg);
        return 1;
    }
    uv_loop_t *loop = uv_default_loop();
    struct http_provider p = {.ctx = &sv,
                              .store_path = db,
                              .store_metrics = true,
                              .max_stale_ms = (uint32_t)max_stale,
                              .write = serve_write};
    if (http_server_start(loop, &o, &p, &sv.srv, &eb) != 0) {
        fprintf(stderr, "gangsched serve: %s\n", eb.msg);
        uv_run(loop, UV_RUN_DEFAULT);
        store_close(sv.rw);
        return 1;
    }
    uv_signal_init(loop, &sv.sigint);
    uv_signal_init(loop, &sv.sigterm);
    sv.sigint.data = sv.sigterm.data = &sv;
    uv_signal_start(&sv.sigint, on_signal, SIGINT);
    uv_signal_start(&sv.sigterm, on_signal, SIGTERM);
    int port = http_server_port(sv.srv);
    if (port_file) {
        if (http_server_write_port(sv.srv, port_file, &eb) != 0) {
            fprintf(stderr, "gangsched serve: %s\n", eb.msg);
            http_server_stop(sv.srv);
            uv_close((uv_handle_t *)&sv.sigint, NULL);
            uv_close((uv_handle_t *)&sv.sigterm, NULL);
            uv_run(loop, UV_RUN_DEFAULT);
            store_close(sv.rw);
            return 1;
        }
    }
    printf("gangsched serve: listening on port %d (database %s)\n", port, db);
    fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    store_close(sv.rw);
    return 0;
}
