/* sched/kube/driver_record.c: what the Kubernetes driver persists about jobs and cycles.
 *
 * Owns: the jobs charged to the ledger (d->jobs, struct kjob), adopting running gangs at the
 * first cycle, reconciling jobs and ledger with the cluster (sync_jobs, job_finished), the
 * waiting rows of gangs not offered to the core, and the one transaction that records a cycle
 * (decisions, verdicts once each, preemptions, job rows, bind intents).
 *
 * Must not touch: the API server (it sends no request), the binds once sent (driver_bind.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kube/driver_int.h"

/* FNV-1a of a verdict and its text: whether the decision log already has it. Never 0. */
void kdrv_verdict_text(const struct kcache_build *kb, const struct sched_verdict *vd,
                       const struct config *cfg, char *buf, size_t n)
{
    sched_verdict_format(vd, kb->snap.cluster, cfg, buf, n);
    const char *hint = kb->gangs[vd->gang->id].hint;
    bool capacity = vd->why == SCHED_WHY_RESOURCES || vd->why == SCHED_WHY_TOPOLOGY ||
                    vd->why == SCHED_WHY_NEVER || vd->why == SCHED_WHY_NO_NODES;
    size_t at = strlen(buf);
    if (hint && capacity && at + 3 < n)
        snprintf(buf + at, n - at, "; %s", hint);
}

static uint32_t verdict_key(int why, const char *text)
{
    uint32_t h = 2166136261u ^ (uint32_t)why;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h ? h : 1;
}

void kdrv_kjob_free(struct kjob *j)
{
    if (j) {
        free(j->queue);
        free(j->flavor);
        free(j);
    }
}

/* The ledger's resource name of device kind k: the device's for kind 0. */
static const char *kind_res(int k)
{
    return k > 0 ? res_name(res_kind_res(k)) : device_resource();
}

/* Charges (sign +1) or releases (-1) a job's devices of kind `kind` in the ledger and tracks it
 * in d->jobs. */
static int charge(struct kdrv *d, const char *gang, const char *queue, const char *flavor,
                  int64_t gpus, int kind, int sign, struct sched_errbuf *eb)
{
    if (sign > 0) {
        struct kjob *j = calloc(1, sizeof(*j));
        void *old = NULL;
        if (!j || !(j->queue = strdup(queue)) ||
            !(j->flavor = strdup(flavor ? flavor : "default")) ||
            strmap_put(&d->jobs, gang, j, &old) != 0) {
            kdrv_kjob_free(j);
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        }
        j->gpus = gpus;
        j->kind = kind;
        j->seen = true;
        if (old) { /* charged already: replace, not add twice */
            struct kjob *o = old;
            int rc = store_ledger_add(d->db, o->queue, o->flavor, kind_res(o->kind), -o->gpus, eb);
            kdrv_kjob_free(o);
            if (rc)
                return rc;
        }
        LOG_DEBUG(KDRV_MOD, "charged: gang=%s queue=%s flavor=%s gpus=%lld", gang, queue, j->flavor,
                  (long long)gpus);
        return store_ledger_add(d->db, queue, j->flavor, kind_res(kind), gpus, eb);
    }
    struct kjob *j = strmap_del(&d->jobs, gang);
    if (!j)
        return 0;
    LOG_DEBUG(KDRV_MOD, "released: gang=%s queue=%s flavor=%s gpus=%lld", gang, j->queue, j->flavor,
              (long long)j->gpus);
    int rc = store_ledger_add(d->db, j->queue, j->flavor, kind_res(j->kind), -j->gpus, eb);
    kdrv_kjob_free(j);
    return rc;
}

int kdrv_job_charge(struct kdrv *d, const char *gang, const char *queue, const char *flavor,
                    int64_t gpus, int sign, struct sched_errbuf *eb)
{
    return charge(d, gang, queue, flavor, gpus, 0, sign, eb);
}

int kdrv_job_charge_gang(struct kdrv *d, const char *key, const char *queue, const char *flavor,
                         const struct gang *g, struct sched_errbuf *eb)
{
    return charge(d, key, queue, flavor, g->gpus, gang_kind(g), +1, eb);
}

