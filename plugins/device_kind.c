/* plugins/device_kind.c: with several accelerator kinds configured (`devices:`, res.h "device
 * kinds"), a pod that asks for accelerators goes only to nodes of its own kind: the accelerator
 * slot RES_GPU counts AMD GPUs on an AMD node and NVIDIA GPUs on an NVIDIA node, and a pod never
 * gets a device of another kind. Inactive with one kind, so a plain cluster is unchanged. A node's
 * kind is found once, when its cluster is finalized (node.kind), not per gang and node. */
#include "plugins/plugins.h"

static bool active(const struct filter_env *env, const struct gang *g, const struct podset *ps)
{
    (void)env;
    (void)g;
    return res_kind_count() > 1 && ps->req.v[RES_GPU] > 0;
}

static bool pass(const struct gang *g, const struct podset *ps, const struct node *n)
{
    (void)g;
    return n->kind == res_kind_of(&ps->req); /* the node's, found once by cluster_finalize */
}

const struct sched_filter plugin_device_kind = {
    .name = "device-kind", .id = FILTER_DEVICE_KIND, .active = active, .pass = pass};
