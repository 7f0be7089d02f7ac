/* core/primitive.h — the one list of primitives a graph node can name. An op (src/ops/) builds
 * the node; a backend (src/cpu/, src/cuda/) runs it through its kernel table indexed by this
 * enum. Adding a primitive touches this list, its op and each backend's table. */
#ifndef TSR_CORE_PRIMITIVE_H
#define TSR_CORE_PRIMITIVE_H

/* X(enum suffix, name used in messages) */
#define TSRI_PRIMITIVE_LIST(X) \
  X(DATA, "data")              \
  X(ADD, "add")                \
  X(COPY, "copy")

typedef enum {
#define TSRI_PRIMITIVE_ENUM(e, name) TSRI_PRIM_##e,
  TSRI_PRIMITIVE_LIST(TSRI_PRIMITIVE_ENUM)
#undef TSRI_PRIMITIVE_ENUM
      TSRI_PRIM_COUNT
} tsri_primitive;

const char *tsri_primitive_name(tsri_primitive p);

/* Parameters of a node's primitive; each op uses its own member. Plain data, copied into the
 * node at construction. */
typedef union {
  unsigned char raw[64];
} tsri_params;

#endif
