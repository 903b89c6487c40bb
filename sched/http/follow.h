/* sched/http/follow.h: a standby that follows the leader's store (docs/store.md "Fail-over").
 *
 * Owns: while this replica waits for the Lease, fetching the leader's database every interval
 * (GET URL/v1/store/snapshot over the HTTP API, the bearer token of a file when given) into
 * DB.follow (written to a temporary name, checked by opening it read-only, then renamed); at
 * takeover, adopting DB.follow as DB when it is newer than DB. The fetch runs on a libuv worker
 * thread (libcurl, blocking, bounded by a timeout), never on the loop.
 * Must not touch: DB itself except in http_follow_adopt, called before the store is opened.
 *
 * Embedding (the daemon): http_follow_start at start-up when --follow is given;
 * http_follow_stop when the Lease is won (and at exit); http_follow_adopt before opening the
 * store as leader.
 */
#ifndef SCHED_HTTP_FOLLOW_H
#define SCHED_HTTP_FOLLOW_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "sched/core/err.h"

#define HTTP_FOLLOW_DEFAULT_MS 10000 /* ms between two fetches */

struct http_follow;

/* url: the leader's API ("http://gangsched.gangsched-system.svc:8080": the Service routes only
 * to the ready replica, the leader); token_file: a read token, or NULL. */
int http_follow_start(uv_loop_t *loop, const char *url, const char *token_file, const char *db_path,
                      uint32_t interval_ms, struct http_follow **out, struct sched_errbuf *eb);
/* Stops fetching: a fetch in flight is aborted and never writes DB.follow after this returns
 * (its copy is discarded); the memory is freed once it ends (run the loop). NULL: no-op. */
void http_follow_stop(struct http_follow *f);
/* Snapshots fetched so far (tests, logs). */
uint64_t http_follow_count(const struct http_follow *f);

/* Replaces db_path by db_path.follow when that exists, opens read-only as a database, and is
 * newer than db_path (and its -wal). Returns 1 when adopted (what: a line for the log), 0 when
 * there was nothing to adopt, or a negative SCHED_E* code with a message. */
int http_follow_adopt(const char *db_path, char *what, size_t cap, struct sched_errbuf *eb);

#endif
