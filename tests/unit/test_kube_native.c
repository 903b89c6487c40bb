/* tests/unit/test_kube_native.c: Kubernetes' own gang API (sched/kube/native.c) through the
 * cache: pods joined by spec.schedulingGroup and spec.workloadRef, minCount, basic, extra pods,
 * the topology key, priority, a raised minCount, another scheduler's member, the condition
 * patches (terminal once True) and malformed objects with messages naming the field. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "sched/core/cycle.h"
#include "sched/core/policy.h"
#include "sched/kube/cache.h"
#include "sched/kube/driver_int.h"
#include "sched/kube/native.h"

#include "tests/unit/kube_fx.h"

static const char *const cfg_yaml = "apiVersion: gangsched.io/v1alpha1\n"
                                    "kind: SchedulerConfig\n"
                                    "queues:\n"
                                    "  - name: team-a\n";

struct nfx {
    struct kcache *c;
    struct config *cfg;
    struct arena a;
};

static void node(struct kcache *c, const char *name, const char *rack)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"network.topology.gangsched.io/rack\":\"%s\"}},\"status\":{\"allocatable\":{"
             "\"cpu\":\"96\",\"memory\":\"1Ti\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             name, rack);
    fx_event(c, 0, 0, buf);
}

/* A pod; link: the JSON members joining it to a group ("" none); node "" = unbound. */
static void pod(struct kcache *c, const char *name, const char *link, const char *sched,
                const char *node_name, int prio)
{
    char buf[1500];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\"},"
             "\"spec\":{%s%s\"schedulerName\":\"%s\",\"nodeName\":\"%s\",\"priority\":%d,"
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
             "\"8\"}}}]},\"status\":{\"phase\":\"%s\"}}",
             name, name, link, *link ? "," : "", sched, node_name, prio,
             *node_name ? "Running" : "Pending");
    fx_event(c, 1, 0, buf);
}

static void in_group(struct kcache *c, const char *name, const char *group)
{
    char link[200];
    snprintf(link, sizeof(link), "\"schedulingGroup\":{\"podGroupName\":\"%s\"}", group);
    pod(c, name, link, "gangsched", "", 0);
}

/* A v1beta1 PodGroup; policy: JSON of schedulingPolicy; more: extra spec members; status: JSON
 * of status or "". */
static void pg(struct kcache *c, const char *name, const char *policy, const char *more,
               const char *status)
{
    char buf[1500];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\","
             "\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"pg-%s\","
             "\"generation\":3},\"spec\":{\"schedulingPolicy\":%s%s%s}%s%s}",
             name, name, policy, *more ? "," : "", more, *status ? ",\"status\":" : "", status);
    fx_event(c, 2, KPG_NATIVE_V1BETA1, buf);
}

static int setup(void **state)
{
    static struct nfx f;
    memset(&f, 0, sizeof(f));
    struct sched_errbuf eb = {{0}};
    if (config_load_buffer("test.yaml", cfg_yaml, strlen(cfg_yaml), &f.cfg, &eb) != 0)
        return -1;
    f.c = kcache_new("gangsched");
    arena_init(&f.a, 1 << 16);
    node(f.c, "n1", "r1");
    node(f.c, "n2", "r1");
    node(f.c, "n3", "r2");
    node(f.c, "n4", "r2");
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct nfx *f = *state;
    kcache_free(f->c);
    config_free(f->cfg);
    arena_fini(&f->a);
    return 0;
}

static void build(struct nfx *f, struct kcache_build *kb)
{
    struct sched_errbuf eb = {{0}};
    arena_reset(&f->a);
    assert_int_equal(kcache_build(f->c, f->cfg, sched_policy_default(), 1000, &f->a, kb, &eb), 0);
}

static void gang_min_count_topology_priority(void **state)
{
    struct nfx *f = *state;
    pg(f->c, "tas", "{\"gang\":{\"minCount\":3}}",
       "\"schedulingConstraints\":{\"topology\":[{\"key\":"
       "\"network.topology.gangsched.io/rack\"}]},\"priority\":500",
       "");
    in_group(f->c, "t-0", "tas");
    in_group(f->c, "t-1", "tas");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "WaitingForPods");
    in_group(f->c, "t-2", "tas");
    in_group(f->c, "t-3", "tas");
    build(f, &kb);
    /* minCount 3 of 4 pods: the gang is its first 3 (the 4th is an extra, placed later) */
    assert_int_equal(kb.n_pending, 1);
    assert_string_equal(kb.gangs[0].key, "ml/tas");
    assert_int_equal(kb.gangs[0].gang.n_pods, 3);
    assert_int_equal(kb.gangs[0].gang.priority, 500);
    /* the constraint's key is the rack level: 3 x 8 GPUs do not fit in a 2-node rack */
    assert_true(kb.gangs[0].gang.topo_required >= 0);
    assert_string_equal(kb.snap.cluster->topo.levels[kb.gangs[0].gang.topo_required].name, "rack");
    struct sched_result res;
    assert_int_equal(sched_cycle(&kb.snap, &f->a, &res), 0);
    assert_int_equal(res.n_placements, 0);
}

static void extras_one_at_a_time_and_raised_min(void **state)
{
    struct nfx *f = *state;
    pg(f->c, "g", "{\"gang\":{\"minCount\":2}}", "",
       "{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\","
       "\"reason\":\"Scheduled\"}]}");
    pod(f->c, "g-0", "\"schedulingGroup\":{\"podGroupName\":\"g\"}", "gangsched", "n1", 0);
    pod(f->c, "g-1", "\"schedulingGroup\":{\"podGroupName\":\"g\"}", "gangsched", "n2", 0);
    in_group(f->c, "g-2", "g");
    in_group(f->c, "g-3", "g");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    assert_int_equal(kb.gangs[0].gang.n_pods, 1); /* an extra: one at a time */
    /* minCount raised to 4 on a scheduled gang: nothing is torn down, the running gang's
     * minimum stays what runs */
    pg(f->c, "g", "{\"gang\":{\"minCount\":4}}", "",
       "{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\","
       "\"reason\":\"Scheduled\"}]}");
    build(f, &kb);
    for (uint32_t w = 0; w < kb.n_waiting; w++)
        assert_string_not_equal(kb.waiting[w].reason, "PartialGang");
    assert_int_equal(kb.n_pending, 1);
    assert_true(kb.gangs[kb.n_gangs - 1].running);
    assert_int_equal(kb.gangs[kb.n_gangs - 1].min_member, 2);
    /* the same on a gang never scheduled: below minCount it is partial (the condition's
     * change is one for a cycle; a status write of ours that keeps it is not) */
    pg(f->c, "g", "{\"gang\":{\"minCount\":4}}", "",
       "{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\","
       "\"reason\":\"Scheduled\",\"message\":\"again\"}]}");
    assert_false(kcache_dirty(f->c));
    pg(f->c, "g", "{\"gang\":{\"minCount\":4}}", "", "");
    assert_true(kcache_dirty(f->c));
    build(f, &kb);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "PartialGang");
}

/* preemptionPolicy Never: a native group's spec.preemptionPolicy (gate PodGroupPreemptionPolicy)
 * decides for its gang; without one, any member pod's (its PriorityClass's, from admission). */
