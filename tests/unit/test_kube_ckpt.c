/* tests/unit/test_kube_ckpt.c: the checkpoint handshake of preemption for every kind of gang
 * (sched/kube/driver_ckpt.c, docs/preemption.md "The checkpoint handshake"), on a cycle's input
 * built by the cache from API objects, with no API server (every write fails to queue and stays
 * owed, which is what is looked at):
 *   - where a gang is asked (kdrv_ckpt_where): its own PodGroup (scheduler-plugins, native
 *     scheduling.k8s.io), else every member pod (a gang of one, a Kueue pod group, a native basic
 *     pod, a pod group of a 1.35 Workload), and the write owed per object until the watch shows
 *     it there: each pod on its own;
 *   - where its answer is read: gangsched.io/last-checkpoint on the PodGroup or on any member
 *     pod, the latest (the running gang's last_checkpoint_ms), and a victim asked on its pods
 *     that answers on one of them is evicted at once, one that does not at the deadline;
 *   - the resume after a restart from the pods' annotations (a member that does not show the
 *     request gets it again) and from a native PodGroup's.
 * Before, a victim without a PodGroup of scheduler-plugins or Volcano was never asked (evicted
 * at once) and a pod's annotations were never read. Also, once the members evicted alone have
 * gone, the ledger charge of the gang that runs on (driver_record.c sync_members). */
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
#include <unistd.h>

#include "sched/kube/driver_int.h"

#include "tests/unit/kdrv_fx.h"
#include "tests/unit/kube_fx.h"

#define T0   1767225600000LL /* 2026-01-01T00:00:00Z: every pod's start */
#define NOW  (T0 + 3600000)  /* the decisions, an hour later */
#define WAIT 60000           /* the queue's checkpointGrace (ms) */

static const char *const cfg_yaml =
    "apiVersion: gangsched.io/v1alpha1\n"
    "kind: SchedulerConfig\n"
    "queues:\n"
    "  - name: q\n"
    "    preemption: {withinQueue: LowerPriority, checkpointGrace: 60s}\n";

/* A running pod ml/name of one GPU on node, started at T0, in queue q; labels and ann: extra
 * members of its labels and annotations (",\"k\":\"v\"" or ""), spec: extra members of its spec. */
/* A running pod; meta: more metadata fields (",\"deletionTimestamp\":..."). */
static void pod_meta(struct kcache *c, const char *name, const char *node, const char *labels,
                     const char *ann, const char *spec, const char *meta)
{
    static int rv; /* each event newer than the last (the cache ignores an older one) */
    char buf[2000];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\"%s,"
             "\"labels\":{\"gangsched.io/queue\":\"q\"%s},\"annotations\":{\"x\":\"y\"%s}},"
             "\"spec\":{\"schedulerName\":\"gangsched\",\"nodeName\":\"%s\"%s,\"containers\":[{"
             "\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},"
             "\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-01-01T00:00:00Z\"}}",
             name, name, ++rv, meta, labels, ann, node, spec);
    fx_event(c, 1, 0, buf);
}

static void pod(struct kcache *c, const char *name, const char *node, const char *labels,
                const char *ann, const char *spec)
{
    pod_meta(c, name, node, labels, ann, spec, "");
}

#define KUEUE_LABELS ",\"kueue.x-k8s.io/pod-group-name\":\"kq\""
#define KUEUE_ANN    ",\"kueue.x-k8s.io/pod-group-total-count\":\"2\""

/* The Kueue pod group ml/kq's two members, each with extra annotations. */
static void kueue_pods(struct kcache *c, const char *ann0, const char *ann1)
{
    char a[600];
    snprintf(a, sizeof(a), "%s%s", KUEUE_ANN, ann0);
    pod(c, "kq-0", "n1", KUEUE_LABELS, a, "");
    snprintf(a, sizeof(a), "%s%s", KUEUE_ANN, ann1);
    pod(c, "kq-1", "n2", KUEUE_LABELS, a, "");
}

/* The native v1beta1 PodGroup ml/ng (gang of 1) with extra annotations. */
static void native_pg(struct kcache *c, const char *ann)
{
    char buf[900];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
             "\"namespace\":\"ml\",\"name\":\"ng\",\"uid\":\"pg-ng\",\"generation\":1,"
             "\"annotations\":{\"x\":\"y\"%s}},\"spec\":{\"schedulingPolicy\":{\"gang\":{"
             "\"minCount\":1}}},\"status\":{\"conditions\":[{\"type\":"
             "\"PodGroupInitiallyScheduled\",\"status\":\"True\"}]}}",
             ann);
    fx_event(c, 2, KPG_NATIVE_V1BETA1, buf);
}

/* Every kind of gang, running: ml/solo (a gang of one), ml/kq (a Kueue pod group of two),
 * ml/xg (a scheduler-plugins PodGroup, its last-checkpoint at T0 + 10 min), ml/ng (a native
 * PodGroup), ml/wl:w (a pod group of a 1.35 Workload), ml/bp-0 (a native basic pod). */
