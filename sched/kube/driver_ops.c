/* sched/kube/driver_ops.c: operator actions of the Kubernetes driver (the HTTP API's writes).
 *
 * Owns: holding, draining and resuming queues (d->held), operator reservations given to the
 * engine's holds (eng_hold_operator; the preemptors' holds are the engine's too: the rule is in
 * sched/engine/holds.c), recording each action in the store and replaying them at start.
 *
 * Must not touch: HTTP parsing and routing (sched/http/), the cycle (it only asks for one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kube/driver_int.h"

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
    case STORE_ACT_CHECKPOINT:
        return kdrv_ckpt_operator(d, target, eb);
    case STORE_ACT_RESERVE:
    case STORE_ACT_UNRESERVE:
        break;
    }
    return sched_fail(eb, SCHED_EINVAL, "not an action applied here");
}

/* Adds an operator reservation's hold (id: its store id) to the engine. */
static int add_operator_hold(struct kdrv *d, int64_t id, const char *gang, const char *const *nodes,
                             uint32_t n, int64_t until_ms)
{
    uint32_t g = kdrv_gang_id(d, gang);
    uint32_t *ids = calloc(n + 1, sizeof(*ids));
    if (g == ENG_NONE || !ids) {
        free(ids);
        return SCHED_ENOMEM;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((ids[k] = kdrv_node_id(d, nodes[i])) != ENG_NONE)
            k++;
    int rc = eng_hold_operator(d->eng, id, g, ids, k, until_ms);
    free(ids);
    return rc;
}

/* POST /v1/reservations: the nodes are held for the gang (only it may use their free capacity)
 * until deleted or ENG_RESERVE_MS later; recorded in the store as an operator reservation. */
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
    int64_t now = kdrv_now(d);
    struct store_reservation r = {.kind = STORE_RES_OPERATOR,
                                  .gang = w->target,
                                  .nodes = names,
                                  .n_nodes = k,
                                  .created_ms = now,
                                  .expires_ms = now + ENG_RESERVE_MS,
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
    if (eng_hold_operator_drop(d->eng, id) != 0)
        return sched_fail(eb, SCHED_ENOENT, "reservation %lld not found", id);
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
    struct store_action a = {.ts_ms = kdrv_now(d),
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

/* Holds and reservation hints offered to the core (kb->snap.holds, reserve_hints), and the
 * running gangs' probation: the engine's view (eng_holds_view, eng_probation_view), over the
 * cycle's id maps (kdrv_ids_build). */
void kdrv_holds_offer(struct kdrv *d, struct kcache_build *kb, int64_t now)
{
    if (d->ids && kb->snap.running)
        eng_probation_view(d->eng, &d->ids->ids, kb->running, kb->n_running);
    if (!d->ids || eng_holds_view(d->eng, now, &d->ids->ids, &d->arena, &kb->snap) != 0) {
        LOG_ERROR(KDRV_MOD, "out of memory offering the holds: none offered this cycle");
        kb->snap.holds = kb->snap.reserve_hints = NULL;
        kb->snap.n_holds = kb->snap.n_reserve_hints = 0;
    }
}

/* The cycle's reservations into the engine (eng_cycle_reservations): a preemptor gets a hold on
 * the freed nodes until ENG_HOLD_MS after the latest cycle that reserved it; the starvation
 * reservations are the next cycle's hints (they keep a reservation on its nodes while those stay
 * as good, as in the simulator). */
void kdrv_holds_take(struct kdrv *d, const struct kcache_build *kb, const struct sched_result *res,
                     int64_t now)
{
    for (uint32_t r = 0; r < res->n_reservations; r++)
        LOG_DEBUG(KDRV_MOD, "reservation: gang=%s preemptor=%d nodes=%u",
                  kb->gangs[res->reservations[r].gang->id].key, res->reservations[r].preemptor,
                  res->reservations[r].n_nodes);
    if (d->ids && eng_cycle_reservations(d->eng, res, &d->ids->ids, now) != 0)
        LOG_ERROR(KDRV_MOD, "out of memory keeping the cycle's reservations");
}
