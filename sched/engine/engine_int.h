/* sched/engine/engine_int.h: the engine's private state, shared by its own files only (no driver
 * includes this). */
#ifndef SCHED_ENGINE_ENGINE_INT_H
#define SCHED_ENGINE_ENGINE_INT_H

#include "sched/engine/engine.h"

struct eng_node {
    uint32_t strikes;        /* failed starts in the current window */
    int64_t window_start_ms; /* start of that window */
    int64_t until_ms;        /* quarantined until (0: never) */
    bool released;           /* the RELEASE effect of that quarantine was given */
    int64_t down_since;      /* NotReady since (0: ready) */
};

/* A list of holds, in insertion order with swap-remove (the order the core sees them). */
struct eng_hold_vec {
    struct eng_hold *v;
    uint32_t n, cap;
};

struct eng {
    struct eng_limits lim;
    struct eng_job *jobs; /* [cap_jobs], by engine gang id */
    uint32_t cap_jobs;
    struct eng_node *nodes; /* [cap_nodes], by engine node id; n_nodes: highest seen + 1 */
    uint32_t cap_nodes, n_nodes;
    struct eng_hold_vec holds[2]; /* enum eng_hold_list */
    int64_t life_due_ms; /* the earliest time a verdict of the last eng_life_check changes with
                            time alone (a start timeout, a NotReady grace); INT64_MAX: none */
};

void eng_emit(struct eng_effects *fx, const struct eng_effect *ef);

/* Whether gang g is among the forgotten ones of eng_jobs_forget: bit g of mark, or (mark NULL)
 * one of ids[0..n). */
struct eng_forget {
    const uint8_t *mark;
    const uint32_t *ids;
    uint32_t n;
};
bool eng_forgotten(const struct eng_forget *f, uint32_t g);
/* Drops the preemptor holds and the hints of the forgotten gangs (holds.c). */
void eng_holds_forget(struct eng *e, const struct eng_forget *f);

#endif
