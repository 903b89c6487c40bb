/* sched/sim/outfile.c: output files written whole or not at all (see outfile.h). */
#include "sched/sim/outfile.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporary files open now, for the signal handler: a slot is claimed (its path copied,
 * then `used` set) before the file is created and released after it is renamed or removed. */
#define GUARD_SLOTS 8
static struct {
    char path[4096];
    volatile sig_atomic_t used;
} guard[GUARD_SLOTS];

static void on_fatal(int sig)
{
    for (int i = 0; i < GUARD_SLOTS; i++)
        if (guard[i].used)
            unlink(guard[i].path); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

void sim_outfile_guard(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    signal(SIGXFSZ, SIG_IGN);
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_fatal;
        sigemptyset(&sa.sa_mask);
        /* a signal the caller ignores (nohup) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

static int claim(const char *tmp)
{
    for (int i = 0; i < GUARD_SLOTS; i++)
        if (!guard[i].used) {
            memcpy(guard[i].path, tmp, strlen(tmp) + 1);
            guard[i].used = 1;
            return i;
        }
    return -1; /* more files than slots: only SIGKILL-like cleanup for this one */
}

static void release(struct sim_outfile *o)
{
    if (o->slot >= 0)
        guard[o->slot].used = 0;
    o->slot = -1;
}

int sim_outfile_open(struct sim_outfile *o, const char *path, struct sched_errbuf *eb)
{
    o->path = NULL;
    o->f = NULL;
    o->slot = -1;
    struct stat st;
    o->in_place = lstat(path, &st) == 0 && !S_ISREG(st.st_mode);
    if (o->in_place) {
        if (!(o->f = fopen(path, "w")))
            return sched_fail(eb, SCHED_EIO, "cannot write %s: %s", path, strerror(errno));
        o->path = path;
        return 0;
    }
    if (snprintf(o->tmp, sizeof(o->tmp), "%s.tmp-%ld", path, (long)getpid()) >= (int)sizeof(o->tmp))
        return sched_fail(eb, SCHED_EIO, "cannot write %s: path too long", path);
    o->slot = claim(o->tmp);
    if (!(o->f = fopen(o->tmp, "w"))) {
        int e = errno;
        release(o);
        return sched_fail(eb, SCHED_EIO, "cannot write %s: %s", path, strerror(e));
    }
    o->path = path;
    return 0;
}

int sim_outfile_close(struct sim_outfile *o, bool ok, struct sched_errbuf *eb)
{
    if (!o->f)
        return ok ? 0 : SCHED_EIO;
    errno = 0;
    bool good =
        ok && fflush(o->f) == 0 && !ferror(o->f) && (o->in_place || fsync(fileno(o->f)) == 0);
    int saved = errno;
    if (fclose(o->f) != 0 && good) {
        saved = errno;
        good = false;
    }
    o->f = NULL;
    if (!o->in_place) {
        if (good && rename(o->tmp, o->path) != 0) {
            saved = errno;
            good = false;
        }
        if (!good)
            remove(o->tmp);
        release(o);
    }
    if (good)
        return 0;
    if (ok)
        sched_fail(eb, SCHED_EIO, "writing %s: %s%s", o->path, strerror(saved ? saved : EIO),
                   o->in_place ? "" : " (nothing written)");
    return SCHED_EIO;
}