int kdrv_job_recharge(struct kdrv *d, const char *gang, int64_t gpus, struct sched_errbuf *eb)
{
    const struct kjob *j = strmap_get(&d->jobs, gang);
    if (!j)
        return 0;
    char *queue = strdup(j->queue), *flavor = strdup(j->flavor);
    int rc = queue && flavor ? charge(d, gang, queue, flavor, gpus, j->kind, +1, eb)
                             : sched_fail(eb, SCHED_ENOMEM, "out of memory");
    free(queue);
    free(flavor);
    return rc;
}

/* A running gang's placements, job row and ledger charge are its members' (gangctl's nodes and
 * GPUs): the rows of members that left go (an elastic gang runs on with fewer), its GPUs are
 * theirs. The charge follows the members that left whoever evicted them (this process after a
 * handshake, kdrv_record_shrunk at once; an earlier leader whose evictions land now; a user):
 * the ledger stays equal to the job rows (store check's rule). left: members left since the
 * last cycle (their placed pods may be gone already: a shrink releases them at once, and a new
 * leader that adopted the gang charged it with them). */
static int sync_members(struct kdrv *d, const struct kgang *kg, bool left, struct sched_errbuf *eb)
{
    const char **keys = arena_calloc(&d->arena, kg->gang.n_pods + 1, sizeof(*keys));
    if (!keys)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < kg->gang.n_pods; i++)
        keys[i] = kg->members[i]->key;
    uint32_t gone = 0;
    int rc = store_placement_keep(d->db, kg->key, keys, kg->gang.n_pods, &gone, eb);
    if (rc == 0 && (gone > 0 || left)) /* the charge (replacing its kjob) and the running row */
        rc = kdrv_record_shrunk(d, kg->key, kg->gang.gpus, NULL, NULL, 0, eb);
    return rc;
}

/* Records a running gang the store does not know as running (bound by an earlier leader, or
 * before a crash), or whose running row disagrees with its members (an earlier leader evicted
 * some alone and they are still there, being deleted or their eviction lost): its job row and
 * its placed pods are its members now, as is its charge. r: its entry in the snapshot's running
 * gangs (its flavor), or NULL. */
static int adopt_running(struct kdrv *d, const struct kgang *kg, const struct sched_running *r,
                         const struct config *cfg, int64_t now, struct sched_errbuf *eb)
{
    uint32_t flavor = r ? r->flavor : 0;
    struct store_job old;
    bool known = store_job_get(d->db, kg->key, &old, NULL) == 0 && old.state == STORE_JOB_RUNNING;
    int rc = 0;
    if (!known || old.gpus != kg->gang.gpus) {
        struct store_pod *pods = arena_calloc(&d->arena, kg->gang.n_pods, sizeof(*pods));
        if (!pods)
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < kg->gang.n_pods; i++) {
            const struct kpod *p = kg->members[i];
            pods[i] = (struct store_pod){.index = i,
                                         .name = p->key,
                                         .node = p->node ? p->node : "",
                                         .gpu_mask = p->gpu_mask};
        }
        rc = store_journal_done(d->db, kg->key, STORE_ALL_PODS, STORE_BIND_ROLLED_BACK, now, NULL,
                                eb);
        if (rc == 0)
            rc = store_placement_release(d->db, kg->key, NULL, eb);
        if (rc == 0)
            rc = store_journal_intent(d->db, kg->key, d->cycle, now, pods, kg->gang.n_pods, eb);
        if (rc == 0)
            rc =
                store_journal_done(d->db, kg->key, STORE_ALL_PODS, STORE_BIND_BOUND, now, NULL, eb);
        struct store_job j = {.gang = kg->key,
                              .gang_id = -1,
                              .queue = cfg->queues[kg->gang.queue].name,
                              .flavor = kdrv_flavor_name(cfg, flavor),
                              .gpus = kg->gang.gpus,
                              .state = STORE_JOB_RUNNING,
                              .submit_ms = kg->gang.submit_ms,
                              .admit_ms = now,
                              .start_ms = now,
                              .finish_ms = STORE_NO_TIME,
                              .user = kcache_user_name(d->cache, kg->gang.user)};
        struct store_job prev;
        if (store_job_get(d->db, kg->key, &prev, NULL) == 0) {
            j.preemptions = prev.preemptions;
            j.restarts = prev.restarts;
        }
        if (known) { /* the same run */
            j.admit_ms = old.admit_ms;
            j.start_ms = old.start_ms;
            LOG_INFO(KDRV_MOD,
                     "running job recorded again from its members: gang=%s gpus=%lld "
                     "row_gpus=%lld",
                     kg->key, (long long)kg->gang.gpus, (long long)old.gpus);
        }
        if (rc == 0)
            rc = store_job_upsert(d->db, &j, eb);
    }
    if (rc == 0)
        rc = kdrv_job_charge_gang(d, kg->key, cfg->queues[kg->gang.queue].name,
                                  kdrv_flavor_name(cfg, flavor), &kg->gang, eb);
    return rc;
}

