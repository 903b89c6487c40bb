/* config/yaml_doc.h: the one YAML document helper of gangsched.
 *
 * Owns: how the project reads a YAML document with libyaml, for every YAML it reads (the
 * operator's configuration in config/, NodeLists in sched/sim/nodes.c, kubeconfig files in
 * sched/kube/auth.c, Kueue and Volcano manifests in config/import.c): the nesting guard run before
 * a document is built, loading one document after another, syntax errors as "NAME:LINE:COLUMN: YAML
 * syntax error: problem (context)", the YAML 1.2 core-schema reading of plain scalars (null,
 * booleans, numbers), typed access to mappings and sequences, and "NAME:LINE:COLUMN: message"
 * errors at a node. Must not touch: what a document means (each reader checks its own schema),
 * files (callers read the bytes), anything outside the struct ydoc it is given.
 *
 * Plain scalars: null is "", "~", "null", "Null", "NULL"; booleans are true/True/TRUE and
 * false/False/FALSE (not yes/no: YAML 1.2); numbers are [-+]digits, decimals with an exponent,
 * 0o.., 0x.., .inf and .nan. A quoted scalar is always a string.
 */
#ifndef CONFIG_YAML_DOC_H
#define CONFIG_YAML_DOC_H

#include <stdbool.h>
#include <stddef.h>

#include <yaml.h>

#include "sched/core/err.h"

/* Nesting limit for YAML the project reads: libyaml's document loader has no depth limit and
 * slows down badly on absurdly nested input, so hostile or broken files fail fast. */
#define YDOC_MAX_DEPTH 64

/* 0 when `data` nests at most max_depth collections deep (or has a syntax error: the real parse
 * reports those); SCHED_EINVAL with "name:line:column: nesting deeper than N levels" otherwise;
 * SCHED_ENOMEM when libyaml cannot allocate. */
int ydoc_guard(const char *name, const char *data, size_t len, unsigned max_depth,
               struct sched_errbuf *eb);

/* A parser's error as "name:line:column: YAML syntax error: problem (context)" (SCHED_EINVAL),
 * or "name: out of memory" (SCHED_ENOMEM). Reader errors (bad UTF-8) carry a byte offset only:
 * it is turned into line and column over data[0..len). */
int ydoc_syntax_fail(const char *name, const char *data, size_t len, const yaml_parser_t *p,
                     struct sched_errbuf *eb);

/* One YAML stream being read, a document at a time. */
struct ydoc {
    const char *name; /* the file (or "<buffer>") in messages */
    const char *data;
    size_t len;
    struct sched_errbuf *eb;
    yaml_parser_t parser;
    yaml_document_t doc; /* the current document, valid after ydoc_next() gave a root */
    bool have_parser, have_doc;
};

/* Runs the guard (max_depth 0: none, the caller checked already) and prepares the parser. 0, or
 * the error in eb; ydoc_close() is safe either way. */
int ydoc_open(struct ydoc *y, const char *name, const char *data, size_t len, unsigned max_depth,
              struct sched_errbuf *eb);
/* Loads the next document (freeing the previous one) into y->doc: *root is its root node, or
 * NULL at the end of the stream. 0, or the syntax error in eb. */
int ydoc_next(struct ydoc *y, yaml_node_t **root);
void ydoc_close(struct ydoc *y);
/* Moves the current document to *out, for a reader that keeps several documents alive (the
 * caller deletes it with yaml_document_delete); nodes of it stay where they are. */
void ydoc_take(struct ydoc *y, yaml_document_t *out);

/* What a node is. YDOC_NONE for NULL (an absent key). */
enum ydoc_kind { YDOC_NONE = 0, YDOC_NULL, YDOC_BOOL, YDOC_NUM, YDOC_STR, YDOC_MAP, YDOC_SEQ };
enum ydoc_kind ydoc_kind(const yaml_node_t *n);
/* "nothing", "null", "a boolean", "a number", "a string", "a mapping", "a sequence". */
const char *ydoc_kind_name(enum ydoc_kind k);
/* Whether plain text s reads as a YAML 1.2 core-schema number. */
bool ydoc_number_text(const char *s);

/* Absent (NULL) or a plain null. */
bool ydoc_is_null(const yaml_node_t *n);
/* A plain true or false into *out: 0; anything else: -1 (*out unchanged). */
int ydoc_bool(const yaml_node_t *n, bool *out);
/* A scalar's text and length (libyaml NUL-terminates it; the text may hold a NUL byte itself,
 * which ydoc_has_nul tells). */
const char *ydoc_text(const yaml_node_t *n);
size_t ydoc_len(const yaml_node_t *n);
bool ydoc_has_nul(const yaml_node_t *n);
/* Whether scalar key k is exactly `key`. */
bool ydoc_key_is(const yaml_node_t *k, const char *key);

/* Node by index in the current document (libyaml's ids), NULL when out of range. */
yaml_node_t *ydoc_node(struct ydoc *y, int index);
/* The value of `key` in mapping m (the first such key), or NULL when absent or m is not a
 * mapping. An explicit null is returned as the null node: ydoc_is_null() tells. */
yaml_node_t *ydoc_get(struct ydoc *y, const yaml_node_t *m, const char *key);
/* The same in a document taken with ydoc_take(). */
yaml_node_t *ydoc_doc_get(yaml_document_t *d, const yaml_node_t *m, const char *key);
/* Entries of a mapping or items of a sequence; 0 for anything else. */
size_t ydoc_count(const yaml_node_t *n);
/* Item i of sequence s (i < ydoc_count(s)). */
yaml_node_t *ydoc_item(struct ydoc *y, const yaml_node_t *s, size_t i);

/* "name:line:column: message" at node n (at the start of the file when n is NULL); returns err.
 * `prefix` ("" or e.g. "kubeconfig ") is written first. */
int ydoc_fail(const struct ydoc *y, const yaml_node_t *n, int err, const char *prefix,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
