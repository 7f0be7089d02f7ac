/* core/backend.h — how core reaches the kernels without depending on a backend: each backend
 * registers a table of kernels indexed by primitive (core/op.h's tsri_kernel_fn, given a resolved
 * descriptor); core runs a node through the table of its stream's device type. src/backends.c, the
 * one file that knows every backend, registers them. */
#ifndef TSR_CORE_BACKEND_H
#define TSR_CORE_BACKEND_H

#include "core/op.h"
#include "tessera/array.h"

struct tsri_stream_iface;

typedef struct {
  const char *name;
  const struct tsri_stream_iface *streams; /* how its streams run tasks (core/stream.h) */
  tsri_kernel_fn kernels[TSRI_PRIM_COUNT];
  /* Optional (NULL: every kernel in the table runs every node of its primitive): whether the
     backend runs this node, asked at construction with a descriptor whose data pointers are
     NULL (shapes, dtypes and params only). */
  bool (*supports)(const tsri_op *op);
  void (*shutdown)(
      void); /* releases the backend's own threads and state (tsr_shutdown); may be NULL */
} tsri_backend;

/* The backend for a device type, or NULL when this build has none. */
const tsri_backend *tsri_backend_for(tsr_device_type type);
void tsri_backend_register(tsr_device_type type, const tsri_backend *backend);
/* Calls every registered backend's shutdown (tsr_shutdown, after the streams have stopped). */
void tsri_backends_shutdown(void);
/* Defined in src/backends.c: registers every backend this build has. Called once. */
void tsri_register_backends(void);

#endif
