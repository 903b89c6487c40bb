/* config/yaml_doc.c: the YAML document helper (see yaml_doc.h). */
#include "config/yaml_doc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ydoc_guard(const char *name, const char *data, size_t len, unsigned max_depth,
               struct sched_errbuf *eb)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    unsigned depth = 0;
    int rc = 0;
    for (;;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e))
            break; /* syntax errors are reported by the caller's full parse */
        yaml_event_type_t t = e.type;
        if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
            if (++depth > max_depth) {
                rc = sched_fail(eb, SCHED_EINVAL, "%s:%zu:%zu: nesting deeper than %u levels", name,
                                e.start_mark.line + 1, e.start_mark.column + 1, max_depth);
                yaml_event_delete(&e);
                break;
            }
        } else if (t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        yaml_event_delete(&e);
        if (t == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&p);
    return rc;
}

int ydoc_syntax_fail(const char *name, const char *data, size_t len, const yaml_parser_t *p,
                     struct sched_errbuf *eb)
{
    if (p->error == YAML_MEMORY_ERROR)
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", name);
    size_t line = 1, column = 1;
    if (p->error == YAML_READER_ERROR) {
        size_t off = p->problem_offset < len ? p->problem_offset : len;
        for (size_t i = 0; data && i < off; i++) {
            if (data[i] == '\n') {
                line++;
                column = 1;
            } else {
                column++;
            }
        }
    } else {
        line = p->problem_mark.line + 1;
        column = p->problem_mark.column + 1;
    }
    return sched_fail(eb, SCHED_EINVAL, "%s:%zu:%zu: YAML syntax error: %s%s%s%s", name, line,
                      column, p->problem ? p->problem : "unknown problem", p->context ? " (" : "",
                      p->context ? p->context : "", p->context ? ")" : "");
}

int ydoc_open(struct ydoc *y, const char *name, const char *data, size_t len, unsigned max_depth,
              struct sched_errbuf *eb)
{
    memset(y, 0, sizeof(*y));
    y->name = name;
    y->data = data ? data : "";
    y->len = len;
    y->eb = eb;
    if (max_depth) {
        int rc = ydoc_guard(name, y->data, len, max_depth, eb);
        if (rc)
            return rc;
    }
    if (!yaml_parser_initialize(&y->parser))
        return sched_fail(eb, SCHED_ENOMEM, "%s: out of memory", name);
    y->have_parser = true;
    yaml_parser_set_input_string(&y->parser, (const unsigned char *)y->data, len);
    return 0;
}

int ydoc_next(struct ydoc *y, yaml_node_t **root)
{
    *root = NULL;
    if (y->have_doc) {
        yaml_document_delete(&y->doc);
        y->have_doc = false;
    }
    if (!y->have_parser)
        return 0;
    if (!yaml_parser_load(&y->parser, &y->doc))
        return ydoc_syntax_fail(y->name, y->data, y->len, &y->parser, y->eb);
    y->have_doc = true;
    *root = yaml_document_get_root_node(&y->doc);
    return 0;
}

void ydoc_close(struct ydoc *y)
{
    if (y->have_doc)
        yaml_document_delete(&y->doc);
    if (y->have_parser)
        yaml_parser_delete(&y->parser);
    y->have_doc = y->have_parser = false;
}

void ydoc_take(struct ydoc *y, yaml_document_t *out)
{
    *out = y->doc;
    memset(&y->doc, 0, sizeof(y->doc));
    y->have_doc = false;
}

/* ---- plain scalars (YAML 1.2 core schema) ---------------------------------------------------- */

static bool ydoc_word(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

static const char *const ydoc_nulls[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const ydoc_trues[] = {"true", "True", "TRUE", NULL};
static const char *const ydoc_falses[] = {"false", "False", "FALSE", NULL};

static bool ydoc_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static bool ydoc_radix_digit(char ch, char radix)
{
    if (radix == 'o')
        return ch >= '0' && ch <= '7';
    return ydoc_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

bool ydoc_number_text(const char *s)
{
    static const char *const special[] = {".inf",  ".Inf",  ".INF",  "-.inf", "-.Inf",
                                          "-.INF", "+.inf", "+.Inf", "+.INF", ".nan",
                                          ".NaN",  ".NAN",  NULL};
    if (ydoc_word(s, special))
        return true;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o') && s[2]) {
        for (const char *p = s + 2; *p; p++)
            if (!ydoc_radix_digit(*p, s[1]))
                return false;
        return true;
    }
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    bool digits = false;
    for (; ydoc_digit(*p); p++)
        digits = true;
    if (*p == '.')
        for (p++; ydoc_digit(*p); p++)
            digits = true;
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '-' || *p == '+')
            p++;
        if (!ydoc_digit(*p))
            return false;
        while (ydoc_digit(*p))
            p++;
    }
    return *p == '\0';
}