static void preemption_policy_never(void **state)
{
    struct nfx *f = *state;
    pg(f->c, "g", "{\"gang\":{\"minCount\":1}}", "\"preemptionPolicy\":\"Never\"", "");
    in_group(f->c, "g-0", "g");
    pod(f->c, "solo", "\"preemptionPolicy\":\"Never\"", "gangsched", "", 0);
    pod(f->c, "other", "", "gangsched", "", 0);
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 3);
    for (uint32_t i = 0; i < kb.n_pending; i++) {
        const struct kgang *g = &kb.gangs[i];
        assert_int_equal(g->gang.never_preempts, strcmp(g->key, "ml/other") != 0);
    }
    /* the group's PreemptLowerPriority wins over a member's Never */
    pg(f->c, "g", "{\"gang\":{\"minCount\":1}}", "\"preemptionPolicy\":\"PreemptLowerPriority\"",
       "");
    pod(f->c, "g-0", "\"schedulingGroup\":{\"podGroupName\":\"g\"},\"preemptionPolicy\":\"Never\"",
        "gangsched", "", 0);
    build(f, &kb);
    bool seen = false;
    for (uint32_t i = 0; i < kb.n_pending; i++)
        if (strcmp(kb.gangs[i].key, "ml/g") == 0) {
            seen = true;
            assert_false(kb.gangs[i].gang.never_preempts);
        }
    assert_true(seen);
    /* a policy given where none was is a change for a cycle (it overrides the members') */
    pg(f->c, "h", "{\"gang\":{\"minCount\":1}}", "", "");
    build(f, &kb);
    assert_false(kcache_dirty(f->c));
    pg(f->c, "h", "{\"gang\":{\"minCount\":1}}", "\"preemptionPolicy\":\"PreemptLowerPriority\"",
       "");
    assert_true(kcache_dirty(f->c));
}

/* A scheduled gang below minCount at the generation it was scheduled at lost members: its
 * minimum stays minCount (the lifecycle tears it down); a later generation raised minCount. */
static void lost_members_are_not_a_raised_min(void **state)
{
    struct nfx *f = *state;
    const char *link = "\"schedulingGroup\":{\"podGroupName\":\"g\"}";
    pg(f->c, "g", "{\"gang\":{\"minCount\":2}}", "",
       "{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\","
       "\"reason\":\"Scheduled\",\"observedGeneration\":3}]}");
    pod(f->c, "g-0", link, "gangsched", "n1", 0);
    in_group(f->c, "g-1", "g");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "PartialGang");
    assert_true(kb.gangs[kb.n_gangs - 1].running);
    assert_int_equal(kb.gangs[kb.n_gangs - 1].min_member, 2);
    /* the spec changed since (generation 3 against observedGeneration 2): minCount was raised */
    pg(f->c, "g", "{\"gang\":{\"minCount\":2}}", "",
       "{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\",\"status\":\"True\","
       "\"reason\":\"Scheduled\",\"observedGeneration\":2}]}");
    build(f, &kb);
    assert_int_equal(kb.gangs[kb.n_gangs - 1].min_member, 1);
    for (uint32_t w = 0; w < kb.n_waiting; w++)
        assert_string_not_equal(kb.waiting[w].reason, "PartialGang");
}

/* A v1alpha3 CompositePodGroup ml/name; spec: its JSON spec members. */
static void cpg(struct kcache *c, const char *name, const char *spec)
{
    char buf[1000];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"scheduling.k8s.io/v1alpha3\",\"kind\":\"CompositePodGroup\","
             "\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"cpg-%s\","
             "\"generation\":1},\"spec\":{\"workloadRef\":{\"workloadName\":\"w\","
             "\"templateName\":\"t\"},%s}}",
             name, name, spec);
    fx_event(c, 2, KPG_CPG_V1ALPHA3, buf);
}

/* The children of a gang CompositePodGroup make one gang keyed "ns/cpg:name": below quorum it
 * waits in kube-scheduler's words; at quorum its first minGroupCount ready children go
 * together, minCount pods each, as slices when they have a topology key; a PodGroup of the
 * same name is another group. */
static void composite_tree_is_one_gang(void **state)
{
    struct nfx *f = *state;
    const char *rack = "\"schedulingConstraints\":{\"topology\":[{\"key\":"
                       "\"network.topology.gangsched.io/rack\"}]}";
    cpg(f->c, "t", "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":2}},\"priority\":700");
    char more[300];
    snprintf(more, sizeof(more), "\"parentCompositePodGroupName\":\"t\",%s", rack);
    pg(f->c, "t-a", "{\"gang\":{\"minCount\":2}}", more, "");
    pg(f->c, "t-b", "{\"gang\":{\"minCount\":2}}", more, "");
    pg(f->c, "t-c", "{\"gang\":{\"minCount\":2}}", more, "");
    pg(f->c, "t", "{\"gang\":{\"minCount\":1}}", "", ""); /* a PodGroup named as the tree */
    in_group(f->c, "a-0", "t-a");
    in_group(f->c, "a-1", "t-a");
    in_group(f->c, "a-2", "t-a");
    in_group(f->c, "c-0", "t-c");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].key, "ml/cpg:t");
    assert_string_equal(kb.waiting[0].reason, "WaitingForPods");
    assert_non_null(strstr(kb.waiting[0].message, "waiting for composite pod group \"t\" tree to "
                                                  "meet quorum: 1 of minGroupCount 2"));
    in_group(f->c, "b-0", "t-b");
    in_group(f->c, "b-1", "t-b");
    in_group(f->c, "c-1", "t-c");
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    const struct kgang *g = &kb.gangs[0];
    assert_string_equal(g->key, "ml/cpg:t");
    assert_int_equal(g->pg->api, KPG_CPG_V1ALPHA3);
    assert_int_equal(g->gang.n_pods, 4); /* t-a's first 2 and t-b's 2: t-c is not needed */
    const char *want[] = {"a-0", "a-1", "b-0", "b-1"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(g->members[i]->name, want[i]);
    assert_int_equal(g->gang.priority, 700);
    assert_int_equal(g->gang.slice_size, 2); /* each child one slice in one rack */
    assert_string_equal(kb.snap.cluster->topo.levels[g->gang.slice_level].name, "rack");
    struct sched_result res;
    assert_int_equal(sched_cycle(&kb.snap, &f->a, &res), 0);
    assert_int_equal(res.n_placements, 1);
    /* children of different minCounts with a topology key cannot be slices: said */
    pg(f->c, "t-b", "{\"gang\":{\"minCount\":1}}", more, "");
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0);
    assert_string_equal(kb.waiting[0].reason, "InvalidSpec");
    assert_non_null(strstr(kb.waiting[0].message, "sizes"));
}

/* Two levels: a root over two gang CompositePodGroups, each over a PodGroup with a rack key: one
 * gang of the root's key, the PodGroups its slices. */
