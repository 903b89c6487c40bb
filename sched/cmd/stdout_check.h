/* sched/cmd/stdout_check.h: the commands' last check of standard output (gangsched, gangctl).
 *
 * Owns: nothing but the check. A table, a document, --help or a completion script cut short by
 * a full disk must not end in exit 0.
 */
#ifndef SCHED_CMD_STDOUT_CHECK_H
#define SCHED_CMD_STDOUT_CHECK_H

#include <stdbool.h>

/* Flushes standard output and checks that no write was refused (its error flag); with close,
 * closes it too. 0, or -1 after "PROG: writing standard output: REASON" on stderr. */
int stdout_check(const char *prog, bool close);

#endif
