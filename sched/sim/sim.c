/* sched/sim/sim.c: discrete-event simulation around sched_cycle() (see sim.h).
 *
 * Loop: the clock jumps to the next instant with an arrival or a completion; all completions of
 * that instant release their GPUs, all arrivals join their queue, then one scheduling cycle runs
 * and its placements start (a start at t finishes at t + duration). Time is integer
 * milliseconds, so runs are exact and repeatable.
 */
#include "sched/core/bits.h"
#include "sched/core/hami.h"
#include "sched/sim/run.h"

/* cycles at one instant, at most: the daemon's are not bounded, but each started or evicted
 * something and the bound is never reached on the bundled traces (a third cycle with starts
 * is rare); what it cuts is decided at the next instant */
#define SIM_CYCLES_PER_INSTANT 8

/* Job j's state changed: its "j:<id>" row is written at the next store batch (with --db). */
void sim_mark_dirty(struct run *r, uint32_t j)
{
    if (!r->dirty || r->dirty[j])
        return;
    r->dirty[j] = 1;
    r->dirty_list[r->n_dirty++] = j;
}

void sim_touch(struct run *r, uint32_t j)
{
    r->events_done++;
    sim_mark_dirty(r, j);
}

/* Free GPUs of node i when it is partly used (stranded: no whole-node gang can use them). */
static int64_t stranded_on(const struct run *r, uint32_t i)
{
    int64_t n = r->in->cluster->nodes[i].n_gpus;
    int64_t f = n - (int64_t)bits_popc32(r->state[i].gpu_used);
    return f > 0 && f < n ? f : 0;
}

/* node_state[i] changed: the core's placement state re-reads it at the next cycle. */
void sim_node_changed(struct run *r, uint32_t i)
{
    if (r->base)
        place_base_touch(r->base, i);
}

static void update_release(struct run *r, uint32_t i)
{
    struct node_state *ns = &r->state[i];
    if (r->node_dirty)
        r->node_dirty[i] = 1;
    if (r->pods_on[i] == 0)
        r->bounded_max[i] = 0; /* conservative while busy: ends only grow until it empties */
    ns->release_ms = r->unbounded[i] > 0 ? INT64_MAX : r->bounded_max[i];
    sim_release_note(r, i);
}

/* Quota usage of queue q in flavor f: + or - the request need. */
void sim_charge_req(struct run *r, uint32_t q, uint32_t f, const struct res_vec *need, int sign)
{
    int64_t *u = sim_usage_at(r, q, f);
    for (int k = 0; k < res_count(); k++)
        u[k] += sign * need->v[k];
}

static void charge(struct run *r, const struct gang *g, uint32_t f, int sign)
{
    struct res_vec need;
    gang_request(g, &need);
    sim_charge_req(r, g->queue, f, &need, sign);
}

/* One pod of gang g (pod set ps) goes on its node (a): usage, GPUs, release bookkeeping. now < 0:
 * a resumed run's placement, whose releases are not known yet. */
void sim_pod_on(struct run *r, const struct gang *g, const struct podset *ps,
                const struct sched_assign *a, int64_t now)
{
    struct node_state *ns = &r->state[a->node];
    sim_node_changed(r, a->node);
    res_add(&ns->used, &ps->req);
    r->stranded -= stranded_on(r, a->node);
    ns->gpu_used |= a->gpu_mask;
    r->stranded += stranded_on(r, a->node);
    r->pods_on[a->node]++;
    if (g->max_runtime_ms <= 0)
        r->unbounded[a->node]++;
    else if (now >= 0 && now + g->max_runtime_ms > r->bounded_max[a->node])
        r->bounded_max[a->node] = now + g->max_runtime_ms;
    if (now >= 0)
        update_release(r, a->node);
}

/* The pod leaves its node. */
void sim_pod_off(struct run *r, const struct gang *g, const struct podset *ps,
                 const struct sched_assign *a)
{
    struct node_state *ns = &r->state[a->node];
    sim_node_changed(r, a->node);
    res_sub(&ns->used, &ps->req);
    r->stranded -= stranded_on(r, a->node);
    ns->gpu_used &= ~a->gpu_mask;
    r->stranded += stranded_on(r, a->node);
    r->pods_on[a->node]--;
    if (g->max_runtime_ms <= 0)
        r->unbounded[a->node]--;
    update_release(r, a->node);
}

/* Puts the pods of job j (placement a) on their nodes: usage, GPUs, release bookkeeping. */
void sim_occupy(struct run *r, uint32_t j, const struct sched_assign *a, int64_t now)
{
    const struct gang *g = sim_gang(r, j);
    uint32_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++)
        for (uint32_t q = 0; q < g->sets[s].count; q++, k++)
            sim_pod_on(r, g, &g->sets[s], &a[k], now);
    r->busy_gpus += g->gpus;
    if (!sim_elastic_charge(r, j, +1)) /* an elastic job: each member to its own flavor */
        charge(r, g, r->job_flavor[j], +1);
}

int64_t sim_queue_gpus(struct run *r, uint32_t q)
{
    int64_t n = 0;
    for (uint32_t f = 0; f < r->n_flavors; f++)
        n += sim_usage_at(r, q, f)[RES_GPU];
    return n;
}

void sim_heap_push(struct run *r, int64_t t, uint32_t job, enum fin_kind kind)
{
    if (r->n_heap == r->cap_heap) { /* stale entries of evicted runs can pile up */
        struct fin *h = realloc(r->heap, (size_t)r->cap_heap * 2 * sizeof(*h));
        if (!h) {
            r->oom = true;
            return;
        }
        r->heap = h;
        r->cap_heap *= 2;
    }
    uint32_t i = r->n_heap++;
    bool node_event = kind == FIN_NODE_DOWN || kind == FIN_NODE_UP || kind == FIN_UNQUARANTINE ||
                      kind == FIN_OUTAGE || kind == FIN_REPAIR || kind == FIN_WAKE;
    r->heap[i] =
        (struct fin){.t_ms = t, .job = job, .gen = node_event ? 0 : r->gen[job], .kind = kind};
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (r->heap[p].t_ms < r->heap[i].t_ms ||
            (r->heap[p].t_ms == r->heap[i].t_ms && r->heap[p].job < r->heap[i].job))
            break;
        struct fin x = r->heap[p];
        r->heap[p] = r->heap[i];
        r->heap[i] = x;
        i = p;
    }
}

