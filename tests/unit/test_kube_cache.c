/* tests/unit/test_kube_cache.c: API objects (and the list pages they come in) into the
 * Kubernetes driver's cache and a cycle's input: gang membership of both PodGroup APIs, minMember,
 * queues, usage of other schedulers' pods, assumed binds, malformed objects; then the real core
 * places what the cache built. */
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
#include "sched/core/place_base.h"
#include "sched/core/podaff.h"
#include "sched/core/policy.h"
#include "sched/kube/cache.h"
#include "sched/kube/wire.h"

#include "kcache_fx.h"

static void gang_waits_for_min_member(void **state)
{
    struct fx *f = *state;
    pg(f->c, "train", 2, "team-a");
    pod(f->c, "w-0", "train", "", 8, "", "", "");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "WaitingForPods");
    assert_non_null(strstr(kb.waiting[0].message, "1 of minMember 2"));

    pod(f->c, "w-1", "train", "", 8, "", "", "");
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    assert_int_equal(kb.gangs[0].gang.n_pods, 2);
    assert_int_equal(kb.gangs[0].gang.gpus, 16);
    assert_string_equal(kb.gangs[0].key, "ml/train");
    assert_int_equal(kb.snap.queues[0].n_pending, 1); /* team-a, from the PodGroup's label */

    /* the core places it whole, on the two nodes of one rack */
    struct sched_result res;
    assert_int_equal(sched_cycle(&kb.snap, &f->a, &res), 0);
    assert_int_equal(res.n_placements, 1);
    const struct cluster *cl = kb.snap.cluster;
    const char *n0 = cl->nodes[res.placements[0].pods[0].node].name;
    const char *n1 = cl->nodes[res.placements[0].pods[1].node].name;
    assert_string_not_equal(n0, n1);
    assert_true(strcmp(n0, "n3") != 0 && strcmp(n1, "n3") != 0);
    assert_int_equal(res.placements[0].pods[0].gpu_mask, 0xff);
}

/* What a crash, a late Binding or a foreign one leaves: bound and pending members of one gang
 * are judged together (issue 14, defect 1). */
static void partial_gangs_wait_for_their_teardown(void **state)
{
    struct fx *f = *state;
    pg(f->c, "g", 4, "team-a");
    pod(f->c, "g-0", "g", "", 1, "", "n1", "");
    pod(f->c, "g-1", "g", "", 1, "", "n1", "");
    pod(f->c, "g-2", "g", "", 1, "", "", "");
    pod(f->c, "g-3", "g", "", 1, "", "", "");
    struct kcache_build kb;
    build(f, &kb);
    /* 2 bound of minMember 4: the pending two are not offered, the bound two run (alone) */
    assert_int_equal(kb.n_pending, 0);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].reason, "PartialGang");
    assert_non_null(strstr(kb.waiting[0].message, "2 of minMember 4"));
    assert_int_equal(kb.waiting[0].n_pods, 2);
    assert_int_equal(kb.n_gangs, 1);
    assert_int_equal(kb.gangs[0].min_member, 4);
    /* a delete sent counts at once: the two go (once each), the pending wait for them */
    assert_true(kcache_delete_sent(f->c, "ml/g-0"));
    assert_true(kcache_delete_sent(f->c, "ml/g-1"));
    assert_false(kcache_delete_sent(f->c, "ml/g-0"));
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0);
    assert_string_equal(kb.waiting[0].reason, "WaitingForTeardown");
    /* the watch brings a later version of g-0, still without its deletionTimestamp: the mark
     * holds (same uid) */
    pod(f->c, "g-0", "g", "", 1, "", "n1", "\"x\":\"y\"");
    build(f, &kb);
    assert_string_equal(kb.waiting[0].reason, "WaitingForTeardown");
    /* a failed delete undoes the mark: g-1 counts again */
    kcache_delete_failed(f->c, "ml/g-1", "u-g-1");
    build(f, &kb);
    assert_string_equal(kb.waiting[0].reason, "PartialGang");
    /* once the old members are gone, the pending ones are offered when they make minMember */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"g-0\"}}");
    assert_int_equal(kcache_pod_event(f->c, o, true), 0);
    cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "name"), "g-1");
    assert_int_equal(kcache_pod_event(f->c, o, true), 0);
    cJSON_Delete(o);
    pod(f->c, "g-4", "g", "", 1, "", "", "");
    pod(f->c, "g-5", "g", "", 1, "", "", "");
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    assert_int_equal(kb.gangs[0].gang.n_pods, 4);
}

/* An elastic gang: pending members join bound ones that are a whole gang already. */
static void elastic_gangs_grow(void **state)
{
    struct fx *f = *state;
    pg(f->c, "e", 2, "team-a");
    pod(f->c, "e-0", "e", "", 1, "", "n1", "");
    pod(f->c, "e-1", "e", "", 1, "", "n1", "");
    pod(f->c, "e-2", "e", "", 1, "", "", "");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    assert_int_equal(kb.gangs[0].gang.n_pods, 1);
    assert_int_equal(kb.n_waiting, 0);
    /* the pending part knows its running part (the driver numbers the joiners after it) */
    assert_int_equal(kb.n_gangs, 2);
    assert_true(kb.gangs[1].running);
    assert_ptr_equal(kb.gangs[0].run, &kb.gangs[1]);
    assert_null(kb.gangs[1].run);
    /* the joiner is placed next to the members that run (gang.near: their nodes) */
    assert_int_equal(kb.gangs[0].gang.n_near, 2);
    const struct cluster *cl = kb.snap.cluster;
    for (uint32_t x = 0; x < 2; x++)
        assert_string_equal(cl->nodes[kb.gangs[0].gang.near[x]].name, "n1");
    assert_int_equal(kb.gangs[1].gang.n_near, 0);
    pod(f->c, "f-0", "", "team-a", 1, "", "", ""); /* a gang of one: no running part */
    build(f, &kb);
    assert_int_equal(kb.n_pending, 2);
    for (uint32_t g = 0; g < kb.n_pending; g++)
        if (strcmp(kb.gangs[g].key, "ml/f-0") == 0)
            assert_null(kb.gangs[g].run);
        else
            assert_ptr_equal(kb.gangs[g].run, &kb.gangs[kb.n_pending]);
}

