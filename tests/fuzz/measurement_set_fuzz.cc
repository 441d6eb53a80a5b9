// Measurement sets (a folder tree, perf/measurement_set). The input is a little archive so that
// the fuzzer can build folders: lines "@@ NAME" start a file called NAME (letters, digits and
// "._-/" only, no ".."), the lines after it are its content; bytes before the first such line
// go to "table.csv". E.g. "@@ job/job.json\n{...}\n@@ job/steps.csv\nstep,worker,...\n".
#include <map>

#include "fuzz_input.h"
#include "transient/perf/measurement_set.h"

namespace {

bool safe_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name.front() == '/' || name.front() == '.' ||
      name.find("..") != std::string::npos || name.find("//") != std::string::npos ||
      name.back() == '/') {
    return false;
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == '/';
    if (!ok) return false;
  }
  return true;
}

// NAME -> content, from the archive text.
std::map<std::string, std::string> unpack(const std::string& text) {
  std::map<std::string, std::string> files;
  std::string current = "table.csv";
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    if (line.rfind("@@ ", 0) == 0) {
      current = line.substr(3);
      if (!safe_name(current)) current = "table.csv";
      files[current];
      continue;
    }
    files[current] += line + (last ? "" : "\n");
  }
  return files;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  const fs::path dir = transient::fuzz::scratch_dir() / "measurements";
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  fs::create_directories(dir);
  for (const auto& [name, content] : unpack(transient::fuzz::as_text(data, size))) {
    fs::create_directories((dir / name).parent_path(), ignored);
    if (ignored) return 0;  // a name that is also a folder's: nothing to read
    std::ofstream(dir / name, std::ios::binary) << content;
  }
  transient::fuzz::accept_or_input_error([&] { transient::perf::read_measurements(dir.string()); });
  fs::remove_all(dir, ignored);
  return 0;
}
