/* sched/sim/stats.c: the run's KPIs (summarize), the time series, quota metrics, the per-job CSV
 * (see run.h). */
#include "sched/engine/fair.h"
#include "sched/sim/run.h"

/* Free GPUs stranded on partly used nodes, as a share of the cluster's GPUs (r->stranded is kept
 * by occupy() and release_job(), so an instant does not count every node). */
double sim_stranded_share(const struct run *r)
{
    const struct cluster *c = r->in->cluster;
    return c->total_gpus > 0 ? (double)r->stranded / (double)c->total_gpus : 0.0;
}

int sim_add_point(struct run *r, int64_t now, int64_t t0)
{
    struct sim_stats *st = r->st;
    if (st->n_series == r->cap_series) {
        size_t cap = r->cap_series ? r->cap_series * 2 : 1024;
        struct report_point *p = realloc(st->series, cap * sizeof(*p));
        if (!p)
            return SCHED_ENOMEM;
        st->series = p;
        r->cap_series = cap;
    }
    uint32_t nq = r->in->n_queues;
    if (st->n_series == 0 || st->n_series + 1 > r->cap_queue_used) {
        size_t cap = r->cap_series;
        double *u = realloc(st->queue_used, (cap * nq + 1) * sizeof(*u));
        if (!u)
            return SCHED_ENOMEM;
        st->queue_used = u;
        r->cap_queue_used = cap;
    }
    for (uint32_t q = 0; q < nq; q++) {
        int64_t gpus = 0;
        for (uint32_t f = 0; f < r->n_flavors; f++)
            gpus += sim_usage_at(r, q, f)[RES_GPU];
        st->queue_used[st->n_series * nq + q] = (double)gpus;
    }
    double total = (double)r->in->cluster->total_gpus;
    st->series[st->n_series++] = (struct report_point){
        .t_s = (double)(now - t0) / 1000.0,
        .util = total > 0 ? (double)r->busy_gpus / total : 0.0,
        .queued = (double)r->n_pending,
    };
    return 0;
}

/* ---- statistics -------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double pct(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0.0;
    size_t k = (size_t)ceil(p * (double)n);
    return v[k > 0 ? k - 1 : 0];
}

static double mean(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : 0.0;
}

/* Seconds job j has spent without its GPUs since submission: the first queue time plus every
 * wait after an eviction or a failure (busy_ms holds the time of every run before the current
 * one, or of all runs once it is done). The preemption figures use it, since the first queue
 * time alone would not see that an evicted job waits again. */
static double job_wait_s(const struct run *r, uint32_t j)
{
    int64_t until = sim_state(r, j) == ENG_JOB_FINISHED ? r->end_ms[j] : r->run_start_ms[j];
    int64_t w = until - r->in->jobs[j].gang.submit_ms - r->busy_ms[j];
    return w > 0 ? (double)w / 1000.0 : 0.0;
}

/* GPU-milliseconds job j held over its runs: an elastic job's as its members came and went
 * (sim/elastic.c), any other's its GPUs times its busy time. */
static double job_gpu_ms(const struct run *r, uint32_t j)
{
    uint32_t k = sim_elastic_slot(r, j);
    return k != UINT32_MAX ? r->el[k].gpu_ms
                           : (double)r->in->jobs[j].gang.gpus * (double)r->busy_ms[j];
}

#define ETA_WAITED_S 600.0 /* the start-time KPIs count gangs that waited longer (seconds) */

