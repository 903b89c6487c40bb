/* sched/kube/driver.c: the Kubernetes driver, `gangsched run` (see driver.h).
 *
 * One cycle, on the loop thread:
 *   1. kcache_build: the snapshot (cluster, usage of every scheduler's pods, pending gangs with
 *      minMember pods present, running gangs);
 *   2. sched_cycle: decisions (pure);
 *   3. one store transaction: decisions that changed, preemption records, job rows and the bind
 *      intents of every placed pod; committed (synchronous=FULL) before any request is sent;
 *   4. the binds: every member of every placed gang in parallel (POST pods/NAME/binding with the
 *      GPU ids and the flavor as annotations, merged into the pod); a pod found already bound
 *      to the chosen node counts as bound;
 *   5. when the last bind of the cycle has answered: one transaction closes the intents (bound,
 *      or rolled back for a gang with any failed member, whose bound members are deleted so that
 *      no partial gang survives), then PodGroup status and Events.
 * The next cycle starts only after step 5, so an intent is never open across two commits.
 *
 * Recovery (first cycle after becoming leader): open intents of a previous process are resolved
 * against the API's view: a gang whose pods are all on their intended nodes is recorded bound;
 * otherwise its bound members are deleted and the intents rolled back, and it is scheduled
 * again. Nothing is bound twice: a pod is only bound after its previous intent is closed.
 */
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

int64_t kdrv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
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

