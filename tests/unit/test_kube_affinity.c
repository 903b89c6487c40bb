/* tests/unit/test_kube_affinity.c: a pod's affinity and spreads as the daemon reads them
 * (sched/kube/objects.c, objects_meta.c), against core/v1: spec.affinity.nodeAffinity
 * (required nodeSelectorTerms with matchExpressions and matchFields (metadata.name, In or
 * NotIn), preferred terms with their weights (1..100; weight 0 or an empty preference counts for
 * nothing)); podAffinity and podAntiAffinity preferredDuringSchedulingIgnoredDuringExecution
 * (WeightedPodAffinityTerm {weight 1..100, podAffinityTerm}); topologySpreadConstraints with
 * whenUnsatisfiable ScheduleAnyway kept apart from DoNotSchedule ones; refusals that name the
 * field; pods of one set having equal preferences (kobj_same_spec); required pod (anti-)affinity,
 * host ports and DoNotSchedule spreads as the inter-pod rules read them (pod_meta_is_decoded). */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "plugins/plugins.h"
#include "sched/core/podaff.h"
#include "sched/kube/objects.h"

/* A pending pod of ours, labelled app=web, with `spec` (JSON members, each followed by a
 * comma) added to its spec. */
static struct kpod *pod_spec(const char *name, const char *spec)
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

/* The same whose spec.affinity.nodeAffinity is `na` (JSON). */
static struct kpod *pod(const char *name, const char *na)
{
    char spec[2048];
    snprintf(spec, sizeof(spec), "\"affinity\":{\"nodeAffinity\":%s},", na);
    return pod_spec(name, spec);
}

static void required_terms_read_labels_and_fields(void **state)
{
    (void)state;
    struct kpod *p = pod("a", "{\"requiredDuringSchedulingIgnoredDuringExecution\":{"
                              "\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"zone\","
                              "\"operator\":\"In\",\"values\":[\"z1\"]}],\"matchFields\":[{"
                              "\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":"
                              "[\"n1\"]}]},{}]}}");
    assert_null(p->spec->err);
    assert_int_equal(p->spec->n_affinity, 2);
    const struct sel_term *t = &p->spec->affinity[0];
    assert_int_equal(t->n_reqs, 2);
    assert_false(t->reqs[0].field);
    assert_true(t->reqs[1].field);
    assert_int_equal(t->reqs[1].op, SEL_NOT_IN);
    /* the term against nodes: a label and the node's name, ANDed */
    struct kv z1 = {.key = "zone", .value = "z1"};
    struct node n1 = {.name = "n1", .labels = &z1, .n_labels = 1};
    struct node n2 = {.name = "n2", .labels = &z1, .n_labels = 1};
    struct node n3 = {.name = "n3"};
    assert_false(sel_term_matches(t, &n1));
    assert_true(sel_term_matches(t, &n2));
    assert_false(sel_term_matches(t, &n3));
    /* the second term, {}, matches no node (core/v1 NodeSelectorTerm) */
    assert_int_equal(p->spec->affinity[1].n_reqs, 0);
    assert_false(sel_term_matches(&p->spec->affinity[1], &n2));
    kobj_pod_free(p);
}

