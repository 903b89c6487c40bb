/* sched/kube/driver_life.c: gang lifecycle of the Kubernetes driver.
 *
 * Owns: deletes (once per pod, with its uid), preemption evictions (DisruptionTarget condition,
 * the Eviction API, the delete fallback), and the cycle's lifecycle step: node health given to
 * the engine, the engine's lifecycle rules on the facts sched/kube/lifecycle.h reads from the
 * cache, and their verdicts carried out (deletes, job rows, decisions, status). The rules,
 * job states, retry budget, strikes and quarantine are the engine's (sched/engine/).
 *
 * Must not touch: the binder's in-flight state, the ledger (except through kdrv_job_charge),
 * scheduling decisions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/kube/driver_int.h"

/* A victim gang's members, evicted once its PodGroup carries DisruptionTarget (the order
 * kube-scheduler keeps: the condition before the eviction). */
struct kvictim {
    struct kdrv *d;
    char **ns, **name;
    uint32_t n;
};

static void evict_pod(struct kdrv *d, const char *ns, const char *name);

static void on_disruption_target(void *ctx, const struct kube_resp *r)
{
    struct kvictim *v = ctx;
    if (r->status < 200 || r->status >= 300)
        LOG_WARN(KDRV_MOD, "DisruptionTarget not written (evicting anyway): status=%d pod=%s/%s",
                 r->status, v->n ? v->ns[0] : "", v->n ? v->name[0] : "");
    for (uint32_t i = 0; i < v->n; i++) {
        evict_pod(v->d, v->ns[i], v->name[i]);
        free(v->ns[i]);
        free(v->name[i]);
    }
    free(v->ns);
    free(v->name);
    free(v);
}

/* Evicts a victim gang's members; a native PodGroup gets DisruptionTarget=True reason
 * PreemptionByScheduler first. */
void kdrv_evict_gang(struct kdrv *d, const struct kgang *victim, const char *message)
{
    const struct kpg *pg = victim->pg;
    cJSON *body = pg && knative_sched_condition(pg->api)
                      ? knative_condition_patch(pg, "DisruptionTarget", true,
                                                "PreemptionByScheduler", message, kdrv_now(d))
                      : NULL;
    struct kvictim *v = body ? calloc(1, sizeof(*v)) : NULL;
    if (v) {
        v->d = d;
        v->ns = calloc(victim->gang.n_pods + 1, sizeof(char *));
        v->name = calloc(victim->gang.n_pods + 1, sizeof(char *));
        for (uint32_t m = 0; v->ns && v->name && m < victim->gang.n_pods; m++) {
            v->ns[v->n] = strdup(victim->members[m]->ns);
            v->name[v->n] = strdup(victim->members[m]->name);
            if (v->ns[v->n] && v->name[v->n])
                v->n++;
        }
    }
    if (!v || !v->ns || !v->name || v->n != victim->gang.n_pods) {
        if (v) {
            for (uint32_t i = 0; i < v->n; i++) {
                free(v->ns[i]);
                free(v->name[i]);
            }
            free(v->ns);
            free(v->name);
            free(v);
        }
        cJSON_Delete(body);
        for (uint32_t m = 0; m < victim->gang.n_pods; m++)
            evict_pod(d, victim->members[m]->ns, victim->members[m]->name);
        return;
    }
    char path[700];
    knative_path(pg, "status", path, sizeof(path));
    kdrv_send_or_fail(d, KUBE_PATCH_STRATEGIC, path, body, on_disruption_target, v);
}

void kdrv_evict_members(struct kdrv *d, const struct kgang *victim, const uint32_t *pods,
                        uint32_t n, const char *message)
{
    for (uint32_t i = 0; i < n; i++) {
        if (pods[i] >= victim->gang.n_pods)
            continue;
        const struct kpod *p = victim->members[pods[i]];
        LOG_INFO(KDRV_MOD, "evicting member: gang=%s pod=%s/%s (%s)", victim->key, p->ns, p->name,
                 message);
        evict_pod(d, p->ns, p->name);
    }
}

