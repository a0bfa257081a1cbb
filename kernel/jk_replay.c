/* jk_replay.c - the signatures of the last JKP_REPLAY_HISTORY verified messages, so a
 * validly signed message captured on the wire and sent again is dropped instead of run
 * twice (jupyter_client's Session keeps the same kind of digest history).
 *
 * Each entry is the first 32 hex characters (128 bits) of an HMAC: far too many bits
 * for two different messages to collide by chance, and a fixed, small footprint
 * (2 MiB for the whole history, touched only as it fills). A ring buffer holds the
 * entries in arrival order, and chained buckets find them: when the ring is full the
 * oldest entry is unlinked and its slot reused, so memory never grows.
 * The shell, control and stdin threads all receive, hence the mutex.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jk_internal.h"

#define KEY_LEN 32
#define NBUCKETS (2 * JKP_REPLAY_HISTORY)
#define NONE UINT32_MAX

typedef struct entry {
    char key[KEY_LEN];
    uint32_t next; /* next entry in the same bucket */
} entry;

struct jkp_replay {
    pthread_mutex_t lock;
    entry *ring;      /* JKP_REPLAY_HISTORY entries */
    uint32_t *bucket; /* NBUCKETS heads */
    size_t count, oldest;
};

jkp_replay *jkp_replay_create(void)
{
    jkp_replay *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->ring = calloc(JKP_REPLAY_HISTORY, sizeof *r->ring);
    r->bucket = malloc(NBUCKETS * sizeof *r->bucket);
    if (!r->ring || !r->bucket || pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r->ring);
        free(r->bucket);
        free(r);
        return NULL;
    }
    for (size_t i = 0; i < NBUCKETS; i++) r->bucket[i] = NONE;
    return r;
}

void jkp_replay_destroy(jkp_replay *r)
{
    if (!r) return;
    pthread_mutex_destroy(&r->lock);
    free(r->ring);
    free(r->bucket);
    free(r);
}

static size_t hash(const char *key)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (int i = 0; i < KEY_LEN; i++) h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
    return (size_t)(h % NBUCKETS);
}

static void unlink_entry(jkp_replay *r, uint32_t idx)
{
    uint32_t *p = &r->bucket[hash(r->ring[idx].key)];
    while (*p != NONE && *p != idx) p = &r->ring[*p].next;
    if (*p == idx) *p = r->ring[idx].next;
}

int jkp_replay_seen(jkp_replay *r, const jkp_view *sig)
{
    if (!r || sig->len == 0) return 0; /* unsigned mode: nothing to remember */
    char key[KEY_LEN] = {0};
    memcpy(key, sig->data, sig->len < KEY_LEN ? sig->len : KEY_LEN);
    size_t b = hash(key);
    pthread_mutex_lock(&r->lock);
    for (uint32_t i = r->bucket[b]; i != NONE; i = r->ring[i].next)
        if (!memcmp(r->ring[i].key, key, KEY_LEN)) {
            pthread_mutex_unlock(&r->lock);
            return 1;
        }
    uint32_t idx;
    if (r->count < JKP_REPLAY_HISTORY) {
        idx = (uint32_t)r->count++;
    } else { /* full: forget the oldest */
        idx = (uint32_t)r->oldest;
        unlink_entry(r, idx);
        r->oldest = (r->oldest + 1) % JKP_REPLAY_HISTORY;
    }
    memcpy(r->ring[idx].key, key, KEY_LEN);
    r->ring[idx].next = r->bucket[b];
    r->bucket[b] = idx;
    pthread_mutex_unlock(&r->lock);
    return 0;
}
