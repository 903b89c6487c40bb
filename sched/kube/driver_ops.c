/* sched/kube/driver_ops.c: operator actions of the Kubernetes driver (the HTTP API's writes).
 *
 * Owns: holding, draining and resuming queues (d->held), operator reservations kept as holds
 * (struct khold in d->holds, with the preemptors' holds), recording each action in the store
 * and replaying them at start.
 *
 * Must not touch: HTTP parsing and routing (sched/http/), the cycle (it only asks for one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kube/driver_int.h"

void kdrv_khold_free(struct khold *h)
{
    for (uint32_t i = 0; i < h->n_nodes; i++)
        free(h->nodes[i]);
    free(h->nodes);
    free(h->gang);
}

/* Applies one operator action (also replayed from the store when a leader starts). */
static int apply_action(struct kdrv *d, enum store_action_kind kind, const char *target,
                        struct sched_errbuf *eb)
{
    switch (kind) {
    case STORE_ACT_HOLD:
    case STORE_ACT_DRAIN:
        return strmap_put(&d->held, target, (void *)1, NULL) == 0
                   ? 0
                   : sched_fail(eb, SCHED_ENOMEM, "out of memory");
    case STORE_ACT_RESUME:
        strmap_del(&d->held, target);
        return 0;
    case STORE_ACT_CHECKPOINT: {
        const struct kpg *pg = kcache_pg(d->cache, target);
        if (!pg)
            return sched_fail(eb, SCHED_ENOENT, "podgroup %s not found", target);
        char t[40], path[700];
        kobj_format_time(kdrv_now_ms(), t, sizeof(t));
        cJSON *body = cJSON_CreateObject();
        cJSON *ann =
            cJSON_AddObjectToObject(cJSON_AddObjectToObject(body, "metadata"), "annotations");
        cJSON_AddStringToObject(ann, "gangsched.io/checkpoint-requested", t);
        snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/%s/%s", knative_api_version(pg->api),
                 pg->ns, knative_plural(pg->api), pg->name);
        kdrv_send_json(d, KUBE_PATCH_MERGE, path, body, NULL, NULL);
        return 0;
    }
    case STORE_ACT_RESERVE:
    case STORE_ACT_UNRESERVE:
        break;
    }
    return sched_fail(eb, SCHED_EINVAL, "not an action applied here");
}

