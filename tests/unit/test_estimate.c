/* tests/unit/test_estimate.c: run-time estimates learned from finished gangs (queue/estimate.h):
 * the declared maximum wins, the high quantile of the same queue and shape, the fallbacks, the
 * ring forgetting old runs, and the estimate of a gang that ran past it; the typical estimates of
 * start times from a gang's batch; estimates per user. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <string.h>

#include "queue/estimate.h"

static struct gang gang_of(uint32_t queue, int64_t gpus)
{
    struct gang g;
    memset(&g, 0, sizeof(g));
    g.queue = queue;
    g.gpus = gpus;
    return g;
}

static void test_quantile_and_fallbacks(void **unused)
{
    (void)unused;
    struct est_model m;
    assert_int_equal(est_init(&m, 2), 0);
    struct gang g = gang_of(0, 8), other = gang_of(1, 8), wide = gang_of(0, 64);
    assert_int_equal(est_runtime(&m, &g, EST_QUANTILE), 0); /* nothing learned: unknown */
    assert_true(est_end(&m, &g, 0, 10, EST_QUANTILE) == INT64_MAX);
    for (int64_t k = 1; k <= 20; k++) /* 1..20 s for 8-GPU gangs of queue 0 */
        est_observe(&m, 0, 0, 8, k * 1000, 0);
    /* the 95th percentile (nearest rank) of 1..20 s is 19 s */
    assert_int_equal(est_runtime(&m, &g, EST_QUANTILE), 19 * 1000);
    /* queue 1 has learned nothing: the same shape of any queue */
    assert_int_equal(est_runtime(&m, &other, EST_QUANTILE), 19 * 1000);
    /* 64 GPUs never seen in queue 0: queue 0's runs of any shape */
    assert_int_equal(est_runtime(&m, &wide, EST_QUANTILE), 19 * 1000);
    /* a declaration wins */
    g.max_runtime_ms = 5000;
    assert_int_equal(est_runtime(&m, &g, EST_QUANTILE), 5000);
    assert_int_equal(est_end(&m, &g, 100, 200, EST_QUANTILE), 5100);
    g.max_runtime_ms = 0;
    /* started at 0, seen at 10 s: ends at 19 s; seen at 19.5 s (past it): the quantile of the
     * runs longer than 19.5 s (only 20 s) */
    assert_int_equal(est_end(&m, &g, 0, 10 * 1000, EST_QUANTILE), 19 * 1000);
    assert_int_equal(est_end(&m, &g, 0, 19500, EST_QUANTILE), 20 * 1000);
    /* past every run seen: twice what it ran */
    assert_int_equal(est_end(&m, &g, 0, 30 * 1000, EST_QUANTILE), 60 * 1000);
    /* the typical estimate: the median (nearest rank) of 1..20 s */
    assert_int_equal(est_runtime(&m, &g, 0.5), 10 * 1000);
    /* the ring forgets: EST_RING runs of 100 s replace the old ones */
    for (int k = 0; k < EST_RING; k++)
        est_observe(&m, 0, 0, 8, 100 * 1000, 0);
    assert_int_equal(est_runtime(&m, &g, EST_QUANTILE), 100 * 1000);
    est_free(&m);
}

/* Start-time estimates judge a gang by its batch (same queue and shape, submitted within
 * EST_BATCH_MS) once EST_BATCH_MIN of it finished; the safe estimates never do. */