/* The per-queue results (qq: room for every job, scratch). */
static void per_queue(struct run *r, double *qq)
{
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    for (uint32_t k = 0; k < in->n_queues; k++) {
        struct sim_queue_stats *ps = &st->per_queue[k];
        size_t n = 0;
        ps->name = in->queues[k].name;
        for (uint32_t j = 0; j < in->n_jobs; j++) {
            if (in->jobs[j].gang.queue != k)
                continue;
            ps->jobs++;
            if (sim_state(r, j) != ENG_JOB_RUNNING && sim_state(r, j) != ENG_JOB_FINISHED)
                continue;
            qq[n++] = (double)(r->start_ms[j] - in->jobs[j].gang.submit_ms) / 1000.0;
            ps->gpu_hours += job_gpu_ms(r, j) / 3.6e6;
        }
        qsort(qq, n, sizeof(*qq), cmp_double);
        ps->mean_queue_s = mean(qq, n);
        if (ps->multinode_jobs)
            ps->multinode_mean_queue_s /= ps->multinode_jobs;
        st->reclaim_wait_s += ps->reclaim_wait_s;
        ps->p95_queue_s = pct(qq, n, 0.95);
    }
}

int sim_summarize(struct run *r, int64_t t0, int64_t t_end, double frag_weighted, double frag_time,
                  double frag_wait)
{
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    double *q = malloc((in->n_jobs + 1) * sizeof(*q));
    double *jct = malloc((in->n_jobs + 1) * sizeof(*jct));
    double *qq = malloc((in->n_jobs + 1) * sizeof(*qq));
    if (!q || !jct || !qq) {
        free(q), free(jct), free(qq);
        return SCHED_ENOMEM;
    }
    size_t nq = 0, nj = 0;
    double busy_gpu_s = 0, wait_sum = 0;
    /* queue time and wait per job priority (at most 8 distinct values reported) */
    double prio_sum[8] = {0}, prio_wait[8] = {0};
    for (uint32_t j = 0; j < in->n_jobs; j++) {
        if (sim_state(r, j) == ENG_JOB_FAILED)
            st->rejected++;
        else if ((sim_state(r, j) == ENG_JOB_PENDING || sim_state(r, j) == ENG_JOB_NONE) &&
                 r->n_evicted[j] == 0 && !(r->fail && r->attempts[j] > 0))
            st->never_started++;
        if (sim_state(r, j) != ENG_JOB_RUNNING && sim_state(r, j) != ENG_JOB_FINISHED)
            continue;
        double queue_s = (double)(r->start_ms[j] - in->jobs[j].gang.submit_ms) / 1000.0;
        double wait_s = job_wait_s(r, j);
        int64_t above = in->multinode_above ? in->multinode_above : in->cluster->max_node_gpus;
        if (in->jobs[j].gang.gpus > above) {
            st->multinode_jobs++;
            st->multinode_mean_queue_s += queue_s;
            st->per_queue[in->jobs[j].gang.queue].multinode_jobs++;
            st->per_queue[in->jobs[j].gang.queue].multinode_mean_queue_s += queue_s;
        }
        if (queue_s > ETA_WAITED_S) {
            st->eta_waited++;
            if (r->eta_first[j] != INT64_MIN)
                qq[st->eta_covered++] =
                    fabs((double)(r->eta_first[j] - r->start_ms[j]) / 1000.0) / queue_s;
        }
        q[nq++] = queue_s;
        wait_sum += wait_s;
        if (sim_state(r, j) == ENG_JOB_FINISHED)
            jct[nj++] = (double)(r->end_ms[j] - in->jobs[j].gang.submit_ms) / 1000.0;
        busy_gpu_s += job_gpu_ms(r, j) / 1000.0;
        int32_t p = in->jobs[j].gang.priority;
        uint32_t k = 0;
        while (k < st->n_prio && st->prio_values[k] != p)
            k++;
        if (k == st->n_prio) {
            if (st->n_prio == 8)
                continue;
            st->prio_values[st->n_prio++] = p;
        }
        st->prio_jobs[k]++;
        prio_sum[k] += queue_s;
        prio_wait[k] += wait_s;
    }
    qsort(qq, st->eta_covered, sizeof(*qq), cmp_double);
    st->eta_median_rel_error = pct(qq, st->eta_covered, 0.50);
    st->eta_p90_rel_error = pct(qq, st->eta_covered, 0.90);
    st->eta_err = malloc((st->eta_covered + 1) * sizeof(*qq));
    if (!st->eta_err) {
        free(q), free(jct), free(qq);
        return SCHED_ENOMEM;
    }
    memcpy(st->eta_err, qq, st->eta_covered * sizeof(*qq));
    if (st->multinode_jobs)
        st->multinode_mean_queue_s /= st->multinode_jobs;
    st->jobs = in->n_jobs;
    st->started = (uint32_t)nq;
    st->completed = (uint32_t)nj;
    st->queue_s = malloc((nq + 1) * sizeof(double));
    if (!st->queue_s) {
        free(q), free(jct), free(qq);
        return SCHED_ENOMEM;
    }
    memcpy(st->queue_s, q, nq * sizeof(double));
    st->n_queue_s = nq;
    st->queue_of = malloc((nq + 1) * sizeof(*st->queue_of));
    if (!st->queue_of) {
        free(q), free(jct), free(qq);
        return SCHED_ENOMEM;
    }
    for (uint32_t j = 0, k = 0; j < in->n_jobs; j++) /* the same jobs, in the same order */
        if (sim_state(r, j) == ENG_JOB_RUNNING || sim_state(r, j) == ENG_JOB_FINISHED)
            st->queue_of[k++] = in->jobs[j].gang.queue;
    qsort(q, nq, sizeof(*q), cmp_double);
    qsort(jct, nj, sizeof(*jct), cmp_double);
    st->mean_queue_s = mean(q, nq);
    st->mean_wait_s = nq ? wait_sum / (double)nq : 0.0;
    st->p50_queue_s = pct(q, nq, 0.50);
    st->p95_queue_s = pct(q, nq, 0.95);
    st->p99_queue_s = pct(q, nq, 0.99);
    st->mean_jct_s = mean(jct, nj);
    for (uint32_t k = 0; k < st->n_prio; k++) {
        st->prio_mean_queue_s[k] = prio_sum[k] / (double)st->prio_jobs[k];
        st->prio_mean_wait_s[k] = prio_wait[k] / (double)st->prio_jobs[k];
    }
    st->p95_jct_s = pct(jct, nj, 0.95);
    st->t0_ms = t0, st->t_end_ms = t_end;
    st->makespan_s = (double)(t_end - t0) / 1000.0;
    double cap = (double)in->cluster->total_gpus * st->makespan_s;
    st->gpu_utilization = cap > 0 ? busy_gpu_s / cap : 0.0;
    if (st->multinode_gangs)
        st->mean_racks_per_multinode_gang /= (double)st->multinode_gangs;
    /* the mean stranded share while a whole-node gang waits, and how much of the time one
     * waits (their product is the time average over the makespan) */
    st->frag_weighted_ms = frag_weighted, st->frag_time_ms = frag_time,
    st->frag_wait_ms = frag_wait;
    st->fragmentation = frag_wait > 0 ? frag_weighted / frag_wait : 0.0;
    st->whole_node_wait_share = frag_time > 0 ? frag_wait / frag_time : 0.0;
    st->mean_recovery_s = st->recoveries ? st->recovery_sum_s / (double)st->recoveries : 0.0;
    per_queue(r, qq);
    st->jct_s = jct; /* sorted */
    st->n_jct_s = nj;
    free(q), free(qq);
    return 0;
}

