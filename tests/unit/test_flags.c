/* tests/unit/test_flags.c: the commands' flag parser (sched/cmd/flags.c) as a table of argv in,
 * values or the exact error out; and --help made from the same table. */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/cmd/flags.h"

struct vals {
    const char *db, *listen;
    bool json, help, elect, given;
    uint64_t seed;
    uint32_t conns, timeout_ms;
    int64_t grace_ms;
    double frac;
    int fmt;
    const char *traces[3];
    int n_traces;
    const char *pos[4];
    int n_pos;
};

static const char *const fmts[] = {"table", "wide", "json", NULL};

static int even_fn(const char *v, void *opts, char *err, size_t n)
{
    if (strlen(v) % 2) {
        snprintf(err, n, "--even '%s': odd length", v);
        return -1;
    }
    ((struct vals *)opts)->db = v;
    return 0;
}

static const struct flag table[] = {
    FLAGS_SECTION("section:"),
    {.name = "--db",
     .kind = FLAG_STRING,
     FLAG_AT(struct vals, db),
     .arg = "FILE",
     .help = "database"},
    {.name = "--listen",
     .kind = FLAG_STRING,
     FLAG_AT(struct vals, listen),
     .attrs = FLAG_EMPTY_OK,
     .arg = "ADDR",
     .help = "address\nsecond line"},
    {.name = "--json",
     .kind = FLAG_BOOL,
     FLAG_AT(struct vals, json),
     FLAG_GIVEN(struct vals, given),
     .help = "json"},
    {.name = "--leader-elect",
     .kind = FLAG_BOOL,
     FLAG_AT(struct vals, elect),
     .arg = "BOOL",
     .help = "election"},
    {.name = "--seed",
     .kind = FLAG_INT,
     FLAG_AT(struct vals, seed),
     .imax = UINT64_MAX,
     .arg = "N",
     .help = "seed"},
    {.name = "--conns",
     .kind = FLAG_INT,
     FLAG_AT(struct vals, conns),
     .imin = 1,
     .imax = 1000,
     .arg = "N",
     .help = "connections"},
    {.name = "--timeout",
     .kind = FLAG_DURATION,
     FLAG_AT(struct vals, timeout_ms),
     .unit_ms = 1,
     .unit = "ms",
     .min = 1,
     .max = 60000,
     .arg = "MS",
     .help = "timeout"},
    {.name = "--grace",
     .kind = FLAG_DURATION,
     FLAG_AT(struct vals, grace_ms),
     .unit_ms = 1000,
     .unit = "s",
     .max = 1e9,
     .arg = "S",
     .help = "grace"},
    {.name = "--fraction",
     .kind = FLAG_DOUBLE,
     FLAG_AT(struct vals, frac),
     .max = 1,
     .arg = "F",
     .help = "fraction"},
    {.name = "--output",
     .short_name = 'o',
     .kind = FLAG_ENUM,
     FLAG_AT(struct vals, fmt),
     .choices = fmts,
     .arg = "FMT",
     .help = "format"},
    {.name = "--trace",
     .kind = FLAG_REPEATED,
     FLAG_AT(struct vals, traces),
     FLAG_COUNT(struct vals, n_traces),
     .max_count = 3,
     .arg = "FILE",
     .help = "trace"},
    {.name = "--even",
     .kind = FLAG_FUNC,
     .fn = even_fn,
     .arg = "S",
     .attrs = FLAG_MANY,
     .help = "even"},
    {.name = "--jsn", .kind = FLAG_BOOL, FLAG_AT(struct vals, json), .attrs = FLAG_HIDDEN},
    {.name = "--help",
     .short_name = 'h',
     .kind = FLAG_BOOL,
     FLAG_AT(struct vals, help),
     .attrs = FLAG_STOP,
     .help = "help"},
    FLAGS_END,
};

struct tcase {
    const char *args; /* space-separated; "''" is an empty argument */
    int rc;
    const char *err; /* exact, for rc -1 */
};

