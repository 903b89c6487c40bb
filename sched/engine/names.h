/* sched/engine/names.h: stable engine ids for drivers that key gangs and nodes by name (the
 * daemon: "namespace/name", node names).
 *
 * Owns: an interning table name -> id. Ids are dense from 0 in order of first sight; an id keeps
 * meaning the same name until the driver drops it (eng_names_drop: the object is gone for good,
 * its engine record forgotten with eng_jobs_forget), after which a new name may be given the
 * same id. The simulator does not need it (its indices are stable already).
 * Must not touch: anything but its own memory (allocations through eng_realloc()).
 */
#ifndef SCHED_ENGINE_NAMES_H
#define SCHED_ENGINE_NAMES_H

#include <stdint.h>

struct eng_names;

struct eng_names *eng_names_new(void); /* NULL when out of memory */
void eng_names_free(struct eng_names *t);
/* The id of name, interned at first sight (a dropped id first, else the next new one): 0,
 * SCHED_ENOMEM or SCHED_ERANGE (UINT32_MAX - 1 ids in use). */
int eng_names_id(struct eng_names *t, const char *name, uint32_t *id);
/* The id of a name seen before, or ENG_NONE (UINT32_MAX). */
uint32_t eng_names_find(const struct eng_names *t, const char *name);
/* The name of id (NULL: no such id). */
const char *eng_names_name(const struct eng_names *t, uint32_t id);
/* Every id ever given is below this bound (dropped ones included: a map by id needs this many). */
uint32_t eng_names_count(const struct eng_names *t);
/* Names interned and not dropped. */
uint32_t eng_names_live(const struct eng_names *t);
/* Drops id's name: eng_names_find no longer finds it, eng_names_name is NULL, and the id is given
 * to a later new name. An id not in use: nothing. 0 or SCHED_ENOMEM (nothing dropped). */
int eng_names_drop(struct eng_names *t, uint32_t id);

#endif
