/* base/vec.h — a growable array of pointers, the one small container the graph walk needs. */
#ifndef TSR_BASE_VEC_H
#define TSR_BASE_VEC_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  void **items;
  size_t len, cap;
} tsri_ptrvec;

/* false when host memory ran out (the vector is unchanged). */
bool tsri_ptrvec_push(tsri_ptrvec *v, void *item);
void tsri_ptrvec_free(tsri_ptrvec *v);

#endif