static void run_cycle(struct kdrv *d)
{
    if (d->stopping || !d->leading || d->n_binds > 0 || !synced(d))
        return;
    if (!d->db && kdrv_open_store(d) != 0)
        return;
    if (!d->recovered && kdrv_recover(d) != 0)
        return;
    if (!kcache_dirty(d->cache) && !d->force)
        return;
    d->force = false;
    const struct config *cfg = config_watch_pin(d->cw);
    struct sched_errbuf eb;
    int64_t now = kdrv_now_ms();
    struct kcache_build kb;
    arena_reset(&d->arena);
    int rc = kcache_build(d->cache, cfg, d->pol, now, &d->arena, &kb, &eb);
    if (rc != 0) {
        config_watch_unpin(d->cw, cfg);
        LOG_ERROR(KDRV_MOD, "cannot build the cycle's input: error=%s",
                  rc == SCHED_ENOMEM ? "out of memory" : eb.msg);
        return;
    }
    kdrv_warn_no_device(d, kb.snap.cluster);
    if (kdrv_lifecycle_step(d, &kb, cfg, now, &eb) != 0) {
        config_watch_unpin(d->cw, cfg);
        kdrv_fatal(d, eb.msg);
        return;
    }
    /* held and draining queues admit nothing (operator actions) */
    for (uint32_t q = 0; q < kb.snap.n_queues; q++) {
        const char *qn = cfg->queues[q].name;
        const char *lbl[] = {qn};
        bool held = strmap_get(&d->held, qn) != NULL;
        http_metric_set(d->m_pending, lbl, kb.views[q].n_pending);
        http_metric_set(d->m_held, lbl, held ? 1 : 0);
        for (uint32_t i = 0; held && i < kb.views[q].n_pending; i++) {
            const struct kgang *kg = &kb.gangs[kb.views[q].pending[i]->id];
            char msg[400];
            snprintf(msg, sizeof(msg),
                     "queue %s is held by an operator: nothing is admitted "
                     "until 'gangctl queue resume %s'",
                     qn, qn);
            bool w =
                kdrv_gang_status(d, kg->key, kg->pg, "Pending", "Warning", "QueueHeld", msg, false);
            kdrv_pods_unschedulable(d, kg->members, kg->gang.n_pods, w, "QueueHeld", msg);
            if (d->leading &&
                kdrv_waiting_job_row(d, kg->key, qn, kb.views[q].pending[i], &eb) != 0)
                LOG_WARN(KDRV_MOD, "cannot record the job of gang %s: %s", kg->key, eb.msg);
        }
        if (held)
            kb.views[q].n_pending = 0;
    }
    /* gangs that cannot be offered to the core */
    for (uint32_t w = 0; w < kb.n_waiting; w++) {
        const struct kwaiting *kw = &kb.waiting[w];
        bool wrote = kdrv_gang_status(d, kw->key, kw->pg, "Pending", "Warning", kw->reason,
                                      kw->message, false);
        kdrv_pods_unschedulable(d, kw->pods, kw->n_pods, wrote, kw->reason, kw->message);
        if (d->leading && kdrv_waiting_gang_records(d, kw, now, &eb) != 0)
            LOG_WARN(KDRV_MOD, "cannot record waiting gang %s: %s", kw->key, eb.msg);
    }
    /* preemptor holds: kept while their gang is pending and the hold has not ended */
    struct sched_hold *hv = arena_calloc(&d->arena, d->n_holds + 1, sizeof(*hv));
    uint32_t n_hv = 0;
    for (uint32_t h = 0; hv && h < d->n_holds;) {
        struct khold *kh = &d->holds[h];
        const struct gang *g = NULL;
        for (uint32_t i = 0; i < kb.n_pending && !g; i++)
            if (strcmp(kb.gangs[i].key, kh->gang) == 0)
                g = &kb.gangs[i].gang;
        if ((!g && kh->operator_id == 0) || kh->until_ms <= now) {
            kdrv_khold_free(kh);
            d->holds[h] = d->holds[--d->n_holds];
            continue;
        }
        if (!g) { /* reserved ahead for a gang not pending yet: the nodes are held for nobody */
            struct gang *ph = arena_calloc(&d->arena, 1, sizeof(*ph));
            if (ph)
                ph->id = UINT32_MAX;
            g = ph;
        }
        uint32_t *nodes = arena_calloc(&d->arena, kh->n_nodes + 1, sizeof(*nodes));
        uint32_t nn = 0;
        for (uint32_t k = 0; nodes && k < kh->n_nodes; k++) {
            int ix = kcache_node_index(d->cache, kh->nodes[k]);
            if (ix >= 0)
                nodes[nn++] = (uint32_t)ix;
        }
        if (nodes)
            hv[n_hv++] = (struct sched_hold){.gang = g, .nodes = nodes, .n_nodes = nn};
        h++;
    }
    kb.snap.holds = hv;
    kb.snap.n_holds = hv ? n_hv : 0;
    struct sched_result res;
    d->cycle++;
    uint64_t t0 = uv_hrtime();
    kb.snap.plan_starts = true; /* expected starts for the decision log */
    int crc = sched_cycle(&kb.snap, &d->arena, &res);
    http_metric_observe(d->m_cycle, NULL, (double)(uv_hrtime() - t0) / 1e9);
    if (crc != 0) {
        config_watch_unpin(d->cw, cfg);
        LOG_ERROR(KDRV_MOD, "out of memory in the scheduling cycle");
        return;
    }
    if (kdrv_record_cycle(d, &kb, &res, cfg, now, &eb) != 0) {
        config_watch_unpin(d->cw, cfg);
        kdrv_fatal(d, eb.msg);
        return;
    }
    for (uint32_t v = 0; v < res.n_verdicts; v++) {
        const struct kgang *kg = &kb.gangs[res.verdicts[v].gang->id];
        char msg[512];
        sched_verdict_format(&res.verdicts[v], kb.snap.cluster, cfg, msg, sizeof(msg));
        bool w =
            kdrv_gang_status(d, kg->key, kg->pg, "Pending", "Warning", "Unschedulable", msg, false);
        kdrv_pods_unschedulable(d, kg->members, kg->gang.n_pods, w, "Unschedulable", msg);
    }
    /* preemption: every member of each victim gang, through the Eviction API */
    for (uint32_t e = 0; e < res.n_evictions; e++) {
        const struct kgang *victim = &kb.gangs[res.evictions[e].victim->gang->id];
        const struct kgang *by = &kb.gangs[res.evictions[e].preemptor->id];
        char msg[600];
        snprintf(msg, sizeof(msg),
                 "preempted by %s (%.0f GPU-seconds of work since the last "
                 "checkpoint lost)",
                 by->key, res.evictions[e].lost_gpu_s);
        kdrv_evict_gang(d, victim, msg);
        const char *kind[] = {res.evictions[e].kind == SCHED_PREEMPT_RECLAIM      ? "reclaim"
                              : res.evictions[e].kind == SCHED_PREEMPT_FAIR_SHARE ? "fair_share"
                                                                                  : "priority"};
        http_metric_add_value(d->m_evictions, kind, 1);
        kdrv_gang_status_rel(d, victim->key, victim->pg, "Pending", "Warning", "Preempted", msg,
                             true, by->pg);
    }
    for (uint32_t r = 0; r < res.n_reservations; r++) {
        const struct sched_reservation *rv = &res.reservations[r];
        LOG_DEBUG(KDRV_MOD, "reservation: gang=%s preemptor=%d nodes=%u",
                  kb.gangs[rv->gang->id].key, rv->preemptor, rv->n_nodes);
        if (!rv->preemptor)
            continue;
        const char *key = kb.gangs[rv->gang->id].key;
        uint32_t h = 0;
        while (h < d->n_holds && strcmp(d->holds[h].gang, key) != 0)
            h++;
        if (h < d->n_holds)
            continue; /* held already: keep the first hold's deadline */
        struct khold *nh = realloc(d->holds, (d->n_holds + 1) * sizeof(*nh));
        if (!nh)
            break;
        d->holds = nh;
        struct khold *kh = &d->holds[d->n_holds];
        memset(kh, 0, sizeof(*kh)); /* a preemptor's hold, not an operator's */
        kh->gang = strdup(key);
        kh->nodes = calloc(rv->n_nodes + 1, sizeof(*kh->nodes));
        kh->n_nodes = 0;
        kh->until_ms = now + KDRV_HOLD_MS;
        if (!kh->gang || !kh->nodes) {
            kdrv_khold_free(kh);
            break;
        }
        for (uint32_t k = 0; k < rv->n_nodes; k++)
            if ((kh->nodes[kh->n_nodes] = strdup(kb.snap.cluster->nodes[rv->nodes[k]].name)))
                kh->n_nodes++;
        d->n_holds++;
    }
    /* binds */
    if (res.n_placements > 0) {
        d->binds = calloc(res.n_placements, sizeof(*d->binds));
        if (!d->binds) {
            config_watch_unpin(d->cw, cfg);
            kdrv_fatal(d, "out of memory");
            return;
        }
        d->n_binds = res.n_placements;
        d->binds_left = 0;
        for (uint32_t p = 0; p < res.n_placements; p++) {
            const struct sched_placement *pl = &res.placements[p];
            const struct kgang *kg = &kb.gangs[pl->gang->id];
            struct kgang_binds *gb = &d->binds[p];
            gb->d = d;
            gb->gang = strdup(kg->key);
            gb->queue = strdup(cfg->queues[pl->gang->queue].name);
            const char *fl = kdrv_flavor_name(cfg, pl->flavor);
            gb->flavor = fl ? strdup(fl) : NULL;
            gb->gpus = pl->gang->gpus;
            if (kg->pg) {
                gb->pg_ns = strdup(kg->pg->ns);
                gb->pg_name = strdup(kg->pg->name);
                gb->api = kg->pg->api;
            }
            gb->n_pods = pl->gang->n_pods;
            gb->pods = calloc(gb->n_pods, sizeof(*gb->pods));
            const struct cluster *cl = kb.snap.cluster;
            char summary[400];
            int off = snprintf(summary, sizeof(summary), "%u pods placed", gb->n_pods);
            if (pl->level >= 0 && (uint32_t)pl->level < cl->topo.n_levels)
                off += snprintf(summary + off, sizeof(summary) - (size_t)off, " in %s %s",
                                cl->topo.levels[pl->level].name,
                                cl->topo.levels[pl->level].domain_names[pl->domain]);
            if (pl->borrowing && off < (int)sizeof(summary))
                snprintf(summary + off, sizeof(summary) - (size_t)off, " (borrowing quota)");
            gb->summary = strdup(summary);
            if (!gb->gang || !gb->queue || !gb->pods || !gb->summary) {
                config_watch_unpin(d->cw, cfg);
                kdrv_fatal(d, "out of memory");
                return;
            }
            for (uint32_t i = 0; i < gb->n_pods; i++) {
                const struct kpod *pod = kg->members[i];
                struct kbind *b = &gb->pods[i];
                b->gb = gb;
                b->index = i;
                b->pod_key = strdup(pod->key);
                b->ns = strdup(pod->ns);
                b->name = strdup(pod->name);
                b->node = strdup(cl->nodes[pl->pods[i].node].name);
                b->gpu_mask = pl->pods[i].gpu_mask;
                if (!b->pod_key || !b->ns || !b->name || !b->node ||
                    kcache_assume(d->cache, pod->key, b->node, b->gpu_mask, pl->flavor) != 0) {
                    config_watch_unpin(d->cw, cfg);
                    kdrv_fatal(d, "out of memory");
                    return;
                }
                d->binds_left++;
            }
        }
        /* send after every pod is assumed: a bind answering at once must not end the cycle
         * while others are still being prepared */
        uint32_t n_binds = d->n_binds;
        struct kgang_binds *binds = d->binds;
        for (uint32_t p = 0; p < n_binds; p++)
            for (uint32_t i = 0; i < binds[p].n_pods; i++)
                kdrv_send_claims_then_bind(d, &binds[p].pods[i], binds[p].flavor);
    }
    config_watch_unpin(d->cw, cfg);
}

