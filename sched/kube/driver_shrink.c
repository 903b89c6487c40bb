/* sched/kube/driver_shrink.c: the members an elastic gang loses to a preemption (the core's
 * sched_eviction.pods; docs/preemption.md "Choosing victims").
 *
 * Owns: evicting those members alone, at once or, when the gang's queue has a checkpointGrace,
 * after the checkpoint handshake: the gang is asked as a whole victim is (the annotations where
 * kdrv_ckpt_where says), runs whole meanwhile (marked evicting for the core, its preemptor's
 * hold extended to the deadline), and loses the members once its last checkpoint is after the
 * request or the grace is over; then its charge and job row become those of the members left.
 * The handshakes under way are kept in d->shrinks (gang key -> struct kshrink), in memory: a new
 * process does not resume one (kdrv_ckpt_step leaves a request of a member preemption alone),
 * the gang runs on whole and its preemptor plans again. When members leave, the gang's workers
 * restart (torchrun, Ray Train): d->restarts keeps when, the origin of its checkpoints for its
 * new members' join (gang_set_join) until it checkpoints again, as the simulator counts them
 * from its restart; its job row keeps it too, read back at the first cycle as leader, so a
 * restarted process or a new leader counts from it as well. New
 * members the core says ask for a checkpoint (sched_verdict.ask_checkpoint) ask their running
 * gang, the request alone (kdrv_join_ask), and know its latest request (gang.join_asked_ms:
 * the core asks once while it is open).
 *
 * Must not touch: the decisions, the engine's job states (the gang stays RUNNING), a whole
 * victim's handshake (driver_ckpt.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kube/driver_int.h"

struct kshrink {
    struct strlist pods; /* the members to evict, by pod key */
    char by[KOBJ_KEY_MAX];
    int64_t asked_ms, until_ms;
};

static void shrink_free(struct kshrink *s)
{
    if (s) {
        kdrv_strlist_free(&s->pods);
        free(s);
    }
}

void kdrv_shrink_fini(struct kdrv *d)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->shrinks, &i, &k, &v);)
        shrink_free(v);
    strmap_fini(&d->shrinks);
    for (size_t i = 0; strmap_next(&d->restarts, &i, &k, &v);)
        free(v);
    strmap_fini(&d->restarts);
}

/* Notes in d->restarts that gang's workers restarted at ms. */
static int note_restart(struct kdrv *d, const char *gang, int64_t ms)
{
    int64_t *t = malloc(sizeof(*t));
    void *old = NULL;
    if (t)
        *t = ms;
    if (!t || strmap_put(&d->restarts, gang, t, &old) != 0) {
        free(t); /* the join rule then counts from the checkpoint before */
        LOG_WARN(KDRV_MOD, "out of memory noting the restart of %s", gang);
        return SCHED_ENOMEM;
    }
    free(old);
    return 0;
}

/* Members of gang left it at now: its workers restart (noted on its job row too). */
static void restarted(struct kdrv *d, const char *gang, int64_t now)
{
    struct sched_errbuf eb = {{0}};
    if (note_restart(d, gang, now) == 0 && d->db && store_job_restart_put(d->db, gang, now, &eb))
        LOG_WARN(KDRV_MOD,
                 "restart of %s not kept in the store (a new process counts from its "
                 "checkpoint before): %s",
                 gang, eb.msg);
}

static int restore_one(void *ctx, const char *gang, int64_t restart_ms)
{
    return note_restart(ctx, gang, restart_ms); /* 0 or SCHED_ENOMEM */
}

/* The restarts the job rows keep, once at the first cycle as leader. */
static void restarts_restore(struct kdrv *d)
{
    if (d->restarts_restored || !d->db)
        return;
    d->restarts_restored = true;
    struct sched_errbuf eb = {{0}};
    if (store_restart_list(d->db, restore_one, d, &eb) != 0)
        LOG_WARN(KDRV_MOD,
                 "in-place restarts not all read from the store (their gangs count "
                 "from the checkpoint before): %s",
                 eb.msg[0] ? eb.msg : "out of memory");
    else if (d->restarts.n)
        LOG_INFO(KDRV_MOD, "in-place restarts restored: gangs=%zu", (size_t)d->restarts.n);
}

