// shape_util.h: helpers shared by the CPU provider's shape and data-movement
// kernel files (shape/, cast.cpp, tensor_make.cpp, trilu.cpp, non_zero.cpp,
// top_k.cpp, cumulative.cpp). Most of these ops only move
// elements, so they work on element sizes, not element types.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernel_util.h"

namespace onyx::cpu::shape {

// A trivially copyable element of `Size` bytes.
template <size_t Size>
struct Element {
  unsigned char bytes[Size];
};

// Calls fn(E{}) with an element type of `size` bytes (1, 2, 4, 8 or 16);
// false for other sizes.
template <typename Fn>
bool visit_size(size_t size, Fn&& fn) {
  switch (size) {
    case 1: fn(uint8_t{}); return true;
    case 2: fn(uint16_t{}); return true;
    case 4: fn(uint32_t{}); return true;
    case 8: fn(uint64_t{}); return true;
    case 16: fn(Element<16>{}); return true;
    default: return false;
  }
}

// "" when the present inputs in `inputs` have a fixed element size (not
// string or 4-bit types), else the reason.
std::string require_sized(const sdk::NodeInfo& node, std::initializer_list<size_t> inputs);

// A KernelDefBuilder check: input k has a fixed element size (require_sized).
inline sdk::DeclineCheck sized_input(size_t k) {
  return [k](const sdk::NodeInfo& node) { return require_sized(node, {k}); };
}

// The types of index inputs (positions, axes, shapes) that may be int32.
inline constexpr sdk::DTypeSet kIndexTypes{ONYX_DTYPE_INT32, ONYX_DTYPE_INT64};
// Those that must be int64.
inline constexpr sdk::DTypeSet kInt64{ONYX_DTYPE_INT64};

// Reads optional input `index` as int64 values; false (and *why set) when
// present with a non-integer type. *present tells whether it was given.
bool read_int_input(sdk::ComputeContext& ctx, size_t index, std::vector<int64_t>* out,
                    bool* present, std::string* why);

// Requests output `k` as a view of input 0 with new dims (the kernel declared
// ONYX_OUTPUT_ALIASES_INPUT): the host normally hands back input 0's own
// buffer; should it hand out another buffer, the bytes are copied.
OnyxStatus* output_alias(sdk::ComputeContext& ctx, size_t k, const sdk::Tensor& x,
                         std::span<const int64_t> dims);

// Declares output 0 an alias of input 0.
inline void declare_alias(std::span<OnyxOutputMemoryInfo> out) {
  if (!out.empty()) {
    out[0].kind = ONYX_OUTPUT_ALIASES_INPUT;
    out[0].input_index = 0;
  }
}

// Bytes of a tensor.
inline size_t byte_size(const sdk::Tensor& t) { return size_t(t.size()) * sdk::dtype_size(t.dtype); }

}  // namespace onyx::cpu::shape