static void on_cycle_timer(uv_timer_t *t)
{
    struct kdrv *d = t->data;
    run_cycle(d);
    if (d->n_binds == 0 && !d->stopping)
        kdrv_schedule_cycle(d, d->o->cycle_ms);
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

static void on_lease(void *ctx, bool leading)
{
    struct kdrv *d = ctx;
    if (leading) {
        LOG_INFO(KDRV_MOD, "became leader: identity=%s", d->o->identity);
        http_follow_stop(d->follow); /* the store it followed is adopted when opened */
        d->follow = NULL;
        d->leading = true;
        d->recovered = false;
        d->jobs_synced = false;
        http_metric_set(d->m_leader, NULL, 1);
        kdrv_schedule_cycle(d, 0);
        return;
    }
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

static void on_signal(uv_signal_t *s, int signum)
{
    struct kdrv *d = s->data;
    LOG_INFO(KDRV_MOD, "shutting down: signal=%d binds_in_flight=%u", signum, d->binds_left);
    d->stopping = true;
    uv_timer_stop(&d->cycle_timer);
    if (d->n_binds > 0)
        return; /* binds_finished() stops the loop */
    if (d->lease && kube_lease_leading(d->lease))
        kube_lease_release(d->lease, on_released, d);
    else
        uv_stop(d->loop);
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
        {"gangsched_binds_total", "Pod bindings by result", HTTP_COUNTER, result, &d->m_binds},
        {"gangsched_gangs_bound_total", "Placed gangs by outcome of their binds", HTTP_COUNTER,
         outcome, &d->m_gangs},
        {"gangsched_kube_client_requests_total",
         "Kubernetes API requests by kind (sent, retries, errors, throttled)", HTTP_COUNTER, kind,
         &d->m_api},
        {"gangsched_leader", "1 while this replica schedules (holds the Lease, or runs alone)",
         HTTP_GAUGE, NULL, &d->m_leader},
        {"gangsched_pending_gangs", "Gangs offered to the core at the last cycle, per queue",
         HTTP_GAUGE, queue, &d->m_pending},
        {"gangsched_victim_gangs_evicted_total",
         "Preemption victim gangs this process evicted, by kind of preemption", HTTP_COUNTER,
         reason, &d->m_evictions},
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
        const char *vals[] = {device_resource(), device_unit()};
        rc = http_metric_set(dev, vals, 1);
    }
    return rc;
}

/* Copies the client's counters into the metrics (called every second). */
static void update_client_metrics(struct kdrv *d)
{
    static const char *const names[] = {"sent", "retries", "errors", "throttled"};
    struct kube_client_stats st;
    kube_client_stats(d->client, &st);
    uint64_t now[4] = {st.requests, st.retries, st.errors, st.throttled};
    for (int i = 0; i < 4; i++) {
        const char *lbl[] = {names[i]};
        if (now[i] > d->api_seen[i])
            http_metric_add_value(d->m_api, lbl, (double)(now[i] - d->api_seen[i]));
        else
            http_metric_add_value(d->m_api, lbl, 0);
        d->api_seen[i] = now[i];
    }
}

/* Every second: the client's counters, and a cycle even without changes, so that start
 * timeouts and failure graces are noticed when they pass. */
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
    if (d->leading && !d->stopping && d->n_binds == 0) {
        d->force = true;
        kdrv_schedule_cycle(d, 0);
    }
}

