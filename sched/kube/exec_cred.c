/* sched/kube/exec_cred.c: exec credential plugins (client.authentication.k8s.io), as client-go
 * runs them (see client.h struct kube_exec).
 *
 * Owns: running the plugin, blocking when the kubeconfig is loaded (posix_spawn, stdout a pipe
 * read with a deadline) and on the event loop when the client runs it again (uv_spawn: struct
 * kube_exec_job), stdin /dev/null and stderr inherited as client-go passes it through either
 * way; the KUBERNETES_EXEC_INFO it is given, and the judging of what it printed (one rule for
 * both). Must not touch: the kubeconfig's YAML (auth.c reads it), the network, the client's
 * state (client.c applies a job's answer).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "sched/kube/client.h"

#define EXEC_TIMEOUT_MS 30000      /* a plugin that has not answered by then is killed */
#define EXEC_MAX_OUT    (1u << 20) /* bytes of ExecCredential read at most */

extern char **environ;

void kube_exec_free(struct kube_exec *x)
{
    if (!x)
        return;
    for (uint32_t i = 0; i < x->n_args; i++)
        free(x->args[i]);
    for (uint32_t i = 0; i < x->n_env; i++)
        free(x->env[i]);
    free(x->args);
    free(x->env);
    free(x->api_version);
    free(x->command);
    free(x->cluster);
    free(x->install_hint);
    free(x->where);
    free(x);
}

static char **dup_list(char *const *v, uint32_t n, bool *ok)
{
    char **out = n ? calloc(n, sizeof(*out)) : NULL;
    *ok = !n || out;
    for (uint32_t i = 0; *ok && i < n; i++)
        *ok = (out[i] = strdup(v[i])) != NULL;
    return out;
}

struct kube_exec *kube_exec_dup(const struct kube_exec *x)
{
    struct kube_exec *d = x ? calloc(1, sizeof(*d)) : NULL;
    if (!d)
        return NULL;
    bool ok_a, ok_e;
    d->args = dup_list(x->args, x->n_args, &ok_a);
    d->n_args = x->args ? x->n_args : 0;
    d->env = dup_list(x->env, x->n_env, &ok_e);
    d->n_env = x->env ? x->n_env : 0;
    d->api_version = x->api_version ? strdup(x->api_version) : NULL;
    d->command = x->command ? strdup(x->command) : NULL;
    d->cluster = x->cluster ? strdup(x->cluster) : NULL;
    d->install_hint = x->install_hint ? strdup(x->install_hint) : NULL;
    d->where = x->where ? strdup(x->where) : NULL;
    if (!ok_a || !ok_e || !d->api_version || !d->command || (x->cluster && !d->cluster) ||
        (x->install_hint && !d->install_hint) || (x->where && !d->where)) {
        kube_exec_free(d);
        return NULL;
    }
    return d;
}

/* KUBERNETES_EXEC_INFO: an ExecCredential whose spec says the plugin is not interactive and,
 * when the kubeconfig asks provideClusterInfo, holds the cluster. NULL out of memory. */
static char *exec_info(const struct kube_exec *x)
{
    cJSON *o = cJSON_CreateObject(), *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddStringToObject(o, "apiVersion", x->api_version);
    cJSON_AddStringToObject(o, "kind", "ExecCredential");
    cJSON_AddBoolToObject(spec, "interactive", false);
    cJSON *cl = x->cluster ? cJSON_Parse(x->cluster) : NULL;
    if (cl)
        cJSON_AddItemToObject(spec, "cluster", cl);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* The environment of the plugin: ours, KUBERNETES_EXEC_INFO and the kubeconfig's (which win);
 * NULL-terminated, strings owned by *own (freed with it). */
static char **plugin_env(const struct kube_exec *x, char **info_var)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = calloc(n + x->n_env + 2, sizeof(*env));
    char *info = exec_info(x);
    size_t il = info ? strlen(info) + sizeof("KUBERNETES_EXEC_INFO=") : 0;
    *info_var = info ? malloc(il) : NULL;
    if (!env || !*info_var) {
        free(env);
        free(info);
        free(*info_var);
        *info_var = NULL;
        return NULL;
    }
    snprintf(*info_var, il, "KUBERNETES_EXEC_INFO=%s", info);
    free(info);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(environ[i], '=');
        size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        bool over = strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21) == 0;
        for (uint32_t j = 0; !over && j < x->n_env; j++)
            over = strncmp(x->env[j], environ[i], nl) == 0 && x->env[j][nl] == '=';
        if (!over)
            env[k++] = environ[i];
    }
    for (uint32_t j = 0; j < x->n_env; j++)
        env[k++] = x->env[j];
    env[k++] = *info_var;
    return env;
}