bool kdrv_shrink_asks(const struct kdrv *d, const char *gang, int64_t asked_ms, int64_t until_ms)
{
    const struct kshrink *s = strmap_get((struct strmap *)&d->shrinks, gang);
    return s && s->asked_ms == asked_ms && (until_ms == 0 || s->until_ms == until_ms);
}

/* kg's members that s names and are still members: how many (*out: their indices into
 * kg->members, from the arena; NULL when out of memory), *gpus those left. */
static uint32_t named_members(struct kdrv *d, const struct kgang *kg, const struct kshrink *s,
                              int64_t *gpus, uint32_t **out)
{
    uint32_t *pods = arena_alloc(&d->arena, (kg->gang.n_pods + 1) * sizeof(*pods)), n = 0;
    *out = pods;
    *gpus = kg->gang.gpus;
    for (uint32_t m = 0; pods && m < kg->gang.n_pods; m++)
        for (uint32_t i = 0; i < s->pods.n; i++)
            if (strcmp(kg->members[m]->key, s->pods.v[i]) == 0) {
                pods[n++] = m;
                *gpus -= gang_pods_request(&kg->gang, m, m + 1, NULL);
                break;
            }
    return n;
}

/* Evicts the n members pods[] (named_members) of kg. */
static void evict_named(struct kdrv *d, const struct kgang *kg, const struct kshrink *s,
                        bool answered, const uint32_t *pods, uint32_t n, char *msg, size_t cap)
{
    snprintf(msg, cap,
             "%u of its %u members preempted by %s %s; it runs on with %u, its minMember %u", n,
             kg->gang.n_pods, s->by,
             answered ? "after a requested checkpoint" : "with no checkpoint within the grace",
             kg->gang.n_pods - n, kg->gang.min_member);
    kdrv_evict_members(d, kg, pods, n, msg);
}

/* The handshake is dropped, nobody leaving: the members it names are gone (lost with their
 * node and replaced, say) or fewer run than could leave with the gang keeping its minMember. */
static void shrink_dropped(struct kdrv *d, const struct kgang *kg, const struct kshrink *s,
                           uint32_t n)
{
    char msg[sizeof(s->by) + 300];
    snprintf(msg, sizeof(msg),
             "no member preempted by %s: %u of the %u members asked to checkpoint still run, "
             "and it runs with %u, its minMember %u (members were lost meanwhile)",
             s->by, n, s->pods.n, kg->gang.n_pods, kg->gang.min_member);
    LOG_INFO(KDRV_MOD, "checkpoint handshake over: gang=%s outcome=dropped members=0 (%s)", kg->key,
             msg);
    const char *outcome[] = {"dropped"};
    http_metric_add_value(d->m_ckpt, outcome, 1);
    kdrv_gang_status_rel(d, kg->key, kg->pg, "Running", "Normal", "PreemptionDropped", msg, true,
                         kcache_pg(d->cache, s->by));
}