int kdrv_strlist_add(struct strlist *l, const char *str)
{
    if (l->n == l->cap) {
        uint32_t nc = l->cap ? l->cap * 2 : 16;
        char **nv = realloc(l->v, nc * sizeof(*nv));
        if (!nv)
            return SCHED_ENOMEM;
        l->v = nv;
        l->cap = nc;
    }
    if (!(l->v[l->n] = strdup(str)))
        return SCHED_ENOMEM;
    l->n++;
    return 0;
}

void kdrv_strlist_free(struct strlist *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

struct ledger_rows {
    struct store *db;
    struct strlist l;
};

/* Device ledger rows (every kind: store_is_device, the store's rule) with an amount, as queue,
 * flavor and resource triples. */
static int collect_ledger(void *ctx, const struct store_ledger_row *r)
{
    struct ledger_rows *lr = ctx;
    if (r->amount == 0 || !store_is_device(lr->db, r->resource))
        return 0;
    int rc = kdrv_strlist_add(&lr->l, r->queue);
    rc = rc ? rc : kdrv_strlist_add(&lr->l, r->flavor);
    return rc ? rc : kdrv_strlist_add(&lr->l, r->resource);
}

/* Sets every GPU ledger row to 0 (the first cycle as leader recharges what runs). */
static int zero_ledger(struct kdrv *d, struct sched_errbuf *eb)
{
    struct ledger_rows lr = {.db = d->db};
    int rc = store_ledger_list(d->db, collect_ledger, &lr, eb);
    if (rc == SCHED_ENOMEM)
        rc = sched_fail(eb, rc, "out of memory");
    for (uint32_t i = 0; rc == 0 && i + 2 < lr.l.n; i += 3)
        rc = store_ledger_set(d->db, lr.l.v[i], lr.l.v[i + 1], lr.l.v[i + 2], 0, eb);
    kdrv_strlist_free(&lr.l);
    return rc;
}

struct stale_ctx {
    struct kdrv *d;
    struct strlist gangs;
};

static int collect_stale(void *ctx, const struct store_job *j)
{
    struct stale_ctx *sc = ctx;
    if (j->state != STORE_JOB_ADMITTED && j->state != STORE_JOB_RUNNING)
        return 0;
    if (strmap_get(&sc->d->jobs, j->gang))
        return 0;
    return kdrv_strlist_add(&sc->gangs, j->gang);
}

static int job_finished(struct kdrv *d, const char *gang, int64_t now, struct sched_errbuf *eb)
{
    struct store_job old;
    int rc = store_job_get(d->db, gang, &old, eb);
    uint32_t id = eng_names_find(d->gang_ids, gang); /* a row of an earlier process: unknown */
    struct eng_job ej = eng_job(d->eng, id);
    /* a victim asked to checkpoint runs until it is evicted: one that ends in its grace finished
     * (its finish time, no preemption counted: kdrv_record_evicted never ran for it) */
    bool ran = id != ENG_NONE && (ej.state == ENG_JOB_RUNNING || kdrv_job_in_grace(ej));
    if (rc == 0 && ran)
        kdrv_est_learn(d, &old, now); /* ended by itself, not torn down by us */
    if (rc == 0) {
        struct store_job j = old;
        char *g = strdup(gang), *q = strdup(old.queue);
        if (!g || !q) {
            free(g);
            free(q);
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        }
        j.gang = g;
        j.queue = q;
        j.flavor = NULL;
        j.state = STORE_JOB_FINISHED;
        /* a run this process did not see running (left RUNNING by an earlier process, ended
         * while none ran): when it ended is not known, and now is not it (the estimates would
         * learn the downtime as run time, driver_est.c) */
        j.finish_ms = old.state == STORE_JOB_RUNNING && !ran ? STORE_NO_TIME : now;
        rc = store_job_upsert(d->db, &j, eb);
        free(g);
        free(q);
    } else if (rc == SCHED_ENOENT) {
        rc = 0;
    }
    if (rc == 0)
        rc = store_placement_release(d->db, gang, NULL, eb);
    if (rc == 0)
        rc = kdrv_job_charge(d, gang, NULL, NULL, 0, -1, eb);
    if (rc == 0 && ran)
        rc = eng_job_finish(d->eng, id) == 0 ? 0 : sched_fail(eb, SCHED_ENOMEM, "out of memory");
    return rc;
}

int kdrv_run_ended(struct kdrv *d, const char *gang, const struct store_job *old, int64_t now,
                   struct sched_errbuf *eb)
{
    if (old->state != STORE_JOB_RUNNING || old->start_ms == STORE_NO_TIME || now < old->start_ms)
        return 0;
    return store_job_ran_put(d->db, gang, old->ran_ms + (now - old->start_ms), eb);
}

int kdrv_record_evicted(struct kdrv *d, const char *victim, const char *queue, int64_t now,
                        struct sched_errbuf *eb)
{
    /* back to pending: a preemption never counts against its retry budget */
    struct store_job old;
    int rc = 0;
    if (store_job_get(d->db, victim, &old, NULL) == 0) {
        struct store_job j = old;
        j.gang = victim;
        j.queue = queue ? queue : old.queue;
        j.flavor = NULL;
        j.state = STORE_JOB_PENDING;
        j.admit_ms = j.start_ms = STORE_NO_TIME;
        j.preemptions = old.preemptions + 1;
        rc = store_job_upsert(d->db, &j, eb);
        if (rc == 0)
            rc = kdrv_run_ended(d, victim, &old, now, eb);
    }
    if (rc == 0)
        rc = kdrv_job_charge(d, victim, NULL, NULL, 0, -1, eb);
    if (rc == 0)
        rc = store_placement_release(d->db, victim, NULL, eb);
    return rc;
}

/* Keeps the jobs and the GPU ledger equal to the cluster: running gangs of the cycle's input are
 * charged, gangs no longer running (finished, deleted, evicted) are released. The first cycle
 * as leader reconciles whatever an earlier process left. Runs inside the cycle's transaction. */
static int sync_jobs(struct kdrv *d, const struct kcache_build *kb, const struct config *cfg,
                     int64_t now, struct sched_errbuf *eb)
{
    int rc = 0;
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->jobs, &i, &k, &v);)
        ((struct kjob *)v)->seen = false;
    if (!d->jobs_synced) /* start from an empty ledger: every running gang is charged below */
        rc = zero_ledger(d, eb);
    const struct sched_running **run_of = NULL; /* by gang id, made for the first adoption */
    for (uint32_t g = kb->n_pending; rc == 0 && g < kb->n_gangs; g++) {
        const struct kgang *kg = &kb->gangs[g];
        struct kjob *j = strmap_get(&d->jobs, kg->key);
        if (j) {
            j->seen = true;
            /* its first cycle charged (members may have gone while no process ran), or
             * members of an elastic gang left and it runs on (a join placed recharged it:
             * its first cycle again) */
            if (j->pods == 0 || kg->gang.n_pods < j->pods) /* a charge anew replaces j */
                rc = sync_members(d, kg, j->pods > 0 && kg->gang.n_pods < j->pods, eb);
            if (rc == 0 && (j = strmap_get(&d->jobs, kg->key))) /* a new one is seen too */
                j->pods = kg->gang.n_pods;
            continue;
        }
        struct eng_job ej = eng_job(d->eng, kdrv_gang_id(d, kg->key));
        if (ej.state == ENG_JOB_TEARING && !kdrv_job_in_grace(ej))
            continue; /* a teardown released it already; a victim asked to checkpoint has not */
        if (!run_of) {
            if (!(run_of = arena_calloc(&d->arena, kb->n_gangs, sizeof(*run_of))))
                return sched_fail(eb, SCHED_ENOMEM, "out of memory");
            for (uint32_t i = 0; i < kb->snap.n_running; i++)
                if (kb->snap.running[i].gang->id < kb->n_gangs)
                    run_of[kb->snap.running[i].gang->id] = &kb->snap.running[i];
        }
        rc = adopt_running(d, kg, run_of[kg->gang.id], cfg, now, eb);
        if (rc == 0) /* placed pods of members gone while no process ran */
            rc = sync_members(d, kg, false, eb);
        struct kjob *a = rc == 0 ? strmap_get(&d->jobs, kg->key) : NULL;
        if (a) /* charged with these members: one that goes before the next cycle is seen */
            a->pods = kg->gang.n_pods;
    }
    /* gangs charged but no longer running */
    struct stale_ctx sc = {.d = d};
    for (size_t i = 0; rc == 0 && strmap_next(&d->jobs, &i, &k, &v);)
        if (!((struct kjob *)v)->seen && kdrv_strlist_add(&sc.gangs, k) != 0)
            rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (rc == 0 && !d->jobs_synced) /* rows of an earlier process that are not running now */
        rc = store_job_list(d->db, collect_stale, &sc, eb);
    if (rc == SCHED_ENOMEM)
        rc = sched_fail(eb, rc, "out of memory");
    for (uint32_t i = 0; rc == 0 && i < sc.gangs.n; i++)
        rc = job_finished(d, sc.gangs.v[i], now, eb);
    kdrv_strlist_free(&sc.gangs);
    if (rc == 0)
        d->jobs_synced = true;
    return rc;
}

