/* sched/sim/persist.c: --db: one store transaction per batch of instants, the decision log, resume
 * (see run.h). */
#include "sched/core/duration.h"
#include "sched/sim/run.h"

/* ---- preemptor holds and reservation hints (kept by the engine) ------------------------ */

/* "N job until n_nodes node... ..." for the store; 0 or an error. */
/* Devices of kind k (res.h "device kinds") in usage vector u: kind 0 is the accelerator slot
 * less the other kinds, which also count under their own names. */
static int64_t kind_usage(const int64_t *u, int k)
{
    if (k > 0)
        return u[res_kind_res(k)];
    int64_t own = u[RES_GPU];
    for (int d = 1; d < res_kind_count(); d++)
        own -= u[res_kind_res(d)];
    return own;
}

static int hl_put(struct store *db, const char *key, const struct eng *e, enum eng_hold_list l,
                  struct sched_errbuf *eb)
{
    size_t cap = 64, at = 0;
    uint32_t n = eng_hold_count(e, l);
    for (uint32_t h = 0; h < n; h++)
        cap += 48 + 12 * (size_t)eng_hold_at(e, l, h)->n_nodes;
    char *buf = malloc(cap);
    if (!buf)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    at += (size_t)snprintf(buf, cap, "%u", n);
    for (uint32_t h = 0; h < n; h++) {
        const struct eng_hold *eh = eng_hold_at(e, l, h);
        at += (size_t)snprintf(buf + at, cap - at, " %u %lld %u", eh->gang, (long long)eh->until_ms,
                               eh->n_nodes);
        for (uint32_t k = 0; k < eh->n_nodes; k++)
            at += (size_t)snprintf(buf + at, cap - at, " %u", eh->nodes[k]);
    }
    int rc = store_meta_put(db, key, buf, eb);
    free(buf);
    return rc;
}

/* The inverse of hl_put; an absent key is an empty list unless `required`. 0 or an error
 * naming the key. */
static int hl_get(struct store *db, const char *key, bool required, struct eng *e,
                  enum eng_hold_list l, uint32_t n_jobs, uint32_t n_nodes, struct sched_errbuf *eb)
{
    const char *text;
    int rc = store_meta_get(db, key, &text, eb);
    if (rc == SCHED_ENOENT && !required)
        return 0;
    if (rc != 0)
        return rc;
    char *end;
    unsigned long nh = strtoul(text, &end, 10);
    for (unsigned long h = 0; h < nh; h++) {
        unsigned long job = strtoul(end, &end, 10);
        long long until = strtoll(end, &end, 10);
        unsigned long n = strtoul(end, &end, 10);
        if (job >= n_jobs || n > n_nodes)
            return sched_fail(eb, SCHED_EINVAL, "database: meta %s is malformed", key);
        uint32_t *nodes = malloc((n + 1) * sizeof(*nodes));
        if (!nodes)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        bool ok = true;
        for (unsigned long k = 0; k < n; k++) {
            unsigned long x = strtoul(end, &end, 10);
            ok &= x < n_nodes;
            nodes[k] = (uint32_t)x;
        }
        rc = ok ? eng_hold_put(e, l, (uint32_t)job, nodes, (uint32_t)n, until) : SCHED_EINVAL;
        free(nodes);
        if (rc != 0)
            return sched_fail(
                eb, rc, rc == SCHED_ENOMEM ? "out of memory" : "database: meta %s: bad node", key);
    }
    return 0;
}
/*
 * One store transaction per batch of simulated instants (--db-batch), written after the
 * cycles of the batch's last instant:
 *   - the KPI tables of the store: jobs (store_job_upsert), the bind journal and placements
 *     (an intent and its completion for every start, a release for every finish or eviction),
 *     the usage ledger per queue and flavor, preemption records, fair-share history and the
 *     decision log (verdicts of the instant);
 *   - meta rows that make the run resumable exactly: "j:<id>" per job that changed (its whole
 *     simulation state and placement), "n:<node>" per node whose release time changed, and
 *     "sim:loop", "sim:stats", "sim:queues", "sim:holds" for the loop and the accumulators.
 * A crash loses at most the batch in progress; --resume reloads the last committed instant and
 * continues from the next one: the simulation is deterministic, so every job ends exactly as in
 * an uninterrupted run.
 */

/* The optional field after a "j:<id>" row's placement: " promise <reserve_first_ms>
 * <probation_until_ms> <probation_for>" (the job index it promised to, -1 for none). */
#define PROMISE_TAG   "promise"
/* The optional field of an elastic job (sim/elastic.c) between the placement (its running
 * members) and the promise: " elastic <n_live> <set>:<flavor>... <n_grow> <set>... <queued>
 * <the waiting members' reserve_first_ms> <gpu_ms> <n_ask> <member>..." */
#define ELASTIC_TAG   "elastic"
/* ... followed, when its waiting members asked it for a checkpoint in its current run, by
 * " joinckpt <asked_ms> <due_ms> <from_ms>" (struct sim_elastic; absent: none) */
#define JOIN_CKPT_TAG "joinckpt"

/* Job j's elastic field (nothing for a rigid job) at buf + at; the new end. */
static size_t fmt_elastic(const struct run *r, uint32_t j, char *buf, size_t at, size_t n)
{
    uint32_t k = sim_elastic_slot(r, j);
    if (k == UINT32_MAX || at >= n)
        return at;
    const struct sim_elastic *e = &r->el[k];
    at += (size_t)snprintf(buf + at, n - at, " " ELASTIC_TAG " %u", e->n_live);
    for (uint32_t m = 0; m < e->n_live && at < n; m++)
        at += (size_t)snprintf(buf + at, n - at, " %u:%u", e->live_set[m], e->live_flavor[m]);
    if (at < n)
        at += (size_t)snprintf(buf + at, n - at, " %u", e->n_grow);
    for (uint32_t m = 0; m < e->n_grow && at < n; m++)
        at += (size_t)snprintf(buf + at, n - at, " %u", e->grow_set[m]);
    if (at < n)
        at += (size_t)snprintf(buf + at, n - at, " %u %lld %.17g %u", e->grow_queued ? 1u : 0u,
                               (long long)eng_job(r->eng, r->in->n_jobs + k).reserve_first_ms,
                               e->gpu_ms, e->n_ask);
    for (uint32_t m = 0; m < e->n_ask && at < n; m++)
        at += (size_t)snprintf(buf + at, n - at, " %u", e->ask[m]);
    if (at < n && (e->ckpt_asked_ms || e->ckpt_due_ms || e->ckpt_from_ms))
        at += (size_t)snprintf(buf + at, n - at, " " JOIN_CKPT_TAG " %lld %lld %lld",
                               (long long)e->ckpt_asked_ms, (long long)e->ckpt_due_ms,
                               (long long)e->ckpt_from_ms);
    return at < n ? at : n;
}

