/* tests/unit/test_log.c: one logfmt line per message, whatever the message holds (quotes,
 * backslashes, newlines, control bytes, more than the stack buffer). */
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
#include <unistd.h>

#include "sched/core/log.h"

/* What log_write printed for one message: stderr sent to a temporary file meanwhile. */
static char *logged(const char *text)
{
    char path[] = "/tmp/gangsched-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, 2), 2);
    LOG_ERROR("test", "%s", text);
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    FILE *f = fdopen(fd, "r");
    assert_non_null(f);
    rewind(f);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = 0;
    fclose(f);
    unlink(path);
    char *msg = strstr(buf, " msg=\"");
    assert_non_null(msg);
    assert_non_null(strstr(buf, "level=error mod=test "));
    return msg + 6;
}

static void test_escaped_one_line(void **unused)
{
    (void)unused;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain 'text'", "plain 'text'\"\n"},
        {"a \"quoted\" value", "a \\\"quoted\\\" value\"\n"},
        {"back\\slash", "back\\\\slash\"\n"},
        {"disk I/O error\nSELECT x", "disk I/O error\\nSELECT x\"\n"},
        {"cr\rtab\tbell\a del\x7f", "cr\\rtab\\tbell\\x07 del\\x7f\"\n"},
        {"caf\xc3\xa9", "caf\xc3\xa9\"\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_string_equal(logged(cases[i].in), cases[i].out);
}

static void test_long_message_whole(void **unused)
{
    (void)unused;
    char big[5001];
    memset(big, 'x', 5000);
    big[5000] = 0;
    big[4000] = '"';
    const char *got = logged(big);
    assert_int_equal(strlen(got), 5000 + 1 + 2); /* one escape, then "\"\n" */
    assert_memory_equal(got + 4000, "\\\"x", 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escaped_one_line),
        cmocka_unit_test(test_long_message_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
