/* tests/unit/test_engine_life.c: the lifecycle rules over neutral member facts
 * (sched/engine/life.h) as a table: members and node health in, the action out (reason, own
 * failure, whole or lost members, strike node, message). Start timeout, failed members, NotReady
 * nodes past the grace, members lost below minMember, elastic and inference gangs, completing
 * gangs, gangs being torn down or evicted, gangs first seen running; then an action applied. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "sched/engine/life.h"

#define S 1000

enum setup { BOUND0, TEARING, EVICTING, UNKNOWN, GAVE_UP, RESTORED, HANDSHAKE };

#define RUN(node)                                                                                  \
    {                                                                                              \
        node, ENG_POD_RUNNING, true, false, "ml/p", "node", NULL, NULL                             \
    }
#define WAIT(node)                                                                                 \
    {                                                                                              \
        node, ENG_POD_PENDING, false, false, "ml/w", "node", "ImagePullBackOff: no", NULL          \
    }
#define FAIL(node)                                                                                 \
    {                                                                                              \
        node, ENG_POD_FAILED, false, false, "ml/f", "node", "OOMKilled", NULL                      \
    }
#define GONE(node)                                                                                 \
    {                                                                                              \
        node, ENG_POD_RUNNING, true, true, "ml/g", "node", NULL, NULL                              \
    }
/* a live member of a part below its own minimum (a CompositePodGroup tree's group) */
#define SHORT(node)                                                                                \
    {                                                                                              \
        node, ENG_POD_RUNNING, true, false, "ml/s", "node", NULL, "podgroup ml/b: 1 of minCount 2" \
    }
#define DONE(node)                                                                                 \
    {                                                                                              \
        node, ENG_POD_SUCCEEDED, false, false, "ml/d", "node", NULL, NULL                          \
    }

struct life_case {
    const char *name;
    struct eng_member m[4];
    uint32_t n, min;
    bool spread;
    enum setup setup;
    int64_t down[4]; /* NotReady since, per node (0: ready) */
    int64_t now;
    const char *want; /* "" = no action */
    const char *msg;  /* a part of the message, or NULL */
};

