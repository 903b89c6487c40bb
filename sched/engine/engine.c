/* sched/engine/engine.c: jobs, retry budget, strikes and quarantine (see engine.h). */
#include "sched/engine/engine.h"

#include <stdlib.h>
#include <string.h>

#include "sched/core/err.h"
#include "sched/engine/engine_int.h"

static eng_realloc_fn *realloc_hook;

void eng_set_realloc(eng_realloc_fn *fn)
{
    realloc_hook = fn;
}

void *eng_realloc(void *p, size_t n)
{
    return realloc_hook ? realloc_hook(p, n) : realloc(p, n);
}

void eng_limits_default(struct eng_limits *l)
{
    *l = (struct eng_limits){.strikes = ENG_STRIKES,
                             .strike_window_ms = ENG_STRIKE_WINDOW_MS,
                             .quarantine_ms = ENG_QUARANTINE_MS,
                             .hold_ms = ENG_HOLD_MS,
                             .backoff_ms = ENG_BACKOFF_MS};
}

const char *eng_state_name(enum eng_state s)
{
    static const char *const names[] = {"None",    "Pending",  "Running", "Finished", "Failed",
                                        "Backoff", "Admitted", "Binding", "Tearing"};
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "Unknown";
}

const char *eng_reason_name(enum eng_reason r)
{
    static const char *const names[] = {"StartTimeout", "MemberFailed", "NodeLost",
                                        "MemberLost",   "BindRefused",  "Evicted"};
    return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "Unknown";
}

/* ---- effects ------------------------------------------------------------------------------ */

void eng_effects_clear(struct eng_effects *fx)
{
    fx->n = 0;
    fx->oom = false;
}

void eng_effects_free(struct eng_effects *fx)
{
    free(fx->v);
    memset(fx, 0, sizeof(*fx));
}

void eng_emit(struct eng_effects *fx, const struct eng_effect *ef)
{
    if (!fx)
        return;
    if (fx->n == fx->cap) {
        uint32_t cap = fx->cap ? fx->cap * 2 : 8;
        struct eng_effect *v = eng_realloc(fx->v, cap * sizeof(*v));
        if (!v) {
            fx->oom = true;
            return;
        }
        fx->v = v;
        fx->cap = cap;
    }
    fx->v[fx->n++] = *ef;
}

/* ---- the engine ----------------------------------------------------------------------------- */

struct eng *eng_new(const struct eng_limits *limits)
{
    struct eng *e = eng_realloc(NULL, sizeof(*e));
    if (!e)
        return NULL;
    memset(e, 0, sizeof(*e));
    e->life_due_ms = INT64_MAX;
    if (limits)
        e->lim = *limits;
    else
        eng_limits_default(&e->lim);
    return e;
}

void eng_free(struct eng *e)
{
    if (!e)
        return;
    for (int l = 0; l < 2; l++) {
        for (uint32_t h = 0; h < e->holds[l].n; h++)
            free(e->holds[l].v[h].nodes);
        free(e->holds[l].v);
    }
    free(e->jobs);
    free(e->nodes);
    free(e);
}

const struct eng_limits *eng_limits(const struct eng *e)
{
    return &e->lim;
}

/* Grows a zero-filled table of `size`-byte records to hold index i: 0 or SCHED_ENOMEM. */
static int grow(void **v, uint32_t *cap, uint32_t i, size_t size)
{
    if (i < *cap)
        return 0;
    if (i == UINT32_MAX)
        return SCHED_EINVAL;
    uint32_t nc = *cap ? *cap : 64;
    while (nc <= i)
        nc = nc > UINT32_MAX / 2 ? UINT32_MAX : nc * 2;
    void *nv = eng_realloc(*v, (size_t)nc * size);
    if (!nv)
        return SCHED_ENOMEM;
    memset((char *)nv + (size_t)*cap * size, 0, (size_t)(nc - *cap) * size);
    *v = nv;
    *cap = nc;
    return 0;
}

static struct eng_job *job_at(struct eng *e, uint32_t g)
{
    if (grow((void **)&e->jobs, &e->cap_jobs, g, sizeof(*e->jobs)) != 0)
        return NULL;
    return &e->jobs[g];
}

