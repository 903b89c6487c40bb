/* tests/unit/test_cel.c: the DRA selector subset of CEL (sched/core/cel.c) on a device shaped
 * like NVIDIA's (kwok fixture attributes): the expressions NVIDIA's charts and demos use, the
 * Kubernetes semantics that matter (missing attribute = error unless has(), error absorbed by
 * && / ||, quantity and semver comparison), and clear errors for what is not supported. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <string.h>

#include "sched/core/cel.h"

static const struct cel_attr attrs[] = {
    {.domain = "", .name = "type", .type = CEL_STR, .s = "gpu"},
    {.domain = "", .name = "productName", .type = CEL_STR, .s = "NVIDIA H100 80GB HBM3"},
    {.domain = "", .name = "architecture", .type = CEL_STR, .s = "Hopper"},
    {.domain = "", .name = "cudaComputeCapability", .type = CEL_VER, .s = "9.0.0"},
    {.domain = "", .name = "driverVersion", .type = CEL_VER, .s = "550.54.15"},
    {.domain = "resource.kubernetes.io", .name = "numaNode", .type = CEL_INT, .i = 1},
    {.domain = "", .name = "mig", .type = CEL_BOOL, .b = false},
};
static const struct cel_attr caps[] = {
    {.domain = "", .name = "memory", .type = CEL_QTY, .i = 80LL * 1024 * 1024 * 1024 * 1000},
};
static const struct cel_device dev = {
    .driver = "gpu.nvidia.com", .attrs = attrs, .n_attrs = 7, .caps = caps, .n_caps = 1};

/* 1 true, 0 false, -1 evaluation error, -2 compile error (eb in msg) */
static int run(const char *expr, char *msg)
{
    struct cel_prog *p = NULL;
    struct sched_errbuf eb = {{0}};
    if (cel_compile(expr, &p, &eb) != 0) {
        strcpy(msg, eb.msg);
        return -2;
    }
    bool out = false;
    int rc = cel_eval(p, &dev, &out, &eb);
    cel_free(p);
    strcpy(msg, eb.msg);
    return rc ? -1 : out;
}

static void nvidia_expressions(void **state)
{
    (void)state;
    char m[SCHED_ERRBUF];
    assert_int_equal(run("device.driver == 'gpu.nvidia.com' && "
                         "device.attributes['gpu.nvidia.com'].type == 'gpu'",
                         m),
                     1);
    assert_int_equal(run("device.attributes[\"gpu.nvidia.com\"].architecture == \"Ampere\"", m), 0);
    assert_int_equal(
        run("device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*h100.*$')",
            m),
        1);
    assert_int_equal(run("device.capacity['gpu.nvidia.com'].memory.isGreaterThan("
                         "quantity('40Gi'))",
                         m),
                     1);
    assert_int_equal(run("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) "
                         "== 0",
                         m),
                     1);
    assert_int_equal(run("device.attributes['gpu.nvidia.com'].cudaComputeCapability"
                         ".isGreaterThan(semver('8.9.0'))",
                         m),
                     1);
    assert_int_equal(run("device.attributes['gpu.nvidia.com'].driverVersion.major() >= 550", m), 1);
    assert_int_equal(run("device.attributes['resource.kubernetes.io'].numaNode == 1 && "
                         "!device.attributes['gpu.nvidia.com'].mig",
                         m),
                     1);
    assert_int_equal(run("device.driver != 'gpu.nvidia.com' || (1 < 2)", m), 1);
}

static void kubernetes_semantics(void **state)
{
    (void)state;
    char m[SCHED_ERRBUF];
    /* a missing attribute is an error, has() guards it, an unknown domain is an empty map */
    assert_int_equal(run("device.attributes['gpu.nvidia.com'].index == 0", m), -1);
    assert_non_null(strstr(m, "no such key: index"));
    assert_int_equal(run("has(device.attributes['gpu.nvidia.com'].index)", m), 0);
    assert_int_equal(run("has(device.attributes['x.example.com'].type)", m), 0);
    /* the error is absorbed when the other side decides, as CEL's && and || do */
    assert_int_equal(run("device.attributes['gpu.nvidia.com'].index == 0 && false", m), 0);
    assert_int_equal(run("true || device.attributes['gpu.nvidia.com'].index == 0", m), 1);
    /* types: no implicit conversion */
    assert_int_equal(run("device.attributes['resource.kubernetes.io'].numaNode == '1'", m), -1);
    assert_non_null(strstr(m, "no matching overload"));
    assert_int_equal(run("'a' < 'b'", m), 1);
    assert_int_equal(run("semver('1.2.3-rc1').isLessThan(semver('1.2.3'))", m), 1);
    assert_int_equal(run("device.driver", m), -1);
    assert_non_null(strstr(m, "not a bool"));
}

static void unsupported_is_a_clear_error(void **state)
{
    (void)state;
    char m[SCHED_ERRBUF];
    assert_int_equal(run("[1, 2].all(x, x > 0)", m), -2);
    assert_non_null(strstr(m, "column 1: list and map literals are not supported"));
    assert_int_equal(run("device.attributes['d'].x in ['a']", m), -2);
    assert_int_equal(run("cel.bind(x, 1, x == 1)", m), -2);
    assert_non_null(strstr(m, "identifier 'cel' is not supported"));
    assert_int_equal(run("device.driver.size() == 3", m), -2);
    assert_non_null(strstr(m, "method 'size' is not supported"));
    assert_int_equal(run("device.driver == 'x' ? true : false", m), -2);
    assert_int_equal(run("1.5 > 1", m), -2);
    assert_int_equal(run("device.attributes['d'].?x", m), -2);
    assert_int_equal(run("(device.driver == 'x'", m), -2);
    assert_non_null(strstr(m, "expected ')'"));
    assert_int_equal(run("'unterminated", m), -2);
    assert_int_equal(run("", m), -2);
}

/* A selector listing many alternatives, none of whose attributes the device has (another
 * driver's device, or one of NVIDIA's MIG devices without productName): each `||` sees two
 * errors and gives the left one, as CEL does. An evaluator that evaluated the left side again to
 * give its message did 2^40 evaluations here and ran into the cost limit (1,000,000 nodes). */
static void many_failing_alternatives_evaluate_once(void **state)
{
    (void)state;
    char expr[4096] = "", m[SCHED_ERRBUF];
    for (int k = 0; k < 40; k++) {
        char term[96];
        snprintf(term, sizeof(term), "%sdevice.attributes['gpu.nvidia.com'].productName%d == 'x'",
                 k ? " || " : "", k);
        strcat(expr, term);
    }
    assert_int_equal(run(expr, m), -1);
    assert_non_null(strstr(m, "column 36: no such key: productName0"));
    /* && alike; and a decided side still absorbs the errors */
    for (char *x = strstr(expr, "||"); x; x = strstr(x, "||"))
        x[0] = x[1] = '&';
    assert_int_equal(run(expr, m), -1);
    assert_non_null(strstr(m, "no such key: productName0"));
    strcat(expr, " && false");
    assert_int_equal(run(expr, m), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nvidia_expressions),
        cmocka_unit_test(kubernetes_semantics),
        cmocka_unit_test(unsupported_is_a_clear_error),
        cmocka_unit_test(many_failing_alternatives_evaluate_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