static void cluster(struct kcache *c)
{
    for (int n = 1; n <= 2; n++) {
        char buf[400];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"name\":\"n%d\"},\"status\":{\"allocatable\":{\"cpu\":\"8\","
                 "\"memory\":\"64Gi\",\"pods\":\"100\",\"nvidia.com/gpu\":\"8\"},\"conditions\":"
                 "[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
                 n);
        fx_event(c, 0, 0, buf);
    }
    pod(c, "solo", "n1", "", "", "");
    kueue_pods(c, "", "");
    fx_event(
        c, 2, KPG_XK8S,
        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":{"
        "\"namespace\":\"ml\",\"name\":\"xg\",\"uid\":\"pg-xg\",\"annotations\":{"
        "\"gangsched.io/last-checkpoint\":\"2026-01-01T00:10:00Z\"}},\"spec\":{\"minMember\":1}}");
    pod(c, "xg-0", "n1", ",\"scheduling.x-k8s.io/pod-group\":\"xg\"", "", "");
    native_pg(c, "");
    pod(c, "ng-0", "n2", "", "", ",\"schedulingGroup\":{\"podGroupName\":\"ng\"}");
    fx_event(c, 2, KPG_WORKLOAD_V1ALPHA1,
             "{\"apiVersion\":\"scheduling.k8s.io/v1alpha1\",\"kind\":\"Workload\",\"metadata\":{"
             "\"namespace\":\"ml\",\"name\":\"wl\",\"uid\":\"w1\"},\"spec\":{\"podGroups\":["
             "{\"name\":\"w\",\"policy\":{\"gang\":{\"minCount\":1}}}]}}");
    pod(c, "wl-0", "n2", "", "", ",\"workloadRef\":{\"name\":\"wl\",\"podGroup\":\"w\"}");
    fx_event(c, 2, KPG_NATIVE_V1BETA1,
             "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
             "\"namespace\":\"ml\",\"name\":\"bp\",\"uid\":\"pg-bp\",\"generation\":1},\"spec\":{"
             "\"schedulingPolicy\":{\"basic\":{}}}}");
    pod(c, "bp-0", "n1", "", "", ",\"schedulingGroup\":{\"podGroupName\":\"bp\"}");
}

static int setup(void **state)
{
    static struct fx f;
    memset(&f, 0, sizeof(f));
    setup_d(&f.d);
    arena_init(&f.d.arena, 1 << 16);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(config_load_buffer("t.yaml", cfg_yaml, strlen(cfg_yaml), &f.cfg, &eb), 0);
    cluster(f.d.cache);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    teardown_d(&f->d);
    arena_fini(&f->d.arena);
    config_free(f->cfg);
    return 0;
}

/* The running gang of key (its kgang; *run: its running record). */
static const struct kgang *running(struct fx *f, const char *key, struct sched_running **run)
{
    for (uint32_t i = 0; i < f->kb.n_running; i++) {
        const struct kgang *kg = &f->kb.gangs[f->kb.running[i].gang->id];
        if (strcmp(kg->key, key) == 0) {
            if (run)
                *run = &f->kb.running[i];
            return kg;
        }
    }
    fail_msg("no running gang %s", key);
    return NULL;
}

/* The core chose key as a victim of ml/bp-0 at NOW (a reclaim): the record's eng_job_evict,
 * then the request (kdrv_ckpt_request), which must ask it; its status and Event name the kind
 * of the preemption and the preemptor, in the simulator's words (sched_eviction_format). */
static void ask(struct fx *f, const char *key)
{
    fx_build_at(f, NOW);
    const struct kgang *kg = running(f, key, NULL);
    assert_int_equal(eng_job_evict(f->d.eng, kdrv_gang_id(&f->d, key)), 0);
    struct sched_eviction ev = {.kind = SCHED_PREEMPT_RECLAIM};
    assert_true(kdrv_ckpt_request(&f->d, kg, running(f, "ml/bp-0", NULL), &ev, f->cfg, NOW));
    struct eng_job j = eng_job(f->d.eng, kdrv_gang_id(&f->d, key));
    assert_int_equal(j.ckpt_asked_ms, NOW);
    assert_int_equal(j.ckpt_until_ms, NOW + WAIT);
    const struct kstatus *st = strmap_get(&f->d.status, key);
    assert_non_null(st);
    assert_non_null(strstr(st->reason, "CheckpointRequested|reclaimed by ml/bp-0: asked to "));
}

/* ", requested and deadline" annotation members for a request at asked with deadline until
 * (until 0: none). */
static const char *req_ann(char *buf, size_t n, int64_t asked, int64_t until)
{
    char a[40], u[40];
    kobj_format_time(asked, a, sizeof(a));
    kobj_format_time(until, u, sizeof(u));
    snprintf(buf, n, ",\"gangsched.io/checkpoint-requested\":\"%s\"%s%s%s", a,
             until ? ",\"gangsched.io/checkpoint-deadline\":\"" : "", until ? u : "",
             until ? "\"" : "");
    return buf;
}

static bool owed_pod(const struct fx *f, const char *pod_key)
{
    return strmap_get(&f->d.owed_ckpt_pods, pod_key) != NULL;
}

static bool owed_pg(const struct fx *f, const char *key)
{
    return strmap_get(&f->d.owed_ckpt, key) != NULL;
}

/* Where each kind of gang is asked, and whether a victim is asked at all. */
static void where_each_gang_is_asked(void **state)
{
    struct fx *f = *state;
    fx_build_at(f, NOW);
    const char *pods[] = {"ml/solo", "ml/kq", "ml/wl:w", "ml/bp-0"};
    const char *pgs[] = {"ml/xg", "ml/ng"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(kdrv_ckpt_where(running(f, pods[i], NULL)), KDRV_CKPT_PODS);
        assert_true(kdrv_ckpt_asks(running(f, pods[i], NULL), f->cfg));
    }
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(kdrv_ckpt_where(running(f, pgs[i], NULL)), KDRV_CKPT_PODGROUP);
        assert_true(kdrv_ckpt_asks(running(f, pgs[i], NULL), f->cfg));
    }
    assert_non_null(running(f, "ml/wl:w", NULL)->pg); /* a Workload: pods all the same */
    /* no checkpointGrace: evicted at once, whatever the gang */
    struct config *none = NULL;
    struct sched_errbuf eb = {{0}};
    const char *y = "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\nqueues:\n"
                    "  - name: q\n";
    assert_int_equal(config_load_buffer("n.yaml", y, strlen(y), &none, &eb), 0);
    assert_false(kdrv_ckpt_asks(running(f, "ml/kq", NULL), none));
    assert_false(kdrv_ckpt_asks(running(f, "ml/xg", NULL), none));
    config_free(none);
}

