/* tests/fuzz/fuzz_quantity.c: libFuzzer harness for qty_parse and qty_format.
 *
 * Owns: the properties checked on arbitrary input: parsing at scales 0 and 3 never crashes, both
 * scales agree on validity, ceil(ceil(1000 q) / 1000) == ceil(q), errors leave the output alone
 * and produce a message, and every parsed value formats to a string that parses back to itself.
 * A violated property aborts, which both libFuzzer and replay_main.c report as a failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what, const char *input)
{
    if (!ok) {
        fprintf(stderr, "fuzz_quantity: %s (input \"%s\")\n", what, input);
        abort();
    }
}

static void roundtrip(int64_t v, int scale, const char *input)
{
    for (int binary = 0; binary <= 1; binary++) {
        char buf[64];
        int n = qty_format(v, scale, binary, buf, sizeof(buf));
        check(n > 0 && (size_t)n < sizeof(buf), "format length", input);
        int64_t back = 0;
        struct sched_errbuf eb;
        check(qty_parse(buf, scale, &back, &eb) == 0 && back == v, "format/parse round trip",
              input);
    }
}

/* ceil(a / 1000) for any int64 a, without overflow. */
static int64_t ceil_div1000(int64_t a)
{
    int64_t q = a / 1000;
    return (a % 1000 > 0) ? q + 1 : q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';

    const int64_t untouched = 0x5eed;
    int64_t v0 = untouched, v3 = untouched;
    struct sched_errbuf e0, e3;
    e0.msg[0] = e3.msg[0] = '\0';
    int rc0 = qty_parse(s, 0, &v0, &e0);
    int rc3 = qty_parse(s, 3, &v3, &e3);

    check(rc0 == 0 || rc0 == SCHED_EINVAL || rc0 == SCHED_ERANGE, "scale 0 return code", s);
    check(rc3 == 0 || rc3 == SCHED_EINVAL || rc3 == SCHED_ERANGE, "scale 3 return code", s);
    check((rc0 == SCHED_EINVAL) == (rc3 == SCHED_EINVAL), "validity depends on scale", s);
    check(rc0 != SCHED_ERANGE || rc3 == SCHED_ERANGE, "fits at scale 3 but not at scale 0", s);
    check(rc0 == 0 || (v0 == untouched && e0.msg[0] != '\0'), "scale 0 error contract", s);
    check(rc3 == 0 || (v3 == untouched && e3.msg[0] != '\0'), "scale 3 error contract", s);
    check(memchr(e0.msg, '\0', sizeof(e0.msg)) != NULL, "message not terminated", s);
    if (rc0 == 0 && rc3 == 0)
        check(ceil_div1000(v3) == v0, "scale 0 and scale 3 disagree", s);
    if (rc0 == 0)
        roundtrip(v0, 0, s);
    if (rc3 == 0)
        roundtrip(v3, 3, s);

    /* The first byte also picks a scale and a raw value to format, covering all of qty_format. */
    if (size >= 9) {
        int64_t raw;
        memcpy(&raw, data + 1, sizeof(raw));
        roundtrip(raw, data[0] % 10, s);
    }
    free(s);
    return 0;
}
