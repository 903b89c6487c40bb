/* sched/kube/driver_budget.c: a cycle's time budget and the gangs passed over after a cycle it
 * cut short (docs/daemon.md, "A cycle's time budget").
 *
 * The event loop does nothing else while the core runs, and a leader that has not renewed its
 * Lease within the renew deadline steps down: the core stops trying gangs KDRV_BUDGET_MARGIN_MS
 * short of that deadline, and within --cycle-budget when given (sched_snapshot.clock_ns). A
 * cut-short cycle places what it reached; the gangs it tried and could not place are passed
 * over by the cycles that follow (sched_snapshot.pass_over) until one ends uncut, so that each
 * cut cycle reaches gangs not tried yet. Owns: that set (struct kdrv.passed). Must not touch:
 * the core's decisions, the store, the network.
 */
#include "sched/kube/driver_int.h"

void kdrv_budget(struct kdrv *d, struct sched_snapshot *snap)
{
    int64_t left = INT64_MAX;
    if (d->lease)
        left = kube_lease_left_ms(d->lease) - KDRV_BUDGET_MARGIN_MS;
    if (d->o->cycle_budget_ms > 0 && d->o->cycle_budget_ms < left)
        left = d->o->cycle_budget_ms;
    if (left == INT64_MAX)
        return; /* no Lease, no flag: no budget */
    snap->clock_ns = uv_hrtime;
    snap->deadline_ns = uv_hrtime() + (uint64_t)(left > 0 ? left : 0) * 1000000u;
}

void kdrv_pass_over(const struct strmap *passed, struct kcache_build *kb, struct arena *a)
{
    if (passed->n == 0)
        return;
    bool *skip = arena_calloc(a, kb->n_pending + 1, sizeof(*skip));
    if (!skip)
        return; /* out of memory: every gang is tried, as after an uncut cycle */
    for (uint32_t i = 0; i < kb->n_pending; i++)
        skip[i] = strmap_get(passed, kb->gangs[i].key) != NULL;
    kb->snap.pass_over = skip;
    kb->snap.n_pass_over = kb->n_pending;
}

void kdrv_chain(struct strmap *passed, const struct kcache_build *kb,
                const struct sched_result *res)
{
    if (!res->cut_short) {
        strmap_fini(passed);
        return;
    }
    for (uint32_t v = 0; v < res->n_verdicts; v++) {
        const struct gang *g = res->verdicts[v].gang;
        bool holds = false; /* a reservation is kept by trying its gang at every cycle */
        for (uint32_t r = 0; r < res->n_reservations && !holds; r++)
            holds = res->reservations[r].gang == g;
        if (!holds && strmap_put(passed, kb->gangs[g->id].key, (void *)1, NULL) != 0)
            break; /* out of memory: that gang is tried again */
    }
}