/* The answer: the latest gangsched.io/last-checkpoint of the PodGroup and of every member. */
static void answer_read_from_podgroup_or_any_pod(void **state)
{
    struct fx *f = *state;
    struct sched_running *run;
    fx_build_at(f, NOW);
    running(f, "ml/kq", &run);
    assert_int_equal(run->last_checkpoint_ms, T0); /* none: the start */
    running(f, "ml/xg", &run);
    assert_int_equal(run->last_checkpoint_ms, T0 + 600000); /* its PodGroup's */
    /* the second member of the Kueue group answers; a pod of xg says later than its PodGroup */
    kueue_pods(f->d.cache, "", ",\"gangsched.io/last-checkpoint\":\"2026-01-01T00:20:00.5Z\"");
    pod(f->d.cache, "xg-0", "n1", ",\"scheduling.x-k8s.io/pod-group\":\"xg\"",
        ",\"gangsched.io/last-checkpoint\":\"2026-01-01T00:30:00Z\"", "");
    /* an unreadable time on a member is none */
    pod(f->d.cache, "solo", "n1", "", ",\"gangsched.io/last-checkpoint\":\"yesterday\"", "");
    fx_build_at(f, NOW);
    running(f, "ml/kq", &run);
    assert_int_equal(run->last_checkpoint_ms, T0 + 1200500);
    running(f, "ml/xg", &run);
    assert_int_equal(run->last_checkpoint_ms, T0 + 1800000);
    running(f, "ml/solo", &run);
    assert_int_equal(run->last_checkpoint_ms, T0);
    /* a member's earlier time does not hide its PodGroup's later one */
    pod(f->d.cache, "xg-0", "n1", ",\"scheduling.x-k8s.io/pod-group\":\"xg\"",
        ",\"gangsched.io/last-checkpoint\":\"2026-01-01T00:05:00Z\"", "");
    fx_build_at(f, NOW);
    running(f, "ml/xg", &run);
    assert_int_equal(run->last_checkpoint_ms, T0 + 600000);
}

/* A gang asked on its pods: one write owed per member, each done when the watch shows it on
 * that pod (the request and its deadline), the others still owed. */
static void request_written_on_every_pod(void **state)
{
    struct fx *f = *state;
    ask(f, "ml/kq");
    assert_true(owed_pod(f, "ml/kq-0"));
    assert_true(owed_pod(f, "ml/kq-1"));
    assert_false(owed_pg(f, "ml/kq"));
    char a[300];
    kueue_pods(f->d.cache, req_ann(a, sizeof(a), NOW, NOW + WAIT), "");
    kdrv_owed_status(&f->d, NOW + 3000);
    assert_false(owed_pod(f, "ml/kq-0"));
    assert_true(owed_pod(f, "ml/kq-1"));
    /* the request without its deadline is not the write owed */
    char b[300];
    kueue_pods(f->d.cache, req_ann(a, sizeof(a), NOW, NOW + WAIT), req_ann(b, sizeof(b), NOW, 0));
    kdrv_owed_status(&f->d, NOW + 6000);
    assert_true(owed_pod(f, "ml/kq-1"));
    kueue_pods(f->d.cache, "", req_ann(a, sizeof(a), NOW, NOW + WAIT));
    kdrv_owed_status(&f->d, NOW + 9000);
    assert_false(owed_pod(f, "ml/kq-1"));

    /* a gang of one and a Workload's pod group: their pods; PodGroups of their own: those */
    ask(f, "ml/solo");
    assert_true(owed_pod(f, "ml/solo"));
    assert_false(owed_pg(f, "ml/solo"));
    ask(f, "ml/wl:w");
    assert_true(owed_pod(f, "ml/wl-0"));
    assert_false(owed_pg(f, "ml/wl:w"));
    ask(f, "ml/xg");
    assert_true(owed_pg(f, "ml/xg"));
    assert_false(owed_pod(f, "ml/xg-0"));
    ask(f, "ml/ng");
    assert_true(owed_pg(f, "ml/ng"));
    assert_false(owed_pod(f, "ml/ng-0"));
    /* the native PodGroup shows it: done */
    native_pg(f->d.cache, req_ann(a, sizeof(a), NOW, NOW + WAIT));
    kdrv_owed_status(&f->d, NOW + 3000);
    assert_false(owed_pg(f, "ml/ng"));
    assert_true(owed_pg(f, "ml/xg"));
}

/* Each cycle's step: the victim waits until a member's last checkpoint is after the request
 * (then evicted: the handshake over long before the deadline), or until the deadline. */