static const struct life_case cases[] = {
    {"all running and ready", {RUN(0), RUN(1)}, 2, 2, false, BOUND0, {0}, 600 * S, "", NULL},
    {"start timeout: own, a strike on the member that did not start",
     {RUN(0), WAIT(2)},
     2,
     2,
     false,
     BOUND0,
     {0},
     60 * S,
     "StartTimeout own whole strike=n2",
     "1 of 2 members not running and ready 60s after binding; ml/w: ImagePullBackOff: no"},
    {"within the start timeout", {RUN(0), WAIT(2)}, 2, 2, false, BOUND0, {0}, 59 * S, "", NULL},
    {"a failed member: own",
     {RUN(0), FAIL(1)},
     2,
     2,
     false,
     BOUND0,
     {0},
     1,
     "MemberFailed own whole",
     "member ml/f failed (OOMKilled)"},
    {"node NotReady past the grace: not own",
     {RUN(0), RUN(3)},
     2,
     2,
     false,
     BOUND0,
     {0, 0, 0, 100 * S},
     130 * S,
     "NodeLost whole",
     "NotReady for more than 30s"},
    {"node NotReady within the grace",
     {RUN(0), RUN(3)},
     2,
     2,
     false,
     BOUND0,
     {0, 0, 0, 100 * S},
     129 * S,
     "",
     NULL},
    {"members lost below minMember",
     {RUN(0), GONE(1), GONE(2)},
     3,
     2,
     false,
     BOUND0,
     {0},
     1,
     "MemberLost whole",
     "1 of minMember 2 members left"},
    {"elastic gang above minMember goes on",
     {RUN(0), RUN(1), GONE(2)},
     3,
     2,
     false,
     BOUND0,
     {0},
     1,
     "",
     NULL},
    {"no live member: going away whole, left alone",
     {GONE(0), GONE(1)},
     2,
     2,
     false,
     BOUND0,
     {0},
     600 * S,
     "",
     NULL},
    {"a succeeded member: completing, left alone",
     {DONE(0), FAIL(1)},
     2,
     2,
     false,
     BOUND0,
     {0},
     600 * S,
     "",
     NULL},
    {"torn down, members bound late: they go too",
     {RUN(0)},
     1,
     2,
     false,
     TEARING,
     {0},
     1,
     "MemberLost whole",
     "bound after the gang was rolled back"},
    {"torn down, none live: left alone", {GONE(0)}, 1, 1, false, TEARING, {0}, 1, "", NULL},
    {"being evicted: left alone",
     {FAIL(0), WAIT(1)},
     2,
     2,
     false,
     EVICTING,
     {0},
     600 * S,
     "",
     NULL},
    {"first seen running: the start timeout counts from now",
     {WAIT(1)},
     1,
     1,
     false,
     UNKNOWN,
     {0},
     600 * S,
     "",
     NULL},
    {"restored as running: the start timeout counts from the first check",
     {WAIT(1)},
     1,
     1,
     false,
     RESTORED,
     {0},
     600 * S,
     "",
     NULL},
    {"gave up, bound again by someone: stays failed, times out from the first sight",
     {WAIT(1)},
     1,
     1,
     false,
     GAVE_UP,
     {0},
     600 * S,
     "",
     NULL},
    {"inference: only the lost replica",
     {RUN(0), RUN(1), RUN(3)},
     3,
     2,
     true,
     BOUND0,
     {0, 0, 0, 1 * S},
     60 * S,
     "NodeLost lost=[2]",
     NULL},
    {"inference: a failed replica, own",
     {RUN(0), FAIL(1), RUN(2)},
     3,
     2,
     true,
     BOUND0,
     {0},
     1,
     "MemberFailed own lost=[1]",
     NULL},
    {"inference below minMember: whole",
     {RUN(0), RUN(3)},
     2,
     2,
     true,
     BOUND0,
     {0, 0, 0, 1 * S},
     60 * S,
     "NodeLost whole",
     NULL},
    /* a victim in its checkpoint handshake runs on: the rules apply to it as to a running
     * gang (before, it was left alone until the deadline, its member on a dead node) */
    {"in a handshake, all running",
     {RUN(0), RUN(1)},
     2,
     2,
     false,
     HANDSHAKE,
     {0},
     60 * S,
     "",
     NULL},
    {"in a handshake, node NotReady past the grace: torn down now",
     {RUN(0), RUN(3)},
     2,
     2,
     false,
     HANDSHAKE,
     {0, 0, 0, 1 * S},
     60 * S,
     "NodeLost whole",
     NULL},
    {"in a handshake, inference: the lost replica replaced alone",
     {RUN(0), RUN(1), RUN(3)},
     3,
     2,
     true,
     HANDSHAKE,
     {0, 0, 0, 1 * S},
     60 * S,
     "NodeLost lost=[2]",
     NULL},
    {"a part below its own minimum: its live members only, not own",
     {RUN(0), RUN(1), SHORT(2), GONE(3)},
     4,
     2,
     false,
     BOUND0,
     {0},
     1,
     "MemberLost lost=[2]",
     "podgroup ml/b: 1 of minCount 2, below its own minimum: its 1 live member(s) are deleted"},
    {"a part below its own minimum, a member failed: whole, own",
     {RUN(0), FAIL(1), SHORT(2)},
     3,
     2,
     false,
     BOUND0,
     {0},
     1,
     "MemberFailed own whole",
     NULL},
    {"a part below its own minimum, the gang below minMember: whole",
     {RUN(0), GONE(1), SHORT(2)},
     3,
     3,
     false,
     BOUND0,
     {0},
     1,
     "MemberLost whole",
     "2 of minMember 3"},
    {"a part below its own minimum being torn down already: its live members go",
     {SHORT(0)},
     1,
     1,
     false,
     TEARING,
     {0},
     1,
     "MemberLost whole",
     "bound after the gang was rolled back"},
    {"inference start timeout: whole",
     {RUN(0), WAIT(1)},
     2,
     1,
     true,
     BOUND0,
     {0},
     60 * S,
     "StartTimeout own whole strike=n1",
     NULL},
};

static void render(const struct eng_life_action *a, char *buf, size_t n)
{
    int at = snprintf(buf, n, "%s%s", eng_reason_name(a->reason), a->own ? " own" : "");
    if (a->whole)
        at += snprintf(buf + at, n - (size_t)at, " whole");
    else {
        at += snprintf(buf + at, n - (size_t)at, " lost=[");
        for (uint32_t k = 0; k < a->n_lost; k++)
            at += snprintf(buf + at, n - (size_t)at, "%s%u", k ? "," : "", a->lost[k]);
        at += snprintf(buf + at, n - (size_t)at, "]");
    }
    if (a->strike_node != ENG_NONE)
        snprintf(buf + at, n - (size_t)at, " strike=n%u", a->strike_node);
}

