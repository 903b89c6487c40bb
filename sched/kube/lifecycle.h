/* sched/kube/lifecycle.h: the daemon's adapter to the engine's lifecycle rules
 * (sched/engine/life.h; docs/lifecycle.md, "Kubernetes").
 *
 * Owns: the neutral member facts of every bound gang of a cycle's input, read from the cache's
 * build (phase, readiness, the pods' own words, the node as an engine id) and from the gang's
 * settings: the queue's lifecycle, overridden by the PodGroup's annotations
 * gangsched.io/start-timeout and gangsched.io/max-restarts, and whether its profile spreads
 * (an inference gang replaces only its lost members). The rules themselves (start timeout,
 * failed or lost members, NotReady nodes past the grace) are the engine's, one copy for the
 * daemon and the simulator: eng_life_check().
 * Must not touch: the network, the store, the cache (it reads the build only), the rules.
 */
#ifndef SCHED_KUBE_LIFECYCLE_H
#define SCHED_KUBE_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "sched/core/arena.h"
#include "sched/engine/life.h"
#include "sched/engine/names.h"
#include "sched/kube/cache.h"

/* The facts of the build's bound gangs (kb->gangs[n_pending..n_gangs)), in that order. */
struct klife {
    struct eng_gang_facts *facts;
    const struct kgang **gangs; /* [n]: the cache's gang of facts[i] */
    uint32_t n;
};

/* Fills *out from the build; gang and node ids are interned in gang_ids and node_ids (a member
 * on a node not in the build's cluster has node ENG_NONE). 0 or SCHED_ENOMEM. */
int klife_facts(const struct kcache_build *kb, const struct config *cfg, struct eng_names *gang_ids,
                struct eng_names *node_ids, struct arena *a, struct klife *out);

/* The cache's gang of engine gang id g among the facts (NULL: none). */
const struct kgang *klife_gang(const struct klife *l, uint32_t g);

/* klife_facts, then the engine's rules (eng_life_check with the engine's node health). */
int klife_check(struct eng *e, const struct kcache_build *kb, const struct config *cfg,
                struct eng_names *gang_ids, struct eng_names *node_ids, int64_t now_ms,
                struct arena *a, struct klife *facts, struct eng_life_action **out,
                uint32_t *n_out);

#endif
