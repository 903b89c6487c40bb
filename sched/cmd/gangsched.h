/* sched/cmd/gangsched.h: what the files of the gangsched command share (internal to it).
 *
 * gangsched.c: main, the commands' dispatch, run, serve, config, store, completion;
 * gangsched_sim.c: simulate.
 */
#ifndef SCHED_CMD_GANGSCHED_H
#define SCHED_CMD_GANGSCHED_H

/* `gangsched simulate`: argv without the command words; returns the exit code (0 success, 1
 * runtime or input error, 2 usage error). */
int gangsched_simulate(int argc, char **argv);

#endif
