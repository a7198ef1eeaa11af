#include "plugin/search_dirs.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <boost/dll/runtime_symbol_info.hpp>

namespace onyx::runtime {

std::vector<std::string> plugin_search_dirs(std::vector<std::string> dirs, const char* env_var,
                                            const char* kind_folder) {
  if (const char* env = std::getenv(env_var)) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      if (end > start) dirs.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  boost::dll::fs::error_code ec;
  std::filesystem::path exe_dir = boost::dll::program_location(ec).parent_path().string();
  if (!ec) {
    dirs.push_back(exe_dir.string());
    dirs.push_back((exe_dir / ".." / "lib" / "onyx" / kind_folder).lexically_normal().string());
  }
  // Beside the library this code is in (libonyx): an installed tree or the
  // Python package, whose executable (python3) is elsewhere.
  std::filesystem::path lib_dir = boost::dll::this_line_location(ec).parent_path().string();
  if (!ec) {
    std::string beside = (lib_dir / "onyx" / kind_folder).lexically_normal().string();
    if (std::find(dirs.begin(), dirs.end(), beside) == dirs.end()) dirs.push_back(beside);
  }
  return dirs;
}

}  // namespace onyx::runtime