static void composite_tree_of_two_levels(void **state)
{
    struct nfx *f = *state;
    const char *rack = "\"schedulingConstraints\":{\"topology\":[{\"key\":"
                       "\"network.topology.gangsched.io/rack\"}]}";
    cpg(f->c, "r", "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":2}}");
    cpg(f->c, "m1",
        "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":1}},"
        "\"parentCompositePodGroupName\":\"r\"");
    cpg(f->c, "m2",
        "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":1}},"
        "\"parentCompositePodGroupName\":\"r\"");
    char more[300];
    snprintf(more, sizeof(more), "\"parentCompositePodGroupName\":\"m1\",%s", rack);
    pg(f->c, "l1", "{\"gang\":{\"minCount\":2}}", more, "");
    snprintf(more, sizeof(more), "\"parentCompositePodGroupName\":\"m2\",%s", rack);
    pg(f->c, "l2", "{\"gang\":{\"minCount\":2}}", more, "");
    in_group(f->c, "l1-0", "l1");
    in_group(f->c, "l1-1", "l1");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0); /* m2 has no pods: the root is below quorum */
    assert_string_equal(kb.waiting[0].key, "ml/cpg:r");
    assert_non_null(strstr(kb.waiting[0].message, "tree to meet quorum: 1 of minGroupCount 2"));
    in_group(f->c, "l2-0", "l2");
    in_group(f->c, "l2-1", "l2");
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    assert_string_equal(kb.gangs[0].key, "ml/cpg:r");
    assert_int_equal(kb.gangs[0].gang.n_pods, 4);
    assert_int_equal(kb.gangs[0].gang.slice_size, 2);
    assert_string_equal(kb.snap.cluster->topo.levels[kb.gangs[0].gang.slice_level].name, "rack");
    /* a cycle (or more than 4 levels) is a layout gangsched does not schedule */
    cpg(f->c, "r",
        "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":2}},"
        "\"parentCompositePodGroupName\":\"m1\"");
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0);
    assert_string_equal(kb.waiting[0].reason, "InvalidSpec");
    assert_non_null(strstr(kb.waiting[0].message, "more than 4 levels"));
}

/* A running tree below quorum (a child lost a member) has a minimum above its live members: the
 * lifecycle tears it down whole; whole, its minimum is what its children need. A nested tree
 * waits, saying why. */
static void composite_tree_minimum_and_nesting(void **state)
{
    struct nfx *f = *state;
    cpg(f->c, "t", "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":2}}");
    pg(f->c, "t-a", "{\"gang\":{\"minCount\":2}}", "\"parentCompositePodGroupName\":\"t\"", "");
    pg(f->c, "t-b", "{\"gang\":{\"minCount\":1}}", "\"parentCompositePodGroupName\":\"t\"", "");
    pod(f->c, "a-0", "\"schedulingGroup\":{\"podGroupName\":\"t-a\"}", "gangsched", "n1", 0);
    pod(f->c, "a-1", "\"schedulingGroup\":{\"podGroupName\":\"t-a\"}", "gangsched", "n2", 0);
    pod(f->c, "b-0", "\"schedulingGroup\":{\"podGroupName\":\"t-b\"}", "gangsched", "n3", 0);
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_gangs, 1);
    assert_true(kb.gangs[0].running);
    assert_int_equal(kb.gangs[0].gang.n_pods, 3);
    assert_int_equal(kb.gangs[0].min_member, 3);      /* 2 + 1 */
    assert_int_equal(kb.gangs[0].gang.min_member, 3); /* one victim */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"a-1\"}}");
    assert_int_equal(kcache_pod_event(f->c, o, true), 0);
    cJSON_Delete(o);
    build(f, &kb);
    assert_int_equal(kb.n_gangs, 1);
    assert_int_equal(kb.gangs[0].gang.n_pods, 2);
    assert_true(kb.gangs[0].min_member > 2); /* below quorum: torn down */
    /* a basic CompositePodGroup with a constraint above it: not scheduled, said */
    cpg(f->c, "t",
        "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":1}},"
        "\"parentCompositePodGroupName\":\"top\"");
    cpg(f->c, "top",
        "\"schedulingPolicy\":{\"basic\":{}},\"schedulingConstraints\":{"
        "\"topology\":[{\"key\":\"network.topology.gangsched.io/rack\"}]}");
    in_group(f->c, "a-2", "t-a");
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0);
    assert_string_equal(kb.waiting[0].key, "ml/cpg:t");
    assert_string_equal(kb.waiting[0].reason, "InvalidSpec");
    assert_non_null(strstr(kb.waiting[0].message, "a basic CompositePodGroup with a topology"));
    /* a parent not seen (yet): the tree waits for it */
    pg(f->c, "o-a", "{\"gang\":{\"minCount\":1}}", "\"parentCompositePodGroupName\":\"nope\"", "");
    in_group(f->c, "o-0", "o-a");
    build(f, &kb);
    bool seen = false;
    for (uint32_t w = 0; w < kb.n_waiting; w++)
        if (strcmp(kb.waiting[w].key, "ml/cpg:nope") == 0) {
            seen = true;
            assert_string_equal(kb.waiting[w].reason, "PodGroupNotFound");
            assert_non_null(strstr(kb.waiting[w].message, "compositepodgroup ml/nope as parent"));
        }
    assert_true(seen);
}

/* A running tree that keeps its quorum while a group in it runs below its own minimum (a
 * PodGroup below minCount, a CompositePodGroup below minGroupCount whole children): those
 * groups' live pods carry why (the lifecycle deletes them, the tree goes on), the others none,
 * and the short group's pending pod is not offered (it starts again whole). */
static void composite_tree_short_groups(void **state)
{
    struct nfx *f = *state;
    cpg(f->c, "t", "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":1}}");
    cpg(f->c, "m",
        "\"schedulingPolicy\":{\"gang\":{\"minGroupCount\":2}},"
        "\"parentCompositePodGroupName\":\"t\"");
    const char *under_t = "\"parentCompositePodGroupName\":\"t\"";
    const char *under_m = "\"parentCompositePodGroupName\":\"m\"";
    pg(f->c, "t-a", "{\"gang\":{\"minCount\":2}}", under_t, "");
    pg(f->c, "t-b", "{\"gang\":{\"minCount\":2}}", under_t, "");
    pg(f->c, "l1", "{\"gang\":{\"minCount\":1}}", under_m, "");
    pg(f->c, "l2", "{\"gang\":{\"minCount\":1}}", under_m, "");
    pod(f->c, "a-0", "\"schedulingGroup\":{\"podGroupName\":\"t-a\"}", "gangsched", "n1", 0);
    pod(f->c, "a-1", "\"schedulingGroup\":{\"podGroupName\":\"t-a\"}", "gangsched", "n2", 0);
    pod(f->c, "b-0", "\"schedulingGroup\":{\"podGroupName\":\"t-b\"}", "gangsched", "n3", 0);
    pod(f->c, "l1-0", "\"schedulingGroup\":{\"podGroupName\":\"l1\"}", "gangsched", "n4", 0);
    in_group(f->c, "b-1", "t-b");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0); /* t-b's b-1 waits for t-b to start again whole */
    const struct kgang *g = &kb.gangs[kb.n_gangs - 1];
    assert_true(g->running);
    assert_int_equal(g->gang.n_pods, 4);
    assert_int_equal(g->min_member, 2); /* t-a's: the tree keeps its quorum */
    assert_non_null(g->part_short);
    for (uint32_t i = 0; i < g->gang.n_pods; i++) {
        const char *name = g->members[i]->name, *why = g->part_short[i];
        if (strcmp(name, "b-0") == 0)
            assert_string_equal(why, "podgroup ml/t-b: 1 of minCount 2 pods live");
        else if (strcmp(name, "l1-0") == 0)
            assert_string_equal(why,
                                "compositepodgroup ml/m: 1 of minGroupCount 2 child groups run "
                                "whole");
        else
            assert_null(why);
    }
    /* t-b whole again and m's second child running: nothing is short */
    pod(f->c, "b-1", "\"schedulingGroup\":{\"podGroupName\":\"t-b\"}", "gangsched", "n5", 0);
    pod(f->c, "l2-0", "\"schedulingGroup\":{\"podGroupName\":\"l2\"}", "gangsched", "n6", 0);
    build(f, &kb);
    assert_null(kb.gangs[kb.n_gangs - 1].part_short);
}

