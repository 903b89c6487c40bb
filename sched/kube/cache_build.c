/* sched/kube/cache_build.c: the cycle's input made from the Kubernetes driver's cache
 * (kcache_build, see cache.h).
 *
 * Owns: the build's phases: the hot pods read into groups, each group's gang or waiting entry,
 * the queues' views, the running gangs and the snapshot, all in the build's arena.
 *
 * Must not touch: the network, the store, the cache's decoded objects (read only; what a build
 * brings up to date, the cluster after node changes, the usage kept by deltas, the hot set and
 * the claims' demands, goes through snapshot.c, cache.c and claims.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue.h"
#include "sched/core/annot.h"
#include "sched/core/log.h"
#include "sched/core/policy.h"
#include "sched/k8s/nodes.h"
#include "sched/kube/cache.h"
#include "sched/kube/cache_int.h"
#include "sched/kube/claims.h"
#include "sched/kube/computedomain.h"
#include "sched/kube/dra.h"
#include "sched/kube/mig.h"
#include "sched/kube/native.h"

/* ---- building a cycle's input ---------------------------------------------------------------- */

/* The flavor a bound pod is charged to: its binding annotation, else the first flavor whose
 * node labels its node carries. */
static uint32_t pod_flavor(const struct config *cfg, const struct kpod *p, const struct node *n)
{
    if (!cfg)
        return 0;
    if (p->flavor) {
        int f = config_flavor_index(cfg, p->flavor);
        if (f >= 0)
            return (uint32_t)f;
    }
    for (uint32_t f = 0; f < cfg->n_flavors; f++) {
        bool all = true;
        for (uint32_t l = 0; all && l < cfg->flavors[f].n_node_labels; l++) {
            const char *v = node_label(n, cfg->flavors[f].node_labels[l].key);
            all = v && strcmp(v, cfg->flavors[f].node_labels[l].value) == 0;
        }
        if (all)
            return f;
    }
    return 0;
}

/* One group of pods (a PodGroup's, or a lone pod) while building. */
struct group {
    const char *key;
    const struct kpg *pg;
    bool named; /* the pods name a PodGroup (else a lone pod) */
    struct kpod **pending, **bound;
    uint32_t n_pending, n_bound, cap_pending, cap_bound;
    uint32_t n_bound_live;  /* bound and not being deleted: they count toward minMember */
    uint32_t n_bound_dying; /* bound, not finished, being deleted (or a delete was sent) */
    uint32_t kueue_total;   /* Kueue plain-pod group: pod-group-total-count, else 0 */
    const char *foreign;    /* native group: a pending member with another schedulerName */
    bool cpg;               /* a CompositePodGroup's tree (pg: the CompositePodGroup) */
    const char *tree_why;   /* a tree's layout gangsched does not schedule, or NULL */
    bool planned;           /* plan made (pass 0 with pending pods, else pass 1) */
    struct kcpg_plan plan;  /* the tree's, cache_cpg.c */
    /* its pending gang in this build (offered in pass 0), or NULL */
    struct kgang *pending_gang;
};

