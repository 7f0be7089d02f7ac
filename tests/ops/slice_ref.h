/* tests/ops/slice_ref.h — the tests' own reference for Python slicing (independent of the
 * library's slice resolution), shared by the view and slice_update tests. */
#ifndef TSR_TESTS_OPS_SLICE_REF_H
#define TSR_TESTS_OPS_SLICE_REF_H

#include <stdbool.h>
#include <stdint.h>

/* Python's slice over one axis, walked: the indices it takes, in order, into `taken`. */
static inline int64_t python_slice(int64_t dim, int64_t start, int64_t stop, int64_t step,
                                   int64_t *taken) {
  if (step > 0) {
    start = start < 0 ? (start + dim < 0 ? 0 : start + dim) : (start > dim ? dim : start);
    stop = stop < 0 ? (stop + dim < 0 ? 0 : stop + dim) : (stop > dim ? dim : stop);
  } else {
    start = start < 0 ? (start + dim < 0 ? -1 : start + dim) : (start >= dim ? dim - 1 : start);
    stop = stop < 0 ? (stop + dim < 0 ? -1 : stop + dim) : (stop >= dim ? dim - 1 : stop);
  }
  /* Every index of the axis in walking order, kept when it lies on the progression (no
     arithmetic that a huge step could overflow). */
  int64_t n = 0;
  for (int64_t k = 0; k < dim; k++) {
    int64_t i = step > 0 ? k : dim - 1 - k;
    bool inside = step > 0 ? (i >= start && i < stop) : (i <= start && i > stop);
    if (inside && (step > 0 ? i - start : start - i) % step == 0) taken[n++] = i;
  }
  return n;
}

#endif
