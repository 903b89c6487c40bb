/* sched/engine/life.c: the lifecycle rules over neutral member facts (see life.h). */
#include "sched/engine/life.h"

#include <stdio.h>

#include "sched/core/err.h"
#include "sched/engine/engine_int.h"

/* What the members say: live and started counts, the first failed member, the first member on a
 * node NotReady past the grace, the first live member not started, the lost ones, and the live
 * ones of parts below their own minimum (short[], the first such member short_one). */
struct tally {
    uint32_t live, started, n_lost, n_short;
    const struct eng_member *failed, *on_lost_node, *not_started, *short_one;
    uint32_t *lost, *short_ix;
    bool completing;
    int64_t due; /* the earliest time a rule comes due with time alone, INT64_MAX: none */
};

/* since + span when that is later than now and earlier than *due (no overflow). */
static void due_at(int64_t *due, int64_t since, int64_t span, int64_t now)
{
    if (since != ENG_UNKNOWN_MS && span >= 0 && since <= INT64_MAX - span && since + span > now &&
        since + span < *due)
        *due = since + span;
}

static void tally(const struct eng *e, const struct eng_gang_facts *gf, int64_t now,
                  const int64_t *down, uint32_t n_nodes, struct tally *t)
{
    for (uint32_t m = 0; m < gf->n_members; m++) {
        const struct eng_member *p = &gf->members[m];
        if (p->gone)
            continue; /* on its way out: neither live nor a new failure */
        if (p->phase == ENG_POD_SUCCEEDED) {
            t->completing = true; /* its members end on their own */
            return;
        }
        if (p->phase == ENG_POD_FAILED) {
            t->failed = t->failed ? t->failed : p;
            t->lost[t->n_lost++] = m;
            continue;
        }
        int64_t since = !down               ? eng_node_down_since(e, p->node)
                        : p->node < n_nodes ? down[p->node]
                                            : 0;
        if (since > 0)                                 /* 0: ready */
            due_at(&t->due, since, gf->grace_ms, now); /* NotReady grace */
        if (since > 0 && now - since >= gf->grace_ms) {
            t->on_lost_node = t->on_lost_node ? t->on_lost_node : p;
            t->lost[t->n_lost++] = m;
            continue;
        }
        t->live++;
        if (p->short_part) {
            t->short_one = t->short_one ? t->short_one : p;
            t->short_ix[t->n_short++] = m;
        }
        if (p->phase == ENG_POD_RUNNING && p->ready)
            t->started++;
        else if (!t->not_started)
            t->not_started = p;
    }
}

static const char * or (const char *s, const char *dflt)
{
    return s ? s : dflt;
}

/* The rule that applies (false: none), its message in msg. */
static bool decide(const struct eng_gang_facts *gf, const struct tally *t, int64_t since,
                   bool tearing, int64_t now, struct eng_life_action *act, char *msg, size_t n)
{
    uint32_t min = gf->min_member ? gf->min_member : 1;
    act->strike_node = ENG_NONE;
    if (tearing) {
        /* members bound after its rollback or teardown began (a Binding applied late, or
         * another scheduler's): they go too, the gang starts whole or not at all */
        act->reason = ENG_MEMBER_LOST;
        snprintf(msg, n,
                 "%u member(s) bound after the gang was rolled back or torn down (a "
                 "Binding applied late, or another scheduler's)",
                 t->live);
    } else if (t->failed) {
        act->reason = ENG_MEMBER_FAILED;
        act->own = true;
        snprintf(msg, n, "member %s failed (%s)", or (t->failed->name, "?"),
                 or (t->failed->why, "phase Failed"));
    } else if (t->on_lost_node) {
        act->reason = ENG_NODE_LOST;
        snprintf(msg, n, "member %s is on node %s, NotReady for more than %llds",
                 or (t->on_lost_node->name, "?"), or (t->on_lost_node->node_name, "?"),
                 (long long)(gf->grace_ms / 1000));
    } else if (t->live < min && t->live > 0) { /* none live: the gang is going away whole */
        act->reason = ENG_MEMBER_LOST;
        snprintf(msg, n, "%u of minMember %u members left (deleted or evicted)", t->live, min);
    } else if (t->n_short > 0) { /* those parts only */
        act->reason = ENG_MEMBER_LOST;
        act->whole = false;
        act->lost = t->short_ix;
        act->n_lost = t->n_short;
        snprintf(msg, n,
                 "%s, below its own minimum: its %u live member(s) are deleted and it starts "
                 "again whole; the rest of the gang goes on",
                 t->short_one->short_part, t->n_short);
    } else if (t->started < t->live && now - since >= gf->start_timeout_ms) {
        act->reason = ENG_START_TIMEOUT;
        act->own = true;
        act->strike_node = t->not_started ? t->not_started->node : ENG_NONE;
        snprintf(msg, n, "%u of %u members not running and ready %llds after binding; %s: %s",
                 t->live - t->started, t->live, (long long)(gf->start_timeout_ms / 1000),
                 t->not_started ? or (t->not_started->name, "?") : "?",
                 t->not_started ? or (t->not_started->why, "not ready") : "not ready");
    } else {
        return false;
    }
    return true;
}