/* A running group with more members than minCount loses members alone under disruptionMode
 * single (the default), never under all: the whole group is one victim. */
static void disruption_mode_all_is_one_victim(void **state)
{
    struct nfx *f = *state;
    const char *sched = "{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\","
                        "\"status\":\"True\",\"reason\":\"Scheduled\"}]}";
    const char *link = "\"schedulingGroup\":{\"podGroupName\":\"g\"}";
    pg(f->c, "g", "{\"gang\":{\"minCount\":2}}", "", sched);
    pod(f->c, "g-0", link, "gangsched", "n1", 0);
    pod(f->c, "g-1", link, "gangsched", "n1", 0);
    pod(f->c, "g-2", link, "gangsched", "n2", 0);
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_gangs, 1);
    assert_true(kb.gangs[0].running);
    assert_int_equal(kb.gangs[0].gang.n_pods, 3);
    assert_int_equal(kb.gangs[0].gang.min_member, 2); /* single: one member may go alone */
    pg(f->c, "g", "{\"gang\":{\"minCount\":2}}", "\"disruptionMode\":{\"all\":{}}", sched);
    build(f, &kb);
    assert_int_equal(kb.gangs[0].gang.min_member, 3); /* all: rigid */
    pg(f->c, "g", "{\"gang\":{\"minCount\":2}}", "\"disruptionMode\":{\"single\":{}}", sched);
    build(f, &kb);
    assert_int_equal(kb.gangs[0].gang.min_member, 2);
}

static void basic_is_no_gang_and_foreign_member(void **state)
{
    struct nfx *f = *state;
    pg(f->c, "b", "{\"basic\":{}}", "", "");
    in_group(f->c, "b-0", "b");
    in_group(f->c, "b-1", "b");
    pg(f->c, "m", "{\"gang\":{\"minCount\":2}}", "", "");
    in_group(f->c, "m-0", "m");
    pod(f->c, "m-1", "\"schedulingGroup\":{\"podGroupName\":\"m\"}", "default-scheduler", "", 0);
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 2); /* b-0 and b-1 alone */
    for (uint32_t g = 0; g < kb.n_pending; g++) {
        assert_int_equal(kb.gangs[g].gang.n_pods, 1);
        assert_null(kb.gangs[g].pg);
    }
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "SchedulerError");
    assert_non_null(strstr(kb.waiting[0].message, "m-1"));
}

static void workload_replicas_are_gangs(void **state)
{
    struct nfx *f = *state;
    fx_event(f->c, 2, KPG_WORKLOAD_V1ALPHA1,
             "{\"apiVersion\":\"scheduling.k8s.io/v1alpha1\",\"kind\":\"Workload\",\"metadata\":{"
             "\"namespace\":\"ml\",\"name\":\"train\",\"uid\":\"w1\"},\"spec\":{\"podGroups\":["
             "{\"name\":\"workers\",\"policy\":{\"gang\":{\"minCount\":2}}},"
             "{\"name\":\"loose\",\"policy\":{\"basic\":{}}}]}}");
    const char *r0 = "\"workloadRef\":{\"name\":\"train\",\"podGroup\":\"workers\","
                     "\"podGroupReplicaKey\":\"0\"}";
    const char *r1 = "\"workloadRef\":{\"name\":\"train\",\"podGroup\":\"workers\","
                     "\"podGroupReplicaKey\":\"1\"}";
    pod(f->c, "a-0", r0, "gangsched", "", 0);
    pod(f->c, "a-1", r0, "gangsched", "", 0);
    pod(f->c, "b-0", r1, "gangsched", "", 0);
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    assert_string_equal(kb.gangs[0].key, "ml/train:workers:0");
    assert_int_equal(kb.gangs[0].gang.n_pods, 2);
    assert_string_equal(kb.gangs[0].pg->name, "train");
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].key, "ml/train:workers:1");
    /* the Workload deleted: its pods wait for it */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"train\"}}");
    assert_int_equal(kcache_pg_event(f->c, o, KPG_WORKLOAD_V1ALPHA1, true), 0);
    cJSON_Delete(o);
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0);
    assert_int_equal(kb.n_waiting, 2);
    assert_string_equal(kb.waiting[0].reason, "PodGroupNotFound");
}

static void condition_patches(void **state)
{
    (void)state;
    struct kpg *g = NULL;
    struct sched_errbuf eb = {{0}};
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"p\",\"generation\":7},\"spec\":{"
                           "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}}},\"status\":{"
                           "\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\",\"status\":"
                           "\"False\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}");
    assert_int_equal(knative_pg_decode(o, KPG_NATIVE_V1BETA1, &g, &eb), 0);
    cJSON *b =
        knative_condition_patch(g, "PodGroupInitiallyScheduled", false, "Unschedulable", "x", 0);
    const cJSON *c =
        cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "status"), "conditions"), 0);
    assert_string_equal(cJSON_GetObjectItem(c, "status")->valuestring, "False");
    assert_string_equal(cJSON_GetObjectItem(c, "lastTransitionTime")->valuestring,
                        "2026-01-01T00:00:00Z"); /* unchanged status keeps its time */
    assert_int_equal(cJSON_GetObjectItem(c, "observedGeneration")->valueint, 7);
    cJSON_Delete(b);
    kobj_pg_free(g);
    cJSON_Delete(o);
    /* True is terminal: no False after it */
    o = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingPolicy\":{\"basic\":{}}},"
                    "\"status\":{\"conditions\":[{\"type\":\"PodGroupInitiallyScheduled\","
                    "\"status\":\"True\"}]}}");
    assert_int_equal(knative_pg_decode(o, KPG_NATIVE_V1BETA1, &g, &eb), 0);
    assert_true(g->initially_scheduled && g->basic);
    assert_null(
        knative_condition_patch(g, "PodGroupInitiallyScheduled", false, "Unschedulable", "x", 0));
    b = knative_condition_patch(g, "DisruptionTarget", true, "PreemptionByScheduler", "y", 0);
    assert_non_null(b);
    cJSON_Delete(b);
    kobj_pg_free(g);
    cJSON_Delete(o);
}

/* KEP-5729: a PodGroup's spec.resourceClaims decoded (at most 4, each a name and exactly one
 * of the two references); a pod's entries equal to one of them are the PodGroup's claims,
 * reserved under its uid (kdra_who); one that differs in name or reference is the pod's own;
 * another PodGroup (NULL) clears them. */
