/* tests/unit/test_kube_client.c: tests for the Kubernetes API client layer (sched/kube).
 *
 * Owns: the watch framer (objects split at every byte, strings with braces and escaped quotes,
 * junk between objects, the size limit), base64, kubeconfig loading (inline data, paths relative
 * to the kubeconfig, tokenFile, missing context, bad YAML with file:line:column, missing file,
 * exec plugins and their refusals, a plugin run on the event loop), the proxy the environment
 * names as client-go reads it, the in-cluster fallback from a
 * temporary service-account directory, query escaping, MicroTime, and a request to a closed
 * loopback port (retries, then a transport error naming the URL). Network behaviour against a
 * server is in tests/kube/test_client.sh.
 */
/* cmocka.h needs these four headers first. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sched/kube/client.h"
#include "sched/kube/wire.h"

/* ---- framer ---------------------------------------------------------------------------------- */

struct frames {
    char got[16][256];
    int n;
};

static int collect(void *ctx, const char *text, size_t len)
{
    struct frames *f = ctx;
    assert_true(f->n < 16);
    assert_true(len < sizeof(f->got[0]));
    assert_int_equal(text[len], '\0');
    memcpy(f->got[f->n], text, len + 1);
    f->n++;
    return 0;
}

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a{b\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"s\":\"quote \\\" brace } \\\\\",\"x\":[{},{}]}}\n"
    "  \n{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}";

static void check_three(const struct frames *f)
{
    assert_int_equal(f->n, 3);
    assert_string_equal(f->got[0],
                        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a{b\"}}}");
    assert_string_equal(f->got[1],
                        "{\"type\":\"MODIFIED\",\"object\":{\"s\":\"quote \\\" brace } \\\\\","
                        "\"x\":[{},{}]}}");
    assert_string_equal(
        f->got[2], "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}");
}

static void framer_whole(void **state)
{
    (void)state;
    struct kube_framer fr;
    struct frames f = {.n = 0};
    struct sched_errbuf eb;
    kube_framer_init(&fr, 1 << 20);
    assert_int_equal(kube_framer_feed(&fr, stream, strlen(stream), collect, &f, &eb), 0);
    check_three(&f);
    kube_framer_free(&fr);
}

static void framer_every_split(void **state)
{
    (void)state;
    size_t n = strlen(stream);
    for (size_t cut = 0; cut <= n; cut++) {
        struct kube_framer fr;
        struct frames f = {.n = 0};
        struct sched_errbuf eb;
        kube_framer_init(&fr, 1 << 20);
        assert_int_equal(kube_framer_feed(&fr, stream, cut, collect, &f, &eb), 0);
        assert_int_equal(kube_framer_feed(&fr, stream + cut, n - cut, collect, &f, &eb), 0);
        check_three(&f);
        kube_framer_free(&fr);
    }
    /* one byte at a time */
    struct kube_framer fr;
    struct frames f = {.n = 0};
    struct sched_errbuf eb;
    kube_framer_init(&fr, 1 << 20);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(kube_framer_feed(&fr, stream + i, 1, collect, &f, &eb), 0);
    check_three(&f);
    kube_framer_free(&fr);
}

static int count_big(void *ctx, const char *text, size_t len)
{
    (void)text;
    *(size_t *)ctx = len;
    return 0;
}

static void framer_large_and_oversize(void **state)
{
    (void)state;
    size_t big = 3 << 20;
    char *obj = malloc(big + 32);
    if (!obj) { /* an explicit return: gcc -O1 with ASan but without -fno-sanitize-recover
                 * does not see assert_non_null end the test and warns (array-bounds) */
        fail_msg("out of memory");
        return;
    }
    memcpy(obj, "{\"s\":\"", 6);
    memset(obj + 6, 'x', big);
    memcpy(obj + 6 + big, "\"}", 3);
    size_t len = strlen(obj), got = 0;
    struct kube_framer fr;
    struct sched_errbuf eb;
    kube_framer_init(&fr, 4 << 20);
    for (size_t off = 0; off < len; off += 65536) {
        size_t k = len - off < 65536 ? len - off : 65536;
        assert_int_equal(kube_framer_feed(&fr, obj + off, k, count_big, &got, &eb), 0);
    }
    assert_int_equal(got, len);
    kube_framer_free(&fr);

    kube_framer_init(&fr, 1 << 20);
    got = 0;
    int rc = 0;
    for (size_t off = 0; off < len && !rc; off += 65536)
        rc = kube_framer_feed(&fr, obj + off, 65536, count_big, &got, &eb);
    assert_int_equal(rc, SCHED_ERANGE);
    assert_non_null(strstr(eb.msg, "larger than 1048576 bytes"));
    assert_int_equal(got, 0);
    /* the framer is usable again after the error */
    struct frames f = {.n = 0};
    assert_int_equal(kube_framer_feed(&fr, stream, strlen(stream), collect, &f, &eb), 0);
    check_three(&f);
    kube_framer_free(&fr);
    free(obj);
}

static int stop_first(void *ctx, const char *text, size_t len)
{
    (void)text;
    (void)len;
    (*(int *)ctx)++;
    return 1;
}

static void framer_stop(void **state)
{
    (void)state;
    struct kube_framer fr;
    struct sched_errbuf eb;
    int calls = 0;
    kube_framer_init(&fr, 1 << 20);
    assert_int_equal(kube_framer_feed(&fr, stream, strlen(stream), stop_first, &calls, &eb), 1);
    assert_int_equal(calls, 1);
    /* the rest is kept: a later feed finds the next two */
    struct frames f = {.n = 0};
    assert_int_equal(kube_framer_feed(&fr, "", 0, collect, &f, &eb), 0);
    assert_int_equal(f.n, 2);
    kube_framer_free(&fr);
}

/* ---- base64 ---------------------------------------------------------------------------------- */

static void base64(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } ok[] = {
        {"", ""},
        {"Zg==", "f"},
        {"Zm8=", "fo"},
        {"Zm9v", "foo"},
        {"Zm9vYg==", "foob"},
        {"Zm9vYmE=", "fooba"},
        {"Zm9vYmFy", "foobar"},
        {"Zm9v\nYmFy\n", "foobar"},
        {"Zm9vYg", "foob"},
        {"LS0tLS1C+/8=", "-----B\xfb\xff"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        char *out;
        size_t n, bad;
        assert_int_equal(kube_base64_decode(ok[i].in, strlen(ok[i].in), &out, &n, &bad), 0);
        assert_int_equal(n, strlen(ok[i].out));
        assert_memory_equal(out, ok[i].out, n);
        free(out);
    }
    static const char *const bad_in[] = {"Zm9v!", "Z", "Zm9vY", "Zg=a", "Zg===", "Zm9=v"};
    for (size_t i = 0; i < sizeof(bad_in) / sizeof(bad_in[0]); i++) {
        char *out;
        size_t n, bad;
        assert_int_equal(kube_base64_decode(bad_in[i], strlen(bad_in[i]), &out, &n, &bad),
                         SCHED_EINVAL);
        assert_null(out);
    }
    char *out;
    size_t n, bad;
    kube_base64_decode("Zm9v!", 5, &out, &n, &bad);
    assert_int_equal(bad, 4);
}

/* ---- kubeconfig ------------------------------------------------------------------------------ */

static char tmpdir[256];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_kube_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *name, const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* "-----BEGIN CERTIFICATE-----\nabc\n" and friends, base64 */
#define CA_B64   "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmFiYwo="
#define CA_PLAIN "-----BEGIN CERTIFICATE-----\nabc\n"

static const char kc_inline[] = "apiVersion: v1\n"
                                "kind: Config\n"
                                "current-context: dev\n"
                                "clusters:\n"
                                "- name: other\n"
                                "  cluster: {server: https://other:1}\n"
                                "- name: c1\n"
                                "  cluster:\n"
                                "    server: https://127.0.0.1:6443/\n"
                                "    certificate-authority-data: " CA_B64 "\n"
                                "    tls-server-name: api.local\n"
                                "users:\n"
                                "- name: u1\n"
                                "  user:\n"
                                "    token: sekret\n"
                                "    client-certificate-data: " CA_B64 "\n"
                                "    client-key-data: " CA_B64 "\n"
                                "contexts:\n"
                                "- name: prod\n"
                                "  context: {cluster: other, user: u1}\n"
                                "- name: dev\n"
                                "  context: {cluster: c1, user: u1, namespace: team-a}\n";

static void kubeconfig_inline(void **state)
{
    (void)state;
    char path[512];
    write_file("inline.yaml", kc_inline, path, sizeof(path));
    struct kube_auth *a = NULL;
    struct sched_errbuf eb;
    int rc = kube_auth_load(path, &a, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_string_equal(a->server, "https://127.0.0.1:6443");
    assert_string_equal(a->ca_pem, CA_PLAIN);
    assert_string_equal(a->cert_pem, CA_PLAIN);
    assert_string_equal(a->key_pem, CA_PLAIN);
    assert_null(a->ca_file);
    assert_string_equal(a->token, "sekret");
    assert_string_equal(a->tls_server_name, "api.local");
    assert_string_equal(a->namespace, "team-a");
    assert_false(a->insecure);
    assert_non_null(strstr(a->source, "(context dev)"));
    kube_auth_free(a);
}

static void expect_error(const char *yaml, int code, const char *const *parts);

/* A kubeconfig whose user runs plugin `script` (written executable as exec-plugin.sh in the
 * temporary directory, named by a relative path) with exec fields `more`; loaded: its result. */
static int load_exec(const char *script, const char *more, struct kube_auth **a,
                     struct sched_errbuf *eb)
{
    char path[512], buf[2000];
    write_file("exec-plugin.sh", script, path, sizeof(path));
    chmod(path, 0700);
    snprintf(buf, sizeof(buf),
             "current-context: x\n"
             "clusters: [{name: c, cluster: {server: 'https://h:6443', tls-server-name: api.h}}]\n"
             "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
             "command: ./exec-plugin.sh%s%s}}}]\n"
             "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
             strstr(more, "interactiveMode") ? "" : ", interactiveMode: Never", more);
    write_file("exec.yaml", buf, path, sizeof(path));
    *a = NULL;
    return kube_auth_load(path, a, eb);
}

#define CRED_HEAD "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","

/* Exec credential plugins (client.authentication.k8s.io): the token (args, env and
 * KUBERNETES_EXEC_INFO given), a client certificate, the expiry, and each refusal named. */
static void kubeconfig_exec(void **state)
{
    (void)state;
    struct kube_auth *a;
    struct sched_errbuf eb;
    /* the token is made of its argument, an env entry and whether it got the cluster */
    int rc = load_exec(
        "#!/bin/sh\n"
        "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*'api.h'*) c=cl;; "
        "*) c=nocl;; esac\n"
        "printf '" CRED_HEAD "\"status\":{\"token\":\"%s-%s-%s\",\"expirationTimestamp\":"
        "\"2030-01-02T03:04:05Z\"}}' \"$1\" \"$GREETING\" \"$c\"\n",
        ", args: [one], env: [{name: GREETING, value: hi}], provideClusterInfo: true", &a, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_string_equal(a->token, "one-hi-cl");
    assert_null(a->proxy_url);
    assert_int_equal(a->exec_expires_ms, 1893553445000LL);
    assert_non_null(a->exec);
    kube_auth_free(a);
    char path[512];
    write_file("proxy.yaml",
               "current-context: x\n"
               "clusters: [{name: c, cluster: {server: 'https://h', proxy-url: "
               "'socks5://127.0.0.1:1080'}}]\n"
               "contexts: [{name: x, context: {cluster: c}}]\n",
               path, sizeof(path));
    assert_int_equal(kube_auth_load(path, &a, &eb), 0);
    assert_string_equal(a->proxy_url, "socks5h://127.0.0.1:1080"); /* names resolved there */
    kube_auth_free(a);
    rc = load_exec("#!/bin/sh\nprintf '" CRED_HEAD "\"status\":{\"clientCertificateData\":\"C\","
                   "\"clientKeyData\":\"K\"}}'\n",
                   "", &a, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_null(a->token);
    assert_string_equal(a->cert_pem, "C");
    assert_string_equal(a->key_pem, "K");
    assert_int_equal(a->exec_expires_ms, 0);
    kube_auth_free(a);
    static const struct {
        const char *script, *more, *want;
        int rc;
    } bad[] = {
        {"#!/bin/sh\nexit 3\n", "", "users[0].user.exec: command", SCHED_EIO},
        {"#!/bin/sh\nexit 3\n", "", "exit status 3", SCHED_EIO},
        {"#!/bin/sh\necho nope\n", "", "ExecCredential: its output is not JSON", SCHED_EINVAL},
        {"#!/bin/sh\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
         "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'\n",
         "", "apiVersion: not the kubeconfig's", SCHED_EINVAL},
        {"#!/bin/sh\nprintf '" CRED_HEAD "\"status\":{}}'\n", "",
         "exactly one of token and clientCertificateData", SCHED_EINVAL},
        {"#!/bin/sh\nprintf '" CRED_HEAD "\"status\":{\"token\":\"t\",\"expirationTimestamp\":"
         "\"soon\"}}'\n",
         "", "expirationTimestamp: not RFC 3339", SCHED_EINVAL},
        {"#!/bin/sh\n", ", interactiveMode: Always", "Always needs a terminal", SCHED_EINVAL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rc = load_exec(bad[i].script, bad[i].more, &a, &eb);
        if (rc != bad[i].rc || !strstr(eb.msg, bad[i].want))
            fail_msg("case %zu: rc %d, '%s' not in '%s'", i, rc, bad[i].want, eb.msg);
        assert_null(a);
    }
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                 "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
                 "command: p}}}]\n"
                 "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
                 SCHED_EINVAL, (const char *const[]){"exec.interactiveMode: must be set", NULL});
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                 "users: [{name: u, user: {token: t, exec: {apiVersion: "
                 "client.authentication.k8s.io/v1beta1, command: p}}}]\n"
                 "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
                 SCHED_EINVAL, (const char *const[]){"exec and a token", NULL});
    expect_error(
        "current-context: x\n"
        "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
        "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
        "command: no-such-plugin-anywhere}}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
        SCHED_EIO, (const char *const[]){"command no-such-plugin-anywhere: not found", NULL});
    /* its installHint told, on one line, as client-go shows it */
    expect_error(
        "current-context: x\n"
        "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
        "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
        "command: no-such-plugin-anywhere, installHint: \"Install it:\\napt install it\"}}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
        SCHED_EIO,
        (const char *const[]){"not found (installHint: Install it: apt install it)", NULL});
}

/* ---- a plugin run on the event loop -----------------------------------------------------------
 */

struct job_seen {
    int calls, rc;
    char token[64], error[300];
};

static void on_job(void *ctx, int rc, struct kube_exec_cred *cr, const char *error)
{
    struct job_seen *s = ctx;
    s->calls++;
    s->rc = rc;
    snprintf(s->token, sizeof(s->token), "%s", cr->token ? cr->token : "");
    snprintf(s->error, sizeof(s->error), "%s", error ? error : "");
    kube_exec_cred_clear(cr);
}

/* Runs plugin `script` (written as job-plugin.sh) with kube_exec_start; cancels it after
 * cancel_ms when > 0. The loop must end with every handle closed. */
static void run_job(const char *script, uint64_t cancel_ms, struct job_seen *seen, int *start_rc,
                    char *start_err, size_t cap)
{
    char path[512];
    write_file("job-plugin.sh", script, path, sizeof(path));
    chmod(path, 0700);
    char arg[] = "tok", var[] = "SUFFIX=x", av[] = "client.authentication.k8s.io/v1",
         where[] = "kubeconfig k: users[0].user.exec";
    char *args[] = {arg}, *env[] = {var};
    struct kube_exec x = {.api_version = av,
                          .command = path,
                          .args = args,
                          .n_args = 1,
                          .env = env,
                          .n_env = 1,
                          .where = where};
    uv_loop_t loop;
    uv_loop_init(&loop);
    memset(seen, 0, sizeof(*seen));
    struct kube_exec_job *j = NULL;
    struct sched_errbuf eb = {{0}};
    *start_rc = kube_exec_start(&loop, &x, on_job, seen, &j, &eb);
    snprintf(start_err, cap, "%s", eb.msg);
    assert_int_equal(seen->calls, 0); /* never before kube_exec_start returns */
    if (cancel_ms) {
        uv_run(&loop, UV_RUN_NOWAIT);
        usleep((useconds_t)cancel_ms * 1000);
        kube_exec_cancel(j);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* kube_exec_start: the plugin's token (its argument and env), a non-zero exit named, a command
 * not found refused at once, output past 1 MiB refused, and a cancelled run killed and never
 * reported, the loop ending with every handle closed. */
static void exec_on_the_loop(void **state)
{
    (void)state;
    struct job_seen seen;
    int rc;
    char err[600];
    run_job("#!/bin/sh\nprintf '" CRED_HEAD
            "\"status\":{\"token\":\"%s-%s\"}}' \"$1\" \"$SUFFIX\"\n",
            0, &seen, &rc, err, sizeof(err));
    assert_int_equal(rc, 0);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.rc, 0);
    assert_string_equal(seen.token, "tok-x");
    run_job("#!/bin/sh\nexit 5\n", 0, &seen, &rc, err, sizeof(err));
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.rc, SCHED_EIO);
    assert_non_null(strstr(seen.error, "users[0].user.exec: command"));
    assert_non_null(strstr(seen.error, "exit status 5"));
    run_job("#!/bin/sh\nhead -c 1100000 /dev/zero | tr '\\0' a\n", 0, &seen, &rc, err, sizeof(err));
    assert_int_equal(seen.calls, 1);
    assert_non_null(strstr(seen.error, "printed more than 1 MiB"));
    run_job("#!/bin/sh\nexec sleep 20\n", 100, &seen, &rc, err, sizeof(err));
    assert_int_equal(rc, 0);
    assert_int_equal(seen.calls, 0); /* cancelled: killed (the loop did not wait 20 s) */
    run_job("#!/bin/sh\nprintf '" CRED_HEAD "\"status\":{\"token\":\"t\"}}'\n", 0, &seen, &rc, err,
            sizeof(err));
    assert_int_equal(seen.rc, 0);
    char missing[600];
    snprintf(missing, sizeof(missing), "%s/no-such-plugin", tmpdir);
    char av[] = "client.authentication.k8s.io/v1", where[] = "kubeconfig k: users[0].user.exec";
    struct kube_exec x = {.api_version = av, .command = missing, .where = where};
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_exec_job *j = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kube_exec_start(&loop, &x, on_job, &seen, &j, &eb), SCHED_EIO);
    assert_null(j);
    assert_non_null(strstr(eb.msg, "no-such-plugin: not found"));
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* kube_proxy_for: the environment read as client-go (Go's httpproxy) reads it. */
static void expect_proxy(const char *server, const char *want)
{
    char *got = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kube_proxy_for(server, &got, &eb), 0);
    if (want ? !got || strcmp(got, want) : got != NULL)
        fail_msg("%s: proxy %s, want %s", server, got ? got : "none", want ? want : "none");
    free(got);
}

static void clear_proxy_env(void)
{
    const char *vars[] = {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",    "NO_PROXY",
                          "no_proxy",    "ALL_PROXY",   "all_proxy",  "REQUEST_METHOD"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

static void proxy_from_environment(void **state)
{
    (void)state;
    clear_proxy_env();
    expect_proxy("https://api.example.com", NULL);
    setenv("ALL_PROXY", "http://all:1", 1); /* Go reads no ALL_PROXY (curl would) */
    expect_proxy("https://api.example.com", NULL);
    setenv("https_proxy", "proxy:3128", 1); /* no scheme: http:// */
    expect_proxy("https://api.example.com:6443", "http://proxy:3128");
    setenv("HTTPS_PROXY", "socks5://s:1080", 1); /* uppercase first; SOCKS5 resolves the name */
    expect_proxy("https://api.example.com", "socks5h://s:1080");
    /* loopback servers are never proxied */
    expect_proxy("https://127.0.0.1:6443", NULL);
    expect_proxy("https://127.9.9.9:6443", NULL);
    expect_proxy("https://localhost:6443", NULL);
    expect_proxy("https://[::1]:6443", NULL);
    expect_proxy("https://10.1.2.3", "socks5h://s:1080");
    /* no_proxy: domains with their subdomains, .domain the subdomains only, IPs, CIDRs, ports */
    setenv("NO_PROXY", " Example.COM , .corp.internal,10.0.0.0/8,192.168.1.5:6443, fd00::/8", 1);
    expect_proxy("https://example.com", NULL);
    expect_proxy("https://API.example.com", NULL);
    expect_proxy("https://badexample.com", "socks5h://s:1080");
    expect_proxy("https://k.corp.internal", NULL);
    expect_proxy("https://corp.internal", "socks5h://s:1080");
    expect_proxy("https://10.200.0.1", NULL);
    expect_proxy("https://11.0.0.1", "socks5h://s:1080");
    expect_proxy("https://192.168.1.5:6443", NULL);
    expect_proxy("https://192.168.1.5", "socks5h://s:1080"); /* port 443 */
    expect_proxy("https://[fd00::5]:6443", NULL);
    setenv("no_proxy", "*", 1); /* NO_PROXY is read first */
    expect_proxy("https://other.org", "socks5h://s:1080");
    unsetenv("NO_PROXY");
    expect_proxy("https://other.org", NULL);
    unsetenv("no_proxy");
    /* an http server: HTTP_PROXY or http_proxy, none as a CGI program (httpoxy) */
    expect_proxy("http://api.example.com", NULL);
    setenv("HTTP_PROXY", "http://hp:8080", 1);
    expect_proxy("http://api.example.com", "http://hp:8080");
    setenv("REQUEST_METHOD", "GET", 1);
    expect_proxy("http://api.example.com", NULL);
    unsetenv("REQUEST_METHOD");
    /* a scheme Go's transport does not take: refused naming the variables */
    setenv("HTTPS_PROXY", "ftp://f:21", 1);
    char *got = NULL;
    struct sched_errbuf eb = {{0}};
    assert_int_equal(kube_proxy_for("https://api.example.com", &got, &eb), SCHED_EINVAL);
    assert_null(got);
    assert_non_null(strstr(eb.msg, "environment HTTPS_PROXY / https_proxy"));
    expect_proxy("https://127.0.0.1", NULL); /* unless not used */
    clear_proxy_env();
}

static void kubeconfig_relative_files(void **state)
{
    (void)state;
    char path[512], p2[512];
    char sub[300];
    snprintf(sub, sizeof(sub), "%s/certs", tmpdir);
    mkdir(sub, 0700);
    write_file("certs/ca.crt", CA_PLAIN, p2, sizeof(p2));
    write_file("certs/tok", "tok-from-file\n", p2, sizeof(p2));
    write_file("certs/c.crt", CA_PLAIN, p2, sizeof(p2));
    write_file("certs/c.key", CA_PLAIN, p2, sizeof(p2));
    write_file("rel.yaml",
               "current-context: x\n"
               "clusters: [{name: c, cluster: {server: 'http://h:80', certificate-authority: "
               "certs/ca.crt, insecure-skip-tls-verify: true}}]\n"
               "users: [{name: u, user: {tokenFile: certs/tok, client-certificate: certs/c.crt, "
               "client-key: certs/c.key}}]\n"
               "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
               path, sizeof(path));
    struct kube_auth *a = NULL;
    struct sched_errbuf eb;
    int rc = kube_auth_load(path, &a, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    char want[600];
    snprintf(want, sizeof(want), "%s/certs/ca.crt", tmpdir);
    assert_string_equal(a->ca_file, want);
    snprintf(want, sizeof(want), "%s/certs/tok", tmpdir);
    assert_string_equal(a->token_file, want);
    snprintf(want, sizeof(want), "%s/certs/c.key", tmpdir);
    assert_string_equal(a->key_file, want);
    assert_true(a->insecure);
    assert_string_equal(a->namespace, "default");
    kube_auth_free(a);
}

static void expect_error(const char *yaml, int code, const char *const *parts)
{
    char path[512];
    write_file("bad.yaml", yaml, path, sizeof(path));
    struct kube_auth *a = NULL;
    struct sched_errbuf eb;
    eb.msg[0] = '\0';
    int rc = kube_auth_load(path, &a, &eb);
    if (rc != code)
        fail_msg("rc %d, want %d: %s", rc, code, eb.msg);
    assert_null(a);
    assert_non_null(strstr(eb.msg, path));
    for (; *parts; parts++)
        if (!strstr(eb.msg, *parts))
            fail_msg("'%s' not in '%s'", *parts, eb.msg);
}

static void kubeconfig_errors(void **state)
{
    (void)state;
    expect_error("current-context: nope\ncontexts: [{name: x, context: {cluster: c}}]\n",
                 SCHED_ENOENT,
                 (const char *const[]){"contexts: current-context \"nope\" not found", NULL});
    expect_error("current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n", SCHED_ENOENT,
                 (const char *const[]){"clusters:", "\"c\" not found", NULL});
    expect_error("clusters: []\n", SCHED_EINVAL,
                 (const char *const[]){"current-context: not set", NULL});
    expect_error("current-context: x\nclusters:\n  - name: [\n", SCHED_EINVAL,
                 (const char *const[]){"YAML syntax error", ":4:1:", NULL});
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'https://h', certificate-authority-data: "
                 "'%%%'}}]\n"
                 "contexts: [{name: x, context: {cluster: c}}]\n",
                 SCHED_EINVAL,
                 (const char *const[]){"clusters[0].cluster.certificate-authority-data",
                                       "not valid base64", NULL});
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                 "users: [{name: u, user: {client-key: nokey.pem, client-certificate: a}}]\n"
                 "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
                 SCHED_EIO, (const char *const[]){"users[0].user.client-certificate", NULL});
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                 "users: [{name: u, user: {exec: {command: gke-gcloud-auth-plugin}}}]\n"
                 "contexts: [{name: x, context: {cluster: c, user: u}}]\n",
                 SCHED_EINVAL,
                 (const char *const[]){"users[0].user.exec.apiVersion",
                                       "client.authentication.k8s.io/v1 or v1beta1", NULL});
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'https://h', proxy-url: 'ftp://p:1'}}]\n"
                 "contexts: [{name: x, context: {cluster: c}}]\n",
                 SCHED_EINVAL,
                 (const char *const[]){"clusters[0].cluster.proxy-url: the scheme must be", NULL});
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'ftp://h'}}]\n"
                 "contexts: [{name: x, context: {cluster: c}}]\n",
                 SCHED_EINVAL, (const char *const[]){"clusters[0].cluster.server", NULL});
    expect_error("current-context: x\n"
                 "clusters: [{name: c, cluster: {server: 'https://h', insecure-skip-tls-verify: "
                 "maybe}}]\n"
                 "contexts: [{name: x, context: {cluster: c}}]\n",
                 SCHED_EINVAL,
                 (const char *const[]){"insecure-skip-tls-verify", "maybe", ":2:", NULL});
    /* a missing file */
    struct kube_auth *a = NULL;
    struct sched_errbuf eb;
    char path[512];
    snprintf(path, sizeof(path), "%s/does-not-exist", tmpdir);
    assert_int_equal(kube_auth_load(path, &a, &eb), SCHED_EIO);
    assert_non_null(strstr(eb.msg, "does-not-exist: cannot read"));
}