/* The plugin could not be run (why: "not found" or the error): SCHED_EIO naming the command,
 * with the kubeconfig's installHint when it gives one (client-go shows it then). */
static int not_found(const struct kube_exec *x, const char *why, struct sched_errbuf *eb)
{
    return sched_fail(eb, SCHED_EIO, "%s: command %s: %s%s%s%s", x->where, x->command, why,
                      x->install_hint ? " (installHint: " : "",
                      x->install_hint ? x->install_hint : "", x->install_hint ? ")" : "");
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* How a run ended, judged by judge(). */
struct outcome {
    bool timed_out, too_big; /* killed past EXEC_TIMEOUT_MS; printed more than EXEC_MAX_OUT */
    int exit_code;           /* its exit status, -1 when killed by a signal */
    int signal;
};

/* What both ways of running the plugin hand the new process: its environment (plugin_env) and
 * its argv (the command, then args; strings the kube_exec's). */
struct launch {
    char **env, **argv;
    char *info_var;
};

static void launch_free(struct launch *l)
{
    free(l->env);
    free(l->argv);
    free(l->info_var);
    memset(l, 0, sizeof(*l));
}

/* false out of memory (l freed). */
static bool launch_make(const struct kube_exec *x, struct launch *l)
{
    char *info_var = NULL;
    char **env = plugin_env(x, &info_var);
    *l = (struct launch){
        .env = env, .info_var = info_var, .argv = calloc(x->n_args + 2, sizeof(*l->argv))};
    if (!l->env || !l->argv) {
        launch_free(l);
        return false;
    }
    l->argv[0] = x->command;
    for (uint32_t i = 0; i < x->n_args; i++)
        l->argv[i + 1] = x->args[i];
    return true;
}

/* The plugin's stdout (NUL-terminated, malloc'd) once it exits, and how it ended; a plugin past
 * EXEC_TIMEOUT_MS is killed. 0, or SCHED_EIO / SCHED_ENOMEM with the reason in eb. */
static int run(const struct kube_exec *x, char **out, struct outcome *oc, struct sched_errbuf *eb)
{
    int fds[2];
    struct launch l;
    if (!launch_make(x, &l))
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", x->where);
    if (pipe(fds) != 0) {
        launch_free(&l);
        return sched_fail(eb, SCHED_EIO, "%s: pipe: %s", x->where, strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    int rc = strchr(x->command, '/') ? posix_spawn(&pid, x->command, &fa, NULL, l.argv, l.env)
                                     : posix_spawnp(&pid, x->command, &fa, NULL, l.argv, l.env);
    posix_spawn_file_actions_destroy(&fa);
    launch_free(&l);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return not_found(x, rc == ENOENT ? "not found" : strerror(rc), eb);
    }
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    uint64_t deadline = mono_ms() + EXEC_TIMEOUT_MS;
    bool timed_out = false, too_big = false;
    for (;;) {
        uint64_t now = mono_ms();
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        if (now >= deadline || (poll(&p, 1, (int)(deadline - now)) == 0)) {
            timed_out = true;
            break;
        }
        if (buf && len + 1 == cap && cap < EXEC_MAX_OUT + 1) {
            size_t nc = cap * 2 > EXEC_MAX_OUT + 1 ? EXEC_MAX_OUT + 1 : cap * 2;
            char *nb = realloc(buf, nc);
            if (nb) {
                buf = nb;
                cap = nc;
            }
        }
        char sink[4096];
        bool room = buf && len + 1 < cap;
        ssize_t r = read(fds[0], room ? buf + len : sink, room ? cap - 1 - len : sizeof(sink));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (room)
            len += (size_t)r;
        else
            too_big = true;
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!buf)
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", x->where);
    buf[len] = '\0';
    *oc = (struct outcome){.timed_out = timed_out,
                           .too_big = too_big,
                           .exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                           .signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0};
    *out = buf;
    return 0;
}

/* RFC 3339 "YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm)" into ms since the epoch; -1 when not one. */
static int64_t rfc3339_ms(const char *s)
{
    int y, mo, d, h, mi, sec, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
        return -1;
    const char *p = s + 19;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) {
        }
    long off = 0;
    int oh, om;
    if (*p == 'Z' && !p[1])
        off = 0;
    else if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d", &oh, &om) == 2 && !p[6])
        off = (*p == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    else
        return -1;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    return t == (time_t)-1 ? -1 : ((int64_t)t - off) * 1000;
}

static const cJSON *get(const cJSON *o, const char *name)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
}

/* What the plugin printed, read as client-go reads it: an ExecCredential of the kubeconfig's
 * apiVersion whose status holds a token, or clientCertificateData and clientKeyData (PEM). */
static int read_cred(const struct kube_exec *x, const char *out, struct kube_exec_cred *cr,
                     struct sched_errbuf *eb)
{
    cJSON *o = cJSON_Parse(out);
    const char *av = cJSON_GetStringValue(get(o, "apiVersion"));
    const char *kind = cJSON_GetStringValue(get(o, "kind"));
    const cJSON *st = get(o, "status");
    const char *token = cJSON_GetStringValue(get(st, "token"));
    const char *cert = cJSON_GetStringValue(get(st, "clientCertificateData"));
    const char *key = cJSON_GetStringValue(get(st, "clientKeyData"));
    const char *exp = cJSON_GetStringValue(get(st, "expirationTimestamp"));
    const char *bad = !o                                        ? "its output is not JSON"
                      : !kind || strcmp(kind, "ExecCredential") ? "kind: not ExecCredential"
                      : !av || strcmp(av, x->api_version)
                          ? "apiVersion: not the kubeconfig's exec.apiVersion"
                      : !cJSON_IsObject(st) ? "status: missing"
                      : (token && *token) == (cert && key && *cert && *key)
                          ? "status: exactly one of token and clientCertificateData with "
                            "clientKeyData"
                      : (!cert) != (!key) ? "status: clientCertificateData and clientKeyData go "
                                            "together"
                      : exp && rfc3339_ms(exp) < 0 ? "status.expirationTimestamp: not RFC 3339"
                                                   : NULL;
    int rc = 0;
    if (bad)
        rc = sched_fail(eb, SCHED_EINVAL, "%s: command %s: ExecCredential: %s", x->where,
                        x->command, bad);
    else {
        cr->token = token && *token ? strdup(token) : NULL;
        cr->cert_pem = cert ? strdup(cert) : NULL;
        cr->key_pem = key ? strdup(key) : NULL;
        cr->expires_ms = exp ? rfc3339_ms(exp) : 0;
        if ((token && *token && !cr->token) || (cert && !cr->cert_pem) || (key && !cr->key_pem))
            rc = sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", x->where);
    }
    cJSON_Delete(o);
    return rc;
}

void kube_exec_cred_clear(struct kube_exec_cred *cr)
{
    free(cr->token);
    free(cr->cert_pem);
    free(cr->key_pem);
    memset(cr, 0, sizeof(*cr));
}

int (*kube_exec_hook)(const struct kube_exec *x, struct kube_exec_cred *cr,
                      struct sched_errbuf *eb);

/* What a run that ended as oc and printed out gave: the credential, or why none. */
static int judge(const struct kube_exec *x, const char *out, const struct outcome *oc,
                 struct kube_exec_cred *cr, struct sched_errbuf *eb)
{
    memset(cr, 0, sizeof(*cr));
    int rc;
    if (oc->timed_out || oc->too_big)
        rc = sched_fail(eb, SCHED_EIO, "%s: command %s: %s", x->where, x->command,
                        oc->timed_out ? "no answer within 30 s (killed)"
                                      : "printed more than 1 MiB");
    else if (oc->exit_code != 0)
        rc = sched_fail(eb, SCHED_EIO, "%s: command %s: %s %d", x->where, x->command,
                        oc->exit_code > 0 ? "exit status" : "killed by signal",
                        oc->exit_code > 0 ? oc->exit_code : oc->signal);
    else
        rc = read_cred(x, out, cr, eb);
    if (rc)
        kube_exec_cred_clear(cr);
    return rc;
}

int kube_exec_run(const struct kube_exec *x, struct kube_exec_cred *cr, struct sched_errbuf *eb)
{
    memset(cr, 0, sizeof(*cr));
    if (kube_exec_hook)
        return kube_exec_hook(x, cr, eb);
    char *out = NULL;
    struct outcome oc;
    int rc = run(x, &out, &oc, eb);
    if (rc == 0)
        rc = judge(x, out, &oc, cr, eb);
    free(out);
    return rc;
}

/* ---- a run on the event loop ----------------------------------------------------------------- */

struct kube_exec_job {
    uv_process_t proc;
    uv_pipe_t out;
    uv_timer_t timer;
    int open;                  /* handles not closed yet: the job is freed at 0 */
    bool spawned, exited, eof; /* the process runs or ran; it exited; its stdout ended */
    bool cancelled, done;      /* kube_exec_cancel; fn called (or never to be) */
    struct outcome oc;
    char *buf; /* stdout so far, NUL-terminated at the end */
    size_t len, cap;
    char sink[4096];           /* bytes past EXEC_MAX_OUT, dropped */
    const struct kube_exec *x; /* the caller's, valid until fn or kube_exec_cancel */
    kube_exec_done_fn *fn;
    void *ctx;
};

static void job_closed(uv_handle_t *h)
{
    struct kube_exec_job *j = h->data;
    if (--j->open == 0) {
        free(j->buf);
        free(j);
    }
}

/* Closes the handles; a process still running is killed, its handle closed once it has exited
 * (job_exit), so that it is reaped. */
static void job_close(struct kube_exec_job *j)
{
    bool running = j->spawned && !j->exited;
    if (running)
        uv_process_kill(&j->proc, SIGKILL);
    uv_handle_t *hs[] = {(uv_handle_t *)&j->out, (uv_handle_t *)&j->timer,
                         running ? NULL : (uv_handle_t *)&j->proc};
    for (int i = 0; i < 3; i++)
        if (hs[i] && !uv_is_closing(hs[i]))
            uv_close(hs[i], job_closed);
}

/* Once the plugin has exited and its stdout ended (or it was killed at the deadline): judged,
 * handed to fn, and the handles closed. */
static void job_maybe_done(struct kube_exec_job *j)
{
    if (j->done || !j->exited || !(j->eof || j->oc.timed_out))
        return;
    j->done = true;
    uv_timer_stop(&j->timer);
    struct kube_exec_cred cr;
    struct sched_errbuf eb = {{0}};
    int rc = j->buf ? judge(j->x, j->buf, &j->oc, &cr, &eb)
                    : sched_fail(&eb, SCHED_ENOMEM, "%s: out of memory", j->x->where);
    if (rc)
        memset(&cr, 0, sizeof(cr));
    job_close(j);
    j->fn(j->ctx, rc, &cr, rc ? eb.msg : NULL); /* cr is the callee's */
}

static void job_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)hint;
    struct kube_exec_job *j = h->data;
    if (j->buf && j->len + 1 == j->cap && j->cap < EXEC_MAX_OUT + 1) {
        size_t nc = j->cap * 2 > EXEC_MAX_OUT + 1 ? EXEC_MAX_OUT + 1 : j->cap * 2;
        char *nb = realloc(j->buf, nc);
        if (nb) {
            j->buf = nb;
            j->cap = nc;
        }
    }
    bool room = j->buf && j->len + 1 < j->cap;
    *b = room ? uv_buf_init(j->buf + j->len, (unsigned)(j->cap - 1 - j->len))
              : uv_buf_init(j->sink, sizeof(j->sink));
}