static struct fin heap_pop(struct run *r)
{
    struct fin top = r->heap[0];
    r->heap[0] = r->heap[--r->n_heap];
    uint32_t i = 0;
    for (;;) {
        uint32_t l = 2 * i + 1, rr = l + 1, m = i;
        if (l < r->n_heap &&
            (r->heap[l].t_ms < r->heap[m].t_ms ||
             (r->heap[l].t_ms == r->heap[m].t_ms && r->heap[l].job < r->heap[m].job)))
            m = l;
        if (rr < r->n_heap &&
            (r->heap[rr].t_ms < r->heap[m].t_ms ||
             (r->heap[rr].t_ms == r->heap[m].t_ms && r->heap[rr].job < r->heap[m].job)))
            m = rr;
        if (m == i)
            break;
        struct fin x = r->heap[m];
        r->heap[m] = r->heap[i];
        r->heap[i] = x;
        i = m;
    }
    return top;
}

/* ---- transitions ------------------------------------------------------------------------- */

bool sim_whole_node(const struct run *r, const struct gang *g)
{
    return g->n_sets > 0 && g->sets[0].req.v[RES_GPU] >= r->in->cluster->max_node_gpus;
}

void sim_submit(struct run *r, uint32_t j, int64_t now)
{
    const struct gang *g = &r->in->jobs[j].gang;
    sim_touch(r, j);
    eng_job_submit(r->eng, j);
    if (queue_list_insert(&r->queues[g->queue], g) != 0)
        return; /* out of memory: sim_run detects it through n_pending mismatch */
    r->n_pending++;
    if (sim_whole_node(r, g))
        r->n_pending_whole++;
    if (r->opt->events) {
        sim_ev_head(r, now, "submit", j);
        fprintf(r->opt->events, ",\"gpus\":%lld,\"pods\":%u", (long long)g->gpus, g->n_pods);
        if (r->in->jobs[j].min_pods > 0) /* elastic (sim/elastic.c) */
            fprintf(r->opt->events, ",\"min_pods\":%u", r->in->jobs[j].min_pods);
        fputs("}\n", r->opt->events);
    }
}

static void unqueue(struct run *r, uint32_t j)
{
    const struct gang *g = &r->in->jobs[j].gang;
    queue_list_remove(&r->queues[g->queue], g);
    r->n_pending--;
    if (sim_whole_node(r, g))
        r->n_pending_whole--;
}

static int start(struct run *r, const struct sched_placement *p, int64_t now)
{
    const struct gang *g = p->gang;
    uint32_t j = g->id;
    const struct cluster *c = r->in->cluster;
    if (j >= r->in->n_jobs) /* the waiting members of an elastic job join it */
        return sim_grow(r, p, now);
    unqueue(r, j);
    sim_touch(r, j);
    eng_job_bound(r->eng, j, now); /* its preemptor holds end */
    if (p->probation_for && eng_job_probation(r->eng, j, p->probation_for->id) != 0)
        return SCHED_ENOMEM;
    bool restart = r->n_evicted[j] > 0 || (r->fail && r->attempts[j] > 0);
    if (!restart)
        r->start_ms[j] = now; /* queue time counts to the first start */
    r->run_start_ms[j] = now;
    r->overhead_ms[j] = restart ? r->in->jobs[j].restart_cost_ms : 0;
    r->runpos[j] = r->n_run;
    r->runlist[r->n_run++] = j;
    struct sched_assign *a = malloc((g->n_pods ? g->n_pods : 1) * sizeof(*a));
    if (!a)
        return SCHED_ENOMEM;
    memcpy(a, p->pods, g->n_pods * sizeof(*a));
    free(r->assign[j]); /* the previous run's placement */
    r->assign[j] = a;
    r->job_flavor[j] = p->flavor;
    sim_elastic_started(r, j);
    sim_occupy(r, j, a, now);
    bool doomed = false;
    if (r->fail) {
        if (r->fail_at[j] >= 0) { /* it broke earlier: running again now */
            r->st->recovery_sum_s += (double)(now - r->fail_at[j]) / 1000.0;
            r->st->recoveries++;
            r->fail_at[j] = -1;
        }
        r->attempts[j]++;
        doomed = sim_start_fails(r, j);
        if (doomed) /* it never becomes ready: no finish, a teardown at the start timeout */
            sim_break_gang(r, j, now + r->fail->start_timeout_ms, true, UINT32_MAX, now);
    }
    uint32_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++)
        for (uint32_t q = 0; q < g->sets[s].count; q++, k++) {
            /* default tensor-parallel group: the whole pod, or the largest island when the pod
             * is larger than every island of the cluster */
            int64_t gpp = g->sets[s].req.v[RES_GPU];
            uint32_t tp = gpp < r->max_island ? (uint32_t)gpp : r->max_island;
            if (g->tp_size > 0) /* the gang's own groups (a group larger than a pod: the pod) */
                tp = g->tp_size < gpp ? g->tp_size : (uint32_t)gpp;
            if (gpu_tp_split(&c->nodes[a[k].node], a[k].gpu_mask, tp))
                r->st->tp_splits++;
        }
    /* racks spanned by a multi-node gang */
    bool multi = false;
    for (uint32_t x = 1; x < g->n_pods && !multi; x++)
        if (a[x].node != a[0].node)
            multi = true;
    if (multi) {
        int lvl = c->topo.rack_level >= 0 ? c->topo.rack_level : (int)c->topo.n_levels - 1;
        uint32_t racks = 0;
        for (uint32_t x = 0; x < g->n_pods; x++) {
            uint32_t d = c->nodes[a[x].node].dom[lvl];
            bool seen = false;
            for (uint32_t y = 0; y < x && !seen; y++)
                seen = c->nodes[a[y].node].dom[lvl] == d;
            racks += !seen;
        }
        r->st->multinode_gangs++;
        r->st->mean_racks_per_multinode_gang += racks; /* divided at the end */
    }
    if (p->backfilled)
        r->st->backfilled++;
    if (!doomed)
        sim_heap_push(r, now + r->overhead_ms[j] + sim_wall_for(r, j, r->remaining_ms[j]), j,
                      FIN_FINISH);
    if (r->opt->events) {
        FILE *f = r->opt->events;
        sim_ev_head(r, now, "start", j);
        fputs(",\"pods\":", f);
        sim_ev_pods(r, a, NULL, g->n_pods);
        struct eng_job ej = eng_job(r->eng, j);
        if (ej.probation_until_ms > 0) { /* backfill on probation: its promise */
            fprintf(f, ",\"probation_until\":%.3f,\"probation_for\":",
                    (double)ej.probation_until_ms / 1000.0);
            sim_json_str(f, r->in->jobs[ej.probation_for].id);
        }
        fputs("}\n", f);
    }
    return 0;
}