static struct eng_node *node_at(struct eng *e, uint32_t n)
{
    if (grow((void **)&e->nodes, &e->cap_nodes, n, sizeof(*e->nodes)) != 0)
        return NULL;
    if (n >= e->n_nodes)
        e->n_nodes = n + 1;
    return &e->nodes[n];
}

int eng_reserve(struct eng *e, uint32_t n_gangs, uint32_t n_nodes)
{
    if (n_gangs > 0 && grow((void **)&e->jobs, &e->cap_jobs, n_gangs - 1, sizeof(*e->jobs)) != 0)
        return SCHED_ENOMEM;
    if (n_nodes > 0 && grow((void **)&e->nodes, &e->cap_nodes, n_nodes - 1, sizeof(*e->nodes)) != 0)
        return SCHED_ENOMEM;
    return 0;
}

/* ---- jobs ----------------------------------------------------------------------------------- */

struct eng_job eng_job(const struct eng *e, uint32_t g)
{
    struct eng_job none = {0};
    return g < e->cap_jobs ? e->jobs[g] : none;
}

enum eng_state eng_job_state(const struct eng *e, uint32_t g)
{
    return g < e->cap_jobs ? (enum eng_state)e->jobs[g].state : ENG_JOB_NONE;
}

static int set_state(struct eng *e, uint32_t g, enum eng_state s)
{
    struct eng_job *j = job_at(e, g);
    if (!j)
        return SCHED_ENOMEM;
    if (s != j->state)
        j->bound_ms = ENG_UNKNOWN_MS; /* the binding time belongs to one run */
    j->state = (uint8_t)s;
    if (s != ENG_JOB_TEARING)
        j->evicting = j->own = j->give_up = false;
    if (s != ENG_JOB_PENDING)
        j->reserve_first_ms = 0; /* it left its queue: a later wait makes a new promise */
    if (s != ENG_JOB_ADMITTED && s != ENG_JOB_BINDING && s != ENG_JOB_RUNNING) {
        j->probation_until_ms = 0; /* the probation belongs to one run */
        j->probation_for = ENG_NONE;
    }
    if (s != ENG_JOB_TEARING)
        j->ckpt_asked_ms = j->ckpt_until_ms = 0; /* the handshake belongs to one eviction */
    return 0;
}

int eng_job_reserved(struct eng *e, uint32_t g, int64_t expected_start_ms)
{
    struct eng_job *j = job_at(e, g);
    if (!j)
        return SCHED_ENOMEM;
    if (j->reserve_first_ms == 0 && expected_start_ms > 0 && expected_start_ms != INT64_MAX)
        j->reserve_first_ms = expected_start_ms;
    return 0;
}

int eng_job_probation(struct eng *e, uint32_t g, uint32_t for_g)
{
    struct eng_job *j = job_at(e, g);
    if (!j)
        return SCHED_ENOMEM;
    int64_t until = for_g < e->cap_jobs ? e->jobs[for_g].reserve_first_ms : 0;
    j->probation_until_ms = until;
    j->probation_for = until > 0 ? for_g : ENG_NONE;
    return 0;
}

int eng_job_restore_promise(struct eng *e, uint32_t g, int64_t reserve_first_ms,
                            int64_t probation_until_ms, uint32_t probation_for)
{
    struct eng_job *j = job_at(e, g);
    if (!j)
        return SCHED_ENOMEM;
    bool runs =
        j->state == ENG_JOB_ADMITTED || j->state == ENG_JOB_BINDING || j->state == ENG_JOB_RUNNING;
    j->reserve_first_ms =
        j->state == ENG_JOB_PENDING && reserve_first_ms > 0 ? reserve_first_ms : 0;
    bool on = runs && probation_until_ms > 0 && probation_for != ENG_NONE;
    j->probation_until_ms = on ? probation_until_ms : 0;
    j->probation_for = on ? probation_for : ENG_NONE;
    return 0;
}

int eng_job_submit(struct eng *e, uint32_t g)
{
    return set_state(e, g, ENG_JOB_PENDING);
}

int eng_job_admit(struct eng *e, uint32_t g)
{
    return set_state(e, g, ENG_JOB_ADMITTED);
}

int eng_job_binding(struct eng *e, uint32_t g)
{
    return set_state(e, g, ENG_JOB_BINDING);
}

