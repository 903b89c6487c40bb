/* sched/kube/driver_eng.c: the daemon's side of the engine (sched/engine/).
 *
 * Owns: the engine of the daemon and its name tables (gangs by "namespace/name", nodes by name,
 * interned to engine ids), which object a gang's id belongs to (its PodGroup's uid: another one
 * under the same name is a new gang, with a fresh record) and when each gang was last seen (a
 * gang gone for KDRV_GANG_FORGET_MS is forgotten and its id reused; node ids are never reused),
 * the cycle's id maps between engine ids and the cycle's input (kb gang index, cluster node
 * index), the callbacks the engine reads them through
 * (struct eng_ids), and the node effects (quarantine, release) carried out as logs and Events.
 *
 * Must not touch: the rules between cycles (they are the engine's), the store (a record renewed
 * or forgotten restarts its job row's counts through kdrv_job_fresh), the binder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/kube/driver_int.h"

int kdrv_eng_init(struct kdrv *d)
{
    struct eng_limits lim;
    eng_limits_default(&lim);
    /* a workload controller recreates the pods of a torn-down gang with its own backoff (a Job's
     * pod failure backoff): the daemon queues them at once, as before the engine */
    lim.backoff_ms = 0;
    d->eng = eng_new(&lim);
    d->gang_ids = eng_names_new();
    d->node_ids = eng_names_new();
    return d->eng && d->gang_ids && d->node_ids ? 0 : SCHED_ENOMEM;
}

void kdrv_eng_fini(struct kdrv *d)
{
    for (uint32_t i = 0; i < d->cap_gang_seen; i++)
        free(d->gang_seen[i].uid);
    free(d->gang_seen);
    d->gang_seen = NULL;
    d->cap_gang_seen = 0;
    eng_free(d->eng);
    eng_names_free(d->gang_ids);
    eng_names_free(d->node_ids);
    eng_effects_free(&d->fx);
    d->eng = NULL;
    d->gang_ids = d->node_ids = NULL;
}

uint32_t kdrv_gang_id(struct kdrv *d, const char *key)
{
    uint32_t id;
    return key && eng_names_id(d->gang_ids, key, &id) == 0 ? id : ENG_NONE;
}

uint32_t kdrv_node_id(struct kdrv *d, const char *name)
{
    uint32_t id;
    return name && eng_names_id(d->node_ids, name, &id) == 0 ? id : ENG_NONE;
}

/* ---- which object a gang's id belongs to -------------------------------------------------- */

/* What the driver keeps by gang name besides the engine's record: the status written (its rate
 * limit and the decision log's last verdict, driver_status.c). */
static void forget_status(struct kdrv *d, const char *key)
{
    struct kstatus *st = strmap_del(&d->status, key);
    if (st)
        free(st->reason);
    free(st);
}

/* Gang id's name now belongs to another object (its PodGroup deleted and created again): what was
 * kept of the old one is dropped. */
static void gang_renew(struct kdrv *d, uint32_t id, const char *key, const char *old_uid,
                       const struct kpg *pg)
{
    LOG_INFO(KDRV_MOD, "gang created again under the same name: gang=%s uid=%s was=%s", key,
             pg->uid, old_uid);
    eng_jobs_forget(d->eng, &id, 1);
    forget_status(d, key);
    (void)kdrv_job_fresh(d, key, pg->created_ms ? pg->created_ms : -1); /* logs its failure */
}

/* Room for gang id in d->gang_seen: 0 or SCHED_ENOMEM. */
static int seen_room(struct kdrv *d, uint32_t id)
{
    if (id >= d->cap_gang_seen) {
        uint32_t cap = d->cap_gang_seen ? d->cap_gang_seen : 64;
        while (cap <= id)
            cap *= 2;
        struct kgang_seen *v = realloc(d->gang_seen, (size_t)cap * sizeof(*v));
        if (!v)
            return SCHED_ENOMEM;
        memset(v + d->cap_gang_seen, 0, (size_t)(cap - d->cap_gang_seen) * sizeof(*v));
        d->gang_seen = v;
        d->cap_gang_seen = cap;
    }
    return 0;
}

int kdrv_gang_restored(struct kdrv *d, uint32_t id, int64_t submit_ms, int64_t row_ms, int64_t now)
{
    if (seen_room(d, id) != 0)
        return SCHED_ENOMEM;
    d->gang_seen[id].restored_submit_ms = submit_ms;
    /* seen_ms 0 means "not seen yet" (gang_forgettable starts it at now): a row time is at
     * least 1; a row from a clock ahead of this one counts as now */
    d->gang_seen[id].seen_ms = row_ms < 1 ? 1 : row_ms > now ? now : row_ms;
    return 0;
}

