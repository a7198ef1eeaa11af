// file_util.h: the training library's outputs (exported models, artifacts)
// are written through the one atomic writer (onyx/util/atomic_file.h); this
// gives its result as a Status.
#pragma once

#include <onyx/util/atomic_file.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace onyx::runtime::training {

inline Status write_file_atomically(const std::string& path, std::string_view bytes) {
  util::WriteResult written = util::write_file_atomically(path, bytes);
  return written.ok() ? Status() : data_loss(written.message());
}

}  // namespace onyx::runtime::training