void kdrv_shrink(struct kdrv *d, const struct kcache_build *kb, const struct sched_eviction *ev,
                 const struct config *cfg, int64_t now)
{
    const struct kgang *victim = &kb->gangs[ev->victim->gang->id];
    const struct kgang *by = &kb->gangs[ev->preemptor->id];
    uint32_t n = victim->gang.n_pods;
    int64_t grace = kdrv_ckpt_asks(victim, cfg)
                        ? cfg->queues[victim->gang.queue].preemption.checkpoint_grace_ms
                        : 0;
    struct kshrink *s = grace > 0 ? calloc(1, sizeof(*s)) : NULL;
    for (uint32_t i = 0; s && i < ev->n_pods; i++)
        if (ev->pods[i] < n && kdrv_strlist_add(&s->pods, victim->members[ev->pods[i]]->key))
            shrink_free(s), s = NULL;
    void *old = NULL;
    if (s && strmap_put(&d->shrinks, victim->key, s, &old) != 0)
        shrink_free(s), s = NULL;
    shrink_free(old);
    char msg[1000], why[400];
    sched_eviction_format(ev, by->key, why, sizeof(why)); /* "preempted by B", "reclaimed by B" */
    if (s) {
        snprintf(s->by, sizeof(s->by), "%s", by->key);
        s->asked_ms = now;
        s->until_ms = now + grace;
        kdrv_ckpt_write(d, victim, now, now + grace);
        eng_hold_extend(d->eng, kdrv_gang_id(d, by->key), now + grace);
        kdrv_cycle_at(d, now + grace); /* the deadline */
        snprintf(msg, sizeof(msg),
                 "%u of its %u members %s: asked to checkpoint (%s on its %s); "
                 "they are evicted when it does or in %lld s, and it runs on with %u, its "
                 "minMember %u",
                 ev->n_pods, n, why, KOBJ_ANNOT_CKPT_ASKED,
                 kdrv_ckpt_where(victim) == KDRV_CKPT_PODS ? "pods" : "PodGroup",
                 (long long)(grace / 1000), n - ev->n_pods, victim->gang.min_member);
        LOG_INFO(KDRV_MOD,
                 "checkpoint requested for members: gang=%s members=%u preemptor=%s kind=%s",
                 victim->key, ev->n_pods, by->key, sched_preempt_kind_name(ev->kind));
        kdrv_gang_status_rel(d, victim->key, victim->pg, "Running", "Normal", "CheckpointRequested",
                             msg, true, by->pg);
        return;
    }
    if (grace > 0)
        LOG_ERROR(KDRV_MOD, "out of memory asking %s to checkpoint: members evicted at once",
                  victim->key);
    snprintf(msg, sizeof(msg),
             "%u of its %u members %s (%.0f GPU-seconds of work since the last "
             "checkpoint lost); it runs on with %u, its minMember %u",
             ev->n_pods, n, why, ev->lost_gpu_s, n - ev->n_pods, victim->gang.min_member);
    kdrv_evict_members(d, victim, ev->pods, ev->n_pods, msg);
    restarted(d, victim->key, now);
    if (grace > 0) /* the cycle's record left its charge for the handshake */
        kdrv_record_apart(d, victim->key, NULL, victim->gang.gpus - ev->gpus, victim, ev->pods,
                          ev->n_pods, now);
    kdrv_gang_status_rel(d, victim->key, victim->pg, "Running", "Warning", "Preempted", msg, true,
                         by->pg);
}

/* One handshake at this cycle: over (answered, its grace ended, or dropped) or still
 * waiting. No gang goes below its minMember: when members were lost meanwhile so that those
 * named cannot all leave (or none of them is left), it is dropped at once. */
static bool shrink_due(struct kdrv *d, const struct kgang *kg, struct sched_running *run,
                       struct kshrink *s, int64_t now)
{
    int64_t gpus = 0;
    uint32_t *gone = NULL;
    uint32_t n = named_members(d, kg, s, &gpus, &gone);
    if (!gone) { /* out of memory: the next cycle looks again */
        LOG_ERROR(KDRV_MOD, "out of memory checking the handshake of %s", kg->key);
        run->evicting = true;
        kdrv_cycle_at(d, now + 1000);
        return false;
    }
    if (n == 0 || kg->gang.n_pods - n < kg->gang.min_member) {
        shrink_dropped(d, kg, s, n);
        return true;
    }
    bool answered = run->last_checkpoint_ms > s->asked_ms;
    if (!answered && now < s->until_ms) {
        run->evicting = true; /* the core picks it no more; its preemptor keeps its hold */
        kdrv_cycle_at(d, s->until_ms);
        return false;
    }
    char msg[sizeof(s->by) + 200];
    evict_named(d, kg, s, answered, gone, n, msg, sizeof(msg));
    LOG_INFO(KDRV_MOD, "checkpoint handshake over: gang=%s outcome=%s members=%u", kg->key,
             answered ? "answered" : "timeout", n);
    const char *outcome[] = {answered ? "answered" : "timeout"};
    http_metric_add_value(d->m_ckpt, outcome, 1);
    restarted(d, kg->key, now);
    kdrv_record_apart(d, kg->key, NULL, gpus, kg, gone, n, now); /* those left */
    kdrv_gang_status_rel(d, kg->key, kg->pg, "Running", "Warning", "Preempted", msg, true,
                         kcache_pg(d->cache, s->by));
    return true;
}

