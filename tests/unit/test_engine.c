/* tests/unit/test_engine.c: the engine (sched/engine/engine.h) as tables, observations in and
 * effects out: the job state machine with the retry budget, backoff and teardown; node strikes
 * and quarantine; preemptor holds, operator reservations and hints with the core's view; the
 * interning table; and an out-of-memory loop per constructor (the Nth allocation fails, for
 * N = 1, 2, ... until the whole sequence succeeds). */
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

#include "sched/core/err.h"
#include "sched/engine/engine.h"
#include "sched/engine/names.h"

/* ---- effects as text ---------------------------------------------------------------------- */

static void render(const struct eng_effects *fx, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < fx->n && at < n; i++) {
        const struct eng_effect *f = &fx->v[i];
        const char *sep = i ? " " : "";
        int w = 0;
        switch (f->kind) {
        case ENG_FX_QUARANTINE:
            w = snprintf(buf + at, n - at, "%squarantine(n%u,until=%lld)", sep, f->node,
                         (long long)f->t_ms);
            break;
        case ENG_FX_RELEASE:
            w = snprintf(buf + at, n - at, "%srelease(n%u)", sep, f->node);
            break;
        case ENG_FX_TEARDOWN:
            w = snprintf(buf + at, n - at, "%steardown(g%u,%s,%s%s,%u/%u)", sep, f->gang,
                         eng_reason_name(f->reason), f->whole ? "whole" : "members",
                         f->own ? ",own" : "", f->restarts, f->max_restarts);
            break;
        case ENG_FX_REQUEUE:
            w = snprintf(buf + at, n - at, "%srequeue(g%u,at=%lld)", sep, f->gang,
                         (long long)f->t_ms);
            break;
        case ENG_FX_GIVE_UP:
            w = snprintf(buf + at, n - at, "%sgive_up(g%u,%u/%u)", sep, f->gang, f->restarts,
                         f->max_restarts);
            break;
        }
        at += w > 0 ? (size_t)w : 0;
    }
}

/* ---- jobs: state machine, budget, backoff, teardown ---------------------------------------- */

enum op { SUBMIT, BOUND, BROKEN, GONE, RETRY, FINISH, EVICT, REFUSED, REJECT, END };

struct step {
    enum op op;
    uint32_t g;
    int64_t t;
    enum eng_reason why; /* BROKEN */
    bool own, whole;     /* BROKEN */
    uint32_t max;        /* BROKEN: max_restarts */
    uint32_t node;       /* BROKEN: strike node */
    const char *fx;      /* effects of the step */
    enum eng_state state;
};

#define MAX_STEPS 12

struct job_case {
    const char *name;
    int64_t backoff_ms;
    struct step steps[MAX_STEPS];
};

static const struct job_case job_cases[] = {
    {"runs and finishes",
     60000,
     {{SUBMIT, 1, 0, .fx = "", .state = ENG_JOB_PENDING},
      {BOUND, 1, 10, .fx = "", .state = ENG_JOB_RUNNING},
      {FINISH, 1, 20, .fx = "", .state = ENG_JOB_FINISHED},
      {.op = END}}},
    {"own failure: one restart used, backoff doubles",
     60000,
     {{SUBMIT, 2, 0, .fx = "", .state = ENG_JOB_PENDING},
      {BOUND, 2, 0, .fx = "", .state = ENG_JOB_RUNNING},
      {BROKEN, 2, 1000, ENG_START_TIMEOUT, true, true, 3, ENG_NONE,
       "teardown(g2,StartTimeout,whole,own,1/3)", ENG_JOB_TEARING},
      {GONE, 2, 1000, .fx = "requeue(g2,at=61000)", .state = ENG_JOB_BACKOFF},
      {RETRY, 2, 61000, .fx = "", .state = ENG_JOB_PENDING},
      {BOUND, 2, 61000, .fx = "", .state = ENG_JOB_RUNNING},
      {BROKEN, 2, 70000, ENG_MEMBER_FAILED, true, true, 3, ENG_NONE,
       "teardown(g2,MemberFailed,whole,own,2/3)", ENG_JOB_TEARING},
      {GONE, 2, 70000, .fx = "requeue(g2,at=190000)", .state = ENG_JOB_BACKOFF},
      {.op = END}}},
    {"node failure: no budget, requeued at once",
     60000,
     {{SUBMIT, 3, 0, .fx = "", .state = ENG_JOB_PENDING},
      {BOUND, 3, 0, .fx = "", .state = ENG_JOB_RUNNING},
      {BROKEN, 3, 500, ENG_NODE_LOST, false, true, 0, ENG_NONE, "teardown(g3,NodeLost,whole,0/0)",
       ENG_JOB_TEARING},
      {GONE, 3, 800, .fx = "requeue(g3,at=800)", .state = ENG_JOB_PENDING},
      {.op = END}}},
    {"budget exhausted: gives up, failed once gone",
     60000,
     {{SUBMIT, 4, 0, .fx = "", .state = ENG_JOB_PENDING},
      {BOUND, 4, 0, .fx = "", .state = ENG_JOB_RUNNING},
      {BROKEN, 4, 100, ENG_START_TIMEOUT, true, true, 1, 7,
       "teardown(g4,StartTimeout,whole,own,1/1)", ENG_JOB_TEARING},
      {GONE, 4, 100, .fx = "requeue(g4,at=60100)", .state = ENG_JOB_BACKOFF},
      {RETRY, 4, 60100, .fx = "", .state = ENG_JOB_PENDING},
      {BOUND, 4, 60100, .fx = "", .state = ENG_JOB_RUNNING},
      {BROKEN, 4, 60200, ENG_START_TIMEOUT, true, true, 1, 7,
       "teardown(g4,StartTimeout,whole,own,2/1) give_up(g4,2/1)", ENG_JOB_TEARING},
      {GONE, 4, 60300, .fx = "", .state = ENG_JOB_FAILED},
      {.op = END}}},
    {"max_restarts 0: the first own failure gives up",
     0,
     {{BOUND, 5, 0, .fx = "", .state = ENG_JOB_RUNNING},
      {BROKEN, 5, 9, ENG_MEMBER_FAILED, true, true, 0, ENG_NONE,
       "teardown(g5,MemberFailed,whole,own,1/0) give_up(g5,1/0)", ENG_JOB_TEARING},
      {GONE, 5, 9, .fx = "", .state = ENG_JOB_FAILED},
      {.op = END}}},
    {"no backoff configured: an own failure requeues at once",
     0,
     {{BOUND, 6, 0, .fx = "", .state = ENG_JOB_RUNNING},
      {BROKEN, 6, 9, ENG_START_TIMEOUT, true, true, 3, ENG_NONE,
       "teardown(g6,StartTimeout,whole,own,1/3)", ENG_JOB_TEARING},
      {GONE, 6, 10, .fx = "requeue(g6,at=10)", .state = ENG_JOB_PENDING},
      {.op = END}}},
    {"inference gang: only members, stays running, no budget",
     60000,
     {{BOUND, 7, 0, .fx = "", .state = ENG_JOB_RUNNING},
      {BROKEN, 7, 9, ENG_NODE_LOST, false, false, 3, ENG_NONE, "teardown(g7,NodeLost,members,0/3)",
       ENG_JOB_RUNNING},
      {GONE, 7, 10, .fx = "", .state = ENG_JOB_RUNNING},
      {.op = END}}},
    {"eviction and rollback: requeued at once when gone",
     60000,
     {{BOUND, 8, 0, .fx = "", .state = ENG_JOB_RUNNING},
      {EVICT, 8, 5, .fx = "", .state = ENG_JOB_TEARING},
      {GONE, 8, 7, .fx = "requeue(g8,at=7)", .state = ENG_JOB_PENDING},
      {REFUSED, 8, 9, .fx = "", .state = ENG_JOB_TEARING},
      {GONE, 8, 11, .fx = "requeue(g8,at=11)", .state = ENG_JOB_PENDING},
      {REJECT, 8, 12, .fx = "", .state = ENG_JOB_FAILED},
      {.op = END}}},
    {"torn down again while tearing: the first verdict (own, backoff) stands",
     1000,
     {{BOUND, 9, 0, .fx = "", .state = ENG_JOB_RUNNING},
      {BROKEN, 9, 10, ENG_START_TIMEOUT, true, true, 3, ENG_NONE,
       "teardown(g9,StartTimeout,whole,own,1/3)", ENG_JOB_TEARING},
      {BROKEN, 9, 20, ENG_MEMBER_LOST, false, true, 3, ENG_NONE,
       "teardown(g9,MemberLost,whole,1/3)", ENG_JOB_TEARING},
      {GONE, 9, 30, .fx = "requeue(g9,at=1030)", .state = ENG_JOB_BACKOFF},
      {.op = END}}},
};

