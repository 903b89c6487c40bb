/* tests/unit/test_res.c: the resource-name table and vectors (sched/core/res.c).
 *
 * Owns: tests of the well-known ids, interning and name validation, res_parse, vector
 * arithmetic and the full table. The table is process-global and append-only, so the tests run in
 * the order listed in main() and test_table_full, which fills the table, must stay last.
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

#include "sched/core/res.h"

static void test_wellknown(void **state)
{
    (void)state;
    assert_int_equal(res_count(), RES_N_WELLKNOWN);
    assert_int_equal(res_lookup("cpu"), RES_CPU);
    assert_int_equal(res_lookup("memory"), RES_MEMORY);
    assert_int_equal(res_lookup("pods"), RES_PODS);
    assert_int_equal(res_lookup("nvidia.com/gpu"), RES_GPU);
    assert_string_equal(res_name(RES_CPU), "cpu");
    assert_string_equal(res_name(RES_MEMORY), "memory");
    assert_string_equal(res_name(RES_PODS), "pods");
    assert_string_equal(res_name(RES_GPU), "nvidia.com/gpu");
    assert_string_equal(res_name(-1), "?");
    assert_string_equal(res_name(RES_N_WELLKNOWN), "?");
    assert_int_equal(res_lookup("CPU"), -1);
    assert_int_equal(res_lookup("ephemeral-storage"), -1);
    assert_int_equal(res_lookup(NULL), -1);
    assert_int_equal(res_scale(RES_CPU), 3);
    assert_int_equal(res_scale(RES_MEMORY), 0);
    assert_int_equal(res_scale(RES_PODS), 0);
    assert_int_equal(res_scale(RES_GPU), 0);
}

static void test_intern(void **state)
{
    (void)state;
    struct sched_errbuf eb = {{0}};
    int id = -1, again = -1;
    assert_int_equal(res_intern("cpu", &id, &eb), 0);
    assert_int_equal(id, RES_CPU);
    assert_int_equal(res_intern("nvidia.com/gpu", &id, &eb), 0);
    assert_int_equal(id, RES_GPU);
    assert_int_equal(res_count(), RES_N_WELLKNOWN);

    assert_int_equal(res_intern("nvidia.com/mig-1g.10gb", &id, &eb), 0);
    assert_int_equal(id, RES_N_WELLKNOWN);
    assert_int_equal(res_count(), RES_N_WELLKNOWN + 1);
    assert_int_equal(res_intern("nvidia.com/mig-1g.10gb", &again, &eb), 0);
    assert_int_equal(again, id);
    assert_int_equal(res_count(), RES_N_WELLKNOWN + 1);
    assert_int_equal(res_lookup("nvidia.com/mig-1g.10gb"), id);
    assert_string_equal(res_name(id), "nvidia.com/mig-1g.10gb");
    assert_int_equal(res_scale(id), 0);
    assert_int_equal(res_intern("nvidia.com/mig-1g.10gb", NULL, NULL), 0);

    static const char *const valid[] = {
        "ephemeral-storage",
        "hugepages-2Mi",
        "rdma/hca",
        "example.com/foo_bar",
        "a",
        "A.b-c_d9",
        "x/y",
        "sub.domain-1.example.io/Some.Name",
        /* a 64-character single-label prefix: labels are not length-limited */
        "0123456789012345678901234567890123456789012345678901234567890123/x",
    };
    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
        int before = res_count();
        if (res_intern(valid[i], &id, &eb) != 0)
            fail_msg("res_intern(\"%s\"): %s", valid[i], eb.msg);
        assert_int_equal(id, before);
        assert_int_equal(res_count(), before + 1);
        assert_int_equal(res_lookup(valid[i]), id);
    }
}

