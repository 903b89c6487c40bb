/* sched/sim/estimates.c: run-time estimates learned from finishes and the start planner's inputs
 * (see run.h). */
#include <string.h>

#include "sched/core/bits.h"
#include "sched/sim/run.h"

/* ---- estimates ---------------------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Learns the run times of the gangs that finished in this instant, in job id order. */
void sim_learn(struct run *r)
{
    qsort(r->fin_now, r->n_fin_now, sizeof(*r->fin_now), cmp_u32);
    for (uint32_t k = 0; k < r->n_fin_now; k++) {
        const struct gang *g = &r->in->jobs[r->fin_now[k]].gang;
        (void)est_observe(
            &r->est, g->queue, g->user, g->gpus, r->busy_ms[r->fin_now[k]],
            g->submit_ms); /* out of memory: its user's ring misses it, the queue's learn it */
    }
    r->n_fin_now = 0;
}

static const int64_t *sort_end_ms; /* qsort context of cmp_by_end (single-threaded) */

static int cmp_by_end(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int64_t ex = sort_end_ms[x], ey = sort_end_ms[y];
    return ex != ey ? (ex > ey) - (ex < ey) : (x > y) - (x < y);
}

/* After a resume: what an uninterrupted run had learned, in the same order. */
void sim_relearn(struct run *r)
{
    r->n_fin_now = 0;
    for (uint32_t j = 0; j < r->in->n_jobs; j++)
        if (sim_state(r, j) == ENG_JOB_FINISHED)
            r->fin_now[r->n_fin_now++] = j;
    sort_end_ms = r->end_ms;
    qsort(r->fin_now, r->n_fin_now, sizeof(*r->fin_now), cmp_by_end);
    for (uint32_t k = 0; k < r->n_fin_now; k++) {
        const struct gang *g = &r->in->jobs[r->fin_now[k]].gang;
        (void)est_observe(
            &r->est, g->queue, g->user, g->gpus, r->busy_ms[r->fin_now[k]],
            g->submit_ms); /* out of memory: its user's ring misses it, the queue's learn it */
    }
    r->n_fin_now = 0;
}

/* sched_snapshot.runtime_src: a pending gang's estimates, computed on the cycle's first ask. */
static int64_t runtime_of(void *ctx, const struct gang *g, bool typical)
{
    struct run *r = ctx;
    uint32_t j = g->id;
    if (j >= r->in->n_jobs)
        return 0;
    if (r->rt_want[j] == r->est_epoch && r->rt_done[j] != r->est_epoch) {
        r->rt_est[j] = est_runtime(&r->est, g, EST_QUANTILE);
        r->rt_typ[j] = est_typical_runtime(&r->est, g, est_draw(j));
        r->rt_done[j] = r->est_epoch;
    }
    return typical ? r->rt_typ[j] : r->rt_est[j];
}

/* Before a cycle: the pending gangs whose run times may be asked (runtime_of),
 * each node's expected release (the latest safe end of what runs on it) and each running pod's
 * drawn end for the start planner. */
void sim_estimates(struct run *r, int64_t now)
{
    const struct sim_input *in = r->in;
    if (++r->est_epoch == 0) { /* wrapped: no stale stamp may match */
        memset(r->rt_want, 0, r->n_ids * sizeof(*r->rt_want));
        memset(r->rt_done, 0, r->n_ids * sizeof(*r->rt_done));
        r->est_epoch = 1;
    }
    for (uint32_t q = 0; q < in->n_queues; q++)
        for (uint32_t k = 0; k < r->queues[q].n; k++)
            r->rt_want[r->queues[q].items[k]->id] = r->est_epoch;
    r->rt_src = (struct sched_runtime_source){.est = runtime_of, .ctx = r};
    for (uint32_t k = 0; k < r->n_rel_nodes; k++) { /* every node that may be non-zero */
        uint32_t i = r->rel_nodes[k];
        r->state[i].release_ms = r->rel_typ[i] = 0;
        r->rel_listed[i] = 0;
    }
    r->n_rel_nodes = 0;
    r->n_rels = 0;
    for (uint32_t k = 0; k < r->n_run; k++) {
        uint32_t j = r->runlist[k];
        const struct gang *g = &in->jobs[j].gang; /* an elastic job's run time: the whole job's */
        int64_t from = r->run_start_ms[j] + r->overhead_ms[j];
        int64_t end = est_end(&r->est, g, from, now, EST_QUANTILE);
        int64_t typ = est_typical_end(&r->est, g, from, now, est_draw(j));
        for (uint32_t x = 0; x < sim_gang(r, j)->n_pods; x++) {
            uint32_t i = r->assign[j][x].node;
            if (r->n_rels == r->cap_rels) {
                uint32_t cap = r->cap_rels ? 2 * r->cap_rels : 1024;
                struct sched_release *nr = realloc(r->rels, cap * sizeof(*nr));
                if (!nr) {
                    r->oom = true;
                    return;
                }
                r->rels = nr;
                r->cap_rels = cap;
            }
            r->rels[r->n_rels++] =
                (struct sched_release){.node = i,
                                       .gpus = bits_popc32(r->assign[j][x].gpu_mask),
                                       .t_ms = typ,
                                       .gpu_mask = r->assign[j][x].gpu_mask};
            if (end > r->state[i].release_ms)
                r->state[i].release_ms = end;
            if (typ > r->rel_typ[i])
                r->rel_typ[i] = typ;
            sim_release_note(r, i);
        }
    }
}

