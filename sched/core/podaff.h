/* sched/core/podaff.h: inter-pod constraints between two pods (model.h struct pod_meta).
 *
 * Owns: whether a term selects a pod (namespace and label selector), whether two pods' host
 * ports clash, and the hash of a pod's constraints for the gang shape. Pure functions of their
 * arguments; the placement engine (sched/core/place_pods.c) decides with them where pods may go.
 *
 * Must not touch: any state, the cluster, usage.
 */
#ifndef SCHED_CORE_PODAFF_H
#define SCHED_CORE_PODAFF_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/model.h"

/* Does term t, carried by a pod of namespace owner_ns, select pod p (NULL: a pod without
 * labels in an unknown namespace)? */
bool podaff_selects(const struct pod_term *t, const char *owner_ns, const struct pod_meta *p);
/* Do a and b ask for a host port in common (either may be NULL)? */
bool podaff_ports_clash(const struct pod_meta *a, const struct pod_meta *b);
/* Does m carry a constraint (an affinity or anti-affinity term, a host port, a spread)? */
static inline bool podaff_constrains(const struct pod_meta *m)
{
    return m && (m->n_affinity || m->n_anti || m->n_ports || m->n_spread);
}
/* Does m carry a preference of its own (a preferred affinity or anti-affinity term, a
 * ScheduleAnyway spread)? */
static inline bool podaff_prefers(const struct pod_meta *m)
{
    return m && (m->n_pref_affinity || m->n_pref_anti || m->n_soft_spread);
}
/* Does m, on a pod that runs, carry terms other pods meet or break (anti-affinity and host ports,
 * which filter; affinity and preferred terms, which kube-scheduler's InterPodAffinity scores)? */
static inline bool podaff_others(const struct pod_meta *m)
{
    return m && (m->n_anti || m->n_ports || m->n_affinity || m->n_pref_affinity || m->n_pref_anti);
}
/* Does a pod set of g carry a constraint? */
static inline bool podaff_gang(const struct gang *g)
{
    for (uint32_t s = 0; s < g->n_sets && s < GANG_MAX_SETS; s++)
        if (podaff_constrains(g->sets[s].meta))
            return true;
    return false;
}
/* Are the n requirements a and b alike, one by one (operator, key, values, matchFields)? */
bool podaff_same_reqs(const struct sel_req *a, const struct sel_req *b, uint32_t n);
/* The hash of which pods term t, carried by a pod of namespace owner_ns, selects (its label and
 * namespace selection; not its topology key or weight), and whether two terms select alike. */
uint64_t podaff_selection_hash(const struct pod_term *t, const char *owner_ns);
bool podaff_same_selection(const struct pod_term *a, const char *a_ns, const struct pod_term *b,
                           const char *b_ns);
/* h folded with everything of m that placement reads (NULL folds a marker). */
uint64_t podaff_hash(uint64_t h, const struct pod_meta *m);
/* The hash of what m's terms for other pods select and weigh (its namespace, affinity and
 * preferred terms): pods of equal hashes score a pod alike (place_podpref.c). */
uint64_t podaff_terms_hash(const struct pod_meta *m);
/* h folded with m's namespace and labels only (NULL folds a marker). */
uint64_t podaff_labels_hash(uint64_t h, const struct pod_meta *m);
/* A label value of m (sorted labels), or NULL. */
const char *podaff_label(const struct pod_meta *m, const char *key);

#endif