static int run_step(struct eng *e, const struct step *s, struct eng_effects *fx)
{
    switch (s->op) {
    case SUBMIT:
        return eng_job_submit(e, s->g);
    case BOUND:
        return eng_job_bound(e, s->g, s->t);
    case BROKEN:
        return eng_job_broken(e, s->g, s->why, s->own, s->whole, s->max, s->node, s->t, fx);
    case GONE:
        return eng_job_gone(e, s->g, s->t, fx);
    case RETRY:
        return eng_job_retry(e, s->g);
    case FINISH:
        return eng_job_finish(e, s->g);
    case EVICT:
        return eng_job_evict(e, s->g);
    case REFUSED:
        return eng_job_bind_refused(e, s->g);
    case REJECT:
        return eng_job_reject(e, s->g);
    case END:
        break;
    }
    return 0;
}

static void test_jobs(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(job_cases) / sizeof(job_cases[0]); c++) {
        const struct job_case *jc = &job_cases[c];
        struct eng_limits lim;
        eng_limits_default(&lim);
        lim.backoff_ms = jc->backoff_ms;
        struct eng *e = eng_new(&lim);
        assert_non_null(e);
        struct eng_effects fx = {0};
        for (int k = 0; k < MAX_STEPS && jc->steps[k].op != END; k++) {
            const struct step *s = &jc->steps[k];
            eng_effects_clear(&fx);
            assert_int_equal(run_step(e, s, &fx), 0);
            char got[512];
            render(&fx, got, sizeof(got));
            if (strcmp(got, s->fx) != 0 || eng_job_state(e, s->g) != s->state)
                fail_msg("%s, step %d: effects '%s' state %s, want '%s' state %s", jc->name, k, got,
                         eng_state_name(eng_job_state(e, s->g)), s->fx, eng_state_name(s->state));
        }
        eng_effects_free(&fx);
        eng_free(e);
    }
}

/* A polling driver: eng_tick requeues jobs whose backoff ended and keeps the others out. */
static void test_tick_backoff(void **state)
{
    (void)state;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    struct eng_effects fx = {0};
    for (uint32_t g = 1; g <= 2; g++) {
        assert_int_equal(eng_job_bound(e, g, 0), 0);
        assert_int_equal(eng_job_broken(e, g, ENG_START_TIMEOUT, true, true, 3, ENG_NONE,
                                        (int64_t)g * 1000, &fx),
                         0);
        assert_int_equal(eng_job_gone(e, g, (int64_t)g * 1000, &fx), 0);
        assert_false(eng_job_schedulable(e, g));
    }
    assert_true(eng_job_bound_id(e) > 2);
    eng_effects_clear(&fx);
    eng_tick(e, 61000, &fx);
    char got[256];
    render(&fx, got, sizeof(got));
    assert_string_equal(got, "requeue(g1,at=61000)");
    assert_true(eng_job_schedulable(e, 1));
    assert_false(eng_job_schedulable(e, 2));
    eng_effects_clear(&fx);
    eng_tick(e, 61000, &fx); /* once */
    assert_int_equal(fx.n, 0);
    eng_effects_free(&fx);
    eng_free(e);
}

/* Node health: NotReady since the first NotReady sight after a Ready one. */
static void test_node_ready(void **state)
{
    (void)state;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    assert_int_equal(eng_node_ready(e, 3, true, 5), 0);
    assert_int_equal(eng_node_down_since(e, 3), 0);
    assert_int_equal(eng_node_ready(e, 3, false, 10), 0);
    assert_int_equal(eng_node_ready(e, 3, false, 20), 0);
    assert_int_equal(eng_node_down_since(e, 3), 10);
    assert_int_equal(eng_node_ready(e, 3, true, 30), 0);
    assert_int_equal(eng_node_down_since(e, 3), 0);
    assert_int_equal(eng_node_ready(e, 3, false, 40), 0);
    assert_int_equal(eng_node_down_since(e, 3), 40);
    eng_free(e);
}

/* ---- strikes and quarantine ------------------------------------------------------------------ */

struct strike_case {
    const char *name;
    struct {
        int64_t t;
        uint32_t node;
        const char *fx;
    } strikes[8];
    int64_t at;          /* then: */
    uint32_t node;       /* is this node */
    bool quarantined;    /* quarantined at `at`? */
    const char *release; /* effects of eng_tick(at) */
};

#define H  3600000
#define MN 60000

