/* sched/kube/auth.c: where the API server is and how to authenticate (see client.h).
 *
 * Owns: kubeconfig loading (libyaml document, current context only, relative paths resolved
 * against the kubeconfig's directory, *-data fields base64-decoded), the in-cluster service
 * account fallback, and base64 decoding. Must not touch: the network (client.c does that), the
 * daemon's configuration, any global state but the environment it reads.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "config/yaml_doc.h"
#include "sched/kube/client.h"
#include "sched/kube/wire.h"

#define KUBECONFIG_MAX_BYTES ((size_t)4 << 20)
#define KUBECONFIG_MAX_FILES 16 /* existing files of a $KUBECONFIG list merged */
#define SA_DIR_DEFAULT       "/var/run/secrets/kubernetes.io/serviceaccount"

/* ---- base64 ---------------------------------------------------------------------------------- */

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

int kube_base64_decode(const char *in, size_t len, char **out, size_t *out_len, size_t *bad_at)
{
    *out = NULL;
    *out_len = 0;
    if (bad_at)
        *bad_at = 0;
    char *buf = malloc(len / 4 * 3 + 4);
    if (!buf)
        return SCHED_ENOMEM;
    size_t n = 0, pads = 0;
    unsigned acc = 0, have = 0; /* sextets in acc */
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)in[i];
        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            continue;
        if (ch == '=') {
            pads++;
            continue;
        }
        int v = b64_value(ch);
        if (v < 0 || pads > 0) { /* unknown character, or data after padding */
            free(buf);
            if (bad_at)
                *bad_at = i;
            return SCHED_EINVAL;
        }
        acc = (acc << 6) | (unsigned)v;
        if (++have == 4) {
            buf[n++] = (char)(acc >> 16 & 0xff);
            buf[n++] = (char)(acc >> 8 & 0xff);
            buf[n++] = (char)(acc & 0xff);
            acc = 0;
            have = 0;
        }
    }
    if (have == 1 || pads > 2 || (pads && have + pads != 4)) {
        free(buf);
        if (bad_at)
            *bad_at = len;
        return SCHED_EINVAL;
    }
    if (have == 2) {
        buf[n++] = (char)(acc >> 4 & 0xff);
    } else if (have == 3) {
        buf[n++] = (char)(acc >> 10 & 0xff);
        buf[n++] = (char)(acc >> 2 & 0xff);
    }
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return 0;
}

/* ---- files ----------------------------------------------------------------------------------- */

/* Reads a whole file (at most `max` bytes) into a NUL-terminated buffer. 0 or -errno-like:
 * SCHED_EIO with errno kept, SCHED_ERANGE when too large, SCHED_ENOMEM. */
