/* sched/sim/elastic.c: elastic jobs in the simulator (trace column min_pods), run as the daemon
 * runs an elastic gang (docs/preemption.md#choosing-victims, sched/kube/driver_shrink.c):
 *   - a job starts whole; a preemption may take its members above min_pods alone
 *     (sched_eviction.pods), after the checkpoint handshake where its queue asks for one, and
 *     it runs on with the others (sim_shrink);
 *   - the members taken come back at once as a gang of their own, every one together (what a
 *     job's controller does when it makes the pods again), with the job's queue, priority and
 *     submission time; the core places it as any pending gang and it joins the running job (the
 *     daemon's "elastic gang grows", sim_grow), in the tightest domain that holds one of the
 *     members running (gang.near). Its core and engine id is n_jobs + the job's slot, so every
 *     per-job array of a run is n_ids long. A training job's members join only in a window
 *     after one of its checkpoints (gang_set_join, the daemon's rule from the gang's
 *     gangsched.io/checkpoint-interval): its checkpoints come every interval of work from the
 *     end of its restart, known exactly here (sim_ckpt_phase), and the core wakes the run when
 *     the next window opens;
 *   - progress (sim.c, sim_work_done): a training job (a profile that packs) restarts from its
 *     last checkpoint at each change of its members, torchrun and Ray Train restart every
 *     worker, and advances at its live GPUs / all its GPUs of full speed; an inference job (a
 *     profile that spreads) loses nothing and serves its run time.
 * Owns: struct run's el and el_of (run.h). Must not touch: the core's and the engine's rules;
 * the rest of a job's state is sim.c's, changed through its helpers.
 */
#include "sched/sim/run.h"

bool sim_elastic_alloc(struct run *r)
{
    const struct sim_input *in = r->in;
    r->n_ids = in->n_jobs + in->n_elastic;
    if (in->n_elastic == 0)
        return true;
    r->el_of = malloc(in->n_jobs * sizeof(*r->el_of));
    r->el = calloc(in->n_elastic, sizeof(*r->el));
    if (!r->el_of || !r->el)
        return false;
    uint32_t k = 0;
    for (uint32_t j = 0; j < in->n_jobs; j++) {
        r->el_of[j] = UINT32_MAX;
        uint32_t n = in->jobs[j].gang.n_pods;
        if (in->jobs[j].min_pods == 0 || k == in->n_elastic)
            continue;
        struct sim_elastic *e = &r->el[k];
        e->job = j;
        e->live_set = calloc(n, 1);
        e->live_flavor = calloc(n, 1);
        e->grow_set = calloc(n, 1);
        e->ask = calloc(n, sizeof(*e->ask));
        e->near = calloc(n, sizeof(*e->near));
        if (!e->live_set || !e->live_flavor || !e->grow_set || !e->ask || !e->near)
            return false;
        r->el_of[j] = k++;
    }
    return true;
}

void sim_elastic_free(struct run *r)
{
    for (uint32_t k = 0; r->el && k < r->in->n_elastic; k++) {
        struct sim_elastic *e = &r->el[k];
        free(e->live_set), free(e->live_flavor), free(e->grow_set), free(e->ask), free(e->near);
    }
    free(r->el), free(r->el_of);
    r->el = NULL;
    r->el_of = NULL;
}

/* out = the trace gang `full` with only the members sets[0 .. n) (set indices), in set order,
 * its pod sets in `own` [full->n_sets]; min: its min_member (0: every pod). */
static void build(const struct gang *full, const uint8_t *sets, uint32_t n, uint32_t id,
                  uint32_t min, struct podset *own, struct gang *out)
{
    *out = *full;
    out->sets = own;
    out->id = id;
    out->n_sets = 0;
    for (uint32_t s = 0; s < full->n_sets; s++) {
        uint32_t c = 0;
        for (uint32_t x = 0; x < n; x++)
            c += sets[x] == s;
        if (c > 0) {
            out->sets[out->n_sets] = full->sets[s];
            out->sets[out->n_sets++].count = c;
        }
    }
    out->min_member = 0;
    gang_finalize(out);
    out->min_member = min > 0 && min < out->n_pods ? min : out->n_pods;
}

