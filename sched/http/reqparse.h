/* sched/http/reqparse.h: the request parser of the HTTP server (sched/http/server.c): one
 * HTTP/1.1 request at a time from raw bytes, with the http-parser library (never by hand).
 *
 * Owns: the parser state, the limits on what a request may carry (request line and headers:
 * HTTP_MAX_HEADER_BYTES, else 431; body: HTTP_MAX_BODY_BYTES, else 413), header names that are
 * not tokens (400, as Go's net/http), two Authorization headers (400).
 * Must not touch: routing, sockets, answers.
 */
#ifndef SCHED_HTTP_REQPARSE_H
#define SCHED_HTTP_REQPARSE_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>

#include "sched/http/server.h"

struct reqp {
    http_parser p;
    char *url; /* grown as needed, kept between requests (bounded by the header limit) */
    size_t url_len, url_cap;
    char field[64];
    size_t field_len;
    bool in_value, value_is_auth;
    char *auth;
    size_t auth_len, auth_cap;
    bool have_auth;
    char *body;
    size_t body_len;
    size_t header_bytes;
    int error; /* status to answer with when the parser stops */
    bool complete, keep_alive;
};

/* Ready for the next request (buffers kept). A zeroed struct may be reset. */
void reqp_reset(struct reqp *r);
/* Feeds bytes; returns the number consumed. After it, r->complete (a whole request) or
 * r->error (the status to answer with before closing) may be set. */
size_t reqp_feed(struct reqp *r, const char *data, size_t len);
/* The parsed request as the router takes it (pointers into r). */
void reqp_fill_request(struct reqp *r, struct http_request *q, const char *peer);
/* Frees the buffers (not r). */
void reqp_free(struct reqp *r);

#endif
