/* tests/unit/test_reload.c: hot reload of the configuration (config/reload.h) on a real libuv
 * loop with real files in a mkdtemp directory: rewrite, write-then-rename, ConfigMap symlink
 * swap, invalid files, SIGHUP, unchanged content, pins, a directory that disappears, and a clean
 * loop after config_watch_stop. Every wait is bounded by a uv_timer_t guard (at most 3 s).
 *
 * Owns: its temporary directory (removed in teardown). Must not touch anything else.
 */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "config/config.h"
#include "config/reload.h"

#define HDR  "apiVersion: gangsched.io/v1alpha1\nkind: SchedulerConfig\n"
#define WAIT 3000 /* ms: upper bound of every wait */

static const char cfg_a[] = HDR "queues:\n  - name: alpha\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 8\n";
static const char cfg_b[] = HDR "queues:\n  - name: beta\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 16\n";
static const char cfg_c[] = HDR "queues:\n  - name: gamma\n    quota:\n      default:\n"
                                "        nvidia.com/gpu: 4\n";
/* line 7, column 25: a negative quota */
static const char cfg_bad[] = HDR "queues:\n  - name: alpha\n    quota:\n      default:\n"
                                  "        nvidia.com/gpu: -4\n";

struct fx {
    uv_loop_t loop;
    uv_timer_t guard;
    bool timed_out;
    bool running; /* inside run_until */
    char dir[64];
    char path[128];
    struct config_watch *w;
    /* what the apply callback saw */
    int calls;
    bool current_was_fresh;
    uint64_t fresh_version, old_version;
    char fresh_queue[32], old_queue[32];
};

/* ---- files ---- */

static void write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
}

