/* sched/core/memo.c: the cycle's equivalence memo (see memo.h). */
#include "sched/core/memo.h"

#include "sched/core/hash.h"

void memo_init(struct memo *m, struct arena *a)
{
    *m = (struct memo){.arena = a};
}

int64_t memo_find(const struct memo *m, uint64_t key, uint64_t version)
{
    if (m->cap == 0)
        return -1;
    for (uint32_t i = (uint32_t)sched_mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const struct memo_entry *e = &m->tab[i];
        if (!e->used)
            return -1;
        if (e->key == key)
            return e->version == MEMO_ANY || e->version == version ? (int64_t)e->verdict : -1;
    }
}

/* Puts e in tab (cap slots, fewer than cap used), replacing the entry of its key. */
static void put(struct memo_entry *tab, uint32_t cap, const struct memo_entry *e, uint32_t *n)
{
    uint32_t i = (uint32_t)sched_mix64(e->key) & (cap - 1);
    while (tab[i].used && tab[i].key != e->key)
        i = (i + 1) & (cap - 1);
    *n += !tab[i].used;
    tab[i] = *e;
}

bool memo_add(struct memo *m, uint64_t key, uint32_t verdict, uint64_t version)
{
    if (2 * (m->n + 1) > m->cap) {
        uint32_t cap = m->cap ? 2 * m->cap : 64, n = 0;
        struct memo_entry *tab = arena_calloc(m->arena, cap, sizeof(*tab));
        if (!tab)
            return false;
        for (uint32_t i = 0; i < m->cap; i++)
            if (m->tab[i].used)
                put(tab, cap, &m->tab[i], &n);
        m->tab = tab;
        m->cap = cap;
        m->n = n;
    }
    struct memo_entry e = {.used = true, .key = key, .verdict = verdict, .version = version};
    put(m->tab, m->cap, &e, &m->n);
    return true;
}
