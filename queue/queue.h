/* queue/queue.h: the order of pending gangs.
 *
 * Owns: the ordering rule between two pending gangs and the sorted per-queue pending lists the
 * drivers keep between cycles (so a cycle never sorts). Order, first key first:
 *   1. job priority, higher first (only when the policy orders by priority);
 *   2. submission time, earlier first (a requeued gang keeps its original time);
 *   3. gang id, lower first (a total order: same input, same output).
 * Fair share between queues is applied by the cycle when it merges the queues' heads.
 *
 * Must not touch: gangs (borrowed, never modified), the cluster, any I/O.
 * Memory management: a queue_list owns its pointer and key arrays, not the gangs.
 */
#ifndef QUEUE_QUEUE_H
#define QUEUE_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/core/model.h"

/* <0 when a goes first, >0 when b goes first, never 0 for distinct ids. */
int queue_cmp(const struct gang *a, const struct gang *b, bool by_priority);

struct queue_list {
    const struct gang **items; /* sorted by queue_cmp */
    uint64_t *keys;            /* parallel to items: backlog_gang_key() of each (the cycle reads
                                  a gang's class without touching the gang) */
    /* members per class key (open addressing, a power of two slots; count 0 = free or left by
     * the last member): n_classes is the number of distinct classes in the list */
    struct queue_class_count {
        uint64_t key;
        uint32_t count;
    } * classes;
    uint32_t class_cap, class_used, n_classes;
    uint32_t n;
    uint32_t cap;
    bool by_priority;
};

void queue_list_init(struct queue_list *l, bool by_priority);
void queue_list_fini(struct queue_list *l);
/* O(log n) search + O(n) move; returns 0 or SCHED_ENOMEM. */
int queue_list_insert(struct queue_list *l, const struct gang *g);
/* Returns true when g was present. */
bool queue_list_remove(struct queue_list *l, const struct gang *g);
/* Position of g (0 = next to run), or -1. */
int64_t queue_list_position(const struct queue_list *l, const struct gang *g);

/* Decayed historical share: the exponentially weighted average of a queue's share, updated over
 * an interval of dt_ms during which the share was `share`. The weight of the past halves every
 * half_life_ms; half_life_ms <= 0 means no history (returns 0). */
double queue_decay(double hist, double share, int64_t dt_ms, int64_t half_life_ms);

#endif
