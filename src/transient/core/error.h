// The project's error policy (docs/errors.md) in code.
//
// - InputError: bad input from a user (a file, a flag, a trace). Carries where (file and line,
//   when there is one) and what would be accepted. The CLI prints `error: <what()>` and exits 2.
// - CheckFailure: a broken invariant, i.e. a bug. Raised by TRANSIENT_CHECK* with both values.
//
// Expected outcomes (an infeasible plan, a missed deadline) are values, never exceptions.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace transient {

class InputError : public std::runtime_error {
 public:
  // A problem not tied to a file (a flag, an argument).
  explicit InputError(const std::string& message);
  // A problem at `line` (1-based; 0 = the whole file) of `file`.
  InputError(const std::string& file, int line, const std::string& message);

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_ = 0;
  std::string message_;
};

class CheckFailure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace internal {
[[noreturn]] void check_failed(const char* file, int line, const std::string& what);

template <typename A, typename B>
std::string describe_pair(const char* a_text, const A& a, const char* op, const char* b_text,
                          const B& b) {
  std::ostringstream out;
  out << a_text << " " << op << " " << b_text << " (" << a << " vs " << b << ")";
  return out.str();
}
}  // namespace internal

}  // namespace transient

#define TRANSIENT_CHECK(cond)                                                    \
  do {                                                                           \
    if (!(cond)) ::transient::internal::check_failed(__FILE__, __LINE__, #cond); \
  } while (0)

#define TRANSIENT_CHECK_OP(a, op, b)                                            \
  do {                                                                          \
    const auto& transient_check_a_ = (a);                                       \
    const auto& transient_check_b_ = (b);                                       \
    if (!(transient_check_a_ op transient_check_b_))                            \
      ::transient::internal::check_failed(                                      \
          __FILE__, __LINE__,                                                   \
          ::transient::internal::describe_pair(#a, transient_check_a_, #op, #b, \
                                               transient_check_b_));            \
  } while (0)

#define TRANSIENT_CHECK_EQ(a, b) TRANSIENT_CHECK_OP(a, ==, b)
#define TRANSIENT_CHECK_NE(a, b) TRANSIENT_CHECK_OP(a, !=, b)
#define TRANSIENT_CHECK_LT(a, b) TRANSIENT_CHECK_OP(a, <, b)
#define TRANSIENT_CHECK_LE(a, b) TRANSIENT_CHECK_OP(a, <=, b)
#define TRANSIENT_CHECK_GT(a, b) TRANSIENT_CHECK_OP(a, >, b)
#define TRANSIENT_CHECK_GE(a, b) TRANSIENT_CHECK_OP(a, >=, b)