/* Frees what a running job holds (nodes, quota) and takes it off the running set. */
void sim_release_job(struct run *r, uint32_t j)
{
    const struct gang *g = sim_gang(r, j);
    const struct sched_assign *a = r->assign[j];
    uint32_t k = 0;
    for (uint32_t s = 0; s < g->n_sets; s++)
        for (uint32_t q = 0; q < g->sets[s].count; q++, k++)
            sim_pod_off(r, g, &g->sets[s], &a[k]);
    sim_elastic_withdraw(r, j);
    r->busy_gpus -= g->gpus; /* r->assign[j] stays: the last placement, for the results */
    if (!sim_elastic_charge(r, j, -1))
        charge(r, g, r->job_flavor[j], -1);
    uint32_t last = r->runlist[--r->n_run], at = r->runpos[j];
    r->runlist[at] = last;
    r->runpos[last] = at;
    r->evicting[j] = 0;
    if (r->broken)
        r->broken[j] = 0; /* a check scheduled for this run no longer applies */
}

/* Ends the accounting of job j's current run at `now`: its busy time, and its GPU-seconds on
 * each node (for the report's heat map). */
void sim_account_run(struct run *r, uint32_t j, int64_t now)
{
    int64_t dt = now - r->run_start_ms[j];
    r->busy_ms[j] += dt;
    const struct gang *g = sim_gang(r, j);
    if (sim_elastic_slot(r, j) != UINT32_MAX)
        r->el[sim_elastic_slot(r, j)].gpu_ms += (double)g->gpus * (double)dt;
    if (!r->st->node_gpu_s || !r->assign[j] || dt <= 0)
        return;
    for (uint32_t k = 0; k < g->n_pods; k++)
        if (r->assign[j][k].node < r->in->cluster->n_nodes)
            r->st->node_gpu_s[r->assign[j][k].node] +=
                (double)bits_popc32(r->assign[j][k].gpu_mask) * (double)dt / 1000.0;
}

static void finish(struct run *r, uint32_t j, int64_t now)
{
    sim_touch(r, j);
    sim_account_run(r, j, now);
    sim_release_job(r, j);
    eng_job_finish(r->eng, j);
    r->end_ms[j] = now;
    r->fin_now[r->n_fin_now++] = j;
    if (r->opt->events) {
        sim_ev_head(r, now, "finish", j);
        fputs("}\n", r->opt->events);
    }
}

/* Job j's speed as a fraction num / den of its full speed: a training job (a profile that
 * packs) that runs with fewer members than its trace gang advances at their share of its GPUs
 * (sim/elastic.c); every other job at full speed. */
static void job_speed(const struct run *r, uint32_t j, int64_t *num, int64_t *den)
{
    const struct gang *full = &r->in->jobs[j].gang, *g = sim_gang(r, j);
    *num = *den = 1;
    if (g != full && !full->spread && full->gpus > 0 && g->gpus > 0 && g->gpus < full->gpus) {
        *num = g->gpus;
        *den = full->gpus;
    }
}

/* Work (ms at full speed) job j's current run has done by time t. */
int64_t sim_work_done(const struct run *r, uint32_t j, int64_t t)
{
    int64_t wall = t - r->run_start_ms[j] - r->overhead_ms[j], num, den;
    if (wall <= 0)
        return 0;
    job_speed(r, j, &num, &den);
    return num == den ? wall : (int64_t)((double)wall * (double)num / (double)den);
}

/* Time job j's current run takes to do work_ms of work. */
int64_t sim_wall_for(const struct run *r, uint32_t j, int64_t work_ms)
{
    int64_t num, den;
    job_speed(r, j, &num, &den);
    return num == den ? work_ms : (int64_t)ceil((double)work_ms * (double)den / (double)num);
}

/* The checkpoint job j's waiting members asked for in its current run (ms; 0: none yet): its
 * checkpoints count from it (sim/elastic.c). */
static int64_t asked_checkpoint(const struct run *r, uint32_t j)
{
    uint32_t k = sim_elastic_slot(r, j);
    return k == UINT32_MAX ? 0 : r->el[k].ckpt_from_ms;
}

/* Work of the current run saved by checkpoints at time t: multiples of the interval from the
 * run's start, or from the asked checkpoint once written (all the work then, and multiples of
 * the interval after it). */
int64_t sim_saved_work(const struct run *r, uint32_t j, int64_t t)
{
    int64_t done = sim_work_done(r, j, t);
    int64_t every = r->in->jobs[j].checkpoint_interval_ms;
    if (done <= 0 || every <= 0)
        return 0;
    int64_t from = asked_checkpoint(r, j);
    int64_t base = from > 0 && from <= t ? sim_work_done(r, j, from) : 0;
    return base + (done - base) / every * every;
}

int64_t sim_last_checkpoint(const struct run *r, uint32_t j, int64_t t)
{
    int64_t saved = sim_saved_work(r, j, t);
    return saved > 0 ? r->run_start_ms[j] + r->overhead_ms[j] + sim_wall_for(r, j, saved)
                     : r->run_start_ms[j];
}

/* Job j's checkpoints as the join rule sees them (gang_set_join): they come every *every_ms of
 * wall time at its present speed (0: it takes none) from *from_ms, the end of its current run's
 * restart (the work before that is saved; the speed changes only with a new run), or the
 * checkpoint its waiting members asked for, once written. */
void sim_ckpt_phase(const struct run *r, uint32_t j, int64_t *from_ms, int64_t *every_ms)
{
    int64_t every = r->in->jobs[j].checkpoint_interval_ms, asked = asked_checkpoint(r, j);
    *every_ms = every > 0 ? sim_wall_for(r, j, every) : 0;
    *from_ms = asked > 0 ? asked : r->run_start_ms[j] + r->overhead_ms[j];
}

/* How long job j takes to answer a request to checkpoint (0: it does not answer): a job that
 * checkpoints writes one in CKPT_WRITE_MS, when its queue's checkpointGrace gives it that. */
int64_t sim_ckpt_answer_ms(const struct run *r, uint32_t j)
{
    return r->in->jobs[j].checkpoint_interval_ms > 0 && sim_ckpt_grace(r, j) >= CKPT_WRITE_MS
               ? CKPT_WRITE_MS
               : 0;
}

/* ---- the engine's effects ------------------------------------------------------------- */

