/* sched/http/follow.h: a standby that follows the leader's store (docs/store.md "Fail-over").
 *
 * Owns: while this replica waits for the Lease, fetching the leader's database every interval
 * (GET URL/v1/store/snapshot over the HTTP API, the bearer token of a file when given) into
 * DB.follow (written to a temporary name, checked by opening it read-only, then renamed); at
 * takeover, adopting DB.follow as DB when it is newer than DB. The fetch runs on a libuv worker
 * thread (libcurl, blocking, bounded by a timeout), never on the loop. A failed fetch is tried
 * again soon; one the leader shed for load (503 with Retry-After) after its Retry-After, bounded.
 * Must not touch: DB itself except in http_follow_adopt, called before the store is opened.
 *
 * Embedding (the daemon): http_follow_start at start-up when --follow is given;
 * http_follow_stop when the Lease is won (and at exit); http_follow_adopt before opening the
 * store as leader.
 */
#ifndef SCHED_HTTP_FOLLOW_H
#define SCHED_HTTP_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "sched/core/err.h"

#define HTTP_FOLLOW_DEFAULT_MS   10000 /* ms between two fetches */
#define HTTP_FOLLOW_SOON_MS      1000  /* ms: the next try after a failed fetch (not shed) */
#define HTTP_FOLLOW_RETRY_MAX_MS 60000 /* ms: the longest Retry-After a follower honours */

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

/* Whether a fetch's answer was shed by the leader for load: 503 (or 429) with a Retry-After
 * (retry_after_s > 0, s), which the leader's answer budget sends (--http-max-queued,
 * --http-max-snapshots; docs/api.md). A 503 without one is another replica's: not the leader,
 * or no database yet. */
bool http_follow_shed(long status, int64_t retry_after_s);
/* When the next fetch starts after a failed one (ms from its end; 0: at the regular interval):
 * shed, after its Retry-After, at most HTTP_FOLLOW_RETRY_MAX_MS; otherwise after
 * HTTP_FOLLOW_SOON_MS when the interval is longer. Either way the interval goes on from there. */
uint64_t http_follow_retry_ms(long status, int64_t retry_after_s, uint32_t interval_ms);

/* Replaces db_path by db_path.follow when that exists, opens read-only as a database, and is
 * newer than db_path (and its -wal). Returns 1 when adopted (what: a line for the log), 0 when
 * there was nothing to adopt, or a negative SCHED_E* code with a message. */
int http_follow_adopt(const char *db_path, char *what, size_t cap, struct sched_errbuf *eb);

#endif
