/* config/internal.h: what the config model, loader and printer share (internal to config/).
 *
 * Owns: the memory pool every loaded configuration lives in (a chunked bump allocator, with the
 * lookup tables and the cohort tree built at load) and the quantity formatting of messages and
 * printouts. No libyaml here: config/model.c, which the core links, includes it.
 * Must not touch: anything outside config/.
 */
#ifndef CONFIG_INTERNAL_H
#define CONFIG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "config/model.h"

struct pool_chunk {
    struct pool_chunk *next;
    size_t cap, used;
};

#define POOL_ALIGN 16
#define POOL_HDR   ((sizeof(struct pool_chunk) + POOL_ALIGN - 1) & ~(size_t)(POOL_ALIGN - 1))
#define POOL_CHUNK 16384

/* Sorted name -> index entry of the lookup tables kept with a config. */
struct name_idx {
    const char *name;
    uint32_t idx;
};

struct config_pool {
    struct pool_chunk *head;
    /* lookup tables and the tree, built at load (read-only afterwards) */
    struct name_idx *queue_idx, *flavor_idx;
    uint32_t *child_first; /* [n_cohorts + 2] CSR of cohorts by parent; bucket n_cohorts = roots */
    uint32_t *child;       /* [n_cohorts] */
    uint32_t *child_pos;   /* [n_cohorts] position of each cohort inside its parent's bucket */
    uint32_t *queue_first; /* [n_cohorts + 2] CSR of queues by cohort; bucket n_cohorts = none */
    uint32_t *queue_list;  /* [n_queues] */
};

/* A new empty pool; NULL on out of memory. */
struct config_pool *config_pool_new(void);
void config_pool_free(struct config_pool *p);
/* Zeroed, 16-byte aligned; NULL on out of memory. */
void *config_pool_alloc(struct config_pool *p, size_t size);
void *config_pool_array(struct config_pool *p, size_t n, size_t size);
char *config_pool_strndup(struct config_pool *p, const char *s, size_t len);

/* A quantity of resource res_code (-1: not interned yet, plain count) as Kubernetes text. */
int config_fmt_qty(int64_t v, int res_code, char *buf, size_t cap);

#endif
