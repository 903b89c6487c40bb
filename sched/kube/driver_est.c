/* sched/kube/driver_est.c: the daemon's run-time estimates, learned from the gangs that ended by
 * themselves (queue/estimate.c, as the simulator learns: a run time is the time the gang held
 * its GPUs over all its runs, its row's earlier runs (ran_ms) included), given to the cycle as the
 * simulator gives them (sched/sim/estimates.c):
 *   - decisions (starvation reservations, backfill into them, the queue hold, backfill on
 *     probation): the safe estimates, runtime_src's safe answer for a pending gang
 *     (EST_QUANTILE) and node_state.release_ms, the latest safe end of the gangs on a node
 *     (INT64_MAX while one of them has no estimate, or GPUs on it are held by pods of no gang of
 *     ours: their end is not known; pods without GPUs, DaemonSets, do not count);
 *   - the start planner: the typical answers (release_typ_ms, releases).
 * A pending gang's estimates are computed when the cycle asks for them, so a cycle's cost
 * follows the gangs it tries and plans, not the backlog.
 *
 * Owns: d->est and d->est_queues (the queue names of est's indices). The history is learned
 * from the store's finished jobs at the first cycle (and again when a reload changes the
 * queues), then from each gang as it finishes. And d->est_ends: each running gang's expected
 * ends (typical and safe), kept from cycle to cycle while nothing it depends on changes
 * (est_end_valid), so that a cycle computes the ends of the gangs that changed, not of every
 * running gang; a run learned changes only the ends of the gangs whose estimates read the rings
 * it went into (d->est_ring_gen), not every one.
 */
#include <stdlib.h>
#include <string.h>

#include "queue/estimate.h"
#include "sched/core/bits.h"
#include "sched/kube/driver_int.h"

/* A finished run of the store: what est_observe() takes, with its queue's index and its user's
 * id (sched/kube/cache_users.c; 0: not known); run_ms: its GPUs' time over all its runs. */
struct past_run {
    uint32_t queue, user;
    int64_t gpus, run_ms, finish_ms, submit_ms;
};

struct past_runs {
    struct kcache *cache;
    const struct strlist *queues;
    struct past_run *v;
    uint32_t n, cap;
};

static int queue_of(const struct strlist *queues, const char *name)
{
    for (uint32_t q = 0; name && q < queues->n; q++)
        if (strcmp(queues->v[q], name) == 0)
            return (int)q;
    return -1;
}

static int collect_run(void *ctx, const struct store_job *j)
{
    struct past_runs *pr = ctx;
    int q = queue_of(pr->queues, j->queue);
    if (j->state != STORE_JOB_FINISHED || q < 0 || j->start_ms == STORE_NO_TIME ||
        j->finish_ms == STORE_NO_TIME || j->finish_ms < j->start_ms)
        return 0;
    if (pr->n == pr->cap) {
        uint32_t cap = pr->cap ? 2 * pr->cap : 256;
        struct past_run *v = realloc(pr->v, cap * sizeof(*v));
        if (!v)
            return SCHED_ENOMEM;
        pr->v = v;
        pr->cap = cap;
    }
    pr->v[pr->n++] = (struct past_run){(uint32_t)q,  kcache_user_id(pr->cache, j->user),
                                       j->gpus,      j->finish_ms - j->start_ms + j->ran_ms,
                                       j->finish_ms, j->submit_ms};
    return 0;
}

static int cmp_finish(const void *a, const void *b)
{
    const struct past_run *x = a, *y = b;
    return (x->finish_ms > y->finish_ms) - (x->finish_ms < y->finish_ms);
}

/* What the store's finished jobs teach, in the order they finished (the rings keep the last). A
 * store that cannot be read leaves the history empty (estimates are not worth stopping for). */
