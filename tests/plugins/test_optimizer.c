/* test_optimizer.c: broken optimizer plugins for the loader tests, one per
 * compile definition; each must be refused with a message that says why:
 *   TEST_OPTIMIZER_WRONG_MAGIC  the entry carries a provider's magic
 *   TEST_OPTIMIZER_TRUNCATED    struct_size stops before update_function
 *   TEST_OPTIMIZER_MAJOR_TWO    speaks only optimizer ABI 2.0 to 2.1
 *   TEST_OPTIMIZER_SLOT_COUNT   declares 2^40 slots for its array of one
 * Apart from that the entry is a valid plain-SGD optimizer. */
#include <onyx_optimizer.h>
#include <onyx_provider.h>

#if defined(TEST_OPTIMIZER_WRONG_MAGIC)
#define TEST_MAGIC ONYX_PLUGIN_MAGIC
#else
#define TEST_MAGIC ONYX_OPTIMIZER_MAGIC
#endif

#if defined(TEST_OPTIMIZER_TRUNCATED)
#define TEST_SIZE offsetof(OnyxOptimizerEntry, update_function)
#else
#define TEST_SIZE sizeof(OnyxOptimizerEntry)
#endif

#if defined(TEST_OPTIMIZER_MAJOR_TWO)
#define TEST_MIN_ABI ONYX_OPTIMIZER_ABI_VERSION(2, 0)
#define TEST_MAX_ABI ONYX_OPTIMIZER_ABI_VERSION(2, 1)
#else
#define TEST_MIN_ABI ONYX_OPTIMIZER_ABI_VERSION(1, 0)
#define TEST_MAX_ABI ONYX_OPTIMIZER_ABI_VERSION(1, 0)
#endif

static const char kUpdate[] =
    "<domain: \"ai.onyx.test\", opset_import: [\"\" : 17]>\n"
    "PlainSGD (param, grad, lr, step) => (new_param)\n"
    "{\n"
    "  delta = Mul (lr, grad)\n"
    "  new_param = Sub (param, delta)\n"
    "}\n";

#if defined(TEST_OPTIMIZER_SLOT_COUNT)
static const OnyxOptimizerSlot kSlots[] = {{sizeof(OnyxOptimizerSlot), "m", 0.0f}};
#define TEST_SLOTS (size_t)1 << 40, kSlots
#else
#define TEST_SLOTS 0, 0
#endif

static const OnyxOptimizerEntry kEntry = {
    TEST_MAGIC, TEST_SIZE, TEST_MIN_ABI, TEST_MAX_ABI, TEST_OPTIMIZER_NAME, "test", TEST_SLOTS, 0, 0, kUpdate, 0, 0,
};

ONYX_OPTIMIZER_EXPORT const OnyxOptimizerEntry* OnyxGetOptimizerEntry(void) { return &kEntry; }
