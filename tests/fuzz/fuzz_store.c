/* tests/fuzz/fuzz_store.c: libFuzzer harness for database files (store/: the schema check on
 * open, the tenant views, store_verify), as `gangctl --db`, `gangsched serve` and
 * `gangsched store check` meet a file that may be corrupt, truncated, foreign or hostile.
 *
 * Owns: each input written as a database file and opened STORE_READONLY (never migrated or
 * written), then every view built and the invariants checked; each must answer or fail with
 * a message, never crash. Violations abort.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/views.h"

#include "tests/fuzz/fuzz_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    fuzz_file(data, size, "state.db", path, sizeof(path));
    struct store *st = NULL;
    struct sched_errbuf eb = {{0}};
    int rc = store_open(path, STORE_READONLY, NULL, &st, &eb);
    if (rc != 0) {
        check(rc < 0 && st == NULL && eb.msg[0] != '\0');
    } else {
        struct store_views *v = NULL;
        if (store_views_load(st, &v, &eb) == 0) {
            cJSON *doc = NULL;
            if (store_view_queues(v, &doc, &eb) == 0)
                cJSON_Delete(doc);
            doc = NULL;
            if (store_view_quota(v, NULL, &doc, &eb) == 0)
                cJSON_Delete(doc);
            doc = NULL;
            if (store_view_jobs(v, NULL, true, &doc, &eb) == 0)
                cJSON_Delete(doc);
            doc = NULL;
            if (store_view_top(v, &doc, &eb) == 0)
                cJSON_Delete(doc);
            doc = NULL;
            if (store_view_reservations(v, &doc, &eb) == 0)
                cJSON_Delete(doc);
            store_views_free(v);
        }
        rc = store_verify(st, NULL, &eb);
        check(rc == 0 || rc == 1 || (rc < 0 && eb.msg[0] != '\0'));
        store_close(st);
    }
    rc = store_check(path, NULL);
    check(rc == 0 || rc == 1 || rc < 0);
    fuzz_file_drop(path);
    return 0;
}