/* A running pod of group e on n1 that started at `start` (RFC 3339), with more annotations. */
static void started_pod(struct kcache *c, const char *name, const char *start, const char *ann)
{
    char buf[1200];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"e\"},\"annotations\":{%s}},"
             "\"spec\":{\"schedulerName\":\"gangsched\",\"nodeName\":\"n1\",\"containers\":[{"
             "\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
             "\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\"}}",
             name, name, ann, start);
    add_json(c, 1, buf);
}

/* The new members of a training gang that says how often it checkpoints join after a checkpoint
 * (gang_set_join): its checkpoints count from the later of its last checkpoint (a member's
 * gangsched.io/last-checkpoint) and its newest member's start (a join restarts every worker). */
static void elastic_members_join_after_a_checkpoint(void **state)
{
    struct fx *f = *state;
    pg_ann(f->c, "e", 1, "team-a", "\"gangsched.io/checkpoint-interval\":\"1h\"");
    started_pod(f->c, "e-0", "2026-01-01T00:00:00Z",
                "\"gangsched.io/last-checkpoint\":\"2026-01-01T00:05:00Z\"");
    started_pod(f->c, "e-1", "2026-01-01T00:10:00Z", ""); /* joined at 00:10 */
    pod(f->c, "e-2", "e", "", 1, "", "", "");
    int64_t t0 = 1767225600000; /* 2026-01-01T00:00:00Z */
    struct kcache_build kb;
    build_at(f, &kb, t0 + 3600000);
    assert_int_equal(kb.n_pending, 1);
    const struct gang *g = &kb.gangs[0].gang;
    assert_int_equal(g->join_from_ms, t0 + 600000);
    assert_int_equal(g->join_every_ms, 3600000);
    assert_int_equal(g->join_open_ms, 1200000); /* 1 GPU joining 2: a third of the interval */
    /* a checkpoint after the join: it counts from there */
    started_pod(f->c, "e-0", "2026-01-01T00:00:00Z",
                "\"gangsched.io/last-checkpoint\":\"2026-01-01T00:40:00Z\"");
    build_at(f, &kb, t0 + 3600000);
    assert_int_equal(kb.gangs[0].gang.join_from_ms, t0 + 2400000);
}

/* A running gang's profile is read as a pending one's: an inference gang spreads, so a
 * preemption prices its replicas at their share of its work (preempt.c set_cost), as the
 * simulator's jobs have it. Before, a running gang had none: its replicas cost the whole gang's
 * work, as a training gang's members do (differential-elastic-inference-victim.yaml). */
static void running_gangs_keep_their_profile(void **state)
{
    struct fx *f = *state;
    pg_ann(f->c, "e", 1, "team-a", "\"gangsched.io/profile\":\"inference\"");
    started_pod(f->c, "e-0", "2026-01-01T00:00:00Z", "");
    started_pod(f->c, "e-1", "2026-01-01T00:00:00Z", "");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_running, 1);
    assert_true(kb.running[0].gang->spread);
    /* a profile the configuration no longer has (a reload removed it): the queue's, and the
     * gang is still built */
    pg_ann(f->c, "e", 1, "team-a", "\"gangsched.io/profile\":\"gone\"");
    build(f, &kb);
    assert_int_equal(kb.n_running, 1);
    assert_false(kb.running[0].gang->spread);
}

/* Kueue's plain-pod groups: a label and a total count, no PodGroup (defect 8). */
static void kueue_plain_pod_groups(void **state)
{
    struct fx *f = *state;
    const char *ann = "\"kueue.x-k8s.io/pod-group-total-count\":\"2\"";
    char buf[1200];
    for (int i = 0; i < 2; i++) {
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"k-%d\",\"uid\":\"u-k-%d\","
                 "\"labels\":{\"kueue.x-k8s.io/pod-group-name\":\"k\","
                 "\"kueue.x-k8s.io/queue-name\":\"team-b\"},\"annotations\":{%s}},"
                 "\"spec\":{\"schedulerName\":\"gangsched\",\"containers\":[{\"name\":\"c\","
                 "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
                 "\"status\":{\"phase\":\"Pending\"}}",
                 i, i, ann);
        add_json(f->c, 1, buf);
        struct kcache_build kb;
        build(f, &kb);
        if (i == 0) {
            assert_int_equal(kb.n_pending, 0);
            assert_string_equal(kb.waiting[0].reason, "WaitingForPods");
            assert_non_null(strstr(kb.waiting[0].message, "1 of minMember 2"));
        } else {
            assert_int_equal(kb.n_pending, 1);
            assert_int_equal(kb.gangs[0].gang.n_pods, 2);
            assert_string_equal(kb.gangs[0].key, "ml/k");
            assert_int_equal(kb.snap.queues[1].n_pending, 1); /* LocalQueue team-b: same name */
        }
    }
    /* a group label without a count is refused, naming the pod */
    add_json(f->c, 1,
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"bad\",\"labels\":{"
             "\"kueue.x-k8s.io/pod-group-name\":\"k2\"}},\"spec\":{\"schedulerName\":"
             "\"gangsched\",\"containers\":[{\"name\":\"c\"}]}}");
    assert_null(kcache_pod(f->c, "ml/bad"));
}

static void other_schedulers_pods_use_capacity(void **state)
{
    struct fx *f = *state;
    /* a default-scheduler pod with 4 GPUs on n1, another pod with explicit GPU ids on n2 */
    pod(f->c, "other", "", "", 4, "default-scheduler", "n1", "");
    pod(f->c, "mine", "", "team-b", 2, "", "n2", "\"gangsched.io/gpu-ids\":\"6,7\"");
    struct kcache_build kb;
    build(f, &kb);
    const struct cluster *cl = kb.snap.cluster;
    for (uint32_t i = 0; i < cl->n_nodes; i++) {
        if (strcmp(cl->nodes[i].name, "n1") == 0) {
            assert_int_equal(kb.snap.state[i].used.v[RES_GPU], 4);
            assert_int_equal(kb.snap.state[i].gpu_used, 0x0f); /* lowest free indices */
        }
        if (strcmp(cl->nodes[i].name, "n2") == 0)
            assert_int_equal(kb.snap.state[i].gpu_used, 0xc0);
    }
    /* the bound pod of ours is a running gang charged to team-b */
    assert_int_equal(kb.n_pending, 0);
    assert_int_equal(kb.n_gangs, 1);
    assert_true(kb.gangs[0].running);
    size_t q = 1; /* team-b */
    assert_int_equal(kb.snap.usage[(q * f->cfg->n_flavors + 0) * RES_MAX + RES_GPU], 2);
}