/* Carries out one of the engine's effects. */
static void on_effect(struct run *r, const struct eng_effect *f, int64_t now)
{
    switch (f->kind) {
    case ENG_FX_TEARDOWN:
        if (!f->whole) /* lost members replaced alone: failures.c's teardown() took them */
            return;
        sim_tear_down(r, f->gang, f->own, now);
        if (eng_job_gone(r->eng, f->gang, now, &r->fx) != 0)
            r->oom = true;
        return;
    case ENG_FX_QUARANTINE:
        r->state[f->node].quarantined = true;
        sim_node_changed(r, f->node);
        r->st->quarantines++;
        sim_heap_push(r, f->t_ms, f->node, FIN_UNQUARANTINE);
        sim_ev_node(r, now, "quarantine", f->node);
        return;
    case ENG_FX_RELEASE:
        r->state[f->node].quarantined = false;
        sim_node_changed(r, f->node);
        sim_ev_node(r, now, "unquarantine", f->node);
        return;
    case ENG_FX_GIVE_UP:
        r->st->failed_jobs++;
        r->fail_at[f->gang] = -1;
        if (r->opt->events) {
            sim_ev_head(r, now, "reject", f->gang);
            fputs(",\"reason\":\"failed: retry budget exhausted\"}\n", r->opt->events);
        }
        return;
    case ENG_FX_REQUEUE:
        if (f->t_ms > now) { /* after the backoff */
            r->n_backoff++;
            sim_heap_push(r, f->t_ms, f->gang, FIN_RESUBMIT);
        } else { /* node failures do not use the retry budget: back in line at once */
            sim_submit(r, f->gang, now);
        }
        return;
    }
}

/* The engine's effects in r->fx, carried out in order (carrying one out may add more: a
 * teardown's requeue), then cleared. */
void sim_on_effects(struct run *r, int64_t now)
{
    if (r->fx.oom)
        r->oom = true;
    for (uint32_t k = 0; k < r->fx.n; k++) {
        struct eng_effect f = r->fx.v[k];
        on_effect(r, &f, now);
    }
    eng_effects_clear(&r->fx);
}

/* Evicts a running job at `now`: work since its last checkpoint is lost, it goes back to its
 * queue with its original submission time. `checkpointed` = it saved everything just now. */
static void evict(struct run *r, uint32_t j, int64_t now, const char *reason, bool checkpointed)
{
    const struct sim_job *job = &r->in->jobs[j];
    int64_t done = sim_work_done(r, j, now);
    if (done > r->remaining_ms[j])
        done = r->remaining_ms[j];
    int64_t saved = checkpointed ? done : sim_saved_work(r, j, now);
    if (saved > r->remaining_ms[j])
        saved = r->remaining_ms[j];
    /* GPU-ms lost: the work (at full speed, all its GPUs) and the restart its GPUs sat through */
    int64_t restart =
        now - r->run_start_ms[j] < r->overhead_ms[j] ? now - r->run_start_ms[j] : r->overhead_ms[j];
    double lost_gpu_ms = (double)job->gang.gpus * (double)(done - saved) +
                         (double)sim_gang(r, j)->gpus * (double)restart;
    r->st->gpu_hours_lost_to_preemption += lost_gpu_ms / 3.6e6;
    r->remaining_ms[j] -= saved;
    sim_account_run(r, j, now);
    sim_touch(r, j);
    sim_release_job(r, j);
    r->gen[j]++;
    if (r->n_evicted[j]++ == 0)
        r->st->preempted_gangs++;
    r->st->preemptions++;
    if (r->opt->events) {
        sim_ev_head(r, now, "evict", j);
        fputs(",\"reason\":", r->opt->events);
        sim_json_str(r->opt->events, reason);
        fprintf(r->opt->events, ",\"lost_gpu_s\":%.3f}\n", lost_gpu_ms / 1000.0);
    }
    /* the engine's job state: torn down by a preemption, gone at once, requeued now (back to its
     * queue, original submission time kept) */
    eng_job_evict(r->eng, j);
    eng_effects_clear(&r->fx);
    if (eng_job_gone(r->eng, j, now, &r->fx) != 0)
        r->oom = true;
    sim_on_effects(r, now);
}

/* Job j's eviction: the members it was asked for when it is elastic and some were (they leave,
 * it runs on: sim/elastic.c), else the whole job. */
static int evict_asked(struct run *r, uint32_t j, int64_t now, const char *reason,
                       bool checkpointed)
{
    uint32_t k = sim_elastic_slot(r, j);
    if (k != UINT32_MAX && r->el[k].n_ask > 0)
        return sim_shrink(r, j, r->el[k].ask, r->el[k].n_ask, now, checkpointed, reason);
    evict(r, j, now, reason, checkpointed);
    return 0;
}

/* ---- failures ------------------------------------------------------------------------------ */

/* Jobs still to come, waiting, running or backing off. */
static bool work_left(const struct run *r)
{
    return r->next_sub < r->in->n_jobs || r->n_pending > 0 || r->n_run > 0 || r->n_backoff > 0;
}

/* A timed event that no longer applies: the run it belonged to ended or was torn down. */
static bool fin_stale(const struct run *r, const struct fin *f)
{
    switch (f->kind) {
    case FIN_NODE_DOWN:
    case FIN_NODE_UP:
    case FIN_UNQUARANTINE:
    case FIN_OUTAGE:
    case FIN_REPAIR:
        return false;
    case FIN_WAKE: /* superseded by an earlier one, or fired */
        return f->t_ms != r->wake_ms;
    case FIN_RESUBMIT:
        return f->gen != r->gen[f->job] || sim_state(r, f->job) != ENG_JOB_BACKOFF;
    default:
        return f->gen != r->gen[f->job] || sim_state(r, f->job) != ENG_JOB_RUNNING;
    }
}

static void reject(struct run *r, uint32_t j, int64_t now, const char *why)
{
    sim_touch(r, j);
    unqueue(r, j);
    eng_job_reject(r->eng, j);
    if (r->opt->events) {
        sim_ev_head(r, now, "reject", j);
        fputs(",\"reason\":", r->opt->events);
        sim_json_str(r->opt->events, why);
        fputs("}\n", r->opt->events);
    }
}

/* ---- the loop ---------------------------------------------------------------------------- */

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The running jobs as the core sees them. */
static void build_views(struct run *r, int64_t now)
{
    const struct sim_input *in = r->in;
    for (uint32_t k = 0; k < r->n_run; k++) {
        uint32_t j = r->runlist[k];
        const struct config_queue *cq = &in->config->queues[in->jobs[j].gang.queue];
        r->runv[k] = (struct sched_running){
            .gang = sim_gang(r, j),
            .pods = r->assign[j],
            .flavor = r->job_flavor[j],
            .start_ms = r->run_start_ms[j],
            .last_checkpoint_ms = sim_last_checkpoint(r, j, now),
            .restart_cost_ms = in->jobs[j].restart_cost_ms,
            .min_runtime_ms = cq->preemption.min_runtime_ms,
            .evicting = r->evicting[j] != 0,
        };
    }
}

/* The engine's ids are the simulator's (job and node indices): the core's gang of job g. */
static const struct gang *core_gang(void *ctx, uint32_t g, bool *pending)
{
    const struct run *r = ctx;
    if (g >= r->n_ids)
        return NULL;
    *pending = sim_state(r, g) == ENG_JOB_PENDING;
    return g < r->in->n_jobs ? &r->in->jobs[g].gang : sim_grow_gang(r, g);
}

