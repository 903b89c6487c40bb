/* sched/engine/names.h: stable engine ids for drivers that key gangs and nodes by name (the
 * daemon: "namespace/name", node names).
 *
 * Owns: an interning table name -> id. Ids are dense from 0 in order of first sight and are never
 * reused, so an id keeps meaning the same gang or node for the engine's lifetime even when the
 * object comes and goes. The simulator does not need it (its indices are stable already).
 * Must not touch: anything but its own memory (allocations through eng_realloc()).
 */
#ifndef SCHED_ENGINE_NAMES_H
#define SCHED_ENGINE_NAMES_H

#include <stdint.h>

struct eng_names;

struct eng_names *eng_names_new(void); /* NULL when out of memory */
void eng_names_free(struct eng_names *t);
/* The id of name, interned at first sight: 0 or SCHED_ENOMEM. */
int eng_names_id(struct eng_names *t, const char *name, uint32_t *id);
/* The id of a name seen before, or ENG_NONE (UINT32_MAX). */
uint32_t eng_names_find(const struct eng_names *t, const char *name);
/* The name of id (NULL: no such id). */
const char *eng_names_name(const struct eng_names *t, uint32_t id);
uint32_t eng_names_count(const struct eng_names *t);

#endif