/* *dst (n_dst entries) grown by src's n entries; 0 or SCHED_ENOMEM. */
static int append(void **dst, size_t n_dst, const void *src, size_t n, size_t size)
{
    void *p = realloc(*dst, (n_dst + n + 1) * size);
    if (!p)
        return SCHED_ENOMEM;
    *dst = p;
    if (n > 0)
        memcpy((char *)p + n_dst * size, src, n * size);
    return 0;
}

/* The counters that simply add up. */
static void merge_counts(struct sim_stats *a, const struct sim_stats *o)
{
    a->jobs += o->jobs, a->completed += o->completed, a->started += o->started;
    a->rejected += o->rejected, a->never_started += o->never_started;
    a->tp_splits += o->tp_splits, a->multinode_gangs += o->multinode_gangs;
    a->preemptions += o->preemptions, a->preempted_gangs += o->preempted_gangs;
    a->gpu_hours_lost_to_preemption += o->gpu_hours_lost_to_preemption;
    a->checkpoint_requests += o->checkpoint_requests;
    a->member_preemptions += o->member_preemptions, a->members_preempted += o->members_preempted;
    a->member_joins += o->member_joins, a->elastic_jobs += o->elastic_jobs;
    a->join_checkpoint_requests += o->join_checkpoint_requests;
    a->members_replaced += o->members_replaced;
    a->gpu_hours_lost_at_shrink += o->gpu_hours_lost_at_shrink;
    a->gpu_hours_lost_at_join += o->gpu_hours_lost_at_join;
    a->node_failures += o->node_failures, a->failure_restarts += o->failure_restarts;
    a->failed_jobs += o->failed_jobs, a->quarantines += o->quarantines;
    a->gpu_hours_lost_to_failures += o->gpu_hours_lost_to_failures;
    a->partial_gang_seconds += o->partial_gang_seconds;
    a->recovery_sum_s += o->recovery_sum_s, a->recoveries += o->recoveries;
    a->quota_violations += o->quota_violations, a->reclaim_wait_s += o->reclaim_wait_s;
    a->backfilled += o->backfilled, a->reservations += o->reservations, a->cycles += o->cycles;
    a->multinode_jobs += o->multinode_jobs;
    a->eta_waited += o->eta_waited, a->eta_covered += o->eta_covered;
    a->frag_weighted_ms += o->frag_weighted_ms, a->frag_time_ms += o->frag_time_ms;
    a->frag_wait_ms += o->frag_wait_ms;
}

