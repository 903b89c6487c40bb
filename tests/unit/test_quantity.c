/* tests/unit/test_quantity.c: qty_parse and qty_format (sched/core/quantity.c).
 *
 * Owns: table-driven cases of exact parse results at scales 0 and 3, out-of-range and malformed
 * inputs (with the bad string quoted in the message), formatting rules and format/parse
 * round trips.
 */
#include <stdio.h>
#include <string.h>

/* cmocka.h needs these first, in this order. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include "sched/core/quantity.h"

struct good_case {
    const char *in;
    int64_t at0; /* scale 0 */
    int64_t at3; /* scale 3 */
};

#define RANGE INT64_C(0x7eadbeefdeadbeef) /* sentinel: SCHED_ERANGE expected */

static const struct good_case good[] = {
    {"0", 0, 0},
    {"1", 1, 1000},
    {"+1", 1, 1000},
    {"-1", -1, -1000},
    {"-0", 0, 0},
    {"0.000", 0, 0},
    {"500m", 1, 500},
    {"100m", 1, 100},
    {"1500m", 2, 1500},
    {"-500m", 0, -500},
    {"1.5", 2, 1500},
    {"-1.5", -1, -1500},
    {".5", 1, 500},
    {"+.5", 1, 500},
    {"-.5", 0, -500},
    {"5.", 5, 5000},
    {"0.001", 1, 1},
    {"0.0011", 1, 2},
    {"1.0005", 2, 1001},
    {"-1.0005", -1, -1000},
    {"0.1m", 1, 1},
    {"1u", 1, 1},
    {"100n", 1, 1},
    {"1n", 1, 1},
    {"-1n", 0, 0},
    {"1k", 1000, 1000000},
    {"1M", 1000000, 1000000000},
    {"1G", 1000000000, 1000000000000},
    {"1.G", 1000000000, 1000000000000},
    {"1T", 1000000000000, 1000000000000000},
    {"1P", 1000000000000000, 1000000000000000000},
    {"1E", 1000000000000000000, RANGE},
    {"1Ki", 1024, 1024000},
    {"0.5Ki", 512, 512000},
    {"0.1Ki", 103, 102400},
    {"-0.1Ki", -102, -102400},
    {"1Mi", 1048576, 1048576000},
    {"1.5Gi", 1610612736, 1610612736000},
    {"16Gi", 17179869184, 17179869184000},
    {"1Ti", 1099511627776, 1099511627776000},
    {"1Pi", 1125899906842624, 1125899906842624000},
    {"1Ei", 1152921504606846976, RANGE},
    {"7Ei", 8070450532247928832, RANGE},
    {"8Ei", RANGE, RANGE},
    {"-8Ei", INT64_MIN, RANGE},
    {"2e3", 2000, 2000000},
    {"1e3", 1000, 1000000},
    {"1E+3", 1000, 1000000},
    {"1e03", 1000, 1000000},
    {"1E-3", 1, 1},
    {"2.5e-1", 1, 250},
    {"1e18", 1000000000000000000, RANGE},
    {"1e19", RANGE, RANGE},
    {"10E", RANGE, RANGE},
    {"1e1000000000000", RANGE, RANGE},
    {"1e-1000000000", 1, 1},
    {"-1e-999", 0, 0},
    {"0e99999999999", 0, 0},
    {"00000000000000000000000000000012", 12, 12000},
    {"1.000000000000000000000000000001", 2, 1001},
    {"123456789.123456789", 123456790, 123456789124},
    {"9223372036854775807", INT64_MAX, RANGE},
    {"9223372036854775808", RANGE, RANGE},
    {"9223372036854775806.5", INT64_MAX, RANGE},
    {"9223372036854775807.1", RANGE, RANGE},
    {"-9223372036854775808", INT64_MIN, RANGE},
    {"-9223372036854775808.9", INT64_MIN, RANGE},
    {"-9223372036854775809", RANGE, RANGE},
    {"9.223372036854775807e18", INT64_MAX, RANGE},
    {"0.9223372036854775807e19", INT64_MAX, RANGE},
    {"9223372036854775.807k", INT64_MAX, RANGE},
    {"9223372036854775.807", 9223372036854776, INT64_MAX},
    {"9223372036854775807000m", INT64_MAX, RANGE},
    {"9223372036854775807000000000n", 9223372036854775807, RANGE},
};

static void check_one(const char *in, int scale, int64_t want)
{
    struct sched_errbuf eb = {{0}};
    int64_t got = 42;
    int rc = qty_parse(in, scale, &got, &eb);
    if (want == RANGE) {
        if (rc != SCHED_ERANGE)
            fail_msg("\"%s\"@%d: rc %d (value %lld), want SCHED_ERANGE", in, scale, rc,
                     (long long)got);
        assert_int_equal(got, 42); /* untouched on error */
        assert_non_null(strstr(eb.msg, in));
        return;
    }
    if (rc != 0)
        fail_msg("\"%s\"@%d: rc %d: %s", in, scale, rc, eb.msg);
    if (got != want)
        fail_msg("\"%s\"@%d: got %lld, want %lld", in, scale, (long long)got, (long long)want);
}