static void test_typical_batch(void **unused)
{
    (void)unused;
    const int64_t h = 3600 * 1000;
    struct est_model m;
    assert_int_equal(est_init(&m, 1), 0);
    struct gang g = gang_of(0, 8), lone = gang_of(0, 8);
    g.submit_ms = 10 * h + 600 * 1000;
    lone.submit_ms = 5 * h;
    assert_int_equal(est_typical_runtime(&m, &g, 0.5), 0); /* nothing learned */
    assert_true(est_typical_end(&m, &g, 0, 10, 0.5) == INT64_MAX);
    for (int k = 0; k < 20; k++) /* an old batch of 100 s runs, submitted at 0 */
        est_observe(&m, 0, 0, 8, 100 * 1000, 0);
    for (int k = 0; k < EST_BATCH_MIN - 1; k++) /* g's batch: 10 s runs, submitted at 10 h */
        est_observe(&m, 0, 0, 8, 10 * 1000, 10 * h);
    /* too few of its batch yet: the median of every run learned */
    assert_int_equal(est_typical_runtime(&m, &g, 0.5), 100 * 1000);
    est_observe(&m, 0, 0, 8, 10 * 1000, 10 * h);
    assert_int_equal(est_typical_runtime(&m, &g, 0.5), 10 * 1000);
    assert_int_equal(est_typical_end(&m, &g, 11 * h, 11 * h + 5000, 0.5), 11 * h + 10 * 1000);
    /* ran past every run of its batch: the runs learned that were longer */
    assert_int_equal(est_typical_end(&m, &g, 11 * h, 11 * h + 20 * 1000, 0.5), 11 * h + 100 * 1000);
    /* past everything: twice what it ran */
    assert_int_equal(est_typical_end(&m, &g, 11 * h, 11 * h + 200 * 1000, 0.5),
                     11 * h + 400 * 1000);
    /* a gang submitted hours from any batch, and the safe estimates, ignore batches */
    assert_int_equal(est_typical_runtime(&m, &lone, 0.5), 100 * 1000);
    assert_int_equal(est_runtime(&m, &g, 0.5), 100 * 1000);
    assert_int_equal(est_runtime(&m, &g, 0.1), 10 * 1000);
    /* a declaration wins */
    g.max_runtime_ms = 7000;
    assert_int_equal(est_typical_runtime(&m, &g, 0.5), 7000);
    assert_int_equal(est_typical_end(&m, &g, 100, 200, 0.5), 7100);
    est_free(&m);
}

/* The batch read from the sorted copy (values with their submit times) equals the batch of the
 * ring's last EST_RING runs, also after old runs left it and with equal run times of different
 * submit times. */
static void test_batch_after_eviction(void **unused)
{
    (void)unused;
    const int64_t h = 3600 * 1000;
    struct est_model m;
    assert_int_equal(est_init(&m, 1), 0);
    int64_t val[300], sub[300];
    for (int k = 0; k < 300; k++) {
        val[k] = 1000 * (1 + (k * 7) % 3); /* 1,000, 2,000 or 3,000 ms */
        sub[k] = (int64_t)k * h / 4;       /* four per hour */
        est_observe(&m, 0, 0, 8, val[k], sub[k]);
        if (k < EST_RING + 10)
            continue;
        for (int probe = 0; probe < 3; probe++) {
            struct gang g = gang_of(0, 8);
            g.submit_ms = sub[k - probe * 20];
            int64_t b[EST_RING];
            uint32_t n = 0; /* the batch by brute force over the last EST_RING runs, sorted */
            for (int x = k - EST_RING + 1; x <= k; x++)
                if (sub[x] >= g.submit_ms - EST_BATCH_MS && sub[x] <= g.submit_ms + EST_BATCH_MS) {
                    uint32_t at = n++;
                    while (at > 0 && b[at - 1] > val[x]) {
                        b[at] = b[at - 1];
                        at--;
                    }
                    b[at] = val[x];
                }
            assert_true(n >= EST_BATCH_MIN);
            for (int q = 1; q < 10; q++) {
                uint32_t at = (uint32_t)(q / 10.0 * n + 0.999999);
                at = at < 1 ? 1 : at > n ? n : at;
                assert_int_equal(est_typical_runtime(&m, &g, q / 10.0), b[at - 1]);
            }
        }
    }
    est_free(&m);
}

/* Per user: two users of one queue and shape, one running 10 s jobs and one 1,000 s jobs. A
 * user with EST_RING_MIN runs is judged by its own (safe and typical estimates, and the batch);
 * with fewer, or an unknown user (0), by the queue's runs of every user; the rings an estimate
 * reads list the user's first; a user past EST_USERS_MAX is learned as unknown. */