static void test_intern_invalid(void **state)
{
    (void)state;
    char part64[80], prefix254[300], long_total[400];
    memset(part64, 'a', 64);
    part64[64] = '\0';
    memset(prefix254, 'a', 254);
    memcpy(prefix254 + 254, "/x", 3);
    memset(long_total, 'a', 399);
    long_total[399] = '\0';

    static const char *const invalid[] = {
        "",
        "/gpu",
        "nvidia.com/",
        "a/b/c",
        "-gpu",
        "gpu-",
        ".gpu",
        "gpu_",
        "Nvidia.com/gpu",
        "nvidia..com/gpu",
        "-nvidia.com/gpu",
        "nvidia-.com/gpu",
        "nvidia.com-/gpu",
        ".nvidia.com/gpu",
        "nvidia.com./gpu",
        "nvidia_com/gpu",
        "gpu count",
        "gpu!",
        "nvidia.com/gpu/",
        "cpu ",
    };
    struct sched_errbuf eb;
    int before = res_count();
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        int id = 77;
        int rc = res_intern(invalid[i], &id, &eb);
        if (rc != SCHED_EINVAL)
            fail_msg("res_intern(\"%s\") = %d, want SCHED_EINVAL", invalid[i], rc);
        assert_int_equal(id, 77);
        char quoted[300];
        snprintf(quoted, sizeof(quoted), "\"%s\"", invalid[i]);
        if (!strstr(eb.msg, quoted))
            fail_msg("message for \"%s\" does not quote it: %s", invalid[i], eb.msg);
    }
    const char *const generated[] = {part64, prefix254, long_total, "gpu\n", "gp\xc3\xbc"};
    for (size_t i = 0; i < sizeof(generated) / sizeof(generated[0]); i++)
        assert_int_equal(res_intern(generated[i], NULL, &eb), SCHED_EINVAL);
    assert_int_equal(res_intern("gpu\n", NULL, &eb), SCHED_EINVAL);
    assert_non_null(strstr(eb.msg, "\"gpu\\x0a\"")); /* escaped, not a raw newline */
    assert_int_equal(res_intern(NULL, NULL, &eb), SCHED_EINVAL);
    assert_int_equal(res_count(), before);
}

static void test_parse(void **state)
{
    (void)state;
    struct sched_errbuf eb = {{0}};
    int64_t v = 0;
    assert_int_equal(res_parse(RES_CPU, "500m", &v, &eb), 0);
    assert_int_equal(v, 500);
    assert_int_equal(res_parse(RES_CPU, "2", &v, &eb), 0);
    assert_int_equal(v, 2000);
    assert_int_equal(res_parse(RES_MEMORY, "16Gi", &v, &eb), 0);
    assert_int_equal(v, 17179869184);
    assert_int_equal(res_parse(RES_MEMORY, "500m", &v, &eb), 0);
    assert_int_equal(v, 1);
    assert_int_equal(res_parse(RES_GPU, "1.5", &v, &eb), 0);
    assert_int_equal(v, 2);
    assert_int_equal(res_parse(RES_PODS, "110", &v, &eb), 0);
    assert_int_equal(v, 110);

    v = 9;
    assert_int_equal(res_parse(RES_GPU, "abc", &v, &eb), SCHED_EINVAL);
    assert_int_equal(v, 9);
    assert_non_null(strstr(eb.msg, "nvidia.com/gpu: invalid quantity \"abc\""));
    assert_int_equal(res_parse(RES_CPU, "9223372036854775807", &v, &eb), SCHED_ERANGE);
    assert_true(strncmp(eb.msg, "cpu: ", 5) == 0);
    assert_int_equal(res_parse(-1, "1", &v, &eb), SCHED_EINVAL);
    assert_int_equal(res_parse(res_count(), "1", &v, &eb), SCHED_EINVAL);
    assert_int_equal(res_parse(RES_CPU, NULL, &v, &eb), SCHED_EINVAL);
    assert_int_equal(v, 9);
}