/* Job j's quota charge, + or -, each running member to its own flavor; false for a job that is
 * not elastic or not running (the caller charges the gang whole). */
bool sim_elastic_charge(struct run *r, uint32_t j, int sign)
{
    uint32_t k = sim_elastic_slot(r, j);
    if (k == UINT32_MAX || r->el[k].n_live == 0)
        return false;
    const struct sim_elastic *e = &r->el[k];
    const struct gang *full = &r->in->jobs[j].gang;
    for (uint32_t m = 0; m < e->n_live; m++)
        sim_charge_req(r, full->queue, e->live_flavor[m], &full->sets[e->live_set[m]].req, sign);
    return true;
}

/* Core gang g of the waiting members of an elastic job, else NULL. */
const struct gang *sim_grow_gang(const struct run *r, uint32_t g)
{
    if (g < r->in->n_jobs || g >= r->n_ids)
        return NULL;
    return &r->el[g - r->in->n_jobs].grow;
}

/* A new run of the job, or none: no checkpoint asked for its members in it. */
static void ckpt_forget(struct sim_elastic *e)
{
    e->ckpt_asked_ms = e->ckpt_due_ms = e->ckpt_from_ms = 0;
}

/* The waiting members' join rule (gang_set_join): a training job's members join after one of
 * its checkpoints, as sim_ckpt_phase has them, and know the request they made (join_asked_ms). */
static void grow_join(const struct run *r, struct sim_elastic *e)
{
    int64_t from, every;
    sim_ckpt_phase(r, e->job, &from, &every);
    gang_set_join(&e->grow, from, every, e->live.gpus);
    e->grow.join_asked_ms = e->ckpt_asked_ms;
}

/* Job j starts (whole): every member runs. */
void sim_elastic_started(struct run *r, uint32_t j)
{
    uint32_t k = sim_elastic_slot(r, j);
    if (k == UINT32_MAX)
        return;
    struct sim_elastic *e = &r->el[k];
    const struct sim_job *job = &r->in->jobs[j];
    e->n_live = 0;
    for (uint32_t s = 0; s < job->gang.n_sets; s++)
        for (uint32_t x = 0; x < job->gang.sets[s].count; x++) {
            e->live_flavor[e->n_live] = (uint8_t)r->job_flavor[j];
            e->live_set[e->n_live++] = (uint8_t)s;
        }
    build(&job->gang, e->live_set, e->n_live, j, job->min_pods, e->live_sets, &e->live);
    e->n_grow = e->n_ask = 0;
    ckpt_forget(e);
}

static void grow_unqueue(struct run *r, struct sim_elastic *e, uint32_t k)
{
    if (!e->grow_queued)
        return;
    queue_list_remove(&r->queues[e->grow.queue], &e->grow);
    r->n_pending--;
    if (sim_whole_node(r, &e->grow))
        r->n_pending_whole--;
    e->grow_queued = false;
    (void)eng_job_finish(r->eng, r->in->n_jobs + k); /* no longer pending, and no holds kept */
    eng_hold_drop(r->eng, r->in->n_jobs + k);
}

/* Job j's run ends (finished, evicted whole, torn down): its waiting members go with it (a
 * requeue brings the whole gang back). */
void sim_elastic_withdraw(struct run *r, uint32_t j)
{
    uint32_t k = sim_elastic_slot(r, j);
    if (k == UINT32_MAX)
        return;
    grow_unqueue(r, &r->el[k], k);
    r->el[k].n_grow = r->el[k].n_ask = 0;
    ckpt_forget(&r->el[k]);
}