static const struct strike_case strike_cases[] = {
    {"three within the hour quarantine",
     {{0, 2, ""}, {10 * MN, 2, ""}, {20 * MN, 2, "quarantine(n2,until=3000000)"}, {-1, 0, NULL}},
     49 * MN,
     2,
     true,
     ""},
    {"quarantine ends after 30 minutes, released once",
     {{0, 2, ""}, {10 * MN, 2, ""}, {20 * MN, 2, "quarantine(n2,until=3000000)"}, {-1, 0, NULL}},
     50 * MN,
     2,
     false,
     "release(n2)"},
    {"strikes on other nodes do not add up",
     {{0, 1, ""}, {1, 2, ""}, {2, 3, ""}, {3, 1, ""}, {-1, 0, NULL}},
     4,
     1,
     false,
     ""},
    {"the window opens at the first strike, not at time 0",
     {{50 * MN, 4, ""},
      {70 * MN, 4, ""},
      {100 * MN, 4, "quarantine(n4,until=7800000)"},
      {-1, 0, NULL}},
     100 * MN,
     4,
     true,
     ""},
    {"a strike after the window starts a new one",
     {{0, 5, ""}, {10 * MN, 5, ""}, {H + 1, 5, ""}, {H + 2, 5, ""}, {-1, 0, NULL}},
     H + 3,
     5,
     false,
     ""},
    {"strikes while quarantined do not count",
     {{0, 6, ""},
      {1, 6, ""},
      {2, 6, "quarantine(n6,until=1800002)"},
      {3, 6, ""},
      {4, 6, ""},
      {1800002, 6, ""},
      {1800003, 6, ""},
      {-1, 0, NULL}},
     1800004,
     6,
     false,
     "release(n6)"},
};

static void test_strikes(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(strike_cases) / sizeof(strike_cases[0]); c++) {
        const struct strike_case *sc = &strike_cases[c];
        struct eng *e = eng_new(NULL);
        assert_non_null(e);
        struct eng_effects fx = {0};
        for (int k = 0; k < 8 && sc->strikes[k].t >= 0; k++) {
            eng_effects_clear(&fx);
            assert_int_equal(eng_strike(e, sc->strikes[k].node, sc->strikes[k].t, &fx), 0);
            char got[256];
            render(&fx, got, sizeof(got));
            if (strcmp(got, sc->strikes[k].fx) != 0)
                fail_msg("%s, strike %d: '%s', want '%s'", sc->name, k, got, sc->strikes[k].fx);
        }
        if (eng_quarantined(e, sc->node, sc->at) != sc->quarantined)
            fail_msg("%s: quarantined %d at %lld", sc->name, !sc->quarantined, (long long)sc->at);
        eng_effects_clear(&fx);
        eng_tick(e, sc->at, &fx);
        char got[256];
        render(&fx, got, sizeof(got));
        if (strcmp(got, sc->release) != 0)
            fail_msg("%s: tick '%s', want '%s'", sc->name, got, sc->release);
        eng_effects_clear(&fx);
        eng_tick(e, sc->at + 1, &fx); /* released once */
        if (sc->release[0])
            assert_int_equal(fx.n, 0);
        eng_effects_free(&fx);
        eng_free(e);
    }
}

/* A teardown with a strike node: the quarantine comes between the teardown and the give-up. */
static void test_broken_strikes(void **state)
{
    (void)state;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    struct eng_effects fx = {0};
    for (uint32_t g = 0; g < 3; g++) {
        assert_int_equal(eng_job_bound(e, g, 0), 0);
        eng_effects_clear(&fx);
        assert_int_equal(eng_job_broken(e, g, ENG_START_TIMEOUT, true, true, 0, 9, 100 + g, &fx),
                         0);
    }
    char got[512];
    render(&fx, got, sizeof(got));
    assert_string_equal(got, "teardown(g2,StartTimeout,whole,own,1/0) "
                             "quarantine(n9,until=1800102) give_up(g2,1/0)");
    eng_effects_free(&fx);
    eng_free(e);
}

/* ---- holds, reservations, hints ------------------------------------------------------------- */

/* Engine gang g is core gang gangs[g] (id g); pending when pend[g]. */
struct world {
    struct gang gangs[8];
    bool pend[8];
    uint32_t ix[16]; /* engine node -> core index, ENG_NONE: gone */
};

static const struct gang *w_gang(void *ctx, uint32_t g, bool *pending)
{
    struct world *w = ctx;
    if (g >= 8)
        return NULL;
    *pending = w->pend[g];
    return &w->gangs[g];
}

static uint32_t w_node(void *ctx, uint32_t n)
{
    struct world *w = ctx;
    return n < 16 ? w->ix[n] : ENG_NONE;
}

static void render_view(const struct sched_hold *v, uint32_t n, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = 0;
    for (uint32_t h = 0; h < n && at < cap; h++) {
        int w = v[h].gang->id == UINT32_MAX
                    ? snprintf(buf + at, cap - at, "%snobody:[", h ? " " : "")
                    : snprintf(buf + at, cap - at, "%sg%u:[", h ? " " : "", v[h].gang->id);
        at += w > 0 ? (size_t)w : 0;
        for (uint32_t k = 0; k < v[h].n_nodes && at < cap; k++) {
            w = snprintf(buf + at, cap - at, "%s%u", k ? "," : "", v[h].nodes[k]);
            at += w > 0 ? (size_t)w : 0;
        }
        if (at + 1 < cap)
            buf[at++] = ']', buf[at] = 0;
    }
}

struct hold_case {
    const char *name;
    void (*setup)(struct eng *e, struct world *w);
    int64_t at;
    const char *holds, *hints;
};

static void h_preemptor(struct eng *e, struct world *w)
{
    (void)w;
    uint32_t n[] = {1, 2};
    assert_int_equal(eng_hold_preemptor(e, 1, n, 2, 0), 0);
}

static void h_replace(struct eng *e, struct world *w)
{
    (void)w;
    uint32_t a[] = {1, 2}, b[] = {3};
    assert_int_equal(eng_hold_preemptor(e, 1, a, 2, 0), 0);
    assert_int_equal(eng_hold_preemptor(e, 1, b, 1, 5 * MN), 0); /* later reservation wins */
}

static void h_started(struct eng *e, struct world *w)
{
    uint32_t n[] = {1};
    assert_int_equal(eng_hold_preemptor(e, 1, n, 1, 0), 0);
    assert_int_equal(eng_hold_preemptor(e, 2, n, 1, 0), 0);
    w->pend[2] = false;                           /* gang 2 left the queue */
    assert_int_equal(eng_job_bound(e, 1, 10), 0); /* gang 1 started: its hold ends */
}