/* A gang not offered to the core (pods missing, no or unknown queue, invalid spec): a job row
 * (its queue label, or "-"; GPUs unknown yet: 0) and a decision naming why, so that `gangctl
 * jobs` lists it and `explain` finds it. The store keeps one decision row per change. */
int kdrv_waiting_gang_records(struct kdrv *d, const struct kwaiting *w, int64_t now,
                              struct sched_errbuf *eb)
{
    struct store_job old;
    int rc = 0;
    if (store_job_get(d->db, w->key, &old, NULL) == SCHED_ENOENT) {
        struct store_job j = {.gang = w->key,
                              .gang_id = -1,
                              .queue = w->queue ? w->queue : "-",
                              .state = STORE_JOB_PENDING,
                              .submit_ms = now,
                              .admit_ms = STORE_NO_TIME,
                              .start_ms = STORE_NO_TIME,
                              .finish_ms = STORE_NO_TIME};
        rc = store_job_upsert(d->db, &j, eb);
    }
    char text[600];
    snprintf(text, sizeof(text), "waiting: %s (%s)", w->message ? w->message : "", w->reason);
    struct store_decision dec = {
        .cycle = d->cycle, .ts_ms = now, .gang = w->key, .why = STORE_WHY_WAITING, .reason = text};
    return rc ? rc : store_decision_add(d->db, &dec, eb);
}