/* The waiting members of slot k, (re)queued with what they are now. */
static void grow_queue(struct run *r, uint32_t k)
{
    struct sim_elastic *e = &r->el[k];
    const struct sim_job *job = &r->in->jobs[e->job];
    uint32_t id = r->in->n_jobs + k;
    grow_unqueue(r, e, k);
    build(&job->gang, e->grow_set, e->n_grow, id, 0, e->grow_sets, &e->grow);
    for (uint32_t m = 0; m < e->n_live; m++) /* placed next to the members that run */
        e->near[m] = r->assign[e->job][m].node;
    gang_set_near(&e->grow, e->near, e->n_live);
    grow_join(r, e);
    if (queue_list_insert(&r->queues[e->grow.queue], &e->grow) != 0) {
        r->oom = true;
        return;
    }
    e->grow_queued = true;
    r->n_pending++;
    if (sim_whole_node(r, &e->grow))
        r->n_pending_whole++;
    if (eng_job_submit(r->eng, id) != 0)
        r->oom = true;
}

/* --resume (persist.c): job j's members as its store row had them, read into el[]'s live_set[0
 * .. n_live), grow_set[0 .. n_grow) and ask[0 .. n_ask), its placement in r->assign[j]; the
 * waiting members back in their queue when they were, with their first reservation's expected
 * start. */
int sim_elastic_restore(struct run *r, uint32_t j, uint32_t n_live, uint32_t n_grow, bool queued,
                        int64_t reserve_first_ms, double gpu_ms, uint32_t n_ask)
{
    uint32_t k = r->el_of[j];
    struct sim_elastic *e = &r->el[k];
    const struct sim_job *job = &r->in->jobs[j];
    e->n_live = n_live;
    e->n_grow = n_grow;
    e->n_ask = n_ask;
    e->gpu_ms = gpu_ms;
    if (n_live > 0)
        build(&job->gang, e->live_set, e->n_live, j, job->min_pods, e->live_sets, &e->live);
    if (!queued || n_grow == 0)
        return 0;
    grow_queue(r, k);
    return eng_job_restore_promise(r->eng, r->in->n_jobs + k, reserve_first_ms, 0, ENG_NONE);
}

/* Counting sort of set indices (a handful of sets). */
static void sort_sets(uint8_t *v, uint32_t n)
{
    uint32_t count[GANG_MAX_SETS] = {0};
    for (uint32_t x = 0; x < n; x++)
        count[v[x] < GANG_MAX_SETS ? v[x] : 0]++;
    uint32_t at = 0;
    for (uint32_t s = 0; s < GANG_MAX_SETS; s++)
        for (uint32_t c = 0; c < count[s]; c++)
            v[at++] = (uint8_t)s;
}

/* A training job's members change at `now`: every worker restarts from the last checkpoint
 * (all the work when `checkpointed`); an inference job keeps all it did. A new segment of the
 * run begins (its busy time and GPU-seconds accounted up to now). The work lost (the job's GPUs x
 * the work since its last checkpoint) counts to the preemption loss and to *part, the change's
 * share of it (GPU-hours); returns it in GPU-seconds. */
static double new_segment(struct run *r, uint32_t j, int64_t now, bool checkpointed, double *part)
{
    const struct sim_job *job = &r->in->jobs[j];
    int64_t done = sim_work_done(r, j, now);
    int64_t saved = job->gang.spread || checkpointed ? done : sim_saved_work(r, j, now);
    if (saved > r->remaining_ms[j])
        saved = r->remaining_ms[j];
    int64_t lost = done - saved > 0 ? done - saved : 0;
    double hours = (double)job->gang.gpus * (double)lost / 3.6e6;
    r->st->gpu_hours_lost_to_preemption += hours;
    *part += hours;
    r->remaining_ms[j] -= saved;
    sim_account_run(r, j, now);
    uint32_t k = sim_elastic_slot(r, j);
    if (k != UINT32_MAX) /* a new run: its checkpoints count from its restart */
        ckpt_forget(&r->el[k]);
    r->run_start_ms[j] = now;
    r->overhead_ms[j] = job->gang.spread ? 0 : job->restart_cost_ms;
    r->gen[j]++; /* the old finish is stale */
    return (double)job->gang.gpus * (double)lost / 1000.0;
}