static void remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *de;
            while ((de = readdir(d)) != NULL) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                    continue;
                char sub[512];
                snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
                remove_tree(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* ---- loop helpers ---- */

/* uv_stop: if the guard expires in the timer pass at the top of uv_run(UV_RUN_ONCE), no timer
 * is left to bound the poll that follows; a stopped loop polls without blocking. */
static void on_guard(uv_timer_t *t)
{
    struct fx *f = t->data;
    f->timed_out = true;
    uv_stop(t->loop);
}

/* Runs the loop until done(f) or `ms` elapsed; returns done(f). Never sleeps. */
static bool run_until(struct fx *f, bool (*done)(const struct fx *), uint64_t ms)
{
    f->timed_out = false;
    f->running = true;
    uv_timer_start(&f->guard, on_guard, ms, 0);
    while (!(done && done(f)) && !f->timed_out)
        uv_run(&f->loop, UV_RUN_ONCE);
    uv_timer_stop(&f->guard);
    f->running = false;
    return done ? done(f) : true;
}

/* Runs the loop for `ms` (to see that nothing more happens). */
static void run_for(struct fx *f, uint64_t ms)
{
    run_until(f, NULL, ms);
}

static bool one_call(const struct fx *f)
{
    return f->calls >= 1;
}

static bool one_failure(const struct fx *f)
{
    return config_watch_failures(f->w) >= 1;
}

static bool one_attempt(const struct fx *f)
{
    struct config_watch_stats st;
    config_watch_stats(f->w, &st);
    return st.attempts >= 1;
}

static void on_apply(void *data, const struct config *fresh, const struct config *old)
{
    struct fx *f = data;
    f->calls++;
    if (f->running)
        uv_stop(&f->loop); /* let run_until look at the result now */
    f->current_was_fresh = config_watch_current(f->w) == fresh;
    /* both are readable here */
    f->fresh_version = fresh->version;
    f->old_version = old->version;
    snprintf(f->fresh_queue, sizeof(f->fresh_queue), "%s",
             fresh->n_queues ? fresh->queues[0].name : "");
    snprintf(f->old_queue, sizeof(f->old_queue), "%s", old->n_queues ? old->queues[0].name : "");
}

static void start_watch(struct fx *f)
{
    struct sched_errbuf eb = {{0}};
    int rc = config_watch_start(&f->loop, f->path, on_apply, f, &f->w, &eb);
    if (rc != 0)
        fail_msg("config_watch_start: %s", eb.msg);
    assert_non_null(f->w);
}

/* "PATH:LINE:COLUMN:" at the start of msg */
static bool has_location(const char *msg, const char *path)
{
    size_t n = strlen(path);
    if (strncmp(msg, path, n) != 0 || msg[n] != ':')
        return false;
    const char *p = msg + n + 1;
    for (int field = 0; field < 2; field++) {
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
        if (*p++ != ':')
            return false;
    }
    return true;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/gangsched-reload-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/cfg.yaml", f->dir);
    write_file(f->path, cfg_a);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    assert_int_equal(uv_timer_init(&f->loop, &f->guard), 0);
    f->guard.data = f;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    config_watch_stop(f->w);
    uv_close((uv_handle_t *)&f->guard, NULL);
    int run = uv_run(&f->loop, UV_RUN_DEFAULT);
    int closed = uv_loop_close(&f->loop); /* 0: every handle closed */
    remove_tree(f->dir);
    free(f);
    assert_int_equal(run, 0);
    assert_int_equal(closed, 0);
    return 0;
}

/* ---- tests ---- */

static void test_initial_load(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    const struct config *c = config_watch_current(f->w);
    assert_non_null(c);
    assert_int_equal(c->n_queues, 1);
    assert_string_equal(c->queues[0].name, "alpha");
    assert_string_equal(c->path, f->path);
    assert_int_equal(config_watch_failures(f->w), 0);
    assert_string_equal(config_watch_last_error(f->w), "");
    /* nothing happens without a change */
    run_for(f, 50);
    assert_int_equal(f->calls, 0);
}

static void test_rewrite_applied(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    const struct config *before = config_watch_current(f->w);
    uint64_t v0 = before->version;
    write_file(f->path, cfg_b);
    assert_true(run_until(f, one_call, WAIT));
    assert_true(f->current_was_fresh);
    assert_string_equal(f->old_queue, "alpha");
    assert_string_equal(f->fresh_queue, "beta");
    assert_true(f->old_version == v0);
    const struct config *now = config_watch_current(f->w);
    assert_string_equal(now->queues[0].name, "beta");
    assert_true(now->version == f->fresh_version);
    assert_true(now->version != v0);
    /* the burst of events reloaded once */
    run_for(f, 2 * CONFIG_WATCH_DEBOUNCE_MS);
    assert_int_equal(f->calls, 1);
    assert_int_equal(config_watch_failures(f->w), 0);
}

static void test_rename_applied(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    char tmp[160];
    snprintf(tmp, sizeof(tmp), "%s/.cfg.yaml.tmp", f->dir);
    write_file(tmp, cfg_b);
    assert_int_equal(rename(tmp, f->path), 0);
    assert_true(run_until(f, one_call, WAIT));
    assert_int_equal(f->calls, 1);
    assert_string_equal(config_watch_current(f->w)->queues[0].name, "beta");
    assert_string_equal(f->old_queue, "alpha");
}

/* A Kubernetes ConfigMap volume: cfg.yaml -> ..data/cfg.yaml, ..data -> ..v1; an update creates
 * ..v2 and renames a new ..data link over the old one. */
static void test_configmap_swap_applied(void **state)
{
    struct fx *f = *state;
    char p[200], q[200];
    assert_int_equal(unlink(f->path), 0);
    snprintf(p, sizeof(p), "%s/..v1", f->dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/..v1/cfg.yaml", f->dir);
    write_file(p, cfg_a);
    snprintf(p, sizeof(p), "%s/..data", f->dir);
    assert_int_equal(symlink("..v1", p), 0);
    assert_int_equal(symlink("..data/cfg.yaml", f->path), 0);
    start_watch(f);
    assert_string_equal(config_watch_current(f->w)->queues[0].name, "alpha");

    snprintf(p, sizeof(p), "%s/..v2", f->dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/..v2/cfg.yaml", f->dir);
    write_file(p, cfg_b);
    snprintf(p, sizeof(p), "%s/..data_tmp", f->dir);
    assert_int_equal(symlink("..v2", p), 0);
    snprintf(q, sizeof(q), "%s/..data", f->dir);
    assert_int_equal(rename(p, q), 0);
    assert_true(run_until(f, one_call, WAIT));
    assert_string_equal(config_watch_current(f->w)->queues[0].name, "beta");
}

static void test_invalid_rejected_then_valid_applied(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    const struct config *before = config_watch_current(f->w);
    uint64_t v0 = before->version;
    write_file(f->path, cfg_bad);
    assert_true(run_until(f, one_failure, WAIT));
    assert_int_equal(f->calls, 0);
    assert_ptr_equal(config_watch_current(f->w), before);
    assert_true(config_watch_current(f->w)->version == v0);
    assert_int_equal(config_watch_failures(f->w), 1);
    const char *msg = config_watch_last_error(f->w);
    if (!has_location(msg, f->path))
        fail_msg("no file:line:column in \"%s\"", msg);
    assert_non_null(strstr(msg, "cfg.yaml:7:25: "));
    /* asking again with the same bad file: rejected, not counted twice */
    assert_true(config_watch_reload(f->w) < 0);
    assert_int_equal(config_watch_failures(f->w), 1);
    assert_int_equal(f->calls, 0);

    /* a valid file again: applied */
    write_file(f->path, cfg_b);
    assert_true(run_until(f, one_call, WAIT));
    assert_int_equal(f->calls, 1);
    assert_string_equal(config_watch_current(f->w)->queues[0].name, "beta");
    assert_string_equal(f->old_queue, "alpha");
    assert_int_equal(config_watch_failures(f->w), 1);
    assert_string_equal(config_watch_last_error(f->w), "");
}

/* A change of the accelerator kinds (devices:) would re-slot every cached pod: refused, the
 * running config stays, and the message says it takes effect at a restart. */
static void test_devices_change_refused(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    const struct config *before = config_watch_current(f->w);
    write_file(f->path, HDR "devices:\n  - {resource: nvidia.com/gpu}\n"
                            "  - {resource: huawei.com/Ascend910}\n"
                            "queues:\n  - name: beta\n");
    assert_true(config_watch_reload(f->w) < 0);
    assert_ptr_equal(config_watch_current(f->w), before);
    const char *msg = config_watch_last_error(f->w);
    if (!strstr(msg, "the accelerators or their device.dra changed (nvidia.com/gpu, 0 more "
                     "before; nvidia.com/gpu, 1 more now)") ||
        !strstr(msg, "only at a restart"))
        fail_msg("unexpected message \"%s\"", msg);
    assert_int_equal(f->calls, 0);
    /* so would a new DRA identity (the inventory counted devices by it) */
    write_file(f->path, HDR "device: {resource: nvidia.com/gpu, dra: {driver: gpu.example.com}}\n"
                            "queues:\n  - name: beta\n");
    assert_true(config_watch_reload(f->w) < 0);
    assert_ptr_equal(config_watch_current(f->w), before);
    assert_non_null(strstr(config_watch_last_error(f->w), "device.dra changed"));
    assert_int_equal(f->calls, 0);
}

static void test_sighup_reloads(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    /* file events would only reload after a minute: what reloads here is the signal */
    config_watch_set_debounce(f->w, 60000);
    write_file(f->path, cfg_b);
    assert_int_equal(uv_kill(getpid(), SIGHUP), 0);
    assert_true(run_until(f, one_call, WAIT));
    assert_int_equal(f->calls, 1);
    assert_string_equal(config_watch_current(f->w)->queues[0].name, "beta");
    struct config_watch_stats st;
    config_watch_stats(f->w, &st);
    assert_int_equal(st.attempts, 1);
    assert_int_equal(st.applied, 1);
}

static void test_unchanged_is_noop(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    const struct config *before = config_watch_current(f->w);
    write_file(f->path, cfg_a); /* same bytes */
    assert_true(run_until(f, one_attempt, WAIT));
    struct config_watch_stats st;
    config_watch_stats(f->w, &st);
    assert_int_equal(st.unchanged, 1);
    assert_int_equal(st.applied, 0);
    assert_int_equal(f->calls, 0);
    assert_ptr_equal(config_watch_current(f->w), before);
    assert_int_equal(config_watch_reload(f->w), 1);
    assert_int_equal(f->calls, 0);
    assert_int_equal(config_watch_failures(f->w), 0);
}

/* A pinned configuration outlives reloads; unpinning frees it (ASan checks both). */
static void test_pin_keeps_old_alive(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    const struct config *pinned = config_watch_pin(f->w);
    assert_ptr_equal(pinned, config_watch_current(f->w));
    write_file(f->path, cfg_b);
    assert_int_equal(config_watch_reload(f->w), 0);
    write_file(f->path, cfg_c);
    assert_int_equal(config_watch_reload(f->w), 0);
    assert_int_equal(f->calls, 2);
    assert_string_equal(f->old_queue, "beta");
    assert_string_equal(config_watch_current(f->w)->queues[0].name, "gamma");
    assert_string_equal(pinned->queues[0].name, "alpha"); /* still readable */
    config_watch_unpin(f->w, pinned);
    /* the file events of the two writes are no-ops now */
    run_for(f, 2 * CONFIG_WATCH_DEBOUNCE_MS);
    assert_int_equal(f->calls, 2);
}

static bool watched_beta(const struct fx *f)
{
    return !strcmp(config_watch_current(f->w)->queues[0].name, "beta");
}

/* The file goes, then its directory: the old configuration stays; when both come back, the
 * watch re-arms and applies the new file. */
static void test_missing_file_and_directory(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    assert_int_equal(unlink(f->path), 0);
    assert_true(run_until(f, one_failure, WAIT));
    assert_non_null(strstr(config_watch_last_error(f->w), "cannot read"));
    assert_string_equal(config_watch_current(f->w)->queues[0].name, "alpha");
    assert_true(config_watch_reload(f->w) < 0); /* same error: not counted twice */
    assert_int_equal(config_watch_failures(f->w), 1);

    assert_int_equal(rmdir(f->dir), 0);
    run_for(f, 2 * CONFIG_WATCH_DEBOUNCE_MS); /* the watch notices and retries */
    assert_string_equal(config_watch_current(f->w)->queues[0].name, "alpha");

    assert_int_equal(mkdir(f->dir, 0700), 0);
    write_file(f->path, cfg_b);
    assert_true(run_until(f, watched_beta, WAIT));
    assert_int_equal(f->calls, 1);
    assert_string_equal(config_watch_last_error(f->w), "");
}

/* Stopping from inside the apply callback is allowed. */
static void stop_in_apply(void *data, const struct config *fresh, const struct config *old)
{
    struct fx *f = data;
    on_apply(data, fresh, old);
    config_watch_stop(f->w);
}

static void test_stop_inside_callback(void **state)
{
    struct fx *f = *state;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(config_watch_start(&f->loop, f->path, stop_in_apply, f, &f->w, &eb), 0);
    write_file(f->path, cfg_b);
    assert_int_equal(config_watch_reload(f->w), 0);
    assert_int_equal(f->calls, 1);
    f->w = NULL; /* stopped: teardown must not stop it again */
}

static void test_start_invalid_fails(void **state)
{
    struct fx *f = *state;
    write_file(f->path, cfg_bad);
    struct sched_errbuf eb = {{0}};
    struct config_watch *w = (struct config_watch *)f; /* must be reset */
    assert_true(config_watch_start(&f->loop, f->path, on_apply, f, &w, &eb) < 0);
    assert_null(w);
    if (!has_location(eb.msg, f->path))
        fail_msg("no file:line:column in \"%s\"", eb.msg);

    char missing[160];
    snprintf(missing, sizeof(missing), "%s/absent.yaml", f->dir);
    w = (struct config_watch *)f;
    assert_true(config_watch_start(&f->loop, missing, on_apply, f, &w, &eb) < 0);
    assert_null(w);
    assert_non_null(strstr(eb.msg, "absent.yaml"));
    assert_int_equal(f->calls, 0);
}

/* A FIFO at the configuration's path (or a directory) is refused with an error naming it, at
 * start and on a reload, instead of opening it and waiting for a writer: run and serve reload
 * on their event loop, which stopped (no cycles, /healthz silent) until some process wrote to
 * the FIFO. alarm() turns such a hang into a failure. */
static void test_fifo_refused(void **state)
{
    struct fx *f = *state;
    start_watch(f);
    alarm(20);
    assert_int_equal(unlink(f->path), 0);
    assert_int_equal(mkfifo(f->path, 0600), 0);
    assert_true(run_until(f, one_failure, WAIT));
    const char *msg = config_watch_last_error(f->w);
    assert_non_null(strstr(msg, f->path));
    assert_non_null(strstr(msg, "a FIFO, not a regular file"));
    assert_string_equal(config_watch_current(f->w)->queues[0].name, "alpha");
    struct config *c = NULL;
    struct sched_errbuf eb = {{0}};
    assert_true(config_load_file(f->path, &c, &eb) < 0); /* config check, simulate, run, serve */
    assert_null(c);
    assert_non_null(strstr(eb.msg, "a FIFO, not a regular file"));
    assert_true(config_load_file(f->dir, &c, &eb) < 0);
    assert_non_null(strstr(eb.msg, "a directory, not a regular file"));
    alarm(0);
    /* a regular file again: applied */
    assert_int_equal(unlink(f->path), 0);
    write_file(f->path, cfg_b);
    assert_true(run_until(f, watched_beta, WAIT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_initial_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewrite_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_configmap_swap_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_rejected_then_valid_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sighup_reloads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unchanged_is_noop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_devices_change_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pin_keeps_old_alive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_and_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_inside_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_start_invalid_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
