// Typed, checked access to a model's text parameters. Every value that is read is marked used;
// finish() rejects the rest, so a misspelt parameter is an error, not silently ignored. Errors
// are InputErrors located where the parameters were written (ModelParams::file and line).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "transient/market/registry.h"

namespace transient::market::internal {

class ParamReader {
 public:
  // `accepted` lists the model's parameter names, for messages.
  ParamReader(std::string model, const ModelParams& params, std::vector<std::string> accepted);

  bool has(const std::string& key) const;
  // The text of `key`, or `fallback` when absent.
  std::string text(const std::string& key, const std::string& fallback = "");
  // A duration in seconds (parse_duration_s forms); "none" or "never" gives kNever when
  // `allow_never`.
  double duration_s(const std::string& key, double fallback, bool allow_never = false);
  // A finite number in [lo, hi].
  double number(const std::string& key, double fallback, double lo, double hi);

  // An InputError about parameter `key` (or the model as a whole when `key` is empty).
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  // Throws InputError if a parameter was given that no call above read.
  void finish() const;

 private:
  std::string model_;
  const ModelParams& params_;
  std::vector<std::string> accepted_;
  std::set<std::string> used_;
};

}  // namespace transient::market::internal