static void answer_on_one_pod_evicts(void **state)
{
    struct fx *f = *state;
    ask(f, "ml/kq");
    f->d.ckpt_resumed = true; /* not the first cycle as leader */
    uint32_t g = kdrv_gang_id(&f->d, "ml/kq");
    struct sched_running *run;
    /* a checkpoint at the request itself is no answer */
    kueue_pods(f->d.cache, ",\"gangsched.io/last-checkpoint\":\"2026-01-01T01:00:00Z\"", "");
    fx_build_at(f, NOW + 1000);
    kdrv_ckpt_step(&f->d, &f->kb, NOW + 1000);
    running(f, "ml/kq", &run);
    assert_true(run->evicting); /* the core picks it no more */
    assert_int_equal(eng_job(f->d.eng, g).ckpt_until_ms, NOW + WAIT);
    /* the second member answers: over (evicted), 2 s after the request */
    kueue_pods(f->d.cache, "", ",\"gangsched.io/last-checkpoint\":\"2026-01-01T01:00:01.5Z\"");
    fx_build_at(f, NOW + 2000);
    kdrv_ckpt_step(&f->d, &f->kb, NOW + 2000);
    running(f, "ml/kq", &run);
    assert_true(run->evicting);
    assert_int_equal(eng_job(f->d.eng, g).ckpt_until_ms, 0);
    assert_int_equal(eng_job(f->d.eng, g).state, ENG_JOB_TEARING);

    /* a gang of one that never answers: evicted at the deadline, not before */
    ask(f, "ml/solo");
    uint32_t s = kdrv_gang_id(&f->d, "ml/solo");
    fx_build_at(f, NOW + WAIT - 1);
    kdrv_ckpt_step(&f->d, &f->kb, NOW + WAIT - 1);
    assert_int_equal(eng_job(f->d.eng, s).ckpt_until_ms, NOW + WAIT);
    fx_build_at(f, NOW + WAIT);
    kdrv_ckpt_step(&f->d, &f->kb, NOW + WAIT);
    assert_int_equal(eng_job(f->d.eng, s).ckpt_until_ms, 0);
}

/* A new process (a fresh engine and owed writes; the cache as the API shows it): the handshake
 * of a gang asked on its pods resumes from the member that shows the request (the other gets it
 * again), and a native PodGroup's from the PodGroup. */