int eng_job_bound(struct eng *e, uint32_t g, int64_t bound_ms)
{
    int rc = set_state(e, g, ENG_JOB_RUNNING);
    if (rc == 0) {
        e->jobs[g].bound_ms = bound_ms;
        eng_hold_drop(e, g);
    }
    return rc;
}

int eng_job_finish(struct eng *e, uint32_t g)
{
    return set_state(e, g, ENG_JOB_FINISHED);
}

int eng_job_reject(struct eng *e, uint32_t g)
{
    return set_state(e, g, ENG_JOB_FAILED);
}

int eng_job_evict(struct eng *e, uint32_t g)
{
    int rc = set_state(e, g, ENG_JOB_TEARING);
    if (rc == 0)
        e->jobs[g].evicting = true;
    return rc;
}

int eng_job_ckpt_request(struct eng *e, uint32_t g, uint32_t by, int64_t asked_ms, int64_t until_ms)
{
    if (g >= e->cap_jobs || e->jobs[g].state != ENG_JOB_TEARING || !e->jobs[g].evicting ||
        until_ms <= asked_ms)
        return SCHED_EINVAL;
    struct eng_job *j = &e->jobs[g];
    j->ckpt_asked_ms = asked_ms;
    j->ckpt_until_ms = until_ms;
    j->ckpt_by = by;
    return 0;
}

enum eng_ckpt eng_job_ckpt_check(struct eng *e, uint32_t g, int64_t last_ckpt_ms, int64_t now)
{
    if (g >= e->cap_jobs || e->jobs[g].state != ENG_JOB_TEARING || e->jobs[g].ckpt_until_ms == 0)
        return ENG_CKPT_NONE;
    struct eng_job *j = &e->jobs[g];
    enum eng_ckpt v = last_ckpt_ms > j->ckpt_asked_ms ? ENG_CKPT_ANSWERED
                      : now >= j->ckpt_until_ms       ? ENG_CKPT_TIMEOUT
                                                      : ENG_CKPT_WAIT;
    if (v != ENG_CKPT_WAIT)
        j->ckpt_until_ms = 0; /* over: the eviction is the driver's now */
    return v;
}

int eng_job_bind_refused(struct eng *e, uint32_t g)
{
    return set_state(e, g, ENG_JOB_TEARING);
}

int eng_job_restore(struct eng *e, uint32_t g, enum eng_state s, uint32_t restarts)
{
    int rc = set_state(e, g, s);
    if (rc == 0)
        e->jobs[g].restarts = restarts;
    return rc;
}

int eng_job_broken(struct eng *e, uint32_t g, enum eng_reason why, bool own, bool whole,
                   uint32_t max_restarts, uint32_t strike_node, int64_t now, struct eng_effects *fx)
{
    struct eng_job *j = job_at(e, g);
    if (!j)
        return SCHED_ENOMEM;
    if (whole && j->state == ENG_JOB_TEARING)
        j->ckpt_until_ms = 0; /* a handshake under way is over: this teardown is its eviction */
    if (whole && j->state != ENG_JOB_TEARING) { /* torn down again: the first verdict stands */
        j->state = ENG_JOB_TEARING;
        j->evicting = false;
        j->own = own;
        if (own)
            j->restarts++;
        j->give_up = own && j->restarts > max_restarts;
    }
    eng_emit(fx, &(struct eng_effect){.kind = ENG_FX_TEARDOWN,
                                      .gang = g,
                                      .node = ENG_NONE,
                                      .t_ms = now,
                                      .reason = why,
                                      .own = own,
                                      .whole = whole,
                                      .restarts = j->restarts,
                                      .max_restarts = max_restarts});
    if (strike_node != ENG_NONE) {
        int rc = eng_strike(e, strike_node, now, fx);
        if (rc != 0)
            return rc;
        j = &e->jobs[g];
    }
    if (whole && j->give_up)
        eng_emit(fx, &(struct eng_effect){.kind = ENG_FX_GIVE_UP,
                                          .gang = g,
                                          .node = ENG_NONE,
                                          .t_ms = now,
                                          .reason = why,
                                          .own = own,
                                          .restarts = j->restarts,
                                          .max_restarts = max_restarts});
    return fx && fx->oom ? SCHED_ENOMEM : 0;
}