static void podgroup_claims(void **state)
{
    (void)state;
    struct kpg *g = NULL;
    struct sched_errbuf eb = {{0}};
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"pg\",\"uid\":\"pg-u\"},\"spec\":{"
                           "\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},\"resourceClaims\":["
                           "{\"name\":\"gpus\",\"resourceClaimTemplateName\":\"four\"},"
                           "{\"name\":\"net\",\"resourceClaimName\":\"fabric\"}]}}");
    assert_int_equal(knative_pg_decode(o, KPG_NATIVE_V1BETA1, &g, &eb), 0);
    cJSON_Delete(o);
    assert_int_equal(g->n_claims, 2);
    assert_string_equal(g->claims[0], "gpus template four");
    assert_string_equal(g->claims[1], "net claim fabric");
    struct kpod *p = NULL;
    o = cJSON_Parse("{\"metadata\":{\"name\":\"w\",\"namespace\":\"ml\",\"uid\":\"pod-u\"},"
                    "\"spec\":{\"schedulingGroup\":{\"podGroupName\":\"pg\"},\"resourceClaims\":["
                    "{\"name\":\"gpus\",\"resourceClaimTemplateName\":\"four\"},"
                    "{\"name\":\"net\",\"resourceClaimName\":\"other\"},"
                    "{\"name\":\"own\",\"resourceClaimName\":\"fabric\"}],"
                    "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"resourceClaimStatuses\":["
                    "{\"name\":\"gpus\",\"resourceClaimName\":\"pg-gpus-abcde\"}]}}");
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), 0);
    cJSON_Delete(o);
    assert_int_equal(p->n_claims, 3);
    assert_string_equal(p->claims[0], "ml/pg-gpus-abcde");
    assert_int_equal(kdra_note_group(p, g), 0);
    assert_int_equal(p->claims_group, 1u); /* only the first matches exactly */
    assert_string_equal(kdra_who(p, 0), "pg-u");
    assert_string_equal(kdra_who(p, 1), "pod-u"); /* another claim under the PodGroup's name */
    assert_string_equal(kdra_who(p, 2), "pod-u"); /* the PodGroup's claim under another name */
    assert_int_equal(kdra_note_group(p, NULL), 0);
    assert_int_equal(p->claims_group, 0u);
    assert_null(p->group_uid);
    assert_string_equal(kdra_who(p, 0), "pod-u");
    kobj_pod_free(p);
    kobj_pg_free(g);
    const char *bad[] = {
        "[{\"name\":\"a\",\"resourceClaimName\":\"x\",\"resourceClaimTemplateName\":\"y\"}]",
        "[{\"resourceClaimName\":\"x\"}]",
        "[{\"name\":\"a\",\"resourceClaimName\":\"x\"},{\"name\":\"b\",\"resourceClaimName\":"
        "\"x\"},{\"name\":\"c\",\"resourceClaimName\":\"x\"},{\"name\":\"d\","
        "\"resourceClaimName\":\"x\"},{\"name\":\"e\",\"resourceClaimName\":\"x\"}]"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[600];
        snprintf(text, sizeof(text),
                 "{\"metadata\":{\"name\":\"pg\"},\"spec\":{\"schedulingPolicy\":{\"basic\":{}},"
                 "\"resourceClaims\":%s}}",
                 bad[i]);
        o = cJSON_Parse(text);
        assert_int_equal(knative_pg_decode(o, KPG_NATIVE_V1BETA1, &g, &eb), SCHED_EINVAL);
        assert_non_null(strstr(eb.msg, "podgroup default/pg: spec.resourceClaims"));
        cJSON_Delete(o);
    }
}

static void malformed_objects_name_the_field(void **state)
{
    (void)state;
    struct kpg *g = NULL;
    struct sched_errbuf eb = {{0}};
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingPolicy\":{"
                           "\"basic\":{},\"gang\":{\"minCount\":2}}}}");
    assert_int_equal(knative_pg_decode(o, KPG_NATIVE_V1BETA1, &g, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "spec.schedulingPolicy: exactly one"));
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingPolicy\":{"
                    "\"gang\":{\"minCount\":0}}}}");
    assert_int_equal(knative_pg_decode(o, KPG_NATIVE_V1BETA1, &g, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "minCount"));
    cJSON_Delete(o);
    struct kpod *p = NULL;
    o = cJSON_Parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"workloadRef\":{\"name\":\"w\"},"
                    "\"containers\":[{\"name\":\"c\"}]}}");
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "spec.workloadRef"));
    cJSON_Delete(o);
    struct kpg **v = NULL;
    uint32_t n = 0;
    o = cJSON_Parse("{\"metadata\":{\"name\":\"w\"},\"spec\":{\"podGroups\":[]}}");
    assert_int_equal(knative_workload_decode(o, &v, &n, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "spec.podGroups"));
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingPolicy\":{"
                    "\"basic\":{}},\"preemptionPolicy\":\"Sometimes\"}}");
    assert_int_equal(knative_pg_decode(o, KPG_NATIVE_V1BETA1, &g, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "podgroup default/p: spec.preemptionPolicy: \"Sometimes\""));
    cJSON_Delete(o);
    /* CompositePodGroups: the error names the kind, the object and the field */
    static const char *const bad_cpg[][2] = {
        {"{\"gang\":{\"minGroupCount\":0}}", "compositepodgroup default/c: "
                                             "spec.schedulingPolicy.gang.minGroupCount"},
        {"{\"gang\":{\"minCount\":2}}", "spec.schedulingPolicy.gang.minGroupCount"},
        {"{\"gang\":{\"minGroupCount\":1.5}}", "minGroupCount: not an integer"},
        {"{}", "spec.schedulingPolicy: exactly one"},
    };
    for (size_t i = 0; i < sizeof(bad_cpg) / sizeof(bad_cpg[0]); i++) {
        char buf[300];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"schedulingPolicy\":%s}}",
                 bad_cpg[i][0]);
        o = cJSON_Parse(buf);
        assert_int_equal(knative_pg_decode(o, KPG_CPG_V1ALPHA3, &g, &eb), SCHED_EINVAL);
        assert_non_null(strstr(eb.msg, bad_cpg[i][1]));
        cJSON_Delete(o);
    }
    o = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingPolicy\":{"
                    "\"basic\":{}},\"parentCompositePodGroupName\":\"a/b\"}}");
    assert_int_equal(knative_pg_decode(o, KPG_NATIVE_V1BETA1, &g, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "podgroup default/p: spec.parentCompositePodGroupName"));
    cJSON_Delete(o);
    o = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"schedulingPolicy\":{"
                    "\"basic\":{}},\"parentCompositePodGroupName\":7}}");
    assert_int_equal(knative_pg_decode(o, KPG_NATIVE_V1BETA1, &g, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "spec.parentCompositePodGroupName: not a name"));
    cJSON_Delete(o);
}

/* A DRA-only node (8 devices) with another scheduler's pod whose claim holds gpu-6 and gpu-7:
 * those indices are used, not the lowest free ones; a pending pod of ours with a template claim
 * asks 4 GPUs and waits until its claim exists. */
/* A DRA-only node n9 with 8 devices gpu-0..gpu-7 in pool n9. */
/* DeviceClass `name` mapping nvidia.com/gpu (KEP-5004) with one CEL selector. */
static void class_event(struct kcache *c, const char *name, const char *cel)
{
    char buf[1000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"extendedResourceName\":"
             "\"nvidia.com/gpu\",\"selectors\":[{\"cel\":{\"expression\":\"%s\"}}]}}",
             name, cel);
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_int_equal(kcache_class_event(c, o, false), 0);
    cJSON_Delete(o);
}