static void job_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct kube_exec_job *j = s->data;
    if (n > 0 && j->buf && b->base == j->buf + j->len) {
        j->len += (size_t)n;
        j->buf[j->len] = '\0';
    } else if (n > 0) {
        j->oc.too_big = true;
    } else if (n < 0) { /* UV_EOF, or an error: the output ends here */
        uv_read_stop(s);
        j->eof = true;
        job_maybe_done(j);
    }
}

static void job_exit(uv_process_t *p, int64_t status, int signal)
{
    struct kube_exec_job *j = p->data;
    j->exited = true;
    if (j->done) { /* cancelled: killed, now reaped */
        uv_close((uv_handle_t *)p, job_closed);
        return;
    }
    j->oc.exit_code = signal ? -1 : (int)status;
    j->oc.signal = signal;
    job_maybe_done(j);
}

static void job_deadline(uv_timer_t *t)
{
    struct kube_exec_job *j = t->data;
    j->oc.timed_out = true;
    if (j->spawned && !j->exited)
        uv_process_kill(&j->proc, SIGKILL);
    job_maybe_done(j);
}

int kube_exec_start(uv_loop_t *loop, const struct kube_exec *x, kube_exec_done_fn *fn, void *ctx,
                    struct kube_exec_job **out, struct sched_errbuf *eb)
{
    *out = NULL;
    struct kube_exec_job *j = calloc(1, sizeof(*j));
    struct launch l = {0};
    if (j)
        j->buf = malloc(j->cap = 4096);
    if (!j || !j->buf || !launch_make(x, &l)) {
        if (j)
            free(j->buf);
        free(j);
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", x->where);
    }
    j->buf[0] = '\0';
    *j = (struct kube_exec_job){
        .buf = j->buf, .cap = j->cap, .x = x, .fn = fn, .ctx = ctx, .open = 3};
    uv_pipe_init(loop, &j->out, 0);
    uv_timer_init(loop, &j->timer);
    j->proc.data = j->out.data = j->timer.data = j;
    uv_stdio_container_t io[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&j->out},
        {.flags = UV_INHERIT_FD, .data.fd = 2}};
    uv_process_options_t o = {.exit_cb = job_exit,
                              .file = x->command,
                              .args = l.argv,
                              .env = l.env,
                              .stdio_count = 3,
                              .stdio = io};
    int e = uv_spawn(loop, &j->proc, &o);
    launch_free(&l);
    j->proc.data = j; /* uv_spawn initialized the handle, even when it failed */
    j->spawned = e == 0;
    if (e == 0)
        e = uv_read_start((uv_stream_t *)&j->out, job_alloc, job_read);
    if (e != 0) {
        j->done = true;
        job_close(j);
        return not_found(x, e == UV_ENOENT ? "not found" : uv_strerror(e), eb);
    }
    uv_timer_start(&j->timer, job_deadline, EXEC_TIMEOUT_MS, 0);
    *out = j;
    return 0;
}

void kube_exec_cancel(struct kube_exec_job *j)
{
    if (!j || j->done)
        return;
    j->done = j->cancelled = true;
    uv_timer_stop(&j->timer);
    job_close(j);
}