static void assumed_pods_hold_their_node(void **state)
{
    struct fx *f = *state;
    pod(f->c, "solo", "", "team-a", 8, "", "", "");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
    assert_int_equal(kcache_assume(f->c, "ml/solo", "n3", 0xff, 0), 0);
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0); /* no longer pending: its bind is in flight */
    const struct cluster *cl = kb.snap.cluster;
    for (uint32_t i = 0; i < cl->n_nodes; i++)
        if (strcmp(cl->nodes[i].name, "n3") == 0)
            assert_int_equal(kb.snap.state[i].gpu_used, 0xff);
    kcache_unassume(f->c, "ml/solo");
    build(f, &kb);
    assert_int_equal(kb.n_pending, 1);
}

static uint32_t node_ix(const struct kcache_build *kb, const char *name)
{
    for (uint32_t i = 0; i < kb->snap.cluster->n_nodes; i++)
        if (strcmp(kb->snap.cluster->nodes[i].name, name) == 0)
            return i;
    fail_msg("no node %s", name);
    return 0;
}

/* The cycle with the kept placement state and the cycle that builds its own give the same
 * placements (pod by pod: node and GPUs). */
static void same_cycle(struct fx *f, struct kcache_build *kb)
{
    struct arena a1, a2;
    arena_init(&a1, 1 << 16);
    arena_init(&a2, 1 << 16);
    struct sched_snapshot fresh = kb->snap;
    fresh.base = NULL;
    struct sched_result r1, r2;
    assert_int_equal(sched_cycle(&fresh, &a1, &r1), 0);
    assert_int_equal(kcache_base(f->c, kb), 0);
    assert_non_null(kb->snap.base);
    assert_int_equal(sched_cycle(&kb->snap, &a2, &r2), 0);
    assert_int_equal(r1.n_placements, r2.n_placements);
    assert_int_equal(r1.n_verdicts, r2.n_verdicts);
    for (uint32_t p = 0; p < r1.n_placements; p++) {
        assert_int_equal(r1.placements[p].gang->id, r2.placements[p].gang->id);
        for (uint32_t k = 0; k < r1.placements[p].gang->n_pods; k++) {
            assert_int_equal(r1.placements[p].pods[k].node, r2.placements[p].pods[k].node);
            assert_int_equal(r1.placements[p].pods[k].gpu_mask, r2.placements[p].pods[k].gpu_mask);
        }
    }
    arena_fini(&a1);
    arena_fini(&a2);
}

/* The placement state kept between cycles (snapshot.c): one base per cluster, touched exactly
 * for the nodes whose state changed since the last cycle (a pod started or ended there); a new
 * node makes a new cluster and a new base; every cycle decides as one that builds its own. */
static void kept_placement_state_follows_changes(void **state)
{
    struct fx *f = *state;
    pod(f->c, "other", "", "", 4, "default-scheduler", "n1", "");
    pod(f->c, "solo", "", "team-a", 6, "", "", "");
    struct kcache_build kb;
    build(f, &kb);
    same_cycle(f, &kb);
    struct place_base *b = kb.snap.base;
    uint64_t gen = b->generation;
    build(f, &kb); /* nothing changed: the same base, nothing touched */
    assert_int_equal(kcache_base(f->c, &kb), 0);
    assert_ptr_equal(kb.snap.base, b);
    assert_int_equal(b->generation, gen);
    pod(f->c, "other2", "", "", 2, "default-scheduler", "n3", ""); /* a pod started on n3 */
    build(f, &kb);
    assert_int_equal(kcache_base(f->c, &kb), 0);
    assert_int_equal(b->generation, gen + 1);
    assert_true(b->is_dirty[node_ix(&kb, "n3")]);
    same_cycle(f, &kb);
    cJSON *o = cJSON_Parse("{\"metadata\":{\"namespace\":\"ml\",\"name\":\"other\"}}");
    assert_int_equal(kcache_pod_event(f->c, o, true), 0); /* a pod ended on n1 */
    cJSON_Delete(o);
    gen = b->generation;
    build(f, &kb);
    assert_int_equal(kcache_base(f->c, &kb), 0);
    assert_int_equal(b->generation, gen + 1);
    assert_true(b->is_dirty[node_ix(&kb, "n1")]);
    same_cycle(f, &kb);
    node(f->c, "n4", "r2", 8); /* a new node: a new cluster, a new base of 4 nodes */
    build(f, &kb);
    same_cycle(f, &kb);
    assert_int_equal(kb.snap.base->n, 4);
}

/* A pod of another scheduler on node_name in phase `phase`, asking for gpus GPUs. */
static void other_pod(struct kcache *c, const char *name, const char *node_name, int gpus,
                      const char *phase)
{
    char buf[800];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\"},"
             "\"spec\":{\"schedulerName\":\"default-scheduler\",\"nodeName\":\"%s\","
             "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
             "\"nvidia.com/gpu\":\"%d\"},\"requests\":{\"cpu\":\"1\"}}}]},"
             "\"status\":{\"phase\":\"%s\"}}",
             name, name, node_name, gpus, phase);
    add_json(c, 1, buf);
}

/* Node usage kept by deltas (snapshot.c) equals a count from scratch: a cache that saw pods
 * come, change phase, go, be assumed and unassumed builds the same per-node state as a fresh
 * cache given only the final objects. */
