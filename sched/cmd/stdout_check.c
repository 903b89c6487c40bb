/* sched/cmd/stdout_check.c: see stdout_check.h. */
#include "sched/cmd/stdout_check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int stdout_check(const char *prog, bool close)
{
    errno = 0;
    bool bad = fflush(stdout) != 0 || ferror(stdout);
    int e = errno; /* 0 when the refused write was an earlier one */
    if (close && fclose(stdout) != 0 && !bad) {
        bad = true;
        e = errno;
    }
    if (!bad)
        return 0;
    fprintf(stderr, "%s: writing standard output: %s\n", prog, e ? strerror(e) : "a write failed");
    return -1;
}