/* Gang id (key) seen at now, with its PodGroup (NULL: none seen). 0 or SCHED_ENOMEM. */
static int gang_seen(struct kdrv *d, uint32_t id, const char *key, const struct kpg *pg,
                     int64_t now)
{
    if (seen_room(d, id) != 0)
        return SCHED_ENOMEM;
    struct kgang_seen *s = &d->gang_seen[id];
    s->seen_ms = now;
    const char *uid = pg && pg->uid && *pg->uid ? pg->uid : NULL;
    if (!uid || (s->uid && strcmp(s->uid, uid) == 0))
        return 0;
    char *copy = strdup(uid);
    if (!copy)
        return SCHED_ENOMEM;
    /* a first uid is the record's own (pods seen before their PodGroup), unless the record was
     * restored for a PodGroup created at another time */
    bool restored_other = !s->uid && s->restored_submit_ms && pg->created_ms &&
                          pg->created_ms != s->restored_submit_ms;
    if (s->uid || restored_other)
        gang_renew(d, id, key, s->uid ? s->uid : "(restored)", pg);
    s->restored_submit_ms = 0;
    free(s->uid);
    s->uid = copy;
    return 0;
}

/* Whether gang id may be forgotten at now: gone long enough, nothing of ours on it. A PodGroup
 * without pods (a gang that gave up, its pods deleted) is not gone: its record stays. */
static bool gang_forgettable(struct kdrv *d, uint32_t id, const char *key, int64_t now)
{
    if (seen_room(d, id) != 0)
        return false;
    struct kgang_seen *s = &d->gang_seen[id];
    if (s->seen_ms == 0 || kcache_pg(d->cache, key))
        s->seen_ms = now; /* not in a cycle yet (a reservation, a restored row), or its
                             PodGroup is there without pods */
    if (now - s->seen_ms < KDRV_GANG_FORGET_MS)
        return false;
    if (eng_job_state(d->eng, id) == ENG_JOB_TEARING || strmap_get(&d->jobs, key))
        return false;
    for (uint32_t h = 0; h < eng_hold_count(d->eng, ENG_HOLDS); h++) {
        const struct eng_hold *eh = eng_hold_at(d->eng, ENG_HOLDS, h);
        if (eh->operator_id > 0 && eh->gang == id)
            return false;
    }
    return true;
}

/* The status entries of gangs that only ever waited (no engine id: the sweep above never sees
 * them), not asked for in KDRV_GANG_FORGET_MS: their objects are gone. */
static void status_sweep(struct kdrv *d, int64_t now)
{
    struct strlist old = {0};
    size_t i = 0;
    const char *key;
    void *v;
    while (strmap_next(&d->status, &i, &key, &v)) {
        const struct kstatus *st = v;
        if (now - st->seen_ms >= KDRV_GANG_FORGET_MS &&
            eng_names_find(d->gang_ids, key) == ENG_NONE && kdrv_strlist_add(&old, key) != 0)
            break; /* out of memory: the others at the next sweep */
    }
    for (uint32_t k = 0; k < old.n; k++)
        forget_status(d, old.v[k]);
    kdrv_strlist_free(&old);
}

void kdrv_gangs_sweep(struct kdrv *d, int64_t now)
{
    if (d->gang_swept_ms != 0 && now - d->gang_swept_ms < 60 * 1000)
        return;
    d->gang_swept_ms = now;
    uint32_t bound = eng_names_count(d->gang_ids), n = 0;
    uint32_t *gone = NULL;
    for (uint32_t id = 0; id < bound; id++) {
        const char *key = eng_names_name(d->gang_ids, id);
        if (!key || !gang_forgettable(d, id, key, now))
            continue;
        if (!gone && !(gone = malloc((size_t)bound * sizeof(*gone)))) {
            LOG_WARN(KDRV_MOD,
                     "out of memory forgetting the gangs gone: kept until the next sweep");
            return;
        }
        gone[n++] = id;
    }
    eng_jobs_forget(d->eng, gone, n);
    uint32_t dropped = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *key = eng_names_name(d->gang_ids, gone[i]);
        forget_status(d, key);
        (void)kdrv_job_fresh(d, key, -1); /* a gang of its name later counts anew */
        struct kgang_seen *s = &d->gang_seen[gone[i]];
        free(s->uid);
        *s = (struct kgang_seen){0};
        if (eng_names_drop(d->gang_ids, gone[i]) == 0)
            dropped++;
    }
    if (dropped < n) /* the id keeps its name (a zero record): the next sweep drops it */
        LOG_WARN(KDRV_MOD, "out of memory forgetting %u gangs gone", n - dropped);
    free(gone);
    status_sweep(d, now);
}

/* ---- the cycle's id maps ------------------------------------------------------------------- */

static uint32_t ids_gang(void *ctx, const struct gang *g)
{
    const struct kids *k = ctx;
    return g->id < k->kb->n_gangs ? k->gang[g->id] : ENG_NONE;
}

static uint32_t ids_node(void *ctx, uint32_t core_node)
{
    const struct kids *k = ctx;
    return core_node < k->kb->snap.cluster->n_nodes ? k->node[core_node] : ENG_NONE;
}

