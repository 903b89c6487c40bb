/* sched/kube/driver_ckpt.c: the checkpoint handshake of preemption in the Kubernetes driver
 * (docs/preemption.md "The checkpoint handshake").
 *
 * Owns: asking a victim to checkpoint (the annotations gangsched.io/checkpoint-requested and
 * gangsched.io/checkpoint-deadline on its own PodGroup, else on every member pod:
 * kdrv_ckpt_where; also the operator's `gangctl checkpoint` write), and at each cycle evicting
 * the victims that answered (gangsched.io/last-checkpoint after the request, on the PodGroup or
 * any member pod: cache.c reads the latest) or whose grace ended, marking the others as being
 * evicted for the core. The handshake's state (asked when, until when, by whom) is the
 * engine's (eng_job_ckpt_request, eng_job_ckpt_check); its deadline wakes the daemon through
 * eng_next_due. Each object's write is owed until the watch shows it on that object
 * (driver_status.c kdrv_owe_ckpt, kdrv_owe_ckpt_pod). At the first cycle as leader, a running
 * gang whose PodGroup (or, asked on its pods, one of its members) carries a request of its
 * current run with a deadline is in a handshake again (the annotations are the durable record;
 * members that do not show it yet are written again), and its preemptor (the store's
 * preemption row) holds the victim's nodes again.
 *
 * Must not touch: the decisions (the core chooses the victims), the store's rows (driver_record.c
 * records the preemption when it is decided; this file only reads them), the engine's other
 * state (but a resumed preemptor's hold).
 */
#include <stdio.h>
#include <string.h>

#include "sched/kube/driver_int.h"

cJSON *kdrv_ckpt_patch(int64_t asked_ms, int64_t until_ms)
{
    char t[40];
    cJSON *body = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "metadata"), "annotations");
    kobj_format_time(asked_ms, t, sizeof(t));
    cJSON_AddStringToObject(ann, KOBJ_ANNOT_CKPT_ASKED, t);
    if (until_ms > 0) {
        kobj_format_time(until_ms, t, sizeof(t));
        cJSON_AddStringToObject(ann, KOBJ_ANNOT_CKPT_UNTIL, t);
    }
    return body;
}

void kdrv_ckpt_pg_times(const struct kpg *pg, int64_t *asked_ms, int64_t *until_ms)
{
    const char *sa = kobj_pg_annotation(pg, KOBJ_ANNOT_CKPT_ASKED);
    const char *su = kobj_pg_annotation(pg, KOBJ_ANNOT_CKPT_UNTIL);
    if (!sa || kobj_time(sa, asked_ms) != 0)
        *asked_ms = 0;
    if (!su || kobj_time(su, until_ms) != 0)
        *until_ms = 0;
}

bool kdrv_ckpt_shown(int64_t shown_asked_ms, int64_t shown_until_ms, int64_t asked_ms,
                     int64_t until_ms)
{
    return shown_asked_ms > 0 &&
           (shown_asked_ms > asked_ms ||
            (shown_asked_ms == asked_ms && (until_ms == 0 || shown_until_ms == until_ms)));
}

bool kdrv_ckpt_settled(struct kdrv *d, const char *gang, int64_t shown_asked_ms,
                       int64_t shown_until_ms, int64_t asked_ms, int64_t until_ms)
{
    if (kdrv_ckpt_shown(shown_asked_ms, shown_until_ms, asked_ms, until_ms))
        return true; /* shown, or a later request replaced it */
    if (until_ms == 0)
        return false;
    if (kdrv_shrink_asks(d, gang, asked_ms, until_ms))
        return false; /* members asked before they leave alone (driver_shrink.c) */
    struct eng_job j = eng_job(d->eng, kdrv_gang_id(d, gang));
    return j.state != ENG_JOB_TEARING || j.ckpt_until_ms != until_ms || j.ckpt_asked_ms != asked_ms;
}

static int64_t grace_of(const struct kgang *kg, const struct config *cfg)
{
    return cfg && kg->gang.queue < cfg->n_queues
               ? cfg->queues[kg->gang.queue].preemption.checkpoint_grace_ms
               : 0;
}

enum kdrv_ckpt_where kdrv_ckpt_where(const struct kgang *kg)
{
    /* its own PodGroup of an API whose object is one gang (a 1.35 Workload holds several pod
     * groups, and a pod group's replicas are gangs of their own) */
    if (kg->pg && kg->pg->api != KPG_WORKLOAD_V1ALPHA1 && strcmp(kg->pg->key, kg->key) == 0)
        return KDRV_CKPT_PODGROUP;
    return kg->gang.n_pods > 0 ? KDRV_CKPT_PODS : KDRV_CKPT_NONE;
}