static void test_good(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        check_one(good[i].in, 0, good[i].at0);
        check_one(good[i].in, 3, good[i].at3);
    }
}

static void test_other_scales(void **state)
{
    (void)state;
    check_one("1", 9, 1000000000);
    check_one("1n", 9, 1);
    check_one("0.5n", 9, 1);
    check_one("1.5", 1, 15);
    check_one("1.55", 1, 16);
    check_one("-1.55", 1, -15);
    check_one("10", 9, 10000000000);
    check_one("9223372036854775807n", 9, INT64_MAX);
    check_one("10Gi", 9, RANGE);
}

static const char *const bad[] = {
    "",       " 1",   "1 ",    "1 Gi", "1.2.3",  "1Ki5", "Gi",    "1ii",      "--1",  "1e",
    "1e+",    "1E-",  ".",     "1ki",  "1KB",    "1K",   "1Gix",  "+",        "-",    "abc",
    "1,5",    "0x10", "1e3.5", "1..2", "1.5.Gi", "e3",   "Ki",    "+-1",      "1m5",  "1mi",
    "1e-3e3", "1i",   "1gi",   "inf",  "NaN",    "1 k",  "1_000", "\xd9\xa1", "1e 3", "1Ki ",
};

static void test_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (int scale = 0; scale <= 3; scale += 3) {
            struct sched_errbuf eb = {{0}};
            int64_t got = 42;
            int rc = qty_parse(bad[i], scale, &got, &eb);
            if (rc != SCHED_EINVAL)
                fail_msg("\"%s\"@%d: rc %d (value %lld), want SCHED_EINVAL", bad[i], scale, rc,
                         (long long)got);
            assert_int_equal(got, 42);
            char quoted[300];
            snprintf(quoted, sizeof(quoted), "\"%s\"", bad[i]);
            /* Non-ASCII input is shown escaped; everything else is quoted verbatim. */
            if ((unsigned char)bad[i][0] < 0x80 && !strstr(eb.msg, quoted))
                fail_msg("message for \"%s\" does not quote it: %s", bad[i], eb.msg);
            assert_non_null(strstr(eb.msg, "invalid quantity"));
        }
    }
}

static void test_bad_reasons(void **state)
{
    (void)state;
    struct sched_errbuf eb;
    int64_t v;
    assert_int_equal(qty_parse("1.2.3", 0, &v, &eb), SCHED_EINVAL);
    assert_string_equal(eb.msg, "invalid quantity \"1.2.3\": more than one decimal point");
    assert_int_equal(qty_parse("1Ki5", 0, &v, &eb), SCHED_EINVAL);
    assert_string_equal(eb.msg, "invalid quantity \"1Ki5\": unknown suffix \"Ki5\"");
    assert_int_equal(qty_parse("1e+", 0, &v, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "exponent has no digits"));
    assert_int_equal(qty_parse("Gi", 0, &v, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "no digits"));
    assert_int_equal(qty_parse("", 0, &v, &eb), SCHED_EINVAL);
    assert_string_equal(eb.msg, "invalid quantity \"\": empty string");
    /* Control characters and quotes are escaped in the message. */
    assert_int_equal(qty_parse("1\t", 0, &v, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "\"1\\x09\""));
    assert_int_equal(qty_parse("1\"", 0, &v, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "\"1\\\"\""));
    /* NULL error buffer and NULL string are tolerated. */
    assert_int_equal(qty_parse("x", 0, &v, NULL), SCHED_EINVAL);
    assert_int_equal(qty_parse(NULL, 0, &v, &eb), SCHED_EINVAL);
}

static void test_scale_range(void **state)
{
    (void)state;
    struct sched_errbuf eb;
    int64_t v = 7;
    assert_int_equal(qty_parse("1", -1, &v, &eb), SCHED_EINVAL);
    assert_int_equal(qty_parse("1", 10, &v, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "scale 10"));
    assert_int_equal(v, 7);
}

static void test_length_limit(void **state)
{
    (void)state;
    char s[300];
    struct sched_errbuf eb;
    int64_t v = 0;
    memset(s, '0', 255);
    s[255] = '7';
    s[256] = '\0'; /* 256 characters: accepted */
    assert_int_equal(qty_parse(s, 0, &v, &eb), 0);
    assert_int_equal(v, 7);
    memset(s, '0', 256);
    s[256] = '7';
    s[257] = '\0'; /* 257: rejected */
    assert_int_equal(qty_parse(s, 0, &v, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "longer than 256"));
    assert_non_null(strstr(eb.msg, "\"0000000000"));
    /* 256 digits at maximum magnitude with a binary suffix: out of range, not a crash. */
    memset(s, '9', 252);
    memcpy(s + 252, "Ei", 3);
    assert_int_equal(qty_parse(s, 3, &v, &eb), SCHED_ERANGE);
    s[0] = '.';
    assert_int_equal(qty_parse(s, 3, &v, &eb), SCHED_ERANGE);
    memset(s, '0', 250);
    memcpy(s + 250, "1e-3", 5);
    assert_int_equal(qty_parse(s, 3, &v, &eb), 0);
    assert_int_equal(v, 1);
}