/* DRA-only node `name` with 8 GPU devices, each with attributes `attrs` ("" none). */
static void dra_node(struct kcache *c, const char *name, const char *attrs)
{
    char buf[6000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s-gpu\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
             "\"nodeName\":\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":1,"
             "\"resourceSliceCount\":1},\"devices\":[",
             name, name, name);
    for (int i = 0; i < 8; i++)
        snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s{\"name\":\"gpu-%d\"%s%s%s}",
                 i ? "," : "", i, *attrs ? ",\"attributes\":{" : "", attrs, *attrs ? "}" : "");
    strcat(buf, "]}}");
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_int_equal(kcache_slice_event(c, o, false), 0);
    cJSON_Delete(o);
    snprintf(buf, sizeof(buf),
             "{\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},\"status\":{\"allocatable\":{"
             "\"cpu\":\"96\",\"memory\":\"1Ti\",\"pods\":\"110\"},\"conditions\":[{\"type\":"
             "\"Ready\",\"status\":\"True\"}]}}",
             name);
    fx_event(c, 0, 0, buf);
}

static void dra_node_n9(struct kcache *c)
{
    dra_node(c, "n9", "");
}

static void claims_hold_their_devices(void **state)
{
    struct nfx *f = *state;
    dra_node_n9(f->c);
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"theirs\"},\"spec\":{"
                           "\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":{"
                           "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}}]}},\"status\":{"
                           "\"allocation\":{\"devices\":{\"results\":[{\"request\":\"g\","
                           "\"driver\":\"gpu.nvidia.com\",\"pool\":\"n9\",\"device\":\"gpu-6\"},"
                           "{\"request\":\"g\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"n9\","
                           "\"device\":\"gpu-7\"}]}},\"reservedFor\":[{\"resource\":\"pods\","
                           "\"name\":\"other\",\"uid\":\"u-other\"}]}}");
    assert_int_equal(kcache_claim_event(f->c, o, false), 0);
    cJSON_Delete(o);
    fx_event(f->c, 1, 0,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"other\",\"uid\":\"u-other\"},"
             "\"spec\":{\"schedulerName\":\"default-scheduler\",\"nodeName\":\"n9\","
             "\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"theirs\"}],"
             "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\"}}");
    fx_event(f->c, 1, 0,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"mine\",\"uid\":\"u-mine\"},"
             "\"spec\":{\"schedulerName\":\"gangsched\",\"resourceClaims\":[{\"name\":\"g\","
             "\"resourceClaimTemplateName\":\"four\"}],\"containers\":[{\"name\":\"c\"}]},"
             "\"status\":{\"phase\":\"Pending\"}}");
    struct kcache_build kb;
    build(f, &kb);
    int ix = kcache_node_index(f->c, "n9");
    assert_true(ix >= 0);
    assert_int_equal(kb.snap.cluster->nodes[ix].n_gpus, 8);
    assert_int_equal(kb.snap.state[ix].gpu_used, 0xc0); /* gpu-6 and gpu-7 */
    assert_int_equal(kb.n_pending, 0);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "WaitingForResourceClaim");
    assert_non_null(strstr(kb.waiting[0].message, "template four"));
}

/* A pod asking GPUs in its containers' limits (an extended resource) goes only to nodes whose
 * GPUs a device plugin counts: n1..n4, never the DRA-only n9 (kubelet would refuse it there);
 * without DRA nodes it gets no node filter at all. */
static void container_gpus_not_on_dra_nodes(void **state)
{
    struct nfx *f = *state;
    pod(f->c, "solo", "", "gangsched", "", 0); /* 8 nvidia.com/gpu in its limits */
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    assert_int_equal(kb.gangs[0].gang.sets[0].n_affinity, 0);
    dra_node_n9(f->c);
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    const struct podset *ps = &kb.gangs[0].gang.sets[0];
    assert_int_equal(ps->n_affinity, 1);
    const struct sel_req *r = &ps->affinity[0].reqs[ps->affinity[0].n_reqs - 1];
    assert_string_equal(r->key, "metadata.name");
    bool n1 = false, n9 = false;
    for (uint32_t i = 0; i < r->n_values; i++) {
        n1 |= strcmp(r->values[i], "n1") == 0;
        n9 |= strcmp(r->values[i], "n9") == 0;
    }
    assert_true(n1);
    assert_false(n9);
    /* KEP-5004: a DeviceClass mapping nvidia.com/gpu that accepts every device: no node is
     * kept off; one accepting only H100s: the nodes whose every device is one, and n1 */
    class_event(f->c, "gpu.nvidia.com", "device.driver == 'gpu.nvidia.com'");
    build(f, &kb);
    assert_int_equal(kb.gangs[0].gang.sets[0].n_affinity, 0);
    dra_node(f->c, "n8", "\"productName\":{\"string\":\"H100\"}");
    class_event(f->c, "gpu.nvidia.com",
                "device.attributes['gpu.nvidia.com'].productName == 'H100'");
    build(f, &kb);
    ps = &kb.gangs[0].gang.sets[0];
    assert_int_equal(ps->n_affinity, 1);
    r = &ps->affinity[0].reqs[ps->affinity[0].n_reqs - 1];
    uint32_t seen = 0;
    for (uint32_t i = 0; i < r->n_values; i++)
        seen |= (strcmp(r->values[i], "n1") == 0) | (strcmp(r->values[i], "n8") == 0) << 1 |
                (strcmp(r->values[i], "n9") == 0) << 2;
    assert_int_equal(seen, 3);
}

/* A ResourceClaim "ml/<name>" of GPUs allocated on n9: devices [from, to]; sel: with our
 * nodeSelector (else only the pool names the node); meta: more metadata members, "" none;
 * rf: status.reservedFor members, "" none; alloc false: not allocated (deallocated). */
static void n9_claim(struct kcache *c, const char *name, int from, int to, bool sel,
                     const char *meta, const char *rf, bool alloc)
{
    char res[1000] = "", buf[3000];
    for (int g = from; g <= to; g++)
        snprintf(res + strlen(res), sizeof(res) - strlen(res),
                 "%s{\"request\":\"g\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"n9\","
                 "\"device\":\"gpu-%d\"}",
                 g > from ? "," : "", g);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"c-%s\"%s},"
             "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":{"
             "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":%d}}]}},\"status\":{"
             "\"reservedFor\":[%s]%s%s%s%s}}",
             name, name, meta, to - from + 1, rf,
             alloc ? ",\"allocation\":{\"devices\":{\"results\":[" : "", alloc ? res : "",
             alloc ? "]}" : "",
             !alloc ? ""
             : sel  ? ",\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
                      "\"metadata.name\",\"operator\":\"In\",\"values\":[\"n9\"]}]}]}}"
                    : "}");
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_int_equal(kcache_claim_event(c, o, false), 0);
    cJSON_Delete(o);
}

/* n9's GPUs in use at a build: *mask, and the count returned. */
static int64_t n9_used(struct nfx *f, uint32_t *mask)
{
    struct kcache_build kb;
    build(f, &kb);
    int ix = kcache_node_index(f->c, "n9");
    assert_true(ix >= 0);
    *mask = kb.snap.state[ix].gpu_used;
    return kb.snap.state[ix].used.v[RES_GPU];
}

/* Another scheduler's pod with claims on n9 (CPU cpu cores, its claim "c-<name>" allocated gpu,
 * reserved for it); NULL cpu: the pod is deleted. */