static int start_informer(struct kdrv *d, const char *path, const char *field_selector,
                          kube_informer_fn *fn, struct sched_errbuf *eb)
{
    struct kube_informer_opts io = {.path = path, .field_selector = field_selector};
    return kube_informer_new(d->client, &io, fn, d, &d->inf[d->n_inf++], eb);
}

static void close_cb(uv_handle_t *h)
{
    (void)h;
}

int kube_run(const struct kube_run_opts *o, struct sched_errbuf *eb)
{
    struct kdrv d;
    memset(&d, 0, sizeof(d));
    d.o = o;
    d.pol = sched_policy_find(o->policy ? o->policy : "gangsched");
    if (!d.pol)
        return sched_fail(eb, SCHED_EINVAL, "--policy %s: unknown policy", o->policy);
    if (d.pol->private_slices)
        return sched_fail(eb, SCHED_EINVAL, "--policy %s: a simulator baseline only", o->policy);
    if (!o->config_path || !o->db_path)
        return sched_fail(eb, SCHED_EINVAL, "--config and --db are required");
    d.loop = uv_default_loop();
    strmap_init(&d.status);
    strmap_init(&d.jobs);
    strmap_init(&d.held);
    strmap_init(&d.bound_at);
    strmap_init(&d.tearing);
    strmap_init(&d.gave_up);
    strmap_init(&d.node_down);
    strmap_init(&d.strikes);
    d.metrics = http_metrics_new();
    arena_init(&d.arena, 1 << 20);
    int rc = kube_auth_load(o->kubeconfig, &d.auth, eb);
    if (rc == 0) {
        struct kube_client_opts co;
        kube_client_opts_default(&co);
        co.qps = o->qps;
        co.burst = o->burst;
        rc = kube_client_new(d.loop, d.auth, &co, &d.client, eb);
    }
    if (rc == 0)
        rc = config_watch_start(d.loop, o->config_path, on_config, &d, &d.cw, eb);
    if (rc == 0)
        rc = config_apply_device(config_watch_current(d.cw), eb);
    if (rc == 0 && !(d.cache = kcache_new(o->scheduler)))
        rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (rc == 0)
        rc = start_informer(&d, "/api/v1/nodes", NULL, on_node, eb);
    if (rc == 0)
        rc = start_informer(&d, "/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed",
                            on_pod, eb);
    char own_sel[300];
    snprintf(own_sel, sizeof(own_sel), "spec.schedulerName=%s", o->scheduler);
    if (rc == 0)
        rc = start_informer(&d, "/api/v1/pods", own_sel, on_own_pod, eb);
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", NULL, on_pg_xk8s,
                            eb);
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.volcano.sh/v1beta1/podgroups", NULL,
                            on_pg_volcano, eb);
    /* Kubernetes' own groups, in enum kpg_api order; a version the server does not serve lists
     * 404 and counts as synced and empty (1.36 serves v1alpha2, 1.37 v1beta1, 1.35 v1alpha1
     * Workloads, each only with its gates on) */
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.k8s.io/v1alpha2/podgroups", NULL, on_pg_native_a2,
                            eb);
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.k8s.io/v1beta1/podgroups", NULL, on_pg_native_b1,
                            eb);
    if (rc == 0)
        rc =
            start_informer(&d, "/apis/scheduling.k8s.io/v1alpha1/workloads", NULL, on_workload, eb);
    /* 1.37's v1alpha3 (with CompositePodGroup): the same PodGroups as v1beta1 when both are
     * served (one object, one key: the later event wins) */
    if (rc == 0)
        rc = start_informer(&d, "/apis/scheduling.k8s.io/v1alpha3/podgroups", NULL, on_pg_native_a3,
                            eb);
    /* DRA devices: GPUs of nodes that run a DRA driver instead of the device plugin */
    if (rc == 0)
        rc = start_informer(&d, "/apis/resource.k8s.io/v1/resourceslices", NULL, on_slice, eb);
    if (rc == 0)
        rc = start_informer(&d, "/apis/resource.k8s.io/v1/resourceclaims", NULL, on_claim, eb);
    uv_timer_init(d.loop, &d.cycle_timer);
    d.cycle_timer.data = &d;
    uv_timer_init(d.loop, &d.stats_timer);
    d.stats_timer.data = &d;
    if (rc == 0 && (!d.metrics || start_metrics(&d) != 0))
        rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (rc == 0 && o->listen && *o->listen) {
        struct http_opts ho = {.listen = o->listen,
                               .write_token_file = o->token_file,
                               .read_token_file = o->read_token_file,
                               .limits = o->http};
        struct http_provider hp = {.ctx = &d,
                                   .store_path = o->db_path,
                                   .ready = http_ready,
                                   .metrics = d.metrics,
                                   .store_metrics = true,
                                   .leading = http_leading,
                                   .write = kdrv_http_write};
        rc = http_server_start(d.loop, &ho, &hp, &d.http, eb);
        if (rc == 0 && o->port_file)
            rc = http_server_write_port(d.http, o->port_file, eb);
        if (rc == 0)
            LOG_INFO(KDRV_MOD, "HTTP API listening: port=%d", http_server_port(d.http));
    }
    if (rc == 0 && o->follow_url && *o->follow_url && !d.leading) {
        rc = http_follow_start(d.loop, o->follow_url, o->follow_token_file, o->db_path,
                               o->follow_ms, &d.follow, eb);
        if (rc == 0)
            LOG_INFO(KDRV_MOD, "following the leader's store: url=%s every_ms=%u", o->follow_url,
                     o->follow_ms ? o->follow_ms : HTTP_FOLLOW_DEFAULT_MS);
    }
    if (rc == 0)
        uv_timer_start(&d.stats_timer, on_stats_timer, 1000, 1000);
    uv_signal_init(d.loop, &d.sigterm);
    uv_signal_init(d.loop, &d.sigint);
    d.sigterm.data = d.sigint.data = &d;
    if (rc == 0) {
        uv_signal_start(&d.sigterm, on_signal, SIGTERM);
        uv_signal_start(&d.sigint, on_signal, SIGINT);
        if (o->leader_elect) {
            struct kube_lease_opts lo = {.ns = o->lease_ns ? o->lease_ns : d.auth->namespace,
                                         .name = o->lease_name,
                                         .identity = o->identity};
            rc = kube_lease_new(d.client, &lo, on_lease, &d, &d.lease, eb);
        } else {
            d.leading = true;
            http_metric_set(d.m_leader, NULL, 1); /* the only replica: it schedules */
        }
    }
    if (rc == 0) {
        LOG_INFO(KDRV_MOD, "started: server=%s scheduler=%s policy=%s db=%s", d.auth->server,
                 o->scheduler, d.pol->name, o->db_path);
        kdrv_schedule_cycle(&d, o->cycle_ms);
        uv_run(d.loop, UV_RUN_DEFAULT);
        if (d.failed)
            rc = sched_fail(eb, SCHED_EIO, "%s", d.fatal);
    }
    /* teardown: every handle closed, the loop run until they are */
    for (uint32_t i = 0; i < d.n_inf; i++)
        kube_informer_free(d.inf[i]);
    kube_lease_free(d.lease);
    kube_client_free(d.client);
    config_watch_stop(d.cw);
    uv_close((uv_handle_t *)&d.cycle_timer, close_cb);
    uv_close((uv_handle_t *)&d.stats_timer, close_cb);
    if (d.http)
        http_server_stop(d.http);
    http_follow_stop(d.follow);
    uv_close((uv_handle_t *)&d.sigterm, close_cb);
    uv_close((uv_handle_t *)&d.sigint, close_cb);
    uv_run(d.loop, UV_RUN_DEFAULT);
    uv_loop_close(d.loop);
    for (uint32_t g = 0; g < d.n_binds; g++)
        kdrv_gang_binds_free(&d.binds[g]);
    free(d.binds);
    for (uint32_t h = 0; h < d.n_holds; h++)
        kdrv_khold_free(&d.holds[h]);
    free(d.holds);
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d.status, &i, &k, &v);) {
        struct kstatus *st = v;
        free(st->reason);
        free(st);
    }
    strmap_fini(&d.status);
    for (size_t i = 0; strmap_next(&d.jobs, &i, &k, &v);)
        kdrv_kjob_free(v);
    strmap_fini(&d.jobs);
    strmap_fini(&d.held);
    struct strmap *owned[] = {&d.bound_at, &d.node_down, &d.strikes};
    for (int m = 0; m < 3; m++) {
        for (size_t i = 0; strmap_next(owned[m], &i, &k, &v);)
            free(v);
        strmap_fini(owned[m]);
    }
    strmap_fini(&d.tearing);
    strmap_fini(&d.gave_up);
    store_close(d.db);
    kcache_free(d.cache);
    kube_auth_free(d.auth);
    arena_fini(&d.arena);
    http_metrics_free(d.metrics);
    return rc;
}
