// search_dirs.h: where plugins of one kind (providers, optimizers) are looked
// for, in order: the caller's folders, the colon-separated folders of an
// environment variable, the executable's folder, <exe>/../lib/onyx/<kind>, and
// <folder of libonyx>/onyx/<kind>.
#pragma once

#include <string>
#include <vector>

namespace onyx::runtime {

// Thread-safe; reads the environment and the executable's path on each call.
std::vector<std::string> plugin_search_dirs(std::vector<std::string> extra_dirs, const char* env_var,
                                            const char* kind_folder);

}  // namespace onyx::runtime