static void test_rules(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const struct life_case *lc = &cases[c];
        struct eng *e = eng_new(NULL);
        assert_non_null(e);
        if (lc->setup != UNKNOWN && lc->setup != GAVE_UP && lc->setup != RESTORED)
            assert_int_equal(eng_job_bound(e, 7, 0), 0);
        if (lc->setup == RESTORED)
            assert_int_equal(eng_job_restore(e, 7, ENG_JOB_RUNNING, 1), 0);
        if (lc->setup == GAVE_UP)
            assert_int_equal(eng_job_reject(e, 7), 0);
        if (lc->setup == TEARING)
            assert_int_equal(eng_job_bind_refused(e, 7), 0);
        if (lc->setup == EVICTING || lc->setup == HANDSHAKE)
            assert_int_equal(eng_job_evict(e, 7), 0);
        if (lc->setup == HANDSHAKE) /* asked to checkpoint at 0 by gang 8, 10 min of grace */
            assert_int_equal(eng_job_ckpt_request(e, 7, 8, 0, 600 * S), 0);
        struct eng_gang_facts gf = {.gang = 7,
                                    .members = lc->m,
                                    .n_members = lc->n,
                                    .min_member = lc->min,
                                    .start_timeout_ms = 60 * S,
                                    .grace_ms = 30 * S,
                                    .max_restarts = 2,
                                    .spread = lc->spread};
        struct arena a;
        arena_init(&a, 4096);
        struct eng_life_action *acts;
        uint32_t n;
        assert_int_equal(eng_life_check(e, &gf, 1, lc->now, lc->down, 4, &a, &acts, &n), 0);
        char got[256] = "";
        if (n == 1)
            render(&acts[0], got, sizeof(got));
        if (n > 1 || strcmp(got, lc->want) != 0)
            fail_msg("%s: '%s' (%u actions), want '%s'", lc->name, got, n, lc->want);
        if (lc->msg && !strstr(acts[0].message, lc->msg))
            fail_msg("%s: message '%s' lacks '%s'", lc->name, acts[0].message, lc->msg);
        if (n == 1)
            assert_int_equal(acts[0].max_restarts, 2);
        if (lc->setup == UNKNOWN || lc->setup == GAVE_UP || lc->setup == RESTORED) {
            /* recorded as bound now: times out a timeout later */
            assert_int_equal(eng_job_state(e, 7),
                             lc->setup == GAVE_UP ? ENG_JOB_FAILED : ENG_JOB_RUNNING);
            assert_int_equal(eng_job(e, 7).bound_ms, lc->now);
            assert_int_equal(
                eng_life_check(e, &gf, 1, lc->now + 60 * S, lc->down, 4, &a, &acts, &n), 0);
            assert_int_equal(n, 1);
            assert_int_equal(acts[0].reason, ENG_START_TIMEOUT);
        }
        arena_fini(&a);
        eng_free(e);
    }
}

/* Gang 1 of two members m[], minMember 2, start timeout 60 s, grace 30 s. */
static struct eng_gang_facts two(const struct eng_member *m, uint32_t max_restarts)
{
    return (struct eng_gang_facts){.gang = 1,
                                   .members = m,
                                   .n_members = 2,
                                   .min_member = 2,
                                   .start_timeout_ms = 60 * S,
                                   .grace_ms = 30 * S,
                                   .max_restarts = max_restarts};
}

/* An engine with gang 1 bound at 0, and an arena. */
struct fixture {
    struct eng *e;
    struct arena a;
    struct eng_life_action *acts;
};

static int setup(void **state)
{
    static struct fixture f;
    f.e = eng_new(NULL);
    arena_init(&f.a, 4096);
    *state = &f;
    return f.e && eng_job_bound(f.e, 1, 0) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    arena_fini(&f->a);
    eng_free(f->e);
    return 0;
}

/* The actions for gang facts gf at now (the engine's node record); their count. */
static uint32_t check(struct fixture *f, const struct eng_gang_facts *gf, int64_t now)
{
    uint32_t n;
    assert_int_equal(eng_life_check(f->e, gf, 1, now, NULL, 0, &f->a, &f->acts, &n), 0);
    return n;
}

/* An action carried out: the job is torn down, its budget used, its strike counted; the same
 * facts at the next step leave it alone (every member on its way out). */