/* Evictions decided by the core: at once, or after a checkpoint when the victim's queue asks
 * for one (checkpointGrace) and the job checkpoints at all. Whole, or members of an elastic job
 * alone (ev->pods; sim/elastic.c, as the daemon's driver_shrink.c), which run whole meanwhile. */
static int apply_evictions(struct run *r, const struct sched_result *res, int64_t now,
                           uint32_t *evicted)
{
    const struct sim_input *in = r->in;
    for (uint32_t e = 0; e < res->n_evictions; e++) {
        const struct sched_eviction *ev = &res->evictions[e];
        uint32_t j = ev->victim->gang->id;
        if (sim_state(r, j) != ENG_JOB_RUNNING || r->evicting[j])
            continue;
        int64_t grace = sim_ckpt_grace(r, j), answer = sim_ckpt_answer_ms(r, j);
        char reason[400];
        sched_eviction_format(ev, in->jobs[sim_job_of(r, ev->preemptor->id)].id, reason,
                              sizeof(reason));
        uint32_t k = ev->pods ? sim_elastic_slot(r, j) : UINT32_MAX;
        if (k != UINT32_MAX) { /* the members asked to leave, kept for the handshake's end */
            memcpy(r->el[k].ask, ev->pods, ev->n_pods * sizeof(*ev->pods));
            r->el[k].n_ask = ev->n_pods;
        }
        if (grace > 0) {
            /* the handshake: a job that checkpoints answers after CKPT_WRITE_MS of writing and
             * goes having saved everything; one that does not answer within the grace is
             * evicted at its end and loses the work since its last checkpoint */
            bool answers = answer > 0;
            r->evicting[j] = 1;
            r->evict_at[j] = now + (answers ? answer : grace);
            r->evict_kind[j] = answers ? FIN_EVICT : FIN_EVICT_LATE;
            sim_touch(r, j);
            r->st->checkpoint_requests++;
            sim_heap_push(r, now + (answers ? answer : grace), j,
                          answers ? FIN_EVICT : FIN_EVICT_LATE);
            if (r->opt->events) {
                sim_ev_head(r, now, "checkpoint-request", j);
                fputs("}\n", r->opt->events);
            }
        } else {
            if (evict_asked(r, j, now, reason, false) != 0)
                return SCHED_ENOMEM;
            (*evicted)++;
        }
    }
    /* the preemptors hold what their victims free, until those in a handshake are gone */
    int rc = eng_cycle_holds(r->eng, res, NULL, now);
    for (uint32_t e = 0; rc == 0 && e < res->n_evictions; e++) {
        uint32_t j = res->evictions[e].victim->gang->id;
        if (r->evicting[j] && r->evict_at[j] > now)
            rc = eng_hold_extend(r->eng, res->evictions[e].preemptor->id, r->evict_at[j]);
    }
    return rc;
}

/* What the core sees: the queues, the running gangs (with preemption), the estimates. */
static void snapshot(struct run *r, struct sched_queue_view *views, int64_t now,
                     struct sched_snapshot *snap)
{
    const struct sim_input *in = r->in;
    for (uint32_t q = 0; q < in->n_queues; q++)
        views[q] = (struct sched_queue_view){.queue = &in->queues[q],
                                             .pending = r->queues[q].items,
                                             .n_pending = r->queues[q].n,
                                             .class_keys = r->queues[q].keys,
                                             .n_classes = r->queues[q].n_classes};
    /* GPU shares (HAMi) read the running gangs' devices: only once a share was asked for */
    bool shares = res_lookup(HAMI_RES_MEM) >= 0 || res_lookup(HAMI_RES_CORES) >= 0;
    if (r->pol->preempt || shares)
        build_views(r, now);
    sim_estimates(r, now);
    *snap = (struct sched_snapshot){.now_ms = now,
                                    .cluster = in->cluster,
                                    .state = r->state,
                                    .queues = views,
                                    .n_queues = in->n_queues,
                                    .policy = r->pol,
                                    .config = in->config,
                                    .usage = r->usage,
                                    .hist_share = r->hist,
                                    .running = r->pol->preempt ? r->runv : NULL,
                                    .n_running = r->pol->preempt ? r->n_run : 0,
                                    .shares = shares ? r->runv : NULL,
                                    .n_shares = shares ? r->n_run : 0,
                                    .runtime_src = &r->rt_src,
                                    .release_typ_ms = r->rel_typ,
                                    .releases = r->rels,
                                    .n_releases = r->n_rels,
                                    .plan_starts = true,
                                    /* verdicts serve only rejects unless explained or logged */
                                    .tried_verdicts_only = !r->opt->explain_job && !r->opt->db,
                                    .base = r->base};
}

/* What the cycle decided, kept: its hints for the next cycle, the event log, --explain, the
 * decision log. */
