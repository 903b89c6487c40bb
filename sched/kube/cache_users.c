/* sched/kube/cache_users.c: who submits each gang, for run-time estimates per user
 * (queue/estimate.h). A gang's user is its PodGroup's annotation gangsched.io/user, else its
 * first member pod's annotation or label of that name (a gang of one, a Kueue plain-pod group);
 * none: not known (0), and the estimates read its queue's runs.
 *
 * Owns: c->users (name -> id), c->user_names (id - 1 -> name): ids from 1 in order of first
 * sight, never reused while the process runs, at most EST_USERS_MAX of them (later names are
 * not known) and names of at most KCACHE_USER_MAX bytes (a longer one is not known either), so
 * a hostile value cannot grow the table past that.
 *
 * Must not touch: the gangs (cache.c sets gang.user), the estimates (driver_est.c).
 */
#include <stdlib.h>
#include <string.h>

#include "queue/estimate.h"
#include "sched/kube/cache_int.h"

uint32_t kcache_user_id(struct kcache *c, const char *name)
{
    if (!name || !*name || strlen(name) > KCACHE_USER_MAX)
        return 0;
    uintptr_t id = (uintptr_t)strmap_get(&c->users, name);
    if (id != 0 || c->n_users >= EST_USERS_MAX)
        return (uint32_t)id;
    if (c->n_users == c->cap_users) {
        uint32_t cap = c->cap_users ? 2 * c->cap_users : 16;
        char **v = realloc(c->user_names, cap * sizeof(*v));
        if (!v)
            return 0; /* out of memory: not known this time */
        c->user_names = v;
        c->cap_users = cap;
    }
    char *copy = strdup(name);
    id = (uintptr_t)c->n_users + 1;
    if (!copy || strmap_put(&c->users, name, (void *)id, NULL) != 0) {
        free(copy);
        return 0;
    }
    c->user_names[c->n_users++] = copy;
    return (uint32_t)id;
}

const char *kcache_user_name(const struct kcache *c, uint32_t id)
{
    return id > 0 && id <= c->n_users ? c->user_names[id - 1] : NULL;
}

uint32_t kcache_gang_user(struct kcache *c, const struct kpg *pg, const struct kpod *first)
{
    const char *name = pg ? kobj_pg_annotation(pg, KOBJ_ANNOT_USER) : NULL;
    if (!name && first)
        name = first->user;
    return kcache_user_id(c, name);
}

void kcache_users_free(struct kcache *c)
{
    for (uint32_t i = 0; i < c->n_users; i++)
        free(c->user_names[i]);
    free(c->user_names);
    strmap_fini(&c->users);
    c->user_names = NULL;
    c->n_users = c->cap_users = 0;
}