static int learn_store(struct kdrv *d)
{
    struct past_runs pr = {.cache = d->cache, .queues = &d->est_queues};
    struct sched_errbuf eb;
    int rc = d->db ? store_job_list(d->db, collect_run, &pr, &eb) : 0;
    if (rc == SCHED_ENOMEM) {
        free(pr.v);
        return rc;
    }
    if (rc != 0)
        LOG_WARN("kube", "start estimates: cannot read the finished jobs: %s", eb.msg);
    if (pr.n)
        qsort(pr.v, pr.n, sizeof(*pr.v), cmp_finish);
    for (uint32_t k = 0; rc == 0 && k < pr.n; k++)
        (void)est_observe(&d->est, pr.v[k].queue, pr.v[k].user, pr.v[k].gpus, pr.v[k].run_ms,
                          pr.v[k].submit_ms); /* out of memory: the user's ring misses it */
    free(pr.v);
    return 0;
}

/* est's queues become cfg's; the history is kept while the queue names stay the same, else
 * learned again from the store's finished jobs (also at the first cycle). */
static int est_config(struct kdrv *d, const struct config *cfg)
{
    uint32_t n = cfg ? cfg->n_queues : 0;
    bool same = d->est.rings && d->est_queues.n == n;
    for (uint32_t q = 0; same && q < n; q++)
        same = strcmp(d->est_queues.v[q], cfg->queues[q].name) == 0;
    if (same)
        return 0;
    kdrv_est_fini(d);
    for (uint32_t q = 0; q < n; q++)
        if (kdrv_strlist_add(&d->est_queues, cfg->queues[q].name) != 0)
            return SCHED_ENOMEM;
    int rc = est_init(&d->est, n);
    d->n_ring_gen = (n + 1) * (EST_SHAPES + 1); /* the queues' rings; users' are added */
    if (rc == 0) /* out of memory here: every learned run invalidates every kept end */
        d->est_ring_gen = calloc(d->n_ring_gen, sizeof(*d->est_ring_gen));
    rc = rc ? rc : learn_store(d);
    d->est_gen++; /* what was kept of the old model is no longer valid */
    return rc;
}

void kdrv_est_ends_clear(struct kdrv *d)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->est_ends, &i, &k, &v);)
        free(v);
    strmap_fini(&d->est_ends);
}

void kdrv_est_fini(struct kdrv *d)
{
    est_free(&d->est);
    kdrv_strlist_free(&d->est_queues);
    kdrv_est_ends_clear(d);
    free(d->est_ring_gen);
    d->est_ring_gen = NULL;
    d->n_ring_gen = 0;
    d->est_gen++;
}

/* est_ring_gen covers ring index i (a user's ring past the queues'); false: out of memory (the
 * table is dropped: every learned run then changes est_gen). */
static bool ring_gen_covers(struct kdrv *d, uint32_t i)
{
    if (!d->est_ring_gen || i < d->n_ring_gen)
        return d->est_ring_gen != NULL;
    uint32_t n = d->n_ring_gen;
    while (n <= i)
        n = n < UINT32_MAX / 2 ? 2 * n : UINT32_MAX;
    uint64_t *g = realloc(d->est_ring_gen, (size_t)n * sizeof(*g));
    if (!g) {
        free(d->est_ring_gen);
        d->est_ring_gen = NULL;
        return false;
    }
    memset(g + d->n_ring_gen, 0, (size_t)(n - d->n_ring_gen) * sizeof(*g));
    d->est_ring_gen = g;
    d->n_ring_gen = n;
    return true;
}

void kdrv_est_learn(struct kdrv *d, const struct store_job *j, int64_t now)
{
    if (j->state != STORE_JOB_RUNNING || j->start_ms == STORE_NO_TIME || now < j->start_ms ||
        !j->queue)
        return;
    int q = queue_of(&d->est_queues, j->queue);
    uint32_t user = kcache_user_id(d->cache, j->user);
    uint32_t idx[EST_READS],
        n = q >= 0 ? est_rings_observed(&d->est, (uint32_t)q, user, j->gpus, idx) : 0;
    if (n == 0)
        return;
    /* out of memory for the user's ring: the queue's rings learn it all the same */
    (void)est_observe(&d->est, (uint32_t)q, user, j->gpus, now - j->start_ms + j->ran_ms,
                      j->submit_ms);
    /* only the kept ends that read these rings are computed again (est_rings_read) */
    d->est_obs++;
    for (uint32_t k = 0; k < n && ring_gen_covers(d, idx[k]); k++)
        d->est_ring_gen[idx[k]] = d->est_obs;
    if (!d->est_ring_gen)
        d->est_gen++;
}

