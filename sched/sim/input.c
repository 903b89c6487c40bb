/* sched/sim/input.c: jobs built from traces (sim_input_build, the default configuration, workload
 * knobs) (see run.h). */
#include "sched/core/device.h"
#include "sched/core/dra.h"
#include "sched/core/hami.h"
#include "sched/core/strmap.h"
#include "sched/sim/run.h"

#define CPU_PER_GPU_MILLI 4000
#define MEM_PER_GPU_BYTES (32ll << 30)

/* ---- input ------------------------------------------------------------------------------- */

/* Index of a topology level by name: -1 for NULL, < -1 (with a message) when unknown. */
static int level_of(const struct cluster *c, const char *name, const struct trace *t,
                    const struct trace_job *tj, const char *column, struct sched_errbuf *eb)
{
    if (!name)
        return -1;
    for (uint32_t l = 0; l < c->topo.n_levels; l++)
        if (strcmp(c->topo.levels[l].name, name) == 0)
            return (int)l;
    char known[256] = "";
    size_t at = 0;
    for (uint32_t l = 0; l < c->topo.n_levels && at < sizeof(known); l++) {
        int k =
            snprintf(known + at, sizeof(known) - at, "%s%s", l ? ", " : "", c->topo.levels[l].name);
        if (k > 0)
            at += (size_t)k;
    }
    sched_fail(eb, SCHED_EINVAL, "%s:%u: column '%s': unknown topology level '%s' (levels: %s)",
               t->files[tj->file], tj->line, column, name, known);
    return -2;
}

/* Queue names of a trace, in order of first appearance. */
static int trace_queues(const struct trace *t, const char ***names, uint32_t *n)
{
    *names = NULL;
    *n = 0;
    uint32_t cap = 0;
    for (size_t i = 0; i < t->n_jobs; i++) {
        bool seen = false;
        for (uint32_t q = 0; q < *n && !seen; q++)
            seen = strcmp((*names)[q], t->jobs[i].queue) == 0;
        if (seen)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            const char **nn = realloc(*names, cap * sizeof(*nn));
            if (!nn)
                return SCHED_ENOMEM;
            *names = nn;
        }
        (*names)[(*n)++] = t->jobs[i].queue;
    }
    return 0;
}