/* A gang waiting in a queue (a verdict, or a held queue) has a job row, so that `gangctl jobs`
 * lists it and `gangctl explain` finds it; a placeholder row of a gang that waited for its pods
 * (no GPUs known) takes its queue and GPUs once it has them. */
int kdrv_waiting_job_row(struct kdrv *d, const char *key, const char *queue, const struct gang *g,
                         struct sched_errbuf *eb)
{
    struct store_job old;
    int got = store_job_get(d->db, key, &old, NULL);
    if (got == 0 && !(old.state == STORE_JOB_PENDING && old.gpus == 0 && g->gpus > 0))
        return 0;
    if (got != 0 && got != SCHED_ENOENT)
        return 0;
    struct store_job j = {.gang = key,
                          .gang_id = -1,
                          .queue = queue,
                          .gpus = g->gpus,
                          .state = STORE_JOB_PENDING,
                          .submit_ms = g->submit_ms,
                          .admit_ms = STORE_NO_TIME,
                          .start_ms = STORE_NO_TIME,
                          .finish_ms = STORE_NO_TIME,
                          .user = kcache_user_name(d->cache, g->user)};
    return store_job_upsert(d->db, &j, eb);
}

/* The decision log of a cycle's verdicts (gangs examined and not placed) and their job rows. */
static int record_verdicts(struct kdrv *d, const struct kcache_build *kb,
                           const struct sched_result *res, const struct config *cfg, int64_t now,
                           struct sched_errbuf *eb)
{
    /* each gang's expected start, by gang id */
    const struct sched_eta **eta_of = arena_calloc(&d->arena, kb->n_gangs + 1, sizeof(*eta_of));
    int rc = eta_of ? 0 : sched_fail(eb, SCHED_ENOMEM, "out of memory");
    if (eta_of)
        eta_index(res, eta_of, kb->n_gangs);
    for (uint32_t v = 0; rc == 0 && v < res->n_verdicts; v++) {
        const struct sched_verdict *vd = &res->verdicts[v];
        const struct kgang *kg = &kb->gangs[vd->gang->id];
        char reason[768];
        kdrv_verdict_text(kb, vd, cfg, reason, sizeof(reason));
        /* the store keeps one row per change of verdict with its latest text; what it has
         * already is not sent again (a store read per gang and cycle otherwise), unless the
         * expected start moved (store_decision_eta_moved, the simulator's rule) */
        struct kstatus *st = strmap_get(&d->status, kg->key);
        if (!st && (st = calloc(1, sizeof(*st))) && strmap_put(&d->status, kg->key, st, NULL)) {
            free(st);
            st = NULL;
        }
        char note[64];
        struct store_decision dec = {.cycle = d->cycle,
                                     .ts_ms = now,
                                     .gang = kg->key,
                                     .why = (int)vd->why,
                                     .reason = reason};
        eta_for_log(eta_of[vd->gang->id], now, &dec.has_eta, &dec.eta_ms, note, sizeof(note));
        dec.eta = note[0] ? note : NULL;
        int64_t at = dec.has_eta && !dec.eta ? dec.eta_ms : INT64_MIN;
        uint32_t h = verdict_key((int)vd->why, reason);
        if (st && st->logged == h && !store_decision_eta_moved(st->logged_eta, at, now))
            continue;
        rc = store_decision_add(d->db, &dec, eb);
        if (rc == 0 && kg->run && strmap_put(&d->joining, kg->key, (void *)1, NULL) != 0)
            rc = sched_fail(eb, SCHED_ENOMEM, "out of memory"); /* members' verdict logged */
        if (rc == 0)
            rc = kdrv_waiting_job_row(d, kg->key, cfg->queues[vd->gang->queue].name, vd->gang, eb);
        if (rc == 0 && st) {
            st->logged = h;
            st->logged_eta = at;
        }
    }
    return rc;
}