static void h_operator(struct eng *e, struct world *w)
{
    uint32_t a[] = {4}, b[] = {5, 6};
    w->pend[3] = w->pend[2] = false;
    assert_int_equal(eng_hold_operator(e, 11, 3, a, 1, INT64_MAX), 0);
    assert_int_equal(eng_hold_operator(e, 12, 2, b, 2, 2 * H), 0);
    assert_int_equal(eng_hold_operator(e, 13, 2, b, 1, H), 0);
    assert_int_equal(eng_hold_operator_drop(e, 13), 0);
    assert_int_equal(eng_hold_operator_drop(e, 13), SCHED_ENOENT);
    assert_int_equal(eng_job_bound(e, 2, 0), 0); /* operator reservations outlive a start */
}

static void h_gone_node(struct eng *e, struct world *w)
{
    uint32_t n[] = {1, 7, 2};
    w->ix[7] = ENG_NONE; /* the node left the cluster */
    w->ix[2] = 9;        /* and the indices moved */
    assert_int_equal(eng_hold_preemptor(e, 1, n, 3, 0), 0);
}

static void h_cycle(struct eng *e, struct world *w)
{
    (void)w;
    uint32_t n1[] = {1, 2}, n2[] = {3}, n3[] = {4};
    struct sched_reservation rv[] = {
        {.gang = &w->gangs[1], .nodes = n1, .n_nodes = 2, .preemptor = true},
        {.gang = &w->gangs[2], .nodes = n2, .n_nodes = 1, .preemptor = false},
        {.gang = &w->gangs[3], .nodes = n3, .n_nodes = 1, .preemptor = false},
    };
    struct sched_result res = {.reservations = rv, .n_reservations = 3};
    struct eng_ids ids = {.ctx = w, .core_gang = w_gang, .core_node = w_node};
    assert_int_equal(eng_cycle_reservations(e, &res, &ids, 0), 0);
    rv[0].preemptor = false; /* the next cycle: hints replaced, holds kept */
    struct sched_result res2 = {.reservations = rv, .n_reservations = 1};
    assert_int_equal(eng_cycle_reservations(e, &res2, &ids, MN), 0);
}

static const struct hold_case hold_cases[] = {
    {"a preemptor holds its nodes while pending", h_preemptor, 9 * MN, "g1:[1,2]", ""},
    {"a preemptor hold ends after hold_ms", h_preemptor, 10 * MN, "", ""},
    {"a later reservation replaces nodes and deadline", h_replace, 14 * MN, "g1:[3]", ""},
    {"started or left: the hold ends", h_started, 1, "", ""},
    {"operator reservations: kept, held for nobody while not pending, expire", h_operator, H,
     "nobody:[4] nobody:[5,6]", ""},
    {"operator reservation past its end", h_operator, 2 * H, "nobody:[4]", ""},
    {"nodes mapped to this cycle's indices, gone ones left out", h_gone_node, 0, "g1:[1,9]", ""},
    {"a cycle's reservations: preemptors hold, the others are hints", h_cycle, 2 * MN, "g1:[1,2]",
     "g1:[1,2]"},
};

static void test_holds(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(hold_cases) / sizeof(hold_cases[0]); c++) {
        const struct hold_case *hc = &hold_cases[c];
        struct world w;
        memset(&w, 0, sizeof(w));
        for (uint32_t g = 0; g < 8; g++)
            w.gangs[g].id = g, w.pend[g] = true;
        for (uint32_t n = 0; n < 16; n++)
            w.ix[n] = n;
        struct eng *e = eng_new(NULL);
        assert_non_null(e);
        hc->setup(e, &w);
        struct eng_ids ids = {.ctx = &w, .core_gang = w_gang, .core_node = w_node};
        struct arena a;
        arena_init(&a, 4096);
        struct sched_snapshot snap = {0};
        assert_int_equal(eng_holds_view(e, hc->at, &ids, &a, &snap), 0);
        char holds[256], hints[256];
        render_view(snap.holds, snap.n_holds, holds, sizeof(holds));
        render_view(snap.reserve_hints, snap.n_reserve_hints, hints, sizeof(hints));
        if (strcmp(holds, hc->holds) != 0 || strcmp(hints, hc->hints) != 0)
            fail_msg("%s: holds '%s' hints '%s', want '%s' and '%s'", hc->name, holds, hints,
                     hc->holds, hc->hints);
        arena_fini(&a);
        eng_free(e);
    }
}

/* The daemon's case: core ids (this cycle's indices) differ from engine ids both ways. */
static uint32_t to_eng_gang(void *ctx, const struct gang *g)
{
    (void)ctx;
    return g->id + 5; /* core gang 0 is engine gang 5 */
}

static uint32_t to_eng_node(void *ctx, uint32_t n)
{
    (void)ctx;
    return n + 10; /* core node 1 is engine node 11 */
}

static const struct gang *from_eng_gang(void *ctx, uint32_t g, bool *pending)
{
    struct gang *core = ctx;
    *pending = true;
    return g == 5 ? core : NULL;
}

static uint32_t from_eng_node(void *ctx, uint32_t n)
{
    (void)ctx;
    return n >= 10 && n != 12 ? n - 10 : ENG_NONE; /* engine node 12 left the cluster */
}

static void test_holds_mapped(void **state)
{
    (void)state;
    struct gang core = {.id = 0};
    uint32_t nodes[] = {1, 2, 3};
    struct sched_reservation rv[] = {
        {.gang = &core, .nodes = nodes, .n_nodes = 3, .preemptor = true},
        {.gang = &core, .nodes = nodes, .n_nodes = 1, .preemptor = false},
    };
    struct sched_result res = {.reservations = rv, .n_reservations = 2};
    struct eng_ids ids = {.ctx = &core,
                          .gang = to_eng_gang,
                          .node = to_eng_node,
                          .core_gang = from_eng_gang,
                          .core_node = from_eng_node};
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    assert_int_equal(eng_cycle_reservations(e, &res, &ids, 0), 0);
    const struct eng_hold *h = eng_hold_at(e, ENG_HOLDS, 0);
    assert_non_null(h);
    assert_int_equal(h->gang, 5);
    assert_int_equal(h->nodes[0], 11);
    assert_int_equal(h->nodes[2], 13);
    struct arena a;
    arena_init(&a, 4096);
    struct sched_snapshot snap = {0};
    assert_int_equal(eng_holds_view(e, 1, &ids, &a, &snap), 0);
    char holds[64], hints[64];
    render_view(snap.holds, snap.n_holds, holds, sizeof(holds));
    render_view(snap.reserve_hints, snap.n_reserve_hints, hints, sizeof(hints));
    assert_string_equal(holds, "g0:[1,3]"); /* back in core ids, the gone node left out */
    assert_string_equal(hints, "g0:[1]");
    arena_fini(&a);
    eng_free(e);
}

