/* sched/kube/driver_ckpt.c: the checkpoint handshake of preemption in the Kubernetes driver
 * (docs/preemption.md "The checkpoint handshake").
 *
 * Owns: asking a victim to checkpoint (the PodGroup annotations gangsched.io/checkpoint-requested
 * and gangsched.io/checkpoint-deadline, also the operator's `gangctl checkpoint` write), and at
 * each cycle evicting the victims that answered (gangsched.io/last-checkpoint after the request)
 * or whose grace ended, marking the others as being evicted for the core. The handshake's state
 * (asked when, until when, by whom) is the engine's (eng_job_ckpt_request, eng_job_ckpt_check);
 * its deadline wakes the daemon through eng_next_due. The annotations' write is owed until the
 * watch shows it (driver_status.c kdrv_owe_ckpt). At the first cycle as leader, a running gang
 * whose PodGroup carries a request of its current run with a deadline is in a handshake again
 * (the annotations are the durable record), and its preemptor (the store's preemption row)
 * holds the victim's nodes again.
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
    cJSON_AddStringToObject(ann, KDRV_ANNOT_CKPT_ASKED, t);
    if (until_ms > 0) {
        kobj_format_time(until_ms, t, sizeof(t));
        cJSON_AddStringToObject(ann, KDRV_ANNOT_CKPT_UNTIL, t);
    }
    return body;
}

bool kdrv_ckpt_settled(struct kdrv *d, const struct kpg *pg, int64_t asked_ms, int64_t until_ms)
{
    int64_t a, u;
    const char *sa = kobj_pg_annotation(pg, KDRV_ANNOT_CKPT_ASKED);
    const char *su = kobj_pg_annotation(pg, KDRV_ANNOT_CKPT_UNTIL);
    if (sa && kobj_time(sa, &a) == 0 &&
        (a > asked_ms ||
         (a == asked_ms && (until_ms == 0 || (su && kobj_time(su, &u) == 0 && u == until_ms)))))
        return true; /* shown, or a later request replaced it */
    if (until_ms == 0)
        return false;
    struct eng_job j = eng_job(d->eng, kdrv_gang_id(d, pg->key));
    return j.state != ENG_JOB_TEARING || j.ckpt_until_ms != until_ms || j.ckpt_asked_ms != asked_ms;
}

static int64_t grace_of(const struct kgang *kg, const struct config *cfg)
{
    return cfg && kg->gang.queue < cfg->n_queues
               ? cfg->queues[kg->gang.queue].preemption.checkpoint_grace_ms
               : 0;
}

bool kdrv_ckpt_asks(const struct kgang *victim, const struct config *cfg)
{
    /* no handshake asked for, or no PodGroup to ask it on (a gang of one pod; Kubernetes' own
     * PodGroups: deploy/rbac.yaml grants no patch on them): evicted at once */
    return grace_of(victim, cfg) > 0 && victim->pg && !knative_is(victim->pg->api);
}

/* The victim leaves now: its job row pending, uncharged (kdrv_record_evicted) in a transaction
 * of its own (the cycle's is over, or not begun). A store that cannot be written stops the
 * daemon, as the cycle's record does. */
static void record_left(struct kdrv *d, const struct kgang *kg, const struct config *cfg)
{
    struct sched_errbuf eb = {{0}};
    const char *queue =
        cfg && kg->gang.queue < cfg->n_queues ? cfg->queues[kg->gang.queue].name : NULL;
    int rc = d->db ? store_begin(d->db, &eb) : 0;
    if (rc == 0 && d->db)
        rc = kdrv_record_evicted(d, kg->key, queue, &eb);
    if (rc == 0 && d->db)
        rc = store_commit(d->db, &eb);
    if (rc != 0) {
        if (d->db)
            store_rollback(d->db);
        kdrv_fatal(d, eb.msg);
    }
}