/* Whether gang `key` runs this cycle. */
static bool runs_now(const struct kcache_build *kb, const char *key)
{
    for (uint32_t r = 0; r < kb->n_running; r++)
        if (strcmp(kb->gangs[kb->running[r].gang->id].key, key) == 0)
            return true;
    return false;
}

/* New members of gangs that restarted since their last checkpoint count its checkpoints from
 * the restart, and know the gang's latest checkpoint request (the core asks again only once it
 * is answered); the restarts of gangs that no longer run are forgotten. */
static void restarts_step(struct kdrv *d, struct kcache_build *kb)
{
    restarts_restore(d);
    for (struct kgang *p = kb->gangs; p < kb->gangs + kb->n_pending; p++) {
        if (!p->run)
            continue;
        const int64_t *t = strmap_get(&d->restarts, p->run->key);
        if (t && *t > p->run->last_ckpt_ms)
            gang_set_join(&p->gang, *t, p->run->ckpt_every_ms, p->run->gang.gpus);
        p->gang.join_asked_ms = kdrv_ckpt_asked(d, p->run);
    }
    struct strlist gone = {0};
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->restarts, &i, &k, &v);)
        if (!runs_now(kb, k) && kdrv_strlist_add(&gone, k) != 0)
            break; /* out of memory: forgotten at a later cycle */
    for (uint32_t i = 0; i < gone.n; i++)
        free(strmap_del(&d->restarts, gone.v[i]));
    kdrv_strlist_free(&gone);
}

void kdrv_join_ask(struct kdrv *d, const struct kgang *kg, int64_t now)
{
    const struct kgang *run = kg->run;
    uint32_t g = run ? kdrv_gang_id(d, run->key) : ENG_NONE;
    if (!run || kdrv_ckpt_where(run) == KDRV_CKPT_NONE || g == ENG_NONE ||
        eng_job_state(d->eng, g) == ENG_JOB_TEARING || strmap_get(&d->shrinks, run->key))
        return; /* being evicted, whole or members: its own request is under way */
    kdrv_ckpt_write(d, run, now, 0);
    char msg[600];
    snprintf(msg, sizeof(msg),
             "asked to checkpoint (%s on its %s) so that %u new member(s) can join: joining "
             "restarts every worker from its last checkpoint; they join once %s on it or on a "
             "pod is after the request",
             KOBJ_ANNOT_CKPT_ASKED, kdrv_ckpt_where(run) == KDRV_CKPT_PODS ? "pods" : "PodGroup",
             kg->gang.n_pods, KOBJ_ANNOT_LAST_CKPT);
    LOG_INFO(KDRV_MOD, "checkpoint requested for a join: gang=%s members=%u", run->key,
             kg->gang.n_pods);
    kdrv_gang_status_rel(d, run->key, run->pg, "Running", "Normal", "CheckpointRequested", msg,
                         true, NULL);
}

void kdrv_shrink_step(struct kdrv *d, struct kcache_build *kb, int64_t now)
{
    restarts_step(d, kb);
    if (d->shrinks.n == 0)
        return;
    struct strlist over = {0};
    for (uint32_t i = 0; i < kb->n_running; i++) {
        struct sched_running *run = &kb->running[i];
        const struct kgang *kg = &kb->gangs[run->gang->id];
        struct kshrink *s = strmap_get(&d->shrinks, kg->key);
        if (s && shrink_due(d, kg, run, s, now) && kdrv_strlist_add(&over, kg->key) != 0)
            LOG_ERROR(KDRV_MOD, "out of memory ending the handshake of %s", kg->key);
    }
    /* handshakes over, and those of gangs that no longer run (ended, or evicted whole) */
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->shrinks, &i, &k, &v);) {
        if (!runs_now(kb, k) && kdrv_strlist_add(&over, k) != 0)
            LOG_ERROR(KDRV_MOD, "out of memory ending the handshake of %s", k);
    }
    for (uint32_t i = 0; i < over.n; i++)
        shrink_free(strmap_del(&d->shrinks, over.v[i]));
    kdrv_strlist_free(&over);
}