/* The gang's fixed draw: of its key, so that it keeps it from cycle to cycle and across
 * restarts (FNV-1a, then est_draw's mixing). */
static double draw_of(const char *key)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *s = (const unsigned char *)key; *s; s++)
        h = (h ^ *s) * 0x100000001b3ull;
    return est_draw(h);
}

/* GPUs a running member holds: its GPU ids, else its request. */
static uint32_t pod_gpus(const struct kpod *p)
{
    if (p->gpu_mask)
        return bits_popc32(p->gpu_mask);
    int64_t v = p->req.v[RES_GPU];
    return v > 0 && v <= 32 ? (uint32_t)v : 0;
}

/* ---- the running gangs' expected ends, kept ------------------------------------------------ */

/* A running gang's expected ends as est_typical_end and est_end (safe) gave them, and what they
 * were computed from. Each end depends on the model (est_gen) and on the rings of it the gang's
 * estimates read (est_rings_read: ring[], their latest change in ring_gen), on the gang's draw
 * (its key), queue, GPUs, submit time and declared run time, on its start, and on the time only
 * through how long it has run (`ran`): est_typical_end is start plus a quantile of learned run
 * times longer than `ran` (estimate.h), which stays the same until `ran` reaches the next run
 * time above it in those rings; or now plus `ran` when no learned run is longer, which moves
 * with every cycle. A run learned into another ring (another queue and shape) keeps it. */
struct est_end {
    int64_t start, submit, max_runtime, gpus;
    uint32_t queue, user;
    uint64_t gen;             /* d->est_gen it was computed at */
    uint32_t ring[EST_READS]; /* the rings its estimates read, n_ring of them */
    uint32_t n_ring;
    uint64_t ring_gen; /* the latest d->est_ring_gen of those rings when computed */
    int64_t end;       /* the typical expected end (ms; INT64_MAX: unknown) */
    int64_t safe;      /* the safe one (EST_QUANTILE), what decisions read */
    int64_t until_ms;  /* valid at a time before this */
    uint64_t used;     /* d->est_plans of the last plan that used it */
};

/* The latest change of the rings e reads (0 when nothing is known of them). */
static uint64_t rings_gen(const struct kdrv *d, const struct est_end *e)
{
    uint64_t g = 0;
    for (uint32_t k = 0; d->est_ring_gen && k < e->n_ring; k++)
        if (e->ring[k] < d->n_ring_gen && d->est_ring_gen[e->ring[k]] > g)
            g = d->est_ring_gen[e->ring[k]];
    return g;
}

/* Until when end (computed at now) holds. */
static int64_t est_end_until(const struct kdrv *d, const struct est_end *e, int64_t now,
                             int64_t end)
{
    if (e->max_runtime > 0 || end == INT64_MAX) /* declared; or nothing learned */
        return INT64_MAX;
    int64_t ran = now > e->start ? now - e->start : 0;
    if (end == now + (ran > 0 ? ran : 1)) /* ran longer than every learned run (or looks so) */
        return now + 1;
    /* the next run time learned in the rings e reads: a superset of the ones its estimate
     * reads (a kept end is computed again too often, never too late) */
    int64_t cut = est_next_run(&d->est, e->ring, e->n_ring, ran);
    return cut < INT64_MAX ? e->start + cut : now + 1;
}

static bool est_end_valid(const struct est_end *e, const struct kdrv *d, const struct gang *g,
                          int64_t start, int64_t now)
{
    return e->gen == d->est_gen && e->start == start && e->submit == g->submit_ms &&
           e->max_runtime == g->max_runtime_ms && e->gpus == g->gpus && e->queue == g->queue &&
           e->user == g->user && now < e->until_ms && e->ring_gen == rings_gen(d, e);
}

/* The typical expected end of running gang kg started at start, and its safe one in *safe:
 * kept, or computed and kept. */