/* Adds an operator reservation's hold (id: its store id). */
static int add_operator_hold(struct kdrv *d, int64_t id, const char *gang, const char *const *nodes,
                             uint32_t n, int64_t until_ms)
{
    struct khold *nh = realloc(d->holds, (d->n_holds + 1) * sizeof(*nh));
    if (!nh)
        return SCHED_ENOMEM;
    d->holds = nh;
    struct khold *kh = &d->holds[d->n_holds];
    memset(kh, 0, sizeof(*kh));
    kh->gang = strdup(gang);
    kh->nodes = calloc(n + 1, sizeof(*kh->nodes));
    kh->until_ms = until_ms;
    kh->operator_id = id;
    if (!kh->gang || !kh->nodes) {
        kdrv_khold_free(kh);
        return SCHED_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        if ((kh->nodes[kh->n_nodes] = strdup(nodes[i])))
            kh->n_nodes++;
    d->n_holds++;
    return 0;
}

/* POST /v1/reservations: the nodes are held for the gang (only it may use their free capacity)
 * until deleted or KDRV_RESERVE_MS later; recorded in the store as an operator reservation. */
static int operator_reserve(struct kdrv *d, const struct http_write *w, int64_t *id,
                            struct sched_errbuf *eb)
{
    cJSON *doc = cJSON_Parse(w->detail ? w->detail : "");
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(doc, "nodes"), *n;
    uint32_t count = (uint32_t)cJSON_GetArraySize(nodes);
    const char **names = calloc(count + 1, sizeof(*names));
    int rc = names ? 0 : sched_fail(eb, SCHED_ENOMEM, "out of memory");
    uint32_t k = 0;
    cJSON_ArrayForEach(n, nodes)
    {
        bool known = cJSON_IsString(n) && kcache_node_index(d->cache, n->valuestring) >= 0;
        if (rc == 0 && !known)
            rc = sched_fail(eb, SCHED_ENOENT, "node '%.200s' not found",
                            cJSON_IsString(n) ? n->valuestring : "?");
        if (rc == 0)
            names[k++] = n->valuestring;
    }
    int64_t now = kdrv_now_ms();
    struct store_reservation r = {.kind = STORE_RES_OPERATOR,
                                  .gang = w->target,
                                  .nodes = names,
                                  .n_nodes = k,
                                  .created_ms = now,
                                  .expires_ms = now + KDRV_RESERVE_MS,
                                  .expected_start_ms = STORE_NO_TIME};
    if (rc == 0)
        rc = store_reservation_put(d->db, &r, id, eb);
    if (rc == 0)
        rc = add_operator_hold(d, *id, w->target, names, k, r.expires_ms);
    free(names);
    cJSON_Delete(doc);
    return rc;
}

static int operator_unreserve(struct kdrv *d, const char *target, struct sched_errbuf *eb)
{
    char *end = NULL;
    long long id = strtoll(target, &end, 10);
    if (!*target || *end || id <= 0)
        return sched_fail(eb, SCHED_EINVAL, "reservation id '%.64s' is not a positive integer",
                          target);
    uint32_t h = 0;
    while (h < d->n_holds && d->holds[h].operator_id != id)
        h++;
    if (h == d->n_holds)
        return sched_fail(eb, SCHED_ENOENT, "reservation %lld not found", id);
    kdrv_khold_free(&d->holds[h]);
    d->holds[h] = d->holds[--d->n_holds];
    return store_reservation_delete(d->db, id, NULL, eb);
}

int kdrv_load_operator_hold(void *ctx, const struct store_reservation *r)
{
    struct kdrv *d = ctx;
    if (r->kind != STORE_RES_OPERATOR)
        return 0;
    int64_t until = r->expires_ms == STORE_NO_TIME ? INT64_MAX : r->expires_ms;
    return add_operator_hold(d, r->id, r->gang, r->nodes, r->n_nodes, until);
}

int kdrv_http_write(void *ctx, const struct http_write *w, cJSON **result, struct sched_errbuf *eb)
{
    struct kdrv *d = ctx;
    if (!d->leading || !d->db)
        return sched_fail(eb, SCHED_EIO,
                          "this replica is not the leader: send writes to the "
                          "leader (the holder of the Lease)");
    const struct config *cfg = config_watch_current(d->cw);
    bool queue_kind =
        w->kind == STORE_ACT_HOLD || w->kind == STORE_ACT_RESUME || w->kind == STORE_ACT_DRAIN;
    if (queue_kind && config_queue_index(cfg, w->target) < 0)
        return sched_fail(eb, SCHED_ENOENT, "queue '%s' not found", w->target);
    int64_t res_id = 0;
    int rc = w->kind == STORE_ACT_RESERVE     ? operator_reserve(d, w, &res_id, eb)
             : w->kind == STORE_ACT_UNRESERVE ? operator_unreserve(d, w->target, eb)
                                              : apply_action(d, w->kind, w->target, eb);
    if (rc)
        return rc;
    struct store_action a = {.ts_ms = kdrv_now_ms(),
                             .kind = w->kind,
                             .target = w->target,
                             .detail = w->detail,
                             .actor = w->actor};
    int64_t id = 0;
    rc = store_action_add(d->db, &a, &id, eb);
    if (rc == 0)
        rc = store_action_done(d->db, id, STORE_ACTION_APPLIED, a.ts_ms, "applied", eb);
    if (rc)
        return rc;
    d->force = true;
    kdrv_schedule_cycle(d, 0);
    *result = cJSON_CreateObject();
    cJSON_AddStringToObject(*result, "action", store_action_kind_name(w->kind));
    cJSON_AddStringToObject(*result, "target", w->target);
    cJSON_AddStringToObject(*result, "message", "applied");
    if (res_id > 0)
        cJSON_AddNumberToObject(*result, "id", (double)res_id);
    return 0;
}

int kdrv_replay_action(void *ctx, const struct store_action *a)
{
    struct kdrv *d = ctx;
    if (a->state == STORE_ACTION_APPLIED &&
        (a->kind == STORE_ACT_HOLD || a->kind == STORE_ACT_DRAIN || a->kind == STORE_ACT_RESUME))
        return apply_action(d, a->kind, a->target, NULL);
    return 0;
}

/* Preemptor holds offered to the core (kb->snap.holds): kept while their gang is pending and the
 * hold has not ended; an operator's reservation is kept whether or not its gang is pending. */
void kdrv_holds_offer(struct kdrv *d, struct kcache_build *kb, int64_t now)
{
    struct sched_hold *hv = arena_calloc(&d->arena, d->n_holds + 1, sizeof(*hv));
    uint32_t n_hv = 0;
    for (uint32_t h = 0; hv && h < d->n_holds;) {
        struct khold *kh = &d->holds[h];
        const struct gang *g = NULL;
        for (uint32_t i = 0; i < kb->n_pending && !g; i++)
            if (strcmp(kb->gangs[i].key, kh->gang) == 0)
                g = &kb->gangs[i].gang;
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
    kb->snap.holds = hv;
    kb->snap.n_holds = hv ? n_hv : 0;
}

/* A preemptor the core reserved capacity for gets a hold on the freed nodes (the first hold's
 * deadline is kept), KDRV_HOLD_MS at most. */
void kdrv_holds_take(struct kdrv *d, const struct kcache_build *kb, const struct sched_result *res,
                     int64_t now)
{
    for (uint32_t r = 0; r < res->n_reservations; r++) {
        const struct sched_reservation *rv = &res->reservations[r];
        LOG_DEBUG(KDRV_MOD, "reservation: gang=%s preemptor=%d nodes=%u",
                  kb->gangs[rv->gang->id].key, rv->preemptor, rv->n_nodes);
        if (!rv->preemptor)
            continue;
        const char *key = kb->gangs[rv->gang->id].key;
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
            if ((kh->nodes[kh->n_nodes] = strdup(kb->snap.cluster->nodes[rv->nodes[k]].name)))
                kh->n_nodes++;
        d->n_holds++;
    }
}
