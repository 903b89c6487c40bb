/* sched/sim/private.c: the private-cluster baseline (`simulate --policy private`).
 *
 * Owns: running each queue alone, with the gangsched rules, on a cluster the size of its
 * nominal nvidia.com/gpu quota, and merging the runs into one set of statistics named
 * "private". The private cluster is a slice of the shared one: its first nodes in order (so
 * racks and blocks are sliced as they are), as many as the quota needs; the last node keeps
 * only the GPUs left of the quota (its NVLink island annotation is dropped). It is the sharing
 * incentive's yardstick (HiveD, OSDI 2020): no tenant should wait longer in the shared cluster
 * than on its own slice.
 *
 * Must not touch: the shared input (read only); the scheduling rules (sim_run runs them).
 */
#include <stdlib.h>
#include <string.h>

#include "sched/core/log.h"
#include "sched/sim/sim.h"

/* The first nodes of `c` holding `gpus` GPUs, as a new finalized cluster in *out. */
static int slice_cluster(const struct cluster *c, const struct config *cfg, int64_t gpus,
                         struct cluster **out, struct sched_errbuf *eb)
{
    struct cluster *s = cluster_new();
    if (!s)
        return sched_fail(eb, SCHED_ENOMEM, "out of memory");
    int64_t left = gpus;
    for (uint32_t i = 0; i < c->n_nodes && left > 0; i++) {
        const struct node *src = &c->nodes[i];
        if (src->n_gpus == 0)
            continue;
        struct node *d = cluster_add_node(s, src->name);
        struct kv *labels = cluster_alloc(s, (src->n_labels + 1) * sizeof(*labels));
        struct kv *ann = cluster_alloc(s, (src->n_annotations + 1) * sizeof(*ann));
        struct taint *taints = cluster_alloc(s, (src->n_taints + 1) * sizeof(*taints));
        if (!d || !labels || !ann || !taints) {
            cluster_free(s);
            return sched_fail(eb, SCHED_ENOMEM, "out of memory");
        }
        bool partial = src->n_gpus > left;
        d->alloc = src->alloc;
        if (partial)
            d->alloc.v[RES_GPU] = left;
        left -= partial ? left : src->n_gpus;
        if (src->n_labels > 0) /* memcpy from NULL is undefined, even of 0 bytes */
            memcpy(labels, src->labels, src->n_labels * sizeof(*labels));
        d->labels = labels;
        d->n_labels = src->n_labels;
        uint32_t na = 0;
        for (uint32_t k = 0; k < src->n_annotations; k++)
            if (!partial || strcmp(src->annotations[k].key, ANNOT_GPU_ISLANDS) != 0)
                ann[na++] = src->annotations[k];
        d->annotations = ann;
        d->n_annotations = na;
        if (src->n_taints > 0)
            memcpy(taints, src->taints, src->n_taints * sizeof(*taints));
        d->taints = taints;
        d->n_taints = src->n_taints;
        d->ready = src->ready;
        d->unschedulable = src->unschedulable;
        d->gpu_capacity = partial ? 0 : src->gpu_capacity;
    }
    int rc = cfg && cfg->n_levels > 0
                 ? cluster_finalize(s, cfg->level_names, cfg->level_labels, cfg->n_levels, eb)
                 : cluster_finalize(s, NULL, NULL, 0, eb);
    if (rc != 0) {
        cluster_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int sim_run_private(const struct sim_input *in, const struct sched_policy *pol,
                    const struct sim_options *opt, struct sim_stats *out, struct sched_errbuf *eb)
{
    memset(out, 0, sizeof(*out));
    out->policy = "private";
    out->n_queues = in->n_queues;
    out->per_queue = calloc(in->n_queues + 1, sizeof(*out->per_queue));
    struct sim_job *jobs = malloc((in->n_jobs + 1) * sizeof(*jobs));
    int rc = 0;
    if (!out->per_queue || !jobs)
        rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
    struct sim_merge m = {.acc = out};
    struct sim_options o = {.progress = opt->progress,
                            .failures = opt->failures,
                            .jobs_out = opt->jobs_out,
                            .jobs_out_name = opt->jobs_out_name};
    for (uint32_t q = 0; q < in->n_queues && rc == 0; q++) {
        int64_t gpus = 0;
        for (uint32_t f = 0; f < in->config->n_flavors; f++) {
            const struct config_quota *qu =
                config_quota_get(in->config, &in->config->queues[q].q, f, RES_GPU);
            if (qu && qu->nominal > 0 && qu->nominal != INT64_MAX &&
                __builtin_add_overflow(gpus, qu->nominal, &gpus))
                gpus = INT64_MAX - 1; /* values up to 2^62 on several flavors: saturate */
        }
        struct sim_input sub = *in;
        sub.owned_config = NULL;
        sub.multinode_above = in->cluster->max_node_gpus; /* as in the shared runs */
        sub.n_jobs = sub.n_elastic = 0;
        sub.jobs = jobs;
        for (uint32_t j = 0; j < in->n_jobs; j++)
            if (in->jobs[j].gang.queue == q) {
                jobs[sub.n_jobs] = in->jobs[j];
                jobs[sub.n_jobs].gang.id = sub.n_jobs;
                sub.n_elastic += in->jobs[j].min_pods > 0;
                sub.n_jobs++;
            }
        out->per_queue[q].name = in->queues[q].name;
        out->per_queue[q].nominal_gpus = (double)gpus;
        if (sub.n_jobs == 0)
            continue;
        struct cluster *c = NULL;
        if (gpus <= 0) {
            rc = sched_fail(eb, SCHED_EINVAL,
                            "--policy private: queue %s has jobs but no nominal GPU quota",
                            in->queues[q].name);
            break;
        }
        if ((rc = slice_cluster(in->cluster, in->config, gpus, &c, eb)) != 0)
            break;
        sub.cluster = c;
        struct sim_stats one;
        LOG_INFO("sim", "private: queue %s alone on %u nodes, %lld GPUs", in->queues[q].name,
                 c->n_nodes, (long long)c->total_gpus);
        rc = sim_run(&sub, pol, &o, &one, eb);
        if (rc == 0) {
            if (sim_stats_merge(&m, &one, q, (double)c->total_gpus) != 0)
                rc = sched_fail(eb, SCHED_ENOMEM, "out of memory");
            sim_stats_free(&one);
        }
        cluster_free(c);
    }
    free(jobs);
    if (rc != 0) {
        sim_stats_free(out);
        return rc;
    }
    if ((rc = sim_stats_merged(&m)) != 0) {
        sim_stats_free(out);
        return sched_fail(eb, rc, "out of memory");
    }
    return 0;
}