static void preferred_terms_keep_their_weights(void **state)
{
    (void)state;
    struct kpod *p =
        pod("a", "{\"preferredDuringSchedulingIgnoredDuringExecution\":["
                 "{\"weight\":30,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\","
                 "\"operator\":\"In\",\"values\":[\"z1\"]}]}},"
                 "{\"weight\":0,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\","
                 "\"operator\":\"Exists\"}]}},"
                 "{\"weight\":70,\"preference\":{}},"
                 "{\"weight\":100,\"preference\":{\"matchFields\":[{\"key\":\"metadata.name\","
                 "\"operator\":\"In\",\"values\":[\"n2\"]}]}}]}");
    assert_null(p->spec->err);
    assert_int_equal(p->spec->n_pref, 2); /* weight 0 and the empty preference are no-ops */
    assert_int_equal(p->spec->pref[0].weight, 30);
    assert_int_equal(p->spec->pref[1].weight, 100);
    assert_true(p->spec->pref[1].term.reqs[0].field);
    struct podset ps = {.pref = p->spec->pref, .n_pref = p->spec->n_pref};
    struct kv z1 = {.key = "zone", .value = "z1"};
    struct node n1 = {.name = "n1", .labels = &z1, .n_labels = 1};
    struct node n2 = {.name = "n2", .labels = &z1, .n_labels = 1};
    struct node n3 = {.name = "n3"};
    assert_int_equal(sel_pref_weight(&ps, &n1), 30);
    assert_int_equal(sel_pref_weight(&ps, &n2), 130);
    assert_int_equal(sel_pref_weight(&ps, &n3), 0);
    /* pods of one set have equal preferences */
    struct kpod *same = pod("b", "{\"preferredDuringSchedulingIgnoredDuringExecution\":["
                                 "{\"weight\":30,\"preference\":{\"matchExpressions\":[{\"key\":"
                                 "\"zone\",\"operator\":\"In\",\"values\":[\"z1\"]}]}},"
                                 "{\"weight\":100,\"preference\":{\"matchFields\":[{\"key\":"
                                 "\"metadata.name\",\"operator\":\"In\",\"values\":[\"n2\"]}]}}]}");
    struct kpod *other =
        pod("c", "{\"preferredDuringSchedulingIgnoredDuringExecution\":["
                 "{\"weight\":31,\"preference\":{\"matchExpressions\":[{\"key\":"
                 "\"zone\",\"operator\":\"In\",\"values\":[\"z1\"]}]}},"
                 "{\"weight\":100,\"preference\":{\"matchFields\":[{\"key\":"
                 "\"metadata.name\",\"operator\":\"In\",\"values\":[\"n2\"]}]}}]}");
    assert_true(kobj_same_spec(p, same, true));
    assert_false(kobj_same_spec(p, other, true));
    assert_true(kobj_same_spec(p, other, false)); /* sets formed without preferences */
    kobj_pod_free(p);
    kobj_pod_free(same);
    kobj_pod_free(other);
}

static void malformed_terms_are_refused_by_field(void **state)
{
    (void)state;
    static const struct {
        const char *na, *err;
    } cases[] = {
        {"{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
         "\"matchFields\":[{\"key\":\"metadata.uid\",\"operator\":\"In\",\"values\":[\"x\"]}]}]}}",
         "pod ml/a: nodeSelectorTerms[0].matchFields[0].key: 'metadata.uid': only metadata.name "
         "is a field"},
        {"{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
         "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"Exists\"}]}]}}",
         "pod ml/a: nodeSelectorTerms[0].matchFields[0]: needs a key and an operator of In, NotIn"},
        {"{\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":{}}}",
         "pod ml/a: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
         "nodeSelectorTerms: not a list"},
        {"{\"preferredDuringSchedulingIgnoredDuringExecution\":{}}",
         "pod ml/a: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: "
         "not a list"},
        {"{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":101,\"preference\":{"
         "\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Exists\"}]}}]}",
         "pod ml/a: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
         ".weight: not an integer from 1 to 100"},
        {"{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":5,\"preference\":{"
         "\"matchExpressions\":[{\"key\":\"gen\",\"operator\":\"Above\"}]}}]}",
         "pod ml/a: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
         ".preference.matchExpressions[0]: needs a key and an operator of In, NotIn, Exists, "
         "DoesNotExist, Gt, Lt"},
        {"{\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":5,\"preference\":7}]}",
         "pod ml/a: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
         ".preference: not an object"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct kpod *p = pod("a", cases[k].na);
        assert_non_null(p->spec->err);
        if (!strstr(p->spec->err, cases[k].err))
            fail_msg("case %zu: '%s' lacks '%s'", k, p->spec->err, cases[k].err);
        kobj_pod_free(p);
    }
}

#define PREFERRED                                                                                  \
    "\"affinity\":{\"podAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"        \
    "\"weight\":%d,\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"db\"}},"     \
    "\"topologyKey\":\"zone\"}}]},\"podAntiAffinity\":{\"requiredDuringSchedulingIgnored"          \
    "DuringExecution\":[{\"labelSelector\":{\"matchLabels\":{\"app\":\"x\"}},\"topologyKey\":"     \
    "\"h\"}],\"preferredDuringSchedulingIgnoredDuringExecution\":[{\"weight\":100,"                \
    "\"podAffinityTerm\":{\"labelSelector\":{\"matchLabels\":{\"app\":\"web\"}},\"namespaces\":"   \
    "[\"ml\",\"web\"],\"topologyKey\":\"kubernetes.io/hostname\"}}]}},"

