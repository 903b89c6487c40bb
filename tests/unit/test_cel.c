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
    /* CEL's one-character string escapes; a raw string keeps its backslashes */
    assert_int_equal(run("'a\\rb' != 'a\\nb' && '\\?\\`' == '?`' && r'a\\n' != 'a\\n'", m), 1);
    assert_int_equal(run("'\\d' == 'd'", m), -2);
    assert_non_null(strstr(m, "string escape \\d is not supported"));
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

/* matches() reads RE2 syntax as cel-go does (Go's regexp), not POSIX's: "\\d" is a digit
 * (POSIX ERE read it as the letter d, so "H\\d+" matched "Hddd" and not "H100"), and what RE2
 * refuses or POSIX cannot express is a compile error naming the pattern. */
static void matches_reads_re2_syntax(void **state)
{
    (void)state;
    char m[SCHED_ERRBUF];
#define PN "device.attributes['gpu.nvidia.com'].productName" /* "NVIDIA H100 80GB HBM3" */
    static const struct {
        const char *re; /* as written in the expression (a raw string) */
        int want;
    } cases[] = {
        {"^NVIDIA H\\d+ \\d+GB", 1},
        {"^NVIDIA H\\d+$", 0},
        {"H\\d{3}\\s\\d{2}GB", 1},
        {"[\\d.]+GB", 1},
        {"\\bH100\\b", 1},
        {"(?i)^nvidia h100", 1},
        {"^nvidia h100", 0},
        {"(?:A100|H100) \\d+GB", 1},
        {"(?P<gen>H|B)\\d+", 1},
        {"NVIDIA.*?HBM", 1},
        {"\\QH100 80GB\\E", 1},
        {"\\Q.*\\E", 0},
        {"\\x48100", 1},
        {"\\w+ \\W?H", 1},
        {"\\AN.*3\\z", 1},
        {"[^\\]a-z]+", 1},
        {"HBM[[:digit:]]$", 1},
        {"HBM[[:word:]]$", 1},
        {"[-^]", 0},
        {"a{", 0},
        {"\\D\\S", 1},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char expr[256];
        snprintf(expr, sizeof(expr), PN ".matches(r'%s')", cases[k].re);
        int got = run(expr, m);
        if (got != cases[k].want)
            fail_msg("%s: %d, want %d (%s)", expr, got, cases[k].want, m);
    }
    /* a pattern RE2 refuses, or that POSIX cannot say, is refused when compiled */
    static const struct {
        const char *re, *why;
    } refused[] = {
        {"(a*)*\\1", "backreferences (\\1) are not supported"},
        {"H(?=100)", "lookarounds"},
        {"\\pL", "Unicode classes"},
        {"[\\D]", "negated classes (\\D) inside brackets"},
        {"a**", "invalid nested repetition operator: *"},
        {"*a", "missing argument to repetition operator"},
        {"a{1001}", "invalid repeat count"},
        {"(?s).", "flags other than a leading (?i)"},
        {"a(?i)b", "flags other than a leading (?i)"},
        {"(ab", "missing closing )"},
        {"ab)", "unexpected )"},
        {"[ab", "missing closing ]"},
        {"[z-a]", "invalid character class range"},
        {"\\e", "invalid escape sequence \\e"},
        {"\\x{e9}", "outside ASCII"},
    };
    for (size_t k = 0; k < sizeof(refused) / sizeof(refused[0]); k++) {
        char expr[256];
        snprintf(expr, sizeof(expr), PN ".matches(r'%s')", refused[k].re);
        if (run(expr, m) != -2 || !strstr(m, refused[k].why) || !strstr(m, "matches()"))
            fail_msg("%s: want a compile error with \"%s\", got \"%s\"", expr, refused[k].why, m);
    }
    /* a pattern the expression makes is compiled when evaluated */
    assert_int_equal(run(PN ".matches(" PN ".upperAscii())", m), 1);
    assert_int_equal(run(PN ".matches(" PN ".lowerAscii())", m), 0);
    /* quoted strings: '\\\\d' is the two characters \d, as in CEL */
    assert_int_equal(run(PN ".matches('H\\\\d+ ')", m), 1);
#undef PN
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
        cmocka_unit_test(matches_reads_re2_syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
