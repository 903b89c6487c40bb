/* tests/unit/test_kube_sendfail.c: a daemon write that cannot even be queued (here: no client,
 * the path a lack of memory takes; sched/kube/driver_status.c kdrv_send_or_fail) is answered
 * like a failed request, so each caller's retry takes over: a pod delete is unmarked (the pod
 * is not taken for deleting) and sent again a second later (driver_life.c kdrv_delete_pod); a
 * recovery fence (driver_bind.c) is tried its bounded number of times and then given up, so
 * recovery goes on instead of waiting for an answer that never comes. No API server. */
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

/* A pending pod of ours, ml/p (uid u-p), on node (NULL: not bound). */
static void pod_event(struct kdrv *d, const char *node)
{
    char json[600];
    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"ml\","
             "\"name\":\"p\",\"uid\":\"u-p\"},\"spec\":{\"schedulerName\":\"gangsched\"%s%s%s,"
             "\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"%s\"}}",
             node ? ",\"nodeName\":\"" : "", node ? node : "", node ? "\"" : "",
             node ? "Running" : "Pending");
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    assert_int_equal(kcache_pod_event(d->cache, o, false), 0);
    cJSON_Delete(o);
}

static void delete_not_queued_retried(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    pod_event(&d, "n1");
    int64_t t0 = kdrv_now_ms();
    kdrv_delete_pod(&d, "ml", "p", "test");
    /* nothing was sent: the pod is not deleting, and a cycle a second later sends it again */
    const struct kpod *p = kcache_pod(d.cache, "ml/p");
    assert_non_null(p);
    assert_int_equal(p->deleting, 0);
    assert_true(d.later_ms != INT64_MAX && d.later_ms >= t0 + 1000 &&
                d.later_ms <= kdrv_now_ms() + 1000);
    /* and that cycle's delete is not refused as "sent already" */
    d.later_ms = INT64_MAX;
    kdrv_delete_pod(&d, "ml", "p", "test");
    assert_true(d.later_ms != INT64_MAX);
    teardown_d(&d);
}

static void recovery_fence_not_queued_given_up(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    const char *tmp = getenv("TMPDIR");
    char tdir[400], full[500];
    snprintf(tdir, sizeof(tdir), "%s/gs-sendfail-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    char *made = mkdtemp(tdir);
    assert_non_null(made);
    snprintf(full, sizeof(full), "%s/s.db", made);
    struct store_opts so;
    store_opts_default(&so);
    so.writer_id = "test";
    struct sched_errbuf eb = {{0}};
    assert_int_equal(store_open(full, STORE_CREATE, &so, &d.db, &eb), 0);
    /* a previous leader's open intent: ml/p on n1, not bound as read back */
    struct store_pod sp = {0, "ml/p", "n1", 1};
    assert_int_equal(store_journal_intent(d.db, "ml/g", 1, 10, &sp, 1, &eb), 0);
    pod_event(&d, NULL);
    /* the fence cannot be queued: tried, given up, and recovery judges the intent at once */
    assert_int_equal(kdrv_recover(&d), 0);
    assert_int_equal(d.fences_left, 0);
    assert_true(d.recovered);
    store_close(d.db);
    d.db = NULL;
    unlink(full);
    rmdir(made);
    teardown_d(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(delete_not_queued_retried),
        cmocka_unit_test(recovery_fence_not_queued_given_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