static void yaml_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* The default configuration when none is given (see sim.h). */
static int default_config(const struct trace *t, const struct cluster *c, struct config **out,
                          struct sched_errbuf *eb)
{
    const char **names;
    uint32_t n;
    if (trace_queues(t, &names, &n) != 0)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    double *gh = calloc(n + 1, sizeof(*gh)), total = 0;
    int64_t *nominal = calloc(n + 1, sizeof(*nominal));
    char *text = NULL;
    size_t len = 0;
    FILE *f = gh && nominal ? open_memstream(&text, &len) : NULL;
    int rc = SCHED_ENOMEM;
    if (!f) {
        sched_fail(eb, rc, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < t->n_jobs; i++)
        for (uint32_t q = 0; q < n; q++)
            if (strcmp(names[q], t->jobs[i].queue) == 0) {
                double h = (double)t->jobs[i].num_gpu * (double)t->jobs[i].duration_ms / 3.6e6;
                gh[q] += h;
                total += h;
                break;
            }
    /* largest remainder: nominal quotas sum to the cluster's GPUs */
    int64_t cap = c->total_gpus, given = 0;
    for (uint32_t q = 0; q < n; q++) {
        double share = total > 0 ? gh[q] / total : 1.0 / n;
        nominal[q] = (int64_t)((double)cap * share);
        given += nominal[q];
    }
    while (given < cap && n > 0) {
        uint32_t best = 0;
        double best_rem = -1;
        for (uint32_t q = 0; q < n; q++) {
            double share = total > 0 ? gh[q] / total : 1.0 / n;
            double rem = (double)cap * share - (double)nominal[q];
            if (rem > best_rem) {
                best_rem = rem;
                best = q;
            }
        }
        nominal[best]++;
        given++;
    }
    /* the cohort is "all", or "all-N" when a queue (a trace file) is already called that */
    char cohort[32] = "all";
    for (unsigned k = 1;; k++) {
        uint32_t q = 0;
        while (q < n && strcmp(names[q], cohort) != 0)
            q++;
        if (q == n)
            break;
        snprintf(cohort, sizeof(cohort), "all-%u", k);
    }
    fprintf(f,
            "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
            "cohorts:\n  - name: %s\nqueues:\n",
            cohort);
    for (uint32_t q = 0; q < n; q++) {
        fputs("  - name: ", f);
        yaml_quoted(f, names[q]);
        fprintf(f,
                "\n    cohort: %s\n    quota:\n      default:\n"
                "        nvidia.com/gpu: %lld\n",
                cohort, (long long)nominal[q]);
    }
    if (fclose(f) != 0) {
        f = NULL;
        sched_fail(eb, rc, "out of memory");
        goto out;
    }
    f = NULL;
    rc = config_load_buffer("<default config>", text, len, out, eb);
out:
    if (f)
        fclose(f);
    free(text);
    free(gh);
    free(nominal);
    free(names);
    return rc;
}

static void pod_request(struct res_vec *req, int64_t gpus)
{
    memset(req, 0, sizeof(*req));
    req->v[RES_GPU] = gpus;
    req->v[RES_CPU] = gpus > 0 ? gpus * CPU_PER_GPU_MILLI : 1000;
    req->v[RES_MEMORY] = gpus > 0 ? gpus * MEM_PER_GPU_BYTES : (4ll << 30);
    req->v[RES_PODS] = 1;
}

/* The `resource` column: num_gpu counts that resource (a MIG profile such as
 * nvidia.com/mig-1g.10gb, a pool of its own) instead of the device, or, when it names another
 * device kind of the config's `devices:` (amd.com/gpu), devices of that kind (res.h). 0 or
 * SCHED_EINVAL. */
static int row_resource(struct gang *g, const struct trace_job *tj, const struct trace *t,
                        struct sched_errbuf *eb)
{
    int id;
    struct sched_errbuf reb;
    if (strcmp(tj->resource, device_resource()) == 0)
        return 0;
    if (res_intern(tj->resource, &id, &reb) != 0)
        return sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'resource': %s", t->files[tj->file],
                          tj->line, reb.msg);
    bool kind = false; /* another accelerator kind of `devices:`: counted in the slot too */
    for (int k = 1; k < res_kind_count(); k++)
        kind = kind || res_kind_res(k) == id;
    for (uint32_t s = 0; s < g->n_sets; s++) {
        g->sets[s].req.v[id] = g->sets[s].req.v[RES_GPU];
        if (!kind)
            g->sets[s].req.v[RES_GPU] = 0;
    }
    return 0;
}

/* The gpumem and gpucores columns: each pod shares its devices (gpus_per_pod, default 1) in
 * HAMi's model, asking nvidia.com/gpumem MiB and nvidia.com/gpucores percent of each device, as a
 * pod spec does (sched/core/place_share.c places it). 0 or SCHED_EINVAL. */
static int row_share(struct gang *g, const struct trace_job *tj, const struct trace *t,
                     struct sched_errbuf *eb)
{
    int mem = -1, cores = -1;
    struct sched_errbuf reb;
    if ((tj->gpumem_mib > 0 && res_intern(HAMI_RES_MEM, &mem, &reb) != 0) ||
        (tj->gpucores > 0 && res_intern(HAMI_RES_CORES, &cores, &reb) != 0))
        return sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'gpumem'/'gpucores': %s",
                          t->files[tj->file], tj->line, reb.msg);
    for (uint32_t s = 0; s < g->n_sets; s++) {
        if (g->sets[s].req.v[RES_GPU] <= 0)
            return sched_fail(eb, SCHED_EINVAL,
                              "%s:%u: job %s: gpumem/gpucores share GPUs: num_gpu must be >= 1",
                              t->files[tj->file], tj->line, tj->id);
        if (mem >= 0)
            g->sets[s].req.v[mem] = tj->gpumem_mib;
        if (cores >= 0)
            g->sets[s].req.v[cores] = tj->gpucores;
    }
    return 0;
}

/* The GPU DeviceClass's slot when quotaMapping counts the class and every GPU node of the
 * cluster has its GPUs from ResourceSlices: a job's GPUs are then devices it claims of that class
 * and ask the slot too (sched/core/dra.h); else -1 (a mixed cluster: the device's GPUs). */
