/* tests/tools/kubeprobe.c: drives the Kubernetes API client (sched/kube) for the tests/kube
 * scripts.
 *
 * Owns: the standalone `kubeprobe` program; every line it prints starts with the milliseconds
 * since it started ("t=1234 ..."), so scripts can check both what happened and when.
 *
 *   kubeprobe request KUBECONFIG METHOD PATH [BODY]
 *       one request; prints "t=.. status=N attempts=N reason=R error=E" and the body on the next
 *       line; exit 0 on 2xx, 1 otherwise.
 *   kubeprobe watch KUBECONFIG PATH SECONDS [STOPFILE]
 *       an informer on PATH; prints "t=.. ADDED|MODIFIED|DELETED ns/name rv" and "t=.. SYNCED
 *       rv=RV", then at the end "t=.. STATS requests=.. retries=.. relists=.. reconnects=..
 *       watch_events=.. max_stall_ms=.." (max_stall_ms: the longest the loop was late for a
 *       100 ms tick); ends after SECONDS or once STOPFILE exists.
 *   kubeprobe lease KUBECONFIG IDENTITY SECONDS release|stop
 *       a leader-election candidate on default/$KUBEPROBE_LEASE (default kubeprobe; lease 3 s,
 *       renew deadline 2 s, retry 500 ms); prints "t=.. w=WALLMS LEADING ID" and "... LOST ID";
 *       after SECONDS it releases the lease ("... RELEASED ID") or exits without renewing
 *       ("... STOPPED ID").
 * Environment: KUBEPROBE_WATCH_TIMEOUT (watch timeoutSeconds, default 30), KUBEPROBE_WATCH_IDLE
 * (the client's watch_idle_ms), KUBEPROBE_PAGE (list page size), KUBEPROBE_PAGED (set: list in
 * pages, never a streaming list), KUBEPROBE_LEASE.
 * Exit status 2 on usage or setup errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "sched/kube/client.h"

static uint64_t t0;

static unsigned long long ms(void)
{
    return (unsigned long long)((uv_hrtime() - t0) / 1000000);
}

/* Wall-clock milliseconds, to compare the lines of two processes. */
static unsigned long long wall(void)
{
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    return (unsigned long long)tv.tv_sec * 1000 + (unsigned long long)tv.tv_usec / 1000;
}

static struct kube_client *client;
static struct kube_informer *informer;
static struct kube_lease *lease;
static const char *identity, *stop_file, *end_mode;
static int exit_code;
static uv_timer_t end_timer, stop_timer;

static void usage(void)
{
    fprintf(stderr, "usage: kubeprobe request KUBECONFIG METHOD PATH [BODY]\n"
                    "       kubeprobe watch KUBECONFIG PATH SECONDS [STOPFILE]\n"
                    "       kubeprobe lease KUBECONFIG IDENTITY SECONDS release|stop\n");
    exit(2);
}

static void close_timers(void)
{
    uv_timer_stop(&end_timer);
    uv_timer_stop(&stop_timer);
    if (!uv_is_closing((uv_handle_t *)&end_timer))
        uv_close((uv_handle_t *)&end_timer, NULL);
    if (!uv_is_closing((uv_handle_t *)&stop_timer))
        uv_close((uv_handle_t *)&stop_timer, NULL);
}

/* The longest the loop was kept from the watch's 100 ms tick (ms past it): what a blocking
 * call on the loop costs everything else. */
static unsigned long long last_tick, max_stall;

static void print_stats(void)
{
    struct kube_client_stats s;
    kube_client_stats(client, &s);
    printf("t=%llu STATS requests=%llu retries=%llu errors=%llu throttled=%llu relists=%llu "
           "reconnects=%llu watch_events=%llu paged_lists=%llu streamed_lists=%llu "
           "stream_refused=%llu exec_runs=%llu max_stall_ms=%llu\n",
           ms(), (unsigned long long)s.requests, (unsigned long long)s.retries,
           (unsigned long long)s.errors, (unsigned long long)s.throttled,
           (unsigned long long)s.relists, (unsigned long long)s.reconnects,
           (unsigned long long)s.watch_events, (unsigned long long)s.paged_lists,
           (unsigned long long)s.streamed_lists, (unsigned long long)s.stream_refused,
           (unsigned long long)s.exec_runs, max_stall);
    fflush(stdout);
}

/* ---- request --------------------------------------------------------------------------------- */

static void on_resp(void *ctx, const struct kube_resp *r)
{
    (void)ctx;
    printf("t=%llu status=%d attempts=%u reason=%s error=%s\n%s\n", ms(), r->status, r->attempts,
           r->reason ? r->reason : "-", r->error ? r->error : "-", r->body);
    exit_code = r->status >= 200 && r->status < 300 ? 0 : 1;
    print_stats();
    close_timers();
    kube_client_free(client);
}

/* ---- watch ----------------------------------------------------------------------------------- */

static void on_event(void *ctx, enum kube_event ev, const cJSON *obj)
{
    (void)ctx;
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "SYNCED"};
    if (ev == KUBE_SYNCED) {
        printf("t=%llu SYNCED rv=%s\n", ms(), kube_informer_rv(informer));
    } else {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
        const cJSON *ns = cJSON_GetObjectItemCaseSensitive(m, "namespace");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
        const cJSON *rv = cJSON_GetObjectItemCaseSensitive(m, "resourceVersion");
        printf("t=%llu %s %s/%s %s\n", ms(), names[ev], cJSON_IsString(ns) ? ns->valuestring : "",
               cJSON_IsString(name) ? name->valuestring : "?",
               cJSON_IsString(rv) ? rv->valuestring : "-");
    }
    fflush(stdout);
}