int eng_life_check(struct eng *e, const struct eng_gang_facts *gangs, uint32_t n_gangs, int64_t now,
                   const int64_t *node_down_since, uint32_t n_nodes, struct arena *a,
                   struct eng_life_action **out, uint32_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    struct eng_life_action *acts = arena_calloc(a, n_gangs + 1, sizeof(*acts));
    if (!acts)
        return SCHED_ENOMEM;
    uint32_t n = 0;
    e->life_due_ms = INT64_MAX;
    for (uint32_t g = 0; g < n_gangs; g++) {
        const struct eng_gang_facts *gf = &gangs[g];
        struct tally t = {.due = INT64_MAX};
        t.lost = arena_calloc(a, gf->n_members + 1, sizeof(*t.lost));
        t.short_ix = arena_calloc(a, gf->n_members + 1, sizeof(*t.short_ix));
        if (!t.lost || !t.short_ix)
            return SCHED_ENOMEM;
        tally(e, gf, now, node_down_since, n_nodes, &t);
        if (t.completing)
            continue;
        struct eng_job j = eng_job(e, gf->gang);
        /* a victim asked to checkpoint (its handshake under way) runs on until it ends: the
         * rules are a running gang's, and a member lost with its node ends it at once, since
         * the gang cannot answer (eng_job_broken); the simulator's job runs until then too */
        bool handshake = j.state == ENG_JOB_TEARING && j.ckpt_until_ms != 0;
        bool tearing = j.state == ENG_JOB_TEARING && !handshake;
        if ((tearing && j.evicting) || (tearing && t.live == 0))
            continue; /* being evicted, or torn down with every member on its way out */
        if (j.state == ENG_JOB_FAILED || j.state == ENG_JOB_FINISHED || handshake) {
            /* bound again after it ended (by someone else), or in its handshake (asking it
             * forgot its bind time, eng_job_evict): its state stays, the start timeout counts
             * from the first sight */
            if (j.bound_ms == ENG_UNKNOWN_MS)
                e->jobs[gf->gang].bound_ms = j.bound_ms = now;
        } else if (!tearing && (j.state != ENG_JOB_RUNNING || j.bound_ms == ENG_UNKNOWN_MS)) {
            /* first seen bound (before this process led, or restored as running): the start
             * timeout counts from now */
            if (eng_job_bound(e, gf->gang, now) != 0)
                return SCHED_ENOMEM;
            j.bound_ms = now;
        }
        struct eng_life_action *act = &acts[n];
        char msg[900];
        *act = (struct eng_life_action){.gang = gf->gang,
                                        .whole = true,
                                        .max_restarts = gf->max_restarts,
                                        .backoff_max_ms = gf->backoff_max_ms};
        if (!tearing && t.started < t.live)
            due_at(&t.due, j.bound_ms, gf->start_timeout_ms, now); /* start timeout */
        if (t.due < e->life_due_ms)
            e->life_due_ms = t.due;
        if (!decide(gf, &t, j.bound_ms, tearing, now, act, msg, sizeof(msg)))
            continue;
        uint32_t min = gf->min_member ? gf->min_member : 1;
        if (gf->spread && act->reason != ENG_START_TIMEOUT && !tearing && t.live >= min &&
            t.n_lost > 0) {
            act->whole = false;
            act->lost = t.lost;
            act->n_lost = t.n_lost;
        }
        act->message = arena_strdup(a, msg);
        if (!act->message)
            return SCHED_ENOMEM;
        n++;
    }
    *out = acts;
    *n_out = n;
    return 0;
}