bool kdrv_ckpt_request(struct kdrv *d, const struct kgang *victim, const struct kgang *by,
                       const struct config *cfg, int64_t now)
{
    if (!kdrv_ckpt_asks(victim, cfg))
        return false;
    int64_t grace = grace_of(victim, cfg);
    uint32_t g = kdrv_gang_id(d, victim->key);
    uint32_t pre = kdrv_gang_id(d, by->key);
    if (g == ENG_NONE || eng_job_ckpt_request(d->eng, g, pre, now, now + grace) != 0) {
        LOG_ERROR(KDRV_MOD, "out of memory asking %s to checkpoint: evicted at once", victim->key);
        record_left(d, victim, cfg); /* the cycle's record left it running, to be asked */
        return false;
    }
    eng_hold_extend(d->eng, pre, now + grace); /* no second victim while this one is asked */
    kdrv_owe_ckpt(d, victim->pg, now, now + grace);
    char msg[700];
    snprintf(msg, sizeof(msg),
             "preempted by %s: asked to checkpoint (set %s to a time after %s's request); "
             "evicted when it does or in %lld s",
             by->key, KOBJ_ANNOT_LAST_CKPT, KDRV_ANNOT_CKPT_ASKED, (long long)(grace / 1000));
    LOG_INFO(KDRV_MOD, "checkpoint requested: gang=%s preemptor=%s grace_ms=%lld", victim->key,
             by->key, (long long)grace);
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
};

static int find_pre(void *ctx, const struct store_preemption *p)
{
    struct find_pre *f = ctx;
    if (strcmp(p->victim, f->victim) == 0 && p->ts_ms >= f->from_ms && p->ts_ms <= f->asked_ms)
        snprintf(f->key, sizeof(f->key), "%s", p->preemptor);
    return 0;
}

/* The preemptor pre's hold, as kdrv_ckpt_request left it: the victim's nodes (added to those of
 * its other victims resumed) until the deadline plus the hold (eng_hold_extend). The capacity
 * its placement counted on besides its victims' is not held again. */
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
    if (eng_hold_put(d->eng, ENG_HOLDS, pre, nodes, n, until) != 0)
        LOG_ERROR(KDRV_MOD, "out of memory restoring the hold of a preemptor");
    else
        eng_hold_extend(d->eng, pre, until);
}

/* After a restart (the first cycle as leader): a running gang whose PodGroup carries a request
 * made during its current run and a deadline after it, not being evicted, is in a handshake
 * again (until that deadline, at most its queue's checkpointGrace after the request: an
 * annotation edited by hand gives no longer grace; a queue without a grace now: none). Its
 * preemptor, found in the store's preemption rows, holds the victim's nodes again. Later
 * cycles read no annotation: the handshakes are the engine's. */
static void adopt(struct kdrv *d, uint32_t g, const struct kgang *kg,
                  const struct sched_running *run, const struct config *cfg)
{
    int64_t asked, until;
    int64_t grace = grace_of(kg, cfg);
    const char *a = kg->pg ? kobj_pg_annotation(kg->pg, KDRV_ANNOT_CKPT_ASKED) : NULL;
    const char *u = kg->pg ? kobj_pg_annotation(kg->pg, KDRV_ANNOT_CKPT_UNTIL) : NULL;
    if (grace <= 0 || !a || !u || kobj_time(a, &asked) != 0 || kobj_time(u, &until) != 0 ||
        asked < run->start_ms || until <= asked)
        return;
    if (until - asked > grace)
        until = asked + grace;
    struct find_pre f = {.victim = kg->key, .from_ms = run->start_ms, .asked_ms = asked};
    struct sched_errbuf eb;
    if (d->db && store_preemption_list_of(d->db, kg->key, find_pre, &f, &eb) != 0)
        LOG_WARN(KDRV_MOD, "the preemptor of %s's checkpoint request is not known: %s", kg->key,
                 eb.msg);
    uint32_t pre = f.key[0] ? kdrv_gang_id(d, f.key) : ENG_NONE;
    if (eng_job_evict(d->eng, g) != 0 || eng_job_ckpt_request(d->eng, g, pre, asked, until)) {
        LOG_ERROR(KDRV_MOD, "out of memory resuming the checkpoint handshake of %s", kg->key);
        return;
    }
    if (pre != ENG_NONE)
        restore_hold(d, pre, run, until);
    LOG_INFO(KDRV_MOD,
             "checkpoint handshake resumed: gang=%s requested=%s deadline=%s "
             "preemptor=%s",
             kg->key, a, u, f.key[0] ? f.key : "(not known)");
}

/* Handshake over: every member through the Eviction API, status and metrics as an immediate
 * preemption has them; its job row pending again, its charge released (it ran until now). */
static void evict_now(struct kdrv *d, uint32_t g, const struct kgang *kg, bool answered,
                      const struct config *cfg)
{
    record_left(d, kg, cfg);
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
            evict_now(d, g, kg, v == ENG_CKPT_ANSWERED, kb->snap.config);
        if (v != ENG_CKPT_NONE)
            run->evicting = true; /* the core picks it no more; its preemptor keeps its hold */
    }
    d->ckpt_resumed = true;
}
