/* sched/sim/outfile.h: the simulator's output files written whole or not at all: --events,
 * --jobs-out (gangsched_sim.c) and --report (report.c).
 *
 * Owns: struct sim_outfile and the temporary files it creates. A file is written as
 * FILE.tmp-PID in the same directory and renamed to FILE once closed without error (fsync
 * first); on an error, or when closed with ok = false, the temporary file is removed and FILE
 * keeps what it had. A path that exists and is not a regular file (a device such as
 * /dev/stdout, a FIFO, a symbolic link) is written in place: renaming over it would replace the
 * device or the link itself.
 *
 * sim_outfile_guard() makes the process remove its open temporary files when SIGINT, SIGTERM
 * or SIGHUP ends it (then it dies of the signal as before), and ignore SIGXFSZ so that a file
 * size limit (ulimit -f) is a write error (EFBIG) with a message instead of a silent kill.
 * SIGKILL cannot be caught: a killed run may leave FILE.tmp-PID (never a partial FILE).
 *
 * Must not touch: what is written (the callers).
 */
#ifndef SCHED_SIM_OUTFILE_H
#define SCHED_SIM_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "sched/core/err.h"

struct sim_outfile {
    const char *path; /* NULL: not open */
    char tmp[4096];
    FILE *f;
    bool in_place;
    int slot; /* in the signal guard's table, or -1 */
};

/* Opens o for path (o->f is the stream). 0, or SCHED_EIO with a message naming path. */
int sim_outfile_open(struct sim_outfile *o, const char *path, struct sched_errbuf *eb);

/* ok: renames the file into place when every write succeeded; else (or on !ok) removes it.
 * Returns 0 when the file is in place; otherwise SCHED_EIO, with "writing PATH: CAUSE (nothing
 * written)" in eb when ok was true (eb untouched when !ok). Closing a closed o does nothing
 * (returns 0 when ok, SCHED_EIO when !ok). */
int sim_outfile_close(struct sim_outfile *o, bool ok, struct sched_errbuf *eb);

/* Installs the signal guard described above (once per process; the simulate command). */
void sim_outfile_guard(void);

#endif