static char *fmt_job(const struct run *r, uint32_t j, char *buf, size_t n)
{
    const struct gang *g = sim_gang(r, j); /* an elastic job: the members that run */
    size_t at = (size_t)snprintf(
        buf, n, "%u %lld %lld %lld %lld %lld %lld %u %u %u %lld %u %u %lld %u",
        (unsigned)sim_state(r, j), (long long)r->start_ms[j], (long long)r->end_ms[j],
        (long long)r->remaining_ms[j], (long long)r->run_start_ms[j], (long long)r->overhead_ms[j],
        (long long)r->busy_ms[j], r->gen[j], r->n_evicted[j], r->evicting[j],
        (long long)r->evict_at[j], r->evict_kind[j], r->job_flavor[j], (long long)r->eta_first[j],
        r->assign[j] ? g->n_pods : 0);
    for (uint32_t k = 0; r->assign[j] && k < g->n_pods && at < n; k++)
        at += (size_t)snprintf(buf + at, n - at, " %u:%u", r->assign[j][k].node,
                               r->assign[j][k].gpu_mask);
    at = fmt_elastic(r, j, buf, at, n);
    /* backfill on probation (eng_job): written only when there is a promise, so the rows of
     * other jobs read as before and rows written before it existed read as "no promise" */
    struct eng_job ej = eng_job(r->eng, j);
    if (at < n && (ej.reserve_first_ms != 0 || ej.probation_until_ms != 0))
        snprintf(buf + at, n - at, " " PROMISE_TAG " %lld %lld %lld",
                 (long long)ej.reserve_first_ms, (long long)ej.probation_until_ms,
                 ej.probation_until_ms != 0 ? (long long)ej.probation_for : -1LL);
    return buf;
}

/* Jobs per group of store writes: their "j:<id>" meta rows and jobs rows go to the store in one
 * call each (it writes several rows per statement, far cheaper than a call per row). */
#define DB_JOB_GROUP 128

struct db_group {
    uint32_t n;
    struct store_kv kv[DB_JOB_GROUP];
    struct store_job sj[DB_JOB_GROUP];
    char key[DB_JOB_GROUP][16];
    char val[DB_JOB_GROUP][128 + 24 * 64 + 40 * 64]; /* + an elastic job's members, asks */
};

/* Job j into the group (its meta row and jobs row, written by db_group_flush), and its KPI rows
 * of the bind journal and placements at once: placements follow the run (release when the store
 * holds some, then a fresh intent and bind when it runs). */
static int db_job(struct run *r, uint32_t j, int64_t now, struct db_group *gr,
                  struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_job *job = &r->in->jobs[j];
    if (job->gang.n_pods > 64)
        return sched_fail(eb, SCHED_ERANGE, "job %s: more than 64 pods cannot be persisted",
                          job->id);
    uint32_t at = gr->n++;
    snprintf(gr->key[at], sizeof(gr->key[at]), "j:%u", j);
    gr->kv[at] = (struct store_kv){gr->key[at], fmt_job(r, j, gr->val[at], sizeof(gr->val[at]))};
    const struct gang *g = sim_gang(r, j); /* an elastic job: the members that run */
    int rc = 0;
    if (r->db_placed[j]) /* a no-op otherwise: skipped */
        rc = store_placement_release(db, job->id, NULL, eb);
    r->db_placed[j] = 0;
    if (rc == 0 && sim_state(r, j) == ENG_JOB_RUNNING) {
        struct store_pod pods[64];
        char names[64][24];
        for (uint32_t k = 0; k < g->n_pods; k++) {
            snprintf(names[k], sizeof(names[k]), "pod-%u", k);
            pods[k] = (struct store_pod){.index = k,
                                         .name = names[k],
                                         .node = r->in->cluster->nodes[r->assign[j][k].node].name,
                                         .gpu_mask = r->assign[j][k].gpu_mask};
        }
        /* bound when this run (or, for an elastic job, its last change of members) began: the
         * store's views read a running job's current run from it (store/views_load.c) */
        int64_t bound = r->run_start_ms[j] <= now ? r->run_start_ms[j] : now;
        rc = store_journal_intent(db, job->id, (int64_t)r->st->cycles, bound, pods, g->n_pods, eb);
        if (rc == 0)
            rc = store_journal_done(db, job->id, STORE_ALL_PODS, STORE_BIND_BOUND, bound, NULL, eb);
        r->db_placed[j] = 1;
    }
    enum store_job_state state = sim_state(r, j) == ENG_JOB_RUNNING    ? STORE_JOB_RUNNING
                                 : sim_state(r, j) == ENG_JOB_FINISHED ? STORE_JOB_FINISHED
                                 : sim_state(r, j) == ENG_JOB_FAILED   ? STORE_JOB_FAILED
                                                                       : STORE_JOB_PENDING;
    bool started = sim_state(r, j) == ENG_JOB_RUNNING || sim_state(r, j) == ENG_JOB_FINISHED ||
                   r->n_evicted[j] > 0;
    gr->sj[at] = (struct store_job){
        .gang = job->id,
        .gang_id = j,
        .queue = r->in->queues[g->queue].name,
        .flavor = r->in->config->flavors[r->job_flavor[j]].name,
        .gpus = g->gpus,
        .state = state,
        .submit_ms = g->submit_ms,
        .admit_ms = started ? r->start_ms[j] : STORE_NO_TIME,
        .start_ms = started ? r->start_ms[j] : STORE_NO_TIME,
        .finish_ms = sim_state(r, j) == ENG_JOB_FINISHED ? r->end_ms[j] : STORE_NO_TIME,
        .preemptions = r->n_evicted[j],
        .user = job->user,
    };
    return rc;
}

