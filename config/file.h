/* config/file.h: reading the operator's files without ever blocking on them: the configuration
 * (config_load_file: simulate, config check, run and serve at start, hot reload) and the
 * bearer-token files (the HTTP API's --token-file and --read-token-file, gangctl --token-file,
 * serve --follow's token).
 *
 * Owns: config_file_read (a whole regular file, bounded) and config_token_read (the one reader
 * of token files). A file is opened with O_NONBLOCK and must then be a regular file (a symlink
 * to one is followed, as in a mounted ConfigMap or Secret): a FIFO, device, socket or directory
 * is refused with an error naming the file. Opening a FIFO without O_NONBLOCK waits for a
 * writer, and run and serve read these files on their event loop.
 *
 * Must not touch: parsing (load.c), the event loop.
 */
#ifndef CONFIG_FILE_H
#define CONFIG_FILE_H

#include <stddef.h>

#include "sched/core/err.h"

/* Largest configuration file, in bytes. */
#define CONFIG_FILE_MAX ((size_t)4 << 20)

/* Largest token a token file may hold, in bytes (a Kubernetes service-account JWT is about
 * 1-2 KB); a longer one is an error, never cut. */
#define CONFIG_TOKEN_MAX      16384
/* Largest token file, in bytes (its first line is the token; the rest is ignored). */
#define CONFIG_TOKEN_FILE_MAX ((size_t)64 << 10)

/* The regular file at `path`, whole, into a malloc'd buffer NUL-terminated after *len bytes
 * (*len <= max). Errors (the message names the file): SCHED_EIO when it cannot be opened or
 * read or is not a regular file, SCHED_EINVAL when it is larger than max bytes, SCHED_ENOMEM. */
int config_file_read(const char *path, size_t max, char **out, size_t *len,
                     struct sched_errbuf *eb);

/* The same for one-shot commands (config check, simulate --config): a FIFO is read too, waiting
 * for its writer (`gangsched config check <(kubectl get ...)`); never on an event loop. */
int config_file_read_pipe(const char *path, size_t max, char **out, size_t *len,
                          struct sched_errbuf *eb);

/* The token of a token file: its first line (up to "\n" or "\r\n"), spaces and tabs around it
 * removed; into buf (cap bytes, NUL-terminated), its length in *len. Errors name the file: as
 * config_file_read (at most CONFIG_TOKEN_FILE_MAX bytes), an empty first line, a token of cap
 * bytes or more, a control character inside the token (a header cannot carry it). */
int config_token_read(const char *path, char *buf, size_t cap, size_t *len,
                      struct sched_errbuf *eb);

#endif
