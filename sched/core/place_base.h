/* sched/core/place_base.h: placement state kept between cycles and updated by deltas.
 *
 * Owns: the per-node working arrays of placement (free capacity, free GPU masks, schedulable
 * flags, nodes bucketed by free GPU count), the facts that depend on the cluster alone (node-only
 * filters, largest NVLink island, largest node, static capacity), the per-domain sums of
 * schedulable GPUs with each level's maximum, and the scratch arrays of the domain search. A
 * cycle works on these arrays in place: every node it changes (a tentative or committed pod, a
 * hold, a reservation) is marked, and the next cycle's sync restores exactly the marked nodes
 * and those the driver touched from the node_state, so a cycle costs what changed since the last
 * one, not the size of the cluster (the model is kube-scheduler's cache snapshot, which copies
 * only the nodes whose generation moved).
 *
 * Invariants after place_base_sync(): for every node, free = alloc - used, gpu_free = all GPUs
 * not in gpu_used, held = 0, held_for = NULL, ok = node-only filters pass and the node is
 * neither down nor quarantined; ok nodes sit in the bitmap of bucket popcount(gpu_free) and
 * every bucket's list of nodes linked during the cycle is empty; free_gpus is the sum of the
 * bucket keys of ok nodes; dom_free[] of the scratch is -1 everywhere.
 * Bucket order (what a one-pod gang's search sees): the nodes linked during the current cycle,
 * most recent first, then the nodes of the shared set by descending node index, then the others
 * by ascending node index, exactly the order of a state built from scratch at the start of the
 * cycle.
 *
 * GPU shares (place_share.c): a node's running shares change its state beyond its node_state
 * (the devices they hold leave gpu_free and count one GPU each). That charge is made when the
 * sync restores the node (place_share_build, on the nodes the sync listed: pb_synced) and kept
 * with the node until it is next marked: a node holding shares sits in the bucket's shared set,
 * which the sync leaves alone, not in its bitmap. The shares on a node change only with its
 * node_state (a share pod starts or ends), so the driver's touch is what recharges them.
 *
 * Drivers: create one per cluster with place_base_new(), call place_base_touch(node) after
 * every change of that node's node_state (pods started or ended, down, up, quarantined), pass
 * it in sched_snapshot.base. Without a base (base NULL) the cycle builds one in its arena and
 * syncs every node: same decisions, the cost of the whole cluster.
 *
 * Must not touch: the cluster and the node_state (read only), anything of the driver's.
 */
#ifndef SCHED_CORE_PLACE_BASE_H
#define SCHED_CORE_PLACE_BASE_H

#include <stdbool.h>
#include <stdint.h>

#include "plugins/plugins.h"
#include "sched/core/arena.h"
#include "sched/core/model.h"

#define PB_NO_KEY      0xFFu
#define PB_KEYS        (NODE_MAX_GPUS + 1)
#define PLACE_TIER_OWN GANG_PREF_FREE /* tier_key of tiers made for one gang */

/* Preference tiers told apart (place_pref.c place_pref_tiers): sums of preferred node affinity
 * weights below the PLACE_PREF_TIERS-th largest share the last tier. */
#define PLACE_PREF_TIERS 16

