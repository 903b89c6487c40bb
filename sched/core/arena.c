/* sched/core/arena.c: chunked bump allocator (see arena.h). */
#include "sched/core/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arena_chunk {
    struct arena_chunk *next;
    size_t cap;  /* usable bytes in data[] */
    size_t used; /* bytes handed out from data[] */
    _Alignas(16) unsigned char data[];
};

void arena_init(struct arena *a, size_t chunk_size)
{
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : 64 * 1024;
    a->used_total = 0;
}

void arena_fini(struct arena *a)
{
    struct arena_chunk *c = a->head;
    while (c) {
        struct arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used_total = 0;
}

void arena_reset(struct arena *a)
{
    struct arena_chunk *keep = NULL;
    struct arena_chunk *c = a->head;
    while (c) {
        struct arena_chunk *next = c->next;
        if (!keep || c->cap > keep->cap) {
            free(keep);
            keep = c;
        } else {
            free(c);
        }
        c = next;
    }
    if (keep) {
        keep->next = NULL;
        keep->used = 0;
    }
    a->head = keep;
    a->used_total = 0;
}

void *arena_alloc(struct arena *a, size_t size)
{
    size = (size + 15u) & ~(size_t)15u;
    if (size == 0)
        size = 16;
    struct arena_chunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = a->chunk_size;
        if (c && c->cap > cap)
            cap = c->cap; /* grow geometrically with demand */
        if (cap < size)
            cap = size;
        if (c && c->used > 0 && cap < SIZE_MAX / 2)
            cap *= 2;
        struct arena_chunk *n = malloc(sizeof(*n) + cap);
        if (!n)
            return NULL;
        n->cap = cap;
        n->used = 0;
        n->next = c;
        a->head = n;
        c = n;
    }
    void *p = c->data + c->used;
    c->used += size;
    a->used_total += size;
    return p;
}

void *arena_calloc(struct arena *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = arena_alloc(a, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = arena_alloc(a, (size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void *arena_grow(struct arena *a, void *old, uint32_t n, uint32_t *cap, size_t elem)
{
    if (n < *cap)
        return old;
    uint32_t cap2 = *cap ? *cap * 2 : 16;
    void *p = arena_alloc(a, (size_t)cap2 * elem);
    if (!p)
        return NULL;
    if (old)
        memcpy(p, old, (size_t)n * elem);
    *cap = cap2;
    return p;
}