/* ---- deleting pods (rollback, preemption) ---------------------------------------------------- */

/* A delete in flight: which pod (and uid) it was about. */
struct kdel {
    struct kdrv *d;
    char key[KOBJ_KEY_MAX];
    char uid[128];
};

static void on_deleted(void *ctx, const struct kube_resp *r)
{
    struct kdel *x = ctx;
    /* 404: gone already; 409: the uid precondition failed, so the pod of that uid is gone and
     * another took its name (a StatefulSet's replacement is not ours to delete) */
    if ((r->status < 200 || r->status >= 300) && r->status != 404 && r->status != 409) {
        LOG_WARN(KDRV_MOD, "delete failed: pod=%s status=%d error=%s (sent again if still needed)",
                 x->key, r->status, r->error ? r->error : "");
        kcache_delete_failed(x->d->cache, x->key, x->uid);
        kdrv_cycle_at(x->d, kdrv_now(x->d) + 1000); /* sent again then if still needed */
    }
    free(x);
}

/* Deletes a pod once, with its uid as a precondition; from the moment it is sent the pod counts
 * as deleting (kcache_delete_sent). */
void kdrv_delete_pod(struct kdrv *d, const char *ns, const char *name, const char *why)
{
    char path[600];
    struct kdel *x = calloc(1, sizeof(*x));
    if (!x || kobj_key(ns, name, x->key, sizeof(x->key)) != 0) {
        free(x);
        return;
    }
    const struct kpod *p = kcache_pod(d->cache, x->key);
    if (!p || !kcache_delete_sent(d->cache, x->key)) {
        free(x); /* gone, or deleted once already */
        return;
    }
    x->d = d;
    snprintf(x->uid, sizeof(x->uid), "%s", p->uid ? p->uid : "");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "kind", "DeleteOptions");
    cJSON_AddStringToObject(body, "apiVersion", "v1");
    cJSON_AddStringToObject(body, "propagationPolicy", "Background");
    if (p->uid)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(body, "preconditions"), "uid", p->uid);
    LOG_INFO(KDRV_MOD, "deleting pod: pod=%s/%s why=%s", ns, name, why);
    kdrv_send_or_fail(d, KUBE_DELETE, path, body, on_deleted, x);
}

/* An eviction in flight: the pod, for the delete fallback. */
struct kevict {
    struct kdrv *d;
    char ns[254], name[254];
};

/* An eviction that failed, sent again at a later cycle while its pod (this uid) is there and not
 * deleted (d->evict_retry): at_ms when (INT64_MAX: in flight), after 1 s doubling to 30 s. */
struct kretry {
    char uid[128];
    int64_t at_ms;
    uint32_t tries;
};

#define KDRV_EVICT_RETRY_MAX_MS 30000

static void evict_pod(struct kdrv *d, const char *ns, const char *name);

/* The eviction of pod ns/name failed: sent again later (kdrv_evictions_retry). */
static void evict_later(struct kdrv *d, const char *ns, const char *name)
{
    char key[KOBJ_KEY_MAX];
    const struct kpod *p =
        kobj_key(ns, name, key, sizeof(key)) == 0 ? kcache_pod(d->cache, key) : NULL;
    if (!p)
        return; /* gone: nothing to evict */
    struct kretry *r = strmap_get(&d->evict_retry, key);
    if (!r && (!(r = calloc(1, sizeof(*r))) || strmap_put(&d->evict_retry, key, r, NULL) != 0)) {
        free(r);
        LOG_ERROR(KDRV_MOD, "out of memory keeping the eviction of %s to send again", key);
        return;
    }
    snprintf(r->uid, sizeof(r->uid), "%s", p->uid ? p->uid : "");
    int64_t wait = r->tries < 5 ? (int64_t)1000 << r->tries : KDRV_EVICT_RETRY_MAX_MS;
    r->tries++;
    r->at_ms = kdrv_now(d) + (wait < KDRV_EVICT_RETRY_MAX_MS ? wait : KDRV_EVICT_RETRY_MAX_MS);
    kdrv_cycle_at(d, r->at_ms); /* that cycle, even if nothing changes */
}

