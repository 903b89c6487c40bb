/* tests/unit/test_kube_sets.c: what the daemon's cache reads of an unbound pod when it arrives
 * (node selector, tolerations, affinity, spreads) and how a gang's members form its pod sets. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "sched/core/cycle.h"
#include "sched/kube/cache.h"

#include "kcache_fx.h"

#define POD_MIX                                                                                    \
    "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"labels\":{"                             \
    "\"scheduling.x-k8s.io/pod-group\":\"%s\"},\"annotations\":{\"note\":\"x\"}},"                 \
    "\"spec\":{\"schedulerName\":\"gangsched\",%s,\"containers\":[{\"resources\":{"                \
    "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}"

/* An unbound pod's nodeSelector, tolerations and annotations are read when it arrives (its JSON
 * is freed at once): equal specs share a pod set whatever their key order, different ones do
 * not, and a constraint that cannot be read makes the gang wait with InvalidSpec. */
static void pod_specs_are_decoded_on_arrival(void **state)
{
    struct fx *f = *state;
    pg(f->c, "mix", 3, "team-a");
    char buf[1000];
    snprintf(buf, sizeof(buf), POD_MIX, "mix-0", "mix",
             "\"nodeSelector\":{\"network.topology.gangsched.io/rack\":\"r1\",\"k\":\"v\"}");
    add_json(f->c, 1, buf);
    snprintf(buf, sizeof(buf), POD_MIX, "mix-1", "mix",
             "\"nodeSelector\":{\"k\":\"v\",\"network.topology.gangsched.io/rack\":\"r1\"}");
    add_json(f->c, 1, buf);
    snprintf(buf, sizeof(buf), POD_MIX, "mix-2", "mix",
             "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]");
    add_json(f->c, 1, buf);
    const struct kpod *p = kcache_pod(f->c, "ml/mix-0");
    assert_non_null(p);
    assert_non_null(p->spec);
    assert_int_equal(p->spec->n_ann, 1);
    assert_string_equal(p->spec->ann[0].value, "x");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    const struct gang *g = &kb.gangs[0].gang;
    assert_int_equal(g->n_sets, 2);
    assert_int_equal(g->sets[0].count, 2);
    assert_int_equal(g->sets[0].n_node_selector, 2);
    assert_string_equal(g->sets[0].node_selector[0].key, "k");
    assert_int_equal(g->sets[1].count, 1);
    assert_int_equal(g->sets[1].n_tolerations, 1);
    assert_string_equal(g->sets[1].tolerations[0].key, "gpu");
    snprintf(buf, sizeof(buf), POD_MIX, "bad-0", "bad",
             "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Near\"}]");
    add_json(f->c, 1, buf);
    pg(f->c, "bad", 1, "team-a");
    build(f, &kb);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "InvalidSpec");
    assert_non_null(strstr(kb.waiting[0].message, "pod ml/bad-0: spec.tolerations[0].operator"));
}

/* A pod whose ScheduleAnyway spread cannot be read keeps no constraint at all, half read
 * (before, its count of soft spreads stayed 1 with no array, and comparing two such members of
 * one gang read through NULL): the gang waits with InvalidSpec naming the field. */
static void unreadable_soft_spreads_are_dropped(void **state)
{
    struct fx *f = *state;
    pg(f->c, "soft", 2, "team-a");
    char buf[1000];
    for (int i = 0; i < 2; i++) {
        char name[24];
        snprintf(name, sizeof(name), "soft-%d", i);
        snprintf(buf, sizeof(buf), POD_MIX, name, "soft",
                 "\"topologySpreadConstraints\":[{\"maxSkew\":0,\"topologyKey\":\"zone\","
                 "\"whenUnsatisfiable\":\"ScheduleAnyway\"}]");
        add_json(f->c, 1, buf);
    }
    const struct kpod *p = kcache_pod(f->c, "ml/soft-1");
    assert_non_null(p);
    assert_int_equal(p->meta->n_soft_spread, 0);
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "InvalidSpec");
    assert_non_null(strstr(kb.waiting[0].message, "spec.topologySpreadConstraints[0].maxSkew"));
}

/* Preferred node affinity is part of a pod set's spec: two pods preferring one node share a
 * set, a third preferring another is a set of its own; a gang whose pods prefer GANG_MAX_SETS + 1
 * different nodes (more ways than its sets hold) forms its sets without preferences, placed
 * without them rather than refused; so does one whose pods differ in as many inter-pod
 * preferences. */