struct place_base {
    const struct cluster *c;
    uint32_t n;           /* nodes */
    uint32_t max_domains; /* most domains of any level, at least n and 1 */
    bool owned;           /* allocated by place_base_new (else in an arena) */
    /* the cluster alone */
    struct filter_env env;
    uint8_t *static_ok;       /* node-only filters pass (ready, not cordoned) */
    bool has_soft;            /* some node has a PreferNoSchedule taint */
    uint32_t max_island;      /* largest NVLink island of any node, in GPUs */
    int64_t node_norm;        /* GPUs of the largest node, >= 1 */
    int64_t static_gpus;      /* GPUs of the static_ok nodes */
    struct res_vec max_alloc; /* per resource, the largest static_ok node */
    bool level_is_nodes[TOPO_MAX_LEVELS];
    /* per node, synced from node_state, changed in place by the cycle */
    struct res_vec *free;
    uint32_t *gpu_free;
    uint8_t *ok, *held, *soft, *key; /* key: free GPUs of a linked node, PB_NO_KEY otherwise */
    uint8_t *tier; /* preference tiers of the nodes for the preferences hashed tier_key (gang.pref;
                      0: none computed this cycle), tier_n of them (place_pref.c) */
    uint64_t tier_key; /* or, for tiers made for one gang's inter-pod preferences, tier_seq with
                          PLACE_TIER_OWN (gang.pref never has that bit) */
    uint64_t tier_seq;
    uint32_t tier_n;
    uint32_t tier_top[PLACE_PREF_TIERS]; /* the sum of weights of each tier */
    uint32_t *tier_w;     /* scratch of place_pref_tiers: each node's sum of weights */
    uint32_t *tier_nodes; /* the nodes whose sum is above 0, ascending, n_tier_nodes of them */
    uint32_t n_tier_nodes;
    /* while tier_key != 0: the linked nodes per tier and bucket, kept by every link and
     * unlink (so that a one-pod gang skips the buckets without a node of the tier it wants) */
    uint32_t tier_cnt[PLACE_PREF_TIERS][PB_KEYS];
    const struct gang **held_for;
    uint8_t *sok; /* counted in ok_gpus: ok by the node_state (before holds) */
    uint8_t *lok; /* counted in the domain sums: sok and not held for a preemptor */
    /* buckets: per key a list of nodes linked this cycle (LIFO), a bitmap of the nodes holding
     * GPU shares charged at an earlier sync (the shared set) and a bitmap of the others */
    int32_t head[PB_KEYS];
    int32_t *next, *prev;
    uint8_t *in_list;
    uint8_t *in_sh;                 /* node is in its bucket's shared set */
    uint32_t words;                 /* 64-bit words per bucket bitmap */
    uint64_t *bits;                 /* [PB_KEYS][words] */
    uint64_t *summary;              /* [PB_KEYS][(words + 63) / 64]: bit w = bits word w is not 0 */
    uint64_t *sh_bits, *sh_summary; /* the shared sets, laid out as bits and summary */
    uint64_t *cand;    /* [words] scratch: the nodes of some buckets, all 0 between uses */
    int64_t free_gpus; /* sum of key over linked nodes */
    int64_t ok_gpus;   /* GPUs of sok nodes */
    /* per level and domain: GPUs of lok nodes; each level's largest and how many reach it */
    int64_t *dom_okg[TOPO_MAX_LEVELS];
    int64_t level_max[TOPO_MAX_LEVELS];
    uint32_t at_max[TOPO_MAX_LEVELS];
    bool level_stale[TOPO_MAX_LEVELS];
    /* nodes to restore at the next sync (touched by the driver or changed by a cycle) */
    uint32_t *dirty;
    uint8_t *is_dirty;
    uint32_t n_dirty;
    uint32_t n_synced;   /* nodes restored by the last sync: pb_synced */
    uint64_t moves;      /* nodes taken out of or put into a bucket so far (place_one's
                            cursor holds while only its own node moved) */
    uint64_t generation; /* bumped by every place_base_touch: the cluster's usage generation */
    /* scratch of one cycle's searches */
    uint8_t *elig;   /* [GANG_MAX_SETS][n] */
    uint32_t *slots; /* [GANG_MAX_SETS][n] */
    uint32_t *order, *useful;
    uint32_t *touched; /* [max_domains] */
    uint64_t *dom_cap; /* [max_domains][GANG_MAX_SETS] */
    int64_t *dom_free; /* [max_domains], -1 between searches */
    int64_t *dom_capg; /* [max_domains] */
    /* the cluster's HAMi registers parsed once (place_share.c), NULL until a share is asked;
     * malloc'd when owned (freed by place_base_free), else in the arena */
    struct place_share_cache *share_cache;
    /* the journal of the cycle's domain-sum cache (place_fitc.c): every node linked or unlinked
     * since the cache last read it, jr_cap at most (then jr_over); jr NULL while no cache is
     * kept (place_state_build clears it: the buffer lives in the cycle's arena) */
    uint32_t *jr;
    uint32_t jr_n, jr_cap;
    bool jr_over;
};

/* A base for cluster c, every node to be synced at the first cycle; NULL on out of memory. */
struct place_base *place_base_new(const struct cluster *c);
void place_base_free(struct place_base *b);
/* The same in an arena (lives until the arena's reset). */
struct place_base *place_base_in_arena(const struct cluster *c, struct arena *a);
/* The driver changed node i's node_state. */
void place_base_touch(struct place_base *b, uint32_t i);

/* ---- for sched/core/place.c --------------------------------------------------------------- */

/* Restores every marked node from `state` (see the invariants above). */
void place_base_sync(struct place_base *b, const struct node_state *state);
/* The nodes the last sync restored (*n of them), valid until the next pb_mark. */
static inline const uint32_t *pb_synced(const struct place_base *b, uint32_t *n)
{
    *n = b->n_synced;
    return b->dirty;
}
/* Node i changed in this cycle: restored at the next sync. */
static inline void pb_mark(struct place_base *b, uint32_t i)
{
    if (!b->is_dirty[i]) {
        b->is_dirty[i] = 1;
        b->dirty[b->n_dirty++] = i;
    }
}
/* Node i is linked or unlinked: noted for the domain-sum cache, when one is kept. */
static inline void pb_journal(struct place_base *b, uint32_t i)
{
    if (!b->jr)
        return;
    if (b->jr_n < b->jr_cap)
        b->jr[b->jr_n++] = i;
    else
        b->jr_over = true;
}
/* Takes node i out of its bucket (no-op when not linked). */
void pb_unlink(struct place_base *b, uint32_t i);
/* Puts node i at the head of the list of bucket popcount(gpu_free[i]). */
void pb_link(struct place_base *b, uint32_t i);
/* Node i (ok, just restored by the sync) holds GPU shares charged on top of its node_state:
 * into the shared set of bucket popcount(gpu_free[i]), without a mark, so that it keeps that
 * state until the driver touches it or a cycle changes it. */
void pb_link_shared(struct place_base *b, uint32_t i);
/* Node i is held for a preemptor this cycle (ok nodes only): out of the buckets and of the
 * domain sums until the next sync. */
void pb_hold(struct place_base *b, uint32_t i, const struct gang *g);
/* Each level's largest domain in GPUs of lok nodes (recomputed where stale). */
void pb_level_max(struct place_base *b, int64_t *out);

/* Walks bucket k in order: the list, the shared set downwards, then the bitmap upwards. */
struct pb_iter {
    int32_t list;
    uint32_t pos; /* the shared set: below pos; the bitmap: from pos */
    uint8_t phase;
};
static inline void pb_iter_start(const struct place_base *b, uint32_t k, struct pb_iter *it)
{
    it->list = b->head[k];
    it->pos = b->n;
    it->phase = 0;
}
/* The next node of bucket k, or -1. */
int32_t pb_iter_next(const struct place_base *b, uint32_t k, struct pb_iter *it);
/* Marks in b->cand every linked node with at least kmin free GPUs (buckets kmin..32). */
void pb_cand_fill(struct place_base *b, uint32_t kmin);

#endif
