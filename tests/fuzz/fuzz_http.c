/* tests/fuzz/fuzz_http.c: libFuzzer harness for the HTTP request path: raw bytes through the
 * http-parser callbacks, the limits, routing, percent-decoding, query parsing, bearer-token
 * checks and the JSON body of POST /v1/reservations (sched/http/server.c, http_feed_raw).
 *
 * Owns: the properties checked on arbitrary input: nothing crashes or leaks, and every answer
 * has a status the API documents (docs/api.md). A violated property aborts, which libFuzzer and
 * replay_main.c both report. The server has token files (write "w", read "r") in a temporary
 * directory, a write provider that accepts everything but the target "nope", and no database
 * (reads answer 503), so the harness needs no store.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/http/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fake_write(void *ctx, const struct http_write *w, cJSON **result,
                      struct sched_errbuf *eb)
{
    (void)ctx;
    if (strcmp(w->target, "nope") == 0)
        return sched_fail(eb, SCHED_ENOENT, "queue 'nope' not found");
    *result = cJSON_CreateObject();
    return *result ? 0 : SCHED_ENOMEM;
}

static struct http_server *srv;
static char dir[64];

static void cleanup(void)
{
    char p[96];
    http_server_free_detached(srv);
    snprintf(p, sizeof(p), "%s/w", dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/r", dir);
    unlink(p);
    rmdir(dir);
}

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/fuzz-http-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    char w[96], r[96];
    snprintf(w, sizeof(w), "%s/w", dir);
    snprintf(r, sizeof(r), "%s/r", dir);
    FILE *f = fopen(w, "w");
    if (!f || fputs("w\n", f) < 0 || fclose(f) != 0)
        abort();
    f = fopen(r, "w");
    if (!f || fputs("r\n", f) < 0 || fclose(f) != 0)
        abort();
    struct http_opts o = {.listen = "127.0.0.1:0", .write_token_file = w, .read_token_file = r};
    struct http_provider p = {.write = fake_write};
    struct sched_errbuf eb = {{0}};
    if (http_server_new_detached(&o, &p, &srv, &eb) != 0) {
        fprintf(stderr, "fuzz_http: %s\n", eb.msg);
        abort();
    }
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!srv)
        setup();
    int st = http_feed_raw(srv, (const char *)data, size);
    static const int known[] = {0, 200, 202, 400, 401, 403, 404, 405, 408, 413, 431, 500, 501, 503};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (st == known[i])
            return 0;
    fprintf(stderr, "fuzz_http: undocumented status %d\n", st);
    abort();
}