/* The persisted lists come back in order (the simulator's resume). */
static void test_hold_put_order(void **state)
{
    (void)state;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    uint32_t a[] = {1}, b[] = {2, 3};
    assert_int_equal(eng_hold_put(e, ENG_HOLDS, 4, a, 1, 100), 0);
    assert_int_equal(eng_hold_put(e, ENG_HOLDS, 2, b, 2, 200), 0);
    assert_int_equal(eng_hold_put(e, ENG_HINTS, 2, b, 2, 0), 0);
    assert_int_equal(eng_hold_count(e, ENG_HOLDS), 2);
    assert_int_equal(eng_hold_at(e, ENG_HOLDS, 0)->gang, 4);
    assert_int_equal(eng_hold_at(e, ENG_HOLDS, 1)->until_ms, 200);
    assert_int_equal(eng_hold_at(e, ENG_HOLDS, 1)->nodes[1], 3);
    assert_int_equal(eng_hold_count(e, ENG_HINTS), 1);
    assert_null(eng_hold_at(e, ENG_HINTS, 1));
    eng_free(e);
}

/* ---- names ------------------------------------------------------------------------------------
 */

static void test_names(void **state)
{
    (void)state;
    struct eng_names *t = eng_names_new();
    assert_non_null(t);
    uint32_t id;
    char name[32];
    for (uint32_t i = 0; i < 1000; i++) { /* past several rehashes */
        snprintf(name, sizeof(name), "ns/gang-%u", i);
        assert_int_equal(eng_names_id(t, name, &id), 0);
        assert_int_equal(id, i);
    }
    assert_int_equal(eng_names_id(t, "ns/gang-17", &id), 0);
    assert_int_equal(id, 17);
    assert_int_equal(eng_names_find(t, "ns/gang-999"), 999);
    assert_int_equal(eng_names_find(t, "ns/nope"), ENG_NONE);
    assert_string_equal(eng_names_name(t, 5), "ns/gang-5");
    assert_null(eng_names_name(t, 1000));
    assert_int_equal(eng_names_count(t), 1000);
    eng_names_free(t);
}

/* ---- out of memory: the Nth allocation fails ---------------------------------------------- */

static int fail_at, n_alloc;

/* Backfill on probation: a waiting gang's first reservation of a wait is its promise; a gang
 * placed on probation for it takes that promise, keeps it while it runs, and loses it when the
 * run ends; the core sees it mapped to the cycle's gangs (eng_probation_view). */
static void test_probation(void **state)
{
    (void)state;
    struct world w = {0};
    for (uint32_t g = 0; g < 8; g++)
        w.gangs[g].id = g, w.pend[g] = true;
    struct eng_ids ids = {.ctx = &w, .core_gang = w_gang};
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    uint32_t n[] = {1};
    struct sched_reservation rv = {
        .gang = &w.gangs[1], .nodes = n, .n_nodes = 1, .expected_start_ms = INT64_MAX};
    struct sched_result res = {.reservations = &rv, .n_reservations = 1};
    assert_int_equal(eng_job_submit(e, 1), 0);
    assert_int_equal(eng_cycle_reservations(e, &res, &ids, 0), 0);
    assert_int_equal(eng_job(e, 1).reserve_first_ms, 0); /* an unknown start promises nothing */
    rv.expected_start_ms = 5 * H;
    assert_int_equal(eng_cycle_reservations(e, &res, &ids, MN), 0);
    rv.expected_start_ms = 7 * H; /* it moved: the first one stays the promise */
    assert_int_equal(eng_cycle_reservations(e, &res, &ids, 2 * MN), 0);
    assert_int_equal(eng_job(e, 1).reserve_first_ms, 5 * H);

    assert_int_equal(eng_job_bound(e, 2, 3 * MN), 0);
    assert_int_equal(eng_job_probation(e, 2, 1), 0);
    assert_int_equal(eng_job_probation(e, 3, 4), 0); /* gang 4 holds no reservation */
    assert_int_equal(eng_job(e, 2).probation_until_ms, 5 * H);
    assert_int_equal(eng_job(e, 2).probation_for, 1);
    assert_int_equal(eng_job(e, 3).probation_until_ms, 0);

    struct sched_running run[2] = {{.gang = &w.gangs[2]}, {.gang = &w.gangs[3]}};
    eng_probation_view(e, &ids, run, 2);
    assert_int_equal(run[0].probation_until_ms, 5 * H);
    assert_ptr_equal(run[0].probation_for, &w.gangs[1]);
    assert_int_equal(run[1].probation_until_ms, 0);
    assert_null(run[1].probation_for);

    assert_int_equal(eng_job_bound(e, 1, 4 * MN), 0); /* the starving gang started */
    assert_int_equal(eng_job(e, 1).reserve_first_ms, 0);
    assert_int_equal(eng_job(e, 2).probation_until_ms, 5 * H); /* kept while it runs */
    eng_probation_view(e, &ids, run, 1); /* but void: the wait it was made in is over */
    assert_null(run[0].probation_for);
    assert_int_equal(eng_job_submit(e, 1), 0); /* it waits again, with another reservation */
    rv.expected_start_ms = 9 * H;
    assert_int_equal(eng_cycle_reservations(e, &res, &ids, 5 * MN), 0);
    assert_int_equal(eng_job(e, 1).reserve_first_ms, 9 * H);
    eng_probation_view(e, &ids, run, 1); /* an old promise binds nothing in a new wait */
    assert_null(run[0].probation_for);
    assert_int_equal(run[0].probation_until_ms, 0);
    assert_int_equal(eng_job_evict(e, 2), 0); /* its run ends */
    assert_int_equal(eng_job(e, 2).probation_until_ms, 0);
    eng_probation_view(e, &ids, run, 1);
    assert_null(run[0].probation_for);
    eng_free(e);
}

/* A preemptor's hold lasts while its victims are in a checkpoint handshake (eng_hold_extend):
 * past hold_ms it is kept until the victims' deadline plus hold_ms, never shortened. */
