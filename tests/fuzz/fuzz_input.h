// What every fuzz target shares: the bytes as text or as a file, and the one rule a parser must
// keep, that bad input ends in success or transient::InputError and nothing else.
//
// A target's LLVMFuzzerTestOneInput runs a parser through accept_or_input_error(). Any other
// exception is a finding: it is printed with its type and message and the process aborts, which
// libFuzzer reports as a crash with the input saved, and which fails the corpus replay
// (replay_main.cc) under CTest.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>
#include <utility>

#include "transient/core/error.h"

namespace transient::fuzz {

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A folder of this process's own under the system's temporary folder, made on first use and
// removed when the process exits normally.
class ScratchDir {
 public:
  ScratchDir()
      : path_(std::filesystem::temp_directory_path() /
              ("transient_fuzz_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline const std::filesystem::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

// `bytes` written to scratch_dir()/`name` for parsers that take a path; removed when destroyed.
class ScratchFile {
 public:
  ScratchFile(const std::string& name, const std::string& bytes) : path_(scratch_dir() / name) {
    std::filesystem::create_directories(path_.parent_path());
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes;
  }
  ~ScratchFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

[[noreturn]] inline void finding(const char* kind, const char* what) {
  std::fprintf(stderr, "fuzz finding: %s escaped the parser: %s\n", kind, what);
  std::abort();
}

// What a parser that never throws accepts: no exception at all (no code throws this type).
struct NothingThrown {};

// Runs `parse`; an exception of type `Accepted` is an accepted outcome (the parser's way of
// refusing bad input), anything else that escapes is a finding.
template <typename Accepted, typename Parse>
void accept_only(Parse&& parse) {
  try {
    parse();
  } catch (const Accepted&) {
    // Bad input, refused as the parser's contract says.
  } catch (const std::exception& error) {
    finding(typeid(error).name(), error.what());
  } catch (...) {
    finding("a non-standard exception", "");
  }
}

// Runs `parse`; an InputError is an accepted outcome, anything else that escapes is a finding.
template <typename Parse>
void accept_or_input_error(Parse&& parse) {
  accept_only<transient::InputError>(std::forward<Parse>(parse));
}

}  // namespace transient::fuzz