static void resumed_from_pods_and_native_podgroup(void **state)
{
    struct fx *f = *state;
    char a[300], b[300];
    int64_t asked = NOW - 20000; /* the previous process asked 20 s ago */
    kueue_pods(f->d.cache, req_ann(a, sizeof(a), asked, asked + WAIT), "");
    native_pg(f->d.cache, req_ann(b, sizeof(b), asked, asked + WAIT));
    /* a request older than the run (a previous run's) is not resumed */
    pod(f->d.cache, "solo", "n1", "", req_ann(a, sizeof(a), T0 - 5000, T0 + 55000), "");
    fx_build_at(f, NOW);
    kdrv_ckpt_step(&f->d, &f->kb, NOW);
    struct eng_job j = eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/kq"));
    assert_int_equal(j.state, ENG_JOB_TEARING);
    assert_int_equal(j.ckpt_asked_ms, asked);
    assert_int_equal(j.ckpt_until_ms, asked + WAIT);
    assert_false(owed_pod(f, "ml/kq-0")); /* it shows it */
    assert_true(owed_pod(f, "ml/kq-1"));  /* written again */
    j = eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/ng"));
    assert_int_equal(j.ckpt_asked_ms, asked);
    assert_int_equal(j.ckpt_until_ms, asked + WAIT);
    assert_false(owed_pg(f, "ml/ng"));
    assert_int_equal(eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/solo")).ckpt_until_ms, 0);
    assert_int_equal(eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/xg")).ckpt_until_ms, 0);
    /* later cycles read no request; the answer on the member that was written again counts */
    kueue_pods(f->d.cache, req_ann(a, sizeof(a), asked, asked + WAIT),
               ",\"gangsched.io/last-checkpoint\":\"2026-01-01T00:59:45Z\"");
    fx_build_at(f, NOW + 1000);
    kdrv_ckpt_step(&f->d, &f->kb, NOW + 1000);
    assert_int_equal(eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/kq")).ckpt_until_ms, 0);
    assert_int_equal(eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/ng")).ckpt_until_ms, asked + WAIT);
}

/* A deadline edited by hand beyond the queue's grace is cut to it, and every member then gets
 * that deadline (none shows it). */
static void resumed_deadline_cut_to_grace(void **state)
{
    struct fx *f = *state;
    char a[300];
    int64_t asked = NOW - 20000;
    kueue_pods(f->d.cache, req_ann(a, sizeof(a), asked, asked + 10 * WAIT), "");
    fx_build_at(f, NOW);
    kdrv_ckpt_step(&f->d, &f->kb, NOW);
    assert_int_equal(eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/kq")).ckpt_until_ms, asked + WAIT);
    assert_true(owed_pod(f, "ml/kq-0"));
    assert_true(owed_pod(f, "ml/kq-1"));
}

/* A request the previous process made to members of an elastic gang it would evict alone (its
 * preemption row has members, driver_shrink.c) is not resumed as a whole victim's: the gang runs
 * on whole, its preemptor plans again. Before, a new process evicted the whole gang at the
 * deadline. */
static void member_request_not_resumed(void **state)
{
    struct fx *f = *state;
    char dir[128], path[160], b[300];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%.60s/kckptXXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/g.db", dir);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(path, STORE_CREATE, NULL, &f->d.db, &eb), 0);
    int64_t asked = NOW - 20000;
    struct store_preemption p = {1, asked, "ml/ng", "ml/bp-0", 1, 10.0, 10.0, "priority", 1};
    assert_int_equal(store_preemption_add(f->d.db, &p, &eb), 0);
    native_pg(f->d.cache, req_ann(b, sizeof(b), asked, asked + WAIT));
    fx_build_at(f, NOW);
    kdrv_ckpt_step(&f->d, &f->kb, NOW);
    struct eng_job j = eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/ng"));
    assert_int_not_equal(j.state, ENG_JOB_TEARING);
    assert_int_equal(j.ckpt_until_ms, 0);
    /* the same request after a whole-gang row: resumed (resumed_from_pods_and_native_podgroup) */
    p.members = 0;
    p.ts_ms = asked - 1;
    assert_int_equal(store_preemption_add(f->d.db, &p, &eb), 0);
    f->d.ckpt_resumed = false;
    kdrv_ckpt_step(&f->d, &f->kb, NOW);
    assert_int_equal(eng_job(f->d.eng, kdrv_gang_id(&f->d, "ml/ng")).ckpt_until_ms, asked + WAIT);
    store_close(f->d.db);
    f->d.db = NULL;
    unlink(path);
    rmdir(dir);
}

/* The pending member gang of running gang key (NULL: none). */
static const struct kgang *joining_kg(struct fx *f, const char *key)
{
    for (uint32_t i = 0; i < f->kb.n_pending; i++)
        if (f->kb.gangs[i].run && strcmp(f->kb.gangs[i].run->key, key) == 0)
            return &f->kb.gangs[i];
    return NULL;
}

static const struct gang *joining(struct fx *f, const char *key)
{
    const struct kgang *kg = joining_kg(f, key);
    return kg ? &kg->gang : NULL;
}

/* The PodGroup ml/el of an elastic gang that checkpoints every hour, last at 00:10; ann: more
 * of its annotations. */
static void el_podgroup_min(struct fx *f, const char *ann, int min_member)
{
    char buf[1000];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
             "\"metadata\":{\"namespace\":\"ml\",\"name\":\"el\",\"uid\":\"pg-el\","
             "\"annotations\":{\"gangsched.io/checkpoint-interval\":\"1h\","
             "\"gangsched.io/last-checkpoint\":\"2026-01-01T00:10:00Z\"%s}},"
             "\"spec\":{\"minMember\":%d}}",
             ann, min_member);
    fx_event(f->d.cache, 2, KPG_XK8S, buf);
}

static void el_podgroup(struct fx *f, const char *ann)
{
    el_podgroup_min(f, ann, 1);
}

/* Members of an elastic training gang that says how often it checkpoints join after a
 * checkpoint, counted from its last checkpoint, or from the restart its workers made when
 * members were evicted alone since then (d->restarts, driver_shrink.c); a restart of a gang
 * that no longer runs is forgotten. */
static void join_counts_from_restart(void **state)
{
    struct fx *f = *state;
    el_podgroup(f, "");
    pod(f->d.cache, "el-0", "n1", ",\"scheduling.x-k8s.io/pod-group\":\"el\"", "", "");
    pod(f->d.cache, "el-1", "", ",\"scheduling.x-k8s.io/pod-group\":\"el\"", "", "");
    fx_build_at(f, NOW);
    const struct gang *g = joining(f, "ml/el");
    assert_non_null(g);
    assert_int_equal(g->join_every_ms, 3600000);
    assert_int_equal(g->join_from_ms, T0 + 600000); /* its last checkpoint */
    int64_t *t = malloc(sizeof(*t)), *u = malloc(sizeof(*u));
    assert_true(t && u);
    *t = T0 + 1800000; /* members evicted at 00:30: its workers restarted then */
    *u = T0;
    assert_int_equal(strmap_put(&f->d.restarts, "ml/el", t, NULL), 0);
    assert_int_equal(strmap_put(&f->d.restarts, "ml/gone", u, NULL), 0);
    kdrv_shrink_step(&f->d, &f->kb, NOW);
    assert_int_equal(joining(f, "ml/el")->join_from_ms, T0 + 1800000);
    assert_null(strmap_get(&f->d.restarts, "ml/gone"));
    assert_non_null(strmap_get(&f->d.restarts, "ml/el"));
    /* a checkpoint after the restart counts */
    *t = T0 + 300000;
    fx_build_at(f, NOW);
    kdrv_shrink_step(&f->d, &f->kb, NOW);
    assert_int_equal(joining(f, "ml/el")->join_from_ms, T0 + 600000);
}

/* New members the core says ask their gang for a checkpoint (sched_verdict.ask_checkpoint,
 * kdrv_join_ask): the request alone on its PodGroup, owed until the watch shows it; the
 * members know it (gang.join_asked_ms: the core does not ask again while it is open), from the
 * owed write and then from the annotation. Before, they waited for the gang's own checkpoint. */
static void join_asks_for_a_checkpoint(void **state)
{
    struct fx *f = *state;
    el_podgroup(f, "");
    pod(f->d.cache, "el-0", "n1", ",\"scheduling.x-k8s.io/pod-group\":\"el\"", "", "");
    pod(f->d.cache, "el-1", "", ",\"scheduling.x-k8s.io/pod-group\":\"el\"", "", "");
    fx_build_at(f, NOW);
    kdrv_shrink_step(&f->d, &f->kb, NOW);
    assert_int_equal(joining(f, "ml/el")->join_asked_ms, 0);
    assert_non_null(joining_kg(f, "ml/el"));
    kdrv_join_ask(&f->d, joining_kg(f, "ml/el"), NOW);
    assert_true(owed_pg(f, "ml/el"));
    assert_false(owed_pod(f, "ml/el-0"));
    fx_build_at(f, NOW + 1000);
    kdrv_shrink_step(&f->d, &f->kb, NOW + 1000);
    assert_int_equal(joining(f, "ml/el")->join_asked_ms, NOW); /* owed, not seen yet */
    char a[300];
    el_podgroup(f, req_ann(a, sizeof(a), NOW, 0)); /* the watch shows it */
    kdrv_owed_status(&f->d, NOW + 3000);
    assert_false(owed_pg(f, "ml/el"));
    fx_build_at(f, NOW + 3000);
    kdrv_shrink_step(&f->d, &f->kb, NOW + 3000);
    assert_int_equal(joining(f, "ml/el")->join_asked_ms, NOW);
    /* a gang being evicted is not asked for its members */
    assert_int_equal(eng_job_evict(f->d.eng, kdrv_gang_id(&f->d, "ml/el")), 0);
    kdrv_join_ask(&f->d, joining_kg(f, "ml/el"), NOW + 4000);
    assert_false(owed_pg(f, "ml/el"));
}

/* The ledger row of queue q (nvidia.com/gpu, flavor default), which `gangsched store check`
 * wants equal to the GPUs of its running job rows. */
static int64_t ledger_q(struct fx *f)
{
    struct sched_errbuf eb = {{0}};
    int64_t amount = -1;
    assert_int_equal(store_ledger_get(f->d.db, "q", "default", "nvidia.com/gpu", &amount, &eb), 0);
    return amount;
}

static int64_t job_gpus(struct fx *f, const char *key)
{
    struct store_job j;
    assert_int_equal(store_job_get(f->d.db, key, &j, NULL), 0);
    assert_int_equal(j.state, STORE_JOB_RUNNING);
    return j.gpus;
}

/* One cycle's record with no decision (sync_jobs: the running gangs charged and adopted). */
static void record_at(struct fx *f, int64_t now)
{
    struct sched_errbuf eb = {{0}};
    struct sched_result res = {0};
    fx_build_at(f, now);
    assert_int_equal(kdrv_record_cycle(&f->d, &f->kb, &res, f->cfg, now, &eb), 0);
}

/* A fresh database for f->d in a temporary directory dir (its path in path), and its end. */
static void temp_db(struct fx *f, char *dir, size_t n_dir, char *path, size_t n_path)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, n_dir, "%.60s/kdbXXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(path, n_path, "%s/g.db", dir);
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(path, STORE_CREATE, NULL, &f->d.db, &eb), 0);
}

static void temp_db_end(struct fx *f, const char *dir, const char *path)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&f->d.jobs, &i, &k, &v);)
        kdrv_kjob_free(v);
    strmap_fini(&f->d.jobs);
    store_close(f->d.db);
    f->d.db = NULL;
    unlink(path);
    rmdir(dir);
}