static void n9_claim_pod(struct kcache *c, const char *name, const char *cpu, int gpu)
{
    char buf[1200], rf[200], claim[40];
    snprintf(rf, sizeof(rf), "{\"resource\":\"pods\",\"name\":\"%s\",\"uid\":\"u-%s\"}", name,
             name);
    snprintf(claim, sizeof(claim), "c-%s", name);
    n9_claim(c, claim, gpu, gpu, true, "", rf, cpu != NULL);
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\"},"
             "\"spec\":{\"schedulerName\":\"default-scheduler\",\"nodeName\":\"n9\","
             "\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"%s\"}],"
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]},"
             "\"status\":{\"phase\":\"Running\"}}",
             name, name, claim, cpu ? cpu : "0");
    cJSON *o = cJSON_Parse(buf);
    assert_non_null(o);
    assert_int_equal(kcache_pod_event(c, o, cpu == NULL), 0);
    cJSON_Delete(o);
}

/* n9's CPU in use at a build (millicores). */
static int64_t n9_cpu(struct nfx *f)
{
    struct kcache_build kb;
    build(f, &kb);
    int ix = kcache_node_index(f->c, "n9");
    assert_true(ix >= 0);
    return kb.snap.state[ix].used.v[RES_CPU];
}

/* A pod with claims is counted at each build (its claims decide its GPUs, snapshot.c), and a
 * build skips that walk when the cache holds no such pod: its count follows them as they come,
 * are updated (the new object replaces the old), and go, whatever the order. */
static void claim_pods_counted_as_they_come_and_go(void **state)
{
    struct nfx *f = *state;
    dra_node_n9(f->c);
    assert_int_equal(n9_cpu(f), 0);
    n9_claim_pod(f->c, "a", "2", 0);
    assert_int_equal(n9_cpu(f), 2000);
    n9_claim_pod(f->c, "b", "3", 1);
    assert_int_equal(n9_cpu(f), 5000);
    n9_claim_pod(f->c, "a", "2", 0); /* updated: still one pod */
    n9_claim_pod(f->c, "a", "2", 0);
    assert_int_equal(n9_cpu(f), 5000);
    n9_claim_pod(f->c, "b", NULL, 1);
    assert_int_equal(n9_cpu(f), 2000);
    n9_claim_pod(f->c, "b", NULL, 1); /* a second delete of it changes nothing */
    assert_int_equal(n9_cpu(f), 2000);
    n9_claim_pod(f->c, "a", "2", 0);
    assert_int_equal(n9_cpu(f), 2000);
    n9_claim_pod(f->c, "a", NULL, 0);
    assert_int_equal(n9_cpu(f), 0);
    n9_claim_pod(f->c, "b", "3", 1);
    assert_int_equal(n9_cpu(f), 3000);
}

/* Every allocated claim's devices are in use on its node, whoever reserves it, exactly once
 * (kube-scheduler's DynamicResources: every device of any claim's status.allocation):
 * reserved for nobody and named by no pod (gpu-0, gpu-1), reserved for a pod not seen (gpu-2,
 * allocated with a nodeSelector that is not ours: the pool names the node), being deleted
 * (gpu-3), reserved for another scheduler's pod on n9 (gpu-6, gpu-7: counted through the pod,
 * not twice); free again once deleted or deallocated; a claim reserved for a pending pod of ours
 * alone is left to that pod (its demand asks its GPUs); an idle claim a pending pod of ours names
 * still counts: the pod adopts it, asking none of its devices; bound there, it holds none of them
 * (no gpu-ids of ours): they count once, on their own; a bound pod of ours that adopted another
 * scheduler's pod's claim asks none of it either, whatever the order of their keys. */
static void allocated_claims_hold_their_devices(void **state)
{
    struct nfx *f = *state;
    dra_node_n9(f->c);
    uint32_t m;
    assert_int_equal(n9_used(f, &m), 0);
    n9_claim(f->c, "idle", 0, 1, true, "", "", true);
    assert_int_equal(n9_used(f, &m), 2);
    assert_int_equal(m, 0x03);
    n9_claim(f->c, "ghost", 2, 2, false, "",
             "{\"resource\":\"pods\",\"name\":\"unseen\",\"uid\":\"u-unseen\"}", true);
    n9_claim(f->c, "dying", 3, 3, true,
             ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"finalizers\":[\"x.io/keep\"]", "",
             true);
    n9_claim(f->c, "theirs", 6, 7, true, "",
             "{\"resource\":\"pods\",\"name\":\"other\",\"uid\":\"u-other\"}", true);
    assert_int_equal(n9_used(f, &m), 6);
    assert_int_equal(m, 0xcf);
    fx_event(f->c, 1, 0,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"other\",\"uid\":\"u-other\"},"
             "\"spec\":{\"schedulerName\":\"default-scheduler\",\"nodeName\":\"n9\","
             "\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"theirs\"}],"
             "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\"}}");
    assert_int_equal(n9_used(f, &m), 6); /* the pod holds gpu-6 and gpu-7: once */
    assert_int_equal(m, 0xcf);
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"idle\"}}");
    assert_int_equal(kcache_claim_event(f->c, o, true), 0);
    cJSON_Delete(o);
    n9_claim(f->c, "dying", 3, 3, true,
             ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"finalizers\":[\"x.io/keep\"]", "",
             false);
    assert_int_equal(n9_used(f, &m), 3);
    assert_int_equal(m, 0xc4);
    /* reserved for a pod not seen yet: counted; once the pod shows up pending, ours, it is
     * that pod's (an earlier attempt's claim: its demand asks the GPUs, its bind writes it) */
    n9_claim(f->c, "stale", 0, 0, true, "",
             "{\"resource\":\"pods\",\"name\":\"retry\",\"uid\":\"u-retry\"}", true);
    assert_int_equal(n9_used(f, &m), 4);
    assert_int_equal(m, 0xc5);
    fx_event(f->c, 1, 0,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"retry\",\"uid\":\"u-retry\"},"
             "\"spec\":{\"schedulerName\":\"gangsched\",\"resourceClaims\":[{\"name\":\"g\","
             "\"resourceClaimName\":\"stale\"}],\"containers\":[{\"name\":\"c\"}]},"
             "\"status\":{\"phase\":\"Pending\"}}");
    assert_int_equal(n9_used(f, &m), 3);
    assert_int_equal(m, 0xc4);
    n9_claim(f->c, "left", 4, 5, true, "", "", true);
    assert_int_equal(n9_used(f, &m), 5);
    assert_int_equal(m, 0xf4);
    fx_event(f->c, 1, 0,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"mine\",\"uid\":\"u-mine\"},"
             "\"spec\":{\"schedulerName\":\"gangsched\",\"resourceClaims\":[{\"name\":\"g\","
             "\"resourceClaimName\":\"left\"}],\"containers\":[{\"name\":\"c\"}]},"
             "\"status\":{\"phase\":\"Pending\"}}");
    assert_int_equal(n9_used(f, &m), 5); /* still held: nobody else gets them */
    assert_int_equal(m, 0xf4);
    const struct kpod *mine = kcache_pod(f->c, "ml/mine");
    assert_int_equal(mine->req.v[RES_GPU], 0); /* it adopts the claim: none of its devices */
    assert_int_equal(mine->claims_adopt, 1u);
    n9_claim(f->c, "left", 4, 5, true, "",
             "{\"resource\":\"pods\",\"name\":\"mine\",\"uid\":\"u-mine\"}", true);
    fx_event(f->c, 1, 0,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"mine\",\"uid\":\"u-mine\"},"
             "\"spec\":{\"schedulerName\":\"gangsched\",\"nodeName\":\"n9\",\"resourceClaims\":[{"
             "\"name\":\"g\",\"resourceClaimName\":\"left\"}],\"containers\":[{\"name\":\"c\"}]},"
             "\"status\":{\"phase\":\"Running\"}}");
    assert_int_equal(n9_used(f, &m), 5); /* bound: the claim's devices count once */
    assert_int_equal(m, 0xf4);
    assert_int_equal(kcache_pod(f->c, "ml/mine")->req.v[RES_GPU], 0); /* never charged */
    /* "adopter" sorts before "other", whose claim "theirs" (gpu-6, gpu-7) it shares */
    n9_claim(f->c, "theirs", 6, 7, true, "",
             "{\"resource\":\"pods\",\"name\":\"other\",\"uid\":\"u-other\"},{\"resource\":"
             "\"pods\",\"name\":\"adopter\",\"uid\":\"u-adopter\"}",
             true);
    fx_event(f->c, 1, 0,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"adopter\",\"uid\":\"u-adopter\"},"
             "\"spec\":{\"schedulerName\":\"gangsched\",\"nodeName\":\"n9\",\"resourceClaims\":[{"
             "\"name\":\"g\",\"resourceClaimName\":\"theirs\"}],\"containers\":[{\"name\":\"c\"}]},"
             "\"status\":{\"phase\":\"Running\"}}");
    assert_int_equal(n9_used(f, &m), 5);
    assert_int_equal(m, 0xf4);
    assert_int_equal(kcache_pod(f->c, "ml/adopter")->req.v[RES_GPU], 0);
}

