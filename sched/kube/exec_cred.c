/* sched/kube/exec_cred.c: exec credential plugins (client.authentication.k8s.io), as client-go
 * runs them (see client.h struct kube_exec).
 *
 * Owns: running the plugin (posix_spawn, stdin /dev/null, stdout a pipe read with a deadline,
 * stderr inherited as client-go passes it through), the KUBERNETES_EXEC_INFO it is given, and
 * the reading of the ExecCredential it prints. Must not touch: the kubeconfig's YAML (auth.c
 * reads it), the network.
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
    d->where = x->where ? strdup(x->where) : NULL;
    if (!ok_a || !ok_e || !d->api_version || !d->command || (x->cluster && !d->cluster) ||
        (x->where && !d->where)) {
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

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The plugin's stdout (NUL-terminated, malloc'd) once it exits, and its wait status; a plugin
 * past EXEC_TIMEOUT_MS is killed. 0, or SCHED_EIO / SCHED_ENOMEM with the reason in eb. */
static int run(const struct kube_exec *x, char **out, int *status, struct sched_errbuf *eb)
{
    int fds[2];
    char *info_var = NULL;
    char **env = plugin_env(x, &info_var);
    char **argv = calloc(x->n_args + 2, sizeof(*argv));
    if (!env || !argv) {
        free(env);
        free(info_var);
        free(argv);
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", x->where);
    }
    argv[0] = x->command;
    for (uint32_t i = 0; i < x->n_args; i++)
        argv[i + 1] = x->args[i];
    if (pipe(fds) != 0) {
        free(env);
        free(info_var);
        free(argv);
        return sched_fail(eb, SCHED_EIO, "%s: pipe: %s", x->where, strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    pid_t pid;
    int rc = strchr(x->command, '/') ? posix_spawn(&pid, x->command, &fa, NULL, argv, env)
                                     : posix_spawnp(&pid, x->command, &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    free(info_var);
    free(argv);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return sched_fail(eb, SCHED_EIO, "%s: command %s: %s", x->where, x->command,
                          rc == ENOENT ? "not found" : strerror(rc));
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
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
    if (!buf)
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", x->where);
    buf[len] = '\0';
    if (timed_out || too_big) {
        free(buf);
        return sched_fail(eb, SCHED_EIO, "%s: command %s: %s", x->where, x->command,
                          timed_out ? "no answer within 30 s (killed)" : "printed more than 1 MiB");
    }
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

int kube_exec_run(const struct kube_exec *x, struct kube_exec_cred *cr, struct sched_errbuf *eb)
{
    memset(cr, 0, sizeof(*cr));
    if (kube_exec_hook)
        return kube_exec_hook(x, cr, eb);
    char *out = NULL;
    int status = 0;
    int rc = run(x, &out, &status, eb);
    if (rc)
        return rc;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rc = sched_fail(eb, SCHED_EIO, "%s: command %s: %s %d", x->where, x->command,
                        WIFEXITED(status) ? "exit status" : "killed by signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    } else {
        rc = read_cred(x, out, cr, eb);
    }
    free(out);
    if (rc)
        kube_exec_cred_clear(cr);
    return rc;
}
