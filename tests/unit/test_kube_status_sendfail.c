/* tests/unit/test_kube_status_sendfail.c: a gang's status writes that cannot even be queued
 * (here: no client, the path a lack of memory takes; sched/kube/driver_status.c) are never
 * taken for written: a PodGroup's status (scheduler-plugins, Volcano, a native False condition)
 * is owed and written again by a cycle a second later, at most KDRV_OWED_TRIES times, until a
 * newer status replaces it or its PodGroup is gone; a pod's PodScheduled condition gets a cycle
 * a second later that sends it again; an Event is dropped with a warning naming it (as a
 * refused one is); a PodGroup's member counts stay due (driver_counts.c). No API server: every
 * send fails to queue. */
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

static void obj_event(struct kdrv *d, enum kpg_api api, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    if (api == KPG_N_API)
        assert_int_equal(kcache_pod_event(d->cache, o, false), 0);
    else
        assert_int_equal(kcache_pg_event(d->cache, o, api, false), 0);
    cJSON_Delete(o);
}

/* Whether a cycle is due within a second or so of the real clock. */
static bool retry_armed(const struct kdrv *d, int64_t before)
{
    return d->later_ms != INT64_MAX && d->later_ms >= before + 1000 &&
           d->later_ms <= kdrv_now_ms() + 1000;
}