/* A pending pod of ours naming claim "ml/<claim>" (uid u-<name>). */
static void claim_user(struct kcache *c, const char *name, const char *claim)
{
    char buf[600];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\"},"
             "\"spec\":{\"schedulerName\":\"gangsched\",\"resourceClaims\":[{\"name\":\"g\","
             "\"resourceClaimName\":\"%s\"}],\"containers\":[{\"name\":\"c\"}]},"
             "\"status\":{\"phase\":\"Pending\"}}",
             name, name, claim);
    fx_event(c, 1, 0, buf);
}

/* The message of waiting gang `key` in kb, or NULL when it is not waiting. */
static const char *waiting_why(const struct kcache_build *kb, const char *key)
{
    for (uint32_t i = 0; i < kb->n_waiting; i++)
        if (strcmp(kb->waiting[i].key, key) == 0)
            return kb->waiting[i].message;
    return NULL;
}

/* Adopting an allocated claim is refused, naming the claim, when it is being deleted, lists 256
 * pods already (upstream's ResourceClaimReservedForMaxSize), or its node cannot be told (no
 * nodeSelector of one metadata.name, its pool not a node); an idle claim on n9 is adopted (the
 * pod is offered, asking no GPU). */
static void adoption_refusals(void **state)
{
    struct nfx *f = *state;
    dra_node_n9(f->c);
    n9_claim(f->c, "dying", 0, 0, true,
             ",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"finalizers\":[\"x.io/keep\"]", "",
             true);
    char *rf = malloc(256 * 64);
    assert_non_null(rf);
    rf[0] = '\0';
    for (int i = 0; i < 256; i++)
        snprintf(rf + strlen(rf), 64, "%s{\"resource\":\"pods\",\"name\":\"p%d\",\"uid\":\"x%d\"}",
                 i ? "," : "", i, i);
    char *buf = malloc(256 * 64 + 1000);
    assert_non_null(buf);
    snprintf(buf, 256 * 64 + 1000,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"crowd\"},\"spec\":{\"devices\":{"
             "\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\","
             "\"count\":1}}]}},\"status\":{\"reservedFor\":[%s],\"allocation\":{\"devices\":{"
             "\"results\":[{\"request\":\"g\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"n9\","
             "\"device\":\"gpu-1\"}]}}}}",
             rf);
    cJSON *o = cJSON_Parse(buf);
    assert_int_equal(kcache_claim_event(f->c, o, false), 0);
    cJSON_Delete(o);
    free(rf);
    free(buf);
    o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"nowhere\"},\"spec\":{"
                    "\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":{"
                    "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":1}}]}},\"status\":{"
                    "\"allocation\":{\"devices\":{\"results\":[{\"request\":\"g\",\"driver\":"
                    "\"gpu.nvidia.com\",\"pool\":\"elsewhere\",\"device\":\"gpu-2\"}]}}}}");
    assert_int_equal(kcache_claim_event(f->c, o, false), 0);
    cJSON_Delete(o);
    n9_claim(f->c, "fine", 3, 3, true, "", "", true);
    claim_user(f->c, "a", "dying");
    claim_user(f->c, "b", "crowd");
    claim_user(f->c, "c", "nowhere");
    claim_user(f->c, "d", "fine");
    struct kcache_build kb;
    build(f, &kb);
    const char *why = waiting_why(&kb, "ml/a");
    assert_non_null(why);
    assert_non_null(strstr(why, "resourceclaim ml/dying is being deleted"));
    assert_non_null(why = waiting_why(&kb, "ml/b"));
    assert_non_null(strstr(why, "resourceclaim ml/crowd: 257 pods use it, at most 256"));
    assert_non_null(why = waiting_why(&kb, "ml/c"));
    assert_non_null(strstr(why, "resourceclaim ml/nowhere is allocated on a node gangsched "
                                "cannot tell"));
    assert_null(waiting_why(&kb, "ml/d"));
    assert_int_equal(kb.n_pending, 1);
    assert_int_equal(kcache_pod(f->c, "ml/d")->req.v[RES_GPU], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(gang_min_count_topology_priority, setup, teardown),
        cmocka_unit_test_setup_teardown(extras_one_at_a_time_and_raised_min, setup, teardown),
        cmocka_unit_test_setup_teardown(basic_is_no_gang_and_foreign_member, setup, teardown),
        cmocka_unit_test_setup_teardown(disruption_mode_all_is_one_victim, setup, teardown),
        cmocka_unit_test_setup_teardown(lost_members_are_not_a_raised_min, setup, teardown),
        cmocka_unit_test_setup_teardown(preemption_policy_never, setup, teardown),
        cmocka_unit_test_setup_teardown(composite_tree_is_one_gang, setup, teardown),
        cmocka_unit_test_setup_teardown(composite_tree_minimum_and_nesting, setup, teardown),
        cmocka_unit_test_setup_teardown(composite_tree_short_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(composite_tree_of_two_levels, setup, teardown),
        cmocka_unit_test_setup_teardown(workload_replicas_are_gangs, setup, teardown),
        cmocka_unit_test_setup_teardown(claims_hold_their_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(container_gpus_not_on_dra_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(allocated_claims_hold_their_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(claim_pods_counted_as_they_come_and_go, setup, teardown),
        cmocka_unit_test_setup_teardown(adoption_refusals, setup, teardown),
        cmocka_unit_test(condition_patches),
        cmocka_unit_test(podgroup_claims),
        cmocka_unit_test(malformed_objects_name_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
