/* tests/unit/test_kube_pod_prefs.c: a pod's inter-pod preferences as the daemon reads them
 * (sched/kube/objects_meta.c), against core/v1: podAffinity and podAntiAffinity
 * preferredDuringSchedulingIgnoredDuringExecution (WeightedPodAffinityTerm {weight 1..100,
 * podAffinityTerm}), topologySpreadConstraints with whenUnsatisfiable ScheduleAnyway kept apart
 * from DoNotSchedule ones; refusals that name the field; pods that differ only in preferences
 * are different pod sets (kobj_same_spec). */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "sched/core/podaff.h"
#include "sched/kube/objects.h"

/* A pending pod of ours, labelled app=web, with `spec` (JSON members) added to its spec. */
static struct kpod *pod(const char *name, const char *spec)
{
    char js[4096];
    snprintf(js, sizeof(js),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"labels\":{\"app\":\"web\"}},"
             "\"spec\":{\"schedulerName\":\"gangsched\",%s\"containers\":[{\"name\":\"c\","
             "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
             name, spec);
    cJSON *o = cJSON_Parse(js);
    assert_non_null(o);
    struct kpod *p = NULL;
    struct sched_errbuf eb;
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), 0);
    cJSON_Delete(o);
    assert_non_null(p->spec);
    assert_non_null(p->meta);
    return p;
}

#define PREFERRED                                                                                  \
    "\"affinity\":{\"podAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"        \
    "\"weight\":%d,\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"db\"}},"     \
    "\"topologyKey\":\"zone\"}}]},\"podAntiAffinity\":{\"requiredDuringSchedulingIgnored"          \
    "DuringExecution\":[{\"labelSelector\":{\"matchLabels\":{\"app\":\"x\"}},\"topologyKey\":"     \
    "\"h\"}],\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,"                \
    "\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"namespaces\":"   \
    "[\"ml\",\"web\"],\"topologyKey\":\"kubernetes.io/hostname\"}}]}},"

static void preferred_terms_keep_their_weights(void **state)
{
    (void)state;
    char spec[1024];
    snprintf(spec, sizeof(spec), PREFERRED, 40);
    struct kpod *p = pod("a", spec);
    const struct pod_meta *m = p->meta;
    assert_null(p->spec->err);
    assert_int_equal(m->n_affinity, 0);
    assert_int_equal(m->n_anti, 1); /* the required term stays a rule */
    assert_int_equal(m->anti[0].weight, 0);
    assert_int_equal(m->n_pref_affinity, 1);
    assert_int_equal(m->pref_affinity[0].weight, 40);
    assert_string_equal(m->pref_affinity[0].topology_key, "zone");
    static const struct kv db[] = {{"app", "db"}};
    assert_true(podaff_selects(&m->pref_affinity[0], "ml",
                               &(struct pod_meta){.ns = "ml", .labels = db, .n_labels = 1}));
    assert_int_equal(m->n_pref_anti, 1);
    assert_int_equal(m->pref_anti[0].weight, 100);
    assert_int_equal(m->pref_anti[0].n_namespaces, 2);
    assert_true(podaff_selects(&m->pref_anti[0], "ml", m)); /* its own pods */
    assert_true(podaff_prefers(m));
    assert_true(podaff_others(m));
    /* pods that differ in a weight alone are different pod sets */
    snprintf(spec, sizeof(spec), PREFERRED, 40);
    struct kpod *same = pod("b", spec);
    snprintf(spec, sizeof(spec), PREFERRED, 41);
    struct kpod *other = pod("c", spec);
    assert_true(kobj_same_spec(p, same, true));
    assert_false(kobj_same_spec(p, other, true));
    kobj_pod_free(p);
    kobj_pod_free(same);
    kobj_pod_free(other);
}

/* kube-apiserver refuses a weight outside 1..100 and a term without a topologyKey; a pod that
 * got past it anyway waits with words naming the field. */
static void bad_preferred_terms_are_named(void **state)
{
    (void)state;
    static const int weights[] = {0, 101};
    for (int k = 0; k < 2; k++) {
        char spec[1024];
        snprintf(spec, sizeof(spec), PREFERRED, weights[k]);
        struct kpod *p = pod("w", spec);
        assert_non_null(p->spec->err);
        assert_non_null(strstr(p->spec->err, "pod ml/w: spec.affinity.podAffinity.preferredDuring"
                                             "SchedulingIgnoredDuringExecution[0].weight: an "
                                             "integer from 1 to 100"));
        kobj_pod_free(p);
    }
    struct kpod *p =
        pod("t", "\"affinity\":{\"podAntiAffinity\":{\"preferredDuringScheduling"
                 "IgnoredDuringExecution\":[{\"weight\":1,\"podAffinityTerm\":{}}]}},");
    assert_non_null(p->spec->err);
    assert_non_null(strstr(p->spec->err, "podAntiAffinity.preferredDuringSchedulingIgnoredDuring"
                                         "Execution[0].podAffinityTerm.topologyKey: required"));
    kobj_pod_free(p);
    p = pod("l", "\"affinity\":{\"podAffinity\":{\"preferredDuringSchedulingIgnoredDuring"
                 "Execution\":{}}},");
    assert_non_null(p->spec->err);
    assert_non_null(strstr(p->spec->err, "preferredDuringSchedulingIgnoredDuringExecution: not "
                                         "a list"));
    kobj_pod_free(p);
}

/* ScheduleAnyway constraints are read (a preference) apart from DoNotSchedule ones (a rule);
 * another value is skipped, as kube-scheduler does. */
static void schedule_anyway_spreads_are_preferences(void **state)
{
    (void)state;
    struct kpod *p = pod(
        "s",
        "\"topologySpreadConstraints\":[{\"maxSkew\":2,\"topologyKey\":\"zone\","
        "\"whenUnsatisfiable\":\"DoNotSchedule\",\"labelSelector\":{}},{\"maxSkew\":3,"
        "\"topologyKey\":\"kubernetes.io/hostname\",\"whenUnsatisfiable\":\"ScheduleAnyway\","
        "\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"nodeAffinityPolicy\":"
        "\"Ignore\"},{\"maxSkew\":1,\"topologyKey\":\"rack\",\"whenUnsatisfiable\":\"Maybe\"}],");
    const struct pod_meta *m = p->meta;
    assert_null(p->spec->err);
    assert_int_equal(m->n_spread, 1);
    assert_int_equal(m->spread[0].max_skew, 2);
    assert_int_equal(m->n_soft_spread, 1);
    assert_int_equal(m->soft_spread[0].max_skew, 3);
    assert_true(m->soft_spread[0].affinity_ignore);
    assert_string_equal(m->soft_spread[0].sel.topology_key, "kubernetes.io/hostname");
    assert_true(podaff_selects(&m->soft_spread[0].sel, "ml", m));
    assert_true(podaff_constrains(m));
    assert_true(podaff_prefers(m));
    assert_false(podaff_others(m)); /* a spread is the pod's own: no term for others */
    kobj_pod_free(p);
    p = pod("n", "\"topologySpreadConstraints\":[{\"maxSkew\":0,\"topologyKey\":\"zone\","
                 "\"whenUnsatisfiable\":\"ScheduleAnyway\"}],");
    assert_non_null(p->spec->err);
    assert_non_null(strstr(p->spec->err,
                           "spec.topologySpreadConstraints[0].maxSkew: an integer of at least 1"));
    kobj_pod_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(preferred_terms_keep_their_weights),
        cmocka_unit_test(bad_preferred_terms_are_named),
        cmocka_unit_test(schedule_anyway_spreads_are_preferences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
