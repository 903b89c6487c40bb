/* config/reload.h: hot reload of the operator configuration on one libuv loop.
 *
 * Owns: a `struct config_watch` and everything in it: the configurations it loaded (the current
 * one and retired ones that are still pinned), one uv_signal_t (SIGHUP), one uv_fs_event_t on the
 * file's directory and one uv_timer_t (debounce and retry), the rejection counters and the last
 * error message. Must not touch: the scheduler state, the cluster, the configuration file (it only
 * reads it), other signal handlers (libuv lets several SIGHUP watchers coexist).
 *
 * Triggers:
 *   - SIGHUP: reloads at once.
 *   - file changes: the DIRECTORY of the file is watched, so that a replacement by rename (editors,
 *     "write temp then rename") or a Kubernetes ConfigMap symlink swap (the "..data" link is
 *     renamed) is seen; events for other names are ignored. A burst of events reloads once, after
 *     CONFIG_WATCH_DEBOUNCE_MS of quiet. If the directory disappears or is replaced, the watch
 *     re-arms itself every CONFIG_WATCH_RETRY_MS and reloads once it is back; SIGHUP keeps
 *     working meanwhile.
 *   - config_watch_reload(): a manual trigger.
 *
 * A reload whose file bytes hash to the current config->version is a no-op. A file that cannot
 * be read or is invalid is rejected: the old configuration stays current, the message
 * ("file:line:column: key: problem") is logged with LOG_ERROR, remembered
 * (config_watch_last_error) and counted (config_watch_failures). The same rejected content (or the
 * same read error) seen again is not counted or logged as an error twice.
 *
 * Lifetime of configurations (the safe design: nothing the driver uses is freed under it):
 *   - The watch owns every configuration; the driver never calls config_free() on them.
 *   - config_watch_current() is valid until the next applied reload returns (every reload runs on
 *     the loop thread, so it is valid for the rest of the current callback at least).
 *   - A driver that uses a configuration across loop iterations (a cycle running in uv_queue_work,
 *     derived state such as a quota tree pointing into it) pins it: config_watch_pin() at cycle
 *     start, config_watch_unpin() once nothing refers to it any more. A retired configuration is
 *     freed when its last pin goes, or right after the apply callback returns if it had none.
 *   - "Applies from the next cycle": the apply callback only stores the fact (or rebuilds derived
 *     state); the next cycle pins the new current configuration. A running cycle keeps the
 *     configuration it pinned, so running work is never lost.
 *
 * Threads: every function must be called on the loop thread (pin before uv_queue_work, unpin in
 * its after_work callback).
 */
#ifndef CONFIG_RELOAD_H
#define CONFIG_RELOAD_H

#include <stdint.h>

#include <uv.h>

#include "config/config.h"
#include "sched/core/err.h"

#define CONFIG_WATCH_DEBOUNCE_MS 200  /* quiet time after the last file event before reloading */
#define CONFIG_WATCH_RETRY_MS    1000 /* re-arm interval while the directory cannot be watched */

struct config_watch;

/* Called on the loop thread after a new valid configuration became current. When it runs,
 * config_watch_current() already returns `fresh`; `old` (the previous current one) is readable
 * until the callback returns, and after that only if it is pinned. Neither may be freed by the
 * callee. The callback may call config_watch_pin/unpin and config_watch_stop, but not
 * config_watch_reload (it would return SCHED_EINVAL). */
typedef void config_apply_fn(void *data, const struct config *fresh, const struct config *old);

/* Loads `path` once (fails with the loader's message in eb if it is unreadable or invalid; then
 * nothing was created and *out is NULL) and starts the triggers on `loop`. `apply` may be NULL.
 * A directory that cannot be watched right now is not an error: a warning is logged and the watch
 * retries. Returns 0 or SCHED_E*. */
int config_watch_start(uv_loop_t *loop, const char *path, config_apply_fn *apply, void *data,
                       struct config_watch **out, struct sched_errbuf *eb);

/* The current configuration (never NULL while the watch runs). */
const struct config *config_watch_current(const struct config_watch *w);

/* Pins the current configuration and returns it; it stays valid until the matching unpin, across
 * any number of reloads. */
const struct config *config_watch_pin(struct config_watch *w);
/* Releases a pin taken by config_watch_pin(); frees `c` if it is retired and unpinned. */
void config_watch_unpin(struct config_watch *w, const struct config *c);

/* Reloads now: 0 when a new configuration was applied (the callback ran), 1 when the file is
 * unchanged (same version), < 0 (SCHED_E*) when it was rejected and the old one is kept. */
int config_watch_reload(struct config_watch *w);

/* Changes the debounce delay of file events (default CONFIG_WATCH_DEBOUNCE_MS). */
void config_watch_set_debounce(struct config_watch *w, uint64_t ms);

/* Counters for metrics: reload attempts, applied reloads, unchanged (no-op) reloads, rejected
 * reloads. */
struct config_watch_stats {
    uint64_t attempts;
    uint64_t applied;
    uint64_t unchanged;
    uint64_t failures;
};
void config_watch_stats(const struct config_watch *w, struct config_watch_stats *out);
/* Rejected reloads so far (the same as stats.failures). */
uint64_t config_watch_failures(const struct config_watch *w);
/* The message of the most recent rejection, or "" when there was none or a later reload found a
 * valid file (applied or unchanged). Valid until the next reload. */
const char *config_watch_last_error(const struct config_watch *w);

/* Stops every trigger and closes the three handles; the watch and all its configurations (pinned
 * ones included: stop after the last cycle ended) are freed in the close callbacks, i.e. during
 * the next uv_run(). `w` must not be used after this call. NULL is a no-op. */
void config_watch_stop(struct config_watch *w);

#endif