static void test_apply(void **state)
{
    struct fixture *f = *state;
    struct eng_member m[] = {RUN(0), WAIT(5)};
    struct eng_gang_facts gf = two(m, 0);
    assert_int_equal(check(f, &gf, 60 * S), 1);
    struct eng_effects fx = {0};
    assert_int_equal(eng_life_apply(f->e, &f->acts[0], 60 * S, &fx), 0);
    assert_int_equal(fx.n, 2); /* the teardown and the give-up (max_restarts 0) */
    assert_int_equal(fx.v[0].kind, ENG_FX_TEARDOWN);
    assert_int_equal(fx.v[1].kind, ENG_FX_GIVE_UP);
    assert_int_equal(eng_job_state(f->e, 1), ENG_JOB_TEARING);
    m[0].gone = m[1].gone = true;
    assert_int_equal(check(f, &gf, 61 * S), 0);
    eng_effects_clear(&fx);
    assert_int_equal(eng_job_gone(f->e, 1, 62 * S, &fx), 0);
    assert_int_equal(fx.n, 0);
    assert_int_equal(eng_job_state(f->e, 1), ENG_JOB_FAILED);
    eng_effects_free(&fx);
}

/* Without a NotReady array the engine's own node record counts (eng_node_ready). */
/* A victim torn down by the rules in its checkpoint handshake (a member lost with its node):
 * the handshake is over, this teardown is its eviction (no second one at the deadline), the
 * preemption's verdict stands (no restart counted) and it is requeued once its pods are gone. */