/* Deletes pod ml/name from the cache (its watch's DELETED event). */
static void pod_gone(struct fx *f, const char *name)
{
    char buf[300];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"%s\",\"uid\":\"u-%s\","
             "\"resourceVersion\":\"9999\"}}",
             name, name);
    cJSON *obj = cJSON_Parse(buf);
    assert_non_null(obj);
    assert_int_equal(kcache_pod_event(f->d.cache, obj, true), 0);
    cJSON_Delete(obj);
}

/* Members of an elastic gang that leave while it runs on (deleted by someone else, or evicted
 * by an earlier leader whose evictions land after its successor adopted the gang whole): its
 * job row and its ledger charge both follow them. Before, the row did and the ledger kept the
 * members' GPUs until the gang ended (found by tests/kube/crash_preempt.py: store check's
 * "ledger mismatch"). */
static void ledger_follows_members_that_leave(void **state)
{
    struct fx *f = *state;
    char dir[128], path[160];
    temp_db(f, dir, sizeof(dir), path, sizeof(path));
    el_podgroup(f, "");
    const char *lab = ",\"scheduling.x-k8s.io/pod-group\":\"el\"";
    pod(f->d.cache, "el-0", "n1", lab, "", "");
    pod(f->d.cache, "el-1", "n1", lab, "", "");
    pod(f->d.cache, "el-2", "n2", lab, "", "");
    record_at(f, NOW);
    int64_t others = ledger_q(f) - 3; /* the fixture's other running gangs, every one adopted */
    assert_int_equal(job_gpus(f, "ml/el"), 3);
    pod_gone(f, "el-2");
    record_at(f, NOW + 1000);
    assert_int_equal(job_gpus(f, "ml/el"), 2);
    assert_int_equal(ledger_q(f), others + 2);
    record_at(f, NOW + 2000); /* and it stays so */
    assert_int_equal(ledger_q(f), others + 2);
    temp_db_end(f, dir, path);
}

struct count_ctx {
    const char *gang;
    int n;
};

static int count_placed(void *ctx, const struct store_placement *p)
{
    struct count_ctx *c = ctx;
    c->n += strcmp(p->gang, c->gang) == 0;
    return 0;
}

/* The placed pods of gang key in the store (each pod one GPU here). */
static int placed(struct fx *f, const char *key)
{
    struct count_ctx c = {.gang = key};
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_placement_list(f->d.db, count_placed, &c, &eb), 0);
    return c.n;
}

/* The driver forgets its charged jobs, as a new leader on the same database starts. */
static void new_leader(struct fx *f)
{
    const char *k;
    void *v;
    for (size_t i = 0; strmap_next(&f->d.jobs, &i, &k, &v);)
        kdrv_kjob_free(v);
    strmap_fini(&f->d.jobs);
    strmap_init(&f->d.jobs);
    f->d.jobs_synced = false;
}

