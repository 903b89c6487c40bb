/* sched/engine/life.h: the lifecycle rules of bound gangs, over neutral member facts, for both
 * drivers (docs/lifecycle.md, docs/engine.md).
 *
 * Owns: the decision, for every bound gang a driver describes, whether it must be torn down (or,
 * for an inference gang, lose only some members) and why. The facts are neutral: per member its
 * node (an engine node id), its phase, readiness and words; per node since when it is NotReady.
 * The daemon fills them from its cache, the simulator from its failure injection. The gang's
 * binding time and whether it is being torn down or evicted come from the engine's job table
 * (engine.h); a gang the engine does not know as bound (the daemon saw it running before it led)
 * is recorded as bound now, so its start timeout counts from now (a gang that ended, failed or
 * finished, keeps its state and counts from its first sight).
 *
 * Rules, per bound gang with minMember m (first that applies):
 *   - a gang being evicted (preemption) is left alone; a gang being torn down with no live
 *     member left too;
 *   - being torn down while members are still live (bound after its teardown or rollback began):
 *     MemberLost, whole, not its own failure;
 *   - a member in phase Failed: MemberFailed, its own failure;
 *   - a member on a node NotReady for at least grace_ms: NodeLost, not its own failure;
 *   - fewer than m live members, at least one live: MemberLost (an elastic gang with more than
 *     m members goes on while m remain; a gang with none live is going away whole and is left
 *     alone);
 *   - a live member in a part of the gang that runs below its own minimum (short_part: a group
 *     of a CompositePodGroup tree that lost members while the tree keeps its quorum): MemberLost,
 *     that part's live members only (not whole), not its own failure; the gang goes on and the
 *     part starts again whole;
 *   - not every live member Running and Ready start_timeout_ms after binding: StartTimeout, its
 *     own failure, a strike on the node of the first member that did not start;
 *   - a member Succeeded: the gang is completing, left alone (checked before all of the above).
 * A gang that spreads (inference) replaces only its lost members while it keeps m live ones
 * (not for StartTimeout): `whole` is false and lost[] names the members.
 * Must not touch: I/O, the drivers' structures; it writes only into the arena and the job table.
 */
#ifndef SCHED_ENGINE_LIFE_H
#define SCHED_ENGINE_LIFE_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/arena.h"
#include "sched/engine/engine.h"

enum eng_phase {
    ENG_POD_PENDING = 0, /* bound, not running yet */
    ENG_POD_RUNNING,
    ENG_POD_SUCCEEDED,
    ENG_POD_FAILED,
};

struct eng_member {
    uint32_t node;         /* engine node id, ENG_NONE: not bound */
    uint8_t phase;         /* enum eng_phase */
    bool ready;            /* condition Ready */
    bool gone;             /* deleted or being deleted: neither live nor a new failure */
    const char *name;      /* for messages ("namespace/name"), may be NULL */
    const char *node_name; /* for messages, may be NULL */
    const char *why;       /* the pod's own words (reason: message), may be NULL */
    /* the part of the gang this member is in when that part runs below its own minimum (a
     * driver's words, "podgroup ns/b: 1 of minCount 2 pods live"), else NULL */
    const char *short_part;
};

struct eng_gang_facts {
    uint32_t gang; /* engine gang id */
    const struct eng_member *members;
    uint32_t n_members;
    uint32_t min_member;      /* 0: 1 */
    int64_t start_timeout_ms; /* the gang's settings (queue defaults or its own) */
    int64_t grace_ms;         /* NotReady grace */
    uint32_t max_restarts;
    int64_t backoff_max_ms; /* the retry delay's cap after an own failure (the queue's
                               lifecycle.backoffMax); 0: ENG_BACKOFF_MAX_MS */
    bool spread;            /* inference: replace only lost members */
};

struct eng_life_action {
    uint32_t gang;
    enum eng_reason reason;
    bool own;   /* the job's own failure: counts against its retry budget */
    bool whole; /* delete every member; else only lost[] */
    uint32_t max_restarts;
    int64_t backoff_max_ms; /* the facts' */
    const uint32_t *lost;   /* member indices into the facts' members, when !whole */
    uint32_t n_lost;
    uint32_t strike_node; /* node of a member that failed to start, or ENG_NONE */
    const char *message;  /* readable, with the pods' own words */
};

/* One action per gang that must be torn down (or lose members) now. node_down_since[n] (engine
 * node ids, n < n_nodes; 0: ready) says since when node n is NotReady; NULL: the engine's own
 * record (eng_node_ready()). 0 or SCHED_ENOMEM. */
int eng_life_check(struct eng *e, const struct eng_gang_facts *gangs, uint32_t n_gangs, int64_t now,
                   const int64_t *node_down_since, uint32_t n_nodes, struct arena *a,
                   struct eng_life_action **out, uint32_t *n_out);

/* Carries out an action in the engine: eng_job_broken() with the action's fields, the job
 * keeping its backoff_max_ms for the retry delay of the teardown. */
int eng_life_apply(struct eng *e, const struct eng_life_action *act, int64_t now,
                   struct eng_effects *fx);

/* The wall clock's step between two readings of a driver (ms, > 0 forward), from how far the
 * wall clock and a monotonic clock moved meanwhile; 0 when they agree within 1 s plus 2 ms a
 * second of the interval (NTP slews the wall clock by at most 0.5 ms a second: that is not a
 * step). */
int64_t eng_clock_step(int64_t wall_delta_ms, int64_t mono_delta_ms);

/* The driver's wall clock (the `now` of every call) stepped by step_ms (an NTP step, an
 * operator's date): every deadline that is a duration from an event of this run moves by it, so
 * the step counts neither as time elapsed (a forward step would tear down every starting gang as
 * its own failure, end every quarantine and hold at once) nor as time not elapsed. Moved: each
 * job's bound_ms (the start timeout), retry_at_ms (the backoff's end), reserve_first_ms and
 * probation_until_ms (an expected start and the promise to it, now plus estimates), each node's
 * NotReady since (the grace), quarantine end and strike window, the preemptors' holds (now +
 * hold_ms) and the next due time of the lifecycle rules. Not moved: the instants exchanged with
 * others, which their clocks read too: a checkpoint request's time and deadline (PodGroup
 * annotations; a preemptor's hold that lasts until that deadline + hold_ms stays so, a longer
 * one moves but not below it) and an operator's reservation's end (stored, and shown by GET
 * /v1/reservations). */
void eng_clock_stepped(struct eng *e, int64_t step_ms);

#endif