/* ---- lease ----------------------------------------------------------------------------------- */

static void on_lead(void *ctx, bool leading)
{
    (void)ctx;
    printf("t=%llu w=%llu %s %s\n", ms(), wall(), leading ? "LEADING" : "LOST", identity);
    fflush(stdout);
}

static void on_released(void *ctx)
{
    (void)ctx;
    printf("t=%llu w=%llu RELEASED %s\n", ms(), wall(), identity);
    fflush(stdout);
    kube_lease_free(lease);
    lease = NULL;
    kube_client_free(client);
}

/* ---- ending ---------------------------------------------------------------------------------- */

static void finish(void)
{
    close_timers();
    if (lease && strcmp(end_mode, "release")) {
        printf("t=%llu w=%llu STOPPED %s\n", ms(), wall(), identity);
        fflush(stdout);
    }
    if (informer) {
        kube_informer_free(informer);
        informer = NULL;
        print_stats();
    }
    if (lease) {
        if (!strcmp(end_mode, "release")) {
            kube_lease_release(lease, on_released, NULL);
            return;
        }
        kube_lease_free(lease);
        lease = NULL;
    }
    kube_client_free(client);
}

static void on_end(uv_timer_t *t)
{
    (void)t;
    finish();
}

static void on_stop_check(uv_timer_t *t)
{
    (void)t;
    unsigned long long now = ms();
    if (last_tick && now - last_tick > 100 && now - last_tick - 100 > max_stall)
        max_stall = now - last_tick - 100;
    last_tick = now;
    if (stop_file && access(stop_file, F_OK) == 0)
        finish();
}

int main(int argc, char **argv)
{
    t0 = uv_hrtime();
    if (argc < 4)
        usage();
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argv[1];
    struct kube_auth *auth;
    struct sched_errbuf eb;
    if (kube_auth_load(argv[2], &auth, &eb) != 0) {
        fprintf(stderr, "kubeprobe: %s\n", eb.msg);
        return 2;
    }
    uv_loop_t *loop = uv_default_loop();
    struct kube_client_opts o;
    kube_client_opts_default(&o);
    o.timeout_ms = 10000;
    const char *wi = getenv("KUBEPROBE_WATCH_IDLE"); /* ms: the informer's watchdog */
    if (wi)
        o.watch_idle_ms = atoll(wi);
    o.user_agent =
        "kubeprobe (gangsched test tool)"; /* not the daemon's: tests/kube/rbac_check.py */
    if (kube_client_new(loop, auth, &o, &client, &eb) != 0) {
        fprintf(stderr, "kubeprobe: %s\n", eb.msg);
        return 2;
    }
    kube_auth_free(auth);
    uv_timer_init(loop, &end_timer);
    uv_timer_init(loop, &stop_timer);
    end_mode = "stop";
    if (!strcmp(mode, "request")) {
        static const struct {
            const char *name;
            enum kube_method m;
        } ms_[] = {{"GET", KUBE_GET},
                   {"POST", KUBE_POST},
                   {"PUT", KUBE_PUT},
                   {"DELETE", KUBE_DELETE},
                   {"PATCH", KUBE_PATCH_MERGE}};
        if (argc < 5)
            usage();
        int m = -1;
        for (size_t i = 0; i < sizeof(ms_) / sizeof(ms_[0]); i++)
            if (!strcmp(argv[3], ms_[i].name))
                m = (int)ms_[i].m;
        if (m < 0)
            usage();
        const char *body = argc > 5 ? argv[5] : NULL;
        if (kube_request(client, (enum kube_method)m, argv[4], body, body ? strlen(body) : 0, 0,
                         on_resp, NULL) != 0)
            return 2;
        exit_code = 2;
    } else if (!strcmp(mode, "watch")) {
        if (argc < 5)
            usage();
        const char *wt = getenv("KUBEPROBE_WATCH_TIMEOUT");
        struct kube_informer_opts io = {.path = argv[3],
                                        .watch_timeout_s = wt ? (uint32_t)atoi(wt) : 30};
        const char *page = getenv("KUBEPROBE_PAGE");
        io.page_size = page ? (uint32_t)atoi(page) : 0;
        io.paged = getenv("KUBEPROBE_PAGED") != NULL; /* never a streaming list */
        if (kube_informer_new(client, &io, on_event, NULL, &informer, &eb) != 0) {
            fprintf(stderr, "kubeprobe: %s\n", eb.msg);
            return 2;
        }
        stop_file = argc > 5 ? argv[5] : NULL;
        uv_timer_start(&end_timer, on_end, (uint64_t)atoi(argv[4]) * 1000, 0);
        uv_timer_start(&stop_timer, on_stop_check, 100, 100);
    } else if (!strcmp(mode, "lease")) {
        if (argc < 6)
            usage();
        identity = argv[3];
        end_mode = argv[5];
        struct kube_lease_opts lo = {.ns = "default",
                                     .name = getenv("KUBEPROBE_LEASE") ? getenv("KUBEPROBE_LEASE")
                                                                       : "kubeprobe",
                                     .identity = identity,
                                     .lease_s = 3,
                                     .renew_s = 2,
                                     .retry_ms = 500};
        if (kube_lease_new(client, &lo, on_lead, NULL, &lease, &eb) != 0) {
            fprintf(stderr, "kubeprobe: %s\n", eb.msg);
            return 2;
        }
        uv_timer_start(&end_timer, on_end, (uint64_t)atoi(argv[4]) * 1000, 0);
    } else {
        usage();
    }
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
    return exit_code;
}
