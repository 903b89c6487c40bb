/* tests/fuzz/fuzz_kube_watch.c: libFuzzer harness for the watch-stream path: the framer that cuts
 * a chunked HTTP body into JSON objects (sched/kube/wire.h), then each object decoded as a watch
 * event and applied to the driver's cache (sched/kube/cache.c), as the informers do.
 *
 * Owns: checking the framer's promises on any bytes: the objects it emits do not depend on
 * where the chunk borders fall (the whole input at once, byte by byte, and split at a position
 * the input chooses all give the same objects), every object starts with '{' and ends with '}',
 * an oversized object is an error and never a crash; and that no event, however malformed,
 * breaks the cache. Violations abort, so the fuzzer reports them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sched/kube/cache.h"
#include "sched/kube/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OBJ 4096

struct seen {
    char *all; /* objects joined with '\n' */
    size_t len;
    struct kcache *cache;
};

static void check(int ok)
{
    if (!ok)
        abort();
}

static int on_object(void *ctx, const char *text, size_t len)
{
    struct seen *s = ctx;
    check(len >= 2 && text[0] == '{' && text[len - 1] == '}' && text[len] == '\0');
    char *grown = realloc(s->all, s->len + len + 2);
    check(grown != NULL);
    s->all = grown;
    memcpy(s->all + s->len, text, len);
    s->len += len;
    s->all[s->len++] = '\n';
    s->all[s->len] = '\0';
    if (s->cache) {
        cJSON *ev = cJSON_ParseWithLength(text, len);
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
        const cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
        if (cJSON_IsString(type) && cJSON_IsObject(obj)) {
            bool del = strcmp(type->valuestring, "DELETED") == 0;
            check(kcache_pod_event(s->cache, obj, del) == 0);
            check(kcache_node_event(s->cache, obj, del) == 0);
            check(kcache_pg_event(s->cache, obj, KPG_XK8S, del) == 0);
        }
        cJSON_Delete(ev);
    }
    return 0;
}

/* Feeds data in chunks of `step` bytes (0: all at once, then at `split`). */
static int run(const uint8_t *data, size_t size, size_t step, size_t split, struct seen *s)
{
    struct kube_framer f;
    struct sched_errbuf eb;
    kube_framer_init(&f, MAX_OBJ);
    int rc = 0;
    if (step == 0) {
        rc = kube_framer_feed(&f, (const char *)data, split, on_object, s, &eb);
        if (rc == 0)
            rc = kube_framer_feed(&f, (const char *)data + split, size - split, on_object, s, &eb);
    } else {
        for (size_t i = 0; i < size && rc == 0; i += step)
            rc = kube_framer_feed(&f, (const char *)data + i, size - i < step ? size - i : step,
                                  on_object, s, &eb);
    }
    kube_framer_free(&f);
    check(rc == 0 || rc == SCHED_ERANGE);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct seen whole = {0}, bytes = {0}, halves = {0};
    whole.cache = kcache_new("gangsched");
    check(whole.cache != NULL);
    int rc1 = run(data, size, 0, size, &whole);
    int rc2 = run(data, size, 1, 0, &bytes);
    size_t split = size ? data[0] % (size + 1) : 0;
    int rc3 = run(data, size, 0, split, &halves);
    check(rc1 == rc2 && rc2 == rc3);
    if (rc1 == 0) { /* the same objects whatever the chunk borders */
        check(whole.len == bytes.len && whole.len == halves.len);
        check(whole.len == 0 || (memcmp(whole.all, bytes.all, whole.len) == 0 &&
                                 memcmp(whole.all, halves.all, whole.len) == 0));
    }
    free(whole.all);
    free(bytes.all);
    free(halves.all);
    kcache_free(whole.cache);
    return 0;
}