/* The finish of job j's new segment. */
static void push_finish(struct run *r, uint32_t j, int64_t now)
{
    sim_heap_push(r, now + r->overhead_ms[j] + sim_wall_for(r, j, r->remaining_ms[j]), j,
                  FIN_FINISH);
}

/* The core asks the running job of waiting members g (core id n_jobs + slot) to checkpoint now
 * (sched_verdict.ask_checkpoint; the core makes no request while one is open, as in the daemon),
 * unless the job is being evicted. A job that answers (sim_ckpt_answer_ms) writes the checkpoint
 * then (FIN_JOIN_CKPT). */
void sim_join_ask(struct run *r, uint32_t g, int64_t now)
{
    uint32_t k = g - r->in->n_jobs, j = r->el[k].job;
    struct sim_elastic *e = &r->el[k];
    if (sim_state(r, j) != ENG_JOB_RUNNING || r->evicting[j])
        return;
    e->ckpt_asked_ms = e->grow.join_asked_ms = now;
    int64_t answer = sim_ckpt_answer_ms(r, j);
    if (answer > 0) {
        e->ckpt_due_ms = now + answer;
        sim_heap_push(r, e->ckpt_due_ms, j, FIN_JOIN_CKPT);
    }
    sim_touch(r, j);
    r->st->join_checkpoint_requests++;
    if (r->opt->events) {
        sim_ev_head(r, now, "checkpoint-request", j);
        fprintf(r->opt->events, ",\"for\":\"join\",\"members\":%u}\n", e->n_grow);
    }
}

/* FIN_JOIN_CKPT: job j wrote the checkpoint its waiting members asked for: all its work is
 * saved, its checkpoints count from now, and the members may join (their window opens). */
void sim_join_checkpoint(struct run *r, uint32_t j, int64_t now)
{
    uint32_t k = sim_elastic_slot(r, j);
    if (k == UINT32_MAX || r->el[k].ckpt_due_ms != now)
        return;
    struct sim_elastic *e = &r->el[k];
    e->ckpt_due_ms = 0;
    e->ckpt_from_ms = now;
    grow_join(r, e);
    sim_touch(r, j);
    if (r->opt->events) {
        sim_ev_head(r, now, "checkpoint", j);
        fputs(",\"for\":\"join\"}\n", r->opt->events);
    }
}

/* Job j's checkpoint handshake, if one is under way, ends at its time again: the new segment
 * (new_segment) made the event of the old one stale. */
static void rearm_handshake(struct run *r, uint32_t j)
{
    if (r->evicting[j])
        sim_heap_push(r, r->evict_at[j], j, (enum fin_kind)r->evict_kind[j]);
}

/* After job j lost members (a preemption's, else to a failed node): a checkpoint handshake
 * under way goes on, its end re-armed for the new segment, unless it was the preemption's own
 * or the members it asked for (`asked` of them still run, renumbered) cannot all leave with
 * the job keeping min_pods: it is dropped then, nobody leaving (the daemon's rule,
 * shrink_due in sched/kube/driver_shrink.c). A whole job's handshake goes on. */
static void handshake_after_loss(struct run *r, uint32_t j, bool preempted, bool members,
                                 uint32_t asked)
{
    struct sim_elastic *e = &r->el[r->el_of[j]];
    bool on = r->evicting[j] && !preempted &&
              (!members || (asked > 0 && e->n_live - asked >= r->in->jobs[j].min_pods));
    e->n_ask = on ? asked : 0;
    r->evicting[j] = on;
    rearm_handshake(r, j);
}

/* Members pods[0 .. n) (ascending indices into job j's running members) leave at `now`,
 * preempted (else lost with their node); the job runs on with the others and the members wait
 * to join again. */