void kdrv_evictions_retry(struct kdrv *d, int64_t now)
{
    struct strlist done = {0};
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->evict_retry, &i, &k, &v);) {
        struct kretry *r = v;
        const struct kpod *p = kcache_pod(d->cache, k);
        if (!p || p->del_ts || strcmp(p->uid ? p->uid : "", r->uid) != 0) {
            if (kdrv_strlist_add(&done, k) != 0)
                break; /* out of memory: at a later cycle */
        } else if (r->at_ms <= now) {
            r->at_ms = INT64_MAX;
            LOG_INFO(KDRV_MOD, "eviction sent again: pod=%s/%s attempt=%u", p->ns, p->name,
                     r->tries + 1);
            evict_pod(d, p->ns, p->name);
        } else if (r->at_ms != INT64_MAX) {
            kdrv_cycle_at(d, r->at_ms);
        }
    }
    for (uint32_t i = 0; i < done.n; i++)
        free(strmap_del(&d->evict_retry, done.v[i]));
    kdrv_strlist_free(&done);
}

void kdrv_evictions_fini(struct kdrv *d)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->evict_retry, &i, &k, &v);)
        free(v);
    strmap_fini(&d->evict_retry);
}

static void on_evicted(void *ctx, const struct kube_resp *r)
{
    struct kevict *ev = ctx;
    struct kdrv *d = ev->d;
    char key[KOBJ_KEY_MAX];
    if ((r->status >= 200 && r->status < 300) || r->status == 404) { /* done, or gone already */
        if (kobj_key(ev->ns, ev->name, key, sizeof(key)) == 0)
            free(strmap_del(&d->evict_retry, key));
        free(ev);
        return;
    }
    if (r->status == 429 && d->o->evict_fallback_delete) {
        LOG_WARN(KDRV_MOD, "eviction still blocked after retries, deleting: pod=%s/%s error=%s",
                 ev->ns, ev->name, r->error ? r->error : "");
        kdrv_delete_pod(d, ev->ns, ev->name, "eviction blocked by a disruption budget");
    } else {
        LOG_WARN(KDRV_MOD,
                 "eviction failed: pod=%s/%s status=%d error=%s (sent again at a later "
                 "cycle)",
                 ev->ns, ev->name, r->status, r->error ? r->error : "");
        evict_later(d, ev->ns, ev->name);
    }
    free(ev);
}

/* Eviction API (PodDisruptionBudgets respected; the client retries 429 with its Retry-After).
 * When it stays blocked and --evict-fallback-delete is set, the pod is deleted (its termination
 * grace period is honoured by the kubelet). */
static void evict_pod(struct kdrv *d, const char *ns, const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", ns, name);
    cJSON *body = kdrv_new_object("policy/v1", "Eviction", ns, name, NULL);
    struct kevict *ev = calloc(1, sizeof(*ev));
    if (!ev) {
        cJSON_Delete(body);
        LOG_ERROR(KDRV_MOD, "out of memory evicting %s/%s", ns, name);
        return;
    }
    ev->d = d;
    snprintf(ev->ns, sizeof(ev->ns), "%s", ns);
    snprintf(ev->name, sizeof(ev->name), "%s", name);
    kdrv_send_or_fail(d, KUBE_POST, path, body, on_evicted, ev); /* failed: again a second later */
}

/* ---- gang lifecycle: start watchdog, broken gangs, node health --------------------------------
 */

/* Node health into the engine (NotReady since) and the snapshot (quarantined after failed
 * starts, the engine's strikes), the quarantines that ended logged. */
