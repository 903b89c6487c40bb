/* sched/core/policy.c: the policy table (see policy.h). */
#include "sched/core/policy.h"

#include <string.h>

#include "config/model.h"

/* The baseline: what a gang-aware but topology-blind scheduler does (Volcano's gang plugin with
 * strict FIFO, no backfill). */
static const struct sched_policy policy_fifo = {
    .name = "fifo",
    .summary = "strict FIFO, whole gangs, first fit, lowest GPU ids, no backfill",
    .strict_fifo = true,
    .by_priority = false,
    .topology = false,
    .starve_after_ms = 0,
    .max_reservations = 0,
};

/* Ours: priority order, backfill with a starvation guard, topology-aware best fit. */
static const struct sched_policy policy_gangsched = {
    .name = "gangsched",
    .summary = "priority order, backfill with starvation reservations, topology-aware best fit",
    .strict_fifo = false,
    .by_priority = true,
    .topology = true,
    .starve_after_ms = 10 * 60 * 1000,
    .max_reservations = 1,
    .preempt = true,
    .checkpoint_aware = true,
    .benefit_factor = 1.0,
    .order_bias_gpu_s = 2000.0,
    .max_evictions = 8,
    .probation_min_gpus = CONFIG_PROBATION_MIN_GPUS,
};

/* The checkpoint-blind comparison: the same rules, victims chosen as Kueue does. */
static const struct sched_policy policy_ckpt_blind = {
    .name = "ckpt-blind",
    .summary = "as gangsched, but victims by lowest priority then most recently started",
    .strict_fifo = false,
    .by_priority = true,
    .topology = true,
    .starve_after_ms = 10 * 60 * 1000,
    .max_reservations = 1,
    .preempt = true,
    .checkpoint_aware = false,
    .benefit_factor = 0.0,
    .max_evictions = 8,
    .probation_min_gpus = CONFIG_PROBATION_MIN_GPUS,
};

/* The sharing-incentive baseline of the simulator: gangsched's rules, but every queue alone on
 * a private cluster the size of its nominal quota. */
static const struct sched_policy policy_private = {
    .name = "private",
    .summary = "simulator baseline: each queue alone on a cluster the size of its nominal quota",
    .strict_fifo = false,
    .by_priority = true,
    .topology = true,
    .starve_after_ms = 10 * 60 * 1000,
    .max_reservations = 1,
    .preempt = true,
    .checkpoint_aware = true,
    .benefit_factor = 1.0,
    .order_bias_gpu_s = 2000.0,
    .max_evictions = 8,
    .probation_min_gpus = CONFIG_PROBATION_MIN_GPUS,
    .private_slices = true,
};

const struct sched_policy *const sched_policies[] = {&policy_gangsched, &policy_fifo,
                                                     &policy_ckpt_blind, &policy_private, NULL};

const struct sched_policy *sched_policy_find(const char *name)
{
    for (size_t i = 0; sched_policies[i]; i++)
        if (strcmp(sched_policies[i]->name, name) == 0)
            return sched_policies[i];
    return NULL;
}

const struct sched_policy *sched_policy_default(void)
{
    return &policy_gangsched;
}
