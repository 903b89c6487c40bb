/* sched/kube/driver_est.c: the daemon's run-time estimates, learned from the gangs that ended by
 * themselves (queue/estimate.c, as the simulator learns), given to the cycle as the simulator
 * gives them (sched/sim/estimates.c):
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
 * queues), then from each gang as it finishes.
 */
#include <stdlib.h>
#include <string.h>

#include "queue/estimate.h"
#include "sched/core/bits.h"
#include "sched/kube/driver_int.h"

/* A finished run of the store: what est_observe() takes, with its queue's index. */
struct past_run {
    uint32_t queue;
    int64_t gpus, start_ms, finish_ms, submit_ms;
};

struct past_runs {
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
    pr->v[pr->n++] =
        (struct past_run){(uint32_t)q, j->gpus, j->start_ms, j->finish_ms, j->submit_ms};
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
    struct past_runs pr = {.queues = &d->est_queues};
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
        est_observe(&d->est, pr.v[k].queue, pr.v[k].gpus, pr.v[k].finish_ms - pr.v[k].start_ms,
                    pr.v[k].submit_ms);
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
    return rc ? rc : learn_store(d);
}

void kdrv_est_fini(struct kdrv *d)
{
    est_free(&d->est);
    kdrv_strlist_free(&d->est_queues);
}

void kdrv_est_learn(struct kdrv *d, const struct store_job *j, int64_t now)
{
    if (j->state != STORE_JOB_RUNNING || j->start_ms == STORE_NO_TIME || now < j->start_ms ||
        !j->queue)
        return;
    int q = queue_of(&d->est_queues, j->queue);
    if (q >= 0)
        est_observe(&d->est, (uint32_t)q, j->gpus, now - j->start_ms, j->submit_ms);
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

/* Each node's release_ms from the safe ends of our gangs on it (safe[i]; ours[i]: the GPUs our
 * gangs hold there): INT64_MAX where other GPUs are held too (pods of no gang of ours, whose
 * end is not known); 0 stays 0 (an empty node). */
static void set_releases(struct node_state *state, uint32_t nn, const int64_t *safe,
                         const uint32_t *ours)
{
    for (uint32_t i = 0; i < nn; i++) {
        if (state[i].release_ms == 0)
            continue;
        state[i].release_ms =
            (uint32_t)bits_popc32(state[i].gpu_used) > ours[i] ? INT64_MAX : safe[i];
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
    uint32_t *ours = arena_calloc(&d->arena, nn + 1, sizeof(*ours));
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
    uint32_t n_rels = 0;
    for (uint32_t g = kb->n_pending; g < kb->n_gangs; g++) {
        const struct kgang *kg = &kb->gangs[g];
        int64_t start = now; /* the run started when its first member did (cache.c) */
        for (uint32_t m = 0; m < kg->gang.n_pods; m++)
            if (kg->members[m]->started_ms > 0 && kg->members[m]->started_ms < start)
                start = kg->members[m]->started_ms;
        int64_t end = est_typical_end(&d->est, &kg->gang, start, now, draw_of(kg->key));
        int64_t end_safe = est_end(&d->est, &kg->gang, start, now, EST_QUANTILE);
        for (uint32_t m = 0; kg->nodes && m < kg->gang.n_pods; m++) {
            uint32_t i = kg->nodes[m];
            if (i >= nn)
                continue;
            uint32_t gpus = pod_gpus(kg->members[m]);
            rels[n_rels++] = (struct sched_release){.node = i, .gpus = gpus, .t_ms = end};
            if (end > rel[i])
                rel[i] = end;
            if (end_safe > safe[i])
                safe[i] = end_safe;
            ours[i] += gpus;
        }
    }
    set_releases(kb->state, nn, safe, ours);
    s->runtime_src = &es->src;
    s->release_typ_ms = rel;
    s->releases = rels;
    s->n_releases = n_rels;
    return 0;
}
