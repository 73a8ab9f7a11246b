/* A few stash slots, one per kept forward call of the step (stash.h). */
#include "stash.h"

#include <stdlib.h>
#include <string.h>

enum { SLOTS = 16, MAX_KEY = 256 };

static struct slot {
    unsigned char key[MAX_KEY];
    size_t key_len;
    const void *owner;
    int valid;
    unsigned long long used; /* last begin, for replacement */
    void *p;
    size_t cap;
} slots[SLOTS];
static unsigned long long clock_;

/* Bytes held by the slots other than s. Held memory stays with its slot
 * (steps repeat the same calls), so once the total is reached the same
 * calls are refused every step, without freeing and allocating again. */
static size_t others_bytes(const struct slot *s) {
    size_t total = 0;
    for (int i = 0; i < SLOTS; i++)
        if (&slots[i] != s) total += slots[i].cap;
    return total;
}

void *px_stash_begin(const void *key, size_t key_len, const void *owner, size_t bytes) {
    if (key_len > MAX_KEY || bytes == 0 || bytes > PX_STASH_MAX_BYTES) return NULL;
    struct slot *s = NULL;
    for (int i = 0; i < SLOTS && !s; i++)
        if (slots[i].p && slots[i].owner == owner) s = &slots[i];
    for (int i = 0; i < SLOTS && !s; i++)
        if (!slots[i].p) s = &slots[i];
    if (!s) {
        s = &slots[0];
        for (int i = 1; i < SLOTS; i++)
            if (slots[i].used < s->used) s = &slots[i];
    }
    s->valid = 0;
    if (s->cap < bytes) {
        free(s->p);
        s->p = NULL;
        s->cap = 0;
        size_t cap = (bytes + 63) & ~(size_t)63;
        if (others_bytes(s) + cap > PX_STASH_TOTAL_BYTES) return NULL;
        s->p = aligned_alloc(64, cap);
        if (!s->p) return NULL;
        s->cap = cap;
    }
    memcpy(s->key, key, key_len);
    s->key_len = key_len;
    s->owner = owner;
    s->valid = 1;
    s->used = ++clock_;
    return s->p;
}

void *px_stash_take(const void *key, size_t key_len) {
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].valid && slots[i].key_len == key_len &&
            memcmp(slots[i].key, key, key_len) == 0) {
            slots[i].valid = 0;
            return slots[i].p;
        }
    return NULL;
}