bool kdrv_ckpt_asks(const struct kgang *victim, const struct config *cfg)
{
    return grace_of(victim, cfg) > 0 && kdrv_ckpt_where(victim) != KDRV_CKPT_NONE;
}

void kdrv_ckpt_write(struct kdrv *d, const struct kgang *kg, int64_t asked_ms, int64_t until_ms)
{
    if (kdrv_ckpt_where(kg) == KDRV_CKPT_PODGROUP)
        kdrv_owe_ckpt(d, kg->pg, asked_ms, until_ms);
    else
        for (uint32_t m = 0; m < kg->gang.n_pods; m++)
            kdrv_owe_ckpt_pod(d, kg->key, kg->members[m], asked_ms, until_ms);
}

int64_t kdrv_ckpt_asked(struct kdrv *d, const struct kgang *kg)
{
    int64_t asked = 0, until, owed = kdrv_owed_ckpt_ms(d, kg);
    if (kg->pg)
        kdrv_ckpt_pg_times(kg->pg, &asked, &until);
    for (uint32_t m = 0; m < kg->gang.n_pods; m++)
        if (kg->members[m]->ckpt_asked_ms > asked)
            asked = kg->members[m]->ckpt_asked_ms;
    return owed > asked ? owed : asked;
}

/* The pods of this scheduler of the gang (kcache_each_gang_pod), bound and not ended. */
struct of_gang {
    struct strlist pods;
    int rc;
};

static void of_gang(void *ctx, const struct kpod *p)
{
    struct of_gang *f = ctx;
    if (p->ours && p->node && p->phase != KPOD_SUCCEEDED && p->phase != KPOD_FAILED && f->rc == 0)
        f->rc = kdrv_strlist_add(&f->pods, p->key);
}

int kdrv_ckpt_operator(struct kdrv *d, const char *key, struct sched_errbuf *eb)
{
    const struct kpg *pg = kcache_pg(d->cache, key);
    int64_t now = kdrv_now(d);
    if (pg && pg->api != KPG_WORKLOAD_V1ALPHA1) { /* kdrv_ckpt_where's rule */
        kdrv_owe_ckpt(d, pg, now, 0);
        return 0;
    }
    struct of_gang f = {0};
    kcache_each_gang_pod(d->cache, key, of_gang, &f);
    for (uint32_t i = 0; f.rc == 0 && i < f.pods.n; i++) {
        const struct kpod *p = kcache_pod(d->cache, f.pods.v[i]);
        if (p)
            kdrv_owe_ckpt_pod(d, key, p, now, 0);
    }
    uint32_t n = f.pods.n;
    kdrv_strlist_free(&f.pods);
    if (f.rc)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (n == 0)
        return sched_fail(eb, SCHED_ENOENT, "no podgroup %s, nor a running pod of that gang", key);
    return 0;
}

/* The victim leaves now: its job row pending, uncharged (kdrv_record_evicted). */
static void record_left(struct kdrv *d, const struct kgang *kg, const struct config *cfg,
                        int64_t now)
{
    const char *queue =
        cfg && kg->gang.queue < cfg->n_queues ? cfg->queues[kg->gang.queue].name : NULL;
    kdrv_record_apart(d, kg->key, queue, -1, NULL, NULL, 0, now);
}

bool kdrv_ckpt_request(struct kdrv *d, const struct kgang *victim, const struct kgang *by,
                       const struct sched_eviction *ev, const struct config *cfg, int64_t now)
{
    if (!kdrv_ckpt_asks(victim, cfg))
        return false;
    int64_t grace = grace_of(victim, cfg);
    uint32_t g = kdrv_gang_id(d, victim->key);
    uint32_t pre = kdrv_gang_id(d, by->key);
    if (g == ENG_NONE || eng_job_ckpt_request(d->eng, g, pre, now, now + grace) != 0) {
        LOG_ERROR(KDRV_MOD, "out of memory asking %s to checkpoint: evicted at once", victim->key);
        record_left(d, victim, cfg, now); /* the cycle's record left it running, to be asked */
        return false;
    }
    eng_hold_extend(d->eng, pre, now + grace); /* no second victim while this one is asked */
    kdrv_ckpt_write(d, victim, now, now + grace);
    char msg[1000], why[400];
    snprintf(msg, sizeof(msg),
             "%s: asked to checkpoint (%s on its %s; set %s on it or on a pod to a "
             "time after the request); evicted when it does or in %lld s",
             sched_eviction_format(ev, by->key, why, sizeof(why)), KOBJ_ANNOT_CKPT_ASKED,
             kdrv_ckpt_where(victim) == KDRV_CKPT_PODS ? "pods" : "PodGroup", KOBJ_ANNOT_LAST_CKPT,
             (long long)(grace / 1000));
    LOG_INFO(KDRV_MOD, "checkpoint requested: gang=%s preemptor=%s kind=%s grace_ms=%lld",
             victim->key, by->key, sched_preempt_kind_name(ev->kind), (long long)grace);
    kdrv_gang_status_rel(d, victim->key, victim->pg, "Running", "Normal", "CheckpointRequested",
                         msg, true, by->pg);
    return true;
}

