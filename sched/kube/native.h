/* sched/kube/native.h: Kubernetes' own gang API, scheduling.k8s.io (KEP-4671 and follow-ups).
 *
 * Owns: decoding what the daemon reads of it into the records of objects.h, and the bodies of
 * what it writes back:
 *   1.35 v1alpha1 Workload: spec.podGroups[]{name, policy{basic | gang{minCount}}}; pods join
 *        with spec.workloadRef{name, podGroup, podGroupReplicaKey} (the triple is the gang key:
 *        each replica key is a separate gang of the same pod group). No status.
 *   1.36 v1alpha2 PodGroup and 1.37 v1beta1 PodGroup: spec.schedulingPolicy{basic | gang
 *        {minCount}}, spec.schedulingConstraints.topology[0].key, spec.priority,
 *        spec.disruptionMode (v1beta1 {all: {}} | {single: {}}; v1alpha2 "PodGroup" | "Pod"),
 *        metadata.generation, status.conditions (v1beta1 PodGroupInitiallyScheduled, v1alpha2
 *        PodGroupScheduled: True is terminal); pods join with spec.schedulingGroup.podGroupName.
 *   1.37 v1alpha3 CompositePodGroup (gate CompositePodGroup): spec.schedulingPolicy{basic |
 *        gang{minGroupCount}}, spec.schedulingConstraints.topology[0].key, spec.priority,
 *        spec.parentCompositePodGroupName (PodGroups name their parent with the same field),
 *        status.conditions CompositePodGroupInitiallyScheduled; read into a struct kpg keyed
 *        "namespace/cpg:name" (knative_cpg_key). How its children make one gang: cache_cpg.c.
 * Field names checked against kubernetes/api scheduling/v1alpha1 and v1alpha2 types.go and the
 * v1beta1 summary in docs/kubernetes.md.
 *
 * Must not touch: the network, the store; of the cache only the PodGroup map it is handed.
 * Errors name the object and the field.
 */
#ifndef SCHED_KUBE_NATIVE_H
#define SCHED_KUBE_NATIVE_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sched/core/err.h"
#include "sched/kube/objects.h"

#define KNATIVE_GROUP "scheduling.k8s.io"

/* A native API (KPG_NATIVE_*, KPG_WORKLOAD_V1ALPHA1 or KPG_CPG_V1ALPHA3). */
bool knative_is(enum kpg_api api);
/* The cache key of CompositePodGroup ns/name: "ns/cpg:name" (PodGroup keys have no ':', 1.35
 * Workload pod groups' "ns/workload:group" are never served with it). 0, or SCHED_EINVAL when
 * it does not fit in n or a part is not a name. */
int knative_cpg_key(const char *ns, const char *name, char *buf, size_t n);
/* "/apis/<group/version>/namespaces/<ns>/<plural>/<name>[/<sub>]" of a group's object (sub
 * NULL: the object itself). */
void knative_path(const struct kpg *pg, const char *sub, char *buf, size_t n);

/* "scheduling.x-k8s.io/v1alpha1", ..., "scheduling.k8s.io/v1beta1": the apiVersion of a group's
 * object; knative_kind: "PodGroup", or "Workload" for a 1.35 pod group; knative_plural:
 * "podgroups" or "workloads". */
const char *knative_api_version(enum kpg_api api);
const char *knative_kind(enum kpg_api api);
const char *knative_plural(enum kpg_api api);
/* The condition type saying the group was scheduled: PodGroupInitiallyScheduled (v1beta1),
 * PodGroupScheduled (v1alpha2); NULL where the API has no status (1.35 Workload, CRDs). */
const char *knative_sched_condition(enum kpg_api api);

/* The pod's native group from spec.schedulingGroup.podGroupName (1.36+) or spec.workloadRef
 * (1.35): sets p->group ("ns/podGroupName", or "ns/workload:podGroup[:replicaKey]"), p->pg_ref
 * (1.35: "ns/workload:podGroup") and p->native. 0 also when the pod names no native group;
 * SCHED_EINVAL naming the pod and field; SCHED_ENOMEM. */
int knative_pod_group(const cJSON *spec, const char *ns, const char *pod_key, struct kpod *p,
                      struct sched_errbuf *eb);

/* A v1alpha2 or v1beta1 PodGroup. */
int knative_pg_decode(const cJSON *o, enum kpg_api api, struct kpg **out, struct sched_errbuf *eb);

/* A 1.35 Workload: one record per spec.podGroups[] entry, keyed "ns/workload:podGroup" (name:
 * the Workload's, for Events). *out is a malloc'd array of *n records (each freed with
 * kobj_pg_free). */
int knative_workload_decode(const cJSON *o, struct kpg ***out, uint32_t *n,
                            struct sched_errbuf *eb);

/* A 1.35 Workload's informer event applied to `pgs` ("ns/name" -> struct kpg*): its pod groups
 * replace the ones it had (keys "ns/workload:*"); a deleted or (logged) invalid Workload's stay
 * or go as the event says. 0 or SCHED_ENOMEM. */
struct strmap;
int knative_workload_event(struct strmap *pgs, const cJSON *obj, bool deleted);

/* The strategic-merge-patch body for pods/status-like writes of one PodGroup condition
 * (conditions merge by type, as the API declares): {"status": {"conditions": [{type, status,
 * reason, message, observedGeneration, lastTransitionTime}]}}. lastTransitionTime is kept from
 * the stored condition when its status does not change. NULL when nothing may be written: the
 * API has no status, or `ctype` is the scheduled condition, it is True already (terminal) and
 * this write would say False. */
cJSON *knative_condition_patch(const struct kpg *pg, const char *ctype, bool ok, const char *reason,
                               const char *message, int64_t now_ms);

/* Whether a scheduled native group's spec changed since it was scheduled (its generation is
 * past the observedGeneration of its True scheduled condition, or that is not known): then a
 * minCount above its live members is a raised one, which applies to later cycles only and never
 * evicts (upstream's promise); else members below minCount were lost, and the gang is torn
 * down (a gang never runs partial). */
bool knative_min_raised(const struct kpg *pg);

/* The status reason upstream defines for one of the daemon's waiting reasons: "SchedulerError"
 * for specs it cannot act on (InvalidSpec, SchedulerError), else "Unschedulable". */
const char *knative_reason(const char *why);

#endif