static void node_health(struct kdrv *d, struct kcache_build *kb, int64_t now)
{
    const struct cluster *cl = kb->snap.cluster;
    uint32_t quarantined = 0;
    for (uint32_t i = 0; i < cl->n_nodes; i++) {
        uint32_t n = d->ids->node[i];
        if (eng_node_ready(d->eng, n, cl->nodes[i].ready, now) != 0)
            LOG_ERROR(KDRV_MOD, "out of memory recording the health of node %s", cl->nodes[i].name);
        if (eng_quarantined(d->eng, n, now)) {
            kb->state[i].quarantined = true;
            quarantined++;
        }
    }
    eng_tick(d->eng, now, &d->fx);
    kdrv_node_effects(d);
    http_metric_set(d->m_quarantined, NULL, quarantined);
}

int kdrv_job_fresh(struct kdrv *d, const char *key, int64_t submit_ms)
{
    struct store_job old;
    struct sched_errbuf eb = {0};
    int rc = d->db ? store_job_get(d->db, key, &old, &eb) : SCHED_ENOENT; /* tests: no store */
    if (rc == SCHED_ENOENT)
        return 0;
    bool counts = rc == 0 && (old.restarts != 0 || old.preemptions != 0 ||
                              (submit_ms >= 0 && old.submit_ms != submit_ms));
    /* the backfill promises of the old object's wait or run (driver_promise.c) are not its
     * (old's strings are read before: the store lends them until its next call) */
    if (rc == 0 && !counts) {
        if (store_job_promises_clear(d->db, key, &eb) != 0)
            LOG_WARN(KDRV_MOD, "backfill promises of gang %s not dropped: %s", key, eb.msg);
        return 0;
    }
    char *queue = rc == 0 && old.queue ? strdup(old.queue) : NULL; /* borrowed until the next */
    char *flavor = rc == 0 && old.flavor ? strdup(old.flavor) : NULL;
    if (rc == 0 && ((old.queue && !queue) || (old.flavor && !flavor)))
        rc = sched_fail(&eb, SCHED_ENOMEM, "out of memory");
    if (rc == 0) {
        struct store_job j = old;
        j.queue = queue;
        j.flavor = flavor;
        j.restarts = j.preemptions = 0;
        if (submit_ms >= 0)
            j.submit_ms = submit_ms;
        rc = store_job_upsert(d->db, &j, &eb);
    }
    if (rc == 0) /* nor the old object's runs */
        rc = store_job_ran_put(d->db, key, 0, &eb);
    if (rc == 0)
        rc = store_job_promises_clear(d->db, key, &eb);
    free(queue);
    free(flavor);
    if (rc)
        LOG_WARN(KDRV_MOD, "job row of gang %s not started afresh (it keeps its counts): %s", key,
                 eb.msg);
    return rc;
}

/* The budget the store kept (across restarts and leaders) given to the engine, which counts
 * from it; old (may be NULL): the gang's job row. */
static int restore_restarts(struct kdrv *d, uint32_t g, const struct store_job *old)
{
    struct eng_job j = eng_job(d->eng, g);
    if (!old || old->restarts <= j.restarts)
        return 0;
    return eng_job_restore(d->eng, g, (enum eng_state)j.state, old->restarts);
}

/* An inference gang loses only its lost members, a CompositePodGroup tree the live members of
 * its groups below their own minimum; the others go on. */
static void replace_lost(struct kdrv *d, const struct kgang *kg, const struct eng_life_action *act,
                         const char *reason)
{
    for (uint32_t i = 0; i < act->n_lost; i++) {
        const struct kpod *p = act->lost[i] < kg->gang.n_pods ? kg->members[act->lost[i]] : NULL;
        if (p)
            kdrv_delete_pod(d, p->ns, p->name, reason);
    }
    char msg[1000];
    if (kg->part_short) /* a tree's group below its own minimum: the message says it all */
        snprintf(msg, sizeof(msg), "%s", act->message);
    else
        snprintf(msg, sizeof(msg), "%s: %u lost replica(s) replaced, the others go on",
                 act->message, act->n_lost);
    kdrv_gang_status(d, kg->key, kg->pg, "Running", "Warning", reason, msg, true);
}

/* Carries out one action of the engine's rules: the engine's verdict first (eng_life_apply:
 * teardown, retry budget, strike, give up), then the deletes, the job row, the decision and the
 * status, then the node effects (a quarantine's Event). Inside a store transaction. */
