/* sched/http/limits.c: the HTTP server's limit flags (struct http_limits, docs/api.md
 * "Limits"), shared by `gangsched serve` and `gangsched run`. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/http/server.h"

const char http_limit_help[] =
    "  --http-max-conns N       connections served at once (default 4096); more get 503\n"
    "  --http-probe-conns N     further connections kept for /healthz and /readyz only\n"
    "                           (default 16)\n"
    "  --http-timeout MS        a request must arrive within it, and an idle keep-alive\n"
    "                           connection is closed after it (default 10000)\n"
    "  --http-write-timeout MS  a client that does not take an answer within it is\n"
    "                           disconnected (default 10000)\n"
    "  --http-max-output BYTES  the largest answer one connection is sent (default 8388608);\n"
    "                           list routes page with limit and continue\n";

int http_limit_flag(struct http_limits *l, const char *flag, const char *value,
                    struct sched_errbuf *eb)
{
    uint32_t *dst = strcmp(flag, "--http-max-conns") == 0       ? &l->max_conns
                    : strcmp(flag, "--http-probe-conns") == 0   ? &l->probe_conns
                    : strcmp(flag, "--http-timeout") == 0       ? &l->timeout_ms
                    : strcmp(flag, "--http-write-timeout") == 0 ? &l->write_timeout_ms
                    : strcmp(flag, "--http-max-output") == 0    ? &l->max_output
                                                                : NULL;
    if (!dst)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = value && *value >= '0' && *value <= '9' ? strtoull(value, &end, 10) : 0;
    if (!end || *end || errno || v == 0 || v > UINT32_MAX ||
        (dst == &l->max_conns && v > 1000000) || (dst == &l->max_output && v < 1024))
        return sched_fail(eb, SCHED_EINVAL, "%s: '%s' is not a whole number in range%s", flag,
                          value ? value : "",
                          dst == &l->max_output ? " (1024 to 4294967295 bytes)" : "");
    *dst = (uint32_t)v;
    return 1;
}