static int take_members(struct run *r, uint32_t j, const uint32_t *pods, uint32_t n, int64_t now,
                        bool checkpointed, const char *reason, bool preempted)
{
    uint32_t k = sim_elastic_slot(r, j);
    if (k == UINT32_MAX || n == 0)
        return 0;
    struct sim_elastic *e = &r->el[k];
    const struct sim_job *job = &r->in->jobs[j];
    double lost_gpu_s = new_segment(r, j, now, checkpointed, &r->st->gpu_hours_lost_at_shrink);
    if (r->opt->events) { /* before the members leave their places */
        sim_ev_head(r, now, "shrink", j);
        fputs(",\"reason\":", r->opt->events);
        sim_json_str(r->opt->events, reason);
        fputs(",\"left\":", r->opt->events);
        sim_ev_pods(r, r->assign[j], pods, n);
        fprintf(r->opt->events, ",\"pods\":%u,\"lost_gpu_s\":%.3f}\n", e->n_live - n, lost_gpu_s);
    }
    struct sched_assign *a = r->assign[j];
    int64_t gpus = 0;
    uint32_t keep = 0, x = 0, y = 0, asked = 0;
    for (uint32_t m = 0; m < e->n_live; m++) {
        const struct podset *ps = &job->gang.sets[e->live_set[m]];
        bool is_asked = y < e->n_ask && e->ask[y] == m;
        y += is_asked;
        if (x < n && pods[x] == m) { /* leaves */
            x++;
            sim_pod_off(r, &job->gang, ps, &a[m]);
            sim_charge_req(r, job->gang.queue, e->live_flavor[m], &ps->req, -1);
            gpus += ps->req.v[RES_GPU];
            e->grow_set[e->n_grow++] = e->live_set[m];
            continue;
        }
        if (is_asked) /* renumbered with those that stay */
            e->ask[asked++] = keep;
        a[keep] = a[m];
        e->live_flavor[keep] = e->live_flavor[m];
        e->live_set[keep++] = e->live_set[m];
    }
    e->n_live = keep;
    r->busy_gpus -= gpus;
    build(&job->gang, e->live_set, e->n_live, j, job->min_pods, e->live_sets, &e->live);
    sort_sets(e->grow_set, e->n_grow);
    grow_queue(r, k);
    push_finish(r, j, now);
    handshake_after_loss(r, j, preempted, e->n_ask > 0, asked);
    sim_touch(r, j);
    if (preempted) {
        r->st->member_preemptions++;
        r->st->members_preempted += n;
    } else {
        r->st->members_replaced += n;
    }
    return 0;
}

int sim_shrink(struct run *r, uint32_t j, const uint32_t *pods, uint32_t n, int64_t now,
               bool checkpointed, const char *reason)
{
    return take_members(r, j, pods, n, now, checkpointed, reason, true);
}

/* Members lost[0 .. n) (ascending indices into job j's running members: the lifecycle rules
 * list them in member order, sched/engine/life.c) were lost with their node, and the rules
 * replace them alone (an elastic inference job that keeps its min_pods): they go, and wait to
 * join again, as in the daemon. */
int sim_lose_members(struct run *r, uint32_t j, const uint32_t *lost, uint32_t n, int64_t now)
{
    uint32_t k = sim_elastic_slot(r, j);
    if (k == UINT32_MAX || n == 0 || n > r->el[k].n_live)
        return 0; /* a rigid job keeps no min_pods below its pods: the rules tear it down */
    if (r->fail_at && r->fail_at[j] >= 0)
        r->st->partial_gang_seconds += (double)(now - r->fail_at[j]) / 1000.0;
    return take_members(r, j, lost, n, now, false, "node failure: lost members replaced", false);
}

/* Waiting members placed by a cycle that also evicts their job at once, whole or some of its
 * members, do not join it (the daemon's rule, drop_joins_of_victims in sched/kube/driver.c):
 * their placements are dropped before anything is recorded. Evicted whole, the run ends and they
 * go with it (sim_elastic_withdraw); members evicted alone wait with them and are offered at
 * the next cycle. Without this, a shrink carried out first rebuilt the waiting members' gang
 * (grow_queue, with the evicted members in it) under the placement sim_grow then read. A job
 * asked to checkpoint first runs on until its handshake ends: they join it. */
