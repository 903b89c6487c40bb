/* sched/kube/proxy.c: which proxy carries the client's requests (see client.h kube_proxy_for).
 *
 * Owns: client-go's choice of a proxy, made once per client: the kubeconfig's proxy-url, else
 * the environment read as Go's net/http reads it (golang.org/x/net/http/httpproxy: HTTPS_PROXY
 * or https_proxy for an https server, HTTP_PROXY or http_proxy for http unless run as a CGI
 * program, NO_PROXY or no_proxy, uppercase first; loopback servers never proxied; ALL_PROXY not
 * read). curl's own reading of the environment differs (it reads ALL_PROXY, proxies loopback,
 * ignores HTTP_PROXY), so the client gives curl this answer and turns curl's reading off.
 * Must not touch: the network, the kubeconfig's YAML (auth.c validates proxy-url).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "sched/kube/client.h"

char *kube_proxy_norm(const char *url)
{
    bool socks = !strncmp(url, "socks5://", 9), bare = !strstr(url, "://");
    size_t n = strlen(url) + 16;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s%s",
                 socks  ? "socks5h://"
                 : bare ? "http://"
                        : "",
                 socks ? url + 9 : url);
    return out;
}

/* The first of two environment variables set and not empty, or NULL. */
static const char *env_any(const char *upper, const char *lower)
{
    const char *v = getenv(upper);
    if (!v || !*v)
        v = getenv(lower);
    return v && *v ? v : NULL;
}

/* An IP address (v4 or v6) into ip[16] (v4 as v4-mapped v6); false when s is none. */
static bool parse_ip(const char *s, unsigned char *ip)
{
    unsigned char v4[4];
    if (inet_pton(AF_INET, s, v4) == 1) {
        memset(ip, 0, 10);
        ip[10] = ip[11] = 0xff;
        memcpy(ip + 12, v4, 4);
        return true;
    }
    return inet_pton(AF_INET6, s, ip) == 1;
}

static bool is_v4(const unsigned char *ip)
{
    static const unsigned char pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(ip, pre, 12) == 0;
}

static bool loopback(const char *host)
{
    unsigned char ip[16];
    static const unsigned char one[16] = {[15] = 1};
    return !strcmp(host, "localhost") ||
           (parse_ip(host, ip) && ((is_v4(ip) && ip[12] == 127) || !memcmp(ip, one, 16)));
}

/* Whether ip lies in CIDR "addr/bits" (v4 bits count within the v4 address). */
static bool in_cidr(const unsigned char *ip, const char *cidr)
{
    char a[64];
    const char *slash = strchr(cidr, '/');
    if (!slash || (size_t)(slash - cidr) >= sizeof(a))
        return false;
    memcpy(a, cidr, (size_t)(slash - cidr));
    a[slash - cidr] = '\0';
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    unsigned char net[16];
    if (*end || !parse_ip(a, net) || bits < 0 || bits > (is_v4(net) ? 32 : 128) ||
        is_v4(net) != is_v4(ip))
        return false;
    bits += is_v4(net) ? 96 : 0;
    for (long b = 0; b < bits; b++)
        if (((ip[b / 8] ^ net[b / 8]) >> (7 - b % 8)) & 1)
            return false;
    return true;
}

/* Whether no_proxy entry e (lowercase, trimmed) exempts host:port, as httpproxy's matchers:
 * "*" all; an IP (with an optional port) that IP; a CIDR the addresses in it; a domain that name
 * and its subdomains, ".domain" and "*.domain" its subdomains only (with an optional port). */
static bool exempts(const char *e, const char *host, const char *port)
{
    if (!strcmp(e, "*"))
        return true;
    unsigned char ip[16], hip[16];
    bool host_ip = parse_ip(host, hip);
    if (strchr(e, '/'))
        return host_ip && in_cidr(hip, e);
    char h[300];
    const char *p = NULL, *colon = strchr(e, ':');
    if (e[0] == '[' && strchr(e, ']')) { /* [v6]:port */
        const char *rb = strchr(e, ']');
        snprintf(h, sizeof(h), "%.*s", (int)(rb - e - 1), e + 1);
        p = rb[1] == ':' ? rb + 2 : NULL;
    } else if (colon && !strchr(colon + 1, ':')) { /* host:port */
        snprintf(h, sizeof(h), "%.*s", (int)(colon - e), e);
        p = colon + 1;
    } else {
        snprintf(h, sizeof(h), "%s", e);
    }
    if (!*h || (p && strcmp(p, port)))
        return false;
    if (parse_ip(h, ip))
        return host_ip && !memcmp(ip, hip, 16);
    const char *d = !strncmp(h, "*.", 2) ? h + 1 : h;
    size_t hl = strlen(host), dl = strlen(d);
    if (d[0] != '.' && !strcmp(host, d))
        return true;
    return hl > dl && !strcmp(host + hl - dl, d) && (d[0] == '.' || host[hl - dl - 1] == '.');
}

/* Whether the environment's no_proxy list exempts host:port. */
static bool no_proxy(const char *list, const char *host, const char *port)
{
    for (const char *s = list; s && *s;) {
        size_t n = strcspn(s, ",");
        char e[300];
        size_t k = 0;
        for (size_t i = 0; i < n && k + 1 < sizeof(e); i++)
            if (!isspace((unsigned char)s[i]))
                e[k++] = (char)tolower((unsigned char)s[i]);
        e[k] = '\0';
        if (*e && exempts(e, host, port))
            return true;
        s += n + (s[n] == ',');
    }
    return false;
}

int kube_proxy_for(const char *server, char **out, struct sched_errbuf *eb)
{
    *out = NULL;
    bool https = !strncmp(server, "https://", 8), cgi = getenv("REQUEST_METHOD") != NULL;
    const char *var = https ? "HTTPS_PROXY" : "HTTP_PROXY";
    const char *proxy = https ? env_any(var, "https_proxy")
                        : cgi ? NULL
                              : env_any(var, "http_proxy");
    if (!proxy)
        return 0;
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL;
    int rc = 0;
    if (!u || curl_url_set(u, CURLUPART_URL, server, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        rc = sched_fail(eb, SCHED_EINVAL, "server %s: not a valid URL", server);
    } else {
        char h[300];
        size_t k = 0;
        for (const char *p = host; *p && k + 1 < sizeof(h); p++) /* lowercase, no [] */
            if (*p != '[' && *p != ']')
                h[k++] = (char)tolower((unsigned char)*p);
        h[k] = '\0';
        bool direct = loopback(h) || no_proxy(env_any("NO_PROXY", "no_proxy"), h, port);
        bool known = !strstr(proxy, "://") || !strncmp(proxy, "http://", 7) ||
                     !strncmp(proxy, "https://", 8) || !strncmp(proxy, "socks5://", 9);
        if (!direct && !known)
            rc = sched_fail(eb, SCHED_EINVAL,
                            "environment %s / %s: the proxy's scheme must be http, https or "
                            "socks5 (client-go's), not \"%s\"",
                            var, https ? "https_proxy" : "http_proxy", proxy);
        else if (!direct && !(*out = kube_proxy_norm(proxy)))
            rc = sched_fail(eb, SCHED_ENOMEM, "kube client: out of memory");
    }
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
}