static int push(struct kpod ***v, uint32_t *n, uint32_t *cap, struct kpod *p)
{
    if (*n == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 4;
        struct kpod **nv = realloc(*v, nc * sizeof(*nv));
        if (!nv)
            return SCHED_ENOMEM;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = p;
    return 0;
}

static int cmp_group(const void *a, const void *b)
{
    return strcmp((*(const struct group *const *)a)->key, (*(const struct group *const *)b)->key);
}

static int cmp_pod(const void *a, const void *b)
{
    return strcmp((*(const struct kpod *const *)a)->name, (*(const struct kpod *const *)b)->name);
}

/* The group's queue name; *kueue: it is a Kueue LocalQueue name (of the group's namespace). */
static const char *group_queue(const struct group *g, const struct config *cfg, bool *kueue)
{
    *kueue = false;
    if (g->pg && g->pg->queue) {
        *kueue = g->pg->queue_kueue;
        return g->pg->queue;
    }
    for (uint32_t i = 0; i < g->n_pending; i++)
        if (g->pending[i]->queue) {
            *kueue = g->pending[i]->queue_kueue;
            return g->pending[i]->queue;
        }
    for (uint32_t i = 0; i < g->n_bound; i++)
        if (g->bound[i]->queue) {
            *kueue = g->bound[i]->queue_kueue;
            return g->bound[i]->queue;
        }
    if (cfg && cfg->n_queues == 1)
        return cfg->queues[0].name;
    if (cfg && config_queue_index(cfg, "default") >= 0)
        return "default";
    return NULL;
}

/* A native gang places minCount pods all or nothing; its extra pods are best effort: one at a
 * time once the gang is whole (kube-scheduler places them one by one too). */
static uint32_t min_of(const struct group *g)
{
    return g->pg && g->pg->min_member ? g->pg->min_member : 1;
}

struct builder {
    struct kcache *c;
    const struct config *cfg;
    const struct sched_policy *pol;
    struct arena *a;
    struct kcache_build *out;
    struct node_state *state;
    int64_t *usage;
    uint32_t n_flavors, n_queues;
    int64_t now_ms;
    struct strmap claim_why; /* pending pod key -> why its claims keep it from placement */
    struct strmap groups;    /* group key -> struct group* */
    struct strmap foreign;   /* native group key -> a pending member of another scheduler */
};

static int add_waiting(struct builder *b, const struct group *g, const char *queue,
                       const char *reason, const char *message)
{
    struct kcache_build *o = b->out;
    struct kpod **pods = arena_calloc(b->a, g->n_pending + 1, sizeof(*pods));
    if (!pods || !message)
        return SCHED_ENOMEM;
    if (g->n_pending)
        memcpy(pods, g->pending, g->n_pending * sizeof(*pods));
    o->waiting[o->n_waiting++] = (struct kwaiting){.key = g->key,
                                                   .pg = g->pg,
                                                   .queue = queue,
                                                   .reason = reason,
                                                   .message = message,
                                                   .pods = pods,
                                                   .n_pods = g->n_pending};
    return 0;
}

/* The annotations a pending gang's request is read from (sched/core/annot.h): its PodGroup's,
 * Volcano's spec.networkTopology in the annotation form ({mode, highestTierAllowed}), then its
 * first member's; the first occurrence of a key wins. */
static int gang_annotations(const struct group *g, const struct kpod *first, struct arena *a,
                            struct kv **out, uint32_t *n)
{
    const struct kpg *pg = g->pg;
    const struct kpod_spec *fs = first ? first->spec : NULL;
    uint32_t np = pg ? pg->n_ann : 0, nm = fs ? fs->n_ann : 0;
    struct kv *all = arena_calloc(a, np + nm + 6, sizeof(*all));
    if (!all)
        return SCHED_ENOMEM;
    uint32_t k = 0;
    for (uint32_t i = 0; i < np; i++)
        all[k++] = pg->ann[i];
    /* native: the constraint's node label as required level; a tree's children as slices */
    const char *topo = g->cpg ? g->plan.topo_key : pg ? pg->topology_key : NULL;
    if (topo)
        all[k++] = (struct kv){.key = "kueue.x-k8s.io/podset-required-topology", .value = topo};
    if (g->cpg && g->plan.slice_key) {
        char *size = arena_printf(a, "%u", g->plan.slice_size);
        if (!size)
            return SCHED_ENOMEM;
        all[k++] = (struct kv){.key = "kueue.x-k8s.io/podset-slice-required-topology",
                               .value = g->plan.slice_key};
        all[k++] = (struct kv){.key = "kueue.x-k8s.io/podset-slice-size", .value = size};
    }
    if (pg && pg->nt_mode)
        all[k++] = (struct kv){.key = "volcano.sh/network-topology-mode", .value = pg->nt_mode};
    if (pg && pg->has_nt_tier) {
        char *t = arena_printf(a, "%d", pg->nt_tier);
        if (!t)
            return SCHED_ENOMEM;
        all[k++] = (struct kv){.key = "volcano.sh/network-topology-highest-tier", .value = t};
    }
    for (uint32_t i = 0; i < nm; i++)
        all[k++] = fs->ann[i];
    *out = all;
    *n = k;
    return 0;
}

/* The gang's annotations (annot.c) applied to gg; *profile: its gangsched.io/profile (a running
 * gang's too: its replicas' price as victims, preempt.c). A running gang gets only its declared
 * run time besides (driver_est.c). SCHED_EINVAL with *why, or SCHED_ENOMEM. */
static int gang_annots(struct builder *b, const struct group *g, struct gang *gg,
                       struct kpod **members, uint32_t n, bool running, const char **profile,
                       const char **why)
{
    struct arena *a = b->a;
    const char *keys[] = {g->cpg  ? g->plan.topo_key
                          : g->pg ? g->pg->topology_key
                                  : NULL,
                          g->cpg ? g->plan.slice_key : NULL};
    for (int i = 0; i < 2 && !running; i++)
        if (keys[i] && annot_level_by_label(&b->c->cluster->topo, keys[i]) < 0) {
            *why =
                arena_printf(a,
                             "%s %s: spec.schedulingConstraints.topology[0].key: \"%s\" "
                             "is not the node label of a configured topology level",
                             g->cpg && i == 0 ? "compositepodgroup" : "podgroup", g->key, keys[i]);
            return SCHED_EINVAL;
        }
    /* the PodGroup's annotations win; then Volcano's spec.networkTopology; then the first
     * member's (a pod template carries Kueue's podset-* topology annotations) */
    struct kv *ann;
    uint32_t n_ann;
    if (gang_annotations(g, members[0], a, &ann, &n_ann) != 0)
        return SCHED_ENOMEM;
    struct sched_errbuf eb;
    gg->user = kcache_gang_user(b->c, g->pg, members[0]);
    if (running) { /* a value refused at admission: none */
        struct gang scratch = *gg;
        if (annot_apply(&scratch, &b->c->cluster->topo, ann, n_ann, profile, &eb) == 0)
            gg->max_runtime_ms = scratch.max_runtime_ms;
        /* a bound pod keeps no annotations (objects.h): the first member's own, as pending */
        if (gg->max_runtime_ms <= 0 && members[0]->max_runtime_s)
            gg->max_runtime_ms = (int64_t)members[0]->max_runtime_s * 1000;
        return 0;
    }
    /* checked now, read when the gang runs (annot.c): its PodGroup's, or a gang of one's pod's */
    struct annot_run run = {0};
    const struct kpod_spec *fs = g->pg ? NULL : members[0]->spec;
    if (annot_apply(gg, &b->c->cluster->topo, ann, n_ann, profile, &eb) != 0 ||
        (g->pg && annot_run(g->pg->ann, g->pg->n_ann, &run, &eb) != 0) ||
        (fs && annot_run(fs->ann, fs->n_ann, &run, &eb) != 0)) {
        *why = arena_printf(a, "podgroup %s: %s", g->key, eb.msg);
        return SCHED_EINVAL;
    }
    /* read by the core while it waits: never on backfill probation (cycle.c) */
    gg->non_preemptible = run.non_preemptible;
    for (uint32_t i = 0; i < n; i++) /* a shared ResourceClaim: the gang on one node */
        if (kclaims_shared(b->c->dra, members[i]))
            gg->topo_required = (int8_t)(b->c->cluster->topo.n_levels - 1);
    return 0;
}

/* A pod set's node selector: its pods', and a running tree's domains for a gang that joins it
 * (cache_cpg.c pins). 0 or SCHED_ENOMEM. */
static int set_selector(struct arena *a, const struct group *g, const struct kpod_spec *sp,
                        bool running, struct podset *ps)
{
    uint32_t ns = sp ? sp->n_node_selector : 0, np = g->cpg && !running ? g->plan.n_pins : 0;
    if (np == 0) {
        ps->node_selector = sp ? sp->node_selector : NULL;
        ps->n_node_selector = ns;
        return 0;
    }
    struct kv *sel = arena_calloc(a, ns + np, sizeof(*sel));
    if (!sel)
        return SCHED_ENOMEM;
    if (ns)
        memcpy(sel, sp->node_selector, ns * sizeof(*sel));
    memcpy(sel + ns, g->plan.pins, np * sizeof(*sel));
    ps->node_selector = sel;
    ps->n_node_selector = ns + np;
    return 0;
}

/* kg's min_member (its n members placed), and a running tree's part_short. 0 or SCHED_ENOMEM. */
static int gang_minimum(struct arena *a, struct kgang *kg, const struct group *g, uint32_t n,
                        bool running)
{
    kg->min_member = g->pg ? g->pg->min_member : g->kueue_total ? g->kueue_total : 1;
    if (running && knative_min_raised(g->pg) && kg->min_member > n)
        kg->min_member = n; /* native: a raised minCount applies to future cycles only */
    if (g->cpg)
        kg->min_member = g->plan.min;
    if (running && g->cpg && g->plan.n_short) { /* groups below their own minimum go */
        if (!(kg->part_short = arena_calloc(a, n, sizeof(*kg->part_short))))
            return SCHED_ENOMEM;
        for (uint32_t i = 0; i < n; i++)
            kg->part_short[i] = kcache_cpg_short(&g->plan, kg->members[i]);
    }
    return 0;
}

/* Fills kg from members (sorted by name), grouping equal specs into pod sets. Pods that differ
 * only in preferences, in more ways than the pod sets hold, are placed without them. */
static int make_gang(struct builder *b, struct kgang *kg, const struct group *g,
                     struct kpod **members, uint32_t n, uint32_t q, bool running, const char **why)
{
    struct arena *a = b->a;
    struct gang *gg = &kg->gang;
    kg->key = g->key;
    kg->pg = g->pg;
    kg->running = running;
    gg->name = g->key;
    gg->queue = q;
    gg->topo_required = gg->topo_preferred = gg->slice_level = -1;
    /* the pod sets, with inter-pod preferences told apart unless that makes too many */
    uint32_t set_of[GANG_MAX_SETS]; /* first member of each set */
    uint8_t *set_id = arena_alloc(a, n ? n : 1);
    kg->members = arena_calloc(a, n ? n : 1, sizeof(*kg->members));
    if (!set_id || !kg->members)
        return SCHED_ENOMEM;
    bool prefs = true, over;
    uint32_t n_sets = kobj_sets(members, n, true, set_of, set_id, &over);
    if (over)
        n_sets = kobj_sets(members, n, prefs = false, set_of, set_id, &over);
    gg->n_sets = n_sets;
    if (!(gg->sets = arena_calloc(a, n_sets ? n_sets : 1, sizeof(*gg->sets))))
        return SCHED_ENOMEM;
    for (uint32_t s = 0; s < n_sets; s++) {
        const struct kpod *p = members[set_of[s]];
        struct podset *ps = &gg->sets[s];
        ps->req = p->req;
        const struct kpod_spec *sp = p->spec; /* decoded with the pod (objects.h) */
        if (sp && sp->err) {
            *why = sp->err;
            return SCHED_EINVAL;
        }
        if (set_selector(a, g, sp, running, ps) != 0)
            return SCHED_ENOMEM;
        if (sp) {
            ps->tolerations = sp->tolerations;
            ps->n_tolerations = sp->n_tolerations;
            ps->affinity = sp->affinity;
            ps->n_affinity = sp->n_affinity;
            ps->pref = prefs ? sp->pref : NULL;
            ps->n_pref = prefs ? sp->n_pref : 0;
        }
        /* inter-pod constraints: its first pod's labels; without prefs, no preferences */
        if (p->meta && !(ps->meta = kobj_set_meta(a, p->meta, prefs)))
            return SCHED_ENOMEM;
        if (!running && (p->n_claims || p->gpus_own > 0 || b->c->cluster->n_dra_mig_nodes) &&
            kclaims_node_filter(b->c->dra, b->c->cluster, p, a, ps) != 0)
            return SCHED_ENOMEM;
    }
    if (over) {
        *why =
            arena_printf(a, "pods of %s have more than %d different specs", g->key, GANG_MAX_SETS);
        return SCHED_EINVAL;
    }
    int64_t submit = INT64_MAX;
    for (uint32_t i = 0; i < n; i++) {
        const struct kpod *p = members[i];
        gg->sets[set_id[i]].count++;
        if (p->priority > gg->priority)
            gg->priority = p->priority;
        if (p->created_ms < submit)
            submit = p->created_ms;
    }
    gg->submit_ms = g->pg && g->pg->created_ms ? g->pg->created_ms : submit;
    if (g->pg && g->pg->has_priority) /* native: the PodGroup's priority is the gang's */
        gg->priority = g->pg->priority;
    /* preemptionPolicy Never: the native group's, else any member's (its PriorityClass's) */
    for (uint32_t i = 0; i < n && !(g->pg && g->pg->has_preempt_policy); i++)
        gg->never_preempts |= members[i]->preempt_never;
    if (g->pg && g->pg->has_preempt_policy)
        gg->never_preempts = g->pg->preempt_never;
    /* members in placement order: pods of set 0 first, then set 1, ... */
    uint32_t k = 0;
    for (uint32_t s = 0; s < n_sets; s++)
        for (uint32_t i = 0; i < n; i++)
            if (set_id[i] == s)
                kg->members[k++] = members[i];
    if (gang_minimum(a, kg, g, n, running) != 0)
        return SCHED_ENOMEM;
    const char *profile = NULL;
    int rc = gang_annots(b, g, gg, members, n, running, &profile, why);
    if (rc)
        return rc;
    int prc = b->cfg ? config_profile_apply(b->cfg, q, profile, gg) : 0;
    if (prc && running) /* a name a reload removed: the queue's */
        (void)config_profile_apply(b->cfg, q, NULL, gg);
    else if (prc) {
        *why = arena_printf(a,
                            "podgroup %s: annotation gangsched.io/profile: unknown profile "
                            "\"%s\"",
                            g->key, profile);
        return SCHED_EINVAL;
    }
    if (!running && kcd_gang(b->c->dra, &b->c->cluster->topo, members, n, gg, a, why) != 0)
        return SCHED_EINVAL; /* a ComputeDomain gang: one NVLink clique (computedomain.h) */
    gang_finalize(gg);
    /* pending: every pod together; running: an elastic gang's members above its PodGroup's
     * minMember are what a preemption may take alone (sched/core/preempt.h), unless a native
     * group's disruptionMode is all (one victim) */
    bool elastic = running && kg->pg && !kg->pg->disrupt_all && !g->cpg &&
                   kg->min_member < gg->n_pods; /* a tree is one victim */
    gg->min_member = elastic ? kg->min_member : gg->n_pods;
    if (!running && g->cpg && g->plan.slice_key && gg->n_sets != 1) {
        *why = arena_printf(a,
                            "compositepodgroup %s: its child pod groups have topology "
                            "constraints and pods of %u different specs; gangsched places "
                            "children with a topology constraint as slices of one gang, which "
                            "need one pod spec",
                            g->key, gg->n_sets);
        return SCHED_EINVAL;
    }
    return 0;
}

/* Usage of every pod that holds a node: bound in the API, or assumed by us (kept by deltas,
 * snapshot.c). GPU indices come from gangsched.io/gpu-ids; pods without them (other
 * schedulers') take the lowest free ones. */
static int account_usage(struct builder *b)
{
    const struct cluster *cl = b->c->cluster;
    int64_t *anon = arena_calloc(b->a, cl->n_nodes ? cl->n_nodes : 1, sizeof(*anon));
    if (!anon)
        return SCHED_ENOMEM;
    kcache_usage(b->c, b->state, anon);
    return 0;
}

/* The cluster, the per-node state and the usage array of a build. */
static int build_start(struct builder *b, struct sched_errbuf *eb)
{
    struct kcache *c = b->c;
    const struct config *cfg = b->cfg;
    if (!c->cluster || c->nodes_dirty || (cfg ? cfg->version : 0) != c->cluster_cfg) {
        int rc = kcache_rebuild_cluster(c, cfg, eb);
        if (rc)
            return rc;
    }
    c->dirty = false;
    const struct cluster *cl = c->cluster;
    b->n_flavors = cfg ? cfg->n_flavors : 1;
    b->n_queues = cfg ? cfg->n_queues : 0;
    b->state = arena_calloc(b->a, cl->n_nodes ? cl->n_nodes : 1, sizeof(*b->state));
    b->usage = arena_calloc(b->a, (size_t)(b->n_queues ? b->n_queues : 1) * b->n_flavors * RES_MAX,
                            sizeof(*b->usage));
    if (!b->state || !b->usage)
        return SCHED_ENOMEM;
    for (uint32_t i = 0; i < cl->n_nodes; i++)
        b->state[i].release_ms = INT64_MAX; /* unknown until the estimates (driver_est.c) */
    return 0;
}

/* A pod's first look (read_pods): its claims noted (shared claims: who uses each, and which its
 * PodGroup holds: claims.h),
 * and a native group with a pending member of another scheduler (upstream: every pod of a
 * group has the same schedulerName). */
static int note_pod(struct builder *b, struct kpod *p)
{
    const struct kpg *pg = p->n_claims && p->native && p->group && !p->pg_ref
                               ? kcache_pg(b->c, p->group)
                               : NULL; /* spec.schedulingGroup's PodGroup (KEP-5729) */
    bool pg_api = pg && (pg->api == KPG_NATIVE_V1ALPHA2 || pg->api == KPG_NATIVE_V1BETA1 ||
                         pg->api == KPG_NATIVE_V1ALPHA3);
    if ((p->claims_group || pg_api) && kdra_note_group(p, pg_api ? pg : NULL) != 0)
        return SCHED_ENOMEM;
    if (p->n_claims && kclaims_note_pod(b->c->dra, p) != 0)
        return SCHED_ENOMEM;
    if (!p->ours && p->native && p->group && !p->node && p->phase == KPOD_PENDING &&
        !strmap_get(&b->foreign, p->group) && strmap_put(&b->foreign, p->group, p->name, NULL))
        return SCHED_ENOMEM;
    return 0;
}

/* The KEP-5004 claim an earlier attempt left for pending pod p of ours, if any, into
 * out->ext_stale (grown in the cycle's arena). */
static int note_ext_stale(struct builder *b, const struct kpod *p)
{
    const struct kclaim *x = kcache_ext_of(b->c, p->uid);
    if (!x || !x->ext_pod || strcmp(x->ext_pod, p->key) != 0)
        return 0;
    struct kcache_build *o = b->out;
    if ((o->n_ext_stale & (o->n_ext_stale - 1)) == 0) { /* 0, 1, 2, 4, ...: full */
        const struct kclaim **v =
            arena_alloc(b->a, (o->n_ext_stale ? 2 * o->n_ext_stale : 1) * sizeof(*v));
        if (!v)
            return SCHED_ENOMEM;
        if (o->n_ext_stale)
            memcpy(v, o->ext_stale, o->n_ext_stale * sizeof(*v));
        o->ext_stale = v;
    }
    o->ext_stale[o->n_ext_stale++] = x;
    return 0;
}

/* A pod's claims' demand (a pod's GPUs include its claims': usage and placement), and one of
 * this scheduler's pods into its group. */
static int take_pod(struct builder *b, struct kpod *p)
{
    const char *key = p->key; /* its key in the cache's maps */
    struct kcache *c = b->c;
    const char *cw =
        p->n_claims || p->claim_wait ? kclaims_demand(c->dra, c->cluster, p, b->a) : NULL;
    if (!cw && p->gpus_own > 0 && p->ours && !p->node) /* container GPUs with nowhere to go */
        cw = kclaims_ext_why(c->dra, c->cluster, p, b->a);
    if (cw && p->ours && !p->node && strmap_put(&b->claim_why, key, (void *)cw, NULL))
        return SCHED_ENOMEM;
    bool terminal = p->phase == KPOD_SUCCEEDED || p->phase == KPOD_FAILED;
    if (!p->ours || (terminal && !p->node))
        return 0;
    /* a terminal member stays in its running gang: the lifecycle tells a failed member from a
     * gang that completes */
    bool bound = p->node || strmap_get(&c->assumed, key);
    if (!bound && !p->deleting && p->gpus_own > 0 && note_ext_stale(b, p) != 0)
        return SCHED_ENOMEM;
    if (!bound && (p->deleting || p->gated))
        return 0;
    char tree[KOBJ_KEY_MAX];
    const struct kpg *pg;
    bool cpg;
    const char *why;
    const char *gk = kcache_gang_of(c, p, tree, sizeof(tree), &pg, &cpg, &why);
    struct group *g = strmap_get(&b->groups, gk);
    if (!g) {
        g = arena_calloc(b->a, 1, sizeof(*g));
        if (!g || !(g->key = arena_strdup(b->a, gk)) || strmap_put(&b->groups, g->key, g, NULL))
            return SCHED_ENOMEM;
        g->named = cpg || (p->group != NULL && gk == p->group);
        g->cpg = cpg;
        g->tree_why = why;
        g->pg = g->named ? pg : NULL;
        g->foreign = g->named && p->native ? strmap_get(&b->foreign, gk) : NULL;
    }
    if (cpg && !g->foreign && p->native) /* a tree: each child's pods */
        g->foreign = strmap_get(&b->foreign, p->group);
    if (p->group_total > g->kueue_total) /* Kueue's plain-pod group: its members say it */
        g->kueue_total = p->group_total;
    if (bound && !p->deleting && !terminal)
        g->n_bound_live++;
    else if (bound && !terminal)
        g->n_bound_dying++;
    return bound ? push(&g->bound, &g->n_bound, &g->cap_bound, p)
                 : push(&g->pending, &g->n_pending, &g->cap_pending, p);
}

/* How far ahead of read_pods' walks a pod's first cache line is fetched, and its group key's. */
#define READ_AHEAD 16

/* The cache's hot pods (ours, native groups', with claims) in two passes over an array of them,
 * each pod's fields read together, fetched ahead (the pods are scattered in the heap: each first
 * read was a cache miss): every claim noted before a demand, every foreign member seen before a
 * group. */
static int read_pods(struct builder *b)
{
    const struct strmap *hot = kcache_hot(b->c);
    struct kpod **pods = arena_alloc(b->a, (hot->n + 1) * sizeof(*pods));
    if (!pods)
        return SCHED_ENOMEM;
    size_t n = 0;
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(hot, &i, &key, &v);)
        pods[n++] = v;
    kclaims_consumers_reset(b->c->dra);
    kmig_build_begin(kclaims_mig(b->c->dra)); /* MIG profile choices of this build */
    bool notes = b->c->full || b->c->hot_claims || b->c->hot_foreign; /* note_pod has work */
    for (size_t i = 0; notes && i < n; i++) {
        if (i + READ_AHEAD < n)
            __builtin_prefetch(pods[i + READ_AHEAD]);
        if (note_pod(b, pods[i]) != 0)
            return SCHED_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (i + READ_AHEAD < n)
            __builtin_prefetch(pods[i + READ_AHEAD]);
        if (i + READ_AHEAD / 2 < n && pods[i + READ_AHEAD / 2]->group)
            __builtin_prefetch(pods[i + READ_AHEAD / 2]->group);
        int rc = take_pod(b, pods[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* A group's queue: its name (label or default), whether it names a Kueue LocalQueue, the
 * group's namespace, the configuration's index (-1: none) and the name a job row shows. */
struct gqueue {
    const char *name;
    bool kueue;
    char ns[KOBJ_KEY_MAX];
    int q;
    const char *shown;
};

static void queue_of(const struct builder *b, const struct group *g, struct gqueue *gq)
{
    const struct config *cfg = b->cfg;
    gq->name = group_queue(g, cfg, &gq->kueue);
    const char *slash = strchr(g->key, '/');
    snprintf(gq->ns, sizeof(gq->ns), "%.*s", slash ? (int)(slash - g->key) : 0, g->key);
    gq->q = !gq->name || !cfg ? -1
            : gq->kueue       ? config_local_queue(cfg, gq->ns, gq->name)
                              : config_queue_index(cfg, gq->name);
    /* the queue a waiting gang's job row names: the configuration's, else its label */
    gq->shown = gq->q >= 0 && cfg ? cfg->queues[gq->q].name : gq->name;
}

/* Why a pending group cannot be offered to the core (its reason; *msg from the arena, NULL out
 * of memory), or NULL when it can. */
static const char *why_waiting(struct builder *b, const struct group *g, const struct gqueue *gq,
                               const char **msg)
{
    struct arena *a = b->a;
    const struct config *cfg = b->cfg;
    uint32_t min = g->pg ? g->pg->min_member : g->kueue_total ? g->kueue_total : 1;
    /* native, scheduled once: a raised minCount never evicts running pods */
    if (knative_min_raised(g->pg) && g->n_bound_live > 0 && g->n_bound_live < min)
        min = g->n_bound_live;
    const char *cw = NULL; /* a member's ResourceClaims (sched/kube/dra.h) */
    for (uint32_t m = 0; m < g->n_pending && !cw; m++)
        cw = strmap_get(&b->claim_why, g->pending[m]->key);
    if (g->cpg && !g->pg) { /* "ns/cpg:name" (cache_cpg.c) */
        const char *colon = strchr(g->key, ':');
        return *msg = arena_printf(a,
                                   "their PodGroups name compositepodgroup %.*s%s as parent, "
                                   "which does not exist (yet)",
                                   (int)(strchr(g->key, '/') - g->key + 1), g->key,
                                   colon ? colon + 1 : g->key),
               "PodGroupNotFound";
    }
    if (g->named && !g->pg && !g->kueue_total)
        return *msg = arena_printf(a, "pods name podgroup %s, which does not exist (yet)", g->key),
               "PodGroupNotFound";
    /* a group being deleted (kept by a finalizer: the podgroup-protection one of native groups
     * while pods name it, any other on any kind) is going away with its workload: none of its
     * pending pods is started, an elastic gang does not grow. kube-scheduler 1.36/1.37 does
     * not look (GangScheduling's PreEnqueue, pkg/scheduler/framework/plugins/gangscheduling,
     * reads only the group's existence and minCount; the podgroupprotection controller keeps
     * the object while a pod that is not Succeeded or Failed names it): it could still start a
     * gang whose owner is tearing it down. Running members are left to that owner. */
    if (g->pg && g->pg->deleting)
        return *msg = arena_printf(a,
                                   "podgroup %s is being deleted (metadata.deletionTimestamp "
                                   "set): its pending pods are not started",
                                   g->key),
               "PodGroupDeleting";
    if (cw)
        return *msg = arena_strdup(a, cw), strstr(cw, "resourceclaim ") == cw ? "InvalidSpec"
                                           : strstr(cw, "no DeviceClass maps ") == cw
                                               ? "Unschedulable"
                                               : "WaitingForResourceClaim";
    if (g->foreign)
        return *msg = arena_printf(a,
                                   "all pods of pod group %s should have the same "
                                   ".spec.schedulerName; pod %s has another: its pods are left "
                                   "alone",
                                   g->key, g->foreign),
               "SchedulerError";
    /* a tree: its plan judges its members (cache_cpg.c), once an earlier attempt is gone */
    if (g->cpg) {
        if (g->plan.reason && !(g->n_bound_live == 0 && g->n_bound_dying > 0))
            return *msg = g->plan.message, g->plan.reason;
        min = 0;
    }
    /* bound and pending members are judged together: pending ones join bound ones only when
     * those make a whole gang already (an elastic gang grows); below minMember the bound ones
     * are torn down first (lifecycle.c) */
    if (g->n_bound_live > 0 && g->n_bound_live < min)
        return *msg = arena_printf(a,
                                   "%u of minMember %u members are bound; they are deleted "
                                   "before the gang is placed again (a gang starts whole)",
                                   g->n_bound_live, min),
               "PartialGang";
    if (g->n_bound_live == 0 && g->n_bound_dying > 0)
        return *msg = arena_printf(a, "%u member(s) of an earlier attempt are still terminating",
                                   g->n_bound_dying),
               "WaitingForTeardown";
    if (g->n_pending + g->n_bound_live < min)
        return *msg = arena_printf(a, "%u of minMember %u pods exist",
                                   g->n_pending + g->n_bound_live, min),
               "WaitingForPods";
    if (gq->kueue && gq->q < 0)
        return *msg = arena_printf(a,
                                   "Kueue LocalQueue %s/%s is not mapped to a queue "
                                   "(queues[].localQueues in the configuration) and no queue "
                                   "has its name",
                                   gq->ns, gq->name),
               "UnmappedLocalQueue";
    if (gq->q >= 0 && !config_queue_admits(cfg, (uint32_t)gq->q, gq->ns))
        return *msg = arena_printf(a,
                                   "namespace %s may not submit to queue %s (queues[].namespaces "
                                   "in the configuration)",
                                   gq->ns, cfg->queues[gq->q].name),
               "NamespaceNotAllowed";
    if (gq->name && gq->q < 0)
        return *msg = arena_printf(a, "queue \"%s\" is not in the configuration", gq->name),
               "UnknownQueue";
    if (!gq->name)
        return *msg = arena_printf(a, "no queue label (gangsched.io/queue or "
                                      "kueue.x-k8s.io/queue-name) and no default queue"),
               "NoQueue";
    return NULL;
}

/* One group's gang (pending: pass 0, running: pass 1), or its waiting entry. */
static int offer_group(struct builder *b, struct group *g, int pass)
{
    uint32_t n = pass == 0 ? g->n_pending : g->n_bound;
    struct kpod **members = pass == 0 ? g->pending : g->bound;
    if (n == 0)
        return 0;
    qsort(members, n, sizeof(*members), cmp_pod);
    if (g->cpg && g->pg && !g->planned) { /* the tree's plan, reordering the pods by child */
        if (kcache_cpg_plan(b->c, g->pg, g->tree_why, g->pending, pass == 0 ? g->n_pending : 0,
                            g->bound, g->n_bound, b->a, &g->plan) != 0)
            return SCHED_ENOMEM;
        g->planned = true;
    }
    struct gqueue gq;
    queue_of(b, g, &gq);
    if (pass == 0) {
        const char *msg = NULL, *reason = why_waiting(b, g, &gq, &msg);
        if (reason)
            return add_waiting(b, g, gq.shown, reason, msg);
    } else {
        bool done = true; /* every member Succeeded: the gang finished */
        for (uint32_t m = 0; m < n && done; m++)
            done = members[m]->phase == KPOD_SUCCEEDED;
        if (done)
            return 0;
    }
    if (pass == 0 && g->cpg) {
        members = g->plan.members;
        n = g->plan.n_members;
    } else if (pass == 0 && g->pg && knative_is(g->pg->api)) {
        n = g->n_bound_live == 0 ? (n < min_of(g) ? n : min_of(g)) : 1;
    }
    int q = gq.q;
    if (pass == 1 && q < 0) {
        q = 0; /* still charged somewhere: usage must not vanish with a config edit */
        if (!b->cfg || b->cfg->n_queues == 0)
            return 0;
    }
    struct kcache_build *out = b->out;
    struct kgang *kg = &out->gangs[out->n_gangs];
    const char *why = NULL;
    int rc = make_gang(b, kg, g, members, n, (uint32_t)q, pass == 1, &why);
    if (rc == SCHED_EINVAL) {
        memset(kg, 0, sizeof(*kg));
        return pass == 0 ? add_waiting(b, g, gq.shown, "InvalidSpec", why) : 0;
    }
    if (rc)
        return rc;
    kg->gang.id = out->n_gangs++;
    for (uint32_t m = 0; pass == 0 && m < n && !kg->hint; m++)
        kg->hint = kclaims_ext_hint(b->c->dra, b->c->cluster, members[m], b->a);
    if (pass == 0) {
        out->n_pending++;
        g->pending_gang = kg;
    } else if (g->pending_gang) { /* elastic: its new members join this one */
        g->pending_gang->run = kg;
    }
    return 0;
}

/* Pending gangs first (their ids index out->gangs), then running ones, groups by key. */
static int offer_groups(struct builder *b)
{
    size_t n_groups = b->groups.n, n_gangs = 0; /* at most one pending, one running each */
    struct group **gv = arena_calloc(b->a, n_groups ? n_groups : 1, sizeof(*gv));
    if (!gv)
        return SCHED_ENOMEM;
    size_t k = 0;
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&b->groups, &i, &key, &v);) {
        const struct group *g = gv[k++] = v;
        n_gangs += (g->n_pending > 0) + (g->n_bound > 0);
    }
    b->out->gangs = arena_calloc(b->a, n_gangs + 1, sizeof(*b->out->gangs));
    b->out->waiting = arena_calloc(b->a, n_groups + 1, sizeof(*b->out->waiting));
    if (!b->out->gangs || !b->out->waiting)
        return SCHED_ENOMEM;
    qsort(gv, k, sizeof(*gv), cmp_group);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < k; i++) {
            int rc = offer_group(b, gv[i], pass);
            if (rc)
                return rc;
        }
    return 0;
}

/* Each queue's pending gangs in queue order. */
static int queue_views(struct builder *b, struct sched_queue_view **out_views)
{
    struct kcache_build *out = b->out;
    const struct config *cfg = b->cfg;
    uint32_t nq = b->n_queues;
    struct sched_queue_view *views = arena_calloc(b->a, nq ? nq : 1, sizeof(*views));
    struct queue *queues = arena_calloc(b->a, nq ? nq : 1, sizeof(*queues));
    if (!views || !queues)
        return SCHED_ENOMEM;
    bool by_prio = b->pol ? b->pol->by_priority : true;
    for (uint32_t q = 0; q < nq; q++) {
        queues[q] = (struct queue){.name = cfg->queues[q].name,
                                   .priority = cfg->queues[q].priority,
                                   .weight = cfg->queues[q].weight};
        struct queue_list l;
        queue_list_init(&l, by_prio);
        int rc = 0;
        for (uint32_t i = 0; i < out->n_pending && rc == 0; i++)
            if (out->gangs[i].gang.queue == q)
                rc = queue_list_insert(&l, &out->gangs[i].gang);
        const struct gang **items = arena_calloc(b->a, l.n ? l.n : 1, sizeof(*items));
        if (rc || !items) {
            queue_list_fini(&l);
            return SCHED_ENOMEM;
        }
        if (l.n)
            memcpy(items, l.items, l.n * sizeof(*items));
        views[q] =
            (struct sched_queue_view){.queue = &queues[q], .pending = items, .n_pending = l.n};
        queue_list_fini(&l);
    }
    *out_views = views;
    return 0;
}

/* A running gang for preemption: where its members are, its flavor (usage charged to its
 * queue), when it started, its last checkpoint and its preemption hints. *placed: every member
 * is on a node of the cluster; else (a node not seen yet, or gone) the gang is charged to its
 * quota but stays out of preemption and of the GPU shares' usage until its nodes are known: a
 * victim or a share on a node that is not where it runs would free or take capacity there. */
static int running_gang(struct builder *b, struct kgang *kg, struct sched_running *run,
                        bool *placed)
{
    struct kcache *c = b->c;
    const struct config *cfg = b->cfg;
    struct sched_assign *as = arena_calloc(b->a, kg->gang.n_pods, sizeof(*as));
    kg->nodes = arena_calloc(b->a, kg->gang.n_pods, sizeof(*kg->nodes));
    if (!as || !kg->nodes)
        return SCHED_ENOMEM;
    uint32_t flavor = 0;
    int64_t start = INT64_MAX, newest = 0, bound = b->now_ms; /* first, last start; binding */
    bool evicting = false, flavored = false;
    *placed = true;
    for (uint32_t m = 0; m < kg->gang.n_pods; m++) {
        const struct kpod *p = kg->members[m];
        const struct kassume *am = p->node ? NULL : strmap_get(&c->assumed, p->key);
        int ix = kcache_node_index(c, p->node ? p->node : am ? am->node : "");
        *placed = *placed && ix >= 0;
        as[m].node = kg->nodes[m] = ix >= 0 ? (uint32_t)ix : UINT32_MAX;
        as[m].gpu_mask = am ? am->gpu_mask : p->gpu_mask;
        if (!flavored && ix >= 0) /* the first member on a known node */
            flavor = am ? am->flavor : pod_flavor(cfg, p, &c->cluster->nodes[ix]);
        flavored = flavored || ix >= 0;
        /* the run started when its first member did; a member bound but not yet started (no
         * startTime, no PodScheduled time) starts now */
        int64_t ps = p->started_ms > 0 ? p->started_ms : b->now_ms;
        start = ps < start ? ps : start;
        newest = ps > newest ? ps : newest;
        bound = p->bound_ms > 0 && p->bound_ms < bound ? p->bound_ms : bound;
        evicting |= p->deleting;
    }
    if (cfg && flavor < cfg->n_flavors) {
        struct res_vec need = {{0}}; /* as admission charged it (gang_request) */
        for (uint32_t m = 0; m < kg->gang.n_pods; m++)
            gang_pod_charge(&kg->members[m]->req, 1, &need);
        for (int r = 0; r < RES_MAX; r++)
            b->usage[((size_t)kg->gang.queue * b->n_flavors + flavor) * RES_MAX + r] += need.v[r];
    }
    /* the last checkpoint: the latest gangsched.io/last-checkpoint of its PodGroup (if any) and
     * of its members (a job without a PodGroup, or one that answers on a pod), else the start */
    int64_t ckpt = start, ms;
    const char *t = kobj_pg_annotation(kg->pg, KOBJ_ANNOT_LAST_CKPT);
    if (t && kobj_time(t, &ms) == 0 && ms > ckpt)
        ckpt = ms;
    for (uint32_t m = 0; m < kg->gang.n_pods; m++)
        if (kg->members[m]->ckpt_last_ms > ckpt)
            ckpt = kg->members[m]->ckpt_last_ms;
    const struct config_queue *cq = cfg ? &cfg->queues[kg->gang.queue] : NULL;
    /* the gang's own min-runtime, restart-cost and non-preemptible (annot.c's table) over the
     * queue's; a bad value keeps the queue's (the gang was refused with it at admission) */
    struct annot_run hints = {.min_runtime_ms = cq ? cq->preemption.min_runtime_ms : 0,
                              .restart_cost_ms = cq ? cq->preemption.restart_cost_ms : 0};
    /* a gang of one: its pod's own values, kept from its annotations (a bound pod has none) */
    const struct kpod *first = kg->pg ? NULL : kg->members[0];
    if (first && first->min_runtime_ms >= 0)
        hints.min_runtime_ms = first->min_runtime_ms;
    if (first && first->restart_cost_ms >= 0)
        hints.restart_cost_ms = first->restart_cost_ms;
    hints.non_preemptible = first && first->non_preemptible;
    struct sched_errbuf e2;
    if (kg->pg && annot_run(kg->pg->ann, kg->pg->n_ann, &hints, &e2) != 0)
        LOG_DEBUG("kube", "podgroup %s: %s", kg->key, e2.msg);
    kg->last_ckpt_ms = ckpt > newest ? ckpt : newest; /* a member's join restarts every worker */
    kg->ckpt_every_ms = hints.checkpoint_every_ms;
    kg->bound_ms = bound;
    *run = (struct sched_running){
        .gang = &kg->gang,
        .pods = as,
        .flavor = flavor,
        .start_ms = start,
        .last_checkpoint_ms = ckpt,
        .restart_cost_ms = hints.restart_cost_ms,
        .min_runtime_ms = hints.min_runtime_ms,
        .non_preemptible = hints.non_preemptible,
        .evicting = evicting,
    };
    return 0;
}

static void build_free(struct builder *b)
{
    const char *key;
    void *v;
    for (size_t i = 0; strmap_next(&b->groups, &i, &key, &v);) {
        struct group *g = v;
        free(g->pending);
        free(g->bound);
    }
    strmap_fini(&b->groups);
    strmap_fini(&b->foreign);
    strmap_fini(&b->claim_why);
}

/* The phases of a build, after build_start: pods (claims, groups), usage, gangs, queues, running.
 */
static int build_phases(struct builder *b)
{
    const struct cluster *cl = b->c->cluster;
    struct kcache_build *out = b->out;
    int rc = read_pods(b);
    if (rc)
        return rc;
    if ((rc = account_usage(b)))
        return rc;
    for (uint32_t i = 0; i < cl->n_nodes; i++)
        if (b->state[i].used.v[RES_PODS] == 0)
            b->state[i].release_ms = 0;
    struct sched_queue_view *views = NULL;
    if ((rc = offer_groups(b)) || (rc = queue_views(b, &views)))
        return rc;
    struct sched_running *run = arena_calloc(b->a, out->n_gangs - out->n_pending + 1, sizeof(*run));
    if (!run)
        return SCHED_ENOMEM;
    uint32_t n_run = 0;
    for (uint32_t i = out->n_pending; i < out->n_gangs; i++) {
        bool placed;
        if ((rc = running_gang(b, &out->gangs[i], &run[n_run], &placed)))
            return rc;
        n_run += placed; /* a gang on a node the cluster does not have: not offered */
    }
    for (struct kgang *p = out->gangs; p < out->gangs + out->n_pending; p++) /* new members of */
        if (p->run && p->run->nodes) { /* an elastic gang go next to those that run (gang.near) */
            gang_set_near(&p->gang, p->run->nodes, p->run->gang.n_pods);
            gang_set_join(&p->gang, p->run->last_ckpt_ms, p->run->ckpt_every_ms,
                          p->run->gang.gpus); /* and join after its checkpoint */
        }
    const struct sched_policy *pol = b->pol;
    out->views = views;
    out->state = b->state;
    out->running = run;
    out->n_running = n_run;
    out->snap = (struct sched_snapshot){
        .now_ms = b->now_ms,
        .cluster = cl,
        .state = b->state,
        .queues = views,
        .n_queues = b->n_queues,
        .policy = pol,
        .config = b->cfg,
        .usage = b->usage,
        .verdict_every_gang = true,
        .running = pol && pol->preempt ? run : NULL,
        .n_running = pol && pol->preempt ? n_run : 0,
        .shares = run, /* GPU shares: the devices' usage (sched/core/place_share.c) */
        .n_shares = n_run,
    }; /* and the pods inter-pod constraints read (snapshot.c) */
    return kcache_bound_pods(b->c, out, b->a);
}

int kcache_build(struct kcache *c, const struct config *cfg, const struct sched_policy *pol,
                 int64_t now_ms, struct arena *a, struct kcache_build *out, struct sched_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    struct builder b = {.c = c, .cfg = cfg, .pol = pol, .a = a, .out = out, .now_ms = now_ms};
    int rc = build_start(&b, eb);
    if (rc)
        return rc;
    strmap_init(&b.claim_why);
    strmap_init(&b.groups);
    strmap_init(&b.foreign);
    rc = build_phases(&b);
    build_free(&b);
    return rc;
}