static int db_group_flush(struct run *r, struct db_group *gr, struct sched_errbuf *eb)
{
    int rc = store_meta_put_many(r->opt->db, gr->kv, gr->n, eb);
    if (rc == 0)
        rc = store_job_upsert_many(r->opt->db, gr->sj, gr->n, eb);
    gr->n = 0;
    return rc;
}

/* The jobs that changed during the batch, a group at a time. */
static int db_jobs(struct run *r, int64_t now, struct sched_errbuf *eb)
{
    struct db_group *gr = malloc(sizeof(*gr));
    if (!gr)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    gr->n = 0;
    int rc = 0;
    for (uint32_t k = 0; rc == 0 && k < r->n_dirty; k++) {
        rc = db_job(r, r->dirty_list[k], now, gr, eb);
        if (rc == 0 && (gr->n == DB_JOB_GROUP || k + 1 == r->n_dirty))
            rc = db_group_flush(r, gr, eb);
    }
    free(gr);
    return rc;
}

/* A logged reason's new figures (or expected start) under the same why: the store would rewrite
 * the job's newest row each time. Readers see only commits (WAL), so within one transaction the
 * last text is all anyone can read: it is kept here and written once, before the job's next row,
 * at the commit, or when DB_TEXTS are kept. The row keeps the cycle and time of the first such
 * change, which only a row the retention pruned meanwhile would take (the store appends then, as
 * it would have). The verdict is formatted when written, unless it names a gang that may change
 * meanwhile (an elastic job's members): trace gangs are the run's constant input. */
#define DB_TEXTS 4096

struct db_text {
    uint32_t j;              /* the job, or UINT32_MAX once written */
    struct store_decision d; /* reason and eta pointed here when written (texts moves) */
    bool has_note;
    struct sched_verdict v; /* v.gang NULL: the text is in reason already */
    char reason[512], note[64];
};

/* Job j's kept text, written now (before its next row). */
static int db_text_flush(struct run *r, uint32_t j, struct sched_errbuf *eb)
{
    uint32_t k = r->text_of[j];
    if (k == 0)
        return 0;
    struct db_text *t = &r->texts[k - 1];
    r->text_of[j] = 0;
    t->j = UINT32_MAX;
    if (t->v.gang)
        sched_verdict_format(&t->v, r->in->cluster, r->in->config, t->reason, sizeof(t->reason));
    t->d.reason = t->reason;
    t->d.eta = t->has_note ? t->note : NULL;
    return store_decision_add(r->opt->db, &t->d, eb);
}

/* Every kept text not yet written, in the order kept; then none is kept. */
static int db_texts_flush(struct run *r, struct sched_errbuf *eb)
{
    int rc = 0;
    for (uint32_t k = 0; rc == 0 && k < r->n_texts; k++)
        if (r->texts[k].j != UINT32_MAX)
            rc = db_text_flush(r, r->texts[k].j, eb);
    r->n_texts = 0;
    return rc;
}

/* Keeps verdict v with d's expected start as job j's text: the first kept one's cycle and time,
 * the newest verdict and expected start. */
static int db_text_keep(struct run *r, uint32_t j, const struct sched_verdict *v,
                        const struct store_decision *d, struct sched_errbuf *eb)
{
    uint32_t k = r->text_of[j];
    if (k == 0) {
        int rc = r->n_texts == DB_TEXTS ? db_texts_flush(r, eb) : 0;
        if (rc == 0 && r->n_texts == r->cap_texts) {
            uint32_t cap = r->cap_texts ? 2 * r->cap_texts : 256;
            struct db_text *nt = realloc(r->texts, cap * sizeof(*nt));
            if (!nt)
                return sched_fail(eb, SCHED_ENOMEM, "out of memory");
            r->texts = nt, r->cap_texts = cap;
        }
        if (rc != 0)
            return rc;
        k = ++r->n_texts;
        r->text_of[j] = k;
        r->texts[k - 1].j = j;
        r->texts[k - 1].d = *d;
    }
    struct db_text *t = &r->texts[k - 1];
    uint32_t n = r->in->n_jobs;
    t->v = *v;
    if (v->gang->id >= n || (v->blocked_by && v->blocked_by->id >= n)) {
        sched_verdict_format(v, r->in->cluster, r->in->config, t->reason, sizeof(t->reason));
        t->v.gang = NULL;
    }
    t->d.why = d->why, t->d.has_eta = d->has_eta, t->d.eta_ms = d->eta_ms;
    t->has_note = d->eta != NULL;
    snprintf(t->note, sizeof(t->note), "%s", d->eta ? d->eta : "");
    return 0;
}

static int db_put_doubles(struct store *db, const char *key, const double *v, uint32_t n,
                          struct sched_errbuf *eb)
{
    char *buf = malloc((size_t)n * 28 + 2);
    if (!buf)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    size_t at = 0;
    buf[0] = 0;
    for (uint32_t k = 0; k < n; k++)
        at += (size_t)sprintf(buf + at, k ? " %.17g" : "%.17g", v[k]);
    int rc = store_meta_put(db, key, buf, eb);
    free(buf);
    return rc;
}

/* Everything the batch changed, then the commit; `reopen` begins the next batch's transaction
 * (the cycles' decisions and preemption records go into it as they happen). */