/* The reason of a placement's decision: "placed", or for backfill on probation its promise (the
 * first expected start of the reservation it was backfilled ahead of, which the engine keeps:
 * docs/preemption.md, "Backfill on probation"). A promise already past at `now` is no promise:
 * the starving gang may evict it at once, and the reason says so. In buf. */
static const char *placed_reason(struct kdrv *d, const struct kcache_build *kb,
                                 const struct sched_placement *pl, int64_t now, char *buf, size_t n)
{
    if (!pl->probation_for || kb->gangs[pl->gang->id].run) /* elastic growth: see binds */
        return "placed";
    const char *to = kb->gangs[pl->probation_for->id].key;
    int64_t until = eng_job(d->eng, kdrv_gang_id(d, to)).reserve_first_ms;
    if (until <= 0)
        return "placed";
    char t[48];
    kobj_format_time(until, t, sizeof(t));
    return sched_placed_format(to, t, until <= now, buf, n);
}

/* A placement's bind intents, decision, job row and charge. The members of an elastic gang that
 * join running ones are numbered after its placed pods, and its job stays running with their
 * GPUs added (charged whole); otherwise the job is admitted with the gang's GPUs. */
static int record_placement(struct kdrv *d, const struct kcache_build *kb,
                            const struct sched_placement *pl, const struct config *cfg, int64_t now,
                            struct sched_errbuf *eb)
{
    const struct kgang *kg = &kb->gangs[pl->gang->id], *run = kg->run;
    struct store_pod *pods = arena_calloc(&d->arena, pl->gang->n_pods, sizeof(*pods));
    if (!pods)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    /* pods placed before: only a gang that runs in kb has any (sync_jobs, earlier in this
     * transaction, released the others'): no query for the others (base 0) */
    uint32_t base = 0;
    int rc = run ? store_placement_next(d->db, kg->key, &base, eb) : 0;
    for (uint32_t i = 0; rc == 0 && i < pl->gang->n_pods; i++)
        pods[i] = (struct store_pod){.index = base + i,
                                     .name = kg->members[i]->key,
                                     .node = kb->snap.cluster->nodes[pl->pods[i].node].name,
                                     .gpu_mask = pl->pods[i].gpu_mask};
    if (rc == 0)
        rc = store_journal_intent(d->db, kg->key, d->cycle, now, pods, pl->gang->n_pods, eb);
    if (rc == 0) {
        char why[640];
        struct store_decision dec = {.cycle = d->cycle,
                                     .ts_ms = now,
                                     .gang = kg->key,
                                     .why = SCHED_WHY_PLACED,
                                     .reason = placed_reason(d, kb, pl, now, why, sizeof(why))};
        rc = store_decision_add(d->db, &dec, eb);
        kdrv_forget_logged(d, kg->key);
        strmap_del(&d->joining, kg->key); /* they join: "placed" says nothing waits */
    }
    struct store_job old; /* a restart keeps its counters, a join its start */
    bool had = rc == 0 && store_job_get(d->db, kg->key, &old, NULL) == 0;
    bool joins = run && had && old.state == STORE_JOB_RUNNING;
    /* what the job holds once bound: a join adds its members to what the running ones are
     * charged now, the row (members this cycle evicted alone are uncharged already), not the
     * GPUs of the cycle's input, which still has them */
    struct gang whole = *pl->gang;
    whole.gpus += joins ? old.gpus : run ? run->gang.gpus : 0;
    if (rc == 0) {
        struct store_job j = {.gang = kg->key,
                              .gang_id = -1,
                              .queue = cfg->queues[pl->gang->queue].name,
                              .flavor = kdrv_flavor_name(cfg, pl->flavor),
                              .gpus = whole.gpus,
                              .state = joins ? STORE_JOB_RUNNING : STORE_JOB_ADMITTED,
                              .submit_ms = joins ? old.submit_ms : pl->gang->submit_ms,
                              .admit_ms = joins ? old.admit_ms : now,
                              .start_ms = joins ? old.start_ms : STORE_NO_TIME,
                              .finish_ms = STORE_NO_TIME,
                              .preemptions = had ? old.preemptions : 0,
                              .restarts = had ? old.restarts : 0,
                              .user = kcache_user_name(d->cache, pl->gang->user)};
        rc = store_job_upsert(d->db, &j, eb);
    }
    if (rc == 0)
        rc = kdrv_job_charge_gang(d, kg->key, cfg->queues[pl->gang->queue].name,
                                  kdrv_flavor_name(cfg, pl->flavor), &whole, eb);
    return rc;
}