/* The preemptor of victim kg's request at asked_ms: the store's preemption row of its current
 * run made at or before the request (rows oldest first: the newest such one wins). */
struct find_pre {
    const char *victim;
    int64_t from_ms, asked_ms;
    char key[KOBJ_KEY_MAX];
    int64_t members; /* that row's: members taken alone (driver_shrink.c), 0 the whole gang */
};

static int find_pre(void *ctx, const struct store_preemption *p)
{
    struct find_pre *f = ctx;
    if (strcmp(p->victim, f->victim) == 0 && p->ts_ms >= f->from_ms && p->ts_ms <= f->asked_ms) {
        snprintf(f->key, sizeof(f->key), "%s", p->preemptor);
        f->members = p->members;
    }
    return 0;
}

/* The preemptor pre's hold, as kdrv_ckpt_request left it: the victim's nodes (added to those of
 * its other victims resumed) until the deadline plus the hold (eng_hold_extend). What its plan
 * counted on besides the victims resumed is not held again (free GPUs at the decision, victims
 * gone before the restart, members asked to leave alone, whose requests are not resumed): the
 * hold is marked replan, it waits only while the gangs on its nodes leave, then the preemptor
 * plans for what is missing (preempt.c, hold_leaving). */
static void restore_hold(struct kdrv *d, uint32_t pre, const struct sched_running *run,
                         int64_t until)
{
    const struct eng_hold *old = NULL;
    for (uint32_t h = 0; h < eng_hold_count(d->eng, ENG_HOLDS) && !old; h++) {
        const struct eng_hold *eh = eng_hold_at(d->eng, ENG_HOLDS, h);
        if (eh->gang == pre && eh->operator_id == 0)
            old = eh;
    }
    uint32_t n = old ? old->n_nodes : 0;
    uint32_t *nodes = arena_alloc(&d->arena, ((size_t)n + run->gang->n_pods + 1) * sizeof(*nodes));
    if (!nodes)
        return;
    if (n)
        memcpy(nodes, old->nodes, n * sizeof(*nodes));
    for (uint32_t x = 0; x < run->gang->n_pods; x++) {
        uint32_t e = d->ids->node[run->pods[x].node], k = 0;
        while (k < n && nodes[k] != e)
            k++;
        if (k == n)
            nodes[n++] = e;
    }
    if (eng_hold_put(d->eng, ENG_HOLDS, pre, nodes, n, until) != 0) {
        LOG_ERROR(KDRV_MOD, "out of memory restoring the hold of a preemptor");
        return;
    }
    eng_hold_extend(d->eng, pre, until);
    eng_hold_replan(d->eng, pre);
}

/* The request with a deadline after it that kg shows where kdrv_ckpt_where writes it: on its
 * PodGroup; asked on its pods, the latest one a member shows (the daemon may have stopped
 * before every member's write was done). false: none. */
static bool shown_request(const struct kgang *kg, int64_t *asked, int64_t *until)
{
    *asked = *until = 0;
    if (kdrv_ckpt_where(kg) == KDRV_CKPT_PODGROUP) {
        kdrv_ckpt_pg_times(kg->pg, asked, until);
        return *asked > 0 && *until > *asked;
    }
    for (uint32_t m = 0; m < kg->gang.n_pods; m++) {
        const struct kpod *p = kg->members[m];
        if (p->ckpt_asked_ms > *asked && p->ckpt_until_ms > p->ckpt_asked_ms) {
            *asked = p->ckpt_asked_ms;
            *until = p->ckpt_until_ms;
        }
    }
    return *asked > 0;
}

/* After a restart (the first cycle as leader): a running gang that shows a request
 * (shown_request) made during its current run (after its binding, kgang.bound_ms: not its
 * pods' startTime, which a busy kubelet sets seconds after a preemption may have asked; the
 * binding's time is in whole seconds, so a request of an earlier run made in the second of
 * this run's binding would count: its eviction and a new binding within that second), not
 * being evicted, is in a handshake again
 * (until that deadline, at most its queue's checkpointGrace after the request: an annotation
 * edited by hand gives no longer grace; a queue without a grace now: none); asked on its pods,
 * the members that do not show that request get it again. Its preemptor, found in the store's
 * preemption rows, holds the victim's nodes again. Later cycles read no annotation: the
 * handshakes are the engine's. */
