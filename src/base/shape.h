/* base/shape.h — the one checked product of dimensions. Every element count the library derives
 * from a shape (array creation, op outputs, .npy headers, broadcast batch shapes) goes through
 * it, so a shape is accepted or refused the same way whatever the order of its axes. */
#ifndef TSR_BASE_SHAPE_H
#define TSR_BASE_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The element count of dims[0..n) into *count (0 when any dimension is 0). The rule: the product
 * of the non-zero dimensions, times item_bytes (>= 1), must not pass INT64_MAX. Zeros are left
 * out of the product, so a zero-size shape with huge other dimensions is refused like the same
 * shape without the zero, and every partial product (each stride and byte offset of a packed
 * layout, in any axis order) fits in int64. False, *count untouched, on a negative dimension or a
 * product past the limit. */
bool tsri_dims_count(const int64_t *dims, int n, int64_t item_bytes, int64_t *count);

/* Packed row-major strides (in elements) of a shape tsri_dims_count accepted. */
void tsri_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides);
/* "[4, 3]", for messages. */
const char *tsri_shape_str(const int64_t *shape, int ndim, char *buf, size_t len);

#endif