static int dra_class_slot(const struct cluster *c, const struct config *cfg)
{
    int s = config_qmap_class(cfg, device_dra_class());
    bool any = false;
    for (uint32_t i = 0; s >= 0 && i < c->n_nodes; i++)
        if (c->nodes[i].n_gpus > 0) {
            if (c->nodes[i].alloc.v[s] != c->nodes[i].alloc.v[RES_GPU])
                return -1;
            any = true;
        }
    return any ? s : -1;
}

/* The gang's pod sets from the trace row: gpus_per_pod wins; else `pods` pods as even as
 * possible (the first ones one GPU larger); else whole nodes of the largest node size
 * (node_gpus GPUs). At most SIM_JOB_SETS sets. */
static void pod_sets(struct gang *g, const struct trace_job *tj, int64_t node_gpus)
{
    int64_t gpus = tj->num_gpu;
    int64_t gpp = tj->gpus_per_pod > 0 ? tj->gpus_per_pod
                  : tj->pods > 0       ? gpus / tj->pods
                                       : (gpus < node_gpus ? gpus : node_gpus);
    if (gpus == 0) {
        g->n_sets = 1;
        g->sets[0].count = tj->pods > 0 ? (uint32_t)tj->pods : 1;
        pod_request(&g->sets[0].req, 0);
    } else if (tj->pods > 0 && tj->gpus_per_pod <= 0 && gpus >= tj->pods) {
        int64_t big = gpus % tj->pods; /* pods with gpp + 1 GPUs */
        g->n_sets = 0;
        if (big > 0) {
            g->sets[g->n_sets].count = (uint32_t)big;
            pod_request(&g->sets[g->n_sets].req, gpp + 1);
            g->n_sets++;
        }
        g->sets[g->n_sets].count = (uint32_t)(tj->pods - big);
        pod_request(&g->sets[g->n_sets].req, gpp);
        g->n_sets++;
    } else {
        if (gpp <= 0)
            gpp = 1;
        int64_t full = gpus / gpp, rest = gpus % gpp;
        g->n_sets = 0;
        if (full > 0) {
            g->sets[g->n_sets].count = (uint32_t)full;
            pod_request(&g->sets[g->n_sets].req, gpp);
            g->n_sets++;
        }
        if (rest > 0) {
            g->sets[g->n_sets].count = 1;
            pod_request(&g->sets[g->n_sets].req, rest);
            g->n_sets++;
        }
    }
}

/* Each job's gang.user: 1 + the index of its trace user in order of first appearance (the
 * same trace gives the same numbers, so a resumed run learns the same); 0 without one. */
static int intern_users(struct sim_input *in, const struct trace *t)
{
    struct strmap seen;
    strmap_init(&seen);
    int rc = 0;
    for (size_t i = 0; i < t->n_jobs && rc == 0; i++) {
        const char *u = t->jobs[i].user;
        if (!u)
            continue;
        in->jobs[i].user = u; /* the store's row names it even past EST_USERS_MAX */
        uintptr_t id = (uintptr_t)strmap_get(&seen, u);
        if (id == 0) {
            id = (uintptr_t)in->n_users + 1;
            if (id > EST_USERS_MAX)
                continue; /* learned as unknown (estimate.h) */
            if ((rc = strmap_put(&seen, u, (void *)id, NULL)) != 0)
                break;
            in->n_users++;
        }
        in->jobs[i].gang.user = (uint32_t)id;
    }
    strmap_fini(&seen);
    return rc;
}

/* Whether job j may be elastic: slices and GPU shares stay rigid (the core takes members alone
 * only of gangs without them). One rule for the min_pods column and for --elastic. */
static bool elastic_allowed(const struct sim_job *j, const struct trace_job *tj)
{
    return j->gang.slice_size == 0 && tj->gpumem_mib == 0 && tj->gpucores == 0;
}

/* An elastic job (column min_pods): it starts whole and runs on with at least min_pods pods;
 * members above that are what a preemption may take alone (sim/elastic.c). Pods that split
 * into slices or share GPUs stay rigid: refused. */
