/* sched/kube/driver_counts.c: the member counts of scheduler-plugins' and Volcano's PodGroups,
 * status.running, succeeded and failed: the pods of the group in each phase, as scheduler-plugins'
 * PodGroup controller (getCurrentPodStats) and Volcano's scheduler write them, so that
 * `kubectl get podgroups` shows them in the CRDs' printer columns without either installed.
 *
 * Each cycle takes the groups whose counts changed or whose PodGroup was seen again (the cache
 * keeps the counts by pod event: cache_counts.c) and writes those that differ from what the
 * PodGroup shows, at most once per KDRV_STATUS_MIN_MS per group (a gang whose pods start one by
 * one gets a few writes, the last with every pod). scheduler-plugins: a merge patch of /status
 * with the counts, and phase Finished once minMember members succeeded (its controller's final
 * phase; the daemon's own phases are Pending, Running and Failed). Volcano: a PUT of the object
 * as last seen with the counts in its status (no status subresource); a 409 on a stale version
 * is retried at the PodGroup's next watch event, which marks its counts again. A write that
 * fails otherwise is logged; the next event of a member or of the PodGroup writes them again.
 * The writes may wait behind every other request (KUBE_LOW): Bindings go first.
 *
 * Must not touch: the cache's counts (read only, through kcache_counts_each), other statuses.
 */
#include <stdio.h>

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

void kdrv_counts_add(struct kdrv *d, const struct kpg *pg, cJSON *status)
{
    if (pg->api == KPG_XK8S || pg->api == KPG_VOLCANO)
        set_counts(status, kcache_counts(d->cache, pg->key));
}

/* The write of group's counts k to its PodGroup pg. 0 or SCHED_ENOMEM (nothing queued). */
static int write_counts(struct kdrv *d, const struct kpg *pg, const struct kcounts *k)
{
    char path[600];
    if (pg->api == KPG_XK8S) {
        cJSON *body = cJSON_CreateObject(), *status = cJSON_AddObjectToObject(body, "status");
        if (!status) {
            cJSON_Delete(body);
            return SCHED_ENOMEM;
        }
        set_counts(status, k); /* the caller's counts: no second lookup */
        if (k->n[KPOD_SUCCEEDED - 1] >= (int32_t)pg->min_member)
            cJSON_AddStringToObject(status, "phase", "Finished");
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
    bool same = true;
    for (int i = 0; i < KPOD_COUNTS; i++)
        same &= pg->seen_counts[i] == k->n[i];
    if (same)
        return true;
    if (k->written_ms && cs->now - k->written_ms < KDRV_STATUS_MIN_MS) {
        kdrv_cycle_at(cs->d, k->written_ms + KDRV_STATUS_MIN_MS); /* the new counts then */
        return false;
    }
    if (write_counts(cs->d, pg, k) != 0)
        return false; /* out of memory: the next cycle */
    k->written_ms = cs->now;
    return true;
}

void kdrv_counts_step(struct kdrv *d, int64_t now)
{
    struct counts_step cs = {d, now};
    kcache_counts_each(d->cache, group_counts, &cs);
}
