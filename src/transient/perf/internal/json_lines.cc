#include "transient/perf/internal/json_lines.h"

#include <algorithm>
#include <cctype>

namespace transient::perf::internal {

std::size_t json_key_offset(const std::string& text, const std::string& key, std::size_t from) {
  const std::string quoted = "\"" + key + "\"";
  for (std::size_t at = text.find(quoted, from); at != std::string::npos;
       at = text.find(quoted, at + 1)) {
    std::size_t next = at + quoted.size();
    while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next]))) ++next;
    if (next < text.size() && text[next] == ':') return at;
  }
  return std::string::npos;
}

int json_key_line(const std::string& text, const std::string& key, std::size_t from) {
  const std::size_t at = json_key_offset(text, key, from);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

}  // namespace transient::perf::internal