static const char *const xk8s_pg =
    "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":{"
    "\"namespace\":\"ml\",\"name\":\"v\",\"uid\":\"%s\"},\"spec\":{\"minMember\":1}}";

/* A scheduler-plugins PodGroup's Running status not queued: owed, written again by the next
 * cycles until given up; a newer status replaces it; a PodGroup created again under the name
 * is another (the owed status is dropped). */
static void xk8s_status_owed(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    char buf[600];
    snprintf(buf, sizeof(buf), xk8s_pg, "pg-v");
    obj_event(&d, KPG_XK8S, buf);
    int64_t t0 = kdrv_now_ms();
    assert_true(kdrv_gang_status(&d, "ml/v", kcache_pg(d.cache, "ml/v"), "Running", "Normal",
                                 "Scheduled", "placed", true));
    assert_true(retry_armed(&d, t0));
    assert_non_null(strmap_get(&d.owed_status, "ml/v"));
    /* not due yet: nothing sent, the timer stays */
    d.later_ms = INT64_MAX;
    kdrv_owed_status(&d, t0);
    assert_true(d.later_ms != INT64_MAX);
    int64_t now = t0; /* KDRV_OWED_TRIES writes in all: the first, then one per due cycle */
    for (int k = 2; k < KDRV_OWED_TRIES; k++) {
        d.later_ms = INT64_MAX;
        now += 60000;
        int64_t before = kdrv_now_ms();
        kdrv_owed_status(&d, now);
        assert_true(retry_armed(&d, before));
        assert_non_null(strmap_get(&d.owed_status, "ml/v"));
    }
    d.later_ms = INT64_MAX;
    kdrv_owed_status(&d, now + 60000);
    assert_true(d.later_ms == INT64_MAX); /* given up */
    assert_null(strmap_get(&d.owed_status, "ml/v"));

    /* owed again; a newer status of the gang replaces it */
    kdrv_gang_status(&d, "ml/v", kcache_pg(d.cache, "ml/v"), "Pending", "Warning", "Unschedulable",
                     "no room", true);
    kdrv_gang_status(&d, "ml/v", kcache_pg(d.cache, "ml/v"), "Pending", "Warning", "FailedBinding",
                     "bind refused", true);
    const struct kstatus *st = strmap_get(&d.status, "ml/v");
    assert_non_null(st);
    assert_non_null(strmap_get(&d.owed_status, "ml/v"));
    /* the PodGroup is deleted and created again under the name: the owed status was the old
     * one's */
    snprintf(buf, sizeof(buf), xk8s_pg, "pg-v2");
    obj_event(&d, KPG_XK8S, buf);
    d.later_ms = INT64_MAX;
    kdrv_owed_status(&d, kdrv_now_ms() + 60000);
    assert_true(d.later_ms == INT64_MAX);
    assert_null(strmap_get(&d.owed_status, "ml/v"));
    teardown_d(&d);
}

/* Volcano's PUT and a native PodGroup's False condition: owed in the same way. */
static void volcano_and_native_status_owed(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    obj_event(&d, KPG_VOLCANO,
              "{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":\"PodGroup\","
              "\"metadata\":{\"namespace\":\"ml\",\"name\":\"vc\",\"uid\":\"pg-vc\"},"
              "\"spec\":{\"minMember\":2}}");
    obj_event(&d, KPG_NATIVE_V1BETA1,
              "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
              "\"namespace\":\"ml\",\"name\":\"g\",\"uid\":\"pg-g\",\"generation\":1},\"spec\":{"
              "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}}}}");
    int64_t t0 = kdrv_now_ms();
    assert_true(kdrv_gang_status(&d, "ml/vc", kcache_pg(d.cache, "ml/vc"), "Pending", "Warning",
                                 "Unschedulable", "no room", false));
    assert_true(retry_armed(&d, t0));
    assert_non_null(strmap_get(&d.owed_status, "ml/vc"));
    d.later_ms = INT64_MAX;
    t0 = kdrv_now_ms();
    assert_true(kdrv_gang_status(&d, "ml/g", kcache_pg(d.cache, "ml/g"), "Pending", "Warning",
                                 "Unschedulable", "no room", false));
    assert_true(retry_armed(&d, t0));
    assert_non_null(strmap_get(&d.owed_status, "ml/g"));
    /* the PodGroups are gone: nothing is owed any more */
    cJSON *o = cJSON_Parse("{\"apiVersion\":\"scheduling.volcano.sh/v1beta1\",\"kind\":"
                           "\"PodGroup\",\"metadata\":{\"namespace\":\"ml\",\"name\":\"vc\","
                           "\"uid\":\"pg-vc\"}}");
    assert_non_null(o);
    assert_int_equal(kcache_pg_event(d.cache, o, KPG_VOLCANO, true), 0);
    cJSON_Delete(o);
    d.later_ms = INT64_MAX;
    kdrv_owed_status(&d, kdrv_now_ms() + 60000);
    assert_null(strmap_get(&d.owed_status, "ml/vc"));
    assert_non_null(strmap_get(&d.owed_status, "ml/g")); /* not queued again */
    teardown_d(&d);
}

/* A PodGroup's member counts (driver_counts.c) that cannot be queued are not taken for
 * written: the group stays to be written at the next cycle; counts equal to what the PodGroup
 * shows are done with at once, without a write. */
static void member_counts_not_queued_stay_due(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    obj_event(&d, KPG_XK8S,
              "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"g\",\"uid\":\"pg-g\"},"
              "\"spec\":{\"minMember\":2},\"status\":{\"running\":1}}");
    for (int k = 0; k < 2; k++) {
        char buf[600];
        snprintf(buf, sizeof(buf),
                 "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"g-%d\",\"uid\":\"u%d\","
                 "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"g\"}},\"spec\":{"
                 "\"schedulerName\":\"gangsched\",\"nodeName\":\"n1\",\"containers\":[{"
                 "\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\"}}",
                 k, k);
        obj_event(&d, KPG_N_API, buf);
    }
    const struct kcounts *k = kcache_counts(d.cache, "ml/g");
    assert_non_null(k);
    assert_int_equal(k->n[KPOD_RUNNING - 1], 2);
    kdrv_counts_step(&d, kdrv_now_ms());
    assert_true(k->dirty); /* running 2 against the PodGroup's 1: not queued, still due */
    assert_int_equal(k->written_ms, 0);
    obj_event(&d, KPG_XK8S,
              "{\"metadata\":{\"namespace\":\"ml\",\"name\":\"g\",\"uid\":\"pg-g\"},"
              "\"spec\":{\"minMember\":2},\"status\":{\"running\":2}}");
    kdrv_counts_step(&d, kdrv_now_ms());
    assert_false(k->dirty); /* what it shows now: done with, nothing to write */
    assert_int_equal(k->written_ms, 0);
    teardown_d(&d);
}

/* A pending pod without the condition: its patch is not queued, a cycle a second later sends
 * it again (nothing else would run one). */
static void pod_condition_not_queued_cycle_armed(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    obj_event(&d, KPG_N_API,
              "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"ml\","
              "\"name\":\"p\",\"uid\":\"u-p\"},\"spec\":{\"schedulerName\":\"gangsched\","
              "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Pending\"}}");
    struct kpod *p = (struct kpod *)kcache_pod(d.cache, "ml/p");
    assert_non_null(p);
    int64_t t0 = kdrv_now_ms();
    kdrv_pods_unschedulable(&d, &p, 1, false, "Unschedulable", "no room");
    assert_true(retry_armed(&d, t0));
    teardown_d(&d);
}

/* An Event that cannot be queued is dropped with a warning that names it (stderr captured). */
static void event_not_queued_logged(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    const char *tmp = getenv("TMPDIR");
    char path[400];
    snprintf(path, sizeof(path), "%s/gs-evlog-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    kdrv_post_event(&d, "v1", "Node", NULL, "n7", "u-n7", "Warning", "NodeQuarantined",
                    "Scheduling", "3 start failures", NULL);
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    char log[4096] = {0};
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    ssize_t n = read(fd, log, sizeof(log) - 1);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    assert_non_null(strstr(log, "event dropped"));
    assert_non_null(strstr(log, "reason=NodeQuarantined"));
    assert_non_null(strstr(log, "Node=n7"));
    teardown_d(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(member_counts_not_queued_stay_due),
        cmocka_unit_test(xk8s_status_owed),
        cmocka_unit_test(volcano_and_native_status_owed),
        cmocka_unit_test(pod_condition_not_queued_cycle_armed),
        cmocka_unit_test(event_not_queued_logged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