int sim_db_commit_instant(struct run *r, int64_t now, bool reopen, struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    int rc = store_in_txn(db) ? 0 : store_begin(db, eb);
    if (rc == 0)
        rc = db_texts_flush(r, eb);
    if (rc == 0)
        rc = db_jobs(r, now, eb);
    for (uint32_t i = 0; rc == 0 && i < in->cluster->n_nodes; i++)
        if (r->node_dirty[i]) {
            char key[32], val[32];
            snprintf(key, sizeof(key), "n:%u", i);
            snprintf(val, sizeof(val), "%lld", (long long)r->bounded_max[i]);
            rc = store_meta_put(db, key, val, eb);
        }
    for (uint32_t q = 0; rc == 0 && q < in->n_queues; q++) {
        for (uint32_t f = 0; rc == 0 && f < r->n_flavors; f++)
            for (int k = 0; rc == 0 && k < res_kind_count(); k++)
                rc = store_ledger_set(db, in->queues[q].name, in->config->flavors[f].name,
                                      res_name(res_kind_res(k)),
                                      kind_usage(sim_usage_at(r, q, f), k), eb);
        if (rc == 0)
            rc = store_history_put(db, in->queues[q].name, r->hist[q], now, eb);
    }
    if (rc == 0) {
        char loop[512];
        snprintf(loop, sizeof(loop), "%u %lld %lld %lld %.17g %.17g %.17g %u %llu %llu %.17g %lld",
                 r->next_sub, (long long)r->t0, (long long)r->t_end, (long long)r->prev_t,
                 r->frag_w, r->frag_t, r->frag_now, r->whole_waiting,
                 (unsigned long long)r->last_reservation, (unsigned long long)r->events_done,
                 r->frag_wait, (long long)r->wake_ms);
        rc = store_meta_put(db, "sim:loop", loop, eb);
    }
    if (rc == 0) {
        double v[] = {(double)st->tp_splits,
                      st->mean_racks_per_multinode_gang,
                      (double)st->multinode_gangs,
                      (double)st->preemptions,
                      (double)st->preempted_gangs,
                      st->gpu_hours_lost_to_preemption,
                      (double)st->checkpoint_requests,
                      (double)st->quota_violations,
                      (double)st->backfilled,
                      (double)st->reservations,
                      (double)st->cycles};
        rc = db_put_doubles(db, "sim:stats", v, sizeof(v) / sizeof(v[0]), eb);
    }
    if (rc == 0 && in->n_elastic > 0) {
        double v[] = {(double)st->member_preemptions,
                      (double)st->members_preempted,
                      (double)st->member_joins,
                      (double)st->members_replaced,
                      st->gpu_hours_lost_at_shrink,
                      st->gpu_hours_lost_at_join,
                      (double)st->join_checkpoint_requests};
        rc = db_put_doubles(db, "sim:elastic", v, sizeof(v) / sizeof(v[0]), eb);
    }
    if (rc == 0) {
        uint32_t nq = in->n_queues, nv = 7 * nq;
        double *v = malloc((nv + 1) * sizeof(*v));
        if (!v)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        for (uint32_t q = 0; q < nq; q++) {
            const struct sim_queue_stats *ps = &st->per_queue[q];
            double *x = v + 7 * q;
            x[0] = ps->max_usage_gpus, x[1] = ps->borrowed_gpu_hours, x[2] = ps->lent_gpu_hours;
            x[3] = ps->reclaim_wait_s, x[4] = r->hist[q], x[5] = r->share[q];
            x[6] = r->reclaim_wait[q];
        }
        rc = db_put_doubles(db, "sim:queues", v, nv, eb);
        free(v);
    }
    if (rc == 0)
        rc = hl_put(db, "sim:holds", r->eng, ENG_HOLDS, eb);
    if (rc == 0)
        rc = hl_put(db, "sim:hints", r->eng, ENG_HINTS, eb);
    if (rc == 0)
        rc = store_commit(db, eb);
    else
        store_rollback(db);
    if (rc == 0 && reopen)
        rc = store_begin(db, eb);
    for (uint32_t k = 0; k < r->n_dirty; k++)
        r->dirty[r->dirty_list[k]] = 0;
    r->n_dirty = 0;
    memset(r->node_dirty, 0, in->cluster->n_nodes);
    return rc;
}

/* FNV-1a over a verdict's fields (everything sched_verdict_format prints, besides the static
 * cluster and config): whether its text may have changed since the last row, without
 * formatting it. Never 0 (0 = unknown, after a resume). */
static uint32_t fnv(uint32_t h, const void *p, size_t n)
{
    /* a word (4 bytes) per step: every pending gang's verdict is hashed every cycle */
    const unsigned char *c = p;
    for (; n >= 4; n -= 4, c += 4) {
        uint32_t w;
        memcpy(&w, c, 4);
        h = (h ^ w) * 16777619u;
    }
    for (; n; n--, c++)
        h = (h ^ *c) * 16777619u;
    return h;
}

static uint32_t verdict_hash(const struct sched_verdict *v)
{
    uint32_t h = 2166136261u;
    int64_t f[] = {v->why,
                   v->short_res,
                   v->need,
                   v->best_free,
                   v->n_nodes,
                   v->near_level,
                   v->near_domain,
                   (int64_t)v->near_pods,
                   v->quota_res,
                   v->quota_flavor,
                   v->quota_need,
                   v->quota_nominal,
                   v->quota_used,
                   v->quota_available,
                   v->quota_potential,
                   v->blocked_by ? (int64_t)v->blocked_by->id : -1,
                   v->held_for_preemptor,
                   v->hold_start_unknown,
                   v->never_domain,
                   v->reclaim_after_ms};
    h = fnv(h, f, sizeof(f));
    h = fnv(h, v->filtered, sizeof(v->filtered));
    return h ? h : 1;
}

/* A placement's decision row, as the daemon writes it (record_placement): "placed", or the
 * promise of a gang backfilled on probation (sched_placed_format; times as "t=" the run's
 * clock). Members joining their running job log it under the job's name ("placed"). After it,
 * the job's next verdict is logged whatever the last one was: it waits anew. */