static void test_hold_extend(void **state)
{
    (void)state;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    uint32_t n[] = {1};
    assert_int_equal(eng_hold_preemptor(e, 1, n, 1, 0), 0);
    assert_int_equal(eng_hold_at(e, ENG_HOLDS, 0)->until_ms, ENG_HOLD_MS);
    assert_int_equal(eng_hold_extend(e, 1, 20 * MN), 0);
    assert_int_equal(eng_hold_at(e, ENG_HOLDS, 0)->until_ms, 20 * MN + ENG_HOLD_MS);
    assert_int_equal(eng_hold_extend(e, 1, MN), 0); /* never shortened */
    assert_int_equal(eng_hold_at(e, ENG_HOLDS, 0)->until_ms, 20 * MN + ENG_HOLD_MS);
    assert_int_equal(eng_hold_extend(e, 2, 20 * MN), 0); /* no hold of gang 2: nothing */
    assert_int_equal(eng_hold_count(e, ENG_HOLDS), 1);
    assert_int_equal(eng_hold_extend(e, 1, INT64_MAX), 0); /* no overflow */
    assert_int_equal(eng_hold_at(e, ENG_HOLDS, 0)->until_ms, INT64_MAX);
    eng_free(e);
}

static const struct gang *core_by_id(void *ctx, uint32_t g, bool *pending)
{
    struct gang **byid = ctx;
    *pending = true;
    return g < 3 ? byid[g] : NULL;
}

/* A hold restored by a new leader is marked replan (eng_hold_replan) and the core's view says so;
 * an operator's reservation never is; a new plan's hold replaces the mark. */
static void test_hold_replan(void **state)
{
    (void)state;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    uint32_t n[] = {1};
    assert_int_equal(eng_hold_preemptor(e, 1, n, 1, 0), 0);
    assert_int_equal(eng_hold_operator(e, 7, 2, n, 1, INT64_MAX), 0);
    eng_hold_replan(e, 1);
    eng_hold_replan(e, 2); /* an operator's reservation: no mark */
    eng_hold_replan(e, 3); /* no hold: nothing */
    for (uint32_t h = 0; h < eng_hold_count(e, ENG_HOLDS); h++)
        assert_int_equal(eng_hold_at(e, ENG_HOLDS, h)->replan,
                         eng_hold_at(e, ENG_HOLDS, h)->gang == 1);
    struct gang g1 = {.id = 1}, g2 = {.id = 2};
    struct gang *byid[] = {NULL, &g1, &g2};
    struct eng_ids ids = {.ctx = byid, .core_gang = core_by_id};
    struct arena a;
    arena_init(&a, 4096);
    struct sched_snapshot snap = {0};
    assert_int_equal(eng_holds_view(e, 1, &ids, &a, &snap), 0);
    assert_int_equal(snap.n_holds, 2);
    for (uint32_t h = 0; h < snap.n_holds; h++)
        assert_int_equal(snap.holds[h].replan, snap.holds[h].gang == &g1);
    assert_int_equal(eng_hold_preemptor(e, 1, n, 1, MN), 0); /* it planned again */
    for (uint32_t h = 0; h < eng_hold_count(e, ENG_HOLDS); h++)
        assert_false(eng_hold_at(e, ENG_HOLDS, h)->replan);
    arena_fini(&a);
    eng_free(e);
}

static void *failing_realloc(void *p, size_t n)
{
    if (++n_alloc == fail_at)
        return NULL;
    return realloc(p, n);
}

/* Each sequence builds with its constructor and uses what allocates; SCHED_ENOMEM or 0. */
static int seq_engine(void)
{
    struct eng *e = eng_new(NULL);
    if (!e)
        return SCHED_ENOMEM;
    struct eng_effects fx = {0};
    uint32_t nodes[] = {1, 2, 3};
    int rc = eng_reserve(e, 100, 10);
    for (uint32_t g = 0; rc == 0 && g < 200; g += 50)
        rc = eng_job_bound(e, g, 0);
    for (uint32_t k = 0; rc == 0 && k < 3; k++)
        rc = eng_job_broken(e, 150, ENG_START_TIMEOUT, true, true, 5, 300, k, &fx);
    for (uint32_t g = 0; rc == 0 && g < 12; g++)
        rc = eng_hold_preemptor(e, g, nodes, 3, 0);
    if (rc == 0)
        rc = eng_hold_operator(e, 1, 3, nodes, 2, INT64_MAX);
    if (rc == 0 && fx.oom)
        rc = SCHED_ENOMEM;
    eng_effects_free(&fx);
    eng_free(e);
    return rc;
}

static int seq_names(void)
{
    struct eng_names *t = eng_names_new();
    if (!t)
        return SCHED_ENOMEM;
    int rc = 0;
    char name[32];
    uint32_t id;
    for (uint32_t i = 0; rc == 0 && i < 100; i++) {
        snprintf(name, sizeof(name), "node-%u", i);
        rc = eng_names_id(t, name, &id);
    }
    if (rc == 0 && (eng_names_count(t) != 100 || eng_names_find(t, "node-42") != 42))
        rc = SCHED_EINVAL;
    for (uint32_t i = 10; rc == 0 && i < 20; i++) /* dropped ids are given again */
        rc = eng_names_drop(t, i);
    for (uint32_t i = 0; rc == 0 && i < 10; i++) {
        snprintf(name, sizeof(name), "again-%u", i);
        rc = eng_names_id(t, name, &id);
        if (rc == 0 && (id < 10 || id >= 20))
            rc = SCHED_EINVAL;
    }
    if (rc == 0 && (eng_names_count(t) != 100 || eng_names_find(t, "node-15") != ENG_NONE ||
                    eng_names_find(t, "node-42") != 42))
        rc = SCHED_EINVAL;
    eng_names_free(t);
    return rc;
}

static void oom_loop(int (*seq)(void))
{
    eng_set_realloc(failing_realloc);
    int rc = SCHED_ENOMEM, failures = 0;
    for (fail_at = 1; rc == SCHED_ENOMEM && fail_at < 100000; fail_at++) {
        n_alloc = 0;
        rc = seq();
        failures += rc == SCHED_ENOMEM;
    }
    eng_set_realloc(NULL);
    assert_int_equal(rc, 0);
    assert_true(failures > 3); /* the loop did reach allocations past the constructor */
}

/* The checkpoint handshake of a preemption (docs/preemption.md): a victim asked at 1000 with a
 * grace to 4000 waits (and wakes the driver at 4000 through eng_next_due) until its last
 * checkpoint is after the request (answered) or the grace ends (timeout); each verdict once;
 * the handshake ends with the eviction (gone, requeued) and is refused for a gang not evicting. */