static void kubeconfig_env_and_in_cluster(void **state)
{
    (void)state;
    char path[512], sa[300], p2[512];
    write_file("inline.yaml", kc_inline, path, sizeof(path));
    char list[1200];
    snprintf(list, sizeof(list), "%s/missing:%s", tmpdir, path);
    setenv("KUBECONFIG", list, 1);
    struct kube_auth *a = NULL;
    struct sched_errbuf eb;
    assert_int_equal(kube_auth_load(NULL, &a, &eb), 0);
    assert_string_equal(a->namespace, "team-a");
    kube_auth_free(a);

    /* no kubeconfig anywhere: the in-cluster service account */
    snprintf(list, sizeof(list), "%s/missing", tmpdir);
    setenv("KUBECONFIG", list, 1);
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(kube_auth_load(NULL, &a, &eb), SCHED_ENOENT);
    assert_non_null(strstr(eb.msg, "not in a cluster"));

    snprintf(sa, sizeof(sa), "%s/sa", tmpdir);
    mkdir(sa, 0700);
    write_file("sa/token", "in-cluster-token\n", p2, sizeof(p2));
    write_file("sa/namespace", "kube-system", p2, sizeof(p2));
    setenv("GANGSCHED_SA_DIR", sa, 1);
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    assert_int_equal(kube_auth_load(NULL, &a, &eb), SCHED_EIO);
    assert_non_null(strstr(eb.msg, "ca.crt"));
    write_file("sa/ca.crt", CA_PLAIN, p2, sizeof(p2));
    int rc = kube_auth_load(NULL, &a, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_string_equal(a->server, "https://[fd00::1]:443");
    assert_string_equal(a->token, "in-cluster-token");
    assert_non_null(strstr(a->token_file, "/sa/token"));
    assert_non_null(strstr(a->ca_file, "/sa/ca.crt"));
    assert_string_equal(a->namespace, "kube-system");
    assert_string_equal(a->source, "in-cluster");
    kube_auth_free(a);
    unsetenv("KUBECONFIG");
    unsetenv("GANGSCHED_SA_DIR");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

static void kubeconfig_merged_list(void **state)
{
    (void)state;
    /* kubectl's merge of a $KUBECONFIG list: current-context from the first file that sets it,
     * each context, cluster and user from the first file that has it, relative paths against
     * the file that names them */
    char a[512], b[512], c[512], p2[512], sub[300];
    snprintf(sub, sizeof(sub), "%s/other", tmpdir);
    mkdir(sub, 0700);
    write_file("other/ca.crt", CA_PLAIN, p2, sizeof(p2));
    write_file("m-a.yaml",
               "current-context: x\n"
               "contexts: [{name: x, context: {cluster: c, user: u, namespace: ns-a}}]\n",
               a, sizeof(a));
    write_file("other/m-b.yaml",
               "current-context: y\n"
               "clusters: [{name: c, cluster: {server: 'https://b:6443', certificate-authority: "
               "ca.crt}}]\n"
               "users: [{name: u, user: {token: from-b}}]\n"
               "contexts: [{name: x, context: {cluster: ignored}}]\n",
               b, sizeof(b));
    write_file("m-c.yaml",
               "clusters: [{name: c, cluster: {server: 'https://c:1'}}]\n"
               "users: [{name: u, user: {token: from-c}}]\n",
               c, sizeof(c));
    char list[1800];
    snprintf(list, sizeof(list), "%s:%s/missing:%s:%s", a, tmpdir, b, c);
    setenv("KUBECONFIG", list, 1);
    struct kube_auth *au = NULL;
    struct sched_errbuf eb;
    int rc = kube_auth_load(NULL, &au, &eb);
    if (rc)
        fail_msg("%s", eb.msg);
    assert_string_equal(au->server, "https://b:6443");
    assert_string_equal(au->token, "from-b");
    assert_string_equal(au->namespace, "ns-a");
    char want[600];
    snprintf(want, sizeof(want), "%s/other/ca.crt", tmpdir);
    assert_string_equal(au->ca_file, want);
    assert_non_null(strstr(au->source, "m-a.yaml (context x)"));
    kube_auth_free(au);

    /* a user no file has: the error names the list */
    write_file("m-d.yaml",
               "current-context: z\ncontexts: [{name: z, context: {cluster: c, user: nobody}}]\n",
               a, sizeof(a));
    snprintf(list, sizeof(list), "%s:%s", a, c);
    setenv("KUBECONFIG", list, 1);
    assert_int_equal(kube_auth_load(NULL, &au, &eb), SCHED_ENOENT);
    assert_non_null(strstr(eb.msg, "users: user of the current context \"nobody\" not found"));
    assert_non_null(strstr(eb.msg, "any of its 2 files"));
    /* a broken file of the list is named with its line and column */
    write_file("m-e.yaml", "current-context: [\n", b, sizeof(b));
    snprintf(list, sizeof(list), "%s:%s", c, b);
    setenv("KUBECONFIG", list, 1);
    assert_int_equal(kube_auth_load(NULL, &au, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "m-e.yaml:2:"));
    unsetenv("KUBECONFIG");
}

/* ---- helpers --------------------------------------------------------------------------------- */

static void text_helpers(void **state)
{
    (void)state;
    char q[64] = "x=";
    assert_true(kube_query_escape(q, sizeof(q), "status.phase!=Succeeded,a b/c"));
    assert_string_equal(q, "x=status.phase%21%3DSucceeded%2Ca%20b%2Fc");
    char small[8] = "";
    assert_false(kube_query_escape(small, sizeof(small), "abc def"));
    char t[40];
    kube_microtime_now(t, sizeof(t));
    assert_int_equal(strlen(t), 27);
    assert_int_equal(t[10], 'T');
    assert_int_equal(t[19], '.');
    assert_int_equal(t[26], 'Z');
}

/* ---- a request to a closed port -------------------------------------------------------------- */

struct result {
    int done;
    int status;
    uint32_t attempts;
    char error[512];
};

static void on_resp(void *ctx, const struct kube_resp *r)
{
    struct result *res = ctx;
    res->done++;
    res->status = r->status;
    res->attempts = r->attempts;
    snprintf(res->error, sizeof(res->error), "%s", r->error ? r->error : "");
}

/* A client of `loop` to a port nothing listens on (every request ends in a transport error). */
static struct kube_client *client_to_nowhere(uv_loop_t *loop, const struct kube_client_opts *o)
{
    struct kube_auth a = {.server = (char *)"http://127.0.0.1:1", .source = (char *)"test"};
    struct kube_client *c;
    struct sched_errbuf eb;
    assert_int_equal(kube_client_new(loop, &a, o, &c, &eb), 0);
    return c;
}

static void request_transport_error(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_client_opts o;
    kube_client_opts_default(&o);
    o.max_retries = 2;
    struct kube_client *c = client_to_nowhere(&loop, &o);
    struct result res = {0};
    assert_int_equal(kube_request(c, KUBE_GET, "/api/v1/pods", NULL, 0, 0, on_resp, &res), 0);
    struct result res2 = {0};
    assert_int_equal(kube_request(c, KUBE_POST, "/api/v1/namespaces/default/pods", "{}", 2,
                                  KUBE_NO_RETRY, on_resp, &res2),
                     0);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(res.done, 1);
    assert_int_equal(res.status, 0);
    assert_int_equal(res.attempts, 3);
    assert_non_null(strstr(res.error, "GET http://127.0.0.1:1/api/v1/pods"));
    assert_int_equal(res2.done, 1);
    assert_int_equal(res2.attempts, 1);
    struct kube_client_stats st;
    kube_client_stats(c, &st);
    assert_int_equal(st.requests, 4);
    assert_int_equal(st.retries, 2);
    assert_int_equal(st.errors, 2);
    /* a request still queued when the client is freed never calls back */
    struct result res3 = {0};
    assert_int_equal(kube_request(c, KUBE_GET, "/x", NULL, 0, 0, on_resp, &res3), 0);
    kube_client_free(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(res3.done, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static int order_seq;

static void on_order(void *ctx, const struct kube_resp *r)
{
    (void)r;
    *(int *)ctx = ++order_seq;
}

/* KUBE_LOW requests start only when no other one waits (one at a time here: max_inflight 1),
 * kube_client_promote puts one back in the normal order, one that waited past low_max_wait_ms
 * takes one start in ten, and kube_client_replace rewrites a queued one's body. */
static void low_requests_wait(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct kube_client_opts o;
    kube_client_opts_default(&o);
    o.max_inflight = 1;
    struct kube_client *c = client_to_nowhere(&loop, &o);
    int low1 = 0, low2 = 0, normal = 0, low3 = 0;
    unsigned low = KUBE_NO_RETRY | KUBE_LOW;
    assert_int_equal(kube_request(c, KUBE_GET, "/low1", NULL, 0, low, on_order, &low1), 0);
    assert_int_equal(kube_request(c, KUBE_GET, "/low2", NULL, 0, low, on_order, &low2), 0);
    assert_int_equal(kube_request(c, KUBE_GET, "/low3", NULL, 0, low, on_order, &low3), 0);
    assert_int_equal(kube_request(c, KUBE_GET, "/n", NULL, 0, KUBE_NO_RETRY, on_order, &normal), 0);
    assert_int_equal(kube_client_promote(c, "/low3"), 1);
    assert_int_equal(kube_client_promote(c, "/none"), 0);
    assert_false(kube_client_replace(c, "/low1", "{}", 2)); /* a GET: no body to replace */
    assert_false(kube_client_replace(c, "/n", "{}", 2));    /* not a KUBE_LOW one */
    int px = 0;
    assert_int_equal(kube_request(c, KUBE_PATCH_MERGE, "/p", "{\"a\":1}", 7, low, on_order, &px),
                     0);
    assert_true(kube_client_replace(c, "/p", "{\"a\":2}", 7)); /* no second request */
    struct kube_client_stats st;
    kube_client_stats(c, &st);
    assert_int_equal(st.queued, 5);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(normal, 1); /* queued last, answered first */
    assert_int_equal(low3, 2);   /* promoted: in the normal order, after it */
    assert_int_equal(low1, 3);
    assert_int_equal(low2, 4);
    assert_int_equal(px, 5);
    kube_client_free(c);
    /* past low_max_wait_ms a KUBE_LOW request takes one start in ten: two overdue ones behind
     * twelve others go tenth and last */
    o.low_max_wait_ms = 1;
    c = client_to_nowhere(&loop, &o);
    int at[14] = {0};
    assert_int_equal(kube_request(c, KUBE_GET, "/low1", NULL, 0, low, on_order, &at[0]), 0);
    assert_int_equal(kube_request(c, KUBE_GET, "/low2", NULL, 0, low, on_order, &at[1]), 0);
    for (int k = 2; k < 14; k++)
        assert_int_equal(kube_request(c, KUBE_GET, "/n", NULL, 0, KUBE_NO_RETRY, on_order, &at[k]),
                         0);
    uv_sleep(5);
    uv_update_time(&loop);
    order_seq = 0;
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(at[0], 10); /* after nine others */
    assert_int_equal(at[1], 14); /* then nine more would go first: only three are left */
    for (int k = 2; k < 11; k++)
        assert_int_equal(at[k], k - 1);
    kube_client_free(c);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(framer_whole),
        cmocka_unit_test(framer_every_split),
        cmocka_unit_test(framer_large_and_oversize),
        cmocka_unit_test(framer_stop),
        cmocka_unit_test(base64),
        cmocka_unit_test(kubeconfig_inline),
        cmocka_unit_test(kubeconfig_relative_files),
        cmocka_unit_test(kubeconfig_errors),
        cmocka_unit_test(kubeconfig_exec),
        cmocka_unit_test(exec_on_the_loop),
        cmocka_unit_test(proxy_from_environment),
        cmocka_unit_test(kubeconfig_env_and_in_cluster),
        cmocka_unit_test(kubeconfig_merged_list),
        cmocka_unit_test(text_helpers),
        cmocka_unit_test(request_transport_error),
        cmocka_unit_test(low_requests_wait),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