static int64_t running_end(struct kdrv *d, const struct kgang *kg, int64_t start, int64_t now,
                           int64_t *safe)
{
    const struct gang *g = &kg->gang;
    struct est_end *e = strmap_get(&d->est_ends, kg->key);
    if (e && est_end_valid(e, d, g, start, now)) {
        e->used = d->est_plans;
        *safe = e->safe;
        return e->end;
    }
    int64_t end = est_typical_end(&d->est, g, start, now, draw_of(kg->key));
    *safe = est_end(&d->est, g, start, now, EST_QUANTILE);
    d->est_ended++;
    if (!e && (!(e = calloc(1, sizeof(*e))) || strmap_put(&d->est_ends, kg->key, e, NULL) != 0)) {
        free(e);
        return end; /* out of memory: computed every cycle */
    }
    *e = (struct est_end){.start = start,
                          .submit = g->submit_ms,
                          .max_runtime = g->max_runtime_ms,
                          .gpus = g->gpus,
                          .queue = g->queue,
                          .user = g->user,
                          .gen = d->est_gen,
                          .end = end,
                          .safe = *safe,
                          .used = d->est_plans};
    e->n_ring = est_rings_read(&d->est, g, e->ring);
    e->ring_gen = rings_gen(d, e);
    int64_t a = est_end_until(d, e, now, end), b = est_end_until(d, e, now, *safe);
    e->until_ms = a < b ? a : b; /* until when both hold */
    return end;
}

/* Drops the kept ends of gangs that no longer run (not used by this plan), once they are more
 * than the running gangs: the map stays in proportion, at a cost spread over the plans. */
static void est_ends_age(struct kdrv *d, uint32_t n_running)
{
    if (d->est_ends.n <= 2 * (size_t)n_running + 64)
        return;
    struct strlist old = {0};
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&d->est_ends, &i, &k, &v);)
        if (((struct est_end *)v)->used != d->est_plans && kdrv_strlist_add(&old, k) != 0)
            break; /* out of memory: the rest another time */
    for (uint32_t i = 0; i < old.n; i++)
        free(strmap_del(&d->est_ends, old.v[i]));
    kdrv_strlist_free(&old);
}

/* sched_snapshot.runtime_src of a cycle: the safe and typical run times of a pending gang,
 * computed on the cycle's first ask (the cycle asks for the gangs it tries and plans, not for
 * the whole backlog). In d->arena. */
struct est_src {
    struct sched_runtime_source src;
    struct kdrv *d;            /* d->est, d->est_computed */
    const struct kgang *gangs; /* kb->gangs: gang ids index them, pending ones first */
    uint32_t n_pending;
    int64_t *safe, *typ; /* [n_pending], valid where done has the bit */
    uint64_t *done;      /* [(n_pending + 63) / 64] */
};

static int64_t runtime_of(void *ctx, const struct gang *g, bool typical)
{
    struct est_src *es = ctx;
    uint32_t id = g->id;
    if (id >= es->n_pending) /* a running gang: its end is in release_ms and snap.releases */
        return 0;
    uint64_t bit = 1ull << (id % 64);
    if (!(es->done[id / 64] & bit)) {
        const struct kgang *kg = &es->gangs[id];
        es->safe[id] = est_runtime(&es->d->est, &kg->gang, EST_QUANTILE);
        es->typ[id] = est_typical_runtime(&es->d->est, &kg->gang, draw_of(kg->key));
        es->done[id / 64] |= bit;
        es->d->est_computed++;
    }
    return typical ? es->typ[id] : es->safe[id];
}

/* What our running gangs hold on a node: the GPU ids of their members (a GPU two shares hold
 * counts once), and the GPUs of members without ids (the cache gives those the lowest free
 * indices, as it does every pod without ids). */
struct est_ours {
    uint32_t mask;
    uint32_t anon;
};

/* Each node's release_ms from the safe ends of our gangs on it (safe[i], ours[i]): INT64_MAX
 * where GPUs are held by pods of no gang of ours (whose end is not known): GPUs in use outside
 * our members' ids, more than our members without ids can hold; 0 stays 0 (an empty node). */