static void pod_sets_keep_their_preferences(void **state)
{
    struct fx *f = *state;
    char buf[1000], aff[300];
    enum { MANY = GANG_MAX_SETS + 1 };
    pg(f->c, "pref", 3, "team-a");
    pg(f->c, "many", MANY, "team-a");
    pg(f->c, "soft", MANY, "team-a"); /* so with inter-pod preferences: MANY weights */
    for (int k = 0; k < 3 + 2 * MANY; k++) {
        const char *grp = k < 3 ? "pref" : k < 3 + MANY ? "many" : "soft";
        if (k < 3 + MANY)
            snprintf(aff, sizeof(aff),
                     "\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuring"
                     "Execution\":[{\"weight\":50,\"preference\":{\"matchFields\":[{\"key\":"
                     "\"metadata.name\",\"operator\":\"In\",\"values\":[\"n%d\"]}]}}]}}",
                     k < 3 ? (k < 2 ? 1 : 2) : k);
        else
            snprintf(aff, sizeof(aff),
                     "\"affinity\":{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnored"
                     "DuringExecution\":[{\"weight\":%d,\"podAffinityTerm\":{\"labelSelector\":"
                     "{},\"topologyKey\":\"h\"}}]}}",
                     k);
        char name[24];
        snprintf(name, sizeof(name), "%s-%d", grp, k);
        snprintf(buf, sizeof(buf), POD_MIX, name, grp, aff);
        add_json(f->c, 1, buf);
    }
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 3);
    for (uint32_t x = 0; x < 3; x++) {
        const struct gang *g = &kb.gangs[x].gang;
        bool many = strcmp(kb.gangs[x].key, "ml/many") == 0;
        if (strcmp(kb.gangs[x].key, "ml/soft") == 0) { /* one set, without them */
            assert_int_equal(g->n_sets, 1);
            assert_int_equal(g->sets[0].count, MANY);
            assert_int_equal(g->sets[0].meta->n_pref_anti, 0);
            continue;
        }
        assert_int_equal(g->n_sets, many ? 1 : 2);
        assert_int_equal(g->sets[0].n_pref, many ? 0 : 1);
        assert_int_equal(g->sets[0].count, many ? MANY : 2);
        assert_true(many || (g->pref != 0 && g->sets[1].n_pref == 1));
    }
}

/* A pod joins the first set whose spec it shares, and a gang's members go in set order (set 0's
 * pods first, each set's in name order); pods of more specs than GANG_MAX_SETS sets hold (none of
 * them a preference) make the gang wait with InvalidSpec. */
static void pods_join_sets_in_order_or_are_too_many(void **state)
{
    struct fx *f = *state;
    char buf[1000], sel[100];
    pg(f->c, "two", 4, "team-a");
    pg(f->c, "wide", GANG_MAX_SETS + 1, "team-a");
    for (int k = 0; k < 4 + GANG_MAX_SETS + 1; k++) {
        bool two = k < 4;
        char name[24];
        snprintf(name, sizeof(name), "%s-%d", two ? "two" : "wide", two ? k : k - 4);
        snprintf(sel, sizeof(sel), "\"nodeSelector\":{\"rack\":\"r%d\"}", two ? k % 2 : k);
        snprintf(buf, sizeof(buf), POD_MIX, name, two ? "two" : "wide", sel);
        add_json(f->c, 1, buf);
    }
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    const struct kgang *kg = &kb.gangs[0];
    assert_string_equal(kg->key, "ml/two");
    assert_int_equal(kg->gang.n_sets, 2);
    assert_int_equal(kg->gang.sets[0].count, 2);
    assert_int_equal(kg->gang.sets[1].count, 2);
    assert_string_equal(kg->gang.sets[0].node_selector[0].value, "r0");
    const char *order[] = {"ml/two-0", "ml/two-2", "ml/two-1", "ml/two-3"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(kg->members[i]->key, order[i]);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "InvalidSpec");
    assert_non_null(strstr(kb.waiting[0].message, "pods of ml/wide have more than"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(pod_specs_are_decoded_on_arrival, setup, teardown),
        cmocka_unit_test_setup_teardown(unreadable_soft_spreads_are_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(pod_sets_keep_their_preferences, setup, teardown),
        cmocka_unit_test_setup_teardown(pods_join_sets_in_order_or_are_too_many, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
