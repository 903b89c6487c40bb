/* sched/core/backlog.h: equivalence classes of the pending gangs within one cycle.
 *
 * Owns: the table that lets a cycle pass over a pending gang without trying it when the try
 * could change nothing. A class is (queue, shape, priority): equal shapes get equal placement
 * verdicts (gang.c), the queue and the need decide the quota check, and the queue and the
 * priority decide whether the gang could preempt anyone.
 *
 * The rule (docs/simulator.md, "Scaling"): in pass 0, a gang is skipped when the last gang of
 * its class that the cycle handled failed (resources, topology or held capacity: a verdict the
 * cycle's same-shape memo repeats), could preempt nobody, held no capacity of its own, and
 * nothing that decides the quota check has happened since (no placement, no preemption plan, no
 * reservation: the cycle's version), and no gang of its class holds capacity for a preemptor;
 * or when that gang was refused by its queue's quota and
 * nothing that decides the quota check has happened since. Such a gang would have got the
 * memo's verdict (a copy when every gang gets one) or the same quota verdict (a copy with its
 * own gang), no reservation (only the first gang of a shape reserves) and no victims, so the
 * decisions and verdicts are the ones of a cycle that tries it. Skipped gangs still count in
 * n_examined. Not used when the config has several flavors. A starving gang is never kept from its
 * reservation: only the first gang of a shape reserves, and that gang is always tried.
 *
 * Must not touch: the gangs (read only), anything but its arena.
 */
#ifndef SCHED_CORE_BACKLOG_H
#define SCHED_CORE_BACKLOG_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/arena.h"
#include "sched/core/hash.h"
#include "sched/core/model.h"

struct backlog_class {
    uint64_t key;     /* 0: empty slot */
    uint64_t version; /* the cycle's version when the class was last handled */
    bool inert;       /* its last handled gang failed in a way the memo repeats */
    int64_t verdict;  /* the verdict a skipped gang gets a copy of (index), or -1 */
    bool pinned;      /* some gang of the class holds capacity: never skipped this cycle */
    int64_t last;     /* position of the class's last gang in its queue (backlog_rest), or -1 */
};

/* Per queue, for backlog_rest: its classes (found from the end of the queue) and the last
 * position of a gang that may not be passed over, cached while nothing was noted. */
struct backlog_queue {
    uint64_t *keys; /* class keys (class_key) of the queue's classes */
    uint32_t n;
    bool scanned;
    uint64_t at_notes, at_version;
    int64_t limit; /* last position of a class that may not be skipped now, -1: none */
};

struct backlog {
    struct arena *arena;
    struct backlog_class *slot; /* open addressing, cap a power of two */
    uint32_t cap, n;
    bool on;
    uint64_t notes; /* backlog_note calls: a change of some class's state */
    struct backlog_queue *queues;
    uint32_t n_queues;
};

/* The part of a gang's class it carries itself (shape and priority; the queue is added by the
 * cycle). Queue lists keep it next to each pending gang (queue/queue.h). */
static inline uint64_t backlog_gang_key(const struct gang *g)
{
    return sched_mix64(g->shape ^ ((uint64_t)(uint32_t)g->priority * 0xD1B54A32D192ED03ull));
}

/* How often (in gangs passed over) the walk asks whether the rest of the queue may go at once. */
#define BACKLOG_REST_EVERY 16

/* How far ahead of the walk a gang's class fields are fetched into the cache. */
#define BACKLOG_AHEAD 32
static inline void backlog_prefetch(const struct gang *g)
{
    __builtin_prefetch(&g->shape);
    __builtin_prefetch(&g->priority);
}

/* Empty table for n_queues queues; `on` false disables every skip. 0 or SCHED_ENOMEM. */
int backlog_init(struct backlog *bl, struct arena *a, bool on, uint32_t n_queues);
/* How many gangs of queue q from position `pos` on (of n pending, their class keys `keys`, with
 * n_classes distinct ones) may all be passed over now without a verdict copy: n - pos when
 * every class that still has a gang there may be, else 0. The classes are found once per cycle
 * by a walk from the end of the queue that stops when all n_classes were seen. */
uint32_t backlog_rest(struct backlog *bl, uint32_t q, const uint64_t *keys, uint32_t n,
                      uint32_t n_classes, uint32_t pos, uint64_t version);
/* true when a gang of key gkey (backlog_gang_key) in queue q may be skipped at this version;
 * *verdict: the index of the verdict it gets a copy of (with its own gang), or -1 for none. */
bool backlog_skip(const struct backlog *bl, uint64_t gkey, uint32_t q, uint64_t version,
                  int64_t *verdict);
/* A gang of the class (gkey, q) holds capacity (a preemptor hold): none of the class is
 * skipped in this cycle, since that gang may start where the others cannot. 0 or SCHED_ENOMEM. */
int backlog_pin(struct backlog *bl, uint64_t gkey, uint32_t q);
/* Records how g (queue q), just handled at `version`, ended: inert or not, and the verdict a
 * skipped gang of its class would get a copy of (-1: none). 0 or SCHED_ENOMEM. */
int backlog_note(struct backlog *bl, uint64_t gkey, uint32_t q, uint64_t version, bool inert,
                 int64_t verdict);

#endif
