/* config/config.h: the operator's configuration, parsed from YAML into an immutable struct.
 *
 * Owns: loading (libyaml, config/load*.c) and strict validation of the scheduler configuration
 * into the model of config/model.h (structs and pure accessors, which the core includes alone),
 * its printouts (config/print.c, totals.c) and the Kueue/Volcano importer (import.c).
 *
 * Every error names the place: "FILE:LINE:COLUMN: queues[2].quota.h100.nvidia.com/gpu.nominal:
 * negative quantity "-4"". Loading never asserts on input and never leaves partial state.
 *
 * Memory management: config_load* returns a config owning all its memory (one pool);
 * config_free() releases it. Pointers into a config are valid until it is freed.
 *
 * Must not touch: the cluster, the scheduler state, anything but its own file and memory.
 *
 * YAML shape (documented field by field in docs/config.md; example in config/examples/):
 *
 *   apiVersion: gangsched.io/v1alpha1
 *   kind: SchedulerConfig
 *   device:                          # the accelerator (default nvidia.com/gpu, unit GPU)
 *     resource: huawei.com/Ascend910 # its quota is written under this name; fixed until restart
 *     unit: NPU                      # the word its counts are shown in
 *   topology:
 *     levels: [{name: zone, label: topology.kubernetes.io/zone}, ...]   # widest first
 *   fairShare:
 *     halfLife: 24h                  # decay of historical usage; "0" = current usage only
 *   starvation:
 *     after: 10m                     # a gang waiting longer holds a reservation; "0" = never
 *     maxReservations: 1
 *     probationMinGpus: 17           # such a starving gang may evict its queue's backfill
 *                                    # that overran its promise; 0 = never
 *   flavors:
 *     - name: h100
 *       nodeLabels: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
 *   cohorts:
 *     - name: research
 *       parent: all                  # optional; a cohort without parent is a root
 *       quota: {h100: {nvidia.com/gpu: {nominal: 16}}}   # optional own quota
 *       borrowingLimit / lendingLimit go inside the quota entries, as for queues
 *   queues:
 *     - name: team-a
 *       cohort: research             # optional; without a cohort a queue cannot borrow or lend
 *       weight: 1                    # fair-share weight, > 0
 *       priority: 0                  # queue priority, higher first
 *       ordering: BestEffortFIFO     # or StrictFIFO
 *       profile: training            # default scoring profile of its gangs
 *       preemption:
 *         withinQueue: LowerPriority          # Never | LowerPriority | LowerOrNewerEqualPriority
 *         reclaimWithinCohort: Any            # Never | LowerPriority | Any
 *         fairSharePreemption: false
 *         minRuntime: 10m
 *         restartCost: 5m                     # GPU-time of a restart, per GPU
 *         checkpointGrace: 0s                 # 0 = no checkpoint handshake
 *       quota:
 *         h100:                               # flavor name
 *           nvidia.com/gpu: {nominal: 64, borrowingLimit: 16, lendingLimit: 32}
 *           cpu: 512                          # shorthand for {nominal: 512}
 *   profiles:
 *     - name: training
 *       weights: {binpack: 10, topology: 10, spread: 0}   # keys: the score terms of plugins/
 */
#ifndef CONFIG_CONFIG_H
#define CONFIG_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "config/model.h"
#include "sched/core/err.h"

/* Reads and validates `path`. On error returns SCHED_EINVAL (or SCHED_EIO / SCHED_ENOMEM), with
 * "path:line:column: key: problem" in eb, and *out untouched. */
int config_load_file(const char *path, struct config **out, struct sched_errbuf *eb);
/* The same for one-shot commands: `path` may also be a FIFO (process substitution), read
 * waiting for its writer. run and serve never use it: they read on their event loop. */
int config_load_cli(const char *path, struct config **out, struct sched_errbuf *eb);
/* Same on a buffer; `name` replaces the path in messages. */
int config_load_buffer(const char *name, const char *data, size_t len, struct config **out,
                       struct sched_errbuf *eb);
/* Prints the tree of cohorts and queues with their quotas (for `gangsched config check`). */
void config_print_tree(const struct config *c, FILE *f);

struct cluster;
/* config/totals.c: prints each cohort's nominal quota with everything under it and the total
 * of all queues, per flavor and resource; given a cluster (else NULL), warns for each flavor and
 * resource whose nominal quotas exceed what its nodes have (named `cluster_name`). Returns the
 * number of warnings, -1 when out of memory. */
int config_print_totals(const struct config *c, const struct cluster *cl, const char *cluster_name,
                        FILE *out);
/* config/import.c: `gangsched config import-kueue FILE...`: Kueue (ResourceFlavor, Cohort,
 * ClusterQueue, LocalQueue; v1beta1, v1beta2) and Volcano (Queue) manifests to a configuration
 * on `out`, comments for what it cannot map; errors on `err`. Returns the exit code. */
int config_import_main(int argc, char **argv, FILE *out, FILE *err);

#endif
