// npy_layout.h: the header of a NumPy .npy file, parsed from the file's bytes
// without the runtime (so that tests/fuzz can fuzz it alone). npy.cpp turns
// the layout into a tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace onyx::cli {

struct NpyLayout {
  int32_t dtype = 0;  // an OnyxDataType
  std::vector<int64_t> dims;
  size_t data_offset = 0;  // where the data starts; exactly the bytes dtype and dims need follow
  size_t data_bytes = 0;
};

// Parses and checks a whole .npy file's bytes: magic, version, header dict,
// dtype, shape, and that the data that follows has exactly the size the shape
// needs. Throws CliError starting with `where`.
NpyLayout parse_npy_layout(const std::string& bytes, const std::string& where);

// The .npy descr ('<f4', '|u1', ...) of an OnyxDataType; throws CliError for
// types .npy cannot hold.
std::string npy_descr_for(int32_t dtype);

}  // namespace onyx::cli
