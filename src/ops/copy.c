/* ops/copy.c — tsr_to_device: a lazy copy onto a device's stream. */
#include "base/discovery.h"
#include "base/status.h"
#include "core/array.h"
#include "core/device.h"
#include "core/stream.h"

tsr_status tsr_to_device(tsr_array **out, tsr_array *a, tsr_device d, tsr_stream *s) {
  if (!out || !a) return tsri_error(TSR_ERR_INVALID, "to_device: %s is NULL", out ? "a" : "out");
  tsr_status status = tsri_device_check(d, "to_device");
  if (status != TSR_OK) return status;
  char name[16];
  if (!tsri_device_usable(d))
    return tsri_error(TSR_ERR_UNSUPPORTED, "to_device: %s has no backend in this build",
                      tsri_device_str(d, name));
  tsr_stream *target = s ? s : tsr_default_stream(d);
  if (!target)
    return tsri_error(TSR_ERR_DEVICE, "to_device: %s has no stream", tsri_device_str(d, name));
  tsri_stream *stream = NULL; /* a freed handle is TSR_ERR_STATE, never read */
  status = tsri_stream_acquire(target, "to_device", &stream);
  if (status != TSR_OK) return status;
  tsr_device on = stream->device;
  tsri_stream_release(stream);
  if (on.type != d.type || on.index != d.index) {
    char on_name[16];
    return tsri_error(TSR_ERR_INVALID, "to_device: the stream is on %s, not %s",
                      tsri_device_str(on, on_name), tsri_device_str(d, name));
  }
  tsr_array *inputs[1] = {a};
  return tsri_node_new(out, TSRI_PRIM_COPY, NULL, 0, a->dtype, a->shape, a->ndim, inputs, 1,
                       target);
}
