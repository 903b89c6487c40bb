/* tests/unit/test_kube_owed.c: the daemon's writes owed until the watch shows them
 * (sched/kube/driver_status.c kdrv_owed_status): a native PodGroup's scheduled condition and a
 * checkpoint request (driver_ckpt.c) whose send cannot even be queued (here: no client, the
 * path a lack of memory takes) are sent again a second later, a bounded number of times for the
 * condition; a request the watch shows, or a preemption's request whose handshake is over, is
 * not sent again. No API server: every send fails to queue. */
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

#include "sched/kube/driver_int.h"

#include "tests/unit/kdrv_fx.h"

static void pg_event(struct kdrv *d, enum kpg_api api, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    assert_non_null(o);
    assert_int_equal(kcache_pg_event(d->cache, o, api, false), 0);
    cJSON_Delete(o);
}

/* Whether a send is due again within a second or so of the real clock. */
static bool retry_armed(const struct kdrv *d, int64_t before)
{
    return d->later_ms != INT64_MAX && d->later_ms >= before + 1000 &&
           d->later_ms <= kdrv_now_ms() + 1000;
}

static void scheduled_condition_retried(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    pg_event(&d, KPG_NATIVE_V1BETA1,
             "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
             "\"namespace\":\"ml\",\"name\":\"g\",\"uid\":\"pg-g\",\"generation\":1},\"spec\":{"
             "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}}}}");
    const struct kpg *pg = kcache_pg(d.cache, "ml/g");
    assert_non_null(pg);
    int64_t t0 = kdrv_now_ms();
    kdrv_gang_status(&d, "ml/g", pg, "Running", "Normal", "Scheduled", "placed", true);
    assert_true(retry_armed(&d, t0)); /* the send failed to queue: again in a second */
    /* each later cycle sends it again, up to KDRV_OWED_TRIES sends, then gives up */
    int64_t now = t0;
    for (int k = 1; k < KDRV_OWED_TRIES; k++) {
        d.later_ms = INT64_MAX;
        now += 60000;
        int64_t before = kdrv_now_ms();
        kdrv_owed_status(&d, now);
        assert_true(retry_armed(&d, before));
    }
    d.later_ms = INT64_MAX;
    kdrv_owed_status(&d, now + 60000);
    assert_true(d.later_ms == INT64_MAX); /* given up: nothing more owed */
    assert_null(strmap_get(&d.owed, "ml/g"));
    teardown_d(&d);
}

static const char *const xk8s_pg =
    "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\":{"
    "\"namespace\":\"ml\",\"name\":\"v\",\"uid\":\"pg-v\",\"labels\":{\"gangsched.io/queue\":"
    "\"q\"}%s},\"spec\":{\"minMember\":1}}";

static void checkpoint_request_retried(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    char buf[800];
    snprintf(buf, sizeof(buf), xk8s_pg, "");
    pg_event(&d, KPG_XK8S, buf);
    int64_t t0 = kdrv_now_ms();
    int64_t asked = 1767225600123;                           /* 2026-01-01T00:00:00.123Z */
    kdrv_owe_ckpt(&d, kcache_pg(d.cache, "ml/v"), asked, 0); /* an operator's */
    assert_true(retry_armed(&d, t0));
    d.later_ms = INT64_MAX;
    int64_t before = kdrv_now_ms();
    kdrv_owed_status(&d, t0 + 5000);
    assert_true(retry_armed(&d, before)); /* not shown yet: sent again */

    /* the watch shows it (to the millisecond): done, nothing sent again */
    snprintf(buf, sizeof(buf), xk8s_pg,
             ",\"annotations\":{\"gangsched.io/checkpoint-requested\":"
             "\"2026-01-01T00:00:00.123000Z\"}");
    pg_event(&d, KPG_XK8S, buf);
    d.later_ms = INT64_MAX;
    kdrv_owed_status(&d, t0 + 60000);
    assert_true(d.later_ms == INT64_MAX);
    assert_null(strmap_get(&d.owed_ckpt, "ml/v"));

    /* a preemption's request whose handshake is not (or no longer) the engine's: not sent
     * again */
    kdrv_owe_ckpt(&d, kcache_pg(d.cache, "ml/v"), asked + 1000, asked + 61000);
    assert_non_null(strmap_get(&d.owed_ckpt, "ml/v"));
    d.later_ms = INT64_MAX;
    kdrv_owed_status(&d, t0 + 120000);
    assert_true(d.later_ms == INT64_MAX);
    assert_null(strmap_get(&d.owed_ckpt, "ml/v"));
    teardown_d(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scheduled_condition_retried),
        cmocka_unit_test(checkpoint_request_retried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
