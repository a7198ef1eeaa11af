// npy.cpp: NumPy .npy files as tensors (the header is parsed in npy_layout.cpp).
#include <cstring>

#include "command.h"
#include "npy_layout.h"
#include "tensor_io.h"

namespace onyx::cli {

LoadedTensor npy_from_bytes(const std::string& bytes, const std::string& path) {
  const NpyLayout layout = parse_npy_layout(bytes, "tensor file '" + path + "'");
  onyx::Tensor tensor = onyx::Tensor::zeros(OnyxDataType(layout.dtype), layout.dims);
  if (layout.data_bytes) std::memcpy(tensor.data<void>(), bytes.data() + layout.data_offset, layout.data_bytes);
  return {"", std::move(tensor)};
}

LoadedTensor read_npy_file(const std::string& path) { return npy_from_bytes(read_tensor_bytes(path), path); }

void write_npy_file(const std::string& path, onyx::Tensor& tensor) {
  const std::vector<int64_t> dims = tensor.shape();
  std::string shape = "(";
  for (size_t k = 0; k < dims.size(); ++k) shape += (k ? ", " : "") + std::to_string(dims[k]);
  if (dims.size() == 1) shape += ",";  // Python's one-element tuple: (3,)
  shape += ")";
  std::string header = "{'descr': '" + npy_descr_for(tensor.dtype()) + "', 'fortran_order': False, 'shape': " +
                       shape + ", }";
  // Pad so that magic + version + length + header is a multiple of 64 bytes
  // (numpy aligns the data that way), ending with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 0xFFFF) throw CliError("cannot write '" + path + "': .npy header too long");

  std::string bytes = "\x93NUMPY";
  bytes += char(1);
  bytes += char(0);
  bytes += char(header.size() & 0xFF);
  bytes += char(header.size() >> 8);
  bytes += header;
  if (tensor.byte_size()) bytes.append(static_cast<const char*>(tensor.data<void>()), tensor.byte_size());
  write_file_atomically(path, bytes);
}

}  // namespace onyx::cli