static void usage_kept_by_deltas_matches_a_fresh_count(void **state)
{
    struct fx *f = *state;
    struct kcache_build kb;
    build(f, &kb); /* a first build: counts kept from here on by events */
    other_pod(f->c, "o1", "n1", 2, "Running");
    pod(f->c, "mine", "", "team-a", 2, "", "n2", "\"gangsched.io/gpu-ids\":\"0,1\"");
    pod(f->c, "solo", "", "team-a", 4, "", "", "");
    assert_int_equal(kcache_assume(f->c, "ml/solo", "n3", 0xf0, 0), 0);
    build(f, &kb);
    assert_int_equal(kb.snap.state[node_ix(&kb, "n3")].gpu_used, 0xf0);
    assert_int_equal(kb.snap.state[node_ix(&kb, "n1")].gpu_used, 0x3);
    kcache_unassume(f->c, "ml/solo");
    assert_int_equal(kcache_assume(f->c, "ml/solo", "n3", 0x0f, 0), 0);
    other_pod(f->c, "o1", "n1", 2, "Succeeded"); /* ended: frees n1 */
    pod_gone(f->c, "mine");
    other_pod(f->c, "o2", "n1", 3, "Running");
    other_pod(f->c, "o3", "n3", 2, "Running"); /* no ids: the lowest GPUs solo leaves free */
    build(f, &kb);
    struct kcache *fresh = kcache_new("gangsched");
    node(fresh, "n1", "r1", 8);
    node(fresh, "n2", "r1", 8);
    node(fresh, "n3", "r2", 8);
    other_pod(fresh, "o1", "n1", 2, "Succeeded");
    other_pod(fresh, "o2", "n1", 3, "Running");
    other_pod(fresh, "o3", "n3", 2, "Running");
    pod(fresh, "solo", "", "team-a", 4, "", "", "");
    assert_int_equal(kcache_assume(fresh, "ml/solo", "n3", 0x0f, 0), 0);
    struct arena a;
    arena_init(&a, 1 << 16);
    struct kcache_build kf;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kcache_build(fresh, f->cfg, sched_policy_default(), 1000, &a, &kf, &eb), 0);
    for (uint32_t i = 0; i < 3; i++) {
        const struct node_state *x = &kb.snap.state[i], *y = &kf.snap.state[i];
        assert_string_equal(kb.snap.cluster->nodes[i].name, kf.snap.cluster->nodes[i].name);
        assert_int_equal(x->gpu_used, y->gpu_used);
        for (int r = 0; r < RES_MAX; r++)
            assert_int_equal(x->used.v[r], y->used.v[r]);
    }
    assert_int_equal(kb.snap.state[node_ix(&kb, "n1")].gpu_used, 0x7);
    assert_int_equal(kb.snap.state[node_ix(&kb, "n2")].gpu_used, 0);
    assert_int_equal(kb.snap.state[node_ix(&kb, "n3")].gpu_used, 0x3f);
    arena_fini(&a);
    kcache_free(fresh);
}

/* A bound pod of ours with the given status members (JSON, after "phase"). */
static void bound_pod(struct kcache *c, const char *name, const char *node_name,
                      const char *status_extra)
{
    char buf[1200];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"creationTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{"
             "\"gangsched.io/queue\":\"team-a\"}},\"spec\":{\"schedulerName\":\"gangsched\","
             "\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":{"
             "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\"%s}}",
             name, name, node_name, status_extra);
    add_json(c, 1, buf);
}

static int64_t run_start(const struct kcache_build *kb, const char *key)
{
    for (uint32_t i = 0; i < kb->snap.n_running; i++)
        if (strcmp(kb->snap.running[i].gang->name, key) == 0)
            return kb->snap.running[i].start_ms;
    fail_msg("no running gang %s", key);
    return -1;
}

static void running_gangs_start_when_their_pods_started(void **state)
{
    /* the preemption cost counts a run's work from its start, not from the pod's creation
     * (a gang that waited an hour in the queue has lost nothing yet when it starts) */
    struct fx *f = *state;
    int64_t created, started, bound;
    assert_int_equal(kobj_time("2026-01-01T00:00:00Z", &created), 0);
    assert_int_equal(kobj_time("2026-01-01T01:00:00Z", &started), 0);
    assert_int_equal(kobj_time("2026-01-01T02:00:00Z", &bound), 0);
    bound_pod(f->c, "kubelet", "n1", ",\"startTime\":\"2026-01-01T01:00:00Z\"");
    bound_pod(f->c, "bound", "n2",
              ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"True\","
              "\"lastTransitionTime\":\"2026-01-01T02:00:00Z\"}]");
    bound_pod(f->c, "unknown", "n3", ",\"startTime\":\"yesterday\"");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.snap.n_running, 3);
    assert_true(run_start(&kb, "ml/kubelet") == started && started > created);
    assert_true(run_start(&kb, "ml/bound") == bound);
    assert_true(run_start(&kb, "ml/unknown") == kb.snap.now_ms); /* counted from now */
}

/* A running gang with a member on a node the cache does not have (not seen yet, or gone) is
 * charged to its quota but offered neither as a preemption victim nor as GPU shares until its
 * node is known: its members must not be taken for pods of another node. */
static void running_gang_on_an_unknown_node_is_kept_out(void **state)
{
    struct fx *f = *state;
    bound_pod(f->c, "lost", "ghost", "");
    bound_pod(f->c, "here", "n1", "");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.snap.n_shares, 1);
    assert_string_equal(kb.snap.shares[0].gang->name, "ml/here");
    assert_int_equal(kb.snap.shares[0].pods[0].node, node_ix(&kb, "n1"));
    bool seen = false;
    for (uint32_t g = kb.n_pending; g < kb.n_gangs; g++)
        if (strcmp(kb.gangs[g].key, "ml/lost") == 0) {
            seen = true;
            assert_int_equal(kb.gangs[g].nodes[0], UINT32_MAX);
        }
    assert_true(seen);
    size_t q = 0; /* team-a: both charged */
    assert_int_equal(kb.snap.usage[(q * f->cfg->n_flavors + 0) * RES_MAX + RES_GPU], 2);
    assert_int_equal(kb.snap.state[node_ix(&kb, "n1")].used.v[RES_GPU], 1); /* "here" only */

    node(f->c, "ghost", "r2", 8); /* its node appears */
    build(f, &kb);
    assert_int_equal(kb.snap.n_shares, 2);
    for (uint32_t i = 0; i < kb.snap.n_shares; i++)
        assert_int_equal(
            kb.snap.shares[i].pods[0].node,
            node_ix(&kb, strcmp(kb.snap.shares[i].gang->name, "ml/lost") == 0 ? "ghost" : "n1"));
}