static int elastic_row(struct sim_input *in, struct sim_job *j, const struct trace_job *tj,
                       const struct trace *t, struct sched_errbuf *eb)
{
    const struct gang *g = &j->gang;
    if ((uint32_t)tj->min_pods > g->n_pods)
        return sched_fail(eb, SCHED_EINVAL,
                          "%s:%u: column 'min_pods': job %s: %d is more than its %u pods",
                          t->files[tj->file], tj->line, tj->id, tj->min_pods, g->n_pods);
    if ((uint32_t)tj->min_pods == g->n_pods)
        return 0; /* every pod: rigid */
    if (!elastic_allowed(j, tj))
        return sched_fail(eb, SCHED_EINVAL,
                          "%s:%u: column 'min_pods': job %s: an elastic job can have neither "
                          "slices (slice-size, a tp-size above a pod's GPUs) nor GPU shares "
                          "(gpumem, gpucores)",
                          t->files[tj->file], tj->line, tj->id);
    j->min_pods = (uint32_t)tj->min_pods;
    in->n_elastic++;
    return 0;
}

int sim_input_build(struct sim_input *in, const struct trace *t, const struct cluster *c,
                    const struct config *cfg, struct sched_errbuf *eb)
{
    memset(in, 0, sizeof(*in));
    in->cluster = c;
    if (!cfg) {
        int rc = default_config(t, c, &in->owned_config, eb);
        if (rc != 0)
            return rc;
        cfg = in->owned_config;
    }
    in->config = cfg;
    int dra_class = dra_class_slot(c, cfg);
    in->n_queues = cfg->n_queues;
    in->queues = calloc(cfg->n_queues + 1, sizeof(*in->queues));
    in->jobs = calloc(t->n_jobs ? t->n_jobs : 1, sizeof(*in->jobs));
    in->sets = calloc(t->n_jobs ? SIM_JOB_SETS * t->n_jobs : 1, sizeof(*in->sets));
    if (!in->jobs || !in->queues || !in->sets) {
        sim_input_free(in);
        return sched_fail(eb, SCHED_ENOMEM, "out of memory for %zu jobs", t->n_jobs);
    }
    for (uint32_t q = 0; q < cfg->n_queues; q++)
        in->queues[q] = (struct queue){.name = cfg->queues[q].name,
                                       .priority = cfg->queues[q].priority,
                                       .weight = cfg->queues[q].weight};
    int64_t node_gpus = c->max_node_gpus > 0 ? c->max_node_gpus : 8;
    for (size_t i = 0; i < t->n_jobs; i++) {
        const struct trace_job *tj = &t->jobs[i];
        struct sim_job *j = &in->jobs[i];
        int q = config_queue_index(cfg, tj->queue);
        if (q < 0) {
            int rc =
                sched_fail(eb, SCHED_EINVAL, "%s:%u: queue '%s' of job %s is not a queue of %s",
                           t->files[tj->file], tj->line, tj->queue, tj->id, cfg->path);
            sim_input_free(in);
            return rc;
        }
        j->id = tj->id;
        j->duration_ms = tj->duration_ms;
        j->checkpoint_interval_ms = tj->checkpoint_interval_ms;
        /* the job's own restart cost, else its queue's default (preemption.restartCost) */
        j->restart_cost_ms =
            tj->has_restart_cost ? tj->restart_cost_ms : cfg->queues[q].preemption.restart_cost_ms;
        struct gang *g = &j->gang;
        g->sets = &in->sets[(size_t)i * SIM_JOB_SETS];
        g->id = (uint32_t)i;
        g->name = tj->id;
        g->queue = (uint32_t)q;
        g->priority = tj->priority;
        g->submit_ms = tj->submit_ms;
        g->max_runtime_ms = tj->max_runtime_ms;
        int req = level_of(c, tj->topology_required, t, tj, "topology-required", eb);
        int pref = level_of(c, tj->topology_preferred, t, tj, "topology-preferred", eb);
        int slice = level_of(c, tj->slice_topology, t, tj, "slice-topology", eb);
        if (req < -1 || pref < -1 || slice < -1) {
            sim_input_free(in);
            return SCHED_EINVAL;
        }
        g->topo_required = (int8_t)req;
        g->topo_preferred = (int8_t)pref;
        g->slice_level = (int8_t)slice;
        if (config_profile_apply(cfg, (uint32_t)q, tj->profile, g) != 0) {
            int rc = sched_fail(eb, SCHED_EINVAL, "%s:%u: column 'profile': unknown profile '%s'",
                                t->files[tj->file], tj->line, tj->profile);
            sim_input_free(in);
            return rc;
        }
        g->tp_size = tj->tp_size > 0 ? (uint32_t)tj->tp_size : 0;
        g->slice_size = tj->slice_size > 0 ? (uint32_t)tj->slice_size : 0;
        if ((g->slice_size > 0) != (g->slice_level >= 0)) {
            int rc = sched_fail(eb, SCHED_EINVAL,
                                "%s:%u: job %s: slice-size and slice-topology go together",
                                t->files[tj->file], tj->line, tj->id);
            sim_input_free(in);
            return rc;
        }
        pod_sets(g, tj, node_gpus);
        int rrc = tj->resource ? row_resource(g, tj, t, eb) : 0;
        if (rrc == 0 && (tj->gpumem_mib > 0 || tj->gpucores > 0))
            rrc = row_share(g, tj, t, eb);
        if (rrc != 0) {
            sim_input_free(in);
            return rrc;
        }
        for (uint32_t s = 0; dra_class >= 0 && s < g->n_sets; s++)
            g->sets[s].req.v[dra_class] = g->sets[s].req.v[RES_GPU];
        /* A tensor-parallel group larger than a pod: its pods must share an NVLink domain. */
        int64_t pod_gpus = g->n_sets ? g->sets[0].req.v[RES_GPU] : 0;
        if (g->tp_size > 0 && pod_gpus > 0 && g->tp_size > pod_gpus && g->slice_size == 0) {
            g->slice_size = (uint32_t)((g->tp_size + pod_gpus - 1) / pod_gpus);
            g->slice_level = (int8_t)(c->topo.nvlink_level >= 0 ? c->topo.nvlink_level
                                                                : (int)c->topo.n_levels - 1);
        }
        g->min_member = 0;
        gang_finalize(g);
        g->min_member = g->n_pods;
        if (tj->min_pods > 0 && (rrc = elastic_row(in, j, tj, t, eb)) != 0) {
            sim_input_free(in);
            return rrc;
        }
    }
    in->n_jobs = (uint32_t)t->n_jobs;
    int rc = intern_users(in, t);
    if (rc != 0) {
        sim_input_free(in);
        return sched_fail(eb, rc, "out of memory for the users of %zu jobs", t->n_jobs);
    }
    return 0;
}