int eng_life_apply(struct eng *e, const struct eng_life_action *act, int64_t now,
                   struct eng_effects *fx)
{
    if (act->gang < e->cap_jobs)
        e->jobs[act->gang].backoff_max_ms = act->backoff_max_ms > 0 ? act->backoff_max_ms : 0;
    return eng_job_broken(e, act->gang, act->reason, act->own, act->whole, act->max_restarts,
                          act->strike_node, now, fx);
}

int64_t eng_clock_step(int64_t wall_delta_ms, int64_t mono_delta_ms)
{
    int64_t step = wall_delta_ms - mono_delta_ms;
    int64_t tol = 1000 + (mono_delta_ms > 0 ? mono_delta_ms / 500 : 0);
    return step > tol || step < -tol ? step : 0;
}

/* t + step, saturating; ENG_UNKNOWN_MS stays unknown. */
static int64_t shifted(int64_t t, int64_t step)
{
    if (t == ENG_UNKNOWN_MS)
        return t;
    if (step > 0 && t > INT64_MAX - step)
        return INT64_MAX;
    if (step < 0 && t < INT64_MIN + 1 - step)
        return INT64_MIN + 1;
    return t + step;
}

/* shifted() for a time whose 0 means "none": a time stays > 0 (1 at least), 0 stays 0. */
static void shift_set(int64_t *t, int64_t step)
{
    if (*t > 0) {
        int64_t v = shifted(*t, step);
        *t = v > 0 ? v : 1;
    }
}

/* The end of preemptor g's hold its victims' checkpoint handshakes ask for (eng_hold_extend):
 * the latest deadline of a victim asked by g, + hold_ms; 0 when none. */
static int64_t ckpt_hold_end(const struct eng *e, uint32_t g)
{
    int64_t end = 0;
    for (uint32_t v = 0; v < e->cap_jobs; v++) {
        const struct eng_job *j = &e->jobs[v];
        if (j->state == ENG_JOB_TEARING && j->ckpt_until_ms != 0 && j->ckpt_by == g) {
            int64_t t = shifted(j->ckpt_until_ms, e->lim.hold_ms);
            end = t > end ? t : end;
        }
    }
    return end;
}

void eng_clock_stepped(struct eng *e, int64_t step_ms)
{
    if (step_ms == 0)
        return;
    for (uint32_t g = 0; g < e->cap_jobs; g++) {
        struct eng_job *j = &e->jobs[g];
        if (j->state != ENG_JOB_NONE) /* zero-filled records: no time */
            j->bound_ms = shifted(j->bound_ms, step_ms);
        shift_set(&j->retry_at_ms, step_ms); /* a backoff's end */
        /* the first reservation's expected start and the probation promised to it, moved
         * together: a promise binds only while the two are equal (eng_probation_view). A gang
         * waiting in the daemon is in NONE and may have one. */
        shift_set(&j->reserve_first_ms, step_ms);
        shift_set(&j->probation_until_ms, step_ms);
        /* not ckpt_asked_ms, ckpt_until_ms: instants on the PodGroup's annotations, compared
         * with the workload's own (its last checkpoint) */
    }
    for (uint32_t n = 0; n < e->n_nodes; n++) {
        struct eng_node *st = &e->nodes[n];
        shift_set(&st->down_since, step_ms); /* 0: ready; NotReady times stay > 0 */
        shift_set(&st->until_ms, step_ms);   /* a quarantine's end; 0: never quarantined */
        if (st->strikes > 0)
            st->window_start_ms = shifted(st->window_start_ms, step_ms);
    }
    struct eng_hold_vec *hv = &e->holds[ENG_HOLDS];
    for (uint32_t h = 0; h < hv->n; h++) { /* preemptors' holds; not an operator's reservation */
        struct eng_hold *eh = &hv->v[h];
        if (eh->operator_id != 0 || eh->until_ms == INT64_MAX)
            continue;
        /* a hold that lasts until a victim's checkpoint deadline (an instant, not moved) +
         * hold_ms stays there; one that lasts longer (now + hold_ms of a later cycle) moves, and
         * never ends before that */
        int64_t floor = ckpt_hold_end(e, eh->gang);
        if (floor == 0 || eh->until_ms > floor)
            shift_set(&eh->until_ms, step_ms);
        if (eh->until_ms < floor)
            eh->until_ms = floor;
    }
    if (e->life_due_ms != INT64_MAX)
        e->life_due_ms = shifted(e->life_due_ms, step_ms);
}
