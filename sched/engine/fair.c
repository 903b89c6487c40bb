/* sched/engine/fair.c: the fair-share history (see fair.h): the shares of an instant, and the
 * daemon's history by queue name (names.h ids, a record per id). */
#include "sched/engine/fair.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue.h"
#include "sched/core/err.h"
#include "sched/engine/engine.h"
#include "sched/engine/names.h"

void eng_fair_observe(const struct quota_tree *qt, double *share)
{
    for (uint32_t q = 0; q < qt->cfg->n_queues; q++)
        share[q] = quota_share(qt, q, 0, NULL);
}

/* One queue's history. */
struct fair_rec {
    double hist;   /* at at_ms */
    double share;  /* the share the observation of generation `seen` left */
    int64_t at_ms; /* ENG_UNKNOWN_MS: never integrated (a queue first seen starts at 0) */
    uint64_t seen; /* eng_fair_take generation of `share`; 0: none */
};

struct eng_fair {
    struct eng_names *names; /* queue name -> id */
    struct fair_rec *rec;    /* [cap] by id */
    uint32_t cap;
    uint64_t gen; /* eng_fair_take calls so far */
};

struct eng_fair *eng_fair_new(void)
{
    struct eng_fair *f = eng_realloc(NULL, sizeof(*f));
    if (!f)
        return NULL;
    memset(f, 0, sizeof(*f));
    if (!(f->names = eng_names_new())) {
        free(f);
        return NULL;
    }
    return f;
}

void eng_fair_free(struct eng_fair *f)
{
    if (!f)
        return;
    eng_names_free(f->names);
    free(f->rec);
    free(f);
}

/* The record of queue `name`, created (never integrated, no share) at first sight; NULL when
 * out of memory. */
static struct fair_rec *rec_of(struct eng_fair *f, const char *name)
{
    uint32_t id;
    if (eng_names_id(f->names, name, &id) != 0)
        return NULL;
    if (id >= f->cap) {
        uint32_t cap = f->cap ? f->cap * 2 : 16;
        while (cap <= id)
            cap *= 2;
        struct fair_rec *v = eng_realloc(f->rec, (size_t)cap * sizeof(*v));
        if (!v)
            return NULL;
        for (uint32_t i = f->cap; i < cap; i++)
            v[i] = (struct fair_rec){.at_ms = ENG_UNKNOWN_MS};
        f->rec = v;
        f->cap = cap;
    }
    return &f->rec[id];
}

int eng_fair_restore(struct eng_fair *f, const char *queue, double hist, int64_t at_ms)
{
    if (!queue || !isfinite(hist) || hist < 0)
        return SCHED_EINVAL;
    struct fair_rec *r = rec_of(f, queue);
    if (!r)
        return SCHED_ENOMEM;
    *r = (struct fair_rec){.hist = hist, .at_ms = at_ms};
    return 0;
}

/* The shares of `usage` (sched_snapshot.usage's layout) into share[cfg->n_queues]. */
static int shares_of(const struct config *cfg, const int64_t *usage, struct arena *a, double *share)
{
    struct quota_tree qt;
    if (quota_build(&qt, cfg, usage, a) != 0)
        return SCHED_ENOMEM;
    eng_fair_observe(&qt, share);
    return 0;
}

int eng_fair_advance(struct eng_fair *f, const struct config *cfg, const int64_t *usage,
                     struct arena *a, int64_t now, double *hist)
{
    double *seen = NULL; /* the shares of the usage the cycle sees, for gaps: built when needed */
    for (uint32_t q = 0; q < cfg->n_queues; q++) {
        struct fair_rec *r = rec_of(f, cfg->queues[q].name);
        if (!r)
            return SCHED_ENOMEM;
        if (r->at_ms == ENG_UNKNOWN_MS) { /* first seen: no history before now */
            r->at_ms = now;
        } else if (now > r->at_ms) {
            bool gap = f->gen == 0 || r->seen != f->gen; /* not observed at the last take */
            if (gap && !seen) {
                seen = arena_calloc(a, cfg->n_queues, sizeof(*seen));
                if (!seen || shares_of(cfg, usage, a, seen) != 0)
                    return SCHED_ENOMEM;
            }
            r->hist = queue_decay(r->hist, gap ? seen[q] : r->share, now - r->at_ms,
                                  cfg->fair_half_life_ms);
            r->at_ms = now;
        }
        hist[q] = r->hist;
    }
    return 0;
}

int eng_fair_take(struct eng_fair *f, const struct config *cfg, const int64_t *usage,
                  struct arena *a)
{
    f->gen++; /* first: a take that fails leaves every queue not taken a gap */
    double *share = arena_calloc(a, cfg->n_queues + 1, sizeof(*share));
    if (!share || shares_of(cfg, usage, a, share) != 0)
        return SCHED_ENOMEM;
    for (uint32_t q = 0; q < cfg->n_queues; q++) {
        struct fair_rec *r = rec_of(f, cfg->queues[q].name);
        if (!r)
            return SCHED_ENOMEM;
        r->share = share[q];
        r->seen = f->gen;
    }
    return 0;
}

void eng_fair_skip(struct eng_fair *f)
{
    f->gen++;
}

bool eng_fair_find(const struct eng_fair *f, const char *queue, double *hist, int64_t *at_ms)
{
    uint32_t id = eng_names_find(f->names, queue);
    if (id == ENG_NONE || id >= f->cap || f->rec[id].at_ms == ENG_UNKNOWN_MS)
        return false;
    *hist = f->rec[id].hist;
    *at_ms = f->rec[id].at_ms;
    return true;
}

void eng_fair_clock_stepped(struct eng_fair *f, int64_t step_ms)
{
    for (uint32_t i = 0; f && step_ms != 0 && i < f->cap; i++) {
        int64_t *t = &f->rec[i].at_ms;
        if (*t == ENG_UNKNOWN_MS)
            continue;
        if (step_ms > 0 ? *t <= INT64_MAX - step_ms : *t >= INT64_MIN + 1 - step_ms)
            *t += step_ms;
    }
}