static void test_vectors(void **state)
{
    (void)state;
    int mig;
    assert_int_equal(res_intern("nvidia.com/mig-1g.10gb", &mig, NULL), 0);
    assert_true(res_count() < RES_MAX);

    struct res_vec have = {{0}}, need = {{0}};
    have.v[RES_CPU] = 4000;
    have.v[RES_MEMORY] = 17179869184;
    have.v[RES_GPU] = 2;
    have.v[mig] = 1;
    need.v[RES_CPU] = 4000;
    need.v[RES_MEMORY] = 1024;
    need.v[RES_GPU] = 2;
    assert_true(res_fits(&need, &have));
    assert_int_equal(res_first_short(&need, &have), -1);

    need.v[mig] = 2;
    assert_false(res_fits(&need, &have));
    assert_int_equal(res_first_short(&need, &have), mig);
    need.v[RES_GPU] = 3;
    assert_int_equal(res_first_short(&need, &have), RES_GPU); /* lowest id first */
    need.v[RES_GPU] = 2;
    need.v[mig] = 1;

    /* Ids past res_count() are not part of any vector. */
    need.v[RES_MAX - 1] = 5;
    assert_true(res_fits(&need, &have));
    assert_int_equal(res_first_short(&need, &have), -1);

    struct res_vec acc = have;
    res_sub(&acc, &need);
    assert_int_equal(acc.v[RES_CPU], 0);
    assert_int_equal(acc.v[RES_MEMORY], 17179869184 - 1024);
    assert_int_equal(acc.v[RES_GPU], 0);
    assert_int_equal(acc.v[mig], 0);
    assert_int_equal(acc.v[RES_MAX - 1], 0); /* untouched */
    res_add(&acc, &need);
    assert_memory_equal(acc.v, have.v, sizeof(int64_t) * (size_t)res_count());
    assert_true(res_fits(&need, &acc));

    /* Saturating arithmetic instead of signed overflow. */
    struct res_vec big = {{0}}, one = {{0}};
    big.v[RES_MEMORY] = INT64_MAX;
    big.v[RES_PODS] = INT64_MIN;
    one.v[RES_MEMORY] = 1;
    one.v[RES_PODS] = 1;
    res_add(&big, &one);
    assert_true(big.v[RES_MEMORY] == INT64_MAX);
    res_sub(&big, &one);
    assert_true(big.v[RES_MEMORY] == INT64_MAX - 1);
    assert_true(big.v[RES_PODS] == INT64_MIN);
    one.v[RES_PODS] = -1;
    big.v[RES_CPU] = INT64_MAX;
    one.v[RES_CPU] = -1;
    res_sub(&big, &one);
    assert_true(big.v[RES_CPU] == INT64_MAX);
    assert_true(big.v[RES_PODS] == INT64_MIN + 1);
}

/* Fills the table to RES_MAX; must run last. */
static void test_table_full(void **state)
{
    (void)state;
    struct sched_errbuf eb = {{0}};
    char name[32];
    int id, n = 0;
    while (res_count() < RES_MAX) {
        snprintf(name, sizeof(name), "example.com/fill-%d", n++);
        assert_int_equal(res_intern(name, &id, &eb), 0);
        assert_int_equal(id, res_count() - 1);
    }
    id = 99;
    assert_int_equal(res_intern("example.com/one-too-many", &id, &eb), SCHED_EFULL);
    assert_int_equal(id, 99);
    assert_non_null(strstr(eb.msg, "\"example.com/one-too-many\""));
    assert_int_equal(res_count(), RES_MAX);
    assert_int_equal(res_lookup("example.com/one-too-many"), -1);
    /* Names already present are still found; invalid names are still EINVAL. */
    assert_int_equal(res_intern(name, &id, &eb), 0);
    assert_int_equal(id, RES_MAX - 1);
    assert_int_equal(res_intern("cpu", &id, &eb), 0);
    assert_int_equal(id, RES_CPU);
    assert_int_equal(res_intern("bad name", &id, &eb), SCHED_EINVAL);

    struct res_vec a = {{0}}, b = {{0}};
    b.v[RES_MAX - 1] = 1;
    assert_int_equal(res_first_short(&b, &a), RES_MAX - 1);
}

int main(void)
{
    /* Order matters: the table is process-global. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wellknown),      cmocka_unit_test(test_intern),
        cmocka_unit_test(test_intern_invalid), cmocka_unit_test(test_parse),
        cmocka_unit_test(test_vectors),        cmocka_unit_test(test_table_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