int sim_stats_merge(struct sim_merge *m, const struct sim_stats *o, uint32_t q, double gpus)
{
    struct sim_stats *a = m->acc;
    size_t nq = a->n_queue_s, nj = a->n_jct_s, ne = a->eta_covered;
    if (append((void **)&a->queue_s, nq, o->queue_s, o->n_queue_s, sizeof(double)) != 0 ||
        append((void **)&a->queue_of, nq, o->queue_of, o->n_queue_s, sizeof(uint32_t)) != 0 ||
        append((void **)&a->jct_s, nj, o->jct_s, o->n_jct_s, sizeof(double)) != 0 ||
        append((void **)&a->eta_err, ne, o->eta_err, o->eta_covered, sizeof(double)) != 0)
        return SCHED_ENOMEM;
    a->n_queue_s += o->n_queue_s, a->n_jct_s += o->n_jct_s;
    merge_counts(a, o);
    a->per_queue[q] = o->per_queue[q];
    /* means as sums until sim_stats_merged() */
    a->mean_wait_s += o->mean_wait_s * (double)o->started;
    a->mean_jct_s += o->mean_jct_s * (double)o->completed;
    a->mean_racks_per_multinode_gang +=
        o->mean_racks_per_multinode_gang * (double)o->multinode_gangs;
    a->multinode_mean_queue_s += o->multinode_mean_queue_s * (double)o->multinode_jobs;
    for (uint32_t k = 0; k < o->n_prio; k++) {
        uint32_t i = 0;
        while (i < a->n_prio && a->prio_values[i] != o->prio_values[k])
            i++;
        if (i == a->n_prio) {
            if (a->n_prio == 8)
                continue; /* as sim_summarize: at most 8 distinct priorities reported */
            a->prio_values[a->n_prio++] = o->prio_values[k];
        }
        a->prio_jobs[i] += o->prio_jobs[k];
        a->prio_mean_queue_s[i] += o->prio_mean_queue_s[k] * (double)o->prio_jobs[k];
        a->prio_mean_wait_s[i] += o->prio_mean_wait_s[k] * (double)o->prio_jobs[k];
    }
    /* the runs' clocks are the same trace clock, so their spans merge into one */
    if (m->runs == 0 || o->t0_ms < a->t0_ms)
        a->t0_ms = o->t0_ms;
    if (m->runs == 0 || o->t_end_ms > a->t_end_ms)
        a->t_end_ms = o->t_end_ms;
    a->makespan_s = (double)(a->t_end_ms - a->t0_ms) / 1000.0;
    m->runs++;
    m->gpus += gpus;
    m->busy_gpu_s += o->gpu_utilization * gpus * o->makespan_s;
    return 0;
}