/* Whether gang `key` has a pending part in this cycle's input that joins its running part. */
static bool members_wait(struct kdrv *d, const struct kcache_build *kb, const char *key)
{
    uint32_t id = kdrv_gang_id(d, key);
    uint32_t ix = d->ids && id < d->ids->n_core_gang ? d->ids->core_gang[id] : ENG_NONE;
    return ix < kb->n_gangs && kb->gangs[ix].run; /* the pending part comes first (kdrv_ids) */
}

/* Running gangs whose members waited to join them (d->joining): when none waits any more
 * (their pods deleted, never joined) a decision row says so, for the decision log's newest row
 * is what `gangctl jobs` shows of a running gang's waiting members (store/views.c); without it
 * their last verdict would stay. One lookup per such gang and cycle. */
static int record_members_gone(struct kdrv *d, const struct kcache_build *kb, int64_t now,
                               struct sched_errbuf *eb)
{
    struct strlist gone = {0};
    const char *k;
    void *v;
    int rc = 0;
    for (size_t i = 0; rc == 0 && d->joining.n && strmap_next(&d->joining, &i, &k, &v);)
        if (!members_wait(d, kb, k) && kdrv_strlist_add(&gone, k))
            rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    for (uint32_t i = 0; rc == 0 && i < gone.n; i++) {
        strmap_del(&d->joining, gone.v[i]);
        if (!strmap_get(&d->jobs, gone.v[i]))
            continue; /* no longer running: its job row says what it is */
        struct store_decision dec = {
            .cycle = d->cycle,
            .ts_ms = now,
            .gang = gone.v[i],
            .why = SCHED_WHY_PLACED,
            .reason = "placed: it runs on with the members it has; those that waited to join "
                      "it are gone"};
        rc = store_decision_add(d->db, &dec, eb);
        kdrv_forget_logged(d, gone.v[i]);
    }
    kdrv_strlist_free(&gone);
    return rc;
}

/* The placed pods of running gang kg without its members gone[0 .. n) (kdrv_record_shrunk). */
static int keep_placed(struct kdrv *d, const struct kgang *kg, const uint32_t *gone, uint32_t n,
                       struct sched_errbuf *eb)
{
    const char **keep = arena_calloc(&d->arena, kg->gang.n_pods + 1, sizeof(*keep));
    if (!keep)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    uint32_t k = 0;
    for (uint32_t m = 0; m < kg->gang.n_pods; m++) {
        bool out = false;
        for (uint32_t i = 0; i < n && !out; i++)
            out = gone[i] == m;
        if (!out)
            keep[k++] = kg->members[m]->key;
    }
    return store_placement_keep(d->db, kg->key, keep, k, NULL, eb);
}

