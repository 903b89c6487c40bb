/* sched/kube/driver_promise.c: backfill-on-probation promises across a restart or a change of
 * leader (docs/preemption.md "Backfill on probation").
 *
 * Owns: what the store's job rows keep of the engine's promises (store_job_reserve_put,
 * store_job_probation_put): a waiting gang's first starvation reservation of its wait (the time
 * backfill ahead of it promises to end by), written once per value in the cycle that made it;
 * a placed gang's promise (that time and the gang it was made to), written with its placement;
 * and, at the first cycle as leader, both given back to the engine (eng_job_reserved,
 * eng_job_restore_promise), as the simulator's --resume does from its "j:" rows. After a
 * wall-clock step, which moves both in the engine, the next cycle writes them all again. A row that
 * leaves the wait or the run drops them (the store's upsert rule: pending stays pending, admitted
 * or running stays admitted or running).
 *
 * Must not touch: the decisions, the engine's other state, the job rows' other columns.
 */
#include <stdio.h>

#include "sched/kube/driver_int.h"

/* After a wall-clock step (eng_clock_stepped moved each first reservation and each promise to
 * it together): every waiting gang's first reservation and every placed gang's promise written
 * again as the engine has them. Else a row written again (a first reservation the cycle makes
 * again) and one not (a running gang's promise, written at its placement only) would differ,
 * and a restore from them would void the promise. */
static int rewrite_stepped(struct kdrv *d, struct sched_errbuf *eb)
{
    int rc = 0;
    uint32_t bound = eng_job_bound_id(d->eng);
    for (uint32_t g = 0; rc == 0 && g < bound; g++) {
        struct eng_job j = eng_job(d->eng, g);
        const char *key = eng_names_name(d->gang_ids, g);
        if (!key)
            continue;
        if (j.reserve_first_ms > 0 && (j.state == ENG_JOB_NONE || j.state == ENG_JOB_PENDING)) {
            rc = store_job_reserve_put(d->db, key, j.reserve_first_ms, eb);
            struct kstatus *st = strmap_get(&d->status, key);
            if (rc == 0 && st)
                st->first_saved_ms = j.reserve_first_ms;
        }
        bool runs =
            j.state == ENG_JOB_ADMITTED || j.state == ENG_JOB_BINDING || j.state == ENG_JOB_RUNNING;
        const char *to =
            j.probation_for != ENG_NONE ? eng_names_name(d->gang_ids, j.probation_for) : NULL;
        if (rc == 0 && runs && j.probation_until_ms > 0 && to)
            rc = store_job_probation_put(d->db, key, j.probation_until_ms, to, eb);
    }
    return rc;
}

int kdrv_promise_record(struct kdrv *d, const struct kcache_build *kb,
                        const struct sched_result *res, struct sched_errbuf *eb)
{
    int rc = 0;
    if (d->promises_stepped) {
        rc = rewrite_stepped(d, eb);
        d->promises_stepped = rc != 0; /* (a failed record stops the daemon: kdrv_fatal) */
    }
    for (uint32_t r = 0; rc == 0 && r < res->n_reservations; r++) {
        const struct sched_reservation *rv = &res->reservations[r];
        if (rv->preemptor)
            continue; /* a preemptor's hold promises nothing */
        const char *key = kb->gangs[rv->gang->id].key;
        int64_t first = eng_job(d->eng, kdrv_gang_id(d, key)).reserve_first_ms;
        struct kstatus *st = strmap_get(&d->status, key);
        if (first <= 0 || (st && st->first_saved_ms == first))
            continue;
        rc = store_job_reserve_put(d->db, key, first, eb);
        if (rc == 0 && st)
            st->first_saved_ms = first;
    }
    for (uint32_t p = 0; rc == 0 && p < res->n_placements; p++) {
        const struct sched_placement *pl = &res->placements[p];
        const struct kgang *kg = &kb->gangs[pl->gang->id];
        if (kg->run)
            continue; /* an elastic gang's growth: its running part promised nothing */
        struct kstatus *st = strmap_get(&d->status, kg->key);
        if (st) /* its row left the wait (the upsert dropped it): a later wait writes anew */
            st->first_saved_ms = 0;
        /* the promise as driver_bind.c gives it to the engine (eng_job_probation): the first
         * reservation of the gang it was placed ahead of, none when that has none */
        const char *to = pl->probation_for ? kb->gangs[pl->probation_for->id].key : NULL;
        int64_t until = to ? eng_job(d->eng, kdrv_gang_id(d, to)).reserve_first_ms : 0;
        rc = store_job_probation_put(d->db, kg->key, until > 0 ? until : STORE_NO_TIME,
                                     until > 0 ? to : NULL, eb);
    }
    return rc;
}