static void test_per_user(void **unused)
{
    (void)unused;
    const int64_t h = 3600 * 1000;
    struct est_model m;
    assert_int_equal(est_init(&m, 1), 0);
    struct gang fast = gang_of(0, 8), slow = gang_of(0, 8), anon = gang_of(0, 8);
    fast.user = 1;
    slow.user = 7; /* ids need not be dense: rows are made up to the highest */
    for (int k = 0; k < 10; k++) {
        assert_int_equal(est_observe(&m, 0, 1, 8, 10 * 1000, (int64_t)k * 10 * h), 0);
        assert_int_equal(est_observe(&m, 0, 7, 8, 1000 * 1000, (int64_t)k * 10 * h), 0);
    }
    assert_int_equal(est_runtime(&m, &fast, EST_QUANTILE), 10 * 1000);
    assert_int_equal(est_runtime(&m, &slow, EST_QUANTILE), 1000 * 1000);
    /* the queue's 20 runs: the median is the 10th, 10 s; the 95th percentile 1,000 s */
    assert_int_equal(est_runtime(&m, &anon, 0.5), 10 * 1000);
    assert_int_equal(est_runtime(&m, &anon, EST_QUANTILE), 1000 * 1000);
    assert_int_equal(est_typical_runtime(&m, &slow, 0.1), 1000 * 1000);
    assert_int_equal(est_end(&m, &fast, 0, 5000, EST_QUANTILE), 10 * 1000);
    /* its batch (submitted within the hour): the user's, not the queue's */
    slow.submit_ms = 90 * h;
    assert_int_equal(est_typical_runtime(&m, &slow, 0.1), 1000 * 1000);
    uint32_t idx[EST_READS], ui[EST_READS];
    assert_int_equal(est_rings_read(&m, &slow, idx), 1); /* its own ring has enough */
    assert_int_equal(est_rings_observed(&m, 0, 7, 8, ui), 4);
    assert_int_equal(idx[0], ui[0]);
    assert_int_equal(est_rings_read(&m, &anon, idx), 1); /* the queue's ring */
    assert_int_equal(est_rings_observed(&m, 0, 0, 8, ui), 3);
    assert_int_equal(idx[0], ui[0]);
    /* a new user with 3 runs (fewer than EST_RING_MIN): the queue's runs */
    struct gang fresh = gang_of(0, 8);
    fresh.user = 3;
    for (int k = 0; k < EST_RING_MIN - 1; k++)
        assert_int_equal(est_observe(&m, 0, 3, 8, 50 * 1000, 0), 0);
    assert_int_equal(est_runtime(&m, &fresh, 0.3), 10 * 1000); /* 7th of 23 */
    assert_int_equal(est_rings_read(&m, &fresh, idx), 2); /* its own decides, then the queue's */
    assert_int_equal(est_observe(&m, 0, 3, 8, 50 * 1000, 0), 0);
    assert_int_equal(est_runtime(&m, &fresh, 0.3), 50 * 1000);
    /* past EST_USERS_MAX: not told apart, learned by the queue only */
    struct gang far = gang_of(0, 8);
    far.user = EST_USERS_MAX + 1;
    assert_int_equal(est_observe(&m, 0, EST_USERS_MAX + 1, 8, 5 * 1000, 0), 0);
    assert_int_equal(est_rings_observed(&m, 0, EST_USERS_MAX + 1, 8, ui), 3);
    assert_int_equal(est_runtime(&m, &far, 0.01), 5 * 1000); /* the queue learned it */
    assert_true(m.n_users <= EST_USERS_MAX);
    est_free(&m);
}

/* est_draw: the same draw for the same id (the daemon's gangs keep theirs between cycles), inside
 * (0, 1), spread evenly (each tenth of (0, 1) gets about a tenth of 10,000 ids). */
static void test_draw(void **unused)
{
    (void)unused;
    uint32_t tenth[10] = {0};
    for (uint64_t id = 0; id < 10000; id++) {
        double u = est_draw(id);
        assert_true(u > 0.0 && u < 1.0);
        assert_true(u == est_draw(id));
        tenth[(int)(u * 10)]++;
    }
    for (int k = 0; k < 10; k++)
        assert_in_range(tenth[k], 900, 1100);
    assert_true(est_draw(1) != est_draw(2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantile_and_fallbacks),
        cmocka_unit_test(test_typical_batch),
        cmocka_unit_test(test_batch_after_eviction),
        cmocka_unit_test(test_per_user),
        cmocka_unit_test(test_draw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
