#include "transient/core/text.h"

#include <algorithm>
#include <cctype>

namespace transient {

namespace {

// ASCII case folding by arithmetic: std::tolower and std::toupper are a call per character that
// asks the locale (the throughput models fold GPU names some million times in a fit).
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
char upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c; }

}  // namespace

std::string lowercase(std::string text) {
  for (char& c : text) c = lower(c);
  return text;
}

std::string uppercase(std::string text) {
  for (char& c : text) c = upper(c);
  return text;
}

bool same_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string trim(std::string_view text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return std::string(text.substr(begin, end - begin));
}

std::string counted(long long n, std::string_view noun, std::string_view plural) {
  std::string out = std::to_string(n) + " ";
  if (n == 1) return out.append(noun);
  if (!plural.empty()) return out.append(plural);
  return out.append(noun).append("s");
}

std::size_t decimal_number_length(std::string_view text) {
  const auto digits_from = [&](std::size_t at) {
    std::size_t end = at;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
    return end - at;
  };
  std::size_t at = 0;
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
  const std::size_t whole = digits_from(at);
  at += whole;
  std::size_t fraction = 0;
  if (at < text.size() && text[at] == '.') {
    fraction = digits_from(at + 1);
    if (whole + fraction > 0) at += 1 + fraction;
  }
  if (whole + fraction == 0) return 0;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    std::size_t exponent = at + 1;
    if (exponent < text.size() && (text[exponent] == '+' || text[exponent] == '-')) ++exponent;
    const std::size_t exponent_digits = digits_from(exponent);
    if (exponent_digits > 0) at = exponent + exponent_digits;
  }
  return at;
}

std::string printable(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return text;
}

std::string error_reason(std::string_view what) {
  std::string_view text = what;
  if (const auto stack = text.find("\nException raised from "); stack != std::string_view::npos) {
    text = text.substr(0, stack);
  }
  if (text.find("failed in the TorchScript interpreter") != std::string_view::npos) {
    // The last line "SomeError: reason" of the traceback.
    std::string_view reason;
    std::size_t begin = 0;
    while (begin < text.size()) {
      std::size_t end = text.find('\n', begin);
      if (end == std::string_view::npos) end = text.size();
      const std::string_view line = text.substr(begin, end - begin);
      const auto colon = line.find("Error: ");
      if (colon != std::string_view::npos && colon > 0 &&
          line.find(' ') > colon) {  // "RuntimeError: ...", not a code line that says "Error: "
        reason = line.substr(colon + 7);
      }
      begin = end + 1;
    }
    if (!reason.empty()) return trim(reason);
  }
  return trim(text.substr(0, text.find('\n')));
}

std::string shell_word(std::string_view word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("_./:@%+=,-").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(word);
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace transient