void sim_release_note(struct run *r, uint32_t i)
{
    if (!r->rel_listed[i]) {
        r->rel_listed[i] = 1;
        r->rel_nodes[r->n_rel_nodes++] = i;
    }
}

/* The first expected start the planner gave each waiting gang (for the accuracy KPIs). */
void sim_note_etas(struct run *r, const struct sched_result *res)
{
    for (uint32_t k = 0; k < res->n_etas; k++) {
        uint32_t j = res->etas[k].gang->id;
        if (j < r->in->n_jobs && r->eta_first[j] == INT64_MIN &&
            res->etas[k].kind == SCHED_ETA_AT) {
            r->eta_first[j] = res->etas[k].start_ms;
            sim_mark_dirty(r, j); /* persisted in its "j:<id>" row, so --resume keeps the KPI */
        }
    }
}

/* The estimate and start-estimate arrays of a run (nj jobs, nn nodes); false on out of memory
 * (estimates_free() releases whatever was allocated). */
bool sim_estimates_alloc(struct run *r, size_t nj, size_t nn)
{
    r->rt_est = calloc(nj, sizeof(*r->rt_est));
    r->rt_typ = calloc(nj, sizeof(*r->rt_typ));
    r->rt_want = calloc(nj + 1, sizeof(*r->rt_want));
    r->rt_done = calloc(nj + 1, sizeof(*r->rt_done));
    r->est_epoch = 0;
    r->rel_typ = calloc(nn, sizeof(*r->rel_typ));
    r->rel_nodes = malloc((nn + 1) * sizeof(*r->rel_nodes));
    r->rel_listed = calloc(nn + 1, 1);
    r->n_rel_nodes = 0;
    r->fin_now = calloc(nj, sizeof(*r->fin_now));
    r->eta_first = malloc(nj * sizeof(*r->eta_first));
    r->last_eta = r->opt->db ? malloc(nj * sizeof(*r->last_eta)) : NULL;
    r->eta_of = r->opt->db ? calloc(nj + 1, sizeof(*r->eta_of)) : NULL;
    for (size_t j = 0; r->eta_first && j < nj; j++)
        r->eta_first[j] = INT64_MIN;
    for (size_t j = 0; r->last_eta && j < nj; j++)
        r->last_eta[j] = INT64_MIN;
    return est_init(&r->est, r->in->n_queues) == 0 &&
           est_reserve_users(&r->est, r->in->n_users) == 0 && r->rt_est && r->rt_typ &&
           r->rt_want && r->rt_done && r->rel_typ && r->rel_nodes && r->rel_listed && r->fin_now &&
           r->eta_first && (!r->opt->db || (r->last_eta && r->eta_of));
}

void sim_estimates_free(struct run *r)
{
    free(r->rt_est), free(r->rt_typ), free(r->rel_typ), free(r->rels), free(r->fin_now);
    free(r->rel_nodes), free(r->rel_listed), free(r->rt_want), free(r->rt_done);
    free(r->eta_first), free(r->last_eta), free(r->eta_of);
    est_free(&r->est);
}
