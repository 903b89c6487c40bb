/* tests/unit/test_kube_owed.c: the daemon's writes owed until the watch shows them
 * (sched/kube/driver_status.c kdrv_owed_status): a native PodGroup's scheduled condition and a
 * checkpoint request (driver_ckpt.c) whose send cannot even be queued (here: no client, the
 * path a lack of memory takes) are sent again a second later, a bounded number of times for the
 * condition; a request the watch shows, or a preemption's request whose handshake is over, is
 * not sent again. No API server: every send fails to queue. And a wall-clock step moves the
 * driver's deadlines (kdrv_clock_check), once: a time recorded after the step (kdrv_now) is not
 * moved again. */
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

/* A wall-clock step seen at a tick of the cycle timer (kdrv_clock_check) moves the driver's
 * deadlines: the next cycle's due times, a status's rate limit, an owed write's next send. The
 * last reading is set as if the wall clock had read an hour less (a step forward of an hour) on
 * the same CLOCK_BOOTTIME. Before, the driver moved none of them (only the engine's start
 * timeouts and NotReady times, and only in a cycle): an hour ahead, the owed write was due at
 * once; an hour back, the next cycle waited an hour past its timers. */
static void clock_step_moves_deadlines(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    pg_event(&d, KPG_NATIVE_V1BETA1,
             "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
             "\"namespace\":\"ml\",\"name\":\"g\",\"uid\":\"pg-g\",\"generation\":1},\"spec\":{"
             "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}}}}");
    int64_t t0 = kdrv_now_ms();
    kdrv_gang_status(&d, "ml/g", kcache_pg(d.cache, "ml/g"), "Running", "Normal", "Scheduled",
                     "placed", true);
    int64_t retry = d.later_ms; /* the owed condition's next send, a second on */
    assert_true(retry_armed(&d, t0));
    const struct kstatus *st = strmap_get(&d.status, "ml/g");
    assert_non_null(st);
    int64_t at = st->at_ms;
    d.due_ms = t0 + 30000;
    const int64_t H = 3600 * 1000;
    assert_int_equal(kdrv_clock_check(&d), 0); /* the first reading: nothing to compare */
    d.clock_wall -= H;                         /* the last tick read an hour less */
    int64_t step = kdrv_clock_check(&d);
    assert_true(step >= H - 100 && step <= H + 100);
    assert_int_equal(d.due_ms, t0 + 30000 + step);
    assert_int_equal(d.later_ms, retry + step);
    assert_int_equal(st->at_ms, at + step);
    /* half a second of real time later the owed write is not due: armed at its moved time */
    d.later_ms = INT64_MAX;
    kdrv_owed_status(&d, t0 + step + 500);
    assert_int_equal(d.later_ms, retry + step);
    /* and back two hours */
    d.clock_wall += 2 * H;
    int64_t back = kdrv_clock_check(&d);
    assert_true(back <= -2 * H + 100 && back >= -2 * H - 100);
    assert_int_equal(d.due_ms, t0 + 30000 + step + back);
    assert_int_equal(st->at_ms, at + step + back);
    assert_int_equal(kdrv_clock_check(&d), 0); /* no step since */
    teardown_d(&d);
}

/* A step that no cycle-timer tick saw yet (a bind phase: the timer waits for the binds) and a
 * callback that records times: a bind's answer (binds_finished: eng_job_bound at kdrv_now), the
 * status it writes (the rate limit's start) and a retry a second on. kdrv_now checks the clock
 * first: the deadlines recorded before the step move, those recorded after are of the new clock
 * and the next check moves nothing. Before, the callbacks read the clock alone and the next tick
 * moved their times by the step again: an hour back, the gang bound a moment ago had been bound
 * an hour and a second earlier (torn down at its start timeout), its status rate limit and
 * retry were an hour early. Within a cycle kdrv_now is the cycle's time, the clock unread. */
static void stamp_after_step_moved_once(void **state)
{
    (void)state;
    static struct kdrv d;
    setup_d(&d);
    pg_event(&d, KPG_NATIVE_V1BETA1,
             "{\"apiVersion\":\"scheduling.k8s.io/v1beta1\",\"kind\":\"PodGroup\",\"metadata\":{"
             "\"namespace\":\"ml\",\"name\":\"g\",\"uid\":\"pg-g\",\"generation\":1},\"spec\":{"
             "\"schedulingPolicy\":{\"gang\":{\"minCount\":1}}}}");
    const int64_t H = 3600 * 1000;
    assert_int_equal(kdrv_clock_check(&d), 0); /* the last tick before the binds */
    d.due_ms = kdrv_now_ms() + 30000;          /* a deadline of the old clock */
    int64_t due = d.due_ms;
    d.clock_wall += H; /* as if the wall clock stepped back an hour since that tick */
    int64_t t_new = kdrv_now_ms();
    assert_int_equal(eng_job_bound(d.eng, 1, kdrv_now(&d)), 0); /* binds_finished's stamp */
    kdrv_gang_status(&d, "ml/g", kcache_pg(d.cache, "ml/g"), "Running", "Normal", "Scheduled",
                     "placed", true);
    const struct kstatus *st = strmap_get(&d.status, "ml/g");
    assert_non_null(st);
    int64_t t_end = kdrv_now_ms();
    assert_int_equal(kdrv_clock_check(&d), 0); /* the next tick: the step was seen */
    int64_t bound = eng_job(d.eng, 1).bound_ms;
    assert_true(bound >= t_new && bound <= t_end);
    assert_true(st->at_ms >= t_new && st->at_ms <= t_end);
    assert_true(d.later_ms >= t_new + 1000 && d.later_ms <= t_end + 1000); /* the owed retry */
    assert_true(d.due_ms <= due - H + 100 && d.due_ms >= due - H - 100);   /* moved, once */
    /* within a cycle: the cycle's time, no reading (a step then waits for the next check) */
    d.cycle_now = t_new - 5000;
    d.clock_wall -= 2 * H;
    assert_int_equal(kdrv_now(&d), t_new - 5000);
    assert_int_equal(eng_job(d.eng, 1).bound_ms, bound);
    d.cycle_now = 0;
    int64_t step = kdrv_clock_check(&d);
    assert_true(step >= 2 * H - 100 && step <= 2 * H + 100);
    teardown_d(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scheduled_condition_retried),
        cmocka_unit_test(checkpoint_request_retried),
        cmocka_unit_test(clock_step_moves_deadlines),
        cmocka_unit_test(stamp_after_step_moved_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
