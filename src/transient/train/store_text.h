// Text values in a c10d::Store, whose API speaks bytes.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace transient::train {

inline std::vector<std::uint8_t> to_bytes(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

inline std::string to_text(const std::vector<std::uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

inline void set_text(c10d::Store& store, const std::string& key, const std::string& text) {
  store.set(key, to_bytes(text));
}

inline std::string get_text(c10d::Store& store, const std::string& key) {
  return to_text(store.get(key));
}

}  // namespace transient::train