static int db_placed_row(struct run *r, const struct sched_placement *pl, int64_t now,
                         struct sched_errbuf *eb)
{
    uint32_t j = sim_job_of(r, pl->gang->id);
    char text[640], until[48] = "t=";
    const char *to = NULL;
    int64_t first = 0;
    if (pl->probation_for && j == pl->gang->id) {
        first = eng_job(r->eng, pl->probation_for->id).reserve_first_ms;
        to = first > 0 ? r->in->jobs[sim_job_of(r, pl->probation_for->id)].id : NULL;
        dur_format(first, until + 2, sizeof(until) - 2);
    }
    struct store_decision d = {
        .cycle = (int64_t)r->st->cycles,
        .ts_ms = now,
        .gang = r->in->jobs[j].id,
        .why = SCHED_WHY_PLACED,
        .reason = sched_placed_format(to, until, first <= now, text, sizeof(text))};
    /* the store's newest row of the job is the last one written here, if the retention kept it */
    bool append = r->last_why[j] != SCHED_WHY_PLACED + 1;
    r->last_why[j] = (uint8_t)(SCHED_WHY_PLACED + 1);
    r->last_reason[j] = 0;
    r->last_eta[j] = INT64_MIN;
    int rc = db_text_flush(r, j, eb);
    if (rc == 0)
        rc = append ? store_decision_append(r->opt->db, &d, eb)
                    : store_decision_add(r->opt->db, &d, eb);
    return rc;
}

/* A text's hash for resume_text: never 0. */
static uint32_t text_hash(const char *s)
{
    uint32_t h = fnv(2166136261u, s, strlen(s));
    return h ? h : 1;
}

/* The first verdict of job j after a resume: the hash of the last verdict logged is not saved,
 * so the text of the job's newest row tells whether this one repeats it. A repeat is not a
 * change (last_reason = its hash): only a moved expected start rewrites the row, as in the
 * uninterrupted run (which kept that hash). */
static void resumed_repeat(struct run *r, uint32_t j, const struct sched_verdict *v, uint8_t why,
                           uint32_t h)
{
    uint32_t t = r->resume_text[j];
    r->resume_text[j] = 0;
    if (r->last_why[j] != why)
        return;
    char reason[512];
    sched_verdict_format(v, r->in->cluster, r->in->config, reason, sizeof(reason));
    if (text_hash(reason) == t)
        r->last_reason[j] = h;
}

/* The decision log (one row per verdict: gangs examined and not started, members waiting to
 * join their running job under its name; the store keeps a row per change of why, with the
 * latest text; one row per placement) and the preemption records of one cycle. */
int sim_db_cycle_records(struct run *r, const struct sched_result *res, int64_t now,
                         struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_input *in = r->in;
    int rc = 0;
    for (uint32_t p = 0; rc == 0 && p < res->n_placements; p++)
        rc = db_placed_row(r, &res->placements[p], now, eb);
    eta_index(res, r->eta_of, r->n_ids); /* each gang's expected start, by its id */
    for (uint32_t v = 0; rc == 0 && v < res->n_verdicts; v++) {
        uint32_t id = res->verdicts[v].gang->id;
        uint32_t j = sim_job_of(r, id); /* members waiting to join: under their job's name */
        uint8_t why = (uint8_t)(res->verdicts[v].why + 1);
        char note[64];
        struct store_decision d = {.cycle = (int64_t)r->st->cycles,
                                   .ts_ms = now,
                                   .gang = in->jobs[j].id,
                                   .why = (int)res->verdicts[v].why};
        eta_for_log(r->eta_of[id], now, &d.has_eta, &d.eta_ms, note, sizeof(note));
        d.eta = note[0] ? note : NULL;
        /* the log records changes of reason (and of its figures) and of the expected start
         * (store_decision_eta_moved), not every repeat */
        int64_t at = d.has_eta && !d.eta ? d.eta_ms : INT64_MIN;
        bool moved = store_decision_eta_moved(r->last_eta[j], at, now);
        uint32_t h = verdict_hash(&res->verdicts[v]);
        if (r->resume_text && r->resume_text[j])
            resumed_repeat(r, j, &res->verdicts[v], why, h);
        if (r->last_why[j] == why && r->last_reason[j] == h && !moved)
            continue;
        bool same_row = r->last_why[j] == why;
        r->last_why[j] = why;
        r->last_reason[j] = h;
        r->last_eta[j] = at;
        if (same_row) {
            rc = db_text_keep(r, j, &res->verdicts[v], &d, eb);
            continue;
        }
        char reason[512];
        sched_verdict_format(&res->verdicts[v], in->cluster, in->config, reason, sizeof(reason));
        d.reason = reason;
        if ((rc = db_text_flush(r, j, eb)) == 0) /* last_why[j] was another why */
            rc = store_decision_append(db, &d, eb);
    }
    eta_unindex(res, r->eta_of, r->n_ids);
    for (uint32_t e = 0; rc == 0 && e < res->n_evictions; e++) {
        const struct sched_eviction *ev = &res->evictions[e];
        struct store_preemption p = {.cycle = (int64_t)r->st->cycles,
                                     .ts_ms = now,
                                     .victim = in->jobs[ev->victim->gang->id].id,
                                     .preemptor = in->jobs[sim_job_of(r, ev->preemptor->id)].id,
                                     .gpus = ev->pods ? ev->gpus : ev->victim->gang->gpus,
                                     .members = ev->pods ? ev->n_pods : 0,
                                     .lost_work_gpu_s = ev->lost_gpu_s,
                                     .cost = ev->cost,
                                     .kind = sched_preempt_kind_name(ev->kind)};
        rc = store_preemption_add(db, &p, eb);
    }
    return rc;
}

/* Reads "%.17g" numbers v[0 .. n) from meta row key, at least need of them (the others 0 when
 * absent). */
static int db_get_doubles(struct store *db, const char *key, double *v, uint32_t n, uint32_t need,
                          struct sched_errbuf *eb)
{
    const char *text;
    int rc = store_meta_get(db, key, &text, eb);
    if (rc != 0)
        return rc;
    char *end;
    for (uint32_t k = 0; k < n; k++) {
        v[k] = strtod(text, &end);
        if (end == text && k >= need) {
            v[k] = 0;
            continue;
        }
        if (end == text)
            return sched_fail(eb, SCHED_EINVAL, "database: meta %s: expected %u numbers", key,
                              need);
        text = end;
    }
    return 0;
}

/* Recovery of the store itself: intents still open belong to binds that never completed (the
 * simulator binds in the same transaction, so there are none unless the file was written by
 * something else): they are rolled back. */
