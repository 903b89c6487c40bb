/* config/file.c: the operator's files read without blocking (see file.h). */
#include "config/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "a device";
    return "not a regular file";
}

/* max as the error message shows it: "4 MiB", "64 KiB" or "N bytes". */
static void fmt_size(size_t max, char *buf, size_t cap)
{
    if (max >= ((size_t)1 << 20) && max % ((size_t)1 << 20) == 0)
        snprintf(buf, cap, "%zu MiB", max >> 20);
    else if (max >= 1024 && max % 1024 == 0)
        snprintf(buf, cap, "%zu KiB", max >> 10);
    else
        snprintf(buf, cap, "%zu bytes", max);
}

static int read_open(const char *path, bool pipe_ok, size_t max, char **out, size_t *len,
                     struct sched_errbuf *eb);

int config_file_read(const char *path, size_t max, char **out, size_t *len, struct sched_errbuf *eb)
{
    return read_open(path, false, max, out, len, eb);
}

int config_file_read_pipe(const char *path, size_t max, char **out, size_t *len,
                          struct sched_errbuf *eb)
{
    return read_open(path, true, max, out, len, eb);
}

static int read_open(const char *path, bool pipe_ok, size_t max, char **out, size_t *len,
                     struct sched_errbuf *eb)
{
    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer;
     * on a regular file it changes nothing */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return sched_fail(eb, SCHED_EIO, "cannot read %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sched_fail(eb, SCHED_EIO, "cannot read %s: %s", path, strerror(e));
    }
    if (pipe_ok && S_ISFIFO(st.st_mode)) {
        /* a one-shot command reading `<(kubectl ...)`: wait for the writer, as cat would */
        close(fd);
        fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            return sched_fail(eb, SCHED_EIO, "cannot read %s: %s", path, strerror(errno));
        st.st_size = 0;
    } else if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sched_fail(eb, SCHED_EIO, "cannot read %s: %s, not a regular file", path,
                          kind_of(st.st_mode));
    }
    /* the size fstat saw is a hint only (the file may change while read): read up to max + 1 */
    size_t cap = st.st_size > 0 && (uintmax_t)st.st_size < max ? (size_t)st.st_size + 1 : 4096;
    if (cap > max + 1)
        cap = max + 1;
    char *buf = malloc(cap + 1);
    size_t n = 0;
    int rc = buf ? 0 : sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
    while (rc == 0 && n <= max) {
        if (n == cap) {
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                rc = sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", path);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = sched_fail(eb, SCHED_EIO, "cannot read %s: %s", path, strerror(errno));
        else if (got == 0)
            break;
        else
            n += (size_t)got;
    }
    close(fd);
    if (rc == 0 && n > max) {
        char m[32];
        fmt_size(max, m, sizeof(m));
        rc = sched_fail(eb, SCHED_EINVAL, "%s: larger than %s", path, m);
    }
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

int config_token_read(const char *path, char *buf, size_t cap, size_t *len, struct sched_errbuf *eb)
{
    *len = 0;
    if (cap > 0)
        buf[0] = 0;
    char *text = NULL;
    size_t n = 0;
    int rc = config_file_read(path, CONFIG_TOKEN_FILE_MAX, &text, &n, eb);
    if (rc != 0)
        return rc;
    size_t end = 0;
    while (end < n && text[end] != '\n')
        end++;
    if (end > 0 && text[end - 1] == '\r')
        end--;
    size_t start = 0;
    while (start < end && (text[start] == ' ' || text[start] == '\t'))
        start++;
    while (end > start && (text[end - 1] == ' ' || text[end - 1] == '\t'))
        end--;
    size_t k = end - start;
    for (size_t i = start; i < end && rc == 0; i++)
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
            rc = sched_fail(eb, SCHED_EINVAL,
                            "token file %s: a control character at byte %zu of its first line",
                            path, i + 1);
    if (rc == 0 && k == 0)
        rc = sched_fail(eb, SCHED_EINVAL, "token file %s: no token on its first line", path);
    if (rc == 0 && k >= cap)
        rc = sched_fail(eb, SCHED_ERANGE, "token file %s: the token is %zu bytes, above %zu", path,
                        k, cap - 1);
    if (rc == 0) {
        memcpy(buf, text + start, k);
        buf[k] = 0;
        *len = k;
    }
    free(text);
    return rc;
}