void sim_input_free(struct sim_input *in)
{
    free(in->tolerations);
    config_free(in->owned_config);
    free(in->queues);
    free(in->jobs);
    free(in->sets);
    memset(in, 0, sizeof(*in));
}

/* xorshift64*: the simulator's only randomness, always seeded */
static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ull;
}

double sim_rng_unit(uint64_t *x)
{
    return (double)(rng_next(x) >> 11) / 9007199254740992.0;
}

/* --elastic: a job the trace leaves rigid that could run on with fewer members */
static bool may_be_elastic(const struct sim_job *j, const struct trace_job *tj)
{
    return tj->min_pods == 0 && j->gang.n_pods > 1 && elastic_allowed(j, tj);
}

void sim_input_workload(struct sim_input *in, const struct trace *t, const struct sim_workload *w)
{
    uint64_t x = w->seed ? w->seed : 0x9E3779B97F4A7C15ull;
    uint64_t y = x ^ 0xD1B54A32D192ED03ull; /* --elastic's own stream */
    if (y == 0)
        y = 0x9E3779B97F4A7C15ull; /* xorshift stays at 0 */
    for (uint32_t i = 0; i < in->n_jobs && i < t->n_jobs; i++) {
        struct sim_job *j = &in->jobs[i];
        const struct trace_job *tj = &t->jobs[i];
        double u_prio = sim_rng_unit(&x),
               u_jitter = sim_rng_unit(&x); /* two draws per job, always */
        double u_elastic = sim_rng_unit(&y);
        if (w->elastic_fraction > 0 && u_elastic < w->elastic_fraction && may_be_elastic(j, tj)) {
            j->min_pods = (j->gang.n_pods + 1) / 2;
            in->n_elastic++;
        }
        if (w->high_priority_fraction > 0 && tj->priority == 0 &&
            u_prio < w->high_priority_fraction)
            j->gang.priority = 10;
        if (!tj->has_checkpoint_interval && w->ckpt_interval_ms > 0 &&
            j->duration_ms >= w->ckpt_min_duration_ms)
            j->checkpoint_interval_ms =
                (int64_t)((double)w->ckpt_interval_ms * (0.8 + 0.4 * u_jitter));
    }
}