static int rollback_intent(void *ctx, const struct store_intent *in)
{
    struct store *db = ctx;
    LOG_WARN("store", "gang %s: %u bind intent(s) from cycle %lld never completed: rolled back",
             in->gang, in->n_pods, (long long)in->cycle);
    return store_journal_done(db, in->gang, STORE_ALL_PODS, STORE_BIND_ROLLED_BACK, in->intent_ms,
                              NULL, NULL);
}

/* The ledger must equal what the running gangs hold; differences are corrected and logged. */
static int db_reconcile(struct run *r, struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_input *in = r->in;
    int rc = store_journal_pending(db, rollback_intent, db, eb);
    uint32_t nk = (uint32_t)res_kind_count();
    uint32_t n = in->n_queues * r->n_flavors * nk, n_diff = 0;
    struct store_ledger_row *rows = calloc(n + 1, sizeof(*rows));
    if (!rows)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    for (uint32_t q = 0; q < in->n_queues; q++)
        for (uint32_t f = 0; f < r->n_flavors; f++)
            for (uint32_t k = 0; k < nk; k++)
                rows[(q * r->n_flavors + f) * nk + k] =
                    (struct store_ledger_row){.queue = in->queues[q].name,
                                              .flavor = in->config->flavors[f].name,
                                              .resource = res_name(res_kind_res((int)k)),
                                              .amount = kind_usage(sim_usage_at(r, q, f), (int)k)};
    if (rc == 0)
        rc = store_ledger_reconcile(db, rows, n, &n_diff, eb);
    free(rows);
    if (rc == 0 && n_diff > 0)
        LOG_WARN("store", "ledger differed from the running gangs in %u row(s): corrected", n_diff);
    return rc;
}

/* Rebuilds the run from the last committed instant (see the comment above). */
struct job_key {
    const char *id;
    uint32_t j;
};

static int cmp_job_key(const void *a, const void *b)
{
    return strcmp(((const struct job_key *)a)->id, ((const struct job_key *)b)->id);
}

struct why_ctx {
    struct run *r;
    const struct job_key *keys;
};

static int restore_why(void *ctx, const struct store_decision *d)
{
    struct why_ctx *w = ctx;
    struct job_key k = {.id = d->gang};
    const struct job_key *hit = bsearch(&k, w->keys, w->r->in->n_jobs, sizeof(k), cmp_job_key);
    if (hit && w->r->last_why[hit->j] == 0 && d->why >= 0 && d->why < 255) {
        w->r->last_why[hit->j] = (uint8_t)(d->why + 1); /* newest first: the first row wins */
        w->r->last_eta[hit->j] = d->has_eta && !d->eta ? d->eta_ms : INT64_MIN;
        w->r->last_reason[hit->j] = 0; /* unknown: resumed_repeat compares the next one's text */
        w->r->resume_text[hit->j] = text_hash(d->reason ? d->reason : "");
    }
    return 0;
}

/* The last reason logged per job, from the decision log itself, so that a resumed run logs
 * the same changes of reason as an uninterrupted one (a job whose newest row the retention
 * settings pruned is logged again at its next verdict). */