int eng_job_gone(struct eng *e, uint32_t g, int64_t now, struct eng_effects *fx)
{
    if (g >= e->cap_jobs || e->jobs[g].state != ENG_JOB_TEARING)
        return 0;
    struct eng_job *j = &e->jobs[g];
    j->bound_ms = ENG_UNKNOWN_MS; /* its run is over */
    if (j->give_up) {
        j->state = ENG_JOB_FAILED;
        j->own = j->give_up = j->evicting = false;
        j->ckpt_asked_ms = j->ckpt_until_ms = 0;
        return 0;
    }
    int64_t at = now;
    if (j->own && e->lim.backoff_ms > 0) { /* backoff_ms * 2^(restarts-1), capped: no overflow */
        int64_t delay = e->lim.backoff_ms;
        int64_t max = j->backoff_max_ms > 0 ? j->backoff_max_ms : ENG_BACKOFF_MAX_MS;
        int64_t cap = delay > max ? delay : max;
        for (uint32_t k = 1; k < j->restarts && delay < cap; k++)
            delay *= 2;
        at = now + (delay < cap ? delay : cap);
    }
    j->state = at > now ? ENG_JOB_BACKOFF : ENG_JOB_PENDING;
    j->retry_at_ms = at > now ? at : 0;
    j->own = j->give_up = j->evicting = false;
    j->ckpt_asked_ms = j->ckpt_until_ms = 0;
    eng_emit(fx, &(struct eng_effect){.kind = ENG_FX_REQUEUE,
                                      .gang = g,
                                      .node = ENG_NONE,
                                      .t_ms = at,
                                      .restarts = j->restarts});
    return fx && fx->oom ? SCHED_ENOMEM : 0;
}

int eng_job_retry(struct eng *e, uint32_t g)
{
    if (g < e->cap_jobs && e->jobs[g].state == ENG_JOB_BACKOFF) {
        e->jobs[g].state = ENG_JOB_PENDING;
        e->jobs[g].retry_at_ms = 0;
    }
    return 0;
}

bool eng_job_schedulable(const struct eng *e, uint32_t g)
{
    enum eng_state s = eng_job_state(e, g);
    return s != ENG_JOB_FAILED && s != ENG_JOB_BACKOFF && s != ENG_JOB_TEARING;
}

uint32_t eng_job_bound_id(const struct eng *e)
{
    return e->cap_jobs;
}

bool eng_forgotten(const struct eng_forget *f, uint32_t g)
{
    if (g == ENG_NONE)
        return false;
    if (f->mark)
        return g <= f->bound && ((f->mark[g / 8] >> (g % 8)) & 1u);
    for (uint32_t i = 0; i < f->n; i++)
        if (f->ids[i] == g)
            return true;
    return false;
}

void eng_jobs_forget(struct eng *e, const uint32_t *g, uint32_t n)
{
    uint32_t bound = 0; /* the largest id forgotten: the mask holds bits 0..bound */
    for (uint32_t i = 0; i < n; i++)
        if (g[i] != ENG_NONE && g[i] > bound)
            bound = g[i];
    uint8_t *mark = n > 1 ? eng_realloc(NULL, (size_t)bound / 8 + 1) : NULL;
    struct eng_forget f = {.mark = mark, .bound = bound, .ids = g, .n = n};
    if (mark)
        memset(mark, 0, (size_t)bound / 8 + 1);
    for (uint32_t i = 0; i < n; i++) {
        if (g[i] == ENG_NONE)
            continue;
        if (mark)
            mark[g[i] / 8] |= (uint8_t)(1u << (g[i] % 8));
        if (g[i] < e->cap_jobs)
            e->jobs[g[i]] = (struct eng_job){0}; /* as an id never seen */
    }
    for (uint32_t j = 0; n && j < e->cap_jobs; j++) {
        struct eng_job *r = &e->jobs[j];
        if (r->probation_until_ms && eng_forgotten(&f, r->probation_for)) {
            r->probation_until_ms = 0;
            r->probation_for = 0;
        }
        if (r->ckpt_until_ms && eng_forgotten(&f, r->ckpt_by))
            r->ckpt_by = ENG_NONE;
    }
    if (n)
        eng_holds_forget(e, &f);
    free(mark);
}

/* ---- strikes and quarantine ------------------------------------------------------------------ */

