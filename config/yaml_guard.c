/* config/yaml_guard.c: nesting limit for YAML input (see yaml_guard.h). */
#include "config/yaml_guard.h"

#include <yaml.h>

int config_yaml_guard(const char *name, const char *data, size_t len, unsigned max_depth,
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