static void volcano_membership_and_unknown_queue(void **state)
{
    struct fx *f = *state;
    add_json(f->c, 3,
             "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
             "\"metadata\":{\"namespace\":\"ml\",\"name\":\"vj\"},\"spec\":{\"minMember\":1,"
             "\"queue\":\"research\"}}");
    pod(f->c, "v-0", "", "", 1, "", "", "\"scheduling.k8s.io/group-name\":\"vj\"");
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_waiting, 1);
    assert_string_equal(kb.waiting[0].key, "ml/vj");
    assert_string_equal(kb.waiting[0].reason, "UnknownQueue");
    assert_non_null(strstr(kb.waiting[0].message, "research"));
}

static void malformed_objects_are_skipped(void **state)
{
    struct fx *f = *state;
    /* bad quantity: refused and logged, the cache keeps going */
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"bad\",\"namespace\":\"ml\"},\"spec\":{"
                           "\"schedulerName\":\"gangsched\",\"containers\":[{\"resources\":{"
                           "\"requests\":{\"cpu\":\"lots\"}}}]}}");
    assert_int_equal(kcache_pod_event(f->c, o, false), 0);
    cJSON_Delete(o);
    assert_null(kcache_pod(f->c, "ml/bad"));
    o = cJSON_Parse("{\"metadata\":{}}");
    assert_int_equal(kcache_pod_event(f->c, o, false), 0);
    assert_int_equal(kcache_node_event(f->c, o, false), 0);
    cJSON_Delete(o);
    struct kpod *p = NULL;
    struct sched_errbuf eb = {{0}};
    o = cJSON_Parse("{\"metadata\":{\"name\":\"g\",\"namespace\":\"ml\",\"annotations\":{"
                    "\"gangsched.io/gpu-ids\":\"0,99\"}},\"spec\":{}}");
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "pod ml/g: annotation gangsched.io/gpu-ids"));
    cJSON_Delete(o);
    struct kcache_build kb;
    build(f, &kb);
    assert_int_equal(kb.n_pending, 0);
}

static void effective_request_counts_init_containers(void **state)
{
    (void)state;
    /* NodeResourcesFit's example: init IC1 {2, 1G}, IC2 {2, 3G}; C1 {2, 1G}, C2 {1, 1G} ->
     * {cpu 3, mem 3G} */
    cJSON *o = cJSON_Parse(
        "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"initContainers\":["
        "{\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"1G\"}}},"
        "{\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"3G\"}}}],\"containers\":["
        "{\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"1G\"}}},"
        "{\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1G\"}}}]}}");
    struct kpod *p = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), 0);
    assert_int_equal(p->req.v[RES_CPU], 3000);
    assert_int_equal(p->req.v[RES_MEMORY], 3000000000LL);
    assert_string_equal(p->key, "default/p");
    kobj_pod_free(p);
    cJSON_Delete(o);
}

/* A limit stands for the request of its name when that one is absent (SetDefaults_Pod), per
 * name: a cpu limit beside a memory request is the cpu request; a given request wins. */
static void limits_stand_for_absent_requests(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":["
                           "{\"resources\":{\"requests\":{\"memory\":\"1G\"},\"limits\":"
                           "{\"cpu\":\"4\",\"memory\":\"2G\",\"nvidia.com/gpu\":\"2\"}}}]}}");
    struct kpod *p = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kobj_pod_decode(o, "gangsched", &p, &eb), 0);
    assert_int_equal(p->req.v[RES_CPU], 4000);
    assert_int_equal(p->req.v[RES_MEMORY], 1000000000LL);
    assert_int_equal(p->req.v[RES_GPU], 2);
    kobj_pod_free(p);
    cJSON_Delete(o);
}

static void ns_event(struct kcache *c, const char *name, const char *labels, bool deleted)
{
    char json[256];
    snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"%s\",\"labels\":{%s}}}", name, labels);
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    assert_int_equal(kcache_ns_event(c, o, deleted), 0);
    cJSON_Delete(o);
}

static const struct kpod *pod_in(struct kcache *c, const char *ns, const char *name,
                                 const char *spec)
{
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{\"app\":\"x\"}},"
             "\"spec\":{\"schedulerName\":\"gangsched\"%s}}",
             name, ns, spec);
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    assert_int_equal(kcache_pod_event(c, o, false), 0);
    cJSON_Delete(o);
    char key[128];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    const struct kpod *p = kcache_pod(c, key);
    assert_non_null(p);
    return p;
}

/* A term's namespaceSelector selects the pods of the namespaces whose labels meet it, with
 * those listed by name (the union, as core/v1 PodAffinityTerm says), not the term's own
 * namespace; the namespaces' labels are read as they change, whichever arrives first. */
