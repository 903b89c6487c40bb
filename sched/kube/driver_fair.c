/* sched/kube/driver_fair.c: the daemon's fair-share history (the rule and the state are the
 * engine's, sched/engine/fair.h; this file does the daemon's part of it):
 *   - restored from the store's fair_share table the first time a cycle runs with the store
 *     open (a start, or a new leader on the store it followed; the store is opened by the leader
 *     only, once per process);
 *   - before each cycle, integrated on the wall clock up to the cycle's time and offered to the
 *     core (sched_snapshot.hist_share), as the simulator does at each instant;
 *   - after the cycle's decisions, the share of the usage they leave taken (the snapshot's usage
 *     plus what the cycle placed), which holds until the next cycle;
 *   - written back in the cycle's store transaction, one row per configured queue, at most every
 *     KDRV_FAIR_WRITE_MS (and at the first cycle of the process). After a restart the interval
 *     since the last write is integrated as a gap (fair.h), with the share of the usage the
 *     first cycle sees: what is lost is the detail of the shares over that interval.
 * Queues the configuration no longer has keep their rows and their history as they were.
 */
#include <string.h>

#include "sched/engine/fair.h"
#include "sched/kube/driver_int.h"

#define KDRV_FAIR_WRITE_MS 10000 /* the fair_share rows are written at most this often */

struct restoring {
    struct kdrv *d;
    uint32_t n, dropped; /* rows restored, rows refused */
};

/* A row that cannot be read costs that queue's history only: an error naming the queue and the
 * field, the queue starts without history, the others are restored. */
static int restore_row(void *ctx, const char *queue, double share, int64_t updated_ms,
                       const char *bad)
{
    struct restoring *r = ctx;
    int rc = bad ? SCHED_EINVAL : eng_fair_restore(r->d->fair, queue, share, updated_ms);
    if (rc == SCHED_EINVAL) {
        r->dropped++;
        LOG_ERROR(KDRV_MOD,
                  "fair-share history: the row of queue %s in %s is dropped, the queue starts "
                  "without history: table=fair_share field=%s",
                  queue ? queue : "(none)", store_path(r->d->db),
                  bad ? bad : "share: not a finite number >= 0");
        return 0;
    }
    r->n += rc == 0;
    return rc;
}

/* The history the store keeps. A table that cannot be read costs the history, not the daemon:
 * every queue then starts without one, said in a warning. */
static int fair_restore(struct kdrv *d)
{
    struct sched_errbuf eb = {{0}};
    d->fair_restored = true;
    struct restoring r = {.d = d};
    int rc = store_history_scan(d->db, restore_row, &r, &eb);
    if (rc == 0) {
        LOG_INFO(KDRV_MOD, "fair-share history restored: queues=%u dropped=%u", r.n, r.dropped);
        return 0;
    }
    LOG_WARN(KDRV_MOD,
             "fair-share history not restored, every queue starts without history: error=%s",
             rc == SCHED_ENOMEM ? "out of memory" : eb.msg);
    eng_fair_free(d->fair);
    d->fair = eng_fair_new();
    return d->fair ? 0 : SCHED_ENOMEM;
}

int kdrv_fair_offer(struct kdrv *d, struct kcache_build *kb, const struct config *cfg, int64_t now)
{
    if (!cfg || cfg->n_queues == 0 || kb->snap.n_queues != cfg->n_queues)
        return 0;
    if (!d->fair && !(d->fair = eng_fair_new()))
        return SCHED_ENOMEM;
    if (!d->fair_restored && d->db && fair_restore(d) != 0)
        return SCHED_ENOMEM;
    double *hist = arena_calloc(&d->arena, cfg->n_queues, sizeof(*hist));
    if (!hist || eng_fair_advance(d->fair, cfg, kb->snap.usage, &d->arena, now, hist) != 0)
        return SCHED_ENOMEM;
    kb->snap.hist_share = hist;
    return 0;
}

/* The snapshot's usage plus the requests of the gangs the cycle placed (charged to their
 * queue and flavor, as the simulator's admission charges them); NULL when out of memory. */
static int64_t *usage_after(struct kdrv *d, const struct kcache_build *kb,
                            const struct sched_result *res, const struct config *cfg)
{
    size_t n = (size_t)cfg->n_queues * cfg->n_flavors * RES_MAX;
    int64_t *u = arena_calloc(&d->arena, n + 1, sizeof(*u));
    if (!u)
        return NULL;
    memcpy(u, kb->snap.usage, n * sizeof(*u));
    for (uint32_t p = 0; p < res->n_placements; p++) {
        const struct sched_placement *pl = &res->placements[p];
        if (pl->gang->queue >= cfg->n_queues || pl->flavor >= cfg->n_flavors)
            continue;
        struct res_vec need;
        gang_request(pl->gang, &need);
        int64_t *at = u + ((size_t)pl->gang->queue * cfg->n_flavors + pl->flavor) * RES_MAX;
        for (int k = 0; k < res_count(); k++)
            at[k] += need.v[k];
    }
    return u;
}

int kdrv_fair_record(struct kdrv *d, const struct kcache_build *kb, const struct sched_result *res,
                     const struct config *cfg, int64_t now, struct sched_errbuf *eb)
{
    if (!d->fair || !kb->snap.hist_share)
        return 0; /* no queues offered (or no configuration): nothing to integrate */
    const int64_t *after = usage_after(d, kb, res, cfg);
    if (!after || eng_fair_take(d->fair, cfg, after, &d->arena) != 0) {
        /* the cycle's decisions stand: only this observation is lost */
        if (!after)
            eng_fair_skip(d->fair);
        LOG_ERROR(KDRV_MOD, "fair-share history: out of memory taking the shares this cycle "
                            "leaves; not recorded, the next cycle integrates the interval with "
                            "the usage it sees");
    }
    if (d->fair_written && now < d->fair_written_ms + KDRV_FAIR_WRITE_MS)
        return 0;
    int rc = 0;
    for (uint32_t q = 0; rc == 0 && q < cfg->n_queues; q++) {
        double hist;
        int64_t at;
        if (eng_fair_find(d->fair, cfg->queues[q].name, &hist, &at))
            rc = store_history_put(d->db, cfg->queues[q].name, hist, at, eb);
    }
    if (rc == 0) {
        d->fair_written = true;
        d->fair_written_ms = now;
    }
    return rc;
}