static void adopt(struct kdrv *d, uint32_t g, const struct kgang *kg,
                  const struct sched_running *run, const struct config *cfg)
{
    int64_t asked, until;
    int64_t grace = grace_of(kg, cfg);
    if (grace <= 0 || !shown_request(kg, &asked, &until) || asked < kg->bound_ms)
        return;
    if (until - asked > grace)
        until = asked + grace;
    struct find_pre f = {.victim = kg->key, .from_ms = kg->bound_ms, .asked_ms = asked};
    struct sched_errbuf eb;
    if (d->db && store_preemption_list_of(d->db, kg->key, find_pre, &f, &eb) != 0)
        LOG_WARN(KDRV_MOD, "the preemptor of %s's checkpoint request is not known: %s", kg->key,
                 eb.msg);
    if (f.members > 0) { /* members asked before they left alone: not resumed (driver_shrink.c) */
        LOG_INFO(KDRV_MOD,
                 "checkpoint request of %u members of %s not resumed: the gang runs on whole "
                 "and its preemptor %s plans again",
                 (unsigned)f.members, kg->key, f.key);
        return;
    }
    uint32_t pre = f.key[0] ? kdrv_gang_id(d, f.key) : ENG_NONE;
    if (eng_job_evict(d->eng, g) != 0 || eng_job_ckpt_request(d->eng, g, pre, asked, until)) {
        LOG_ERROR(KDRV_MOD, "out of memory resuming the checkpoint handshake of %s", kg->key);
        return;
    }
    if (pre != ENG_NONE)
        restore_hold(d, pre, run, until);
    if (kdrv_ckpt_where(kg) == KDRV_CKPT_PODS)
        kdrv_ckpt_write(d, kg, asked, until); /* only to the members that do not show it */
    char a[40], u[40];
    kobj_format_time(asked, a, sizeof(a));
    kobj_format_time(until, u, sizeof(u));
    LOG_INFO(KDRV_MOD,
             "checkpoint handshake resumed: gang=%s on=%s requested=%s deadline=%s "
             "preemptor=%s",
             kg->key, kdrv_ckpt_where(kg) == KDRV_CKPT_PODS ? "pods" : "podgroup", a, u,
             f.key[0] ? f.key : "(not known)");
}

/* Handshake over: every member through the Eviction API, status and metrics as an immediate
 * preemption has them; its job row pending again, its charge released (it ran until now). */
static void evict_now(struct kdrv *d, uint32_t g, const struct kgang *kg, bool answered,
                      const struct config *cfg, int64_t now)
{
    record_left(d, kg, cfg, now);
    const char *by = eng_names_name(d->gang_ids, eng_job(d->eng, g).ckpt_by);
    char msg[600];
    snprintf(msg, sizeof(msg), "%s%s%s",
             answered ? "preempted after a requested checkpoint"
                      : "preempted: no checkpoint within the grace",
             by ? " by " : "", by ? by : "");
    LOG_INFO(KDRV_MOD, "checkpoint handshake over: gang=%s outcome=%s", kg->key,
             answered ? "answered" : "timeout");
    kdrv_evict_gang(d, kg, msg);
    const char *outcome[] = {answered ? "answered" : "timeout"};
    http_metric_add_value(d->m_ckpt, outcome, 1);
    kdrv_gang_status_rel(d, kg->key, kg->pg, "Pending", "Warning", "Preempted", msg, true,
                         by ? kcache_pg(d->cache, by) : NULL);
}

void kdrv_ckpt_step(struct kdrv *d, struct kcache_build *kb, int64_t now)
{
    if (!d->ids)
        return;
    for (uint32_t i = 0; i < kb->n_running; i++) {
        struct sched_running *run = &kb->running[i];
        const struct kgang *kg = &kb->gangs[run->gang->id];
        uint32_t g = d->ids->gang[run->gang->id];
        if (g == ENG_NONE)
            continue;
        if (!d->ckpt_resumed && eng_job_state(d->eng, g) != ENG_JOB_TEARING && !run->evicting)
            adopt(d, g, kg, run, kb->snap.config);
        enum eng_ckpt v = eng_job_ckpt_check(d->eng, g, run->last_checkpoint_ms, now);
        if (v == ENG_CKPT_ANSWERED || v == ENG_CKPT_TIMEOUT)
            evict_now(d, g, kg, v == ENG_CKPT_ANSWERED, kb->snap.config, now);
        if (v != ENG_CKPT_NONE)
            run->evicting = true; /* the core picks it no more; its preemptor keeps its hold */
    }
    d->ckpt_resumed = true;
}