static void namespace_selectors_select_by_labels(void **state)
{
    (void)state;
    struct kcache *c = kcache_new("gangsched");
    assert_non_null(c);
    ns_event(c, "ta", "\"team\":\"a\"", false);
    const struct kpod *own = pod_in(
        c, "ml", "w",
        ",\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
        "[{\"topologyKey\":\"h\",\"labelSelector\":{\"matchLabels\":{\"app\":\"x\"}},"
        "\"namespaceSelector\":{\"matchLabels\":{\"team\":\"a\"}}},{\"topologyKey\":\"h\","
        "\"labelSelector\":{},\"namespaces\":[\"tc\"],\"namespaceSelector\":{"
        "\"matchExpressions\":[{\"key\":\"team\",\"operator\":\"In\",\"values\":[\"b\"]}]}}]}}");
    const struct kpod *pa = pod_in(c, "ta", "a", "");
    const struct kpod *pb = pod_in(c, "tb", "b", ""); /* before its namespace */
    const struct kpod *pc = pod_in(c, "tc", "c", "");
    const struct kpod *pm = pod_in(c, "ml", "m", "");
    assert_null(own->spec->err);
    const struct pod_meta *m = own->meta;
    assert_int_equal(m->n_anti, 2);
    assert_int_equal(m->anti[0].n_ns_reqs, 1);
    const struct pod_term *t0 = &m->anti[0], *t1 = &m->anti[1];
    assert_true(podaff_selects(t0, "ml", pa->meta));
    assert_false(podaff_selects(t0, "ml", pb->meta)); /* tb: no labels known yet */
    assert_false(podaff_selects(t0, "ml", pm->meta)); /* its own namespace is not meant */
    assert_true(podaff_selects(t1, "ml", pc->meta));  /* listed by name */
    assert_false(podaff_selects(t1, "ml", pb->meta));
    ns_event(c, "tb", "\"team\":\"b\"", false); /* the namespace arrives: read from now on */
    assert_true(podaff_selects(t1, "ml", pb->meta));
    ns_event(c, "ta", "\"team\":\"z\"", false); /* relabelled */
    assert_false(podaff_selects(t0, "ml", pa->meta));
    ns_event(c, "tb", "\"team\":\"a\"", false);
    assert_true(podaff_selects(t0, "ml", pb->meta));
    ns_event(c, "tb", "", true); /* deleted: no labels */
    assert_false(podaff_selects(t0, "ml", pb->meta));
    kcache_free(c);
}

