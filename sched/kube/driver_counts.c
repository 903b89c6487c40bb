/* sched/kube/driver_counts.c: the member counts of scheduler-plugins' and Volcano's PodGroups,
 * status.running, succeeded and failed: the pods of the group in each phase, as scheduler-plugins'
 * PodGroup controller (getCurrentPodStats) and Volcano's scheduler write them, so that
 * `kubectl get podgroups` shows them in the CRDs' printer columns without either installed,
 * and the phase those counts move the group to (kdrv_counts_phase).
 *
 * Phases, as the APIs' own writers set them (read upstream: scheduler-plugins' PodGroup
 * controller, Volcano's session jobStatus). scheduler-plugins: a gang the daemon bound is
 * Scheduling until minMember members run or succeeded, then Running; Finished once minMember
 * succeeded; Pending while it waits and Failed (its retry budget spent) are the daemon's own.
 * Volcano: Running once bound, Completed once every member known has ended (succeeded or
 * failed) and at least minMember did; Pending otherwise.
 *
 * Each cycle takes the groups whose counts changed or whose PodGroup was seen again (the cache
 * keeps the counts by pod event: cache_counts.c) and writes those that differ from what the
 * PodGroup shows, at most once per KDRV_STATUS_MIN_MS per group (a gang whose pods start one by
 * one gets a few writes, the last with every pod), but at once when the phase moves on (once
 * per phase). scheduler-plugins: a merge patch of /status. Volcano: a PUT of the object as
 * last seen with the counts in its status (no status subresource); a 409 on a stale version
 * is retried at the PodGroup's next watch event, which marks its counts again. A write that
 * fails otherwise is logged; the next event of a member or of the PodGroup writes them again.
 * The writes may wait behind every other request (KUBE_LOW): Bindings go first.
 *
 * Must not touch: the cache's counts (read only, through kcache_counts_each), other statuses.
 */
#include <stdio.h>
#include <string.h>

#include "sched/kube/driver_int.h"

static const char *const count_names[KPOD_COUNTS] = {"running", "succeeded", "failed"};

/* Sets status's counts to k's (NULL: no member, 0 each). */
static void set_counts(cJSON *status, const struct kcounts *k)
{
    for (int i = 0; i < KPOD_COUNTS; i++) {
        cJSON_DeleteItemFromObjectCaseSensitive(status, count_names[i]);
        cJSON_AddNumberToObject(status, count_names[i], k ? k->n[i] : 0);
    }
}

static bool phase_is(const struct kpg *pg, const char *phase)
{
    return pg->phase && strcmp(pg->phase, phase) == 0;
}

const char *kdrv_counts_phase(const struct kpg *pg, const struct kcounts *k,
                              const char *daemon_phase)
{
    int32_t run = k ? k->n[KPOD_RUNNING - 1] : 0, ok = k ? k->n[KPOD_SUCCEEDED - 1] : 0,
            failed = k ? k->n[KPOD_FAILED - 1] : 0, min = (int32_t)pg->min_member;
    bool bound = daemon_phase && strcmp(daemon_phase, "Running") == 0;
    if (pg->api == KPG_VOLCANO) {
        bool ended = k && ok + failed >= min && (uint32_t)(ok + failed) == k->pods;
        if (daemon_phase)
            return !bound ? "Pending" : ended ? "Completed" : "Running";
        return ended && phase_is(pg, "Running") ? "Completed" : NULL;
    }
    if (daemon_phase && !bound)
        return daemon_phase; /* Pending, Failed: the daemon's */
    if (ok >= min)
        return "Finished";
    if (bound)
        return run + ok >= min ? "Running" : "Scheduling";
    return run + ok >= min && phase_is(pg, "Scheduling") ? "Running" : NULL;
}

void kdrv_counts_add(struct kdrv *d, const struct kpg *pg, cJSON *status)
{
    if (pg->api == KPG_XK8S || pg->api == KPG_VOLCANO)
        set_counts(status, kcache_counts(d->cache, pg->key));
}

/* The write of group's counts k and phase (NULL: as it is) to its PodGroup pg. 0 or
 * SCHED_ENOMEM (nothing queued). */
static int write_counts(struct kdrv *d, const struct kpg *pg, const struct kcounts *k,
                        const char *phase)
{
    char path[600];
    if (pg->api == KPG_XK8S) {
        cJSON *body = cJSON_CreateObject(), *status = cJSON_AddObjectToObject(body, "status");
        if (!status) {
            cJSON_Delete(body);
            return SCHED_ENOMEM;
        }
        set_counts(status, k); /* the caller's counts: no second lookup */
        if (phase)
            cJSON_AddStringToObject(status, "phase", phase);
        snprintf(path, sizeof(path),
                 "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups/%s/status", pg->ns,
                 pg->name);
        return kdrv_send_low(d, KUBE_PATCH_MERGE, path, body);
    }
    cJSON *obj = pg->raw ? cJSON_Parse(pg->raw) : NULL, *status = NULL;
    if (obj && !cJSON_IsObject(status = cJSON_GetObjectItemCaseSensitive(obj, "status"))) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        status = cJSON_AddObjectToObject(obj, "status");
    }
    if (!status) { /* never a PUT without the object */
        cJSON_Delete(obj);
        return SCHED_ENOMEM;
    }
    set_counts(status, k); /* the caller's counts: no second lookup */
    if (phase) {
        cJSON_DeleteItemFromObjectCaseSensitive(status, "phase");
        cJSON_AddStringToObject(status, "phase", phase);
    }
    snprintf(path, sizeof(path), "/apis/scheduling.volcano.sh/v1beta1/namespaces/%s/podgroups/%s",
             pg->ns, pg->name);
    return kdrv_send_low(d, KUBE_PUT, path, obj);
}

struct counts_step {
    struct kdrv *d;
    int64_t now;
};

/* One dirty group: true when done with it (written, equal, or no PodGroup of those APIs). */
static bool group_counts(void *ctx, const char *group, struct kcounts *k)
{
    struct counts_step *cs = ctx;
    const struct kpg *pg = kcache_pg(cs->d->cache, group);
    if (!pg || pg->deleting || (pg->api != KPG_XK8S && pg->api != KPG_VOLCANO))
        return true;
    const char *phase = kdrv_counts_phase(pg, k, NULL);
    bool same = !phase || phase_is(pg, phase);
    for (int i = 0; i < KPOD_COUNTS; i++)
        same &= pg->seen_counts[i] == k->n[i];
    if (same)
        return true;
    bool moves = phase && !phase_is(pg, phase) &&
                 !(k->phase_written && strcmp(k->phase_written, phase) == 0);
    if (k->written_ms && cs->now - k->written_ms < KDRV_STATUS_MIN_MS && !moves) {
        kdrv_cycle_at(cs->d, k->written_ms + KDRV_STATUS_MIN_MS); /* the new counts then */
        return false;
    }
    if (write_counts(cs->d, pg, k, phase) != 0)
        return false; /* out of memory: the next cycle */
    k->written_ms = cs->now;
    k->phase_written = phase;
    return true;
}

void kdrv_counts_step(struct kdrv *d, int64_t now)
{
    struct counts_step cs = {d, now};
    kcache_counts_each(d->cache, group_counts, &cs);
}
