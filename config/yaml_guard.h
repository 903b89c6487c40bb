/* config/yaml_guard.h: a cheap first pass over YAML input before building a document.
 *
 * Owns: the nesting limit for every YAML the project reads (operator configuration, NodeLists).
 * libyaml's document loader has no depth limit and slows down badly on absurdly nested input;
 * this pass walks the event stream and stops at the first level past the limit, so hostile or
 * broken files fail fast with a message naming file:line:column.
 */
#ifndef CONFIG_YAML_GUARD_H
#define CONFIG_YAML_GUARD_H

#include <stddef.h>

#include "sched/core/err.h"

#define CONFIG_YAML_MAX_DEPTH 64

/* 0 when `data` nests at most max_depth collections deep (or has a syntax error: the caller's
 * real parse reports those); SCHED_EINVAL with "name:line:column: nesting deeper than N levels"
 * otherwise; SCHED_ENOMEM when libyaml cannot allocate. */
int config_yaml_guard(const char *name, const char *data, size_t len, unsigned max_depth,
                      struct sched_errbuf *eb);

#endif