struct fmt_case {
    int64_t value;
    int scale;
    int binary;
    const char *want;
};

static const struct fmt_case fmts[] = {
    {0, 0, 0, "0"},
    {0, 0, 1, "0"},
    {0, 3, 0, "0"},
    {64, 0, 0, "64"},
    {17179869184, 0, 1, "16Gi"},
    {17179869184, 0, 0, "17179869184"},
    {1536, 0, 1, "1536"},
    {3072, 0, 1, "3Ki"},
    {1152921504606846976, 0, 1, "1Ei"},
    {INT64_MIN, 0, 1, "-8Ei"},
    {-2048, 0, 1, "-2Ki"},
    {1000, 0, 1, "1000"},
    {1500, 3, 0, "1500m"},
    {500, 3, 0, "500m"},
    {-1500, 3, 0, "-1500m"},
    {2000, 3, 0, "2"},
    {1, 3, 1, "1m"},
    {1, 9, 0, "1n"},
    {1000, 9, 0, "1u"},
    {1000000, 9, 0, "1m"},
    {1, 6, 0, "1u"},
    {15, 1, 0, "1500m"},
    {INT64_MAX, 1, 0, "922337203685477580.7"},
    {INT64_MIN, 1, 0, "-922337203685477580.8"},
    {INT64_MAX, 3, 0, "9223372036854775807m"},
    {INT64_MAX, 0, 1, "9223372036854775807"},
};

static void test_format(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
        char buf[64];
        int n = qty_format(fmts[i].value, fmts[i].scale, fmts[i].binary, buf, sizeof(buf));
        if (strcmp(buf, fmts[i].want) != 0)
            fail_msg("format(%lld, %d, %d) = \"%s\", want \"%s\"", (long long)fmts[i].value,
                     fmts[i].scale, fmts[i].binary, buf, fmts[i].want);
        assert_int_equal(n, (int)strlen(fmts[i].want));
    }
}

static void test_format_snprintf(void **state)
{
    (void)state;
    char small[4] = "xxx";
    assert_int_equal(qty_format(17179869184, 0, 0, NULL, 0), 11);
    assert_int_equal(qty_format(17179869184, 0, 0, small, sizeof(small)), 11);
    assert_string_equal(small, "171");
    assert_int_equal(qty_format(1500, 3, 0, small, 1), 5);
    assert_string_equal(small, "");
    /* Scales outside 0..9 still give something readable and parseable. */
    char buf[32];
    qty_format(15, 12, 0, buf, sizeof(buf));
    assert_string_equal(buf, "15e-12");
}

static void roundtrip(int64_t v, int scale, int binary)
{
    char buf[64];
    struct sched_errbuf eb = {{0}};
    int64_t back = 0;
    qty_format(v, scale, binary, buf, sizeof(buf));
    int rc = qty_parse(buf, scale, &back, &eb);
    if (rc != 0 || back != v)
        fail_msg("round trip %lld@%d (binary %d) -> \"%s\" -> rc %d %lld: %s", (long long)v, scale,
                 binary, buf, rc, (long long)back, eb.msg);
}

static void test_roundtrip(void **state)
{
    (void)state;
    static const int64_t fixed[] = {0,
                                    1,
                                    -1,
                                    7,
                                    999,
                                    1000,
                                    1001,
                                    1024,
                                    1500,
                                    65536,
                                    1000000000,
                                    17179869184,
                                    INT64_MAX,
                                    INT64_MIN,
                                    INT64_MAX - 1,
                                    INT64_MIN + 1,
                                    INT64_C(1) << 62,
                                    -(INT64_C(1) << 62),
                                    1000000000000000000,
                                    -999999999999999999};
    for (int scale = 0; scale <= 9; scale++) {
        for (int binary = 0; binary <= 1; binary++) {
            for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
                roundtrip(fixed[i], scale, binary);
            uint64_t x = 0x9e3779b97f4a7c15ULL;
            for (int i = 0; i < 2000; i++) {
                x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                uint64_t r = x >> (x & 63); /* all magnitudes */
                int64_t v = (int64_t)(r & ((uint64_t)INT64_MAX));
                roundtrip((x & 1) ? v : -v, scale, binary);
                roundtrip((int64_t)((r & 0xfffff) << (10 * (x % 5))), scale, binary);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),        cmocka_unit_test(test_other_scales),
        cmocka_unit_test(test_bad),         cmocka_unit_test(test_bad_reasons),
        cmocka_unit_test(test_scale_range), cmocka_unit_test(test_length_limit),
        cmocka_unit_test(test_format),      cmocka_unit_test(test_format_snprintf),
        cmocka_unit_test(test_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