#define EL_LABEL ",\"scheduling.x-k8s.io/pod-group\":\"el\""

/* On a temporary database (temp_db), the elastic gang ml/el running n pods of 1 GPU, two on
 * n1, the others on n2, recorded at NOW. Returns a configuration whose queue has no
 * checkpointGrace (members evicted alone at once), for config_free. */
static struct config *el_running(struct fx *f, char *dir, size_t dir_cap, char *path,
                                 size_t path_cap, int n)
{
    temp_db(f, dir, dir_cap, path, path_cap);
    el_podgroup(f, "");
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof(name), "el-%d", i);
        pod(f->d.cache, name, i < 2 ? "n1" : "n2", EL_LABEL, "", "");
    }
    record_at(f, NOW);
    struct config *none = NULL;
    struct sched_errbuf eb = {{0}};
    const char *y = "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\nqueues:\n"
                    "  - name: q\n";
    assert_int_equal(config_load_buffer("n.yaml", y, strlen(y), &none, &eb), 0);
    return none;
}

/* Members of an elastic gang evicted alone: its placed pods become those it keeps in the same
 * transaction as its job row and charge, at once (no checkpointGrace) or when the handshake
 * ends, not a cycle after the evicted pods are gone (store check in between found "running
 * job: 3 GPUs, but its 4 placed pods hold 4"). */
static void placed_pods_follow_a_shrink(void **state)
{
    struct fx *f = *state;
    char dir[128], path[160];
    struct sched_errbuf eb = {{0}};
    struct config *none = el_running(f, dir, sizeof(dir), path, sizeof(path), 4);
    const char *lab = EL_LABEL;
    assert_int_equal(job_gpus(f, "ml/el"), 4);
    assert_int_equal(placed(f, "ml/el"), 4);
    int64_t others = ledger_q(f) - 4; /* the fixture's other running gangs */
    struct sched_running *run = NULL;
    const struct kgang *kg = NULL;
    char last_name[64], last_node[16]; /* the evicted member (kg is rebuilt below) */
    /* then a new leader on this database while the member is still there, live (its eviction
     * lost) or being deleted: the gang's row, placed pods and charge are its members again, 4
     * GPUs, and follow the member when it goes although its placed pod was gone already
     * (before, the new leader charged 4 against a row of 3: store check's "ledger mismatch") */
    for (int dying = 0; dying < 2; dying++) {
        fx_build_at(f, NOW + 1000 + dying);
        kg = running(f, "ml/el", &run);
        uint32_t last = kg->gang.n_pods - 1, gone[] = {last};
        snprintf(last_name, sizeof(last_name), "%s", kg->members[last]->name);
        snprintf(last_node, sizeof(last_node), "%s", kg->members[last]->node);
        struct sched_eviction ev = {
            .victim = run, .preemptor = &f->kb.gangs[0].gang, .gpus = 1, .pods = gone, .n_pods = 1};
        struct sched_result res = {.evictions = &ev, .n_evictions = 1};
        assert_int_equal(kdrv_record_cycle(&f->d, &f->kb, &res, none, NOW + 1000 + dying, &eb), 0);
        assert_int_equal(job_gpus(f, "ml/el"), 3);
        assert_int_equal(placed(f, "ml/el"), 3);
        if (dying)
            pod_meta(f->d.cache, last_name, last_node, lab, "", "",
                     ",\"deletionTimestamp\":\"2026-01-01T01:00:00Z\"");
        new_leader(f);
        record_at(f, NOW + 1500 + dying);
        assert_int_equal(ledger_q(f), others + 4);
        assert_int_equal(job_gpus(f, "ml/el"), 4);
        assert_int_equal(placed(f, "ml/el"), 4);
    }
    pod_gone(f, last_name); /* the evicted member goes */
    record_at(f, NOW + 1800);
    assert_int_equal(ledger_q(f), others + 3);
    assert_int_equal(job_gpus(f, "ml/el"), 3);
    /* after a handshake (the fixture's queue asks): evicted when it ends */
    fx_build_at(f, NOW + 2000);
    kg = running(f, "ml/el", &run);
    uint32_t first[] = {0};
    struct sched_eviction ev = {
        .victim = run, .preemptor = &f->kb.gangs[0].gang, .gpus = 1, .pods = first, .n_pods = 1};
    kdrv_shrink(&f->d, &f->kb, &ev, f->cfg, NOW + 2000);
    assert_int_equal(job_gpus(f, "ml/el"), 3); /* charged whole during the handshake */
    fx_build_at(f, NOW + 2000 + WAIT);
    kdrv_shrink_step(&f->d, &f->kb, NOW + 2000 + WAIT); /* the deadline: evicted */
    assert_int_equal(job_gpus(f, "ml/el"), 2);
    assert_int_equal(placed(f, "ml/el"), 2);
    config_free(none);
    temp_db_end(f, dir, path);
}

/* A member handshake goes on while the gang loses other members (lost with their node and
 * replaced, say) as long as the members asked for can still leave with it keeping its
 * minMember; once they cannot, it is dropped at once and nobody leaves. Before, the member was
 * evicted at the deadline whatever the gang had lost: it ran below its minMember (found by a
 * differential scenario, a node failing during the handshake). */