static int record(struct run *r, const struct sched_result *res, int64_t now,
                  struct sched_errbuf *eb)
{
    r->st->cycles++;
    r->st->reservations += res->n_reservations;
    sim_note_etas(r, res);
    /* a gang's first reservation of its wait becomes its reserve_first_ms (eng_job_reserved):
     * its "j:<id>" row carries it (--resume) */
    for (uint32_t k = 0; r->dirty && k < res->n_reservations; k++)
        if (!res->reservations[k].preemptor &&
            eng_job(r->eng, res->reservations[k].gang->id).reserve_first_ms == 0)
            sim_mark_dirty(r, sim_job_of(r, res->reservations[k].gang->id)); /* members waiting
                                                           to join: in their job's row */
    /* this cycle's starvation reservations are the next cycle's hints */
    if (eng_cycle_hints(r->eng, res, NULL) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (r->opt->events)
        sim_log_reservations(r, res, now);
    if (r->opt->explain_job)
        sim_explain(r, res, now);
    if (r->opt->db && sim_db_cycle_records(r, res, now, eb) != 0)
        return -1;
    return 0;
}

/* What the cycle decided, carried out: evictions first (their victims' sched_running views
 * point into this cycle's state) and the preemptors' holds, starts, rejects. */
static int carry_out(struct run *r, const struct sched_result *res, int64_t now, uint32_t *evicted,
                     struct sched_errbuf *eb)
{
    if (apply_evictions(r, res, now, evicted) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    for (uint32_t p = 0; p < res->n_placements; p++)
        if (start(r, &res->placements[p], now) != 0)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory starting a job");
    for (uint32_t v = 0; v < res->n_verdicts; v++)
        if ((res->verdicts[v].why == SCHED_WHY_NEVER ||
             res->verdicts[v].why == SCHED_WHY_QUOTA_NEVER) &&
            res->verdicts[v].gang->id < r->in->n_jobs && /* members waiting to join wait on */
            sim_state(r, res->verdicts[v].gang->id) == ENG_JOB_PENDING) {
            char buf[256];
            sched_verdict_format(&res->verdicts[v], r->in->cluster, r->in->config, buf,
                                 sizeof(buf));
            reject(r, res->verdicts[v].gang->id, now, buf);
        } else if (res->verdicts[v].ask_checkpoint && res->verdicts[v].gang->id >= r->in->n_jobs) {
            sim_join_ask(r, res->verdicts[v].gang->id, now);
        }
    return 0;
}

/* One scheduling cycle: snapshot, the engine's holds and hints, the core, record, carry out. */
static int one_cycle(struct run *r, struct sched_queue_view *views, struct arena *arena,
                     int64_t now, uint32_t *evicted, uint32_t *placed, struct sched_errbuf *eb)
{
    struct sched_snapshot snap;
    struct sched_result res;
    snapshot(r, views, now, &snap);
    arena_reset(arena);
    struct eng_ids ids = {.ctx = r, .core_gang = core_gang};
    if (snap.running)
        eng_probation_view(r->eng, &ids, r->runv, r->n_run);
    if (eng_holds_view(r->eng, now, &ids, arena, &snap) != 0 ||
        sched_cycle(&snap, arena, &res) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory in scheduling cycle");
    sim_drop_joins_of_victims(r, &res);
    *placed = res.n_placements;
    int rc = record(r, &res, now, eb);
    if (rc == 0 && res.wake_ms < r->wake_ms) { /* as the daemon's kdrv_next_due */
        r->wake_ms = res.wake_ms;
        sim_heap_push(r, res.wake_ms, 0, FIN_WAKE);
    }
    return rc != 0 ? rc : carry_out(r, &res, now, evicted, eb);
}

/* A crash on purpose (--stop-after-events): no cleanup, no flush, no commit. */
static void maybe_crash(const struct run *r)
{
    if (r->opt->stop_after > 0 && r->events_done >= r->opt->stop_after)
        _exit(75);
}

/* The next instant with an arrival or a timed event, INT64_MAX when the run is over. Timed
 * events of evicted runs are stale: they must not make an instant (a resumed run does not have
 * them). */
static int64_t next_instant(struct run *r)
{
    const struct sim_input *in = r->in;
    int64_t t_sub = r->next_sub < in->n_jobs ? in->jobs[r->next_sub].gang.submit_ms : INT64_MAX;
    while (r->n_heap && fin_stale(r, &r->heap[0]))
        heap_pop(r);
    int64_t t_fin = r->n_heap ? r->heap[0].t_ms : INT64_MAX;
    int64_t now = t_sub < t_fin ? t_sub : t_fin;
    /* node failures go on forever: not work */
    return work_left(r) && !(r->fail && sim_failures_only(r)) ? now : INT64_MAX;
}

/* KPIs over [prev_t, now), from the state the previous instant set: fragmentation (the mean
 * runs over the time some whole-node gang waits, frag_wait; frag_t is the makespan), quota. */
static void integrate(struct run *r, int64_t now)
{
    r->frag_w += r->whole_waiting ? r->frag_now * (double)(now - r->prev_t) : 0.0;
    r->frag_t += (double)(now - r->prev_t);
    r->frag_wait += r->whole_waiting ? (double)(now - r->prev_t) : 0.0;
    sim_quota_integrate(r, now - r->prev_t);
    r->prev_t = now;
}

/* The timed events of the instant: finishes, evictions, failures. */
static void timed_events(struct run *r, int64_t now)
{
    while (r->n_heap && r->heap[0].t_ms == now) {
        struct fin f = heap_pop(r);
        if (fin_stale(r, &f))
            continue; /* the run it belonged to was evicted */
        if (f.kind == FIN_WAKE) {
            r->wake_ms = INT64_MAX; /* the instant's cycle is the wake-up */
        } else if (f.kind == FIN_JOIN_CKPT) {
            sim_join_checkpoint(r, f.job, now);
        } else if (f.kind >= FIN_TEARDOWN) {
            sim_failure_event(r, &f, now);
        } else if (f.kind == FIN_FINISH) {
            finish(r, f.job, now);
            r->t_end = now;
        } else if (f.kind == FIN_EVICT) {
            if (evict_asked(r, f.job, now, "preempted after a requested checkpoint", true) != 0)
                r->oom = true;
        } else if (evict_asked(r, f.job, now, "preempted: no checkpoint within the grace", false) !=
                   0) {
            r->oom = true;
        }
        maybe_crash(r);
    }
}

static void arrivals(struct run *r, int64_t now)
{
    while (r->next_sub < r->in->n_jobs && r->in->jobs[r->next_sub].gang.submit_ms == now) {
        sim_submit(r, r->next_sub++, now);
        maybe_crash(r);
    }
}

/* A cycle; again at the same instant after one that evicted (the preemptors start at once) or
 * started a gang: the daemon runs a cycle at each bind's answer, a moment later, and it sees
 * the started gangs running and their holds dropped (docs/simulator.md, "Cycle cadence"). */
static int cycles(struct run *r, struct sched_queue_view *views, struct arena *arena, int64_t now,
                  struct sched_errbuf *eb)
{
    int rc = 0;
    for (int again = 0; again < SIM_CYCLES_PER_INSTANT && r->n_pending > 0 && rc == 0; again++) {
        uint32_t evicted = 0, placed = 0;
        rc = one_cycle(r, views, arena, now, &evicted, &placed, eb);
        maybe_crash(r);
        if (evicted == 0 && placed == 0)
            break;
    }
    if (rc == 0 && r->oom)
        rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    return rc;
}

/* After the instant: quota metrics, the state the next interval is integrated over, a series
 * point, and with --db one transaction per batch of instants (a resume restarts after the
 * last one). */
static int observe(struct run *r, int64_t now, struct sched_errbuf *eb)
{
    if (sim_quota_observe(r) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    r->whole_waiting = r->n_pending_whole > 0;
    r->frag_now = r->whole_waiting ? sim_stranded_share(r) : 0.0;
    int rc = sim_add_point(r, now, r->t0);
    if (rc != 0)
        return sched_fail(eb, rc, "out of memory");
    if (r->opt->db &&
        ++r->uncommitted >= (r->opt->db_batch ? r->opt->db_batch : DB_BATCH_INSTANTS)) {
        r->uncommitted = 0;
        return sim_db_commit_instant(r, now, true, eb);
    }
    return 0;
}

/* Before the first instant: a resumed run's state, the store's transaction, the failures. */
static int run_begin(struct run *r, struct sched_errbuf *eb)
{
    const struct sim_input *in = r->in;
    int rc = 0;
    r->t0 = in->n_jobs ? in->jobs[0].gang.submit_ms : 0;
    r->t_end = r->prev_t = r->t0;
    if (r->opt->db && r->opt->resume && (rc = sim_db_resume(r, eb)) == 0)
        sim_relearn(r); /* what the crashed run had learned from its finishes */
    if (rc == 0 && r->opt->db && (rc = store_begin(r->opt->db, eb)) == 0)
        rc = store_config_apply(r->opt->db, in->config, NULL, 0, eb);
    if (rc == 0 && r->fail)
        sim_failures_init(r, r->t0);
    return rc;
}

/* After the last instant: the last commit, the KPIs, the per-job CSV. */
static int run_end(struct run *r, int rc, uint64_t instants, struct sched_errbuf *eb)
{
    /* --resume of a finished run changes nothing: no commit (commit_seq stays) */
    if (rc == 0 && r->opt->db && (instants > 0 || !r->opt->resume))
        rc = sim_db_commit_instant(r, r->prev_t, false, eb);
    else if (r->opt->db && store_in_txn(r->opt->db))
        store_rollback(r->opt->db);
    if (rc == 0)
        rc = sim_summarize(r, r->t0, r->t_end, r->frag_w, r->frag_t, r->frag_wait);
    if (rc == 0 && r->opt->jobs_out && (rc = sim_write_jobs(r, r->opt->jobs_out)) != 0) {
        int e = errno; /* of the failed write (sim_write_jobs ends with a flush) */
        if (rc == SCHED_EIO)
            sched_fail(eb, rc, "writing %s: %s",
                       r->opt->jobs_out_name ? r->opt->jobs_out_name : "the per-job results",
                       strerror(e ? e : EIO));
    }
    if (rc != 0 && !eb->msg[0])
        sched_fail(eb, rc, "out of memory");
    return rc;
}

static void progress(const struct run *r, int64_t now, uint64_t iter, double *last)
{
    if (!r->opt->progress || (iter & 1023) != 0 || wall_s() - *last <= 0.5)
        return;
    *last = wall_s();
    fprintf(stderr, "\r%-10s day %6.1f  submitted %u/%u  pending %u   ", r->pol->name,
            (double)(now - r->t0) / 8.64e7, r->next_sub, r->in->n_jobs, r->n_pending);
}

/* The loop: each instant is a list of phases. */
static int run_loop(struct run *r, struct sched_errbuf *eb)
{
    struct arena arena;
    arena_init(&arena, 256 * 1024);
    struct sched_queue_view *views = calloc(r->in->n_queues + 1, sizeof(*views));
    int rc = views ? run_begin(r, eb) : sched_fail(eb, SCHED_ENOMEM, "out of memory");
    double last_progress = wall_s();
    uint64_t instants = 0; /* instants simulated by this process */
    int64_t now;
    while (rc == 0 && (now = next_instant(r)) != INT64_MAX) {
        instants++;
        integrate(r, now);
        timed_events(r, now);
        sim_learn(r);
        arrivals(r, now);
        if ((rc = cycles(r, views, &arena, now, eb)) == 0)
            rc = observe(r, now, eb);
        progress(r, now, instants, &last_progress);
    }
    if (r->opt->progress)
        fprintf(stderr, "\r%-70s\r", "");
    arena_fini(&arena);
    if (!views)
        return rc;
    free(views);
    return run_end(r, rc, instants, eb);
}

/* The engine of a run: the failure flags' limits (their defaults are the engine's), room for
 * every job and node. */
static struct eng *run_engine(const struct sim_failures *fl, size_t nj, size_t nn)
{
    struct eng_limits lim;
    eng_limits_default(&lim);
    if (fl)
        lim = (struct eng_limits){.strikes = fl->strikes,
                                  .strike_window_ms = fl->strike_window_ms,
                                  .quarantine_ms = fl->quarantine_ms,
                                  .hold_ms = lim.hold_ms,
                                  .backoff_ms = fl->backoff_ms};
    struct eng *e = eng_new(&lim);
    if (e && eng_reserve(e, (uint32_t)nj, (uint32_t)nn) != 0) {
        eng_free(e);
        return NULL;
    }
    return e;
}

/* Every array of a run; false when one could not be allocated (run_free() frees the rest). */
static bool run_alloc(struct run *r)
{
    const struct sim_input *in = r->in;
    struct sim_stats *out = r->st;
    bool el_ok = sim_elastic_alloc(r); /* sets n_ids: every per-job array covers them */
    size_t nj = r->n_ids ? r->n_ids : 1, nq = in->n_queues + 1, nn = in->cluster->n_nodes + 1;
    r->state = calloc(nn, sizeof(*r->state));
    r->base = place_base_new(in->cluster);
    r->start_ms = calloc(nj, sizeof(*r->start_ms));
    r->end_ms = calloc(nj, sizeof(*r->end_ms));
    r->assign = calloc(nj, sizeof(*r->assign));
    r->queues = calloc(nq, sizeof(*r->queues));
    r->cap_heap = (uint32_t)nj + 16;
    r->heap = calloc(r->cap_heap, sizeof(*r->heap));
    r->n_flavors = in->config->n_flavors;
    r->usage = calloc(nq * r->n_flavors * RES_MAX, sizeof(*r->usage));
    r->job_flavor = calloc(nj, sizeof(*r->job_flavor));
    r->hist = calloc(nq, sizeof(*r->hist));
    r->share = calloc(nq, sizeof(*r->share));
    r->reclaim_wait = calloc(nq, sizeof(*r->reclaim_wait));
    out->per_queue = calloc(nq, sizeof(*out->per_queue));
    out->node_gpu_s = calloc(nn, sizeof(*out->node_gpu_s));
    r->pods_on = calloc(nn, sizeof(*r->pods_on));
    r->unbounded = calloc(nn, sizeof(*r->unbounded));
    r->bounded_max = calloc(nn, sizeof(*r->bounded_max));
    r->remaining_ms = calloc(nj, sizeof(*r->remaining_ms));
    r->run_start_ms = calloc(nj, sizeof(*r->run_start_ms));
    r->overhead_ms = calloc(nj, sizeof(*r->overhead_ms));
    r->busy_ms = calloc(nj, sizeof(*r->busy_ms));
    r->gen = calloc(nj, sizeof(*r->gen));
    r->n_evicted = calloc(nj, sizeof(*r->n_evicted));
    r->evicting = calloc(nj, 1);
    r->evict_at = calloc(nj, sizeof(*r->evict_at));
    r->evict_kind = calloc(nj, 1);
    r->runlist = calloc(nj, sizeof(*r->runlist));
    r->runpos = calloc(nj, sizeof(*r->runpos));
    r->runv = calloc(nj, sizeof(*r->runv));
    if (r->fail) {
        r->broken = calloc(nj, 1);
        r->broken_start = calloc(nj, 1);
        r->lost_node = calloc(nj, sizeof(*r->lost_node));
        r->attempts = calloc(nj, sizeof(*r->attempts));
        r->fail_at = calloc(nj, sizeof(*r->fail_at));
        r->down_at = calloc(nn, sizeof(*r->down_at));
        r->held_down = calloc(nn, sizeof(*r->held_down));
    }
    r->eng = run_engine(r->fail, nj, nn);
    bool est_ok = sim_estimates_alloc(r, nj, nn);
    if (r->opt->db) {
        r->dirty = calloc(nj, 1);
        r->dirty_list = calloc(nj, sizeof(*r->dirty_list));
        r->node_dirty = calloc(nn, 1);
        r->last_why = calloc(nj, 1);
        r->last_reason = calloc(nj, sizeof(*r->last_reason));
        r->db_placed = calloc(nj, 1);
        r->text_of = calloc(nj, sizeof(*r->text_of));
    }
    return el_ok && r->state && r->base && r->start_ms && r->end_ms && r->assign && r->queues &&
           r->heap && r->usage && r->job_flavor && r->hist && r->share && r->reclaim_wait &&
           out->per_queue && out->node_gpu_s && r->pods_on && r->unbounded && r->bounded_max &&
           r->remaining_ms && r->run_start_ms && r->overhead_ms && r->busy_ms && r->gen &&
           r->n_evicted && r->evicting && r->evict_at && r->evict_kind && r->runlist && r->runpos &&
           r->runv && est_ok && r->eng &&
           (!r->fail || (r->broken && r->broken_start && r->lost_node && r->attempts &&
                         r->fail_at && r->down_at && r->held_down)) &&
           (!r->opt->db || (r->dirty && r->dirty_list && r->node_dirty && r->last_why &&
                            r->last_reason && r->db_placed && r->text_of));
}

/* The starting values: every job's work, the queues' nominal GPUs, the largest island. */
static void run_init(struct run *r)
{
    const struct sim_input *in = r->in;
    for (uint32_t j = 0; j < in->n_jobs; j++)
        r->remaining_ms[j] = in->jobs[j].duration_ms;
    for (uint32_t q = 0; q < in->n_queues; q++) {
        const struct config_queue *cq = &in->config->queues[q];
        for (uint32_t f = 0; f < r->n_flavors; f++) {
            const struct config_quota *qu = config_quota_get(in->config, &cq->q, f, RES_GPU);
            if (qu)
                r->st->per_queue[q].nominal_gpus += (double)qu->nominal;
        }
    }
    for (uint32_t q = 0; q < in->n_queues; q++)
        queue_list_init(&r->queues[q], r->pol->by_priority);
    for (uint32_t i = 0; i < in->cluster->n_nodes; i++)
        if (gpu_max_island(&in->cluster->nodes[i]) > r->max_island)
            r->max_island = gpu_max_island(&in->cluster->nodes[i]);
}

static void run_free(struct run *r)
{
    for (uint32_t j = 0; r->assign && j < r->in->n_jobs; j++)
        free(r->assign[j]);
    for (uint32_t q = 0; r->queues && q < r->in->n_queues; q++)
        queue_list_fini(&r->queues[q]);
    place_base_free(r->base);
    free(r->state), free(r->start_ms), free(r->end_ms), free(r->assign);
    free(r->queues), free(r->heap);
    free(r->usage), free(r->job_flavor), free(r->hist), free(r->share), free(r->reclaim_wait);
    free(r->pods_on), free(r->unbounded), free(r->bounded_max);
    free(r->remaining_ms), free(r->run_start_ms), free(r->overhead_ms), free(r->gen);
    free(r->busy_ms), free(r->n_evicted), free(r->evicting), free(r->runlist), free(r->runpos);
    free(r->runv), free(r->evict_at), free(r->evict_kind), free(r->dirty), free(r->dirty_list);
    free(r->node_dirty), free(r->last_why), free(r->last_reason), free(r->db_placed);
    free(r->texts), free(r->text_of), free(r->resume_text);
    sim_estimates_free(r);
    sim_elastic_free(r);
    free(r->broken), free(r->broken_start), free(r->lost_node), free(r->attempts);
    free(r->fail_at), free(r->down_at), free(r->held_down);
    arena_fini(&r->life_arena);
    eng_effects_free(&r->fx);
    eng_free(r->eng);
    arena_fini(&r->qarena);
}

int sim_run(const struct sim_input *in, const struct sched_policy *pol,
            const struct sim_options *opt, struct sim_stats *out, struct sched_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    out->policy = pol->name;
    out->n_queues = in->n_queues;
    out->elastic_jobs = in->n_elastic;
    struct run r = {
        .in = in, .pol = pol, .opt = opt, .st = out, .fail = opt->failures, .wake_ms = INT64_MAX};
    arena_init(&r.qarena, 16 * 1024);
    arena_init(&r.life_arena, 4096);
    int rc;
    if (in->n_elastic > 0 && in->config->n_flavors > UINT8_MAX + 1) {
        rc = sched_fail(eb, SCHED_EINVAL,
                        "min_pods: %u elastic jobs in the trace; elastic jobs are simulated with "
                        "at most 256 flavors",
                        in->n_elastic);
    } else if (!run_alloc(&r)) {
        rc = sched_fail(eb, SCHED_ENOMEM, "out of memory for %u jobs", in->n_jobs);
    } else {
        run_init(&r);
        LOG_INFO("sim", "policy %s: %u jobs on %u nodes", pol->name, in->n_jobs,
                 in->cluster->n_nodes);
        if (opt->events)
            sim_ev_cluster(&r);
        rc = run_loop(&r, eb);
        if (opt->explain_job)
            sim_explain_flush(&r);
    }
    if (rc == 0)
        LOG_INFO("sim", "policy %s: done, %llu cycles, %u started", pol->name,
                 (unsigned long long)out->cycles, out->started);
    run_free(&r);
    if (rc != 0)
        sim_stats_free(out);
    return rc;
}

void sim_stats_free(struct sim_stats *s)
{
    free(s->per_queue);
    free(s->series);
    free(s->queue_s);
    free(s->queue_of);
    free(s->queue_used);
    free(s->node_gpu_s);
    free(s->jct_s);
    free(s->eta_err);
    s->jct_s = NULL;
    s->eta_err = NULL;
    s->per_queue = NULL;
    s->series = NULL;
    s->queue_s = NULL;
    s->queue_of = NULL;
    s->queue_used = NULL;
    s->node_gpu_s = NULL;
}