static int slurp(const char *path, size_t max, char **out, size_t *out_len)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return SCHED_EIO;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : SCHED_ENOMEM;
    while (!rc) {
        if (len + 1 >= cap) {
            if (cap > max + 1) {
                rc = SCHED_ERANGE;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                rc = SCHED_ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - 1 - len, f);
        if (got == 0)
            break;
        len += got;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (!rc && len > max)
        rc = SCHED_ERANGE;
    if (!rc && err) {
        errno = err;
        rc = SCHED_EIO;
    }
    if (rc) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

static void trim_end(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
}

void kube_auth_free(struct kube_auth *a)
{
    if (!a)
        return;
    free(a->server);
    free(a->ca_file);
    free(a->ca_pem);
    free(a->cert_file);
    free(a->cert_pem);
    free(a->key_file);
    free(a->key_pem);
    free(a->token);
    free(a->token_file);
    kube_exec_free(a->exec);
    free(a->tls_server_name);
    free(a->proxy_url);
    free(a->namespace);
    free(a->source);
    free(a);
}

/* ---- kubeconfig ------------------------------------------------------------------------------ */

struct kcfg {
    const char *file;
    char *dir;     /* directory of file, for relative paths ("." when none) */
    struct ydoc y; /* its document (config/yaml_doc.h) */
    yaml_node_t *root;
    struct sched_errbuf *eb;
    struct kube_auth *a;
};

/* The value of `key` in mapping m, or NULL (also for an explicit null). */
static yaml_node_t *map_get(struct kcfg *k, yaml_node_t *m, const char *key)
{
    yaml_node_t *v = ydoc_get(&k->y, m, key);
    return ydoc_is_null(v) ? NULL : v;
}

__attribute__((format(printf, 3, 4))) static int kfail(struct kcfg *k, int err, const char *fmt,
                                                       ...)
{
    char msg[SCHED_ERRBUF];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return sched_fail(k->eb, err, "kubeconfig %s: %s", k->file, msg);
}

/* "kubeconfig FILE:LINE:COLUMN: message" at node n. */
#define kfail_at(k, n, err, ...) ydoc_fail(&(k)->y, (n), (err), "kubeconfig ", __VA_ARGS__)

/* A scalar string value of `key` in m (NULL when absent); `field` names it in errors. */
static int get_str(struct kcfg *k, yaml_node_t *m, const char *key, const char *field,
                   const char **out)
{
    *out = NULL;
    yaml_node_t *v = map_get(k, m, key);
    if (!v)
        return 0;
    if (v->type != YAML_SCALAR_NODE)
        return kfail_at(k, v, SCHED_EINVAL, "%s%s%s: expected a string, got %s", field,
                        *field ? "." : "", key, ydoc_kind_name(ydoc_kind(v)));
    *out = (const char *)v->data.scalar.value;
    return 0;
}

static int get_bool(struct kcfg *k, yaml_node_t *m, const char *key, const char *field, bool *out)
{
    yaml_node_t *v = map_get(k, m, key);
    if (!v || ydoc_bool(v, out) == 0)
        return 0;
    char q[64];
    const char *s = v->type == YAML_SCALAR_NODE ? ydoc_text(v) : ydoc_kind_name(ydoc_kind(v));
    sched_quote(s, strlen(s), q, sizeof(q));
    return kfail_at(k, v, SCHED_EINVAL, "%s.%s: expected true or false, not \"%s\"", field, key, q);
}

/* The entry of a named list (clusters, users, contexts) called `name`: its inner mapping
 * (entry[`inner`]) and its index. */
static int find_named(struct kcfg *k, yaml_node_t *root, const char *list, const char *inner,
                      const char *name, const char *why, yaml_node_t **out, int *index)
{
    char q[128];
    sched_quote(name, strlen(name), q, sizeof(q));
    yaml_node_t *seq = map_get(k, root, list);
    if (seq && seq->type != YAML_SEQUENCE_NODE)
        return kfail_at(k, seq, SCHED_EINVAL, "%s: expected a list, got %s", list,
                        ydoc_kind_name(ydoc_kind(seq)));
    if (seq) {
        int i = 0;
        for (yaml_node_item_t *it = seq->data.sequence.items.start;
             it < seq->data.sequence.items.top; it++, i++) {
            yaml_node_t *e = ydoc_node(&k->y, *it);
            const char *n = NULL;
            char field[64];
            snprintf(field, sizeof(field), "%s[%d]", list, i);
            if (!e || e->type != YAML_MAPPING_NODE)
                return kfail_at(k, e, SCHED_EINVAL, "%s: expected a mapping", field);
            int rc = get_str(k, e, "name", field, &n);
            if (rc)
                return rc;
            if (n && !strcmp(n, name)) {
                yaml_node_t *in = map_get(k, e, inner);
                if (!in || in->type != YAML_MAPPING_NODE)
                    return kfail_at(k, in ? in : e, SCHED_EINVAL, "%s.%s: missing or not a mapping",
                                    field, inner);
                *out = in;
                *index = i;
                return 0;
            }
        }
    }
    return kfail(k, SCHED_ENOENT, "%s: %s \"%s\" not found", list, why, q);
}

/* A path from the kubeconfig, resolved against its directory and checked to be readable. */
static int file_field(struct kcfg *k, const char *field, const char *path, char **out)
{
    char *p;
    if (path[0] == '/') {
        p = strdup(path);
    } else {
        size_t n = strlen(k->dir) + strlen(path) + 2;
        p = malloc(n);
        if (p)
            snprintf(p, n, "%s/%s", k->dir, path);
    }
    if (!p)
        return kfail(k, SCHED_ENOMEM, "%s: out of memory", field);
    if (access(p, R_OK) != 0) {
        int e = errno;
        int rc = kfail(k, SCHED_EIO, "%s: %s: %s", field, p,
                       e == ENOENT ? "file not found" : strerror(e));
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* A *-data field: base64 PEM. */
static int data_field(struct kcfg *k, const char *field, const char *b64, char **out)
{
    size_t n, bad;
    int rc = kube_base64_decode(b64, strlen(b64), out, &n, &bad);
    if (rc == SCHED_ENOMEM)
        return kfail(k, rc, "%s: out of memory", field);
    if (rc)
        return kfail(k, rc, "%s: not valid base64 (at character %zu)", field, bad + 1);
    if (n == 0) {
        free(*out);
        *out = NULL;
        return kfail(k, SCHED_EINVAL, "%s: empty", field);
    }
    return 0;
}

/* "field.key": either key (a path) or key-data (base64); the data wins when both are set. */
static int pem_pair(struct kcfg *k, yaml_node_t *m, const char *field, const char *key,
                    char **file_out, char **pem_out)
{
    char data_key[64], f[128];
    snprintf(data_key, sizeof(data_key), "%s-data", key);
    const char *path, *data;
    int rc = get_str(k, m, key, field, &path);
    if (!rc)
        rc = get_str(k, m, data_key, field, &data);
    if (rc)
        return rc;
    if (data) {
        snprintf(f, sizeof(f), "%s.%s", field, data_key);
        return data_field(k, f, data, pem_out);
    }
    if (path && *path) {
        snprintf(f, sizeof(f), "%s.%s", field, key);
        return file_field(k, f, path, file_out);
    }
    return 0;
}

/* clusters[N].cluster.proxy-url: the schemes client-go takes (http, https, socks5); a SOCKS5
 * proxy resolves the server's name itself, as Go's SOCKS5 dialer asks it to (curl: socks5h). */
static int proxy_field(struct kcfg *k, yaml_node_t *cluster, const char *field, const char *url,
                       struct kube_auth *a)
{
    bool socks = !strncmp(url, "socks5://", 9);
    if (!socks && strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
        return kfail_at(k, map_get(k, cluster, "proxy-url"), SCHED_EINVAL,
                        "%s.proxy-url: the scheme must be http, https or socks5", field);
    if (!(a->proxy_url = kube_proxy_norm(url)))
        return kfail(k, SCHED_ENOMEM, "out of memory");
    return 0;
}

/* A sequence of strings at key of m (absent: none) into *out[*n] (malloc'd). */
static int str_list(struct kcfg *k, yaml_node_t *m, const char *key, const char *field, char ***out,
                    uint32_t *n)
{
    yaml_node_t *seq = map_get(k, m, key);
    if (!seq)
        return 0;
    if (seq->type != YAML_SEQUENCE_NODE)
        return kfail_at(k, seq, SCHED_EINVAL, "%s.%s: expected a list", field, key);
    size_t cap = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    if (cap && !(*out = calloc(cap, sizeof(**out))))
        return kfail(k, SCHED_ENOMEM, "out of memory");
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++) {
        yaml_node_t *e = ydoc_node(&k->y, *it);
        if (!e || e->type != YAML_SCALAR_NODE)
            return kfail_at(k, e ? e : seq, SCHED_EINVAL, "%s.%s[%u]: expected a string", field,
                            key, *n);
        if (!((*out)[(*n)++] = strdup(ydoc_text(e))))
            return kfail(k, SCHED_ENOMEM, "out of memory");
    }
    return 0;
}

/* exec.env: [{name, value}] into x->env as "NAME=value". */
static int exec_env(struct kcfg *k, yaml_node_t *ex, const char *field, struct kube_exec *x)
{
    yaml_node_t *seq = map_get(k, ex, "env");
    if (!seq)
        return 0;
    if (seq->type != YAML_SEQUENCE_NODE)
        return kfail_at(k, seq, SCHED_EINVAL, "%s.env: expected a list", field);
    size_t cap = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    if (cap && !(x->env = calloc(cap, sizeof(*x->env))))
        return kfail(k, SCHED_ENOMEM, "out of memory");
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++) {
        yaml_node_t *e = ydoc_node(&k->y, *it);
        char f[160];
        snprintf(f, sizeof(f), "%s.env[%u]", field, x->n_env);
        const char *name = NULL, *value = NULL;
        int rc = e && e->type == YAML_MAPPING_NODE
                     ? get_str(k, e, "name", f, &name)
                     : kfail_at(k, e ? e : seq, SCHED_EINVAL, "%s: expected a mapping", f);
        if (!rc)
            rc = get_str(k, e, "value", f, &value);
        if (rc)
            return rc;
        if (!name || !*name || strchr(name, '='))
            return kfail_at(k, e, SCHED_EINVAL, "%s.name: missing or holding '='", f);
        size_t n = strlen(name) + (value ? strlen(value) : 0) + 2;
        char *v = malloc(n);
        if (!v)
            return kfail(k, SCHED_ENOMEM, "out of memory");
        snprintf(v, n, "%s=%s", name, value ? value : "");
        x->env[x->n_env++] = v;
    }
    return 0;
}

/* ExecCredential spec.cluster (provideClusterInfo) from the cluster entry; NULL out of memory. */
static char *exec_cluster(struct kcfg *kc, yaml_node_t *cluster, const struct kube_auth *a)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "server", a->server);
    if (a->tls_server_name)
        cJSON_AddStringToObject(o, "tls-server-name", a->tls_server_name);
    if (a->insecure)
        cJSON_AddBoolToObject(o, "insecure-skip-tls-verify", true);
    const char *ca = NULL;
    if (get_str(kc, cluster, "certificate-authority-data", "", &ca) == 0 && ca)
        cJSON_AddStringToObject(o, "certificate-authority-data", ca);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* users[N].user.exec (field): the plugin, run once here for the first credentials. */
static int exec_field(struct kcfg *k, yaml_node_t *ex, const char *field, struct kcfg *kc,
                      yaml_node_t *cluster, struct kube_auth *a)
{
    if (ex->type != YAML_MAPPING_NODE)
        return kfail_at(k, ex, SCHED_EINVAL, "%s: expected a mapping", field);
    struct kube_exec *x = a->exec = calloc(1, sizeof(*x));
    const char *av, *cmd, *mode, *hint;
    bool cluster_info = false;
    int rc = x ? 0 : kfail(k, SCHED_ENOMEM, "out of memory");
    if (!rc && !(rc = get_str(k, ex, "apiVersion", field, &av)) &&
        !(rc = get_str(k, ex, "command", field, &cmd)) &&
        !(rc = get_str(k, ex, "installHint", field, &hint)) &&
        !(rc = get_str(k, ex, "interactiveMode", field, &mode)) &&
        !(rc = get_bool(k, ex, "provideClusterInfo", field, &cluster_info)) &&
        !(rc = str_list(k, ex, "args", field, &x->args, &x->n_args)))
        rc = exec_env(k, ex, field, x);
    if (rc)
        return rc;
    bool v1 = av && !strcmp(av, "client.authentication.k8s.io/v1");
    if (!v1 && !(av && !strcmp(av, "client.authentication.k8s.io/v1beta1")))
        return kfail_at(k, map_get(k, ex, "apiVersion") ? map_get(k, ex, "apiVersion") : ex,
                        SCHED_EINVAL,
                        "%s.apiVersion: client.authentication.k8s.io/v1 or v1beta1, not \"%s\"",
                        field, av ? av : "");
    if (!cmd || !*cmd)
        return kfail_at(k, ex, SCHED_EINVAL, "%s.command: not set", field);
    if (v1 && !mode) /* client-go: "interactiveMode must be specified for ... v1" */
        return kfail_at(k, ex, SCHED_EINVAL, "%s.interactiveMode: must be set for %s", field, av);
    if (mode && strcmp(mode, "Never") && strcmp(mode, "IfAvailable"))
        return kfail_at(k, map_get(k, ex, "interactiveMode"), SCHED_EINVAL,
                        "%s.interactiveMode: %s", field,
                        strcmp(mode, "Always") ? "Never, IfAvailable or Always"
                                               : "Always needs a terminal, which gangsched has "
                                                 "not (Never or IfAvailable)");
    size_t wl = strlen(k->file) + strlen(field) + 16, cl = strlen(k->dir) + strlen(cmd) + 2;
    x->api_version = strdup(av);
    x->where = malloc(wl);
    x->command = malloc(cl); /* a relative path holding '/': the kubeconfig's directory's */
    if (x->where)
        snprintf(x->where, wl, "kubeconfig %s: %s", k->file, field);
    if (x->command)
        snprintf(x->command, cl, "%s%s%s", strchr(cmd, '/') && cmd[0] != '/' ? k->dir : "",
                 strchr(cmd, '/') && cmd[0] != '/' ? "/" : "", cmd);
    if (hint && *hint && (x->install_hint = strdup(hint)) != NULL)
        for (char *p = x->install_hint; *p; p++) /* one line, for the log */
            *p = *p == '\n' || *p == '\r' ? ' ' : *p;
    if (!x->api_version || !x->where || !x->command || (hint && *hint && !x->install_hint) ||
        (cluster_info && !(x->cluster = exec_cluster(kc, cluster, a))))
        return kfail(k, SCHED_ENOMEM, "out of memory");
    struct kube_exec_cred cr;
    if ((rc = kube_exec_run(x, &cr, k->eb)) != 0)
        return rc;
    a->token = cr.token;
    a->cert_pem = cr.cert_pem;
    a->key_pem = cr.key_pem;
    a->exec_expires_ms = cr.expires_ms;
    return 0;
}

/* Parses k->file's text into k->y (config/yaml_doc.h: nesting guard, syntax errors with
 * file:line:column), its root a mapping in k->root; the caller closes k->y either way. */
static int parse_doc(struct kcfg *k, const char *data, size_t len)
{
    int rc = ydoc_open(&k->y, k->file, data, len, YDOC_MAX_DEPTH, k->eb);
    if (!rc)
        rc = ydoc_next(&k->y, &k->root);
    if (rc == SCHED_EINVAL) { /* name the file as a kubeconfig, as every message here does */
        char msg[SCHED_ERRBUF];
        snprintf(msg, sizeof(msg), "%s", k->eb ? k->eb->msg : "");
        return sched_fail(k->eb, rc, "kubeconfig %s", msg);
    }
    if (rc)
        return rc;
    if (!k->root || k->root->type != YAML_MAPPING_NODE)
        return kfail(k, SCHED_EINVAL,
                     "expected a mapping at the top (apiVersion: v1, kind: Config)");
    return 0;
}

/* The entry `name` of a named list in the first of the n files that has it (kubectl's rule for
 * a $KUBECONFIG list); *kout is that file. */
static int find_first(struct kcfg *ks, int n, const char *list, const char *inner, const char *name,
                      const char *why, struct kcfg **kout, yaml_node_t **out, int *index)
{
    for (int i = 0; i < n; i++) {
        int rc = find_named(&ks[i], ks[i].root, list, inner, name, why, out, index);
        if (rc != SCHED_ENOENT) {
            *kout = &ks[i];
            return rc;
        }
    }
    if (n == 1)
        return SCHED_ENOENT; /* find_named named the file */
    char q[128];
    sched_quote(name, strlen(name), q, sizeof(q));
    return sched_fail(ks[0].eb, SCHED_ENOENT,
                      "kubeconfig $KUBECONFIG: %s: %s \"%s\" not found in any of its %d files",
                      list, why, q, n);
}

/* The credentials of the current context, merged from n parsed files: current-context from the
 * first file that sets it, each context, cluster and user from the first file that has it;
 * relative paths resolve against the directory of the file that names them. */
static int resolve(struct kcfg *ks, int n)
{
    struct kcfg *k = &ks[0], *kx, *kc, *ku = NULL;
    const char *cur = NULL;
    for (int i = 0; i < n && !(cur && *cur); i++) {
        int rc = get_str(&ks[i], ks[i].root, "current-context", "", &cur);
        if (rc)
            return rc;
    }
    if (!cur || !*cur)
        return n == 1 ? kfail(k, SCHED_EINVAL, "current-context: not set")
                      : sched_fail(k->eb, SCHED_EINVAL,
                                   "kubeconfig $KUBECONFIG: current-context: not set in any of "
                                   "its %d files",
                                   n);
    yaml_node_t *ctx, *cluster, *user = NULL;
    int ci, ki, ui = -1;
    int rc = find_first(ks, n, "contexts", "context", cur, "current-context", &kx, &ctx, &ci);
    if (rc)
        return rc;
    char cf[64], kf[64], uf[64];
    snprintf(cf, sizeof(cf), "contexts[%d].context", ci);
    const char *cname, *uname, *ns;
    if ((rc = get_str(kx, ctx, "cluster", cf, &cname)) ||
        (rc = get_str(kx, ctx, "user", cf, &uname)) ||
        (rc = get_str(kx, ctx, "namespace", cf, &ns)))
        return rc;
    if (!cname || !*cname)
        return kfail(kx, SCHED_EINVAL, "%s.cluster: not set", cf);
    rc = find_first(ks, n, "clusters", "cluster", cname, "cluster of the current context", &kc,
                    &cluster, &ki);
    if (!rc && uname && *uname)
        rc = find_first(ks, n, "users", "user", uname, "user of the current context", &ku, &user,
                        &ui);
    if (rc)
        return rc;
    snprintf(kf, sizeof(kf), "clusters[%d].cluster", ki);
    snprintf(uf, sizeof(uf), "users[%d].user", ui);

    struct kube_auth *a = k->a;
    const char *server, *sni, *proxy;
    if ((rc = get_str(kc, cluster, "server", kf, &server)) ||
        (rc = get_str(kc, cluster, "tls-server-name", kf, &sni)) ||
        (rc = get_str(kc, cluster, "proxy-url", kf, &proxy)) ||
        (rc = get_bool(kc, cluster, "insecure-skip-tls-verify", kf, &a->insecure)))
        return rc;
    if (!server || (strncmp(server, "https://", 8) && strncmp(server, "http://", 7)))
        return kfail(kc, SCHED_EINVAL, "%s.server: %s", kf,
                     server ? "must start with https:// or http://" : "not set");
    a->server = strdup(server);
    if (!a->server)
        return kfail(k, SCHED_ENOMEM, "out of memory");
    for (size_t l = strlen(a->server); l > 0 && a->server[l - 1] == '/'; l--)
        a->server[l - 1] = '\0';
    if (sni && *sni && !(a->tls_server_name = strdup(sni)))
        return kfail(k, SCHED_ENOMEM, "out of memory");
    if (proxy && *proxy && (rc = proxy_field(kc, cluster, kf, proxy, a)))
        return rc;
    rc = pem_pair(kc, cluster, kf, "certificate-authority", &a->ca_file, &a->ca_pem);
    if (rc)
        return rc;
    if (user) {
        const char *token, *token_file;
        if ((rc = get_str(ku, user, "token", uf, &token)) ||
            (rc = get_str(ku, user, "tokenFile", uf, &token_file)))
            return rc;
        if (map_get(ku, user, "auth-provider")) /* removed from client-go in 1.26 */
            return kfail(ku, SCHED_EINVAL,
                         "%s.auth-provider: not supported (use an exec plugin, a token, tokenFile "
                         "or a client certificate)",
                         uf);
        yaml_node_t *ex = map_get(ku, user, "exec");
        if (ex && (token || token_file || map_get(ku, user, "client-certificate") ||
                   map_get(ku, user, "client-certificate-data")))
            return kfail(ku, SCHED_EINVAL,
                         "%s: exec and a token, tokenFile or client certificate together (one "
                         "credential)",
                         uf);
        char ef[96];
        snprintf(ef, sizeof(ef), "%s.exec", uf);
        if (ex && (rc = exec_field(ku, ex, ef, kc, cluster, a)))
            return rc;
        if (token && *token && !(a->token = strdup(token)))
            return kfail(k, SCHED_ENOMEM, "out of memory");
        if (token_file && *token_file) {
            char f[96];
            snprintf(f, sizeof(f), "%s.tokenFile", uf);
            if ((rc = file_field(ku, f, token_file, &a->token_file)))
                return rc;
        }
        if ((rc = pem_pair(ku, user, uf, "client-certificate", &a->cert_file, &a->cert_pem)) ||
            (rc = pem_pair(ku, user, uf, "client-key", &a->key_file, &a->key_pem)))
            return rc;
        bool has_cert = a->cert_file || a->cert_pem, has_key = a->key_file || a->key_pem;
        if (has_cert != has_key)
            return kfail(ku, SCHED_EINVAL,
                         "%s: client-certificate and client-key go together (%s is missing)", uf,
                         has_cert ? "client-key" : "client-certificate");
    }
    a->namespace = strdup(ns && *ns ? ns : "default");
    size_t sl = strlen(kx->file) + strlen(cur) + 32;
    a->source = malloc(sl);
    if (!a->namespace || !a->source)
        return kfail(k, SCHED_ENOMEM, "out of memory");
    snprintf(a->source, sl, "kubeconfig %s (context %s)", kx->file, cur);
    return 0;
}

/* Loads and merges n kubeconfig files (1 <= n <= KUBECONFIG_MAX_FILES). */
static int load_files(const char *const *paths, int n, struct kube_auth **out,
                      struct sched_errbuf *eb)
{
    struct kcfg ks[KUBECONFIG_MAX_FILES];
    struct kube_auth *a = calloc(1, sizeof(*a));
    int rc = a ? 0 : sched_fail(eb, SCHED_ENOMEM, "kubeconfig: out of memory");
    memset(ks, 0, sizeof(ks));
    for (int i = 0; i < n && !rc; i++) {
        const char *path = paths[i];
        char *data;
        size_t len;
        rc = slurp(path, KUBECONFIG_MAX_BYTES, &data, &len);
        if (rc == SCHED_EIO)
            rc = sched_fail(eb, rc, "kubeconfig %s: cannot read: %s", path, strerror(errno));
        else if (rc == SCHED_ERANGE)
            rc = sched_fail(eb, SCHED_EINVAL, "kubeconfig %s: larger than 4 MiB", path);
        else if (rc)
            rc = sched_fail(eb, rc, "kubeconfig %s: out of memory", path);
        if (rc)
            break;
        struct kcfg *k = &ks[i];
        *k = (struct kcfg){.file = path, .eb = eb, .a = a};
        const char *slash = strrchr(path, '/');
        k->dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
        if (!k->dir)
            rc = sched_fail(eb, SCHED_ENOMEM, "kubeconfig %s: out of memory", path);
        else
            rc = parse_doc(k, data, len);
        free(data);
    }
    if (!rc)
        rc = resolve(ks, n);
    for (int i = 0; i < n; i++) {
        ydoc_close(&ks[i].y);
        free(ks[i].dir);
    }
    if (rc) {
        kube_auth_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

/* ---- in-cluster ------------------------------------------------------------------------------ */

static int load_in_cluster(const char *host, const char *port, struct kube_auth **out,
                           struct sched_errbuf *eb)
{
    const char *dir = getenv("GANGSCHED_SA_DIR");
    if (!dir || !*dir)
        dir = SA_DIR_DEFAULT;
    struct kube_auth *a = calloc(1, sizeof(*a));
    size_t n = strlen(dir) + 16, sn = strlen(host) + strlen(port) + 16;
    char *ns_path = malloc(n), *ca_path = malloc(n);
    if (a) {
        a->token_file = malloc(n);
        a->server = malloc(sn);
        a->source = strdup("in-cluster");
    }
    int rc = 0;
    if (!a || !ns_path || !ca_path || !a->token_file || !a->server || !a->source) {
        rc = sched_fail(eb, SCHED_ENOMEM, "in-cluster: out of memory");
        goto out;
    }
    bool v6 = strchr(host, ':') != NULL;
    snprintf(a->server, sn, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    snprintf(a->token_file, n, "%s/token", dir);
    snprintf(ca_path, n, "%s/ca.crt", dir);
    snprintf(ns_path, n, "%s/namespace", dir);
    size_t len;
    rc = slurp(a->token_file, 1 << 20, &a->token, &len);
    if (rc) {
        rc = sched_fail(eb, SCHED_EIO, "in-cluster: service-account token %s: %s", a->token_file,
                        rc == SCHED_EIO ? strerror(errno) : "cannot read");
        goto out;
    }
    trim_end(a->token);
    if (access(ca_path, R_OK) != 0) {
        rc = sched_fail(eb, SCHED_EIO, "in-cluster: service-account CA %s: %s", ca_path,
                        strerror(errno));
        goto out;
    }
    a->ca_file = ca_path;
    ca_path = NULL;
    if (slurp(ns_path, 4096, &a->namespace, &len) == 0)
        trim_end(a->namespace);
    if (!a->namespace || !*a->namespace) {
        free(a->namespace);
        a->namespace = strdup("default");
        if (!a->namespace)
            rc = sched_fail(eb, SCHED_ENOMEM, "in-cluster: out of memory");
    }
out:
    free(ns_path);
    free(ca_path);
    if (rc) {
        kube_auth_free(a);
        return rc;
    }
    *out = a;
    return 0;
}

int kube_auth_load(const char *path, struct kube_auth **out, struct sched_errbuf *eb)
{
    if (!out)
        return sched_fail(eb, SCHED_EINVAL, "kube_auth_load: no output");
    *out = NULL;
    if (path)
        return load_files(&path, 1, out, eb);
    const char *list = getenv("KUBECONFIG");
    if (list && *list) {
        /* every existing file of the list, merged; missing ones are skipped, as kubectl does */
        char *copy = strdup(list);
        if (!copy)
            return sched_fail(eb, SCHED_ENOMEM, "KUBECONFIG: out of memory");
        const char *files[KUBECONFIG_MAX_FILES];
        int n = 0;
        char *save = NULL;
        for (char *f = strtok_r(copy, ":", &save); f; f = strtok_r(NULL, ":", &save)) {
            if (access(f, F_OK) != 0)
                continue;
            if (n == KUBECONFIG_MAX_FILES) {
                free(copy);
                return sched_fail(eb, SCHED_EINVAL,
                                  "KUBECONFIG: more than %d existing files in the list",
                                  KUBECONFIG_MAX_FILES);
            }
            files[n++] = f;
        }
        int rc = n > 0 ? load_files(files, n, out, eb) : 0;
        free(copy);
        if (n > 0)
            return rc; /* else: none exists, try in-cluster */
    } else {
        const char *home = getenv("HOME");
        if (home && *home) {
            char p[4096];
            snprintf(p, sizeof(p), "%s/.kube/config", home);
            const char *one = p;
            if (access(p, F_OK) == 0)
                return load_files(&one, 1, out, eb);
        }
    }
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port)
        return sched_fail(eb, SCHED_ENOENT,
                          "no kubeconfig (%s) and not in a cluster (KUBERNETES_SERVICE_HOST and "
                          "KUBERNETES_SERVICE_PORT unset)",
                          list && *list ? "no file of $KUBECONFIG exists"
                                        : "$KUBECONFIG unset, ~/.kube/config missing");
    return load_in_cluster(host, port, out, eb);
}
