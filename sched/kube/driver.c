/* sched/kube/driver.c: the Kubernetes driver, `gangsched run` (see driver.h).
 *
 * One cycle, on the loop thread:
 *   1. kcache_build: the snapshot (cluster, usage of every scheduler's pods, pending gangs with
 *      minMember pods present, running gangs);
 *   2. sched_cycle: decisions (pure), with each queue's fair-share history integrated up to now
 *      (driver_fair.c), within a time budget short of the Lease's renew deadline
 *      (driver_budget.c: the gangs not reached go to the next cycle, at once); the engine
 *      keeps the cycle's reservations (holds, hints, the promises of backfill on probation);
 *   3. one store transaction: decisions that changed, preemption records, job rows, the bind
 *      intents of every placed pod and, when due, the fair-share history; committed with
 *      synchronous=FULL before any request is sent;
 *   4. the binds: every member of every placed gang in parallel (POST pods/NAME/binding with the
 *      GPU ids and the flavor as annotations, merged into the pod); a pod found already bound
 *      to the chosen node counts as bound;
 *   5. when the last bind of the cycle has answered: one transaction closes the intents (bound,
 *      or rolled back for a gang with any failed member, whose bound members are deleted so that
 *      no partial gang survives), then PodGroup status and Events.
 * The next cycle starts only after step 5, so an intent is never open across two commits.
 *
 * The driver's files: this one owns the loop (the cycle as named phases, the timers, watch
 * callbacks, the Lease, signals, configuration reload, metrics and the HTTP API's readiness);
 * driver_bind.c the binder, fences and recovery; driver_status.c PodGroup status, Events and pod
 * conditions; driver_life.c deletes, evictions and the lifecycle step (rules: the engine);
 * driver_eng.c the engine's ids and node effects;
 * driver_record.c jobs, the ledger and the cycle's record; driver_ops.c operator actions and
 * holds; driver_fair.c the fair-share history; driver_budget.c the cycle's time budget;
 * driver_promise.c backfill promises across restarts. The Event on a PodGroup refused for a name
 * another API's PodGroup owns is posted from the cycle (on_refused). driver_int.h holds struct kdrv
 * and what one file calls in another. This file sends no request itself and writes to the store
 * only the configuration of a reload: it orders the phases the others carry out.
 *
 * Recovery (first cycle after becoming leader): open intents of a previous process are resolved
 * against the API's view: a gang whose pods are all on their intended nodes is recorded bound;
 * otherwise its bound members are deleted and the intents rolled back, and it is scheduled
 * again. Nothing is bound twice: a pod is only bound after its previous intent is closed.
 */
#include "sched/kube/driver.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sched/kube/driver_int.h"

void kube_run_opts_default(struct kube_run_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->scheduler = "gangsched";
    o->policy = "gangsched";
    o->leader_elect = true;
    o->lease_name = "gangsched";
    o->cycle_ms = 100;
    o->qps = 200;
    o->burst = 400;
    o->status_every_s = 60;
    o->listen = "0.0.0.0:8080";
}

