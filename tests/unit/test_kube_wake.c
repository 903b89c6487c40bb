/* tests/unit/test_kube_wake.c: when the daemon's next cycle is due without changes
 * (sched/kube/driver.c kdrv_next_due): at the core's wake_ms when that comes before the
 * engine's timers, as the simulator has it; at most KDRV_SAFETY_RECHECK_MS after the last cycle
 * while a gang waits and one runs under a preempting policy, and never for that reason without a
 * pending gang, a running one or preemption; KDRV_RETRY_MS after a cycle that could not build
 * its input. The wake_ms of one case is a real core result: a gang that starves later.
 *
 * Owns: nothing outside its own memory. Times are ms since the epoch.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include "queue/queue.h"
#include "sched/core/cycle.h"
#include "sched/core/policy.h"
#include "sched/kube/driver_int.h"
#include "sched/sim/nodes.h"

#include "tests/unit/cycle_fx.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define S  1000LL

/* A decided cycle at T0 with a gang pending and one running under a preempting policy. */
static struct kdrv_due_in busy(int64_t wake_ms, int64_t eng_due)
{
    return (struct kdrv_due_in){.now = T0,
                                .decided = true,
                                .wake_ms = wake_ms,
                                .eng_due = eng_due,
                                .preempting = true,
                                .n_pending = 1,
                                .n_running = 1};
}

/* The core's wake_ms, when earlier than the engine's timers, is the due time; and the other way
 * round. A real result: a gang on a full node starves 600 s after its submission. */
static void wake_before_engine_wins(void **state)
{
    (void)state;
    struct world *w = world_new("hgx:1");
    use_gpus(w, 0, 0xFF); /* another scheduler's pods hold every GPU */
    w->state[0].release_ms = INT64_MAX;
    add_gang(w, 1, 8, 0);
    const struct sched_result *r = cycle(w, "gangsched", 60);
    assert_int_equal(r->n_placements, 0);
    assert_int_equal(r->wake_ms, 600 * S); /* when it starves */
    struct kdrv_due_in in = busy(r->wake_ms, 900 * S);
    in.now = 60 * S;
    in.n_running = 0; /* as in that world: no gang of ours runs, no re-check */
    assert_int_equal(kdrv_next_due(&in), 600 * S);
    free_names(w);
    world_free(w);

    in = busy(T0 + 5 * S, T0 + 20 * S);
    assert_int_equal(kdrv_next_due(&in), T0 + 5 * S);
    in = busy(T0 + 20 * S, T0 + 5 * S); /* the engine's timer first */
    assert_int_equal(kdrv_next_due(&in), T0 + 5 * S);
    /* an undecided cycle's result is not read, whatever it holds */
    in = busy(T0 + 5 * S, INT64_MAX);
    in.decided = false;
    assert_int_equal(kdrv_next_due(&in), T0 + KDRV_RETRY_MS);
}

/* Nothing known to change: under a preempting policy with a gang waiting and one running, the
 * safety re-check bounds the wait (30 s, not the one second of before); an earlier wake_ms or
 * engine timer still wins. */
static void safety_recheck_bounds_idle_wait(void **state)
{
    (void)state;
    assert_int_equal(KDRV_SAFETY_RECHECK_MS, 30 * S);
    struct kdrv_due_in in = busy(INT64_MAX, INT64_MAX);
    assert_int_equal(kdrv_next_due(&in), T0 + 30 * S);
    in = busy(T0 + 90 * S, T0 + 3600 * S);
    assert_int_equal(kdrv_next_due(&in), T0 + 30 * S);
    in = busy(T0 + 12 * S, INT64_MAX);
    assert_int_equal(kdrv_next_due(&in), T0 + 12 * S);
    in = busy(INT64_MAX, T0 + 29 * S);
    assert_int_equal(kdrv_next_due(&in), T0 + 29 * S);
}

/* No re-check without a pending gang, a running gang or a preempting policy: with nothing else
 * due, no cycle at all. */
static void no_recheck_without_pending_or_preemption(void **state)
{
    (void)state;
    struct kdrv_due_in in = busy(INT64_MAX, INT64_MAX);
    in.n_pending = 0;
    assert_true(kdrv_next_due(&in) == INT64_MAX);
    in = busy(INT64_MAX, INT64_MAX);
    in.n_running = 0;
    assert_true(kdrv_next_due(&in) == INT64_MAX);
    in = busy(INT64_MAX, INT64_MAX);
    in.preempting = false;
    assert_true(kdrv_next_due(&in) == INT64_MAX);
    in = busy(T0 + 600 * S, T0 + 3600 * S); /* the timers alone */
    in.preempting = false;
    assert_int_equal(kdrv_next_due(&in), T0 + 600 * S);
}

/* A cycle that could not build its input (or decide) is tried again KDRV_RETRY_MS later, also
 * with nothing pending and no policy that preempts; an engine timer before that still wins. */
static void failed_build_retries(void **state)
{
    (void)state;
    assert_int_equal(KDRV_RETRY_MS, 1 * S);
    struct kdrv_due_in in = {.now = T0, .wake_ms = INT64_MAX, .eng_due = INT64_MAX};
    assert_int_equal(kdrv_next_due(&in), T0 + 1 * S);
    in.eng_due = T0 + 300;
    assert_int_equal(kdrv_next_due(&in), T0 + 300);
    in = busy(INT64_MAX, INT64_MAX);
    in.decided = false;
    assert_int_equal(kdrv_next_due(&in), T0 + 1 * S);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wake_before_engine_wins),
        cmocka_unit_test(safety_recheck_bounds_idle_wait),
        cmocka_unit_test(no_recheck_without_pending_or_preemption),
        cmocka_unit_test(failed_build_retries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