void sim_drop_joins_of_victims(struct run *r, struct sched_result *res)
{
    uint32_t kept = 0;
    for (uint32_t p = 0; p < res->n_placements; p++) {
        uint32_t g = res->placements[p].gang->id;
        uint32_t j = g >= r->in->n_jobs ? r->el[g - r->in->n_jobs].job : UINT32_MAX;
        bool drop = false;
        for (uint32_t e = 0; j != UINT32_MAX && !drop && e < res->n_evictions; e++)
            drop = res->evictions[e].victim->gang->id == j && sim_state(r, j) == ENG_JOB_RUNNING &&
                   !r->evicting[j] && sim_ckpt_grace(r, j) <= 0;
        if (!drop)
            res->placements[kept++] = res->placements[p];
    }
    res->n_placements = kept;
}

/* The core placed the waiting members of an elastic job (placement p of gang n_jobs + slot):
 * they join the running job. */
int sim_grow(struct run *r, const struct sched_placement *p, int64_t now)
{
    uint32_t k = p->gang->id - r->in->n_jobs, j = r->el[k].job;
    struct sim_elastic *e = &r->el[k];
    const struct sim_job *job = &r->in->jobs[j];
    uint32_t id = r->in->n_jobs + k;
    (void)eng_job_bound(r->eng, id, now); /* its preemptor holds end */
    grow_unqueue(r, e, k);
    if (sim_state(r, j) != ENG_JOB_RUNNING || e->n_grow != p->gang->n_pods)
        return 0; /* cannot happen: the run ended withdraws them */
    double lost_gpu_s = new_segment(r, j, now, false, &r->st->gpu_hours_lost_at_join);
    uint32_t n = e->n_live + e->n_grow;
    struct sched_assign *a = malloc(n * sizeof(*a));
    uint8_t *sets = malloc(2 * n); /* sets, then flavors */
    if (!a || !sets) {
        free(a), free(sets);
        return SCHED_ENOMEM;
    }
    /* merge by set: the running members of a set first, then those joining (charged to the
     * flavor they were placed in). Members asked to leave in a handshake still open (ask,
     * ascending) are renumbered with them: the same members leave, as the daemon names them */
    uint32_t at = 0, x = 0, y = 0, m = 0;
    for (uint32_t s = 0; s < job->gang.n_sets; s++) {
        for (; x < e->n_live && e->live_set[x] == s; x++, at++) {
            if (m < e->n_ask && e->ask[m] == x)
                e->ask[m++] = at;
            a[at] = r->assign[j][x];
            sets[at] = (uint8_t)s;
            sets[n + at] = e->live_flavor[x];
        }
        for (; y < e->n_grow && e->grow_set[y] == s; y++, at++) {
            a[at] = p->pods[y];
            sets[at] = (uint8_t)s;
            sets[n + at] = (uint8_t)p->flavor;
            sim_pod_on(r, &job->gang, &job->gang.sets[s], &a[at], now);
            sim_charge_req(r, job->gang.queue, p->flavor, &job->gang.sets[s].req, +1);
        }
    }
    free(r->assign[j]);
    r->assign[j] = a;
    memcpy(e->live_set, sets, at);
    memcpy(e->live_flavor, sets + n, at);
    free(sets);
    e->n_live = at;
    e->n_grow = 0;
    r->busy_gpus += p->gang->gpus;
    build(&job->gang, e->live_set, e->n_live, j, job->min_pods, e->live_sets, &e->live);
    push_finish(r, j, now);
    rearm_handshake(r, j); /* the handshake goes on */
    sim_touch(r, j);
    r->st->member_joins++;
    if (r->fail_at && r->fail_at[j] >= 0) { /* members lost with a node are back */
        r->st->recovery_sum_s += (double)(now - r->fail_at[j]) / 1000.0;
        r->st->recoveries++;
        r->fail_at[j] = -1;
    }
    if (r->opt->events) {
        sim_ev_head(r, now, "grow", j);
        fputs(",\"joined\":", r->opt->events);
        sim_ev_pods(r, p->pods, NULL, p->gang->n_pods);
        fprintf(r->opt->events, ",\"pods\":%u,\"lost_gpu_s\":%.3f}\n", e->n_live, lost_gpu_s);
    }
    return 0;
}
