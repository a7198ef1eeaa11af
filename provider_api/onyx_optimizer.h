/*
 * onyx_optimizer.h: the optimizer plugin C ABI, version 1.0.
 *
 * An optimizer plugin is a shared library (libonyx_optimizer_<name>.so)
 * exporting one symbol, OnyxGetOptimizerEntry, which returns a static,
 * immutable description of the optimizer:
 *  - its per-parameter state slots (each has the parameter's shape and dtype
 *    and starts at a constant, e.g. AdamW's "m" and "v" at 0);
 *  - its hyperparameters with defaults (e.g. "beta1" = 0.9);
 *  - its update, as an ONNX function in ONNX's textual syntax (the format
 *    onnx::OnnxParser reads), with the signature
 *        NAME (param, grad, <slots...>, lr, step, <hyperparameters...>)
 *          => (new_param, <new slots...>)
 *    where lr and step are float32 scalars (step counts updates from 1) and
 *    every hyperparameter is a float32 scalar, in the order declared here.
 *    The host inlines one copy per parameter into an ordinary ONNX optimizer
 *    model, so the update runs on any provider that runs ONNX ops;
 *  - optionally, the (domain, op_type) of a fused kernel with the same
 *    signature that a provider may claim instead of the function body.
 *
 * The plugin links nothing but libc: the whole ABI is static data, so it has
 * no functions to call besides the entry and no threads or state.
 * Standalone C99: only stdint/stddef.
 *
 * Versioning follows the same rules as onyx_provider.h:
 *  - The entry struct starts with the six fields every Onyx plugin entry
 *    starts with: `uint32_t magic` naming the kind of plugin
 *    (ONYX_OPTIMIZER_MAGIC), `uint32_t struct_size`, `uint32_t
 *    min_abi_version`, `uint32_t max_abi_version`, `const char* name`,
 *    `const char* version`. They are frozen across all major versions. A
 *    host accepts a plugin whose [min_abi_version, max_abi_version] range
 *    overlaps its own and refuses one that does not, naming both ranges.
 *  - Every other struct starts with `size_t struct_size`. Structs only grow
 *    at the end; read later fields only when struct_size covers them (the
 *    ONYX_OPTIMIZER_*_SIZE_1_0 constants give the 1.0 sizes).
 */
#ifndef ONYX_OPTIMIZER_H_
#define ONYX_OPTIMIZER_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ONYX_OPTIMIZER_ABI_VERSION_MAJOR 1
#define ONYX_OPTIMIZER_ABI_VERSION_MINOR 0
#define ONYX_OPTIMIZER_ABI_VERSION(major, minor) (((uint32_t)(major) << 16) | (uint32_t)(minor))
/* "OOPT" read as a little-endian uint32 (a provider's entry has "ONYX"). */
#define ONYX_OPTIMIZER_MAGIC 0x54504F4Fu

/* Size of `Type` up to and including `last_field` (as ONYX_STRUCT_SIZE in
 * onyx_provider.h, which this header does not include). */
#define ONYX_OPTIMIZER_STRUCT_SIZE(Type, last_field) \
  (offsetof(Type, last_field) + sizeof(((Type*)0)->last_field))

/* One per-parameter state tensor: same shape and dtype as the parameter,
 * every element initially `initial_value`. */
typedef struct OnyxOptimizerSlot {
  size_t struct_size;
  const char* name; /* "m"; unique within the optimizer, [A-Za-z0-9_] */
  float initial_value;
} OnyxOptimizerSlot;
#define ONYX_OPTIMIZER_SLOT_SIZE_1_0 ONYX_OPTIMIZER_STRUCT_SIZE(OnyxOptimizerSlot, initial_value)

/* One float32 scalar hyperparameter. */
typedef struct OnyxOptimizerHyperparameter {
  size_t struct_size;
  const char* name; /* "beta1"; [A-Za-z0-9_] */
  float default_value;
  const char* help; /* one line for --help texts */
} OnyxOptimizerHyperparameter;
#define ONYX_OPTIMIZER_HYPERPARAMETER_SIZE_1_0 ONYX_OPTIMIZER_STRUCT_SIZE(OnyxOptimizerHyperparameter, help)

/* The static description returned by OnyxGetOptimizerEntry. Every pointer in
 * it points to static storage that lives as long as the library is loaded;
 * the host never writes to or frees any of it. */
typedef struct OnyxOptimizerEntry {
  uint32_t magic;           /* ONYX_OPTIMIZER_MAGIC */
  uint32_t struct_size;     /* sizeof(OnyxOptimizerEntry) as the plugin was built */
  uint32_t min_abi_version; /* oldest ONYX_OPTIMIZER_ABI_VERSION the plugin speaks */
  uint32_t max_abi_version; /* newest (normally the header it was built with) */
  const char* name;         /* "adamw": lowercase, matches the file name */
  const char* version;      /* the plugin's own version, "1.0.0" */
  size_t slot_count;
  const OnyxOptimizerSlot* slots;
  size_t hyperparameter_count;
  const OnyxOptimizerHyperparameter* hyperparameters;
  const char* update_function; /* ONNX text of the update function (see above) */
  /* Optional (NULL: none): a fused op with the update function's signature
   * that providers may implement and claim. */
  const char* fused_op_domain;
  const char* fused_op_type;
} OnyxOptimizerEntry;
#define ONYX_OPTIMIZER_ENTRY_SIZE_1_0 ONYX_OPTIMIZER_STRUCT_SIZE(OnyxOptimizerEntry, fused_op_type)

/* The one exported symbol. Returns a pointer to static data (never NULL).
 * Thread-safe: may be called any number of times from any thread. */
typedef const OnyxOptimizerEntry* (*OnyxGetOptimizerEntryFn)(void);
#define ONYX_OPTIMIZER_ENTRY_SYMBOL "OnyxGetOptimizerEntry"

#if defined(_WIN32)
#define ONYX_OPTIMIZER_EXPORT __declspec(dllexport)
#else
#define ONYX_OPTIMIZER_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ONYX_OPTIMIZER_H_ */