static void preferred_pod_terms_keep_their_weights(void **state)
{
    (void)state;
    char spec[1024];
    snprintf(spec, sizeof(spec), PREFERRED, 40);
    struct kpod *p = pod_spec("a", spec);
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
    struct kpod *same = pod_spec("b", spec);
    snprintf(spec, sizeof(spec), PREFERRED, 41);
    struct kpod *other = pod_spec("c", spec);
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
        struct kpod *p = pod_spec("w", spec);
        assert_non_null(p->spec->err);
        assert_non_null(strstr(p->spec->err, "pod ml/w: spec.affinity.podAffinity.preferredDuring"
                                             "SchedulingIgnoredDuringExecution[0].weight: an "
                                             "integer from 1 to 100"));
        kobj_pod_free(p);
    }
    struct kpod *p =
        pod_spec("t", "\"affinity\":{\"podAntiAffinity\":{\"preferredDuringScheduling"
                      "IgnoredDuringExecution\":[{\"weight\":1,\"podAffinityTerm\":{}}]}},");
    assert_non_null(p->spec->err);
    assert_non_null(strstr(p->spec->err, "podAntiAffinity.preferredDuringSchedulingIgnoredDuring"
                                         "Execution[0].podAffinityTerm.topologyKey: required"));
    kobj_pod_free(p);
    p = pod_spec("l", "\"affinity\":{\"podAffinity\":{\"preferredDuringSchedulingIgnoredDuring"
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
    struct kpod *p = pod_spec(
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
    p = pod_spec("n", "\"topologySpreadConstraints\":[{\"maxSkew\":0,\"topologyKey\":\"zone\","
                      "\"whenUnsatisfiable\":\"ScheduleAnyway\"}],");
    assert_non_null(p->spec->err);
    assert_non_null(strstr(p->spec->err,
                           "spec.topologySpreadConstraints[0].maxSkew: an integer of at least 1"));
    kobj_pod_free(p);
}

/* What inter-pod constraints read of a pod (objects_meta.c): labels, required pod affinity and
 * anti-affinity terms as core/v1 writes them (matchLabels, matchExpressions, matchLabelKeys
 * merged with the pod's own value, namespaces, namespaceSelector {}), host ports by protocol. A
 * malformed term makes our pending pod's gang wait with its words; any other pod keeps its
 * labels. */
static void pod_meta_is_decoded(void **state)
{
    (void)state;
    const char *json =
        "{\"metadata\":{\"name\":\"w-0\",\"namespace\":\"ml\",\"labels\":{\"job\":\"j1\","
        "\"app\":\"train\"}},\"spec\":{\"schedulerName\":\"gangsched\",\"affinity\":{"
        "\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
        "\"labelSelector\":{\"matchLabels\":{\"app\":\"train\"}},\"matchLabelKeys\":[\"job\","
        "\"absent\"],\"topologyKey\":\"rack\"}]},\"podAntiAffinity\":{"
        "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":{"
        "\"matchExpressions\":[{\"key\":\"job\",\"operator\":\"NotIn\",\"values\":[\"j1\"]}]},"
        "\"namespaceSelector\":{},\"topologyKey\":\"rack\"},{\"topologyKey\":\"h\"}]}},"
        "\"containers\":[{\"name\":\"c\",\"ports\":[{\"containerPort\":80,\"hostPort\":8080},"
        "{\"containerPort\":53,\"hostPort\":53,\"protocol\":\"UDP\"},{\"containerPort\":9}]}]}}";
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    struct kpod *p = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), 0);
    const struct pod_meta *m = p->meta;
    assert_non_null(m);
    assert_string_equal(m->ns, "ml");
    assert_int_equal(m->n_labels, 2);
    assert_string_equal(podaff_label(m, "job"), "j1");
    assert_int_equal(m->n_affinity, 1);
    assert_string_equal(m->affinity[0].topology_key, "rack");
    assert_int_equal(m->affinity[0].n_reqs, 2); /* app In (train), job In (j1); absent: ignored */
    assert_true(podaff_selects(&m->affinity[0], "ml", m));
    struct pod_meta other = *m;
    static const struct kv j2[] = {{"app", "train"}, {"job", "j2"}};
    other.labels = j2;
    assert_false(podaff_selects(&m->affinity[0], "ml", &other)); /* another job's pods */
    assert_int_equal(m->n_anti, 2);
    assert_true(m->anti[0].all_namespaces);
    assert_true(podaff_selects(&m->anti[0], "ml",
                               &(struct pod_meta){.ns = "x", .labels = j2, .n_labels = 2}));
    assert_true(m->anti[1].none); /* no labelSelector: selects no pod */
    assert_int_equal(m->n_ports, 2);
    assert_int_equal(m->ports[0], 6u << 16 | 8080); /* TCP first, then UDP */
    assert_int_equal(m->ports[1], 7u << 16 | 53);
    assert_null(p->spec->err);
    assert_int_equal(m->n_spread, 0);
    kobj_pod_free(p);
    cJSON_Delete(o);

    o = cJSON_Parse(
        "{\"metadata\":{\"name\":\"s\",\"namespace\":\"ml\",\"labels\":{\"job\":"
        "\"j1\"}},\"spec\":{\"schedulerName\":\"gangsched\",\"topologySpreadConstraints\":"
        "[{\"maxSkew\":2,\"topologyKey\":\"zone\",\"whenUnsatisfiable\":\"DoNotSchedule\","
        "\"labelSelector\":{},\"matchLabelKeys\":[\"job\"],\"minDomains\":3,"
        "\"nodeTaintsPolicy\":\"Honor\"},{\"maxSkew\":1,\"topologyKey\":\"zone\","
        "\"whenUnsatisfiable\":\"ScheduleAnyway\"}]}}");
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), 0);
    assert_int_equal(p->meta->n_spread, 1); /* ScheduleAnyway: a preference, kept apart */
    assert_int_equal(p->meta->n_soft_spread, 1);
    const struct pod_spread *sp = &p->meta->spread[0];
    assert_int_equal(sp->max_skew, 2);
    assert_int_equal(sp->min_domains, 3);
    assert_true(sp->taints_honor);
    assert_false(sp->affinity_ignore);
    assert_string_equal(sp->sel.topology_key, "zone");
    assert_int_equal(sp->sel.n_reqs, 1); /* job In (j1), from matchLabelKeys */
    assert_true(podaff_selects(&sp->sel, "ml", p->meta));
    assert_false(podaff_selects(&sp->sel, "ml",
                                &(struct pod_meta){.ns = "ml", .labels = j2, .n_labels = 2}));
    kobj_pod_free(p);
    cJSON_Delete(o);