static bool ydoc_plain(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

enum ydoc_kind ydoc_kind(const yaml_node_t *n)
{
    if (!n)
        return YDOC_NONE;
    if (n->type == YAML_MAPPING_NODE)
        return YDOC_MAP;
    if (n->type == YAML_SEQUENCE_NODE)
        return YDOC_SEQ;
    if (n->type != YAML_SCALAR_NODE)
        return YDOC_NONE;
    if (!ydoc_plain(n))
        return YDOC_STR;
    const char *s = ydoc_text(n);
    if (ydoc_word(s, ydoc_nulls))
        return YDOC_NULL;
    if (ydoc_word(s, ydoc_trues) || ydoc_word(s, ydoc_falses))
        return YDOC_BOOL;
    return ydoc_number_text(s) ? YDOC_NUM : YDOC_STR;
}

const char *ydoc_kind_name(enum ydoc_kind k)
{
    static const char *const names[] = {"nothing",  "null",      "a boolean", "a number",
                                        "a string", "a mapping", "a sequence"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

bool ydoc_is_null(const yaml_node_t *n)
{
    return !n || (ydoc_plain(n) && ydoc_word(ydoc_text(n), ydoc_nulls));
}

int ydoc_bool(const yaml_node_t *n, bool *out)
{
    if (ydoc_plain(n) && ydoc_word(ydoc_text(n), ydoc_trues))
        *out = true;
    else if (ydoc_plain(n) && ydoc_word(ydoc_text(n), ydoc_falses))
        *out = false;
    else
        return -1;
    return 0;
}

const char *ydoc_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

size_t ydoc_len(const yaml_node_t *n)
{
    return n->data.scalar.length;
}

bool ydoc_has_nul(const yaml_node_t *n)
{
    return strlen(ydoc_text(n)) != ydoc_len(n);
}

bool ydoc_key_is(const yaml_node_t *k, const char *key)
{
    return k && k->type == YAML_SCALAR_NODE && strlen(key) == ydoc_len(k) &&
           memcmp(key, ydoc_text(k), ydoc_len(k)) == 0;
}

/* ---- collections ----------------------------------------------------------------------------- */

yaml_node_t *ydoc_node(struct ydoc *y, int index)
{
    return y->have_doc ? yaml_document_get_node(&y->doc, index) : NULL;
}

yaml_node_t *ydoc_doc_get(yaml_document_t *d, const yaml_node_t *m, const char *key)
{
    if (!m || m->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++)
        if (ydoc_key_is(yaml_document_get_node(d, p->key), key))
            return yaml_document_get_node(d, p->value);
    return NULL;
}

yaml_node_t *ydoc_get(struct ydoc *y, const yaml_node_t *m, const char *key)
{
    return y->have_doc ? ydoc_doc_get(&y->doc, m, key) : NULL;
}

size_t ydoc_count(const yaml_node_t *n)
{
    if (n && n->type == YAML_MAPPING_NODE)
        return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    if (n && n->type == YAML_SEQUENCE_NODE)
        return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    return 0;
}

yaml_node_t *ydoc_item(struct ydoc *y, const yaml_node_t *s, size_t i)
{
    return ydoc_node(y, s->data.sequence.items.start[i]);
}

int ydoc_fail(const struct ydoc *y, const yaml_node_t *n, int err, const char *prefix,
              const char *fmt, ...)
{
    char msg[SCHED_ERRBUF];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t line = n ? n->start_mark.line + 1 : 1, column = n ? n->start_mark.column + 1 : 1;
    return sched_fail(y->eb, err, "%s%s:%zu:%zu: %s", prefix ? prefix : "", y->name, line, column,
                      msg);
}