static const struct tcase cases[] = {
    {"--db x.db --json", 0, NULL},
    {"--db=x.db --json=true", 0, NULL},
    {"--frob", -1, "unknown flag '--frob'"},
    {"--jsno", -1, "unknown flag '--jsno' (did you mean --json?)"},
    {"--liste=x", -1, "unknown flag '--liste' (did you mean --listen?)"},
    {"--lead true", -1, "unknown flag '--lead' (did you mean --leader-elect?)"},
    {"--db", -1, "flag --db needs a value"},
    {"--db ''", -1, "flag --db needs a value (not an empty one)"},
    {"--listen ''", 0, NULL},
    {"--db a --db b", -1, "flag --db given twice"},
    {"--json --json", -1, "flag --json given twice"},
    {"--json=maybe", -1, "--json 'maybe': expected true or false"},
    {"--leader-elect", -1, "flag --leader-elect needs a value"},
    {"--leader-elect yes", -1, "--leader-elect 'yes': expected true or false"},
    {"--seed -1", -1, "--seed '-1': expected a whole number >= 0"},
    {"--seed 99999999999999999999", -1,
     "--seed '99999999999999999999': expected a whole number >= 0"},
    {"--conns 0", -1, "--conns '0': expected a whole number from 1 to 1000"},
    {"--conns 1001", -1, "--conns '1001': expected a whole number from 1 to 1000"},
    {"--conns 1.5", -1, "--conns '1.5': expected a whole number from 1 to 1000"},
    {"--timeout 0", -1,
     "--timeout '0': expected a duration from 1 to 60000 ms (a number, or with a unit: 250ms, "
     "90s, 10m, 2h)"},
    {"--timeout 2m", -1,
     "--timeout '2m': expected a duration from 1 to 60000 ms (a number, or with a unit: 250ms, "
     "90s, 10m, 2h)"},
    {"--grace soon", -1,
     "--grace 'soon': expected a duration from 0 to 1000000000 s (a number, or with a unit: "
     "250ms, 90s, 10m, 2h)"},
    {"--fraction 1.5", -1, "--fraction '1.5': expected a number from 0 to 1"},
    {"--fraction nan", -1, "--fraction 'nan': expected a number from 0 to 1"},
    {"-o xml", -1, "-o 'xml': expected one of table, wide, json"},
    {"--output=xml", -1, "--output 'xml': expected one of table, wide, json"},
    {"-ox", -1, "-o 'x': expected one of table, wide, json"},
    {"-o=x", -1, "-o 'x': expected one of table, wide, json"},
    {"-o=json", 0, NULL},
    {"-hx", -1, "unknown flag '-hx'"},
    {"--trace a --trace b --trace c --trace d", -1, "--trace: at most 3 of them"},
    {"--even abc", -1, "--even 'abc': odd length"},
    {"--even ab --even abcd", 0, NULL}, /* FLAG_MANY */
    {"stray", -1, "unexpected argument 'stray'"},
    {"--help --frob", 1, NULL},
    {"--jsn", 0, NULL},
};

/* Splits s into argv (at most 32 words); "''" is an empty word. */
static int split(const char *s, char *buf, size_t n, char **argv)
{
    snprintf(buf, n, "%s", s);
    int argc = 0;
    for (char *w = strtok(buf, " "); w && argc < 32; w = strtok(NULL, " "))
        argv[argc++] = strcmp(w, "''") == 0 ? w + 2 : w;
    return argc;
}

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct vals v = {0};
        char buf[256], err[256] = "";
        char *argv[32];
        int argc = split(cases[i].args, buf, sizeof(buf), argv);
        int rc = flags_parse(&(struct flag_parse){.flags = table, .opts = &v}, argc, argv, err,
                             sizeof(err));
        if (rc != cases[i].rc || (cases[i].err && strcmp(err, cases[i].err) != 0))
            fail_msg("'%s': rc %d, error '%s'; want %d, '%s'", cases[i].args, rc, err, cases[i].rc,
                     cases[i].err ? cases[i].err : "");
    }
}

static void test_values(void **state)
{
    (void)state;
    struct vals v = {.elect = true};
    char buf[256], err[256] = "";
    char *argv[32];
    int argc = split("a --db=x.db --leader-elect false --seed 18446744073709551615 --conns 7 "
                     "--timeout 250 --grace 1.5 --fraction 0.25 -ojson b --trace t1 --trace t2 "
                     "-- --json",
                     buf, sizeof(buf), argv);
    struct flag_parse p = {
        .flags = table, .opts = &v, .pos = v.pos, .max_pos = 4, .n_pos = &v.n_pos};
    assert_int_equal(flags_parse(&p, argc, argv, err, sizeof(err)), 0);
    assert_string_equal(v.db, "x.db");
    assert_false(v.elect);
    assert_false(v.json); /* after "--": a positional argument */
    assert_false(v.given);
    assert_true(v.seed == UINT64_MAX);
    assert_int_equal(v.conns, 7);
    assert_int_equal(v.timeout_ms, 250);
    assert_int_equal(v.grace_ms, 1500);
    assert_true(v.frac == 0.25);
    assert_int_equal(v.fmt, 2);
    assert_int_equal(v.n_traces, 2);
    assert_string_equal(v.traces[1], "t2");
    assert_int_equal(v.n_pos, 3);
    assert_string_equal(v.pos[0], "a");
    assert_string_equal(v.pos[1], "b");
    assert_string_equal(v.pos[2], "--json");
    /* durations with a unit; .given */
    struct vals w = {0};
    argc = split("--timeout 2s --grace 1m30s --json", buf, sizeof(buf), argv);
    assert_int_equal(
        flags_parse(&(struct flag_parse){.flags = table, .opts = &w}, argc, argv, err, sizeof(err)),
        0);
    assert_int_equal(w.timeout_ms, 2000);
    assert_int_equal(w.grace_ms, 90000);
    assert_true(w.given);
    /* too many positional arguments */
    struct vals x = {0};
    argc = split("a b c d e", buf, sizeof(buf), argv);
    p = (struct flag_parse){
        .flags = table, .opts = &x, .pos = x.pos, .max_pos = 4, .n_pos = &x.n_pos};
    assert_int_equal(flags_parse(&p, argc, argv, err, sizeof(err)), -1);
    assert_string_equal(err, "too many arguments at 'e'");
}

static void test_help(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    flags_help(f, table, 16);
    fclose(f);
    assert_non_null(strstr(text, "section:\n  --db FILE     database\n"));
    assert_non_null(strstr(text, "  --listen ADDR  address\n                second line\n"));
    assert_non_null(strstr(text, "  --leader-elect BOOL  election\n"));
    assert_non_null(strstr(text, "  -o, --output FMT  format\n"));
    assert_non_null(strstr(text, "  -h, --help    help\n"));
    assert_null(strstr(text, "--jsn")); /* hidden */
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