static const struct gang *ids_core_gang(void *ctx, uint32_t g, bool *pending)
{
    const struct kids *k = ctx;
    uint32_t ix = g < k->n_core_gang ? k->core_gang[g] : ENG_NONE;
    *pending = ix < k->kb->n_pending;
    return ix < k->kb->n_gangs ? &k->kb->gangs[ix].gang : NULL;
}

static uint32_t ids_core_node(void *ctx, uint32_t n)
{
    const struct kids *k = ctx;
    return n < k->n_core_node ? k->core_node[n] : ENG_NONE;
}

/* An inverse map [n] filled with ENG_NONE. */
static uint32_t *none_map(struct arena *a, uint32_t n)
{
    uint32_t *m = arena_calloc(a, n + 1, sizeof(*m));
    for (uint32_t i = 0; m && i < n; i++)
        m[i] = ENG_NONE;
    return m;
}

int kdrv_ids_build(struct kdrv *d, const struct kcache_build *kb, int64_t now)
{
    const struct cluster *cl = kb->snap.cluster;
    struct kids *k = arena_calloc(&d->arena, 1, sizeof(*k));
    d->ids = NULL;
    if (!k)
        return SCHED_ENOMEM;
    *k = (struct kids){.d = d, .kb = kb};
    k->gang = arena_calloc(&d->arena, kb->n_gangs + 1, sizeof(*k->gang));
    k->node = arena_calloc(&d->arena, cl->n_nodes + 1, sizeof(*k->node));
    if (!k->gang || !k->node)
        return SCHED_ENOMEM;
    for (uint32_t g = 0; g < kb->n_gangs; g++)
        if ((k->gang[g] = kdrv_gang_id(d, kb->gangs[g].key)) == ENG_NONE ||
            gang_seen(d, k->gang[g], kb->gangs[g].key, kb->gangs[g].pg, now) != 0)
            return SCHED_ENOMEM;
    for (uint32_t w = 0; w < kb->n_waiting; w++) {
        uint32_t id = eng_names_find(d->gang_ids, kb->waiting[w].key);
        if (id != ENG_NONE && gang_seen(d, id, kb->waiting[w].key, kb->waiting[w].pg, now) != 0)
            return SCHED_ENOMEM;
        struct kstatus *st = strmap_get(&d->status, kb->waiting[w].key);
        if (st && st->seen_ms < now)
            st->seen_ms = now;
    }
    for (uint32_t n = 0; n < cl->n_nodes; n++)
        if ((k->node[n] = kdrv_node_id(d, cl->nodes[n].name)) == ENG_NONE)
            return SCHED_ENOMEM;
    k->n_core_gang = eng_names_count(d->gang_ids);
    k->n_core_node = eng_names_count(d->node_ids);
    k->core_gang = none_map(&d->arena, k->n_core_gang);
    k->core_node = none_map(&d->arena, k->n_core_node);
    if (!k->core_gang || !k->core_node)
        return SCHED_ENOMEM;
    /* an elastic gang is in kb twice under one key, its pending part first: the engine's gang
     * is that pending part (its reservations, holds and the promises made to it are the
     * waiting gang's), so the running part never overwrites it */
    for (uint32_t g = kb->n_gangs; g-- > 0;)
        k->core_gang[k->gang[g]] = g;
    for (uint32_t n = 0; n < cl->n_nodes; n++)
        k->core_node[k->node[n]] = n;
    k->ids = (struct eng_ids){.ctx = k,
                              .gang = ids_gang,
                              .node = ids_node,
                              .core_gang = ids_core_gang,
                              .core_node = ids_core_node};
    d->ids = k;
    return 0;
}

/* ---- node effects ---------------------------------------------------------------------------- */

void kdrv_node_effects(struct kdrv *d)
{
    const struct eng_limits *lim = eng_limits(d->eng);
    for (uint32_t i = 0; i < d->fx.n; i++) {
        const struct eng_effect *ef = &d->fx.v[i];
        const char *node = eng_names_name(d->node_ids, ef->node);
        if (!node)
            continue;
        if (ef->kind == ENG_FX_RELEASE) {
            LOG_INFO(KDRV_MOD, "node quarantine over: node=%s", node);
            continue;
        }
        if (ef->kind != ENG_FX_QUARANTINE)
            continue;
        char note[300];
        snprintf(note, sizeof(note),
                 "%u failed gang starts within %lld minutes: no new pods for %lld minutes",
                 lim->strikes, (long long)(lim->strike_window_ms / 60000),
                 (long long)(lim->quarantine_ms / 60000));
        LOG_WARN(KDRV_MOD, "node quarantined: node=%s why=%s", node, note);
        kdrv_post_event(d, "v1", "Node", NULL, node, kcache_node_uid(d->cache, node), "Warning",
                        "Quarantined", "Scheduling", note, NULL);
    }
    eng_effects_clear(&d->fx);
}