static double per(double sum, double n)
{
    return n > 0 ? sum / n : 0.0;
}

int sim_stats_merged(struct sim_merge *m)
{
    struct sim_stats *a = m->acc;
    a->mean_wait_s = per(a->mean_wait_s, a->started);
    a->mean_jct_s = per(a->mean_jct_s, a->completed);
    a->mean_racks_per_multinode_gang =
        per(a->mean_racks_per_multinode_gang, (double)a->multinode_gangs);
    a->multinode_mean_queue_s = per(a->multinode_mean_queue_s, a->multinode_jobs);
    for (uint32_t k = 0; k < a->n_prio; k++) {
        a->prio_mean_queue_s[k] = per(a->prio_mean_queue_s[k], a->prio_jobs[k]);
        a->prio_mean_wait_s[k] = per(a->prio_mean_wait_s[k], a->prio_jobs[k]);
    }
    a->mean_recovery_s = per(a->recovery_sum_s, (double)a->recoveries);
    a->fragmentation = per(a->frag_weighted_ms, a->frag_wait_ms);
    a->whole_node_wait_share = per(a->frag_wait_ms, a->frag_time_ms);
    a->gpu_utilization = per(m->busy_gpu_s, m->gpus * a->makespan_s);
    /* percentiles over every run's samples (queue_s keeps its order: queue_of matches it) */
    size_t n = a->n_queue_s;
    double *v = malloc((n + 1) * sizeof(*v));
    if (!v)
        return SCHED_ENOMEM;
    a->mean_queue_s = mean(a->queue_s, n);
    if (n > 0)
        memcpy(v, a->queue_s, n * sizeof(*v));
    qsort(v, n, sizeof(*v), cmp_double);
    a->p50_queue_s = pct(v, n, 0.50);
    a->p95_queue_s = pct(v, n, 0.95);
    a->p99_queue_s = pct(v, n, 0.99);
    free(v);
    qsort(a->jct_s, a->n_jct_s, sizeof(double), cmp_double);
    a->p95_jct_s = pct(a->jct_s, a->n_jct_s, 0.95);
    qsort(a->eta_err, a->eta_covered, sizeof(double), cmp_double);
    a->eta_median_rel_error = pct(a->eta_err, a->eta_covered, 0.50);
    a->eta_p90_rel_error = pct(a->eta_err, a->eta_covered, 0.90);
    return 0;
}

/* Integrates the quota metrics over [prev, now) from the state the last cycle left. */
void sim_quota_integrate(struct run *r, int64_t dt_ms)
{
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    double h = (double)dt_ms / 3.6e6, borrowed = 0, idle = 0;
    for (uint32_t q = 0; q < in->n_queues; q++) {
        double u = (double)sim_queue_gpus(r, q), nom = st->per_queue[q].nominal_gpus;
        borrowed += u > nom ? u - nom : 0;
        idle += nom > u ? nom - u : 0;
    }
    for (uint32_t q = 0; q < in->n_queues; q++) {
        struct sim_queue_stats *ps = &st->per_queue[q];
        double u = (double)sim_queue_gpus(r, q), nom = ps->nominal_gpus;
        ps->borrowed_gpu_hours += (u > nom ? u - nom : 0) * h;
        if (idle > 0) /* borrowed GPUs attributed to lenders in proportion to their idle quota */
            ps->lent_gpu_hours += borrowed * ((nom > u ? nom - u : 0) / idle) * h;
        if (r->reclaim_wait[q])
            ps->reclaim_wait_s += (double)dt_ms / 1000.0;
        r->hist[q] = queue_decay(r->hist[q], r->share[q], dt_ms, in->config->fair_half_life_ms);
    }
}