static int teardown(struct kdrv *d, const struct klife *lf, const struct eng_life_action *act,
                    int64_t now, struct sched_errbuf *eb)
{
    const struct kgang *kg = klife_gang(lf, act->gang);
    if (!kg)
        return 0;
    const char *reason = eng_reason_name(act->reason);
    const char *lbl[] = {reason};
    http_metric_add_value(d->m_teardowns, lbl, 1);
    LOG_WARN(KDRV_MOD, "gang broken: gang=%s reason=%s whole=%d why=%s", kg->key, reason,
             act->whole, act->message);
    struct store_job old;
    bool have_old = store_job_get(d->db, kg->key, &old, NULL) == 0;
    int rc = restore_restarts(d, act->gang, have_old ? &old : NULL);
    eng_effects_clear(&d->fx);
    if (rc == 0)
        rc = eng_life_apply(d->eng, act, now, &d->fx);
    if (rc)
        return sched_fail(eb, rc, "out of memory");
    if (!act->whole) {
        replace_lost(d, kg, act, reason);
        kdrv_node_effects(d);
        return 0;
    }
    bool exhausted = false;
    uint32_t restarts = 0;
    for (uint32_t i = 0; i < d->fx.n; i++) {
        if (d->fx.v[i].kind == ENG_FX_TEARDOWN)
            restarts = d->fx.v[i].restarts;
        exhausted = exhausted || d->fx.v[i].kind == ENG_FX_GIVE_UP;
    }
    for (uint32_t m = 0; m < kg->gang.n_pods; m++)
        if (!kg->members[m]->deleting)
            kdrv_delete_pod(d, kg->members[m]->ns, kg->members[m]->name, reason);
    const struct config *cfg = config_watch_current(d->cw);
    struct store_job j = {.gang = kg->key,
                          .gang_id = -1,
                          .queue = cfg && kg->gang.queue < cfg->n_queues
                                       ? cfg->queues[kg->gang.queue].name
                                       : "unknown",
                          .gpus = kg->gang.gpus,
                          .state = exhausted ? STORE_JOB_FAILED : STORE_JOB_PENDING,
                          .submit_ms = have_old ? old.submit_ms : kg->gang.submit_ms,
                          .admit_ms = STORE_NO_TIME,
                          .start_ms = STORE_NO_TIME,
                          .finish_ms = exhausted ? now : STORE_NO_TIME,
                          .preemptions = have_old ? old.preemptions : 0,
                          .restarts = restarts};
    rc = kdrv_job_charge(d, kg->key, NULL, NULL, 0, -1, eb);
    if (rc == 0)
        rc = store_placement_release(d->db, kg->key, NULL, eb);
    if (rc == 0)
        rc = store_job_upsert(d->db, &j, eb);
    if (rc == 0 && have_old) /* a run that had started counts, as the simulator's does */
        rc = kdrv_run_ended(d, kg->key, &old, now, eb);
    char reason_text[1100];
    snprintf(reason_text, sizeof(reason_text), "%s: %s", reason, act->message);
    struct store_decision dec = {.cycle = d->cycle,
                                 .ts_ms = now,
                                 .gang = kg->key,
                                 .why = SCHED_WHY_RESOURCES,
                                 .reason = reason_text};
    if (rc == 0)
        rc = store_decision_add(d->db, &dec, eb);
    kdrv_forget_logged(d, kg->key);
    if (rc)
        return rc;
    char msg[1200];
    if (exhausted) {
        snprintf(msg, sizeof(msg),
                 "failed %u times, more than maxRestarts %u (last: %s: %s); "
                 "'gangctl explain %s' lists every failure",
                 restarts, act->max_restarts, reason, act->message, kg->key);
        kdrv_gang_status(d, kg->key, kg->pg, "Failed", "Warning", "RetryBudgetExhausted", msg,
                         true);
    } else {
        snprintf(msg, sizeof(msg),
                 "%s; every member is deleted and the gang is scheduled "
                 "again with its place in line (restart %u of %u allowed)",
                 act->message, restarts, act->max_restarts);
        kdrv_gang_status(d, kg->key, kg->pg, "Pending", "Warning", reason, msg, true);
    }
    kdrv_node_effects(d);
    return 0;
}

