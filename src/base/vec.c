/* base/vec.c — tsri_ptrvec: doubling growth, nothing more. */
#include "base/vec.h"

#include <stdlib.h>

bool tsri_ptrvec_push(tsri_ptrvec *v, void *item) {
  if (v->len == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 64;
    void **items = realloc(v->items, cap * sizeof *items);
    if (!items) return false;
    v->items = items;
    v->cap = cap;
  }
  v->items[v->len++] = item;
  return true;
}

void tsri_ptrvec_free(tsri_ptrvec *v) {
  free(v->items);
  v->items = NULL;
  v->len = v->cap = 0;
}