/* CPU seconds of the calling thread. */
static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t kdrv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t kdrv_mono_ms(void)
{
    struct timespec ts;
#ifdef CLOCK_BOOTTIME
    clock_gettime(CLOCK_BOOTTIME, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kdrv_fatal(struct kdrv *d, const char *msg)
{
    if (!d->failed) {
        d->failed = true;
        snprintf(d->fatal, sizeof(d->fatal), "%s", msg);
        LOG_ERROR(KDRV_MOD, "fatal: error=%s", msg);
    }
    uv_stop(d->loop);
}

static bool synced(const struct kdrv *d)
{
    for (uint32_t i = 0; i < d->n_inf; i++)
        if (!kube_informer_synced(d->inf[i]))
            return false;
    return true;
}

const char *kdrv_flavor_name(const struct config *cfg, uint32_t f)
{
    return cfg && f < cfg->n_flavors ? cfg->flavors[f].name : NULL;
}

/* One cycle's working state, on the stack of run_cycle: the configuration pinned for the
 * cycle, the snapshot built from the cache and the core's result. */
struct kcycle {
    struct kdrv *d;
    const struct config *cfg;
    int64_t now; /* ms since the epoch, once per cycle */
    struct kcache_build kb;
    struct sched_result res;
    struct sched_errbuf eb;
    bool built;   /* kb holds the cycle's input */
    bool decided; /* res holds the core's decisions (its wake_ms: kdrv_next_due) */
};

bool kdrv_may_lead(struct kdrv *d)
{
    if (!d->leading)
        return false;
    if (d->lease && !kube_lease_check(d->lease)) { /* on_lease(false) ran: the daemon stops */
        d->leading = false;
        return false;
    }
    return true;
}

/* The client's gate: a write (Binding, eviction, delete, patch, claim) leaves only while this
 * replica leads within its renew deadline. */
static bool may_write(void *ctx)
{
    return kdrv_may_lead(ctx);
}

/* Whether a cycle runs now: leading within the renew deadline, caches synced, no binds or
 * claim Unreserves in flight, the store open and recovered, and something changed (or an operator
 * action or reload asked for one). */
static bool cycle_due(struct kdrv *d)
{
    kdrv_clock_check(d); /* a wall-clock step moves the deadlines before they are compared */
    if (d->stopping || d->n_binds > 0 || d->unreserves_left > 0 || !kdrv_may_lead(d) || !synced(d))
        return false;
    if (!d->db && kdrv_open_store(d) != 0)
        return false;
    if (!d->recovered && kdrv_recover(d) != 0)
        return false;
    if (!kcache_dirty(d->cache) && !d->force) {
        int64_t now = kdrv_now(d);
        if (d->o->full_cycles || (now < d->due_ms && now < d->later_ms))
            return false;
    }
    d->force = false;
    return true;
}

/* The next cycle's due time (driver_int.h). */
int64_t kdrv_next_due(const struct kdrv_due_in *in)
{
    int64_t due = in->eng_due;
    int64_t own = in->decided ? in->wake_ms : in->now + KDRV_RETRY_MS;
    if (own < due)
        due = own;
    bool recheck = in->preempting && in->n_pending > 0 && in->n_running > 0;
    if (recheck && in->now + KDRV_SAFETY_RECHECK_MS < due)
        due = in->now + KDRV_SAFETY_RECHECK_MS;
    return due;
}

/* The last cycle's part of kdrv_next_due. A waiting gang reaching starvation.after is in the
 * core's wake_ms (cycle.c maybe_reserve), as the simulator has it: no second copy here. */
static int64_t cycle_next_due(const struct kcycle *c)
{
    const struct kdrv *d = c->d;
    struct kdrv_due_in in = {
        .now = c->now,
        .decided = c->decided,
        .wake_ms = c->decided ? c->res.wake_ms : INT64_MAX,
        .eng_due = eng_next_due(d->eng, c->now),
        .preempting = d->pol && d->pol->preempt,
        .n_pending = c->built ? c->kb.n_pending : 0,
        .n_running = c->built ? c->kb.snap.n_running : 0,
    };
    return kdrv_next_due(&in);
}

/* The snapshot, then the lifecycle step on it. */
static int cycle_build(struct kcycle *c)
{
    struct kdrv *d = c->d;
    arena_reset(&d->arena);
    int rc = kcache_build(d->cache, c->cfg, d->pol, c->now, &d->arena, &c->kb, &c->eb);
    if (rc != 0) {
        LOG_ERROR(KDRV_MOD, "cannot build the cycle's input: error=%s",
                  rc == SCHED_ENOMEM ? "out of memory" : c->eb.msg);
        return -1;
    }
    kdrv_warn_no_device(d, c->kb.snap.cluster);
    if (kdrv_lifecycle_step(d, &c->kb, c->cfg, c->now, &c->eb) != 0) {
        kdrv_fatal(d, c->eb.msg);
        return -1;
    }
    return 0;
}

/* Held and draining queues admit nothing (operator actions); their gangs are told why. */
static void cycle_held_queues(struct kcycle *c)
{
    struct kdrv *d = c->d;
    struct kcache_build *kb = &c->kb;
    for (uint32_t q = 0; q < kb->snap.n_queues; q++) {
        const char *qn = c->cfg->queues[q].name;
        const char *lbl[] = {qn};
        bool held = strmap_get(&d->held, qn) != NULL;
        http_metric_set(d->m_pending, lbl, kb->views[q].n_pending);
        http_metric_set(d->m_held, lbl, held ? 1 : 0);
        for (uint32_t i = 0; held && i < kb->views[q].n_pending; i++) {
            const struct kgang *kg = &kb->gangs[kb->views[q].pending[i]->id];
            char msg[400];
            snprintf(msg, sizeof(msg),
                     "queue %s is held by an operator: nothing is admitted "
                     "until 'gangctl queue resume %s'",
                     qn, qn);
            bool w =
                kdrv_gang_status(d, kg->key, kg->pg, "Pending", "Warning", "QueueHeld", msg, false);
            kdrv_pods_unschedulable(d, kg->members, kg->gang.n_pods, w, "QueueHeld", msg);
            if (d->leading &&
                kdrv_waiting_job_row(d, kg->key, qn, kb->views[q].pending[i], &c->eb) != 0)
                LOG_WARN(KDRV_MOD, "cannot record the job of gang %s: %s", kg->key, c->eb.msg);
        }
        if (held)
            kb->views[q].n_pending = 0;
    }
}

/* Gangs that cannot be offered to the core: their status, conditions and records say why. */
static void cycle_waiting(struct kcycle *c)
{
    struct kdrv *d = c->d;
    for (uint32_t w = 0; w < c->kb.n_waiting; w++) {
        const struct kwaiting *kw = &c->kb.waiting[w];
        bool wrote = kdrv_gang_status(d, kw->key, kw->pg, "Pending", "Warning", kw->reason,
                                      kw->message, false);
        kdrv_pods_unschedulable(d, kw->pods, kw->n_pods, wrote, kw->reason, kw->message);
        if (d->leading && kdrv_waiting_gang_records(d, kw, c->now, &c->eb) != 0)
            LOG_WARN(KDRV_MOD, "cannot record waiting gang %s: %s", kw->key, c->eb.msg);
    }
}

/* New members of an elastic gang that the same cycle evicts at once do not join it this cycle,
 * the simulator's rule too (sim_drop_joins_of_victims, sched/sim/elastic.c). Evicted whole, its run
 * ends and they wait for the gang's next start. Some of its members evicted alone, they are offered
 * again at the next cycle (to the gang that runs on without those). Their placement is dropped
 * before anything is recorded or bound. Before, they were bound alone, and their job row, made
 * pending by the eviction, was admitted again charged the evicted members' GPUs too. A victim
 * asked to checkpoint first runs until its handshake ends: its new members join it, in both
 * drivers (and go with it when it goes whole). Gangs torn down before this cycle's decisions (an
 * earlier eviction, a handshake that ended) had their new members kept from the core
 * (kdrv_views_schedulable). */
static void drop_joins_of_victims(struct kcycle *c)
{
    struct sched_result *res = &c->res;
    uint32_t kept = 0;
    for (uint32_t p = 0; p < res->n_placements; p++) {
        const struct kgang *run = c->kb.gangs[res->placements[p].gang->id].run;
        const struct sched_eviction *drop = NULL;
        for (uint32_t e = 0; run && !drop && e < res->n_evictions; e++) {
            const struct sched_eviction *ev = &res->evictions[e];
            if (&c->kb.gangs[ev->victim->gang->id] == run && !kdrv_ckpt_asks(run, c->cfg))
                drop = ev;
        }
        if (drop)
            LOG_INFO(KDRV_MOD, "new members not joined: gang=%s (%s this cycle)", run->key,
                     drop->pods ? "members evicted" : "evicted whole");
        else
            res->placements[kept++] = res->placements[p];
    }
    res->n_placements = kept;
}

/* The core's decisions (pure), then their record in one store transaction. */
static int cycle_decide(struct kcycle *c)
{
    struct kdrv *d = c->d;
    d->cycle++;
    uint64_t t0 = uv_hrtime();
    c->kb.snap.plan_starts = true; /* expected starts for the decision log */
    /* the estimates first: the nodes' expected releases are part of the state the base keeps */
    int crc = kdrv_est_plan(d, &c->kb, c->cfg, c->now);
    if (crc == 0 && !d->o->full_cycles && kcache_base(d->cache, &c->kb) != 0)
        LOG_WARN(KDRV_MOD, "out of memory keeping the placement state: this cycle builds its own");
    if (crc == 0)
        crc = kdrv_fair_offer(d, &c->kb, c->cfg, c->now);
    if (crc == 0) {
        kdrv_budget(d, &c->kb.snap);
        kdrv_pass_over(&d->passed, &c->kb, &d->arena);
        crc = sched_cycle(&c->kb.snap, &d->arena, &c->res);
    }
    http_metric_observe(d->m_cycle, NULL, (double)(uv_hrtime() - t0) / 1e9);
    if (crc != 0) {
        LOG_ERROR(KDRV_MOD, "out of memory in the scheduling cycle");
        return -1;
    }
    kdrv_chain(&d->passed, &c->kb, &c->res);
    if (c->res.cut_short) { /* the rest at the next cycle, at once */
        d->force = true;
        http_metric_add_value(d->m_cut, NULL, 1);
        LOG_INFO(KDRV_MOD,
                 "cycle cut short by its time budget: %u of %u pending gangs examined in %.0f ms, "
                 "the rest at the next cycle",
                 c->res.n_examined, c->kb.n_pending, (double)(uv_hrtime() - t0) / 1e6);
    }
    drop_joins_of_victims(c);
    /* the engine takes the reservations before the record: a placement on probation is
     * recorded with its promise, the first expected start the engine keeps */
    kdrv_holds_take(d, &c->kb, &c->res, c->now);
    if (kdrv_record_cycle(d, &c->kb, &c->res, c->cfg, c->now, &c->eb) != 0) {
        kdrv_fatal(d, c->eb.msg);
        return -1;
    }
    return 0;
}

/* Gangs the core could not place: status and conditions carry its verdict; new members that ask
 * their running gang for a checkpoint ask it (driver_shrink.c). */
static void cycle_verdicts(struct kcycle *c)
{
    const struct sched_result *res = &c->res;
    for (uint32_t v = 0; v < res->n_verdicts; v++) {
        const struct kgang *kg = &c->kb.gangs[res->verdicts[v].gang->id];
        char msg[768];
        kdrv_verdict_text(&c->kb, &res->verdicts[v], c->cfg, msg, sizeof(msg));
        bool w = kdrv_gang_status(c->d, kg->key, kg->pg, "Pending", "Warning", "Unschedulable", msg,
                                  false);
        kdrv_pods_unschedulable(c->d, kg->members, kg->gang.n_pods, w, "Unschedulable", msg);
        if (res->verdicts[v].ask_checkpoint)
            kdrv_join_ask(c->d, kg, c->now);
    }
}

/* Preemption: every member of each victim gang, through the Eviction API; at once, or after
 * the checkpoint handshake when the victim's queue asks for one (driver_ckpt.c). */
static void cycle_evictions(struct kcycle *c)
{
    struct kdrv *d = c->d;
    const struct sched_result *res = &c->res;
    for (uint32_t e = 0; e < res->n_evictions; e++) {
        const struct kgang *victim = &c->kb.gangs[res->evictions[e].victim->gang->id];
        const struct kgang *by = &c->kb.gangs[res->evictions[e].preemptor->id];
        const char *kind[] = {sched_preempt_kind_name(res->evictions[e].kind)};
        http_metric_add_value(d->m_evictions, kind, 1);
        if (res->evictions[e].pods) {
            kdrv_shrink(d, &c->kb, &res->evictions[e], c->cfg, c->now);
            continue;
        }
        if (kdrv_ckpt_request(d, victim, by, &res->evictions[e], c->cfg, c->now))
            continue;
        char why[400], msg[600];
        snprintf(msg, sizeof(msg), "%s (%.0f GPU-seconds of work since the last checkpoint lost)",
                 sched_eviction_format(&res->evictions[e], by->key, why, sizeof(why)),
                 res->evictions[e].lost_gpu_s);
        kdrv_evict_gang(d, victim, msg);
        kdrv_gang_status_rel(d, victim->key, victim->pg, "Pending", "Warning", "Preempted", msg,
                             true, by->pg);
    }
}

/* A PodGroup refused for a name another API's PodGroup owns (sched/kube/cache_refused.c): a
 * Warning Event on it, once per object, naming the owner (also its `related`). */
static void on_refused(void *ctx, const struct kpg *pg, const struct kpg *owner)
{
    struct kdrv *d = ctx;
    char note[1000];
    if (owner)
        snprintf(note, sizeof(note),
                 "not scheduled: %s %s (uid %s) has the same namespace and name, and gangsched "
                 "follows the PodGroup it saw first while that exists; this one becomes the gang "
                 "when that one is deleted",
                 knative_api_version(owner->api), owner->key, owner->uid ? owner->uid : "");
    else
        snprintf(note, sizeof(note),
                 "not scheduled: another API's PodGroup had the same namespace and name");
    LOG_INFO(KDRV_MOD, "event: podgroup refused: %s %s uid=%s", knative_api_version(pg->api),
             pg->key, pg->uid ? pg->uid : "");
    kdrv_post_event(d, knative_api_version(pg->api), knative_kind(pg->api), pg->ns, pg->name,
                    pg->uid, "Warning", "NameConflict", "Scheduling", note, owner);
}

/* One scheduling cycle (the steps at the top of this file), as named phases. */
static void run_cycle(struct kdrv *d)
{
    if (!cycle_due(d))
        return;
    double cpu0 = thread_cpu_s();
    struct kcycle c = {.d = d, .cfg = config_watch_pin(d->cw), .now = kdrv_now(d)};
    d->cycle_now = c.now;    /* kdrv_now's answer until the cycle ends */
    d->later_ms = INT64_MAX; /* this cycle writes (or holds back) every status again */
    c.built = cycle_build(&c) == 0;
    kdrv_owed_status(d, c.now);
    kdrv_counts_step(d, c.now);
    kcache_refused_announce(d->cache, on_refused, d);
    if (c.built) {
        kdrv_ext_sweep(d, &c.kb);
        kdrv_evictions_retry(d, c.now);
        cycle_held_queues(&c);
        cycle_waiting(&c);
        kdrv_ckpt_step(d, &c.kb, c.now);
        kdrv_shrink_step(d, &c.kb, c.now);
        kdrv_views_schedulable(d, &c.kb, c.now, "its checkpoint handshake ended this cycle");
        kdrv_promise_restore(d, &c.kb);
        kdrv_holds_offer(d, &c.kb, c.now);
        c.decided = cycle_decide(&c) == 0;
        if (c.decided) {
            cycle_verdicts(&c);
            cycle_evictions(&c);
            kdrv_binds_start(d, &c.kb, &c.res, c.cfg);
        }
    }
    d->due_ms = cycle_next_due(&c);
    d->ids = NULL; /* the cycle's maps end with it */
    config_watch_unpin(d->cw, c.cfg);
    d->cycle_now = 0;
    http_metric_observe(d->m_cycle_cpu, NULL, thread_cpu_s() - cpu0);
}

static void on_cycle_timer(uv_timer_t *t)
{
    struct kdrv *d = t->data;
    run_cycle(d);
    if (d->n_binds == 0 && !d->stopping)
        kdrv_schedule_cycle(d, d->o->cycle_ms);
}

void kdrv_cycle_at(struct kdrv *d, int64_t at)
{
    if (at < d->later_ms)
        d->later_ms = at;
}

void kdrv_schedule_cycle(struct kdrv *d, uint64_t delay_ms)
{
    if (!uv_is_closing((uv_handle_t *)&d->cycle_timer))
        uv_timer_start(&d->cycle_timer, on_cycle_timer, delay_ms, 0);
}

/* ---- informers, lease, signals -------------------------------------------------------------- */

/* Two pod informers: every non-terminal pod (usage on the nodes), and this scheduler's pods in
 * every phase (a member that fails must be seen failing, not vanish from a phase-filtered
 * watch). The first ignores this scheduler's pods, so that each pod has one source. */
static bool ours(const struct kdrv *d, const cJSON *obj)
{
    const char *sn = kobj_str(obj, "spec.schedulerName");
    return sn && strcmp(sn, d->o->scheduler) == 0;
}

static void on_pod(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && !ours(d, obj) &&
        kcache_pod_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the pod cache");
}

static void on_own_pod(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_pod_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the pod cache");
}

static void on_node(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_node_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the node cache");
}

static void on_pg_xk8s(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_pg_event(d->cache, obj, KPG_XK8S, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the podgroup cache");
}

static void on_pg_volcano(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_pg_event(d->cache, obj, KPG_VOLCANO, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the podgroup cache");
}

static void on_pg_native_a2(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED &&
        kcache_pg_event(d->cache, obj, KPG_NATIVE_V1ALPHA2, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the podgroup cache");
}

static void on_pg_native_b1(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED &&
        kcache_pg_event(d->cache, obj, KPG_NATIVE_V1BETA1, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the podgroup cache");
}

static void on_pg_native_a3(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED &&
        kcache_pg_event(d->cache, obj, KPG_NATIVE_V1ALPHA3, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the podgroup cache");
}

static void on_cpg(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_pg_event(d->cache, obj, KPG_CPG_V1ALPHA3, ev == KUBE_DELETED))
        kdrv_fatal(d, "out of memory in the podgroup cache");
}

static void on_workload(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED &&
        kcache_pg_event(d->cache, obj, KPG_WORKLOAD_V1ALPHA1, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the podgroup cache");
}

static void on_claim(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_claim_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the resourceclaim cache");
}

static void on_slice(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_slice_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the resourceslice cache");
}

static void on_class(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_class_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the deviceclass cache");
}

static void on_cd(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_cd_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the computedomain cache");
}

static void on_ns(void *ctx, enum kube_event ev, const cJSON *obj)
{
    struct kdrv *d = ctx;
    if (ev != KUBE_SYNCED && kcache_ns_event(d->cache, obj, ev == KUBE_DELETED) != 0)
        kdrv_fatal(d, "out of memory in the namespace cache");
}

static void on_lease(void *ctx, bool leading)
{
    struct kdrv *d = ctx;
    if (leading) {
        LOG_INFO(KDRV_MOD, "became leader: identity=%s", d->o->identity);
        http_follow_stop(d->follow); /* the store it followed is adopted when opened */
        d->follow = NULL;
        d->leading = true;
        d->force = true; /* the first cycle as leader, whatever changed */
        d->recovered = false;
        d->jobs_synced = false;
        d->ckpt_resumed = false; /* handshakes resumed from the annotations at its first cycle */
        d->promises_restored = false; /* and backfill promises from the store */
        d->restarts_restored = false; /* and in-place restarts */
        http_metric_set(d->m_leader, NULL, 1);
        kdrv_schedule_cycle(d, 0);
        return;
    }
    /* before uv_stop, which lets the rest of this loop iteration run (its timers, the pump's
     * among them, and the poll phase that writes): no write of a deposed leader leaves */
    kube_client_drop_writes(d->client);
    if (d->leading) {
        d->leading = false;
        kdrv_fatal(d, "lost the Lease: stopping so that a deposed leader never binds");
    }
}

static void on_released(void *ctx)
{
    struct kdrv *d = ctx;
    uv_stop(d->loop);
}

static void on_writes_drained(void *ctx)
{
    struct kdrv *d = ctx;
    kube_client_drop_writes(d->client); /* none is left; a write queued from now on is not sent */
    if (d->lease && kube_lease_leading(d->lease))
        kube_lease_release(d->lease, on_released, d);
    else
        uv_stop(d->loop);
}

void kdrv_stop_releasing(struct kdrv *d)
{
    /* a leader's writes drain with or without leader election (--leader-elect false: the only
     * replica leads from the start, d->lease NULL); on_writes_drained releases a Lease held */
    bool leads = d->lease ? kube_lease_leading(d->lease) : d->leading;
    if (leads && !d->failed)
        kube_client_drain_writes(d->client, KDRV_DRAIN_MS, on_writes_drained, d);
    else
        uv_stop(d->loop);
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct kdrv *d = s->data;
    LOG_INFO(KDRV_MOD, "shutting down: signal=%d binds_in_flight=%u", signum, d->binds_left);
    /* Once: the handles stop and SIGTERM and SIGINT are ignored until the exit. Stopping or
     * closing (kdrv_shutdown) a libuv signal handle restores the default action, so a second
     * SIGTERM while the binds finish, the Lease is released or the handles close would end the
     * daemon with 143 instead of its orderly exit. Blocked on this thread meanwhile: one that
     * arrives in between is discarded. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    uv_signal_stop(&d->sigterm);
    uv_signal_stop(&d->sigint);
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    d->stopping = true;
    uv_timer_stop(&d->cycle_timer);
    if (d->n_binds > 0)
        return; /* binds_finished() calls kdrv_stop_releasing */
    kdrv_stop_releasing(d);
}

static void on_config(void *data, const struct config *fresh, const struct config *old)
{
    struct kdrv *d = data;
    (void)old;
    struct sched_errbuf eb;
    LOG_INFO(KDRV_MOD, "configuration applied: version=%016llx",
             (unsigned long long)fresh->version);
    if (d->db && d->leading && store_config_apply(d->db, fresh, NULL, 0, &eb) != 0)
        LOG_ERROR(KDRV_MOD, "cannot record the configuration: error=%s", eb.msg);
    d->force = true;
    kdrv_schedule_cycle(d, 0);
}

/* ---- HTTP API: readiness, operator writes, metrics ------------------------------------------ */

/* The PodGroup APIs: informer KDRV_INF_PG + i reads enum kpg_api i (knative_api_version names
 * it); whether the server serves it is whether its list was a 404. */
#define KDRV_INF_PG 3 /* index of the first PodGroup informer in d->inf */

/* "podgroup APIs in use: scheduling.x-k8s.io/v1alpha1; not served: ..." into buf. */
static void pg_apis(const struct kdrv *d, char *buf, size_t n)
{
    size_t off = (size_t)snprintf(buf, n, "podgroup APIs in use:");
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && off < n)
            off += (size_t)snprintf(buf + off, n - off, "; not served:");
        int k = 0;
        for (uint32_t i = 0; i < KPG_N_API && KDRV_INF_PG + i < d->n_inf; i++) {
            bool absent = kube_informer_absent(d->inf[KDRV_INF_PG + i]);
            if (absent == (pass == 1) && off < n)
                off += (size_t)snprintf(buf + off, n - off, "%s %s%s", k++ ? "," : "",
                                        knative_api_version(i),
                                        i == KPG_WORKLOAD_V1ALPHA1 ? " (workloads)" : "");
        }
        if (k == 0 && off < n)
            off += (size_t)snprintf(buf + off, n - off, " none");
    }
}

/* Only the leader serves its store to a following standby (sched/http/follow.h). */
static bool http_leading(void *ctx)
{
    const struct kdrv *d = ctx;
    return d->leading && d->db != NULL;
}

static bool http_ready(void *ctx, char *why, size_t n)
{
    struct kdrv *d = ctx;
    for (uint32_t i = 0; i < d->n_inf; i++)
        if (!kube_informer_synced(d->inf[i])) {
            snprintf(why, n, "informer %u has not listed yet", i);
            return false;
        }
    if (d->o->leader_elect && !d->leading && d->lease && kube_lease_leading(d->lease)) {
        snprintf(why, n, "holds the Lease but has not started leading yet");
        return false;
    }
    pg_apis(d, why, n);
    return true;
}

static int start_metrics(struct kdrv *d)
{
    static const double cycle_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                           0.05,   0.1,   0.25,   0.5,   1,    2.5};
    static const char *const result[] = {"result"}, *const outcome[] = {"outcome"},
                             *const kind[] = {"kind"}, *const queue[] = {"cluster_queue"},
                             *const reason[] = {"reason"}, *const api[] = {"api"};
    /* the daemon's families (docs/metrics.md), one row each */
    const struct {
        const char *name, *help;
        enum http_metric_type type;
        const char *const *labels;
        struct http_metric **out;
    } fams[] = {
        {"gangsched_cycle_duration_seconds", "Time the scheduling core took per cycle",
         HTTP_HISTOGRAM, NULL, &d->m_cycle},
        {"gangsched_cycle_cpu_seconds",
         "CPU time of the whole cycle on the event loop's thread (snapshot, lifecycle, core, "
         "records, the requests it starts)",
         HTTP_HISTOGRAM, NULL, &d->m_cycle_cpu},
        {"gangsched_cycles_cut_short_total",
         "Cycles whose core stopped at its time budget (short of the Lease's renew deadline, or "
         "--cycle-budget), the gangs not reached left to the next cycle",
         HTTP_COUNTER, NULL, &d->m_cut},
        {"gangsched_binds_total", "Pod bindings by result", HTTP_COUNTER, result, &d->m_binds},
        {"gangsched_gangs_bound_total", "Placed gangs by outcome of their binds", HTTP_COUNTER,
         outcome, &d->m_gangs},
        {"gangsched_kube_client_requests_total",
         "Kubernetes API requests by kind (sent, retries, errors, throttled)", HTTP_COUNTER, kind,
         &d->m_api},
        {"gangsched_kube_watch_events_total",
         "Kubernetes watches by kind (events, bookmarks, relists after a 410, reconnects, stalls: "
         "silent watches the watchdog abandoned; streamed_lists, paged_lists: lists completed "
         "as a streaming list or in pages)",
         HTTP_COUNTER, kind, &d->m_watch},
        {"gangsched_leader", "1 while this replica schedules (holds the Lease, or runs alone)",
         HTTP_GAUGE, NULL, &d->m_leader},
        {"gangsched_pending_gangs", "Gangs offered to the core at the last cycle, per queue",
         HTTP_GAUGE, queue, &d->m_pending},
        {"gangsched_victim_gangs_evicted_total",
         "Preemption victim gangs this process evicted (counted when decided), by kind",
         HTTP_COUNTER, reason, &d->m_evictions},
        {"gangsched_checkpoint_handshakes_total",
         "Checkpoint handshakes of preemption over, by outcome (answered: the victim checkpointed "
         "after the request; timeout: the grace ended first; dropped: members lost meanwhile, "
         "nobody left)",
         HTTP_COUNTER, outcome, &d->m_ckpt},
        {"gangsched_queue_held", "1 while an operator holds or drains the queue", HTTP_GAUGE, queue,
         &d->m_held},
        {"gangsched_gang_teardowns_total",
         "Running gangs torn down (or inference replicas replaced), by reason", HTTP_COUNTER,
         reason, &d->m_teardowns},
        {"gangsched_nodes_quarantined", "Nodes excluded after repeated failed gang starts",
         HTTP_GAUGE, NULL, &d->m_quarantined},
        {"gangsched_podgroup_api_served",
         "1 while the API server serves this PodGroup API (its CRD is installed) and the daemon "
         "watches it, 0 while it answers 404",
         HTTP_GAUGE, api, &d->m_pg_api},
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof(fams) / sizeof(fams[0]); i++) {
        bool hist = fams[i].type == HTTP_HISTOGRAM;
        rc = http_metric_add(d->metrics, fams[i].name, fams[i].help, fams[i].type, fams[i].labels,
                             fams[i].labels ? 1 : 0, hist ? cycle_buckets : NULL, hist ? 12 : 0,
                             fams[i].out);
    }
    if (rc == 0)
        rc = http_metric_set(d->m_leader, NULL, 0);
    /* which resource every *gpu* figure counts (device.resource of the config) */
    static const char *const dev_labels[] = {"resource", "unit"};
    struct http_metric *dev = NULL;
    if (rc == 0)
        rc = http_metric_add(d->metrics, "gangsched_device_info",
                             "The accelerator resource the scheduler counts as GPUs, and its unit",
                             HTTP_GAUGE, dev_labels, 2, NULL, 0, &dev);
    if (rc == 0) {
        for (int k = 0; rc == 0 && k < res_kind_count(); k++) { /* one series per kind */
            const char *vals[] = {res_name(res_kind_res(k)), device_kind_unit(k)};
            rc = http_metric_set(dev, vals, 1);
        }
    }
    return rc;
}

/* Copies the client's counters into the metrics (called every second). */
static void update_client_metrics(struct kdrv *d)
{
    struct kube_client_stats st;
    kube_client_stats(d->client, &st);
    const struct {
        struct http_metric *m;
        const char *kind;
        uint64_t now;
    } rows[11] = {
        {d->m_api, "sent", st.requests},
        {d->m_api, "retries", st.retries},
        {d->m_api, "errors", st.errors},
        {d->m_api, "throttled", st.throttled},
        {d->m_watch, "events", st.watch_events},
        {d->m_watch, "bookmarks", st.bookmarks},
        {d->m_watch, "relists", st.relists},
        {d->m_watch, "reconnects", st.reconnects},
        {d->m_watch, "stalls", st.watch_stalls},
        {d->m_watch, "streamed_lists", st.streamed_lists},
        {d->m_watch, "paged_lists", st.paged_lists},
    };
    for (int i = 0; i < 11; i++) {
        const char *lbl[] = {rows[i].kind};
        uint64_t was = d->api_seen[i];
        http_metric_add_value(rows[i].m, lbl, rows[i].now > was ? (double)(rows[i].now - was) : 0);
        d->api_seen[i] = rows[i].now;
    }
}

/* Every second: the client's counters (and with --kube-full-cycles, a cycle even without
 * changes: otherwise a cycle runs only on a change or a due timer, cycle_due). */
static void on_stats_timer(uv_timer_t *t)
{
    struct kdrv *d = t->data;
    update_client_metrics(d);
    for (uint32_t i = 0; i < KPG_N_API && KDRV_INF_PG + i < d->n_inf; i++) {
        const char *lbl[] = {knative_api_version(i)};
        const struct kube_informer *inf = d->inf[KDRV_INF_PG + i];
        http_metric_set(d->m_pg_api, lbl,
                        kube_informer_synced(inf) && !kube_informer_absent(inf) ? 1 : 0);
    }
    if (d->o->full_cycles && d->leading && !d->stopping && d->n_binds == 0) {
        d->force = true;
        kdrv_schedule_cycle(d, 0);
    }
}

static int start_informer(struct kdrv *d, const char *path, const char *field_selector,
                          kube_informer_fn *fn, struct sched_errbuf *eb)
{
    struct kube_informer_opts io = {
        .path = path, .field_selector = field_selector, .paged = d->o->paged_lists};
    return kube_informer_new(d->client, &io, fn, d, &d->inf[d->n_inf++], eb);
}

static void close_cb(uv_handle_t *h)
{
    (void)h;
}

/* The informers, in the order of d->inf (KDRV_INF_PG is the first PodGroup API): a path the
 * server does not serve lists 404 and counts as synced and empty. The pods of this scheduler
 * (spec.schedulerName, from the options) come third. */
static const struct kdrv_watch {
    const char *path;
    const char *field_selector; /* NULL: none */
    kube_informer_fn *fn;
} kdrv_watches[] = {
    {"/api/v1/nodes", NULL, on_node},
    /* and spec.schedulerName!=<scheduler>: on_pod also skips ours (a server that ignores it) */
    {"/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed", on_pod},
    {"/api/v1/pods", NULL, on_own_pod}, /* field selector: spec.schedulerName=<scheduler> */
    {"/apis/scheduling.x-k8s.io/v1alpha1/podgroups", NULL, on_pg_xk8s},
    {"/apis/scheduling.volcano.sh/v1beta1/podgroups", NULL, on_pg_volcano},
    /* Kubernetes' own groups, in enum kpg_api order; a version the server does not serve lists
     * 404 and counts as synced and empty (1.36 serves v1alpha2, 1.37 v1beta1, 1.35 v1alpha1
     * Workloads, each only with its gates on) */
    {"/apis/scheduling.k8s.io/v1alpha2/podgroups", NULL, on_pg_native_a2},
    {"/apis/scheduling.k8s.io/v1beta1/podgroups", NULL, on_pg_native_b1},
    {"/apis/scheduling.k8s.io/v1alpha1/workloads", NULL, on_workload},
    /* 1.37's v1alpha3 (with CompositePodGroup): the same PodGroups as v1beta1 when both are
     * served (one object, one key: the later event wins) */
    {"/apis/scheduling.k8s.io/v1alpha3/podgroups", NULL, on_pg_native_a3},
    /* and its CompositePodGroups (gate CompositePodGroup): a gang of child PodGroups */
    {"/apis/scheduling.k8s.io/v1alpha3/compositepodgroups", NULL, on_cpg},
    /* DRA devices: GPUs of nodes that run a DRA driver instead of the device plugin */
    {"/apis/resource.k8s.io/v1/resourceslices", NULL, on_slice},
    {"/apis/resource.k8s.io/v1/resourceclaims", NULL, on_claim},
    /* DeviceClasses: the selectors of a claim's class other than the accelerator's */
    {"/apis/resource.k8s.io/v1/deviceclasses", NULL, on_class},
    /* NVIDIA's ComputeDomain CRD (multi-node NVLink): 404 while it is not installed; v1beta2
     * is the newer driver's storage version (the fields read are the same in both) */
    {"/apis/resource.nvidia.com/v1beta1/computedomains", NULL, on_cd},
    {"/apis/resource.nvidia.com/v1beta2/computedomains", NULL, on_cd},
    /* namespaces' labels: pod affinity terms may select namespaces by them */
    {"/api/v1/namespaces", NULL, on_ns},
};
_Static_assert(sizeof(kdrv_watches) / sizeof(kdrv_watches[0]) ==
                   sizeof(((struct kdrv *)0)->inf) / sizeof(((struct kdrv *)0)->inf[0]),
               "one informer slot per watch");

/* The options checked and the state initialised; nothing to tear down when it fails. */
static int kdrv_init(struct kdrv *d, const struct kube_run_opts *o, struct sched_errbuf *eb)
{
    memset(d, 0, sizeof(*d));
    d->due_ms = d->later_ms = INT64_MAX;
    d->o = o;
    d->pol = sched_policy_find(o->policy ? o->policy : "gangsched");
    if (!d->pol)
        return sched_fail(eb, SCHED_EINVAL, "--policy %s: unknown policy", o->policy);
    if (d->pol->private_slices)
        return sched_fail(eb, SCHED_EINVAL, "--policy %s: a simulator baseline only", o->policy);
    if (!o->config_path || !o->db_path)
        return sched_fail(eb, SCHED_EINVAL, "--config and --db are required");
    d->loop = uv_default_loop();
    struct strmap *maps[] = {&d->status,   &d->owed,       &d->owed_ckpt, &d->owed_ckpt_pods,
                             &d->jobs,     &d->held,       &d->shrinks,   &d->joining,
                             &d->restarts, &d->evict_retry};
    for (size_t m = 0; m < sizeof(maps) / sizeof(maps[0]); m++)
        strmap_init(maps[m]);
    d->metrics = http_metrics_new();
    arena_init(&d->arena, 1 << 20);
    if (kdrv_eng_init(d) != 0) {
        kdrv_eng_fini(d);
        arena_fini(&d->arena);
        http_metrics_free(d->metrics);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    return 0;
}

/* Credentials, the API client, the configuration (watched for reloads), the cache and its
 * informers. */
static int start_watching(struct kdrv *d, struct sched_errbuf *eb)
{
    const struct kube_run_opts *o = d->o;
    int rc = kube_auth_load(o->kubeconfig, &d->auth, eb);
    if (rc == 0) {
        struct kube_client_opts co;
        kube_client_opts_default(&co);
        co.qps = o->qps;
        co.burst = o->burst;
        co.max_inflight = o->max_inflight;
        co.watch_idle_ms = o->watch_idle_ms;
        rc = kube_client_new(d->loop, d->auth, &co, &d->client, eb);
        if (rc == 0) /* a write waiting for a slot or a retry is sent only while leading */
            kube_client_set_gate(d->client, may_write, d);
    }
    if (rc == 0)
        rc = config_watch_start(d->loop, o->config_path, on_config, d, &d->cw, eb);
    if (rc == 0)
        rc = config_apply_device(config_watch_current(d->cw), eb);
    if (rc == 0 && !(d->cache = kcache_new(o->scheduler)))
        rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (rc == 0)
        kcache_set_full(d->cache, o->full_cycles);
    /* the other schedulers' pods are asked without ours: the server then sends each Binding
     * of ours on one watch, not two (kube-apiserver filters by field before it serializes) */
    char own_sel[300], other_sel[400];
    snprintf(own_sel, sizeof(own_sel), "spec.schedulerName=%s", o->scheduler);
    for (size_t i = 0; rc == 0 && i < sizeof(kdrv_watches) / sizeof(kdrv_watches[0]); i++) {
        const struct kdrv_watch *w = &kdrv_watches[i];
        const char *sel = w->field_selector;
        if (w->fn == on_own_pod)
            sel = own_sel;
        else if (w->fn == on_pod &&
                 snprintf(other_sel, sizeof(other_sel), "%s,spec.schedulerName!=%s",
                          w->field_selector, o->scheduler) < (int)sizeof(other_sel))
            sel = other_sel;
        rc = start_informer(d, w->path, sel, w->fn, eb);
    }
    return rc;
}

/* Metrics, the HTTP API (when --listen) and, while standby, following the leader's store. */
static int start_http(struct kdrv *d, struct sched_errbuf *eb)
{
    const struct kube_run_opts *o = d->o;
    int rc = 0;
    if (!d->metrics || start_metrics(d) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (o->listen && *o->listen) {
        struct http_opts ho = {.listen = o->listen,
                               .write_token_file = o->token_file,
                               .read_token_file = o->read_token_file,
                               .limits = o->http};
        struct http_provider hp = {.ctx = d,
                                   .store_path = o->db_path,
                                   .ready = http_ready,
                                   .metrics = d->metrics,
                                   .store_metrics = true,
                                   .leading = http_leading,
                                   .write = kdrv_http_write};
        rc = http_server_start(d->loop, &ho, &hp, &d->http, eb);
        if (rc == 0 && o->port_file)
            rc = http_server_write_port(d->http, o->port_file, eb);
        if (rc == 0)
            LOG_INFO(KDRV_MOD, "HTTP API listening: port=%d", http_server_port(d->http));
    }
    if (rc == 0 && o->follow_url && *o->follow_url && !d->leading) {
        rc = http_follow_start(d->loop, o->follow_url, o->follow_token_file, o->db_path,
                               o->follow_ms, &d->follow, eb);
        if (rc == 0)
            LOG_INFO(KDRV_MOD, "following the leader's store: url=%s every_ms=%u", o->follow_url,
                     o->follow_ms ? o->follow_ms : HTTP_FOLLOW_DEFAULT_MS);
    }
    return rc;
}

/* Signals handled, then the Lease contended (or, without leader election, leading at once). */
static int start_leading(struct kdrv *d, struct sched_errbuf *eb)
{
    const struct kube_run_opts *o = d->o;
    uv_signal_start(&d->sigterm, on_signal, SIGTERM);
    uv_signal_start(&d->sigint, on_signal, SIGINT);
    if (o->leader_elect) {
        struct kube_lease_opts lo = {.ns = o->lease_ns ? o->lease_ns : d->auth->namespace,
                                     .name = o->lease_name,
                                     .identity = o->identity};
        return kube_lease_new(d->client, &lo, on_lease, d, &d->lease, eb);
    }
    d->leading = true;
    http_metric_set(d->m_leader, NULL, 1); /* the only replica: it schedules */
    return 0;
}

/* Every handle closed (the loop run until they are), then every structure freed. */
static void kdrv_shutdown(struct kdrv *d)
{
    for (uint32_t i = 0; i < d->n_inf; i++)
        kube_informer_free(d->inf[i]);
    kube_lease_free(d->lease);
    kube_client_free(d->client);
    config_watch_stop(d->cw);
    /* closing the watcher's SIGHUP handle restored SIGHUP's default action (the end of the
     * process, exit 129): a reload asked for during shutdown is moot */
    signal(SIGHUP, SIG_IGN);
    uv_close((uv_handle_t *)&d->cycle_timer, close_cb);
    uv_close((uv_handle_t *)&d->stats_timer, close_cb);
    if (d->http)
        http_server_stop(d->http);
    http_follow_stop(d->follow);
    uv_close((uv_handle_t *)&d->sigterm, close_cb);
    uv_close((uv_handle_t *)&d->sigint, close_cb);
    uv_run(d->loop, UV_RUN_DEFAULT);
    uv_loop_close(d->loop);
    for (uint32_t g = 0; g < d->n_binds; g++)
        kdrv_gang_binds_free(&d->binds[g]);
    free(d->binds);
    const char *k;
    void *v;
    kdrv_status_fini(d);
    for (size_t i = 0; strmap_next(&d->jobs, &i, &k, &v);)
        kdrv_kjob_free(v);
    strmap_fini(&d->jobs);
    strmap_fini(&d->held);
    strmap_fini(&d->passed);
    strmap_fini(&d->joining);
    kdrv_shrink_fini(d);
    kdrv_evictions_fini(d);
    kdrv_eng_fini(d);
    kdrv_est_fini(d);
    eng_fair_free(d->fair);
    store_close(d->db);
    kcache_free(d->cache);
    kube_auth_free(d->auth);
    arena_fini(&d->arena);
    http_metrics_free(d->metrics);
}

int kube_run(const struct kube_run_opts *o, struct sched_errbuf *eb)
{
    struct kdrv d;
    int rc = kdrv_init(&d, o, eb);
    if (rc != 0)
        return rc;
    rc = start_watching(&d, eb);
    uv_timer_init(d.loop, &d.cycle_timer);
    d.cycle_timer.data = &d;
    uv_timer_init(d.loop, &d.stats_timer);
    d.stats_timer.data = &d;
    if (rc == 0)
        rc = start_http(&d, eb);
    if (rc == 0)
        uv_timer_start(&d.stats_timer, on_stats_timer, 1000, 1000);
    uv_signal_init(d.loop, &d.sigterm);
    uv_signal_init(d.loop, &d.sigint);
    d.sigterm.data = d.sigint.data = &d;
    if (rc == 0)
        rc = start_leading(&d, eb);
    if (rc == 0) {
        LOG_INFO(KDRV_MOD, "started: server=%s scheduler=%s policy=%s db=%s", d.auth->server,
                 o->scheduler, d.pol->name, o->db_path);
        kdrv_schedule_cycle(&d, o->cycle_ms);
        uv_run(d.loop, UV_RUN_DEFAULT);
        if (d.failed)
            rc = sched_fail(eb, SCHED_EIO, "%s", d.fatal);
    }
    kdrv_shutdown(&d);
    return rc;
}
