/* io/tokenizer_bpe.c — byte-pair merging of one pre-token, as the `tokenizers` library's BPE
 * does it: with ignore_merges, a pre-token whose whole byte-level string is in the vocabulary is
 * that one token; otherwise each byte starts as its one-symbol token (a byte the vocabulary
 * lacks is dropped, as the library drops characters it cannot map without an unk token) and
 * the lowest-rank adjacent pair is merged, leftmost first, until none is left. A min-heap of
 * candidate pairs over a linked list of symbols makes a piece of n bytes O(n log n), so a
 * 10 kB whitespace run costs no more than its length. Not the splitting: tokenizer_encode.c. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/tokenizer.h"

typedef struct {
  int32_t id;
  int32_t prev, next; /* -1 at the ends */
  bool removed;
} symbol;

/* A candidate merge of the symbol at pos with its right neighbour. The library's queue keeps
 * the id the pair made when it was pushed and drops an entry whose pair no longer makes that
 * id; this heap does the same, so even vocabularies where several merges make one token give
 * the library's ids. */
typedef struct {
  uint32_t rank;
  int32_t pos;
  int32_t merged;
} candidate;

struct tsri_bpe_scratch {
  symbol *symbols;
  candidate *heap;
  size_t cap_symbols, cap_heap, heap_len;
  char *text; /* the byte-level string of the piece */
  size_t cap_text;
};

bool tsri_ids_push(tsri_ids *v, int32_t id) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 256;
    int32_t *grown = realloc(v->data, cap * sizeof *grown);
    if (!grown) return false;
    v->data = grown;
    v->cap = cap;
  }
  v->data[v->n++] = id;
  return true;
}

tsri_bpe_scratch *tsri_bpe_scratch_new(void) {
  return calloc(1, sizeof(tsri_bpe_scratch));
}

void tsri_bpe_scratch_free(tsri_bpe_scratch *s) {
  if (!s) return;
  free(s->symbols);
  free(s->heap);
  free(s->text);
  free(s);
}

static bool reserve(void **buf, size_t *cap, size_t need, size_t item) {
  if (need <= *cap) return true;
  size_t n = *cap ? *cap : 64;
  while (n < need)
    n *= 2;
  void *grown = realloc(*buf, n * item);
  if (!grown) return false;
  *buf = grown;
  *cap = n;
  return true;
}

static bool before(const candidate *a, const candidate *b) {
  return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(tsri_bpe_scratch *s, candidate c) {
  size_t i = s->heap_len++;
  while (i > 0 && before(&c, &s->heap[(i - 1) / 2])) {
    s->heap[i] = s->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->heap[i] = c;
}

static candidate heap_pop(tsri_bpe_scratch *s) {
  candidate top = s->heap[0], last = s->heap[--s->heap_len];
  size_t i = 0, n = s->heap_len;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && before(&s->heap[child + 1], &s->heap[child])) child++;
    if (!before(&s->heap[child], &last)) break;
    s->heap[i] = s->heap[child];
    i = child;
  }
  if (n) s->heap[i] = last;
  return top;
}

/* Pushes the pair that starts at pos, if the symbol has a right neighbour and the pair merges.
 * The heap holds at most the n - 1 initial pairs plus two per merge, so 3n fits it. */
static void push_pair(const tsr_tokenizer *t, tsri_bpe_scratch *s, int32_t pos) {
  if (pos < 0 || s->symbols[pos].next < 0) return;
  int32_t next = s->symbols[pos].next;
  const tsri_pair_slot *m = tsri_pairmap_get(&t->merges, s->symbols[pos].id, s->symbols[next].id);
  if (m) heap_push(s, (candidate){m->rank, pos, m->merged});
}

static void merge_all(const tsr_tokenizer *t, tsri_bpe_scratch *s) {
  while (s->heap_len) {
    candidate top = heap_pop(s);
    symbol *left = &s->symbols[top.pos];
    if (left->removed || left->next < 0) continue;
    symbol *right = &s->symbols[left->next];
    const tsri_pair_slot *m = tsri_pairmap_get(&t->merges, left->id, right->id);
    if (!m || m->merged != top.merged) continue; /* a stale entry */
    left->id = top.merged;
    right->removed = true;
    left->next = right->next;
    if (right->next >= 0) s->symbols[right->next].prev = top.pos;
    push_pair(t, s, left->prev);
    push_pair(t, s, top.pos);
  }
}

/* The whole piece as one token, when ignore_merges allows it and the vocabulary has it. */
static int32_t whole_piece(const tsr_tokenizer *t, const unsigned char *piece, size_t n,
                           tsri_bpe_scratch *s, bool *nomem) {
  *nomem = false;
  if (!t->ignore_merges || n > t->vocab.max_key_len) return -1;
  if (!reserve((void **)&s->text, &s->cap_text, 2 * n + 1, 1)) {
    *nomem = true;
    return -1;
  }
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    const unsigned char *sym = t->symbol_utf8[piece[i]];
    memcpy(s->text + len, sym, sym[2]);
    len += sym[2];
  }
  return tsri_strmap_get(&t->vocab, s->text, len);
}

tsr_status tsri_bpe_piece(const tsr_tokenizer *t, const unsigned char *piece, size_t n,
                          tsri_bpe_scratch *s, tsri_ids *out) {
  bool nomem;
  int32_t whole = whole_piece(t, piece, n, s, &nomem);
  if (nomem) goto nomem;
  if (whole >= 0) {
    if (!tsri_ids_push(out, whole)) goto nomem;
    return TSR_OK;
  }
  if (n > INT32_MAX / 4 || !reserve((void **)&s->symbols, &s->cap_symbols, n, sizeof(symbol)) ||
      !reserve((void **)&s->heap, &s->cap_heap, 3 * n + 1, sizeof(candidate)))
    goto nomem;
  int32_t count = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t id = t->byte_id[piece[i]];
    if (id < 0) continue;
    s->symbols[count] = (symbol){id, count - 1, -1, false};
    if (count > 0) s->symbols[count - 1].next = count;
    count++;
  }
  s->heap_len = 0;
  for (int32_t pos = 0; pos + 1 < count; pos++)
    push_pair(t, s, pos);
  merge_all(t, s);
  for (int32_t pos = 0; pos >= 0 && pos < count; pos = s->symbols[pos].next)
    if (!tsri_ids_push(out, s->symbols[pos].id)) goto nomem;
  return TSR_OK;
nomem:
  return tsri_error(TSR_ERR_NOMEM, "tokenizer encode: no memory for a piece of %zu bytes", n);
}