int kdrv_record_shrunk(struct kdrv *d, const char *gang, int64_t gpus, const struct kgang *kg,
                       const uint32_t *gone, uint32_t n_gone, struct sched_errbuf *eb)
{
    struct store_job j;
    int rc = kg && n_gone ? keep_placed(d, kg, gone, n_gone, eb) : 0;
    if (rc == 0)
        rc = kdrv_job_recharge(d, gang, gpus, eb);
    if (rc == 0 && store_job_get(d->db, gang, &j, NULL) == 0 && j.state == STORE_JOB_RUNNING) {
        j.gpus = gpus;
        rc = store_job_upsert(d->db, &j, eb);
    }
    return rc;
}

void kdrv_record_apart(struct kdrv *d, const char *gang, const char *queue, int64_t gpus,
                       const struct kgang *kg, const uint32_t *gone, uint32_t n_gone, int64_t now)
{
    struct sched_errbuf eb = {{0}};
    int rc = d->db ? store_begin(d->db, &eb) : 0;
    if (rc == 0 && d->db)
        rc = gpus >= 0 ? kdrv_record_shrunk(d, gang, gpus, kg, gone, n_gone, &eb)
                       : kdrv_record_evicted(d, gang, queue, now, &eb);
    if (rc == 0 && d->db)
        rc = store_commit(d->db, &eb);
    if (rc != 0) {
        if (d->db)
            store_rollback(d->db);
        kdrv_fatal(d, eb.msg);
    }
}

int kdrv_record_cycle(struct kdrv *d, const struct kcache_build *kb, const struct sched_result *res,
                      const struct config *cfg, int64_t now, struct sched_errbuf *eb)
{
    int rc = store_begin(d->db, eb);
    if (rc == 0)
        rc = sync_jobs(d, kb, cfg, now, eb);
    if (rc == 0)
        rc = record_verdicts(d, kb, res, cfg, now, eb);
    for (uint32_t e = 0; rc == 0 && e < res->n_evictions; e++) {
        const struct sched_eviction *ev = &res->evictions[e];
        const struct gang *vg = ev->victim->gang;
        struct store_preemption p = {.cycle = d->cycle,
                                     .ts_ms = now,
                                     .victim = kb->gangs[vg->id].key,
                                     .preemptor = kb->gangs[ev->preemptor->id].key,
                                     .gpus = ev->gpus,
                                     .lost_work_gpu_s = ev->lost_gpu_s,
                                     .cost = ev->cost,
                                     .kind = sched_preempt_kind_name(ev->kind)};
        p.members = ev->pods ? ev->n_pods : 0; /* a shrink: the members evicted */
        rc = store_preemption_add(d->db, &p, eb);
        if (rc == 0 && ev->pods) { /* it runs on, charged for what stays: now, or when its
                                      checkpoint handshake ends (driver_shrink.c) */
            if (!kdrv_ckpt_asks(&kb->gangs[vg->id], cfg))
                rc = kdrv_record_shrunk(d, p.victim, vg->gpus - p.gpus, &kb->gangs[vg->id],
                                        ev->pods, ev->n_pods, eb);
            continue;
        }
        /* its members' deletion is not a failure the lifecycle should act on; a victim asked to
         * checkpoint runs, charged, until its handshake ends (driver_ckpt.c records it then) */
        const struct kgang *victim = &kb->gangs[ev->victim->gang->id];
        if (rc == 0 && !kdrv_ckpt_asks(victim, cfg))
            rc = kdrv_record_evicted(d, victim->key, cfg->queues[victim->gang.queue].name, now, eb);
        if (rc == 0 && eng_job_evict(d->eng, kdrv_gang_id(d, victim->key)) != 0)
            rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    }
    for (uint32_t p = 0; rc == 0 && p < res->n_placements; p++)
        rc = record_placement(d, kb, &res->placements[p], cfg, now, eb);
    if (rc == 0) /* after the rows: a placement's row is admitted by now */
        rc = kdrv_promise_record(d, kb, res, eb);
    if (rc == 0)
        rc = kdrv_fair_record(d, kb, res, cfg, now, eb);
    if (rc == 0)
        rc = record_members_gone(d, kb, now, eb);
    if (rc == 0)
        rc = store_commit(d->db, eb);
    if (rc != 0)
        store_rollback(d->db);
    return rc;
}