static void test_handshake_torn_down(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(eng_job_evict(f->e, 1), 0);
    assert_int_equal(eng_job_ckpt_request(f->e, 1, 2, 0, 600 * S), 0);
    struct eng_member m[] = {RUN(0), RUN(3)};
    struct eng_gang_facts gf = two(m, 2);
    int64_t down[4] = {0, 0, 0, 1 * S};
    uint32_t n;
    assert_int_equal(eng_life_check(f->e, &gf, 1, 60 * S, down, 4, &f->a, &f->acts, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(f->acts[0].reason, ENG_NODE_LOST);
    assert_true(f->acts[0].whole);
    struct eng_effects fx = {0};
    assert_int_equal(eng_life_apply(f->e, &f->acts[0], 60 * S, &fx), 0);
    assert_int_equal(fx.v[0].kind, ENG_FX_TEARDOWN);
    struct eng_job j = eng_job(f->e, 1);
    assert_int_equal(j.state, ENG_JOB_TEARING);
    assert_true(j.evicting);
    assert_int_equal(j.restarts, 0);
    assert_int_equal(j.ckpt_until_ms, 0);
    assert_int_equal(eng_job_ckpt_check(f->e, 1, 0, 600 * S), ENG_CKPT_NONE);
    m[0].gone = m[1].gone = true; /* its pods go: left alone, then requeued */
    assert_int_equal(eng_life_check(f->e, &gf, 1, 61 * S, down, 4, &f->a, &f->acts, &n), 0);
    assert_int_equal(n, 0);
    eng_effects_clear(&fx);
    assert_int_equal(eng_job_gone(f->e, 1, 62 * S, &fx), 0);
    assert_int_equal(eng_job_state(f->e, 1), ENG_JOB_PENDING);
    eng_effects_free(&fx);
}

/* A victim in its handshake with a member not started (one that joined it): asking it forgot
 * its bind time (eng_job_evict), so the start timeout counts from the rules' first sight of it
 * (before, they read the unknown time: an overflow, found by UBSan in crash_preempt.py). */
static void test_handshake_start_timeout(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(eng_job_evict(f->e, 1), 0);
    assert_int_equal(eng_job_ckpt_request(f->e, 1, 2, 0, 600 * S), 0);
    assert_int_equal(eng_job(f->e, 1).bound_ms, ENG_UNKNOWN_MS);
    struct eng_member m[] = {RUN(0), WAIT(1)};
    struct eng_gang_facts gf = two(m, 2);
    assert_int_equal(check(f, &gf, 10 * S), 0);
    assert_int_equal(eng_job(f->e, 1).bound_ms, 10 * S);
    assert_int_equal(eng_job_state(f->e, 1), ENG_JOB_TEARING);
    assert_int_equal(check(f, &gf, 69 * S), 0);
    assert_int_equal(check(f, &gf, 70 * S), 1);
    assert_int_equal(f->acts[0].reason, ENG_START_TIMEOUT);
}

static void test_engine_node_health(void **state)
{
    struct fixture *f = *state;
    struct eng_member m[] = {RUN(0), RUN(4)};
    struct eng_gang_facts gf = two(m, 3);
    assert_int_equal(eng_node_ready(f->e, 4, false, 100 * S), 0);
    assert_int_equal(check(f, &gf, 129 * S), 0);
    assert_int_equal(check(f, &gf, 130 * S), 1);
    assert_int_equal(f->acts[0].reason, ENG_NODE_LOST);
    assert_false(f->acts[0].own);
}

/* eng_next_due: when the engine's answers change with time alone (the daemon runs a cycle then,
 * and no other without a change): the start timeout and the NotReady grace of the last check,
 * a backoff's end, a quarantine's end, a hold's expiry; the earliest of them, none once past. */
static void test_next_due(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(eng_next_due(f->e, 0), INT64_MAX); /* nothing checked yet */
    struct eng_member m[] = {RUN(0), WAIT(4)};
    struct eng_gang_facts gf = two(m, 3);
    assert_int_equal(check(f, &gf, 10 * S), 0);
    assert_int_equal(eng_next_due(f->e, 10 * S), 60 * S); /* the start timeout (bound at 0) */
    assert_int_equal(eng_node_ready(f->e, 4, false, 20 * S), 0);
    assert_int_equal(check(f, &gf, 25 * S), 0);
    assert_int_equal(eng_next_due(f->e, 25 * S), 50 * S); /* the grace first (since 20 s) */
    struct eng_member up[] = {RUN(0), RUN(4)};
    gf = two(up, 3);
    assert_int_equal(eng_node_ready(f->e, 4, true, 26 * S), 0);
    assert_int_equal(check(f, &gf, 26 * S), 0);
    assert_int_equal(eng_next_due(f->e, 26 * S), INT64_MAX); /* all started: no rule waits */
    /* gang 2 fails on its own with a node strike: backoff and (strikes) quarantine ends */
    struct eng_effects fx = {0};
    assert_int_equal(eng_job_bound(f->e, 2, 0), 0);
    for (int k = 0; k < 5; k++)
        assert_int_equal(eng_strike(f->e, 9, 30 * S + k, &fx), 0);
    int64_t q = eng_quarantine_until(f->e, 9);
    assert_true(q > 30 * S);
    assert_int_equal(eng_next_due(f->e, 31 * S), q);
    assert_int_equal(
        eng_job_broken(f->e, 2, ENG_START_TIMEOUT, true, true, 3, ENG_NONE, 40 * S, &fx), 0);
    assert_int_equal(eng_job_gone(f->e, 2, 40 * S, &fx), 0);
    struct eng_job j = eng_job(f->e, 2);
    assert_int_equal(j.state, ENG_JOB_BACKOFF);
    int64_t want = j.retry_at_ms < q ? j.retry_at_ms : q;
    assert_int_equal(eng_next_due(f->e, 41 * S), want);
    uint32_t nodes[] = {3};
    assert_int_equal(eng_hold_preemptor(f->e, 5, nodes, 1, 42 * S), 0);
    int64_t hold = 42 * S + ENG_HOLD_MS;
    assert_int_equal(eng_next_due(f->e, 42 * S), hold < want ? hold : want);
    /* once every time passed: none */
    int64_t late = (q > j.retry_at_ms ? q : j.retry_at_ms) + hold;
    assert_int_equal(eng_next_due(f->e, late), INT64_MAX);
    eng_effects_free(&fx);
}

/* The retry delay after the k-th own failure: backoff_ms * 2^(k-1), never longer than
 * ENG_BACKOFF_MAX_MS (Kueue's backoffMaxSeconds default) unless backoff_ms itself is; no overflow
 * however many restarts (it doubled 20 times: retries two years apart, and it overflowed without
 * the cap). */
static void test_backoff_cap(void **state)
{
    (void)state;
    static const struct {
        int64_t base;
        uint32_t k;
        int64_t want;
    } delays[] = {
        {60 * S, 1, 60 * S},
        {60 * S, 3, 240 * S},
        {60 * S, 6, 1920 * S},
        {60 * S, 7, ENG_BACKOFF_MAX_MS},
        {60 * S, 200, ENG_BACKOFF_MAX_MS},
        {1 * S, 1000000, ENG_BACKOFF_MAX_MS},
        {2 * ENG_BACKOFF_MAX_MS, 40, 2 * ENG_BACKOFF_MAX_MS},
        {INT64_MAX / 4, 64, INT64_MAX / 4},
    };
    for (size_t c = 0; c < sizeof(delays) / sizeof(delays[0]); c++) {
        struct eng_limits lim;
        eng_limits_default(&lim);
        lim.backoff_ms = delays[c].base;
        struct eng *e = eng_new(&lim);
        assert_non_null(e);
        struct eng_effects fx = {0};
        uint32_t k = delays[c].k;
        assert_int_equal(eng_job_restore(e, 1, ENG_JOB_RUNNING, k - 1), 0);
        assert_int_equal(eng_job_broken(e, 1, ENG_START_TIMEOUT, true, true, UINT32_MAX - 1,
                                        ENG_NONE, 10 * S, &fx),
                         0);
        assert_int_equal(eng_job_gone(e, 1, 10 * S, &fx), 0);
        struct eng_job j = eng_job(e, 1);
        if (j.state != ENG_JOB_BACKOFF || j.retry_at_ms - 10 * S != delays[c].want)
            fail_msg("base %lld, failure %u: %s, delay %lld, want %lld", (long long)delays[c].base,
                     k, eng_state_name(j.state), (long long)(j.retry_at_ms - 10 * S),
                     (long long)delays[c].want);
        eng_effects_free(&fx);
        eng_free(e);
    }
}

/* The cap of a gang's retry delay comes with its lifecycle facts (the queue's
 * lifecycle.backoffMax, config/): the 5th own failure waits 60 s x 2^4 = 960 s; 600 s under a
 * 10m cap; 960 s under the default 1h (facts without a cap: 0) and under 2h; the base itself,
 * 60 s, under a cap shorter than the base (as with ENG_BACKOFF_MAX_MS). */
static void test_backoff_cap_from_facts(void **state)
{
    (void)state;
    static const struct {
        int64_t cap; /* the facts' backoff_max_ms */
        int64_t want;
    } caps[] = {
        {10 * 60 * S, 600 * S},
        {0, 960 * S},
        {2 * 60 * 60 * S, 960 * S},
        {30 * S, 60 * S},
    };
    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
        struct eng_limits lim;
        eng_limits_default(&lim);
        lim.backoff_ms = 60 * S;
        struct eng *e = eng_new(&lim);
        assert_non_null(e);
        assert_int_equal(eng_job_restore(e, 7, ENG_JOB_RUNNING, 4), 0);
        assert_int_equal(eng_job_bound(e, 7, 0), 0);
        struct eng_member m[] = {RUN(0), FAIL(1)};
        struct eng_gang_facts gf = {.gang = 7,
                                    .members = m,
                                    .n_members = 2,
                                    .min_member = 2,
                                    .start_timeout_ms = 60 * S,
                                    .grace_ms = 30 * S,
                                    .max_restarts = 10,
                                    .backoff_max_ms = caps[c].cap};
        struct arena a;
        arena_init(&a, 4096);
        struct eng_life_action *acts;
        uint32_t n;
        assert_int_equal(eng_life_check(e, &gf, 1, 10 * S, NULL, 0, &a, &acts, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(acts[0].reason, ENG_MEMBER_FAILED);
        assert_true(acts[0].own);
        assert_int_equal(acts[0].backoff_max_ms, caps[c].cap);
        struct eng_effects fx = {0};
        assert_int_equal(eng_life_apply(e, &acts[0], 10 * S, &fx), 0);
        assert_int_equal(eng_job_gone(e, 7, 20 * S, &fx), 0);
        struct eng_job j = eng_job(e, 7);
        if (j.state != ENG_JOB_BACKOFF || j.retry_at_ms - 20 * S != caps[c].want)
            fail_msg("cap %lld: %s, delay %lld, want %lld", (long long)caps[c].cap,
                     eng_state_name(j.state), (long long)(j.retry_at_ms - 20 * S),
                     (long long)caps[c].want);
        eng_effects_free(&fx);
        arena_fini(&a);
        eng_free(e);
    }
}

/* A wall-clock step between two cycles is told apart from NTP's slew (at most 0.5 ms a second),
 * and the start timeout and the NotReady grace under way keep counting real time across it: a
 * forward step of an hour tore down every starting gang as its own failure (a strike on its
 * node, a restart spent) before eng_clock_stepped. */
static void test_clock_step(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(eng_clock_step(10 * S, 10 * S), 0);
    assert_int_equal(eng_clock_step(10 * S + 900, 10 * S), 0);       /* within 1 s */
    assert_int_equal(eng_clock_step(600 * S + 2100, 600 * S), 0);    /* slew over 10 min */
    assert_int_equal(eng_clock_step(600 * S + 2300, 600 * S), 2300); /* more than the slew */
    assert_int_equal(eng_clock_step(3610 * S, 10 * S), 3600 * S);    /* forward step */
    assert_int_equal(eng_clock_step(-3590 * S, 10 * S), -3600 * S);  /* backward step */
    struct eng_member m[] = {RUN(0), WAIT(5)};
    struct eng_gang_facts gf = two(m, 3); /* bound at 0, start timeout 60 s */
    assert_int_equal(check(f, &gf, 10 * S), 0);
    eng_clock_stepped(f->e, 3600 * S); /* the clock jumps an hour ahead at 10 s */
    assert_int_equal(eng_job(f->e, 1).bound_ms, 3600 * S);
    assert_int_equal(check(f, &gf, 3610 * S), 0);
    assert_int_equal(check(f, &gf, 3659 * S), 0);
    assert_int_equal(check(f, &gf, 3660 * S), 1); /* 60 s of real time after the bind */
    assert_int_equal(f->acts[0].reason, ENG_START_TIMEOUT);
    /* NotReady since 3670 s; the clock goes back an hour at 3680 s: the grace ends 30 s after
     * 3670 s of the old clock, at 100 s of the new */
    struct eng_member up[] = {RUN(0), RUN(4)};
    struct eng_gang_facts gu = two(up, 3);
    assert_int_equal(eng_node_ready(f->e, 4, false, 3670 * S), 0);
    assert_int_equal(check(f, &gu, 3680 * S), 0);
    eng_clock_stepped(f->e, -3600 * S);
    assert_int_equal(eng_node_down_since(f->e, 4), 70 * S);
    assert_int_equal(check(f, &gu, 80 * S), 0);
    assert_int_equal(check(f, &gu, 100 * S), 1);
    assert_int_equal(f->acts[0].reason, ENG_NODE_LOST);
    eng_clock_stepped(f->e, 0); /* no step: nothing moves */
    assert_int_equal(eng_node_down_since(f->e, 4), 70 * S);
}

/* The until_ms of gang g's entry on the holds list (-1: none). */
static int64_t hold_until(const struct eng *e, uint32_t g)
{
    for (uint32_t h = 0; h < eng_hold_count(e, ENG_HOLDS); h++)
        if (eng_hold_at(e, ENG_HOLDS, h)->gang == g)
            return eng_hold_at(e, ENG_HOLDS, h)->until_ms;
    return -1;
}

/* Every deadline of the engine that is a duration from an event of this run moves with a
 * wall-clock step (a backoff's end, a quarantine's end and a strike window, a first reservation
 * and the probation promised to it, a preemptor's hold); the instants shared with others do not
 * (a checkpoint request and its deadline, an operator's reservation). Before, only start
 * timeouts and NotReady times moved: a step forward of an hour ended the backoff, the quarantine
 * and the hold at once, and the promise was overdue. */
static void test_clock_step_deadlines(void **state)
{
    (void)state;
    const int64_t H = 3600 * S, t0 = 100000 * S;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    struct eng_effects fx = {0};
    /* gang 2 failed on its own: backing off */
    assert_int_equal(eng_job_bound(e, 2, t0), 0);
    assert_int_equal(eng_job_broken(e, 2, ENG_START_TIMEOUT, true, true, 3, ENG_NONE, t0, &fx), 0);
    assert_int_equal(eng_job_gone(e, 2, t0, &fx), 0);
    int64_t retry = eng_job(e, 2).retry_at_ms;
    assert_true(retry > t0);
    /* node 9 quarantined; node 8 has 2 strikes of the 3 that quarantine within the window */
    for (int k = 0; k < ENG_STRIKES; k++)
        assert_int_equal(eng_strike(e, 9, t0 + k, &fx), 0);
    int64_t q = eng_quarantine_until(e, 9);
    assert_true(q > t0);
    assert_int_equal(eng_strike(e, 8, t0, &fx), 0);
    assert_int_equal(eng_strike(e, 8, t0, &fx), 0);
    /* gang 3 waits with a first reservation; gang 4 runs on probation, promised to it */
    assert_int_equal(eng_job_reserved(e, 3, t0 + 600 * S), 0);
    assert_int_equal(eng_job_bound(e, 4, t0), 0);
    assert_int_equal(eng_job_probation(e, 4, 3), 0);
    /* gang 5's preemptor hold; operator reservation 7 of gang 6 until t0 + 2 h */
    uint32_t n1[] = {1}, n2[] = {2}, n3[] = {3};
    assert_int_equal(eng_hold_preemptor(e, 5, n1, 1, t0), 0);
    assert_int_equal(eng_hold_operator(e, 7, 6, n2, 1, t0 + 2 * H), 0);
    /* gang 10 asked to checkpoint for preemptor 11 until t0 + 300 s; 11 holds until then */
    assert_int_equal(eng_job_bound(e, 10, t0), 0);
    assert_int_equal(eng_job_evict(e, 10), 0);
    assert_int_equal(eng_job_ckpt_request(e, 10, 11, t0, t0 + 300 * S), 0);
    assert_int_equal(eng_hold_preemptor(e, 11, n3, 1, t0), 0);
    assert_int_equal(eng_hold_extend(e, 11, t0 + 300 * S), 0);
    assert_int_equal(hold_until(e, 11), t0 + 300 * S + ENG_HOLD_MS);
    /* gang 12 asked to checkpoint for preemptor 13 until t0 + 1 s; a later cycle (t0 + 10 s)
     * held 13's nodes again, past that deadline + hold_ms */
    assert_int_equal(eng_job_bound(e, 12, t0), 0);
    assert_int_equal(eng_job_evict(e, 12), 0);
    assert_int_equal(eng_job_ckpt_request(e, 12, 13, t0, t0 + S), 0);
    assert_int_equal(eng_hold_preemptor(e, 13, n3, 1, t0), 0);
    assert_int_equal(eng_hold_extend(e, 13, t0 + S), 0);
    assert_int_equal(eng_hold_preemptor(e, 13, n3, 1, t0 + 10 * S), 0);
    assert_int_equal(eng_hold_extend(e, 13, t0 + S), 0);
    assert_int_equal(hold_until(e, 13), t0 + 10 * S + ENG_HOLD_MS);

    eng_clock_stepped(e, H); /* an hour ahead, a second after t0 */
    assert_int_equal(eng_job(e, 2).retry_at_ms, retry + H);
    assert_int_equal(eng_quarantine_until(e, 9), q + H);
    assert_true(eng_quarantined(e, 9, q + 1)); /* an hour of the new clock is not a real hour */
    assert_int_equal(eng_job(e, 3).reserve_first_ms, t0 + 600 * S + H);
    assert_int_equal(eng_job(e, 4).probation_until_ms, t0 + 600 * S + H); /* still the promise */
    assert_int_equal(hold_until(e, 5), t0 + ENG_HOLD_MS + H);
    assert_int_equal(hold_until(e, 6), t0 + 2 * H);     /* the operator's: an instant shown */
    assert_int_equal(eng_job(e, 10).ckpt_asked_ms, t0); /* on the annotations */
    assert_int_equal(eng_job(e, 10).ckpt_until_ms, t0 + 300 * S); /* idem */
    /* 11's hold ends at its victim's deadline + hold_ms, an instant: not an hour later */
    assert_int_equal(hold_until(e, 11), t0 + 300 * S + ENG_HOLD_MS);
    assert_int_equal(hold_until(e, 13), t0 + 10 * S + ENG_HOLD_MS + H); /* a cycle's: moved */
    /* the next due time is the earliest moved one (the deadline passed: not due, its victim is
     * evicted at the next cycle) */
    int64_t due = retry + H;
    due = q + H < due ? q + H : due;
    due = t0 + ENG_HOLD_MS + H < due ? t0 + ENG_HOLD_MS + H : due;
    assert_int_equal(eng_next_due(e, t0 + H + S), due);
    /* node 8's third strike 10 s of real time later: within its window, quarantined */
    eng_effects_clear(&fx);
    assert_int_equal(eng_strike(e, 8, t0 + H + 10 * S, &fx), 0);
    assert_int_equal(fx.n, 1);
    assert_int_equal(fx.v[0].kind, ENG_FX_QUARANTINE);

    eng_clock_stepped(e, -2 * H); /* two hours back */
    assert_int_equal(eng_job(e, 2).retry_at_ms, retry - H);
    assert_int_equal(eng_quarantine_until(e, 9), q - H);
    assert_int_equal(eng_job(e, 4).probation_until_ms, eng_job(e, 3).reserve_first_ms);
    assert_int_equal(hold_until(e, 5), t0 + ENG_HOLD_MS - H);
    assert_int_equal(hold_until(e, 6), t0 + 2 * H);
    /* 11's hold stays; 13's moved back, but never ends before its victim's deadline + hold_ms */
    assert_int_equal(hold_until(e, 11), t0 + 300 * S + ENG_HOLD_MS);
    assert_int_equal(hold_until(e, 13), t0 + S + ENG_HOLD_MS);
    eng_effects_free(&fx);
    eng_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test_setup_teardown(test_apply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handshake_torn_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handshake_start_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_node_health, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_due, setup, teardown),
        cmocka_unit_test(test_backoff_cap),
        cmocka_unit_test(test_backoff_cap_from_facts),
        cmocka_unit_test_setup_teardown(test_clock_step, setup, teardown),
        cmocka_unit_test(test_clock_step_deadlines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