static void test_ckpt_handshake(void **state)
{
    (void)state;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    struct eng_effects fx = {0};
    /* not evicting: no handshake */
    assert_int_equal(eng_job_bound(e, 1, 0), 0);
    assert_int_equal(eng_job_ckpt_request(e, 1, 2, 1000, 4000), SCHED_EINVAL);
    assert_int_equal(eng_job_ckpt_check(e, 1, 5000, 5000), ENG_CKPT_NONE);
    assert_int_equal(eng_job_ckpt_request(e, 99, 2, 1000, 4000), SCHED_EINVAL);
    /* answered: a checkpoint at the request time is not an answer, one after it is */
    assert_int_equal(eng_job_evict(e, 1), 0);
    assert_int_equal(eng_job_ckpt_request(e, 1, 2, 1000, 1000), SCHED_EINVAL); /* no grace */
    assert_int_equal(eng_job_ckpt_request(e, 1, 2, 1000, 4000), 0);
    assert_int_equal(eng_job(e, 1).ckpt_by, 2);
    assert_int_equal(eng_next_due(e, 1000), 4000);
    assert_int_equal(eng_job_ckpt_check(e, 1, 500, 1500), ENG_CKPT_WAIT);
    assert_int_equal(eng_job_ckpt_check(e, 1, 1000, 2000), ENG_CKPT_WAIT);
    assert_int_equal(eng_job_ckpt_check(e, 1, 1001, 2000), ENG_CKPT_ANSWERED);
    assert_int_equal(eng_job_ckpt_check(e, 1, 1001, 2000), ENG_CKPT_NONE); /* once */
    assert_int_equal(eng_next_due(e, 2000), INT64_MAX);
    assert_int_equal(eng_job_state(e, 1), ENG_JOB_TEARING);
    assert_true(eng_job(e, 1).evicting);
    assert_int_equal(eng_job_gone(e, 1, 2500, &fx), 0);
    assert_int_equal(eng_job_state(e, 1), ENG_JOB_PENDING);
    /* timeout: no answer by the end of the grace */
    assert_int_equal(eng_job_bound(e, 3, 0), 0);
    assert_int_equal(eng_job_evict(e, 3), 0);
    assert_int_equal(eng_job_ckpt_request(e, 3, ENG_NONE, 1000, 4000), 0);
    assert_int_equal(eng_job_ckpt_check(e, 3, 0, 3999), ENG_CKPT_WAIT);
    assert_int_equal(eng_next_due(e, 3999), 4000);
    assert_int_equal(eng_job_ckpt_check(e, 3, 0, 4000), ENG_CKPT_TIMEOUT);
    assert_int_equal(eng_job_ckpt_check(e, 3, 5000, 5000), ENG_CKPT_NONE);
    /* a victim that leaves during its handshake (its members ended by themselves) ends it; a
     * later run is not in a handshake */
    assert_int_equal(eng_job_bound(e, 4, 0), 0);
    assert_int_equal(eng_job_evict(e, 4), 0);
    assert_int_equal(eng_job_ckpt_request(e, 4, 1, 1000, 4000), 0);
    assert_int_equal(eng_job_gone(e, 4, 1500, &fx), 0);
    assert_int_equal(eng_next_due(e, 1500), INT64_MAX);
    assert_int_equal(eng_job_bound(e, 4, 2000), 0);
    assert_int_equal(eng_job_ckpt_check(e, 4, 0, 9000), ENG_CKPT_NONE);
    eng_effects_free(&fx);
    eng_free(e);
}

static void test_oom_engine(void **state)
{
    (void)state;
    oom_loop(seq_engine);
}

static void test_oom_names(void **state)
{
    (void)state;
    oom_loop(seq_names);
}

/* A gang forgotten (gone for good, or its name taken by a new object) leaves nothing behind: its
 * record is that of an id never seen, its preemptor hold and hint are gone, a promise made to it
 * and a handshake it asked for no longer name it; an operator's reservation for it stays. */
static void test_jobs_forget(void **state)
{
    (void)state;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    struct eng_effects fx = {0};
    uint32_t nodes[] = {4, 5};
    /* gang 1: waited with a reservation, preempted (a hold), gave up once */
    assert_int_equal(eng_job_submit(e, 1), 0);
    assert_int_equal(eng_job_reserved(e, 1, 5000), 0);
    assert_int_equal(eng_hold_preemptor(e, 1, nodes, 2, 0), 0);
    assert_int_equal(eng_hold_put(e, ENG_HINTS, 1, nodes, 1, 0), 0);
    assert_int_equal(eng_hold_operator(e, 9, 1, nodes + 1, 1, INT64_MAX), 0);
    assert_int_equal(eng_hold_put(e, ENG_HINTS, 6, nodes, 1, 0), 0);
    /* gang 2 backfilled on probation for 1; gang 3 a victim in a handshake asked by 1 */
    assert_int_equal(eng_job_bound(e, 2, 100), 0);
    assert_int_equal(eng_job_probation(e, 2, 1), 0);
    assert_int_equal(eng_job(e, 2).probation_until_ms, 5000);
    assert_int_equal(eng_job_bound(e, 3, 100), 0);
    assert_int_equal(eng_job_evict(e, 3), 0);
    assert_int_equal(eng_job_ckpt_request(e, 3, 1, 200, 900), 0);
    /* gang 7 gave up */
    assert_int_equal(eng_job_bound(e, 7, 0), 0);
    assert_int_equal(eng_job_broken(e, 7, ENG_MEMBER_FAILED, true, true, 0, ENG_NONE, 10, &fx), 0);
    assert_int_equal(eng_job_gone(e, 7, 20, &fx), 0);
    assert_int_equal(eng_job_state(e, 7), ENG_JOB_FAILED);

    uint32_t one[] = {1};
    eng_jobs_forget(e, one, 1);
    struct eng_job r = eng_job(e, 1); /* as an id never seen (eng_job(e, 1000)) */
    assert_int_equal(r.state, ENG_JOB_NONE);
    assert_false(r.evicting || r.own || r.give_up);
    assert_int_equal(r.restarts, 0);
    assert_int_equal(r.bound_ms, 0);
    assert_int_equal(r.retry_at_ms, 0);
    assert_int_equal(r.reserve_first_ms, 0);
    assert_int_equal(r.probation_until_ms, 0);
    assert_int_equal(r.probation_for, 0);
    assert_int_equal(r.ckpt_asked_ms, 0);
    assert_int_equal(r.ckpt_until_ms, 0);
    assert_int_equal(r.ckpt_by, 0);
    assert_int_equal(eng_job(e, 2).probation_until_ms, 0); /* the promise was to gang 1 */
    assert_int_equal(eng_job_state(e, 2), ENG_JOB_RUNNING);
    assert_int_equal(eng_job(e, 3).ckpt_by, ENG_NONE); /* the handshake goes on, for nobody */
    assert_int_equal(eng_job(e, 3).ckpt_until_ms, 900);
    assert_int_equal(eng_hold_count(e, ENG_HOLDS), 1);
    assert_int_equal(eng_hold_at(e, ENG_HOLDS, 0)->operator_id, 9); /* the operator's stays */
    assert_int_equal(eng_hold_count(e, ENG_HINTS), 1);
    assert_int_equal(eng_hold_at(e, ENG_HINTS, 0)->gang, 6);

    /* several at once (the daemon's sweep), ids out of range ignored */
    uint32_t many[] = {7, 6, 3, 123456};
    eng_jobs_forget(e, many, 4);
    assert_int_equal(eng_job_state(e, 7), ENG_JOB_NONE); /* a new gang of its name may run */
    assert_true(eng_job_schedulable(e, 7));
    assert_int_equal(eng_job(e, 7).restarts, 0);
    assert_int_equal(eng_job_state(e, 3), ENG_JOB_NONE);
    assert_int_equal(eng_hold_count(e, ENG_HINTS), 0);
    assert_int_equal(eng_job_state(e, 2), ENG_JOB_RUNNING);
    eng_effects_free(&fx);
    eng_free(e);
}