static void times_parse_and_format(void **state)
{
    (void)state;
    int64_t ms = 0;
    assert_int_equal(kobj_time("2025-01-01T12:00:00Z", &ms), 0);
    assert_int_equal(ms, 1735732800000LL);
    assert_int_equal(kobj_time("2025-01-01T12:00:00.250+01:00", &ms), 0);
    assert_int_equal(ms, 1735729200250LL);
    assert_int_equal(kobj_time("2025-01-01 12:00:00", &ms), SCHED_EINVAL);
    assert_int_equal(kobj_time("2025-01-01T12:00:00", &ms), SCHED_EINVAL);
    /* the calendar (leap days and seconds, before 1970, past 2100) and offsets */
    assert_int_equal(kobj_time("2024-02-29T23:59:60Z", &ms), 0);
    assert_int_equal(ms, 1709251200000LL);
    assert_int_equal(kobj_time("1969-12-31T23:59:59Z", &ms), 0);
    assert_int_equal(ms, -1000);
    assert_int_equal(kobj_time("2025-01-01T12:00:00-05:30", &ms), 0);
    assert_int_equal(ms, 1735752600000LL);
    assert_int_equal(kobj_time("2100-02-29T00:00:00Z", &ms), 0); /* not a leap year: March 1 */
    assert_int_equal(ms, 4107542400000LL);
    const char *bad[] = {"2025-1-01T12:00:00Z",    "2025-01-01T12:00:00+0100",
                         "2025-01-01T12:00:00.Z",  "2025-01-01T12:00:00Zx",
                         "2025-13-01T12:00:00Z",   "2025-01-01T24:00:00Z",
                         "2025-01-01T12:00:00+01", "+025-01-01T12:00:00Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(kobj_time(bad[i], &ms), SCHED_EINVAL);
    char buf[40];
    kobj_format_time(1735732800123LL, buf, sizeof(buf));
    assert_string_equal(buf, "2025-01-01T12:00:00.123000Z");
}

#define NODE_N1                                                                                    \
    "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\",\"uid\":\"u-%d\",\"labels\":{"               \
    "\"network.topology.gangsched.io/rack\":\"%s\"}},\"status\":{\"allocatable\":{\"cpu\":\"96\"," \
    "\"memory\":\"1Ti\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":"     \
    "\"Ready\",\"status\":\"True\",\"lastHeartbeatTime\":\"2026-01-01T00:00:0%dZ\"}]}}"

#define POD_P1                                                                                     \
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"namespace\":\"ml\",\"uid\":\"u1\","         \
    "\"resourceVersion\":\"%d\",\"labels\":{\"app\":\"%s\"}},\"spec\":{\"schedulerName\":"         \
    "\"gangsched\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{"                  \
    "\"nvidia.com/gpu\":\"1\"}}}]}%s}"
#define STATUS_SCHED(msg)                                                                          \
    ",\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":"    \
    "\"False\",\"reason\":\"Unschedulable\",\"message\":\"" msg "\"}]}"

/* A pod event that changes only what every write changes (resourceVersion) or what this
 * scheduler writes on a waiting pod (its PodScheduled condition, the first one included) is no
 * reason for a cycle; a label change is, as is a pod of a new uid under the same name. */
static void pod_status_writes_are_no_change(void **state)
{
    struct fx *f = *state;
    struct kcache_build kb;
    char buf[900];
    snprintf(buf, sizeof(buf), POD_P1, 1, "a", ",\"status\":{\"phase\":\"Pending\"}");
    add_json(f->c, 1, buf); /* as kube-apiserver creates it: no conditions */
    assert_true(kcache_dirty(f->c));
    build(f, &kb);
    assert_false(kcache_dirty(f->c));
    snprintf(buf, sizeof(buf), POD_P1, 2, "a", STATUS_SCHED(""));
    add_json(f->c, 1, buf); /* the first condition: status.conditions appears */
    assert_false(kcache_dirty(f->c));
    snprintf(buf, sizeof(buf), POD_P1, 3, "a", STATUS_SCHED("Unschedulable: 0/2 nodes"));
    add_json(f->c, 1, buf);
    assert_false(kcache_dirty(f->c));
    snprintf(buf, sizeof(buf), POD_P1, 4, "a", ",\"status\":{\"phase\":\"Running\"}");
    add_json(f->c, 1, buf); /* a status of its own */
    assert_true(kcache_dirty(f->c));
    build(f, &kb);
    snprintf(buf, sizeof(buf), POD_P1, 5, "b", STATUS_SCHED("Unschedulable: 0/2 nodes"));
    add_json(f->c, 1, buf);
    assert_true(kcache_dirty(f->c));
    build(f, &kb);
    char *u2 = strstr(buf, "\"u1\"");
    assert_non_null(u2);
    u2[2] = '2';
    add_json(f->c, 1, buf);
    assert_true(kcache_dirty(f->c));
}

/* A pod event of the version the cache holds (same uid and resourceVersion: the watch event of
 * a status write whose answer the cache took, a relist) is not decoded again: the object kept
 * stays, whatever else the event says; a new resourceVersion, or a new uid, is taken. */
static void pod_versions_held_are_not_decoded_again(void **state)
{
    struct fx *f = *state;
    char buf[900];
    snprintf(buf, sizeof(buf), POD_P1, 7, "a", STATUS_SCHED("Unschedulable: 0/2 nodes"));
    add_json(f->c, 1, buf);
    const struct kpod *p = kcache_pod(f->c, "ml/p1");
    assert_non_null(p);
    assert_string_equal(p->sched_msg, "Unschedulable: 0/2 nodes");
    snprintf(buf, sizeof(buf), POD_P1, 7, "a", STATUS_SCHED("Unschedulable: 0/3 nodes"));
    add_json(f->c, 1, buf);
    assert_ptr_equal(kcache_pod(f->c, "ml/p1"), p);
    assert_string_equal(p->sched_msg, "Unschedulable: 0/2 nodes");
    snprintf(buf, sizeof(buf), POD_P1, 8, "a", STATUS_SCHED("Unschedulable: 0/3 nodes"));
    add_json(f->c, 1, buf);
    p = kcache_pod(f->c, "ml/p1");
    assert_string_equal(p->sched_msg, "Unschedulable: 0/3 nodes");
    snprintf(buf, sizeof(buf), POD_P1, 8, "b", STATUS_SCHED("Unschedulable: 0/4 nodes"));
    char *u = strstr(buf, "\"u1\"");
    assert_non_null(u);
    u[2] = '2'; /* another pod of that name, at the same resourceVersion */
    add_json(f->c, 1, buf);
    p = kcache_pod(f->c, "ml/p1");
    assert_string_equal(p->uid, "u2");
    assert_string_equal(p->sched_msg, "Unschedulable: 0/4 nodes");
}

/* A PodGroup's status written by this scheduler (scheduler-plugins' phase, scheduleStartTime
 * and conditions; Volcano's status by a PUT of the object) comes back on the watch: no reason
 * for a cycle, though the object kept is the latest (Volcano's PUT sends it back). A change of
 * what a cycle reads (minMember, the queue label, an annotation) is one. */
static void podgroup_status_writes_are_no_change(void **state)
{
    struct fx *f = *state;
    struct kcache_build kb;
    static const char *const xk8s =
        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":{"
        "\"namespace\":\"ml\",\"name\":\"pg\",\"uid\":\"u9\",\"resourceVersion\":\"%d\","
        "\"labels\":{\"gangsched.io/queue\":\"%s\"},\"annotations\":{\"a\":\"%s\"}},"
        "\"spec\":{\"minMember\":%d}%s}";
    char buf[700];
    snprintf(buf, sizeof(buf), xk8s, 1, "team-a", "1", 2, "");
    add_json(f->c, 2, buf);
    assert_true(kcache_dirty(f->c));
    build(f, &kb);
    snprintf(buf, sizeof(buf), xk8s, 2, "team-a", "1", 2,
             ",\"status\":{\"phase\":\"Pending\",\"scheduleStartTime\":\"2026-01-01T00:00:00Z\","
             "\"conditions\":[{\"type\":\"Scheduled\",\"status\":\"False\"}]}");
    add_json(f->c, 2, buf);
    assert_false(kcache_dirty(f->c));
    assert_true(kcache_pg(f->c, "ml/pg")->has_start_time); /* kept, for the status writer */
    const struct {
        const char *queue, *ann;
        int min;
    } changes[] = {{"team-b", "1", 2}, {"team-b", "2", 2}, {"team-b", "2", 3}};
    for (int k = 0; k < 3; k++) {
        snprintf(buf, sizeof(buf), xk8s, 3 + k, changes[k].queue, changes[k].ann, changes[k].min,
                 "");
        add_json(f->c, 2, buf);
        assert_true(kcache_dirty(f->c));
        build(f, &kb);
    }
    static const char *const volcano =
        "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
        "\"namespace\":\"ml\",\"name\":\"vj\",\"uid\":\"u8\",\"resourceVersion\":\"%d\","
        "\"generation\":%d},\"spec\":{\"minMember\":2},\"status\":{\"phase\":\"%s\"}}";
    snprintf(buf, sizeof(buf), volcano, 1, 1, "Pending");
    add_json(f->c, 3, buf);
    assert_true(kcache_dirty(f->c));
    build(f, &kb);
    /* no status subresource: the PUT bumped metadata.generation too (customResourceStrategy) */
    snprintf(buf, sizeof(buf), volcano, 2, 2, "Inqueue");
    add_json(f->c, 3, buf);
    assert_false(kcache_dirty(f->c));
    assert_non_null(strstr(kcache_pg(f->c, "ml/vj")->raw, "Inqueue"));
}

/* A Node is decoded once, when its event arrives: a heartbeat that changes nothing the scheduler
 * reads is no change, a label change is, and a node that cannot be read is treated as gone. */
static void nodes_are_decoded_once(void **state)
{
    struct fx *f = *state;
    struct kcache_build kb;
    build(f, &kb);
    assert_false(kcache_dirty(f->c));
    char buf[800];
    snprintf(buf, sizeof(buf), NODE_N1, 7, "r1", 7);
    add_json(f->c, 0, buf);
    assert_false(kcache_dirty(f->c)); /* a heartbeat */
    assert_string_equal(kcache_node_uid(f->c, "n1"), "u-7");
    snprintf(buf, sizeof(buf), NODE_N1, 7, "r9", 8);
    add_json(f->c, 0, buf);
    assert_true(kcache_dirty(f->c));
    build(f, &kb);
    int ix = kcache_node_index(f->c, "n1");
    assert_true(ix >= 0);
    assert_string_equal(
        node_label(&kb.snap.cluster->nodes[ix], "network.topology.gangsched.io/rack"), "r9");
    add_json(f->c, 0,
             "{\"kind\":\"Node\",\"metadata\":{\"name\":\"n2\"},\"status\":{\"allocatable\":{"
             "\"cpu\":\"lots\"}}}");
    assert_int_equal(kcache_n_nodes(f->c), 2);
    build(f, &kb);
    assert_int_equal(kb.snap.cluster->n_nodes, 2);
    assert_int_equal(kcache_node_index(f->c, "n2"), -1);
}

/* What later reads need of a PodGroup is kept without its JSON tree: annotations (sorted, found
 * by key), Volcano's networkTopology, and for Volcano (written by a PUT of the object) its text. */
static void podgroups_keep_what_is_read(void **state)
{
    (void)state;
    cJSON *o = cJSON_Parse(
        "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
        "\"namespace\":\"ml\",\"name\":\"vj\",\"annotations\":{\"z\":\"1\","
        "\"gangsched.io/max-restarts\":\"4\"}},\"spec\":{\"minMember\":2,\"networkTopology\":{"
        "\"mode\":\"hard\",\"highestTierAllowed\":2}},\"status\":{\"phase\":\"Pending\"}}");
    struct kpg *g = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kobj_pg_decode(o, KPG_VOLCANO, &g, &eb), 0);
    cJSON_Delete(o);
    assert_string_equal(kobj_pg_annotation(g, "gangsched.io/max-restarts"), "4");
    assert_string_equal(kobj_pg_annotation(g, "z"), "1");
    assert_null(kobj_pg_annotation(g, "y"));
    assert_null(kobj_pg_annotation(NULL, "z"));
    assert_string_equal(g->nt_mode, "hard");
    assert_true(g->has_nt_tier);
    assert_int_equal(g->nt_tier, 2);
    cJSON *back = cJSON_Parse(g->raw);
    assert_non_null(back);
    assert_string_equal(kobj_str(back, "status.phase"), "Pending");
    cJSON_Delete(back);
    kobj_pg_free(g);
}