static void set_releases(struct node_state *state, uint32_t nn, const int64_t *safe,
                         const struct est_ours *ours)
{
    for (uint32_t i = 0; i < nn; i++) {
        if (state[i].release_ms == 0)
            continue;
        uint32_t other = (uint32_t)bits_popc32(state[i].gpu_used & ~ours[i].mask);
        state[i].release_ms = other > ours[i].anon ? INT64_MAX : safe[i];
    }
}

int kdrv_est_plan(struct kdrv *d, struct kcache_build *kb, const struct config *cfg, int64_t now)
{
    if (est_config(d, cfg) != 0)
        return SCHED_ENOMEM;
    struct sched_snapshot *s = &kb->snap;
    uint32_t nn = s->cluster->n_nodes, n_pods = 0;
    for (uint32_t g = kb->n_pending; g < kb->n_gangs; g++)
        n_pods += kb->gangs[g].gang.n_pods;
    struct est_src *es = arena_calloc(&d->arena, 1, sizeof(*es));
    int64_t *rel = arena_calloc(&d->arena, nn + 1, sizeof(*rel));
    int64_t *safe = arena_calloc(&d->arena, nn + 1, sizeof(*safe));
    struct est_ours *ours = arena_calloc(&d->arena, nn + 1, sizeof(*ours));
    struct sched_release *rels = arena_calloc(&d->arena, n_pods + 1, sizeof(*rels));
    if (!es || !rel || !safe || !ours || !rels)
        return SCHED_ENOMEM;
    *es =
        (struct est_src){.src = {.est = runtime_of, .ctx = es},
                         .d = d,
                         .gangs = kb->gangs,
                         .n_pending = kb->n_pending,
                         .safe = arena_alloc(&d->arena, (kb->n_pending + 1) * sizeof(*es->safe)),
                         .typ = arena_alloc(&d->arena, (kb->n_pending + 1) * sizeof(*es->typ)),
                         .done = arena_calloc(&d->arena, kb->n_pending / 64 + 1, sizeof(uint64_t))};
    if (!es->safe || !es->typ || !es->done)
        return SCHED_ENOMEM;
    d->est_computed = 0;
    d->est_ended = 0;
    d->est_plans++;
    uint32_t n_rels = 0;
    for (uint32_t g = kb->n_pending; g < kb->n_gangs; g++) {
        const struct kgang *kg = &kb->gangs[g];
        int64_t start = now; /* the run started when its first member did (cache.c) */
        for (uint32_t m = 0; m < kg->gang.n_pods; m++)
            if (kg->members[m]->started_ms > 0 && kg->members[m]->started_ms < start)
                start = kg->members[m]->started_ms;
        int64_t end_safe, end = running_end(d, kg, start, now, &end_safe);
        for (uint32_t m = 0; kg->nodes && m < kg->gang.n_pods; m++) {
            uint32_t i = kg->nodes[m];
            if (i >= nn)
                continue;
            const struct kpod *mp = kg->members[m];
            /* a member that ended holds no GPU (gpu_used does not count it either) */
            uint32_t gpus =
                mp->phase == KPOD_SUCCEEDED || mp->phase == KPOD_FAILED ? 0 : pod_gpus(mp);
            /* with the GPU indices the planner gives a shared GPU back once (eta.c) */
            rels[n_rels++] = (struct sched_release){
                .node = i, .gpus = gpus, .gpu_mask = gpus ? mp->gpu_mask : 0, .t_ms = end};
            if (end > rel[i])
                rel[i] = end;
            if (end_safe > safe[i])
                safe[i] = end_safe;
            if (gpus && mp->gpu_mask)
                ours[i].mask |= mp->gpu_mask;
            else
                ours[i].anon += gpus;
        }
    }
    set_releases(kb->state, nn, safe, ours);
    est_ends_age(d, kb->n_gangs - kb->n_pending);
    s->runtime_src = &es->src;
    s->release_typ_ms = rel;
    s->releases = rels;
    s->n_releases = n_rels;
    return 0;
}
