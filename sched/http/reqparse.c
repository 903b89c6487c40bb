/* sched/http/reqparse.c: one HTTP/1.1 request from raw bytes, around the http-parser library;
 * see reqparse.h. */
#include "sched/http/reqparse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static struct reqp *RP(http_parser *p)
{
    return (struct reqp *)p->data;
}

/* Appends at[0..n) to a NUL-terminated buffer grown as needed; false when out of memory. */
static bool buf_append(char **buf, size_t *len, size_t *cap, const char *at, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *len + n + 1)
            nc *= 2;
        char *b = realloc(*buf, nc);
        if (!b)
            return false;
        *buf = b;
        *cap = nc;
    }
    memcpy(*buf + *len, at, n);
    *len += n;
    (*buf)[*len] = 0;
    return true;
}

static bool count_header(struct reqp *r, size_t n)
{
    r->header_bytes += n;
    if (r->header_bytes > HTTP_MAX_HEADER_BYTES) {
        r->error = 431;
        return false;
    }
    return true;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    struct reqp *r = RP(p);
    if (!count_header(r, n) || r->url_len + n > HTTP_MAX_HEADER_BYTES)
        return -1;
    if (!buf_append(&r->url, &r->url_len, &r->url_cap, at, n)) {
        r->error = 500;
        return -1;
    }
    return 0;
}

/* RFC 9110 tchar: the bytes a header name may hold. */
static bool is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A header name must be a token: "Transfer-Encoding : chunked" (a space before the colon) is
 * refused with 400 as Go's net/http does since CVE-2019-16276 (golang/go#34540), the server
 * Kubernetes' own API server is built on; a proxy that reads such a header differently could
 * otherwise smuggle a request past it. */
static int on_field(http_parser *p, const char *at, size_t n)
{
    struct reqp *r = RP(p);
    if (!count_header(r, n))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!is_tchar((unsigned char)at[i])) {
            r->error = 400;
            return -1;
        }
    if (r->in_value) {
        r->in_value = false;
        r->field_len = 0;
    }
    size_t room = sizeof(r->field) - 1 - r->field_len;
    size_t k = n < room ? n : room;
    memcpy(r->field + r->field_len, at, k);
    r->field_len += k;
    r->field[r->field_len] = 0;
    return 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
    struct reqp *r = RP(p);
    if (!count_header(r, n))
        return -1;
    if (!r->in_value) {
        r->in_value = true;
        r->value_is_auth = strcasecmp(r->field, "authorization") == 0;
        if (r->value_is_auth) {
            if (r->have_auth) { /* two Authorization headers: ambiguous */
                r->error = 400;
                return -1;
            }
            r->have_auth = true;
            r->auth_len = 0;
        }
    }
    if (r->value_is_auth && !buf_append(&r->auth, &r->auth_len, &r->auth_cap, at, n)) {
        r->error = 500; /* bounded by count_header */
        return -1;
    }
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    struct reqp *r = RP(p);
    if (p->content_length != ULLONG_MAX && p->content_length > HTTP_MAX_BODY_BYTES) {
        r->error = 413;
        return -1;
    }
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    struct reqp *r = RP(p);
    if (r->body_len + n > HTTP_MAX_BODY_BYTES) {
        r->error = 413;
        return -1;
    }
    char *b = realloc(r->body, r->body_len + n + 1);
    if (!b) {
        r->error = 500;
        return -1;
    }
    memcpy(b + r->body_len, at, n);
    r->body = b;
    r->body_len += n;
    b[r->body_len] = 0;
    return 0;
}

static int on_complete(http_parser *p)
{
    struct reqp *r = RP(p);
    r->complete = true;
    r->keep_alive = http_should_keep_alive(p) != 0;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_complete,
};

void reqp_reset(struct reqp *r)
{
    free(r->body);
    r->url_len = r->field_len = r->auth_len = r->body_len = r->header_bytes = 0;
    r->in_value = r->value_is_auth = r->have_auth = r->complete = r->keep_alive = false;
    r->body = NULL;
    r->error = 0;
    if (r->url)
        r->url[0] = 0;
    if (r->auth)
        r->auth[0] = 0;
    r->field[0] = 0;
    http_parser_init(&r->p, HTTP_REQUEST);
    r->p.data = r;
}

/* Feeds bytes; returns the number consumed. After it, r->complete (a whole request) or
 * r->error (the status to answer with before closing) may be set. */
size_t reqp_feed(struct reqp *r, const char *data, size_t len)
{
    size_t n = http_parser_execute(&r->p, &settings, data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
    if (r->complete)
        return n;
    if (e != HPE_OK && !r->error)
        r->error = 400;
    return n;
}

void reqp_fill_request(struct reqp *r, struct http_request *q, const char *peer)
{
    q->method = http_method_str((enum http_method)r->p.method);
    q->url = r->url ? r->url : "";
    q->auth = r->have_auth ? r->auth : NULL;
    q->body = r->body ? r->body : "";
    q->body_len = r->body_len;
    q->peer = peer;
}

void reqp_free(struct reqp *r)
{
    free(r->body);
    free(r->url);
    free(r->auth);
    r->body = r->url = r->auth = NULL;
}
