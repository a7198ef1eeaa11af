// string_c_api.cpp: STRING tensors through the C API (see onyx_c_api.h).
#include "api/c_api_internal.h"
#include "core/string_tensor.h"

using onyx::runtime::Status;
using onyx::runtime::capi::guarded;
using onyx::runtime::capi::null_arg;

extern "C" {

OnyxStatus* onyx_tensor_create_strings(const char* const* strings, const size_t* lengths, const int64_t* dims,
                                       size_t rank, OnyxTensor** out) {
  return guarded([&] {
    if (!out || (rank && !dims)) return null_arg("onyx_tensor_create_strings", "argument");
    onyx::runtime::Shape shape(dims, dims + rank);
    auto count = onyx::runtime::checked_element_count(shape);
    if (!count) return onyx::runtime::invalid_argument("onyx_tensor_create_strings: negative or overflowing dims");
    if (*count && !strings) return null_arg("onyx_tensor_create_strings", "strings");
    std::vector<std::string> values;
    for (int64_t k = 0; k < *count; ++k) {
      if (!strings[k]) return null_arg("onyx_tensor_create_strings", "string");
      values.emplace_back(strings[k], lengths ? lengths[k] : std::strlen(strings[k]));
    }
    onyx::runtime::Tensor t = onyx::runtime::make_string_tensor(std::move(shape), std::move(values));
    ONYX_RETURN_IF_ERROR(onyx::runtime::check_utf8(t, "onyx_tensor_create_strings"));
    *out = new OnyxTensor{t};
    return Status();
  });
}

OnyxStatus* onyx_tensor_string(const OnyxTensor* tensor, int64_t index, const char** data, size_t* length) {
  return guarded([&] {
    if (!tensor || !data || !length) return null_arg("onyx_tensor_string", "argument");
    std::span<const std::string> strings = onyx::runtime::strings_of(tensor->tensor);
    if (tensor->tensor.dtype() != ONYX_DTYPE_STRING)
      return onyx::runtime::invalid_argument(std::string("onyx_tensor_string: the tensor is ") +
                                             onyx::runtime::dtype_name(tensor->tensor.dtype()) + ", not string");
    if (index < 0 || size_t(index) >= strings.size())
      return onyx::runtime::invalid_argument("onyx_tensor_string: index " + std::to_string(index) +
                                             " is out of range for " + std::to_string(strings.size()) + " elements");
    *data = strings[size_t(index)].c_str();
    *length = strings[size_t(index)].size();
    return Status();
  });
}

}  // extern "C"
