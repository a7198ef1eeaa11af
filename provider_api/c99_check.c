/* Compiled with -std=c99 -Wpedantic -Werror: proves the ABI header is C99. */
#include "onyx_provider.h"

static const OnyxPluginEntry* probe(void) { return 0; }
int onyx_c99_check(void);
int onyx_c99_check(void) {
  OnyxNodeClaim claim = {sizeof(OnyxNodeClaim), false, 0, {0}};
  return (int)claim.struct_size + (probe() == 0) + ONYX_HAS_FIELD(&claim, OnyxNodeClaim, reason);
}