int eng_strike(struct eng *e, uint32_t n, int64_t now, struct eng_effects *fx)
{
    struct eng_node *st = node_at(e, n);
    if (!st)
        return SCHED_ENOMEM;
    if (st->until_ms > now)
        return 0; /* quarantined already: the strike does not count */
    if (st->strikes == 0 || now - st->window_start_ms > e->lim.strike_window_ms) {
        st->strikes = 0;
        st->window_start_ms = now;
    }
    if (++st->strikes < e->lim.strikes)
        return 0;
    st->strikes = 0;
    st->until_ms = now + e->lim.quarantine_ms;
    st->released = false;
    eng_emit(fx, &(struct eng_effect){
                     .kind = ENG_FX_QUARANTINE, .gang = ENG_NONE, .node = n, .t_ms = st->until_ms});
    return fx && fx->oom ? SCHED_ENOMEM : 0;
}

bool eng_quarantined(const struct eng *e, uint32_t n, int64_t now)
{
    return n < e->n_nodes && e->nodes[n].until_ms > now;
}

int64_t eng_quarantine_until(const struct eng *e, uint32_t n)
{
    return n < e->n_nodes ? e->nodes[n].until_ms : 0;
}

void eng_release_due(struct eng *e, uint32_t n, int64_t now, struct eng_effects *fx)
{
    if (n >= e->n_nodes)
        return;
    struct eng_node *st = &e->nodes[n];
    if (st->until_ms == 0 || st->until_ms > now || st->released)
        return;
    st->released = true;
    eng_emit(
        fx, &(struct eng_effect){.kind = ENG_FX_RELEASE, .gang = ENG_NONE, .node = n, .t_ms = now});
}

void eng_tick(struct eng *e, int64_t now, struct eng_effects *fx)
{
    for (uint32_t n = 0; n < e->n_nodes; n++)
        eng_release_due(e, n, now, fx);
    for (uint32_t g = 0; g < e->cap_jobs; g++)
        if (e->jobs[g].state == ENG_JOB_BACKOFF && e->jobs[g].retry_at_ms <= now) {
            eng_job_retry(e, g);
            eng_emit(fx, &(struct eng_effect){.kind = ENG_FX_REQUEUE,
                                              .gang = g,
                                              .node = ENG_NONE,
                                              .t_ms = now,
                                              .restarts = e->jobs[g].restarts});
        }
}

int64_t eng_next_due(const struct eng *e, int64_t now)
{
    int64_t due = e->life_due_ms > now ? e->life_due_ms : INT64_MAX;
    for (uint32_t n = 0; n < e->n_nodes; n++)
        if (e->nodes[n].until_ms > now && !e->nodes[n].released && e->nodes[n].until_ms < due)
            due = e->nodes[n].until_ms; /* quarantine end */
    for (uint32_t g = 0; g < e->cap_jobs; g++)
        if (e->jobs[g].state == ENG_JOB_BACKOFF && e->jobs[g].retry_at_ms > now &&
            e->jobs[g].retry_at_ms < due)
            due = e->jobs[g].retry_at_ms; /* backoff expiry */
        else if (e->jobs[g].state == ENG_JOB_TEARING && e->jobs[g].ckpt_until_ms > now &&
                 e->jobs[g].ckpt_until_ms < due)
            due = e->jobs[g].ckpt_until_ms; /* a checkpoint handshake's grace ends */
    const struct eng_hold_vec *hv = &e->holds[ENG_HOLDS];
    for (uint32_t h = 0; h < hv->n; h++)
        if (hv->v[h].until_ms > now && hv->v[h].until_ms < due)
            due = hv->v[h].until_ms; /* hold or reservation expiry (INT64_MAX: none) */
    return due;
}

int eng_node_ready(struct eng *e, uint32_t n, bool ready, int64_t now)
{
    if (ready && n >= e->n_nodes)
        return 0;
    struct eng_node *st = node_at(e, n);
    if (!st)
        return SCHED_ENOMEM;
    if (ready)
        st->down_since = 0;
    else if (st->down_since == 0)
        st->down_since = now > 0 ? now : 1;
    return 0;
}

int64_t eng_node_down_since(const struct eng *e, uint32_t n)
{
    return n < e->n_nodes ? e->nodes[n].down_since : 0;
}
