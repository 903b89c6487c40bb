/* sched/sim/openb.h: the Alibaba GPU trace v2023 ("openb") in the simulator, with FGD's method.
 *
 * Owns: reading the openb node CSV (sn,cpu_milli,memory_mib,gpu,model) and pod CSV
 * (name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
 * deletion_time,scheduled_time) exactly as shipped; FGD's workload generation (`--arrival fgd`:
 * every pod of the file in a seeded random order, then seeded random draws from the file until
 * the arrived GPU demand would pass 130% of the cluster's GPUs; no departures); running the
 * shared-GPU placement (sched/core/share.h) under best fit and FGD; the allocation curve (GPU
 * allocation ratio against arrived demand at every whole percent 0..130), as JSON or a table,
 * beside the published curves (fgd_published_results.csv) when given.
 *
 * Errors name the file, the line and the column. Must not touch: the gang simulator (sim.c).
 */
#ifndef SCHED_SIM_OPENB_H
#define SCHED_SIM_OPENB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/core/err.h"
#include "sched/core/share.h"

#define OPENB_CURVE_MAX 130 /* percent of capacity the arrivals reach */

struct openb_nodes {
    struct share_node *nodes; /* fresh state: everything free */
    char **names;
    uint32_t n;
    char *models[SHARE_MAX_MODELS];
    uint32_t n_models;
};

struct openb_pods {
    struct share_pod *pods;
    char **names;
    uint32_t n;
    uint32_t n_classes;       /* distinct requests: each pod's `type` indexes them */
    struct share_type *types; /* FGD's typical pods with their shares (sum 1) */
    uint32_t n_types;
};

/* Readers: 0, or SCHED_EINVAL / SCHED_ERANGE / SCHED_ENOENT / SCHED_EIO / SCHED_ENOMEM with
 * "file:line: column 'x': ..." in eb. The pod reader resolves gpu_spec against the nodes'
 * models (a model no node has matches nothing). */
int openb_nodes_read(const char *path, struct openb_nodes *out, struct sched_errbuf *eb);
int openb_pods_read(const char *path, const struct openb_nodes *nodes, struct openb_pods *out,
                    struct sched_errbuf *eb);
void openb_nodes_free(struct openb_nodes *n);
void openb_pods_free(struct openb_pods *p);

/* FGD's arrival order for `seed`: indices into p->pods, *n_out of them (malloc'd). */
int openb_arrivals(const struct openb_pods *p, int64_t gpu_milli_total, uint64_t seed,
                   uint32_t **out, uint32_t *n_out, struct sched_errbuf *eb);

/* curve[k]: FGD's analysis of the allocation: after each arrival, the allocated and the arrived
 * GPU milli as percentages of capacity (allocated rounded to 0.01); curve[k] is the mean of the
 * allocated over the arrivals whose arrived percentage rounds to k (half to even), else over
 * those that round to k - 1 or k + 1, else (no arrival near k) the allocation when the arrived
 * demand first reached k%. */
struct openb_result {
    double curve[OPENB_CURVE_MAX + 1];
    uint32_t arrived, placed, failed; /* pods */
};

/* Runs the arrivals on a fresh copy of the nodes under `pol`; `seed` seeds its random ties. */
int openb_run(const struct openb_nodes *nodes, const struct openb_pods *pods, const uint32_t *order,
              uint32_t n_order, enum share_policy pol, uint64_t seed, struct openb_result *res,
              struct sched_errbuf *eb);

/* true when the file starts with an openb node or pod list header (for hints elsewhere) */
bool openb_sniff(const char *path);

/* `gangsched simulate ... --arrival fgd`: returns the exit code. */
int openb_main(int argc, char **argv);

#endif
