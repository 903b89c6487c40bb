/* sched/core/err.h: the project's error codes.
 *
 * Owns: the negative error constants every infrastructure function returns (0 = success), and
 * their names and messages. Scheduling outcomes (placed, waiting, unschedulable) are not errors
 * and never use these codes; see sched/core/cycle.h.
 */
#ifndef SCHED_CORE_ERR_H
#define SCHED_CORE_ERR_H

#include <stddef.h>

/* X-macro: name, value, message. */
#define SCHED_ERRNO_MAP(XX)                                                                        \
    XX(EINVAL, -1, "invalid input")                                                                \
    XX(ENOMEM, -2, "out of memory")                                                                \
    XX(EIO, -3, "input/output error")                                                              \
    XX(ERANGE, -4, "value out of range")                                                           \
    XX(ENOENT, -5, "not found")                                                                    \
    XX(EFULL, -6, "table full")                                                                    \
    XX(EEXIST, -7, "already exists")

enum sched_err {
#define SCHED_ERR_ENUM(name, val, msg) SCHED_##name = (val),
    SCHED_ERRNO_MAP(SCHED_ERR_ENUM)
#undef SCHED_ERR_ENUM
};

/* Returns a static message for a SCHED_E* code (or "success" for 0, "unknown error" otherwise). */
const char *sched_strerror(int err);

/* A caller-supplied buffer for rich error messages ("file:line:column: ..."). */
#define SCHED_ERRBUF 512
struct sched_errbuf {
    char msg[SCHED_ERRBUF];
};

/* printf into an error buffer (NULL-safe); returns `err` so callers can `return sched_fail(...)`.
 */
int sched_fail(struct sched_errbuf *eb, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copies s[0..len) into dst (capacity cap >= 8) as printable text: '"', '\\' and bytes outside
 * 0x20..0x7e are escaped, a long input is cut with "...". Error messages quote untrusted input
 * this way. */
void sched_quote(const char *s, size_t len, char *dst, size_t cap);

#endif
