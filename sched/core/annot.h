/* sched/core/annot.h: a gang's topology request and scheduling hints from PodGroup annotations.
 *
 * Owns: reading the annotations users already write, ours and their Kueue and Volcano
 * equivalents, into the gang's fields; and formatting the GPU ids written back on pods. Pure
 * functions over strings: the Kubernetes driver calls them for every PodGroup, the tests call them
 * directly. Every error names the annotation and the value.
 *
 *   gangsched.io/topology-required: LEVEL      whole gang inside one domain of LEVEL, or wait
 *   gangsched.io/topology-preferred: LEVEL     try LEVEL first, widen one level at a time
 *   gangsched.io/tp-size: N                    GPUs per tensor-parallel group
 *   gangsched.io/slice-size: N                 pods per slice ...
 *   gangsched.io/slice-topology: LEVEL         ... each slice inside one domain of LEVEL
 *   gangsched.io/max-runtime: DURATION         declared maximum run time ("2h", "90m", "3600s")
 * DURATION: sched/core/duration.h's grammar, the configuration's: a bare number other than 0
 *   ("90") and units out of order ("30m1h") are refused with the fix in the message.
 *   gangsched.io/profile: NAME                 scoring profile (training packs, inference spreads)
 *   kueue.x-k8s.io/podset-required-topology: LABEL        the level whose node label is LABEL
 *   kueue.x-k8s.io/podset-preferred-topology: LABEL
 *   kueue.x-k8s.io/podset-slice-required-topology: LABEL
 *   kueue.x-k8s.io/podset-slice-size: N
 *   Volcano spec.networkTopology {mode: hard|soft, highestTierAllowed: N}: tier 1 is the tightest
 *     level above the node (NVLink clique or rack), tier N the Nth; passed here as the annotation
 *     form "volcano.sh/network-topology-mode" and "volcano.sh/network-topology-highest-tier".
 *   gangsched.io/min-runtime: DURATION         never a preemption victim before start + this
 *   gangsched.io/restart-cost: DURATION        work lost by a restart (preemption cost)
 *   gangsched.io/non-preemptible: "true"       never a preemption victim
 *   gangsched.io/start-timeout: DURATION       members must all run within this of the bind
 *   gangsched.io/max-restarts: N               whole-gang restarts allowed (0..1000)
 *   gangsched.io/checkpoint-interval: DURATION how often a training gang checkpoints: an
 *     elastic one's new members join just after a checkpoint (model.h gang_set_join)
 *     (the last six: annot_run; the queue's settings where absent)
 * LEVEL is a level name of the cluster's topology ("rack", "block", ...) or "node". Our own
 * annotations win over the equivalents when both are given.
 */
#ifndef SCHED_CORE_ANNOT_H
#define SCHED_CORE_ANNOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/core/err.h"
#include "sched/core/model.h"

/* Applies the annotations (n pairs, any order) to g's topology fields, tp_size, slices and
 * max_runtime_ms; g's other fields are untouched. Returns 0 or SCHED_EINVAL with "annotation
 * KEY: VALUE: problem" in eb (g is then unchanged). Profile names are not resolved here:
 * *profile (may be NULL) receives the gangsched.io/profile value or NULL. */
int annot_apply(struct gang *g, const struct topo *t, const struct kv *annotations, size_t n,
                const char **profile, struct sched_errbuf *eb);

/* A gang's run-time settings from its annotations (the table in annot.c); fields whose
 * annotation is absent keep their value (the queue's). Returns 0 or SCHED_EINVAL with
 * "annotation KEY: VALUE: problem" (out then unchanged). The Kubernetes driver checks them when
 * it admits a gang (a bad value is the gang's InvalidSpec) and reads them for running gangs. */
#define ANNOT_MAX_RESTARTS 1000u
struct annot_run {
    int64_t min_runtime_ms;      /* protected from preemption until start + this */
    int64_t restart_cost_ms;     /* work lost by a restart, added to the preemption cost */
    bool non_preemptible;        /* never a victim */
    int64_t start_timeout_ms;    /* members must all run within this of the bind (> 0) */
    uint32_t max_restarts;       /* whole-gang restarts before the gang fails, 0..1000 */
    int64_t checkpoint_every_ms; /* how often it checkpoints (wall time), 0 = not said: its new
                                    members then join at once (gang_set_join) */
};
int annot_run(const struct kv *annotations, size_t n, struct annot_run *out,
              struct sched_errbuf *eb);

/* "0,1,2,3" for a GPU mask (gangsched.io/gpu-ids on a bound pod); returns the length written. */
int annot_gpu_ids(uint32_t mask, char *buf, size_t n);

/* Index of the topology level whose node label is `label` ("kubernetes.io/hostname": the node
 * level), or -1. */
int annot_level_by_label(const struct topo *t, const char *label);

/* Parses a duration into ms: sched/core/duration.h's grammar ("90s", "10m", "2h", "1h30m",
 * "1d", "250ms", "0"), the one the configuration uses. 0 or SCHED_EINVAL. */
int annot_duration(const char *s, int64_t *ms);

#endif
