/* plugins/registry.c: the explicit lists of filters, in evaluation order (cheapest first), and
 * of score terms (a term's position is its weight's index in profiles), and the weighted sum. */
#include <string.h>

#include "plugins/plugins.h"

const struct sched_filter *const plugin_filters[] = {
    &plugin_node_ready,    &plugin_cordon,      &plugin_node_selector,
    &plugin_node_affinity, &plugin_taints,      &plugin_gpu_sharing,
    &plugin_gpu_health,    &plugin_device_kind, NULL,
};

/* binpack, topology, spread first: their indices are CONFIG_SCORE_BINPACK, _TOPOLOGY, _SPREAD. */
const struct sched_score *const plugin_scores[] = {
    &plugin_score_binpack,
    &plugin_score_topology,
    &plugin_score_spread,
    NULL,
};

const double plugin_weights_training[SCORE_TERMS_MAX] = {10, 10, 0};
const double plugin_weights_inference[SCORE_TERMS_MAX] = {0, 2, 10};

#define N_SCORES ((uint32_t)(sizeof(plugin_scores) / sizeof(plugin_scores[0]) - 1))
_Static_assert(N_SCORES <= SCORE_TERMS_MAX, "more score terms than SCORE_TERMS_MAX");

uint32_t plugin_score_count(void)
{
    return N_SCORES;
}

int plugin_score_find(const char *name)
{
    for (uint32_t t = 0; t < N_SCORES; t++)
        if (strcmp(plugin_scores[t]->name, name) == 0)
            return (int)t;
    return -1;
}

const double *plugin_gang_weights(const struct gang *g)
{
    if (g->weights)
        return g->weights;
    return g->spread ? plugin_weights_inference : plugin_weights_training;
}

int64_t plugin_score(const double *w, const struct score_in *in)
{
    double sum = 0, wsum = 0;
    for (uint32_t t = 0; t < N_SCORES; t++) {
        if (w[t] <= 0)
            continue;
        sum += w[t] * (double)plugin_scores[t]->score(in);
        wsum += w[t];
    }
    /* rounded to an integer (0..SCORE_MAX * 1000) so that equal scores compare equal */
    return wsum > 0 ? (int64_t)(sum * 1000.0 / wsum + 0.5) : 0;
}

uint32_t plugin_score_top(const double *w, const struct score_in *in, uint8_t *terms,
                          uint16_t *values, uint32_t max)
{
    double contrib[SCORE_TERMS_MAX] = {0};
    uint32_t n = 0;
    for (uint32_t t = 0; t < N_SCORES; t++) {
        if (w[t] <= 0)
            continue;
        uint32_t v = plugin_scores[t]->score(in);
        double c = w[t] * (double)v;
        uint32_t k = n < max ? n++ : max;
        while (k > 0 && contrib[k - 1] < c) { /* insertion, largest first, stable */
            if (k < max) {
                contrib[k] = contrib[k - 1];
                terms[k] = terms[k - 1];
                values[k] = values[k - 1];
            }
            k--;
        }
        if (k < max) {
            contrib[k] = c;
            terms[k] = (uint8_t)t;
            values[k] = (uint16_t)v;
        }
    }
    return n;
}

void filter_env_init(struct filter_env *env, const struct cluster *c)
{
    env->cluster = c;
    env->has_hard_taints = false;
    env->has_shared_gpus = false;
    env->has_unhealthy_gpus = false;
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        const struct node *n = &c->nodes[i];
        for (uint32_t t = 0; t < n->n_taints; t++)
            if (n->taints[t].effect != TAINT_PREFER_NO_SCHEDULE)
                env->has_hard_taints = true;
        if (n->gpu_sharing != GPU_WHOLE)
            env->has_shared_gpus = true;
        if (n->gpu_capacity > n->n_gpus)
            env->has_unhealthy_gpus = true;
    }
}

/* The GPU choice inside a node (the reserve step). */
const struct sched_reserve *const plugin_reserve = &plugin_reserve_islands;
