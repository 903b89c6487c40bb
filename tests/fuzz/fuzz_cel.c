/* tests/fuzz/fuzz_cel.c: libFuzzer harness for the CEL subset of DRA selectors
 * (sched/core/cel.c).
 *
 * Owns: the properties checked on arbitrary expressions: compiling never crashes, a refused
 * expression has a message, an accepted one evaluates on a device (with attributes of every
 * type, and on a device without any) to a bool or an error with a message, twice the same
 * (evaluation is pure). A violated property aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/core/cel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_cel: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 12000)
        return 0;
    char *expr = malloc(size + 1);
    if (!expr)
        return 0;
    memcpy(expr, data, size);
    expr[size] = 0;
    static const struct cel_attr attrs[] = {
        {.domain = "", .name = "type", .type = CEL_STR, .s = "gpu"},
        {.domain = "", .name = "cudaComputeCapability", .type = CEL_VER, .s = "9.0.0"},
        {.domain = "resource.kubernetes.io", .name = "numaNode", .type = CEL_INT, .i = 1},
        {.domain = "", .name = "mig", .type = CEL_BOOL, .b = true},
    };
    static const struct cel_attr caps[] = {
        {.domain = "", .name = "memory", .type = CEL_QTY, .i = 85899345920000LL},
    };
    const struct cel_device devs[] = {
        {.driver = "gpu.nvidia.com", .attrs = attrs, .n_attrs = 4, .caps = caps, .n_caps = 1},
        {.driver = NULL},
    };
    struct cel_prog *p = NULL;
    struct sched_errbuf eb = {{0}};
    if (cel_compile(expr, &p, &eb) != 0) {
        check(p == NULL && eb.msg[0] != 0, "a refused expression has a message");
    } else {
        for (int d = 0; d < 2; d++) {
            bool a = false, b = false;
            struct sched_errbuf e1 = {{0}}, e2 = {{0}};
            int r1 = cel_eval(p, &devs[d], &a, &e1);
            int r2 = cel_eval(p, &devs[d], &b, &e2);
            check(r1 == r2 && (r1 != 0 || a == b), "evaluation is pure");
            check(r1 == 0 || e1.msg[0] != 0, "an evaluation error has a message");
        }
        cel_free(p);
    }
    free(expr);
    return 0;
}
