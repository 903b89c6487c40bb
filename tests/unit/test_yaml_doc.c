/* tests/unit/test_yaml_doc.c: the YAML document helper (config/yaml_doc.h) that the config,
 * NodeLists, kubeconfig and the Kueue importer read through: scalar kinds of the YAML 1.2 core
 * schema, booleans, mapping access, documents one after another, taking a document out, the
 * nesting guard, and errors with file:line:column (also for bad UTF-8, which libyaml reports by
 * byte offset). */
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <string.h>

#include "config/yaml_doc.h"

static void test_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *yaml;
        enum ydoc_kind kind;
    } cases[] = {
        {"v: ~", YDOC_NULL},     {"v: null", YDOC_NULL},    {"v:", YDOC_NULL},
        {"v: true", YDOC_BOOL},  {"v: FALSE", YDOC_BOOL},   {"v: yes", YDOC_STR},
        {"v: 12", YDOC_NUM},     {"v: -1.5e3", YDOC_NUM},   {"v: 0x1F", YDOC_NUM},
        {"v: 0o17", YDOC_NUM},   {"v: .inf", YDOC_NUM},     {"v: 0x", YDOC_STR},
        {"v: '12'", YDOC_STR},   {"v: \"true\"", YDOC_STR}, {"v: 1h30m", YDOC_STR},
        {"v: {a: 1}", YDOC_MAP}, {"v: [1]", YDOC_SEQ},      {"v: ''", YDOC_STR},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sched_errbuf eb;
        struct ydoc y;
        yaml_node_t *root = NULL;
        assert_int_equal(
            ydoc_open(&y, "t.yaml", cases[i].yaml, strlen(cases[i].yaml), YDOC_MAX_DEPTH, &eb), 0);
        assert_int_equal(ydoc_next(&y, &root), 0);
        assert_non_null(root);
        yaml_node_t *v = ydoc_get(&y, root, "v");
        if (ydoc_kind(v) != cases[i].kind)
            fail_msg("%s: kind %s", cases[i].yaml, ydoc_kind_name(ydoc_kind(v)));
        assert_int_equal(ydoc_is_null(v), cases[i].kind == YDOC_NULL);
        assert_null(ydoc_get(&y, root, "absent"));
        ydoc_close(&y);
    }
    assert_int_equal(ydoc_kind(NULL), YDOC_NONE);
    assert_true(ydoc_is_null(NULL));
    assert_string_equal(ydoc_kind_name(YDOC_SEQ), "a sequence");
}

static void test_access(void **state)
{
    (void)state;
    const char *text = "a: True\nb: 'true'\nlist: [x, y, z]\n";
    struct sched_errbuf eb;
    struct ydoc y;
    yaml_node_t *root;
    assert_int_equal(ydoc_open(&y, "t.yaml", text, strlen(text), 0, &eb), 0);
    assert_int_equal(ydoc_next(&y, &root), 0);
    bool b = false;
    assert_int_equal(ydoc_bool(ydoc_get(&y, root, "a"), &b), 0);
    assert_true(b);
    b = false;
    assert_int_equal(ydoc_bool(ydoc_get(&y, root, "b"), &b), -1); /* quoted: a string */
    assert_false(b);
    yaml_node_t *l = ydoc_get(&y, root, "list");
    assert_int_equal(ydoc_count(l), 3);
    assert_int_equal(ydoc_count(root), 3);
    assert_string_equal(ydoc_text(ydoc_item(&y, l, 2)), "z");
    assert_int_equal(ydoc_fail(&y, l, SCHED_EINVAL, "kubeconfig ", "list: %s", "bad"),
                     SCHED_EINVAL);
    assert_string_equal(eb.msg, "kubeconfig t.yaml:3:7: list: bad");
    ydoc_close(&y);
}

static void test_documents_and_take(void **state)
{
    (void)state;
    const char *text = "a: 1\n---\na: 2\n---\na: 3\n";
    struct sched_errbuf eb;
    struct ydoc y;
    yaml_node_t *root;
    yaml_document_t kept[3];
    int n = 0;
    assert_int_equal(ydoc_open(&y, "t.yaml", text, strlen(text), YDOC_MAX_DEPTH, &eb), 0);
    while (ydoc_next(&y, &root) == 0 && root) {
        assert_true(n < 3);
        ydoc_take(&y, &kept[n]);
        assert_string_equal(ydoc_text(ydoc_doc_get(&kept[n], root, "a")), n == 0   ? "1"
                                                                          : n == 1 ? "2"
                                                                                   : "3");
        n++;
    }
    assert_int_equal(n, 3);
    ydoc_close(&y);
    /* the taken documents outlive the reader */
    for (int i = 0; i < 3; i++) {
        yaml_node_t *r = yaml_document_get_root_node(&kept[i]);
        char want[2] = {(char)('1' + i), 0};
        assert_string_equal(ydoc_text(ydoc_doc_get(&kept[i], r, "a")), want);
        yaml_document_delete(&kept[i]);
    }
}

static void test_errors(void **state)
{
    (void)state;
    struct sched_errbuf eb;
    struct ydoc y;
    yaml_node_t *root;
    const char *broken = "a: 1\nb: [1, 2\n";
    assert_int_equal(ydoc_open(&y, "b.yaml", broken, strlen(broken), YDOC_MAX_DEPTH, &eb), 0);
    assert_int_equal(ydoc_next(&y, &root), SCHED_EINVAL);
    ydoc_close(&y);
    assert_non_null(
        strstr(eb.msg, "b.yaml:3:1: YAML syntax error: did not find expected ',' or ']'"));
    /* bad UTF-8: libyaml gives a byte offset, turned into line and column */
    const char *utf = "a: 1\nb: \"\xff\"\n";
    assert_int_equal(ydoc_open(&y, "u.yaml", utf, strlen(utf), YDOC_MAX_DEPTH, &eb), 0);
    assert_int_equal(ydoc_next(&y, &root), SCHED_EINVAL);
    ydoc_close(&y);
    assert_non_null(strstr(eb.msg, "u.yaml:2:5: YAML syntax error: invalid leading UTF-8 octet"));
    /* the guard: 65 nested sequences */
    char deep[200];
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    deep[130] = '\0';
    assert_int_equal(ydoc_open(&y, "d.yaml", deep, strlen(deep), YDOC_MAX_DEPTH, &eb),
                     SCHED_EINVAL);
    ydoc_close(&y);
    assert_string_equal(eb.msg, "d.yaml:1:65: nesting deeper than 64 levels");
    assert_int_equal(ydoc_open(&y, "d.yaml", deep + 1, strlen(deep) - 2, YDOC_MAX_DEPTH, &eb), 0);
    ydoc_close(&y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_access),
        cmocka_unit_test(test_documents_and_take),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
