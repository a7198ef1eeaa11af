// string_tensor.h: STRING tensors in host memory. Their elements are
// std::string (UTF-8, as ONNX requires), kept in a vector the tensor owns;
// Tensor::data_as<std::string>() reads them, Tensor::bytes() is 0 and
// clone() does not copy them (ir/graph.h). Host only: the ABI carries no
// string tensor to a provider (onyx_provider.h).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace onyx::runtime {

// A STRING tensor of `dims` holding `strings` (one per element; missing
// trailing elements are "").
Tensor make_string_tensor(Shape dims, std::vector<std::string> strings);

// The elements of a STRING tensor (empty for other types).
std::span<const std::string> strings_of(const Tensor& t);

// OK when every element of a STRING tensor is valid UTF-8; otherwise an
// INVALID_ARGUMENT naming `what`, the element and the byte offset.
Status check_utf8(const Tensor& t, const std::string& what);
// The same for one string: the offset of the first invalid byte, or npos.
size_t invalid_utf8_offset(std::string_view s);

}  // namespace onyx::runtime