/* Names dropped leave the table and give their ids again: a window of live names, each found,
 * the dropped ones never; N create/delete cycles of short gangs keep the table and the engine
 * at the window's size. */
static void test_names_churn(void **state)
{
    (void)state;
    enum { WINDOW = 500, CYCLES = 200000 };
    struct eng_names *t = eng_names_new();
    struct eng *e = eng_new(NULL);
    assert_non_null(t);
    assert_non_null(e);
    static uint32_t live[WINDOW];
    char name[64];
    for (uint32_t i = 0; i < CYCLES; i++) {
        snprintf(name, sizeof(name), "ns/gang-%u", i);
        uint32_t id;
        assert_int_equal(eng_names_id(t, name, &id), 0);
        assert_int_equal(eng_job_bound(e, id, i), 0);
        assert_int_equal(eng_job_finish(e, id), 0);
        if (i >= WINDOW) { /* the gang created WINDOW cycles ago is deleted */
            uint32_t old = live[i % WINDOW];
            eng_jobs_forget(e, &old, 1);
            assert_int_equal(eng_names_drop(t, old), 0);
            assert_null(eng_names_name(t, old));
        }
        live[i % WINDOW] = id;
        if (i % 9973 == 0 && i >= WINDOW) {
            for (uint32_t k = i - WINDOW + 1; k <= i; k++) {
                snprintf(name, sizeof(name), "ns/gang-%u", k);
                uint32_t found = eng_names_find(t, name);
                assert_int_not_equal(found, ENG_NONE);
                assert_string_equal(eng_names_name(t, found), name);
            }
            for (uint32_t k = i - WINDOW - 50; k <= i - WINDOW; k++) {
                snprintf(name, sizeof(name), "ns/gang-%u", k);
                assert_int_equal(eng_names_find(t, name), ENG_NONE);
            }
        }
    }
    assert_int_equal(eng_names_live(t), WINDOW);
    assert_true(eng_names_count(t) <= WINDOW + 1);  /* ids given again, never new ones */
    assert_true(eng_job_bound_id(e) <= 2 * WINDOW); /* the engine's table: the window's size */
    /* a name dropped and interned again gets a fresh (zero) record */
    uint32_t a, b;
    assert_int_equal(eng_names_id(t, "ns/again", &a), 0);
    assert_int_equal(eng_job_reject(e, a), 0);
    eng_jobs_forget(e, &a, 1);
    assert_int_equal(eng_names_drop(t, a), 0);
    assert_int_equal(eng_names_drop(t, a), 0); /* twice: nothing */
    assert_int_equal(eng_names_id(t, "ns/again", &b), 0);
    assert_int_equal(b, a);
    assert_int_equal(eng_job_state(e, b), ENG_JOB_NONE);
    eng_names_free(t);
    eng_free(e);
}

/* Forgetting reads no further than what it marked: a preemptor hold (no record: eng_hold_put
 * makes none) and a handshake's asker may name ids past the records, forgotten or not. Under
 * `make san` the old mask (sized to the records) overflowed here; ids without a record that are
 * forgotten lose their holds and references too. */
static void test_forget_past_records(void **state)
{
    (void)state;
    struct eng *e = eng_new(NULL);
    assert_non_null(e);
    uint32_t nodes[] = {3};
    assert_int_equal(eng_job_submit(e, 0), 0);
    assert_int_equal(eng_job_submit(e, 1), 0);
    assert_int_equal(eng_hold_preemptor(e, 1000, nodes, 1, 0), 0);
    assert_int_equal(eng_hold_preemptor(e, 2000, nodes, 1, 0), 0);
    assert_int_equal(eng_job_bound(e, 1, 100), 0);
    assert_int_equal(eng_job_evict(e, 1), 0);
    assert_int_equal(eng_job_ckpt_request(e, 1, 5000, 200, 900), 0);
    uint32_t few[] = {0, 1};
    eng_jobs_forget(e, few, 2); /* the mask holds bits 0..1; holds name 1000 and 2000 */
    assert_int_equal(eng_hold_count(e, ENG_HOLDS), 2);
    assert_int_equal(eng_job_bound(e, 1, 300), 0);
    assert_int_equal(eng_job_evict(e, 1), 0);
    assert_int_equal(eng_job_ckpt_request(e, 1, 5000, 400, 900), 0);
    assert_true(eng_job_bound_id(e) < 1000);
    uint32_t past[] = {1000, 5000, 7}; /* no records: their holds and references go */
    eng_jobs_forget(e, past, 3);
    assert_int_equal(eng_hold_count(e, ENG_HOLDS), 1);
    assert_int_equal(eng_hold_at(e, ENG_HOLDS, 0)->gang, 2000);
    assert_int_equal(eng_job(e, 1).ckpt_by, ENG_NONE);
    uint32_t one = 2000; /* one alone (no mask) */
    eng_jobs_forget(e, &one, 1);
    assert_int_equal(eng_hold_count(e, ENG_HOLDS), 0);
    eng_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jobs),           cmocka_unit_test(test_tick_backoff),
        cmocka_unit_test(test_node_ready),     cmocka_unit_test(test_strikes),
        cmocka_unit_test(test_broken_strikes), cmocka_unit_test(test_holds),
        cmocka_unit_test(test_hold_put_order), cmocka_unit_test(test_holds_mapped),
        cmocka_unit_test(test_names),          cmocka_unit_test(test_oom_engine),
        cmocka_unit_test(test_oom_names),      cmocka_unit_test(test_probation),
        cmocka_unit_test(test_hold_extend),    cmocka_unit_test(test_hold_replan),
        cmocka_unit_test(test_ckpt_handshake), cmocka_unit_test(test_jobs_forget),
        cmocka_unit_test(test_names_churn),    cmocka_unit_test(test_forget_past_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