struct restored {
    struct kdrv *d;
    struct strmap built; /* gang key -> its struct kgang in this cycle's build */
    uint32_t reserved, probation;
};

/* Whether the cycle's gang `key` is the one of the row submitted at submit_ms: a gang deleted
 * and created again under its name while no daemon ran is another one (its PodGroup's, or its
 * pod's, creationTimestamp differs), and inherits no promise, made by it or to it. */
static bool same_gang(const struct restored *r, const char *key, int64_t submit_ms)
{
    const struct kgang *kg = strmap_get(&r->built, key);
    return kg && submit_ms != STORE_NO_TIME && kg->gang.submit_ms == submit_ms;
}

/* One row's promises, given to the engine when the gang is as the row says: the same
 * submission, waiting (no engine state yet, or pending) with no first reservation of this
 * process, or running. Gangs this cycle does not have are left alone (their names are not
 * interned for it). A promise to a gang re-created since binds nothing: that gang's own row
 * is not restored, so its first reservation never equals the promise (eng_probation_view). */
static int restore_row(void *ctx, const struct store_promise *p)
{
    struct restored *r = ctx;
    struct kdrv *d = r->d;
    uint32_t g = eng_names_find(d->gang_ids, p->gang);
    if (g == ENG_NONE || !same_gang(r, p->gang, p->submit_ms))
        return 0;
    struct eng_job j = eng_job(d->eng, g);
    if (p->state == STORE_JOB_PENDING && p->reserve_first_ms > 0 && j.reserve_first_ms == 0 &&
        (j.state == ENG_JOB_NONE || j.state == ENG_JOB_PENDING)) {
        if (eng_job_reserved(d->eng, g, p->reserve_first_ms) != 0)
            return SCHED_ENOMEM;
        r->reserved++;
    }
    bool runs =
        j.state == ENG_JOB_ADMITTED || j.state == ENG_JOB_BINDING || j.state == ENG_JOB_RUNNING;
    uint32_t to = p->probation_for ? eng_names_find(d->gang_ids, p->probation_for) : ENG_NONE;
    if ((p->state == STORE_JOB_ADMITTED || p->state == STORE_JOB_RUNNING) && runs &&
        j.probation_until_ms == 0 && p->probation_until_ms > 0 && to != ENG_NONE) {
        if (eng_job_restore_promise(d->eng, g, 0, p->probation_until_ms, to) != 0)
            return SCHED_ENOMEM;
        r->probation++;
        LOG_DEBUG(KDRV_MOD, "promise restored: gang=%s until_ms=%lld for=%s", p->gang,
                  (long long)p->probation_until_ms, p->probation_for);
    }
    return 0;
}

void kdrv_promise_restore(struct kdrv *d, const struct kcache_build *kb)
{
    if (d->promises_restored || !d->db)
        return;
    d->promises_restored = true;
    struct restored r = {.d = d};
    strmap_init(&r.built);
    struct sched_errbuf eb = {{0}};
    int rc = 0;
    for (uint32_t g = 0; rc == 0 && g < kb->n_gangs;
         g++) /* an elastic gang's two parts: one key, one submission */
        if (!strmap_get(&r.built, kb->gangs[g].key))
            rc = strmap_put(&r.built, kb->gangs[g].key, (void *)&kb->gangs[g], NULL);
    if (rc == 0)
        rc = store_promise_list(d->db, restore_row, &r, &eb);
    strmap_fini(&r.built);
    if (rc != 0)
        LOG_WARN(KDRV_MOD, "backfill promises not all restored (those left run without one): %s",
                 eb.msg[0] ? eb.msg : "out of memory");
    if (r.reserved || r.probation)
        LOG_INFO(KDRV_MOD, "backfill promises restored: first_reservations=%u probations=%u",
                 r.reserved, r.probation);
}