/* The list-page scanner the informers use (sched/kube/wire.h): members found whatever their
 * order, strings with escaped quotes and brackets skipped, a body that is not an object or ends
 * early refused; each item's text ends where its value does. */
static void list_pages_are_scanned(void **state)
{
    (void)state;
    struct kube_list_page pg;
    const char *s = " {\"kind\":\"PodList\",\"items\" : [{\"metadata\":{\"name\":\"a\\\"]}\"}},"
                    " {\"metadata\":{\"name\":\"b\"}}],\"metadata\":{\"continue\":\"x}\"},"
                    "\"n\":-1.5e3,\"t\":true} ";
    assert_true(kube_list_scan(s, strlen(s), &pg));
    assert_non_null(pg.meta);
    cJSON *m = cJSON_ParseWithLength(pg.meta, pg.meta_len);
    assert_non_null(m);
    assert_string_equal(kobj_str(m, "continue"), "x}");
    cJSON_Delete(m);
    assert_non_null(pg.items);
    assert_int_equal(pg.items[0], '[');
    assert_int_equal(pg.items[pg.items_len - 1], ']');
    size_t e = kube_json_end(pg.items, pg.items_len, 1);
    cJSON *first = cJSON_ParseWithLength(pg.items + 1, e - 1);
    assert_non_null(first);
    assert_string_equal(kobj_str(first, "metadata.name"), "a\"]}");
    cJSON_Delete(first);
    assert_true(kube_list_scan("{}", 2, &pg));
    assert_null(pg.meta);
    assert_null(pg.items);
    const char *bad[] = {"[1]", "{\"items\":[1,2}", "{\"metadata\":{}", "{\"a\" 1}",
                         "",    "{\"a\":\"open}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(kube_list_scan(bad[i], strlen(bad[i]), &pg));
    assert_int_equal(kube_json_end("\"ab\\\"c\"x", 8, 0), 7);
    assert_int_equal(kube_json_end("123,", 4, 0), 3);
    assert_int_equal(kube_json_end("[[1],{\"]\":2}]", 13, 0), 13);
    assert_int_equal(kube_json_end("[[1]", 4, 0), 0);
    /* runs of backslashes: an even run before a quote ends the string, an odd one escapes it */
    assert_int_equal(kube_json_end("\"a\\\\\"x", 6, 0), 5);
    assert_int_equal(kube_json_end("{\"k\":\"v\\\\\"}x", 12, 0), 11);
    assert_int_equal(kube_json_end("[\"\\\\\\\"]\"]x", 10, 0), 9);
    assert_int_equal(kube_json_end("\"\\\"", 3, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(gang_waits_for_min_member, setup, teardown),
        cmocka_unit_test_setup_teardown(partial_gangs_wait_for_their_teardown, setup, teardown),
        cmocka_unit_test_setup_teardown(elastic_gangs_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(elastic_members_join_after_a_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(running_gangs_keep_their_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(kueue_plain_pod_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(other_schedulers_pods_use_capacity, setup, teardown),
        cmocka_unit_test_setup_teardown(assumed_pods_hold_their_node, setup, teardown),
        cmocka_unit_test_setup_teardown(volcano_membership_and_unknown_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(malformed_objects_are_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(running_gang_on_an_unknown_node_is_kept_out, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(running_gangs_start_when_their_pods_started, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(nodes_are_decoded_once, setup, teardown),
        cmocka_unit_test_setup_teardown(pod_status_writes_are_no_change, setup, teardown),
        cmocka_unit_test_setup_teardown(pod_versions_held_are_not_decoded_again, setup, teardown),
        cmocka_unit_test_setup_teardown(podgroup_status_writes_are_no_change, setup, teardown),
        cmocka_unit_test(podgroups_keep_what_is_read),
        cmocka_unit_test(list_pages_are_scanned),
        cmocka_unit_test_setup_teardown(kept_placement_state_follows_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(usage_kept_by_deltas_matches_a_fresh_count, setup,
                                        teardown),
        cmocka_unit_test(effective_request_counts_init_containers),
        cmocka_unit_test(limits_stand_for_absent_requests),
        cmocka_unit_test(namespace_selectors_select_by_labels),
        cmocka_unit_test(times_parse_and_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
