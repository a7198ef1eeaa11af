// arrays.cpp: numpy arrays and torch tensors in, numpy arrays out, without
// copies. Inputs are borrowed for the length of one call (DLPack or the
// buffer protocol); outputs are numpy arrays that own the OnyxTensor.
#include <string>

#include "bindings.h"

namespace onyx::python {

namespace {

using Code = nb::dlpack::dtype_code;

// The Onyx type of an array's DLPack type; 0 when there is none.
int32_t onyx_dtype_of(nb::dlpack::dtype t) {
  if (t.lanes != 1) return 0;
  switch (Code(t.code)) {
    case Code::Float:
      return t.bits == 32 ? ONYX_DTYPE_FLOAT32 : t.bits == 64 ? ONYX_DTYPE_FLOAT64 : t.bits == 16 ? ONYX_DTYPE_FLOAT16 : 0;
    case Code::Int:
      return t.bits == 8 ? ONYX_DTYPE_INT8 : t.bits == 16 ? ONYX_DTYPE_INT16 : t.bits == 32 ? ONYX_DTYPE_INT32
           : t.bits == 64 ? ONYX_DTYPE_INT64 : 0;
    case Code::UInt:
      return t.bits == 8 ? ONYX_DTYPE_UINT8 : t.bits == 16 ? ONYX_DTYPE_UINT16 : t.bits == 32 ? ONYX_DTYPE_UINT32
           : t.bits == 64 ? ONYX_DTYPE_UINT64 : 0;
    case Code::Bool:
      return t.bits == 8 ? ONYX_DTYPE_BOOL : 0;
    case Code::Bfloat:
      return t.bits == 16 ? ONYX_DTYPE_BFLOAT16 : 0;
    case Code::Complex:
      return t.bits == 64 ? ONYX_DTYPE_COMPLEX64 : t.bits == 128 ? ONYX_DTYPE_COMPLEX128 : 0;
    default:
      return 0;
  }
}

// Types numpy lacks travel as unsigned integers of their width.
bool is_raw_view_of(int32_t given, int32_t expected) {
  switch (expected) {
    case ONYX_DTYPE_BFLOAT16:
      return given == ONYX_DTYPE_UINT16;
    case ONYX_DTYPE_FLOAT8E4M3FN: case ONYX_DTYPE_FLOAT8E4M3FNUZ: case ONYX_DTYPE_FLOAT8E5M2:
    case ONYX_DTYPE_FLOAT8E5M2FNUZ: case ONYX_DTYPE_FLOAT8E8M0:
      return given == ONYX_DTYPE_UINT8;
    default:
      return false;
  }
}

nb::dlpack::dtype numpy_dtype_of(int32_t dtype) {
  auto make = [](Code code, int bits) { return nb::dlpack::dtype{uint8_t(code), uint8_t(bits), 1}; };
  switch (dtype) {
    case ONYX_DTYPE_FLOAT32: return make(Code::Float, 32);
    case ONYX_DTYPE_FLOAT64: return make(Code::Float, 64);
    case ONYX_DTYPE_FLOAT16: return make(Code::Float, 16);
    case ONYX_DTYPE_INT8: return make(Code::Int, 8);
    case ONYX_DTYPE_INT16: return make(Code::Int, 16);
    case ONYX_DTYPE_INT32: return make(Code::Int, 32);
    case ONYX_DTYPE_INT64: return make(Code::Int, 64);
    case ONYX_DTYPE_UINT16: case ONYX_DTYPE_BFLOAT16: return make(Code::UInt, 16);
    case ONYX_DTYPE_UINT32: return make(Code::UInt, 32);
    case ONYX_DTYPE_UINT64: return make(Code::UInt, 64);
    case ONYX_DTYPE_BOOL: return make(Code::Bool, 8);
    case ONYX_DTYPE_COMPLEX64: return make(Code::Complex, 64);
    case ONYX_DTYPE_COMPLEX128: return make(Code::Complex, 128);
    default: return make(Code::UInt, 8);  // uint8, the 8-bit floats, packed sub-byte types
  }
}

// The 2- and 4-bit types: numpy holds one element per byte (int8 for the
// signed ones, uint8 for the others); Onyx packs them, lowest bits first.
bool is_signed_packed(int32_t dtype) { return dtype == ONYX_DTYPE_INT4 || dtype == ONYX_DTYPE_INT2; }

TensorPtr pack(const nb::ndarray<nb::ro>& array, int32_t dtype, const std::vector<int64_t>& dims) {
  OnyxTensor* raw = nullptr;
  check(onyx_tensor_create(dtype, dims.data(), dims.size(), &raw));
  TensorPtr tensor(raw);
  const size_t per_byte = onyx_dtype_elements_per_byte(dtype), bits = 8 / per_byte;
  const uint8_t mask = uint8_t((1u << bits) - 1);
  const auto* in = static_cast<const uint8_t*>(array.data());
  auto* out = static_cast<uint8_t*>(onyx_tensor_data(raw));
  for (size_t i = 0; i < array.size(); ++i) out[i / per_byte] |= uint8_t((in[i] & mask) << (bits * (i % per_byte)));
  return tensor;
}

nb::object unpack(OnyxTensor* t, int32_t dtype) {
  const size_t per_byte = onyx_dtype_elements_per_byte(dtype), bits = 8 / per_byte;
  const int64_t* dims = onyx_tensor_dims(t);
  std::vector<size_t> shape(dims, dims + onyx_tensor_rank(t));
  const size_t count = size_t(onyx_tensor_element_count(t));
  auto* values = new uint8_t[count ? count : 1];
  const auto* in = static_cast<const uint8_t*>(onyx_tensor_data(t));
  for (size_t i = 0; i < count; ++i) {
    unsigned v = (in[i / per_byte] >> (bits * (i % per_byte))) & ((1u << bits) - 1);
    if (is_signed_packed(dtype) && (v >> (bits - 1))) v |= ~0u << bits;  // sign-extend
    values[i] = uint8_t(v);
  }
  nb::capsule owner(values, [](void* p) noexcept { delete[] static_cast<uint8_t*>(p); });
  nb::dlpack::dtype type{uint8_t(is_signed_packed(dtype) ? Code::Int : Code::UInt), 8, 1};
  return nb::ndarray<nb::numpy>(values, shape.size(), shape.data(), owner, nullptr, type).cast();
}

}  // namespace

std::string dtype_name(int32_t dtype) {
  const char* name = onyx_dtype_name(dtype);
  return name ? name : "element type " + std::to_string(dtype);
}

std::vector<const OnyxTensor*> BorrowedInputs::raw() const {
  std::vector<const OnyxTensor*> out;
  for (const auto& t : tensors) out.push_back(t.get());
  return out;
}

void borrow_input(BorrowedInputs& inputs, const std::string& name, nb::handle value, int32_t expected) {
  const std::string what = "input '" + name + "'";
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(value, array, /*convert=*/false)) {
    nb::object dtype = nb::getattr(value, "dtype", nb::none());
    std::string kind = dtype.is_none() ? "" : std::string(nb::str(dtype).c_str());
    if (!kind.empty() && (kind[0] == '<' || kind[0] == '|' || kind == "object"))
      throw nb::type_error((what + ": arrays of strings or Python objects (numpy dtype " + kind +
                            ") are not supported yet; Onyx takes numeric arrays").c_str());
    throw nb::type_error((what + ": expected a numpy array (or another object with the buffer protocol or "
                          "DLPack), got " + std::string(nb::str(value.type()).c_str())).c_str());
  }
  if (array.device_type() != nb::device::cpu::value)
    throw nb::value_error((what + ": the array lives on another device; Onyx reads inputs from host memory").c_str());
  int32_t dtype = onyx_dtype_of(array.dtype());
  if (dtype == 0)
    throw nb::type_error((what + ": this array's element type has no Onyx equivalent").c_str());
  if (expected && dtype != expected && is_raw_view_of(dtype, expected)) dtype = expected;
  std::vector<int64_t> dims(array.ndim());
  int64_t contiguous_stride = 1;
  bool contiguous = true;
  for (size_t k = array.ndim(); k-- > 0;) {
    dims[k] = int64_t(array.shape(k));
    if (dims[k] != 1 && array.stride(k) != contiguous_stride) contiguous = false;
    contiguous_stride *= dims[k];
  }
  if (!contiguous && array.size() > 0) {
    std::string strides;
    for (size_t k = 0; k < array.ndim(); ++k) strides += (k ? ", " : "") + std::to_string(array.stride(k));
    throw nb::value_error((what + ": the array is not C-contiguous (element strides " + strides +
                           "); pass numpy.ascontiguousarray(x) or x.contiguous()").c_str());
  }
  if (onyx_dtype_elements_per_byte(expected) &&
      (dtype == ONYX_DTYPE_UINT8 || dtype == ONYX_DTYPE_INT8)) {  // one element per byte in, packed for Onyx
    inputs.tensors.push_back(pack(array, expected, dims));
    inputs.arrays.push_back(std::move(array));
    return;
  }
  OnyxTensor* tensor = nullptr;
  check(onyx_tensor_create_borrowed(dtype, dims.data(), dims.size(), const_cast<void*>(array.data()),
                                    array.nbytes(), &tensor));
  inputs.tensors.emplace_back(tensor);
  inputs.arrays.push_back(std::move(array));
}

nb::object to_numpy(TensorPtr tensor) {
  OnyxTensor* t = tensor.get();
  const int32_t dtype = onyx_tensor_dtype(t);
  if (dtype == ONYX_DTYPE_STRING || onyx_dtype_storage_bytes(dtype, 1) == 0)
    throw nb::type_error(("an output of element type " + dtype_name(dtype) + " cannot become a numpy array yet").c_str());
  if (onyx_dtype_elements_per_byte(dtype)) return unpack(t, dtype);  // `tensor` releases t
  std::vector<size_t> shape;
  const int64_t* dims = onyx_tensor_dims(t);
  for (size_t k = 0; k < onyx_tensor_rank(t); ++k) shape.push_back(size_t(dims[k]));
  nb::capsule owner(tensor.release(), [](void* p) noexcept { onyx_tensor_release(static_cast<OnyxTensor*>(p)); });
  nb::ndarray<nb::numpy> array(onyx_tensor_data(t), shape.size(), shape.data(), owner, nullptr, numpy_dtype_of(dtype));
  return array.cast();
}

}  // namespace onyx::python
