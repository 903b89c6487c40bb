/* plugins/taints.c: NoSchedule and NoExecute taints must be tolerated (PreferNoSchedule is a
 * preference, not a filter). */
#include <string.h>

#include "plugins/plugins.h"

bool taint_tolerated(const struct taint *t, const struct toleration *tols, uint32_t n_tols)
{
    for (uint32_t i = 0; i < n_tols; i++) {
        const struct toleration *tol = &tols[i];
        if (tol->effect >= 0 && tol->effect != (int)t->effect)
            continue;
        if (tol->op_exists) {
            if (!tol->key || !*tol->key || strcmp(tol->key, t->key) == 0)
                return true;
            continue;
        }
        if (tol->key && strcmp(tol->key, t->key) == 0 &&
            strcmp(tol->value ? tol->value : "", t->value ? t->value : "") == 0)
            return true;
    }
    return false;
}

static bool active(const struct filter_env *env, const struct gang *g, const struct podset *ps)
{
    (void)g, (void)ps;
    return env->has_hard_taints;
}

static bool pass(const struct gang *g, const struct podset *ps, const struct node *n)
{
    (void)g;
    for (uint32_t i = 0; i < n->n_taints; i++) {
        const struct taint *t = &n->taints[i];
        if (t->effect == TAINT_PREFER_NO_SCHEDULE)
            continue;
        if (!taint_tolerated(t, ps->tolerations, ps->n_tolerations))
            return false;
    }
    return true;
}

const struct sched_filter plugin_taints = {
    .name = "taints", .id = FILTER_TAINT, .active = active, .pass = pass};