static void member_handshake_keeps_min_member(void **state)
{
    struct fx *f = *state;
    char dir[128], path[160];
    struct config *none = el_running(f, dir, sizeof(dir), path, sizeof(path), 5);
    el_podgroup_min(f, "", 3);
    record_at(f, NOW + 500);
    struct sched_running *run = NULL;
    fx_build_at(f, NOW + 1000);
    const struct kgang *kg = running(f, "ml/el", &run);
    assert_int_equal(kg->gang.min_member, 3);
    uint32_t first[] = {0}; /* el-0, on n1 */
    struct sched_eviction ev = {
        .victim = run, .preemptor = &f->kb.gangs[0].gang, .gpus = 1, .pods = first, .n_pods = 1};
    kdrv_shrink(&f->d, &f->kb, &ev, f->cfg, NOW + 1000);
    assert_non_null(strmap_get(&f->d.shrinks, "ml/el"));
    /* el-4 goes: 4 run, el-0 may still leave (3 = minMember): the handshake goes on */
    pod_gone(f, "el-4");
    fx_build_at(f, NOW + 2000);
    running(f, "ml/el", &run);
    kdrv_shrink_step(&f->d, &f->kb, NOW + 2000);
    assert_true(run->evicting);
    assert_non_null(strmap_get(&f->d.shrinks, "ml/el"));
    /* el-3 goes too: 3 run, el-0 cannot leave: dropped now, before the deadline */
    pod_gone(f, "el-3");
    record_at(f, NOW + 3000);
    assert_int_equal(job_gpus(f, "ml/el"), 3);
    fx_build_at(f, NOW + 3000);
    running(f, "ml/el", &run);
    kdrv_shrink_step(&f->d, &f->kb, NOW + 3000);
    assert_false(run->evicting);
    assert_null(strmap_get(&f->d.shrinks, "ml/el"));
    fx_build_at(f, NOW + 1000 + WAIT); /* the deadline passes: still 3 */
    kdrv_shrink_step(&f->d, &f->kb, NOW + 1000 + WAIT);
    assert_int_equal(job_gpus(f, "ml/el"), 3);
    assert_int_equal(placed(f, "ml/el"), 3);
    config_free(none);
    temp_db_end(f, dir, path);
}

/* The restart an elastic gang's workers made when members were evicted alone is kept on its job
 * row (schema version 9): a new process on the same database counts its new members' join from
 * it, as the one that evicted them did. Before, it was in memory only, and a new process
 * counted from the checkpoint before (00:10 here, instead of the restart at 01:00). */
static void restart_kept_for_a_new_leader(void **state)
{
    struct fx *f = *state;
    char dir[128], path[160];
    struct config *none = el_running(f, dir, sizeof(dir), path, sizeof(path), 3);
    const char *lab = EL_LABEL;
    fx_build_at(f, NOW + 1000);
    struct sched_running *run = NULL;
    running(f, "ml/el", &run);
    uint32_t gone[] = {2};
    struct sched_eviction ev = {
        .victim = run, .preemptor = &f->kb.gangs[0].gang, .gpus = 1, .pods = gone, .n_pods = 1};
    kdrv_shrink(&f->d, &f->kb, &ev, none, NOW + 1000);
    const int64_t *t = strmap_get(&f->d.restarts, "ml/el");
    assert_true(t && *t == NOW + 1000);
    /* a new process: nothing in memory; a new member waits to join */
    kdrv_shrink_fini(&f->d);
    strmap_init(&f->d.shrinks);
    strmap_init(&f->d.restarts);
    f->d.restarts_restored = false;
    pod(f->d.cache, "el-3", "", lab, "", "");
    fx_build_at(f, NOW + 2000);
    kdrv_shrink_step(&f->d, &f->kb, NOW + 2000);
    assert_non_null(joining(f, "ml/el"));
    assert_int_equal(joining(f, "ml/el")->join_from_ms, NOW + 1000);
    config_free(none);
    temp_db_end(f, dir, path);
}

/* The operator's request (no deadline): on a PodGroup of its own, else on the running members. */
static void operator_request(void **state)
{
    struct fx *f = *state;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kdrv_ckpt_operator(&f->d, "ml/kq", &eb), 0);
    assert_true(owed_pod(f, "ml/kq-0") && owed_pod(f, "ml/kq-1"));
    assert_int_equal(kdrv_ckpt_operator(&f->d, "ml/ng", &eb), 0);
    assert_true(owed_pg(f, "ml/ng"));
    assert_int_equal(kdrv_ckpt_operator(&f->d, "ml/solo", &eb), 0);
    assert_true(owed_pod(f, "ml/solo"));
    assert_int_equal(kdrv_ckpt_operator(&f->d, "ml/nothing", &eb), SCHED_ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(where_each_gang_is_asked, setup, teardown),
        cmocka_unit_test_setup_teardown(answer_read_from_podgroup_or_any_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(request_written_on_every_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(answer_on_one_pod_evicts, setup, teardown),
        cmocka_unit_test_setup_teardown(resumed_from_pods_and_native_podgroup, setup, teardown),
        cmocka_unit_test_setup_teardown(resumed_deadline_cut_to_grace, setup, teardown),
        cmocka_unit_test_setup_teardown(operator_request, setup, teardown),
        cmocka_unit_test_setup_teardown(join_counts_from_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(join_asks_for_a_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(member_request_not_resumed, setup, teardown),
        cmocka_unit_test_setup_teardown(placed_pods_follow_a_shrink, setup, teardown),
        cmocka_unit_test_setup_teardown(ledger_follows_members_that_leave, setup, teardown),
        cmocka_unit_test_setup_teardown(member_handshake_keeps_min_member, setup, teardown),
        cmocka_unit_test_setup_teardown(restart_kept_for_a_new_leader, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
