/* Compiled with -std=c99 -Wpedantic -Werror: proves the ABI headers are C99. */
#include "onyx_collectives.h"
#include "onyx_optimizer.h"
#include "onyx_provider.h"

static const OnyxPluginEntry* probe(void) { return 0; }
int onyx_c99_check(void);
int onyx_c99_check(void) {
  OnyxNodeClaim claim = {sizeof(OnyxNodeClaim), false, 0, {0}};
  OnyxOptimizerEntry optimizer = {ONYX_OPTIMIZER_MAGIC, sizeof(OnyxOptimizerEntry), 0, 0, "x", "1",
                                  0, 0, 0, 0, "", 0, 0};
  size_t sizes = ONYX_PROVIDER_API_SIZE_1_0 + ONYX_PROVIDER_API_SIZE_1_2 + ONYX_PLUGIN_ENTRY_SIZE_1_0 + ONYX_OPTIMIZER_ENTRY_SIZE_1_0 +
                 onyx_dtype_size(ONYX_DTYPE_INT2) + onyx_dtype_storage_bytes(ONYX_DTYPE_INT2, 5) +
                 ONYX_COLLECTIVES_API_SIZE_1_0 + ONYX_COLLECTIVES_API_SIZE_1_1 + (size_t)ONYX_PEER_EXITED +
                 ONYX_COLLECTIVES_ENTRY_SIZE_1_0 + ONYX_COLLECTIVES_CREATE_ARGS_SIZE_1_0;
  return (int)claim.struct_size + (probe() == 0) + ONYX_HAS_FIELD(&claim, OnyxNodeClaim, reason) +
         (int)optimizer.struct_size + (int)sizes + (onyx_dtype_name(ONYX_DTYPE_FLOAT8E8M0) != NULL);
}
