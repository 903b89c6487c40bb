/* sched/kube/driver_ckpt.c: the checkpoint handshake of preemption in the Kubernetes driver
 * (docs/preemption.md "The checkpoint handshake").
 *
 * Owns: asking a victim to checkpoint (the PodGroup annotations gangsched.io/checkpoint-requested
 * and gangsched.io/checkpoint-deadline, also the operator's `gangctl checkpoint` write), and at
 * each cycle evicting the victims that answered (gangsched.io/last-checkpoint after the request)
 * or whose grace ended, marking the others as being evicted for the core. The handshake's state
 * (asked when, until when, by whom) is the engine's (eng_job_ckpt_request, eng_job_ckpt_check);
 * its deadline wakes the daemon through eng_next_due. After a restart, a running gang whose
 * PodGroup carries a request of its current run with a deadline is in a handshake again (the
 * annotations are the durable record).
 *
 * Must not touch: the decisions (the core chooses the victims), the store (driver_record.c
 * records the preemption when it is decided), the engine's other state.
 */
#include <stdio.h>
#include <string.h>

#include "sched/kube/driver_int.h"

void kdrv_ckpt_annotate(struct kdrv *d, const struct kpg *pg, int64_t asked_ms, int64_t until_ms)
{
    char t[40], path[700];
    cJSON *body = cJSON_CreateObject();
    cJSON *ann = cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "metadata"), "annotations");
    kobj_format_time(asked_ms, t, sizeof(t));
    cJSON_AddStringToObject(ann, KDRV_ANNOT_CKPT_ASKED, t);
    if (until_ms > 0) {
        kobj_format_time(until_ms, t, sizeof(t));
        cJSON_AddStringToObject(ann, KDRV_ANNOT_CKPT_UNTIL, t);
    }
    snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/%s/%s", knative_api_version(pg->api),
             pg->ns, knative_plural(pg->api), pg->name);
    kdrv_send_json(d, KUBE_PATCH_MERGE, path, body, NULL, NULL);
}

bool kdrv_ckpt_request(struct kdrv *d, const struct kgang *victim, const struct kgang *by,
                       const struct config *cfg, int64_t now)
{
    int64_t grace = cfg && victim->gang.queue < cfg->n_queues
                        ? cfg->queues[victim->gang.queue].preemption.checkpoint_grace_ms
                        : 0;
    /* no handshake asked for, or no PodGroup to ask it on (a gang of one pod; Kubernetes' own
     * PodGroups: deploy/rbac.yaml grants no patch on them): evicted at once */
    if (grace <= 0 || !victim->pg || knative_is(victim->pg->api))
        return false;
    uint32_t g = kdrv_gang_id(d, victim->key);
    uint32_t pre = kdrv_gang_id(d, by->key);
    if (g == ENG_NONE || eng_job_ckpt_request(d->eng, g, pre, now, now + grace) != 0)
        return false;
    eng_hold_extend(d->eng, pre, now + grace); /* no second victim while this one is asked */
    kdrv_ckpt_annotate(d, victim->pg, now, now + grace);
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

/* After a restart: a running gang whose PodGroup carries a request made during its current run
 * and a deadline after it, not being evicted, is in a handshake again (until that deadline, at
 * most its queue's checkpointGrace after the request: an annotation edited by hand gives no
 * longer grace; a queue without a grace now: none). */
static void adopt(struct kdrv *d, uint32_t g, const struct kgang *kg,
                  const struct sched_running *run, const struct config *cfg)
{
    int64_t asked, until;
    int64_t grace = cfg && kg->gang.queue < cfg->n_queues
                        ? cfg->queues[kg->gang.queue].preemption.checkpoint_grace_ms
                        : 0;
    const char *a = kg->pg ? kobj_pg_annotation(kg->pg, KDRV_ANNOT_CKPT_ASKED) : NULL;
    const char *u = kg->pg ? kobj_pg_annotation(kg->pg, KDRV_ANNOT_CKPT_UNTIL) : NULL;
    if (grace <= 0 || !a || !u || kobj_time(a, &asked) != 0 || kobj_time(u, &until) != 0 ||
        asked < run->start_ms || until <= asked)
        return;
    if (until - asked > grace)
        until = asked + grace;
    if (eng_job_evict(d->eng, g) != 0 || eng_job_ckpt_request(d->eng, g, ENG_NONE, asked, until))
        LOG_ERROR(KDRV_MOD, "out of memory resuming the checkpoint handshake of %s", kg->key);
    else
        LOG_INFO(KDRV_MOD, "checkpoint handshake resumed: gang=%s requested=%s deadline=%s",
                 kg->key, a, u);
}

/* Handshake over: every member through the Eviction API, status and metrics as an immediate
 * preemption has them. */
static void evict_now(struct kdrv *d, uint32_t g, const struct kgang *kg, bool answered)
{
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
        if (eng_job_state(d->eng, g) != ENG_JOB_TEARING && !run->evicting)
            adopt(d, g, kg, run, kb->snap.config);
        enum eng_ckpt v = eng_job_ckpt_check(d->eng, g, run->last_checkpoint_ms, now);
        if (v == ENG_CKPT_ANSWERED || v == ENG_CKPT_TIMEOUT)
            evict_now(d, g, kg, v == ENG_CKPT_ANSWERED);
        if (v != ENG_CKPT_NONE)
            run->evicting = true; /* the core picks it no more; its preemptor keeps its hold */
    }
}
