// file_util.h: atomic file replacement for the training library's outputs
// (exported models, loss curves): write NAME.tmp, fsync, rename over NAME,
// fsync the folder. A crash leaves the old file or the new one, never half.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace onyx::runtime::training {

Status write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace onyx::runtime::training
