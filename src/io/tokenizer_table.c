/* io/tokenizer_table.c — the tokenizer's hash tables: strings -> ids (the vocabulary, the added
 * tokens) and id pairs -> merges. Open addressing with linear probing, sized to at most half
 * full, so loading GLM's 151k tokens and 150k merges stays linear. Not a general container:
 * nothing is ever removed. */
#include <stdlib.h>
#include <string.h>

#include "io/tokenizer.h"

bool tsri_arena_append(tsri_arena *a, const void *bytes, size_t n, size_t *offset) {
  if (a->len + n + 1 > a->cap) {
    size_t cap = a->cap ? a->cap : 4096;
    while (cap < a->len + n + 1)
      cap *= 2;
    char *grown = realloc(a->bytes, cap);
    if (!grown) return false;
    a->bytes = grown;
    a->cap = cap;
  }
  *offset = a->len;
  if (n) memcpy(a->bytes + a->len, bytes, n);
  a->len += n;
  a->bytes[a->len] = '\0'; /* keys stay printable as C strings */
  a->len++;
  return true;
}

/* FNV-1a: short keys, good enough spread for power-of-two tables. */
static uint64_t hash_bytes(const char *key, size_t len) {
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)key[i];
    h *= 0x100000001b3u;
  }
  return h ^ (h >> 29);
}

static size_t table_size(size_t expected) {
  size_t size = 16;
  while (size < expected * 2)
    size *= 2;
  return size;
}

bool tsri_strmap_init(tsri_strmap *m, size_t expected) {
  memset(m, 0, sizeof *m);
  size_t size = table_size(expected);
  m->slots = calloc(size, sizeof *m->slots);
  m->entries = malloc((expected ? expected : 1) * sizeof *m->entries);
  if (!m->slots || !m->entries) {
    tsri_strmap_free(m);
    return false;
  }
  m->mask = size - 1;
  m->cap_entries = expected ? expected : 1;
  return true;
}

void tsri_strmap_free(tsri_strmap *m) {
  free(m->keys.bytes);
  free(m->entries);
  free(m->slots);
  memset(m, 0, sizeof *m);
}

const char *tsri_strmap_key(const tsri_strmap *m, size_t entry) {
  return m->keys.bytes + m->entries[entry].offset;
}

/* The slot holding `key`, or the empty slot where it would go. */
static size_t find_slot(const tsri_strmap *m, const char *key, size_t len) {
  size_t i = (size_t)hash_bytes(key, len) & m->mask;
  for (;;) {
    uint32_t e = m->slots[i];
    if (e == 0) return i;
    const tsri_strmap_entry *entry = &m->entries[e - 1];
    if (entry->len == len && memcmp(m->keys.bytes + entry->offset, key, len) == 0) return i;
    i = (i + 1) & m->mask;
  }
}

static bool grow(tsri_strmap *m) {
  size_t size = (m->mask + 1) * 2;
  uint32_t *slots = calloc(size, sizeof *slots);
  if (!slots) return false;
  free(m->slots);
  m->slots = slots;
  m->mask = size - 1;
  for (size_t e = 0; e < m->count; e++) {
    const tsri_strmap_entry *entry = &m->entries[e];
    m->slots[find_slot(m, m->keys.bytes + entry->offset, entry->len)] = (uint32_t)(e + 1);
  }
  return true;
}

int tsri_strmap_insert(tsri_strmap *m, const char *key, size_t len, int32_t value,
                       int32_t *existing) {
  size_t slot = find_slot(m, key, len);
  if (m->slots[slot]) {
    if (existing) *existing = m->entries[m->slots[slot] - 1].value;
    return 0;
  }
  if (len > UINT32_MAX || m->count >= UINT32_MAX - 1) return -1;
  if (m->count == m->cap_entries) {
    tsri_strmap_entry *entries = realloc(m->entries, 2 * m->cap_entries * sizeof *entries);
    if (!entries) return -1;
    m->entries = entries;
    m->cap_entries *= 2;
  }
  size_t offset;
  if (!tsri_arena_append(&m->keys, key, len, &offset)) return -1;
  m->entries[m->count] = (tsri_strmap_entry){offset, (uint32_t)len, value};
  m->slots[slot] = (uint32_t)(++m->count);
  if (len > m->max_key_len) m->max_key_len = len;
  if (m->count * 2 > m->mask + 1 && !grow(m)) return -1;
  return 1;
}

int32_t tsri_strmap_get(const tsri_strmap *m, const char *key, size_t len) {
  if (!m->slots || len > m->max_key_len) return -1;
  uint32_t e = m->slots[find_slot(m, key, len)];
  return e ? m->entries[e - 1].value : -1;
}

/* ---- pairs ---------------------------------------------------------------------------------- */

static size_t pair_index(uint64_t key, size_t mask) {
  return (size_t)((key * 0x9E3779B97F4A7C15u) >> 24) & mask;
}

bool tsri_pairmap_init(tsri_pairmap *m, size_t expected) {
  size_t size = table_size(expected);
  m->slots = calloc(size, sizeof *m->slots);
  m->mask = size - 1;
  m->count = 0;
  return m->slots != NULL;
}

void tsri_pairmap_free(tsri_pairmap *m) {
  free(m->slots);
  memset(m, 0, sizeof *m);
}

static uint64_t pair_key(int32_t left, int32_t right) {
  return ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
}

static tsri_pair_slot *pair_slot(const tsri_pairmap *m, uint64_t key) {
  size_t i = pair_index(key, m->mask);
  while (m->slots[i].key != 0 && m->slots[i].key != key)
    i = (i + 1) & m->mask;
  return &m->slots[i];
}

static bool pair_grow(tsri_pairmap *m) {
  tsri_pairmap bigger = {calloc((m->mask + 1) * 2, sizeof(tsri_pair_slot)), m->mask * 2 + 1,
                         m->count};
  if (!bigger.slots) return false;
  for (size_t i = 0; i <= m->mask; i++)
    if (m->slots[i].key) *pair_slot(&bigger, m->slots[i].key) = m->slots[i];
  free(m->slots);
  *m = bigger;
  return true;
}

bool tsri_pairmap_put(tsri_pairmap *m, int32_t left, int32_t right, uint32_t rank, int32_t merged) {
  uint64_t key = pair_key(left, right);
  tsri_pair_slot *slot = pair_slot(m, key);
  if (slot->key == 0) {
    if ((m->count + 1) * 2 > m->mask + 1) {
      if (!pair_grow(m)) return false;
      slot = pair_slot(m, key);
    }
    m->count++;
  }
  *slot = (tsri_pair_slot){key, rank, merged};
  return true;
}

const tsri_pair_slot *tsri_pairmap_get(const tsri_pairmap *m, int32_t left, int32_t right) {
  const tsri_pair_slot *slot = pair_slot(m, pair_key(left, right));
  return slot->key ? slot : NULL;
}