/* Once per change of state: warns when the nodes have none of the configured accelerator, naming
 * the extended resources they do have (a device.resource typo, or the wrong device plugin). */
void kdrv_warn_no_device(struct kdrv *d, const struct cluster *c)
{
    char msg[512];
    bool missing = device_missing(c, msg, sizeof(msg));
    if (missing && !d->warned_no_device)
        LOG_WARN(KDRV_MOD, "%s", msg);
    d->warned_no_device = missing;
}

/* t + step for a time whose 0 means none and INT64_MAX never (both kept, a time kept > 0). */
static int64_t shift_ms(int64_t t, int64_t step)
{
    if (t <= 0 || t == INT64_MAX)
        return t;
    return t + step > 0 ? t + step : 1;
}

/* Every deadline of the driver and its engine that is a duration from an event of this run
 * moves by a wall-clock step (see kdrv_clock_check). */
static void clock_stepped(struct kdrv *d, int64_t step)
{
    eng_clock_stepped(d->eng, step);
    eng_fair_clock_stepped(d->fair, step);
    d->due_ms = shift_ms(d->due_ms, step);     /* the next cycle's timers */
    d->later_ms = shift_ms(d->later_ms, step); /* a status held back, a retry owed */
    d->gang_swept_ms = shift_ms(d->gang_swept_ms, step);
    d->fair_written_ms = shift_ms(d->fair_written_ms, step);
    for (uint32_t i = 0; i < d->cap_gang_seen; i++) /* not restored_submit_ms: the API's */
        d->gang_seen[i].seen_ms = shift_ms(d->gang_seen[i].seen_ms, step);
    kdrv_status_clock_stepped(d, step);
    d->promises_stepped = true; /* the store's copy of reserve_first_ms, probation_until_ms */
    d->est_gen++; /* the expected ends kept were valid until a time of the old clock */
}

int64_t kdrv_clock_check(struct kdrv *d)
{
    int64_t now = kdrv_now_ms(), mono = kdrv_mono_ms(); /* read together */
    int64_t step = d->clock_mono ? eng_clock_step(now - d->clock_wall, mono - d->clock_mono) : 0;
    if (step) {
        LOG_WARN(KDRV_MOD,
                 "the wall clock stepped by %+lld ms in %lld ms: the deadlines under way (start "
                 "timeouts, NotReady graces, backoffs, quarantines, holds, promises, status "
                 "retries) are moved by it",
                 (long long)step, (long long)(mono - d->clock_mono));
        clock_stepped(d, step);
    }
    d->clock_wall = now;
    d->clock_mono = mono;
    return step;
}

int64_t kdrv_now(struct kdrv *d)
{
    if (d->cycle_now)
        return d->cycle_now;
    kdrv_clock_check(d);
    return d->clock_wall;
}

/* The lifecycle step of a cycle: node health into the snapshot, broken gangs torn down, gangs
 * that gave up kept out of the queues. */