#define BAD_POD(sched, node)                                                                       \
    "{\"metadata\":{\"name\":\"b\",\"namespace\":\"ml\",\"labels\":{\"a\":\"b\"}},\"spec\":{"      \
    "\"schedulerName\":\"" sched "\"," node "\"affinity\":{\"podAntiAffinity\":{"                  \
    "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":\"h\","                  \
    "\"labelSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\"}]}}]}}}}"
    o = cJSON_Parse(BAD_POD("gangsched", ""));
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), 0);
    assert_non_null(p->spec->err);
    assert_non_null(strstr(p->spec->err, "podAntiAffinity.requiredDuringSchedulingIgnoredDuring"
                                         "Execution[0].labelSelector.matchExpressions[0]: needs a "
                                         "key and an operator of In, NotIn, Exists, DoesNotExist"));
    assert_null(strstr(p->spec->err, "Gt")); /* label selectors have four operators */
    kobj_pod_free(p);
    cJSON_Delete(o);
    /* node selectors have six: Gt passes there, an unknown one is refused naming all six */
    for (int bad = 0; bad < 2; bad++) {
        char js[512];
        snprintf(js, sizeof(js),
                 "{\"metadata\":{\"name\":\"n\",\"namespace\":\"ml\"},\"spec\":{"
                 "\"schedulerName\":\"gangsched\",\"affinity\":{\"nodeAffinity\":{"
                 "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
                 "\"matchExpressions\":[{\"key\":\"gen\",\"operator\":\"%s\",\"values\":"
                 "[\"3\"]}]}]}}}}}",
                 bad ? "Above" : "Gt");
        o = cJSON_Parse(js);
        assert_non_null(o);
        assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), 0);
        if (bad) {
            assert_non_null(p->spec->err);
            assert_non_null(strstr(p->spec->err, "pod ml/n: nodeSelectorTerms[0].matchExpressions"
                                                 "[0]: needs a key and an operator of In, NotIn, "
                                                 "Exists, DoesNotExist, Gt, Lt"));
        } else {
            assert_null(p->spec->err);
            assert_int_equal(p->spec->n_affinity, 1);
        }
        kobj_pod_free(p);
        cJSON_Delete(o);
    }
    o = cJSON_Parse(BAD_POD("default-scheduler", "\"nodeName\":\"n1\","));
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), 0);
    assert_int_equal(p->meta->n_anti, 0);
    assert_int_equal(p->meta->n_labels, 1);
    kobj_pod_free(p);
    cJSON_Delete(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(required_terms_read_labels_and_fields),
        cmocka_unit_test(preferred_terms_keep_their_weights),
        cmocka_unit_test(malformed_terms_are_refused_by_field),
        cmocka_unit_test(preferred_pod_terms_keep_their_weights),
        cmocka_unit_test(bad_preferred_terms_are_named),
        cmocka_unit_test(schedule_anyway_spreads_are_preferences),
        cmocka_unit_test(pod_meta_is_decoded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