/* After a cycle: shares for the next interval, violations, reclaim waits. */
int sim_quota_observe(struct run *r)
{
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    struct quota_tree qt;
    arena_reset(&r->qarena);
    if (quota_build(&qt, in->config, r->usage, &r->qarena) != 0)
        return SCHED_ENOMEM;
    eng_fair_observe(&qt, r->share); /* the rule the daemon keeps too (sched/engine/fair.h) */
    bool violated = false, anyone_borrows = false;
    for (uint32_t q = 0; q < in->n_queues; q++) {
        double u = (double)sim_queue_gpus(r, q);
        violated |= quota_violated(&qt, q);
        anyone_borrows |= u > st->per_queue[q].nominal_gpus;
        if (u > st->per_queue[q].max_usage_gpus)
            st->per_queue[q].max_usage_gpus = u;
    }
    st->quota_violations += violated;
    for (uint32_t q = 0; q < in->n_queues; q++) {
        r->reclaim_wait[q] = false;
        if (!anyone_borrows || r->queues[q].n == 0)
            continue;
        const struct gang *g = r->queues[q].items[0];
        r->reclaim_wait[q] =
            (double)(sim_queue_gpus(r, q) + g->gpus) <= st->per_queue[q].nominal_gpus;
    }
    return 0;
}

/* One CSV field (RFC 4180): quoted, with quotes doubled, when it holds a comma, a quote, CR
 * or LF; as is otherwise. */
static void csv_field(FILE *f, const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")]) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int sim_write_jobs(const struct run *r, FILE *f)
{
    const struct sim_input *in = r->in;
    if (ftell(f) <= 0) /* one header, however many policies write */
        fprintf(f, "job_id,policy,queue,priority,submit_s,first_start_s,finish_s,evictions,"
                   "placement\n");
    for (uint32_t j = 0; j < in->n_jobs; j++) {
        const char *state = sim_state(r, j) == ENG_JOB_FINISHED ? "" : "-";
        csv_field(f, in->jobs[j].id);
        fputc(',', f);
        csv_field(f, r->pol->name);
        fputc(',', f);
        csv_field(f, in->queues[in->jobs[j].gang.queue].name);
        fprintf(f, ",%d,%.3f,", in->jobs[j].gang.priority,
                (double)in->jobs[j].gang.submit_ms / 1000.0);
        if (sim_state(r, j) == ENG_JOB_FINISHED || sim_state(r, j) == ENG_JOB_RUNNING ||
            r->n_evicted[j] > 0)
            fprintf(f, "%.3f,", (double)r->start_ms[j] / 1000.0);
        else
            fputs(",", f);
        if (sim_state(r, j) == ENG_JOB_FINISHED)
            fprintf(f, "%.3f,%u,", (double)r->end_ms[j] / 1000.0, r->n_evicted[j]);
        else
            fprintf(f, "%s,%u,", state, r->n_evicted[j]);
        char *place = NULL;
        size_t place_len = 0;
        FILE *pf = open_memstream(&place, &place_len);
        if (!pf)
            return SCHED_ENOMEM;
        for (uint32_t k = 0; r->assign[j] && k < sim_gang(r, j)->n_pods; k++)
            fprintf(pf, "%s%s:%x", k ? ";" : "", in->cluster->nodes[r->assign[j][k].node].name,
                    r->assign[j][k].gpu_mask);
        if (fclose(pf) != 0) {
            free(place);
            return SCHED_ENOMEM;
        }
        csv_field(f, place);
        free(place);
        fputc('\n', f);
    }
    /* errno: the cause, set by the failed flush or the earlier failed write */
    return fflush(f) != 0 || ferror(f) ? SCHED_EIO : 0;
}