int kdrv_lifecycle_step(struct kdrv *d, struct kcache_build *kb, const struct config *cfg,
                        int64_t now, struct sched_errbuf *eb)
{
    if (kdrv_ids_build(d, kb, now) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    const struct kids *ids = d->ids;
    /* teardowns are over once none of the gang's members is bound any more (eng_job_gone: back
     * in line at once; FAILED when it gave up); not a victim in its checkpoint grace, which has
     * not been evicted: if it ends, it finished (sync_jobs, driver_record.c) */
    uint32_t bound = eng_job_bound_id(d->eng);
    eng_effects_clear(&d->fx);
    for (uint32_t g = 0; g < bound; g++) {
        if (eng_job_state(d->eng, g) != ENG_JOB_TEARING || kdrv_job_in_grace(eng_job(d->eng, g)))
            continue; /* a victim asked to checkpoint runs: one that ends ends as a run does */
        uint32_t ix = g < ids->n_core_gang ? ids->core_gang[g] : ENG_NONE;
        bool bound_left = ix < kb->n_gangs && (ix >= kb->n_pending || kb->gangs[ix].run);
        if (!bound_left && eng_job_gone(d->eng, g, now, &d->fx) != 0)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    eng_effects_clear(&d->fx); /* REQUEUE: the gang's pods are in its queue again */
    kdrv_gangs_sweep(d, now);
    node_health(d, kb, now);
    struct klife lf;
    struct eng_life_action *acts;
    uint32_t n;
    int rc = klife_check(d->eng, kb, cfg, d->gang_ids, d->node_ids, now, &d->arena, &lf, &acts, &n);
    if (rc)
        return sched_fail(eb, rc, "out of memory");
    if (n > 0) {
        rc = store_begin(d->db, eb);
        for (uint32_t i = 0; rc == 0 && i < n; i++)
            rc = teardown(d, &lf, &acts[i], now, eb);
        if (rc == 0)
            rc = store_commit(d->db, eb);
        if (rc) {
            store_rollback(d->db);
            return rc;
        }
    }
    /* a gang torn down (evicted whole, its start rolled back) whose pods are not gone yet is
     * leaving, whether or not the API shows them deleted yet (evictions in flight): no victim
     * again, and its preemptor waits for it (preempt.c, hold_leaving) */
    for (uint32_t i = 0; i < kb->n_running; i++) {
        uint32_t g = ids->gang[kb->running[i].gang->id];
        if (g != ENG_NONE && eng_job_state(d->eng, g) == ENG_JOB_TEARING)
            kb->running[i].evicting = true;
    }
    kdrv_views_schedulable(d, kb, now, NULL);
    return 0;
}

/* A decision row for the new members of a gang being torn down: without it the newest row of
 * its job (pending again) would still say "placed" while they wait. Once per reason (the store
 * keeps one row per change). */
static void record_torn_down(struct kdrv *d, const struct kgang *kg, int64_t now)
{
    struct store_decision dec = {
        .cycle = d->cycle,
        .ts_ms = now,
        .gang = kg->key,
        .why = STORE_WHY_WAITING,
        .reason = "waiting: the gang is being torn down (evicted, or its start rolled back); "
                  "its pending members start with its next run (WaitingForTeardown)"};
    struct sched_errbuf eb;
    if (d->leading && d->db && store_decision_add(d->db, &dec, &eb) != 0)
        LOG_WARN(KDRV_MOD, "cannot record waiting gang %s: %s", kg->key, eb.msg);
}

void kdrv_views_schedulable(struct kdrv *d, struct kcache_build *kb, int64_t now, const char *since)
{
    const struct kids *ids = d->ids;
    for (uint32_t q = 0; q < kb->snap.n_queues; q++) {
        struct sched_queue_view *v = &kb->views[q];
        uint32_t keep = 0;
        for (uint32_t i = 0; i < v->n_pending; i++) {
            const struct kgang *kg = &kb->gangs[v->pending[i]->id];
            uint32_t g = ids->gang[v->pending[i]->id];
            enum eng_state st = eng_job_state(d->eng, g);
            if (eng_job_schedulable(d->eng, g)) {
                ((const struct gang **)v->pending)[keep++] = v->pending[i];
            } else if (st == ENG_JOB_FAILED) {
                kdrv_gang_status(d, kg->key, kg->pg, "Failed", "Warning", "RetryBudgetExhausted",
                                 "the gang used up its retry budget; delete and recreate it "
                                 "to try again",
                                 false);
            } else if (st == ENG_JOB_TEARING && kg->run) {
                record_torn_down(d, kg, now);
                if (since)
                    LOG_INFO(KDRV_MOD, "new members not joined: gang=%s (%s)", kg->key, since);
            }
        }
        v->n_pending = keep;
    }
}
