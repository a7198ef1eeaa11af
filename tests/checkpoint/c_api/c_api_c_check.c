/* Compiled as strict C99: the checkpoint C API header is C. */
#include <onyx/onyx_checkpoint_c_api.h>

int onyx_checkpoint_c_api_c_check(void);
int onyx_checkpoint_c_api_c_check(void) {
  OnyxCheckpointTensorInfo info = {.struct_size = sizeof(OnyxCheckpointTensorInfo)};
  OnyxCheckpointProperty property = {.struct_size = sizeof(OnyxCheckpointProperty)};
  OnyxCheckpointLoadOptions options = {.struct_size = sizeof(OnyxCheckpointLoadOptions), .memory_map = true};
  return (int)info.struct_size + (int)property.type + (int)options.memory_map +
         (int)onyx_checkpoint_group_count(0);
}