static int db_restore_last_why(struct run *r, struct sched_errbuf *eb)
{
    struct job_key *keys = malloc((r->in->n_jobs + 1) * sizeof(*keys));
    if (!keys)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    for (uint32_t j = 0; j < r->in->n_jobs; j++)
        keys[j] = (struct job_key){.id = r->in->jobs[j].id, .j = j};
    qsort(keys, r->in->n_jobs, sizeof(*keys), cmp_job_key);
    r->resume_text = calloc(r->in->n_jobs + 1, sizeof(*r->resume_text));
    if (!r->resume_text) {
        free(keys);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    struct why_ctx w = {.r = r, .keys = keys};
    int rc = store_decision_list(r->opt->db, NULL, 0, restore_why, &w, eb);
    free(keys);
    return rc;
}

/* Job j's promises from the text of its "j:<id>" row after its placement (PROMISE_TAG): none
 * when the row ends there (rows written before promises were saved read so too). */
static int resume_promise(struct run *r, uint32_t j, const char *key, const char *p,
                          struct sched_errbuf *eb)
{
    while (*p == ' ')
        p++;
    if (*p == '\0')
        return 0;
    size_t tl = strlen(PROMISE_TAG);
    if (strncmp(p, PROMISE_TAG, tl) != 0 || p[tl] != ' ')
        return sched_fail(eb, SCHED_EINVAL,
                          "database: meta %s: unknown field after the placement: \"%.32s\"", key,
                          p);
    long long first, until, to;
    int used = 0;
    if (sscanf(p + tl, " %lld %lld %lld%n", &first, &until, &to, &used) != 3 ||
        p[tl + (size_t)used] != '\0' || first < 0 || until < 0 || to < -1 ||
        to >= (long long)r->in->n_jobs || (until > 0) != (to >= 0))
        return sched_fail(eb, SCHED_EINVAL,
                          "database: meta %s: field %s: expected <reserve_first_ms> "
                          "<probation_until_ms> <probation_for: a job index, or -1>",
                          key, PROMISE_TAG);
    if (eng_job_restore_promise(r->eng, j, first, until, to < 0 ? ENG_NONE : (uint32_t)to) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    return 0;
}

/* An elastic job's field of its "j:<id>" row (ELASTIC_TAG, after its placement of n_live
 * pods), restored (sim_elastic_restore); nothing for a row without it. */
static int resume_elastic(struct run *r, uint32_t j, const char *key, const char **pp,
                          uint32_t n_live, struct sched_errbuf *eb)
{
    const char *p = *pp;
    while (*p == ' ')
        p++;
    size_t tl = strlen(ELASTIC_TAG);
    uint32_t k = sim_elastic_slot(r, j);
    bool has = strncmp(p, ELASTIC_TAG, tl) == 0 && p[tl] == ' ';
    if (!has)
        return k != UINT32_MAX && n_live > 0
                   ? sched_fail(eb, SCHED_EINVAL, "database: meta %s: no field %s", key,
                                ELASTIC_TAG)
                   : 0;
    const struct gang *full = &r->in->jobs[j].gang;
    struct sim_elastic *e = k != UINT32_MAX ? &r->el[k] : NULL;
    uint8_t *sets[2] = {e ? e->live_set : NULL, e ? e->grow_set : NULL};
    uint32_t count[2] = {0, 0}, queued = 0, n_ask = 0;
    long long first = 0;
    double gpu_ms = 0;
    bool okay = e != NULL;
    p += tl;
    for (int w = 0; okay && w < 2; w++) {
        int used = 0;
        okay = sscanf(p, " %u%n", &count[w], &used) == 1 && count[w] <= full->n_pods;
        p += used;
        for (uint32_t m = 0; okay && m < count[w]; m++) {
            unsigned s, f = 0; /* a running member's flavor after its set */
            okay = (w == 0 ? sscanf(p, " %u:%u%n", &s, &f, &used) == 2
                           : sscanf(p, " %u%n", &s, &used) == 1) &&
                   s < full->n_sets && f < r->n_flavors;
            sets[w][m] = (uint8_t)s;
            if (okay && w == 0)
                e->live_flavor[m] = (uint8_t)f;
            p += used;
        }
    }
    int used = 0;
    okay = okay && count[0] == n_live && count[0] + count[1] <= full->n_pods &&
           sscanf(p, " %u %lld %lg %u%n", &queued, &first, &gpu_ms, &n_ask, &used) == 4 &&
           queued <= 1 && first >= 0 && n_ask <= count[0];
    p += okay ? used : 0;
    for (uint32_t m = 0; okay && m < n_ask; m++) {
        okay = sscanf(p, " %u%n", &e->ask[m], &used) == 1 && e->ask[m] < count[0];
        p += used;
    }
    long long ck[3] = {0, 0, 0};
    if (okay &&
        sscanf(p, " " JOIN_CKPT_TAG " %lld %lld %lld%n", &ck[0], &ck[1], &ck[2], &used) == 3) {
        okay = ck[0] >= 0 && ck[1] >= 0 && ck[2] >= 0;
        p += used;
    }
    if (!okay)
        return sched_fail(eb, SCHED_EINVAL,
                          "database: meta %s: field %s: expected <n_live> <set>:<flavor>... "
                          "<n_grow> <set>... <queued> <reserve_first_ms> <gpu_ms> <n_ask> "
                          "<member>... [" JOIN_CKPT_TAG " <asked_ms> <due_ms> <from_ms>], within "
                          "the job's pods and the flavors",
                          key, ELASTIC_TAG);
    *pp = p;
    e->ckpt_asked_ms = ck[0], e->ckpt_due_ms = ck[1], e->ckpt_from_ms = ck[2];
    if (ck[1] > 0) /* the answer still to come (its run's generation is restored) */
        sim_heap_push(r, ck[1], j, FIN_JOIN_CKPT);
    if (sim_elastic_restore(r, j, count[0], count[1], queued != 0, first, gpu_ms, n_ask) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    return 0;
}

/* The placement of job j (n pods: an elastic job's running members, else every pod) from its
 * "j:<id>" row (the text after its fields). */
static int resume_placement(struct run *r, uint32_t j, const char *key, const char **pp, uint32_t n,
                            struct sched_errbuf *eb)
{
    const char *p = *pp;
    struct sched_assign *a = malloc((n + 1) * sizeof(*a));
    if (!a)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    for (uint32_t k = 0; k < n; k++) {
        unsigned node, mask;
        int used = 0;
        if (sscanf(p, " %u:%u%n", &node, &mask, &used) != 2 || node >= r->in->cluster->n_nodes) {
            free(a);
            return sched_fail(eb, SCHED_EINVAL, "database: meta %s: bad placement", key);
        }
        a[k] = (struct sched_assign){.node = node, .gpu_mask = mask};
        p += used;
    }
    *pp = p;
    r->assign[j] = a;
    return 0;
}

/* Job j, when it runs: its pods back on their nodes, with its timed events. */
static void resume_start(struct run *r, uint32_t j, bool evicting)
{
    if (sim_state(r, j) != ENG_JOB_RUNNING)
        return;
    sim_occupy(r, j, r->assign[j], -1); /* release times come from the saved n:<node> rows */
    r->runpos[j] = r->n_run;
    r->runlist[r->n_run++] = j;
    sim_heap_push(r,
                  r->run_start_ms[j] + r->overhead_ms[j] + sim_wall_for(r, j, r->remaining_ms[j]),
                  j, FIN_FINISH);
    if (evicting)
        sim_heap_push(r, r->evict_at[j], j, (enum fin_kind)r->evict_kind[j]);
}

/* Job j from its "j:<index>" row, when it has one. */
static int resume_job(struct run *r, uint32_t j, struct sched_errbuf *eb)
{
    const struct sim_input *in = r->in;
    const char *text;
    char key[32];
    snprintf(key, sizeof(key), "j:%u", j);
    int rc = store_meta_get(r->opt->db, key, &text, eb);
    if (rc == SCHED_ENOENT)
        return 0; /* never written: still in the future (or never started pending) */
    if (rc != 0)
        return rc;
    const struct gang *g = &in->jobs[j].gang;
    unsigned status, gen, nev, evicting, ekind, flavor, npods;
    long long start, end, rem, rstart, over, busy, eat, eta;
    int off = 0;
    if (sscanf(text, "%u %lld %lld %lld %lld %lld %lld %u %u %u %lld %u %u %lld %u%n", &status,
               &start, &end, &rem, &rstart, &over, &busy, &gen, &nev, &evicting, &eat, &ekind,
               &flavor, &eta, &npods, &off) != 15 ||
        status > ENG_JOB_FAILED || flavor >= r->n_flavors ||
        (npods != 0 && npods != g->n_pods &&
         !(sim_elastic_slot(r, j) != UINT32_MAX && npods < g->n_pods)))
        return sched_fail(eb, SCHED_EINVAL, "database: meta %s is malformed", key);
    eng_job_restore(r->eng, j, (enum eng_state)status, 0);
    r->start_ms[j] = start, r->end_ms[j] = end;
    r->remaining_ms[j] = rem, r->run_start_ms[j] = rstart, r->overhead_ms[j] = over;
    r->busy_ms[j] = busy, r->gen[j] = gen, r->n_evicted[j] = nev;
    r->evicting[j] = (uint8_t)evicting, r->evict_at[j] = eat, r->evict_kind[j] = (uint8_t)ekind;
    r->job_flavor[j] = flavor, r->eta_first[j] = eta;
    r->db_placed[j] = status == ENG_JOB_RUNNING; /* as db_job() left the store */
    if (status == ENG_JOB_PENDING) {
        if (queue_list_insert(&r->queues[g->queue], g) != 0)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        r->n_pending++;
        if (sim_whole_node(r, g))
            r->n_pending_whole++;
    }
    const char *rest = text + off;
    if (npods > 0 && (rc = resume_placement(r, j, key, &rest, npods, eb)) != 0)
        return rc;
    if ((rc = resume_elastic(r, j, key, &rest, npods, eb)) != 0)
        return rc;
    if (npods > 0)
        resume_start(r, j, evicting != 0);
    if ((rc = resume_promise(r, j, key, rest, eb)) != 0)
        return rc;
    return 0;
}

int sim_db_resume(struct run *r, struct sched_errbuf *eb)
{
    struct store *db = r->opt->db;
    const struct sim_input *in = r->in;
    struct sim_stats *st = r->st;
    const char *text;
    int rc = store_meta_get(db, "sim:loop", &text, eb);
    if (rc == SCHED_ENOENT)
        return 0; /* it crashed before its first commit: start from the beginning */
    if (rc != 0)
        return rc;
    unsigned next_sub, whole;
    long long t0, t_end, prev_t, wake = INT64_MAX;
    unsigned long long last_res, events;
    /* the 12th field, the pending wake-up, is absent from the stores of older versions */
    int n = sscanf(text, "%u %lld %lld %lld %lg %lg %lg %u %llu %llu %lg %lld", &next_sub, &t0,
                   &t_end, &prev_t, &r->frag_w, &r->frag_t, &r->frag_now, &whole, &last_res,
                   &events, &r->frag_wait, &wake);
    if ((n != 11 && n != 12) || next_sub > in->n_jobs)
        return sched_fail(eb, SCHED_EINVAL, "database: meta sim:loop is malformed");
    r->next_sub = next_sub, r->t0 = t0, r->t_end = t_end, r->prev_t = prev_t;
    if (wake != INT64_MAX && wake > prev_t) { /* a cycle's wake-up still to come */
        r->wake_ms = wake;
        sim_heap_push(r, wake, 0, FIN_WAKE);
    }
    r->whole_waiting = whole != 0, r->last_reservation = last_res, r->events_done = events;
    double v[11]; /* sim:stats, then sim:elastic (7) */
    if ((rc = db_get_doubles(db, "sim:stats", v, 11, 11, eb)) != 0)
        return rc;
    st->tp_splits = (uint64_t)v[0], st->mean_racks_per_multinode_gang = v[1];
    st->multinode_gangs = (uint64_t)v[2], st->preemptions = (uint64_t)v[3];
    st->preempted_gangs = (uint64_t)v[4], st->gpu_hours_lost_to_preemption = v[5];
    st->checkpoint_requests = (uint64_t)v[6], st->quota_violations = (uint64_t)v[7];
    st->backfilled = (uint64_t)v[8], st->reservations = (uint64_t)v[9];
    st->cycles = (uint64_t)v[10];
    if (in->n_elastic > 0) { /* written with sim:stats whenever the trace has elastic jobs */
        if ((rc = db_get_doubles(db, "sim:elastic", v, 7, 6, eb)) != 0)
            return rc; /* the 7th, checkpoints asked for a join, absent from older stores */
        st->member_preemptions = (uint64_t)v[0], st->members_preempted = (uint64_t)v[1];
        st->member_joins = (uint64_t)v[2], st->members_replaced = (uint64_t)v[3];
        st->gpu_hours_lost_at_shrink = v[4], st->gpu_hours_lost_at_join = v[5];
        st->join_checkpoint_requests = (uint64_t)v[6];
    }
    double *qv = malloc((7 * in->n_queues + 1) * sizeof(*qv));
    if (!qv)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    rc = db_get_doubles(db, "sim:queues", qv, 7 * in->n_queues, 7 * in->n_queues, eb);
    for (uint32_t q = 0; rc == 0 && q < in->n_queues; q++) {
        struct sim_queue_stats *ps = &st->per_queue[q];
        const double *x = qv + 7 * q;
        ps->max_usage_gpus = x[0], ps->borrowed_gpu_hours = x[1], ps->lent_gpu_hours = x[2];
        ps->reclaim_wait_s = x[3], r->hist[q] = x[4], r->share[q] = x[5];
        r->reclaim_wait[q] = x[6] != 0;
    }
    free(qv);
    if (rc != 0)
        return rc;
    /* nodes' declared release times */
    for (uint32_t i = 0; i < in->cluster->n_nodes; i++) {
        char key[32];
        snprintf(key, sizeof(key), "n:%u", i);
        rc = store_meta_get(db, key, &text, eb);
        if (rc == SCHED_ENOENT)
            continue;
        if (rc != 0)
            return rc;
        r->bounded_max[i] = strtoll(text, NULL, 10);
    }
    for (uint32_t j = 0; j < in->n_jobs; j++)
        if ((rc = resume_job(r, j, eb)) != 0)
            return rc;
    for (uint32_t i = 0; i < in->cluster->n_nodes; i++) {
        r->state[i].release_ms = r->unbounded[i] > 0 ? INT64_MAX : r->bounded_max[i];
        if (r->state[i].release_ms != 0)
            sim_release_note(r, i);
    }
    /* preemptor holds (always written) and reservation hints */
    uint32_t nn = in->cluster->n_nodes;
    if ((rc = hl_get(db, "sim:holds", true, r->eng, ENG_HOLDS, r->n_ids, nn, eb)) != 0 ||
        (rc = hl_get(db, "sim:hints", false, r->eng, ENG_HINTS, r->n_ids, nn, eb)) != 0)
        return rc;
    if ((rc = db_restore_last_why(r, eb)) != 0)
        return rc;
    return db_reconcile(r, eb);
}
