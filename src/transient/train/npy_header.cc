#include "transient/train/npy_header.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "transient/core/error.h"

namespace transient::train {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// The header's dictionary text, read left to right ("{'descr': '<f4', 'fortran_order': False,
// 'shape': (60000, 28, 28), }"); every refusal names the file.
class HeaderText {
 public:
  HeaderText(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  [[noreturn]] void refuse(const std::string& what) const {
    throw InputError(path_, 0, "its .npy header " + what);
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n')) ++at_;
  }
  bool next_is(char c) {
    skip_space();
    return at_ < text_.size() && text_[at_] == c;
  }
  void expect(char c, const char* where) {
    if (!next_is(c)) refuse(std::string("has no '") + c + "' " + where);
    ++at_;
  }
  bool at_end() {
    skip_space();
    return at_ == text_.size();
  }
  // A quoted string ('...' or "..."), without its quotes.
  std::string quoted(const char* what) {
    skip_space();
    const char quote = at_ < text_.size() ? text_[at_] : '\0';
    if (quote != '\'' && quote != '"') refuse(std::string("has no quoted ") + what);
    const auto end = text_.find(quote, at_ + 1);
    if (end == std::string_view::npos) refuse(std::string("has an unclosed ") + what);
    std::string value(text_.substr(at_ + 1, end - at_ - 1));
    at_ = end + 1;
    return value;
  }
  // A bare word (True, False).
  std::string word() {
    skip_space();
    const std::size_t begin = at_;
    while (at_ < text_.size() && std::isalpha(static_cast<unsigned char>(text_[at_]))) ++at_;
    return std::string(text_.substr(begin, at_ - begin));
  }
  // A whole number of at most 18 digits (so that it fits an int64), or -1 when none is here.
  std::int64_t whole_number() {
    skip_space();
    const std::size_t begin = at_;
    std::int64_t value = 0;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_])) &&
           at_ - begin < 18) {
      value = value * 10 + (text_[at_] - '0');
      ++at_;
    }
    if (at_ == begin ||
        (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_])))) {
      return -1;
    }
    return value;
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
  const std::string& path_;
};

// descr: '<f4', '|u1', '<i8' ... (byte order, kind, bytes per element): numbers only (boolean,
// integer, floating point, complex), not strings, dates or objects, whose sizes count otherwise.
void read_descr(const std::string& descr, NpyHeader& h, const HeaderText& text) {
  const bool sized = descr.size() >= 3 && descr.size() <= 4 &&
                     std::string_view("biufc").find(descr[1]) != std::string_view::npos &&
                     std::isdigit(static_cast<unsigned char>(descr[2])) &&
                     (descr.size() == 3 || std::isdigit(static_cast<unsigned char>(descr[3])));
  if (!sized) {
    text.refuse("has element type '" + descr +
                "'; accepted: a plain number type such as '<f4' or '|u1'");
  }
  if (descr[0] != '<' && descr[0] != '|') {
    text.refuse("has element type '" + descr +
                "'; accepted: little-endian ('<') or single-byte ('|') elements");
  }
  h.kind = descr[1];
  h.item_bytes = std::stoi(descr.substr(2));
  if (h.item_bytes < 1 || h.item_bytes > 16) {
    text.refuse("has element type '" + descr + "'; accepted: 1 to 16 bytes per element");
  }
}

// shape: (), (N,), (N, H, W) ...
void read_shape(HeaderText& text, NpyHeader& h) {
  text.expect('(', "opening the shape");
  while (!text.next_is(')')) {
    const std::int64_t d = text.whole_number();
    if (d < 0) text.refuse("has a shape that is not a tuple of whole numbers");
    h.shape.push_back(d);
    if (text.next_is(',')) {
      text.expect(',', "");
    } else if (!text.next_is(')')) {
      text.refuse("has a shape that is not a tuple of whole numbers");
    }
  }
  text.expect(')', "closing the shape");
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  }
  return out + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

NpyHeader parse_npy_header(std::string_view start, std::int64_t file_bytes,
                           const std::string& path) {
  if (start.size() < 10 || start.substr(0, kMagic.size()) != kMagic) {
    throw InputError(path, 0, "not a NumPy .npy file (no \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(start[6]);
  if (major < 1 || major > 3) {
    throw InputError(path, 0,
                     "is .npy format version " + std::to_string(major) + "." +
                         std::to_string(static_cast<unsigned char>(start[7])) +
                         "; accepted: 1, 2 and 3");
  }
  const std::size_t prefix = major == 1 ? 10 : 12;
  if (start.size() < prefix) throw InputError(path, 0, "a .npy header cut short");
  std::int64_t length = 0;
  for (std::size_t i = prefix - 1; i >= 8; --i) {
    length = length * 256 + static_cast<unsigned char>(start[i]);
  }
  if (length <= 0 || length > kMaxNpyHeaderBytes) {
    throw InputError(
        path, 0,
        "a damaged .npy header (its length field says " + std::to_string(length) + " bytes)");
  }
  if (start.size() < prefix + static_cast<std::size_t>(length)) {
    throw InputError(path, 0, "a .npy header cut short");
  }
  NpyHeader h;
  h.data_offset = static_cast<std::int64_t>(prefix) + length;

  HeaderText text(start.substr(prefix, static_cast<std::size_t>(length)), path);
  bool descr = false, order = false, shape = false;
  text.expect('{', "opening its dictionary");
  while (!text.next_is('}')) {
    if (text.at_end()) text.refuse("has no '}' closing its dictionary");
    const std::string key = text.quoted("key");
    text.expect(':', ("after '" + key + "'").c_str());
    bool* seen = key == "descr"           ? &descr
                 : key == "fortran_order" ? &order
                 : key == "shape"         ? &shape
                                          : nullptr;
    if (seen == nullptr) {
      text.refuse("has the key '" + key + "'; accepted: 'descr', 'fortran_order' and 'shape'");
    }
    if (*seen) text.refuse("has '" + key + "' twice");
    *seen = true;
    if (key == "descr") {
      read_descr(text.quoted("element type"), h, text);
    } else if (key == "fortran_order") {
      const std::string value = text.word();
      if (value == "True") {
        throw InputError(path, 0, "is in Fortran order; accepted: C order (numpy's default)");
      }
      if (value != "False") text.refuse("has fortran_order '" + value + "'; accepted: True, False");
    } else {
      read_shape(text, h);
    }
    if (!text.next_is('}') && !text.at_end()) text.expect(',', "between its entries");
  }
  text.expect('}', "closing its dictionary");
  if (!text.at_end()) text.refuse("has text after its dictionary");
  for (const auto& [has, key] :
       {std::pair{descr, "descr"}, {order, "fortran_order"}, {shape, "shape"}}) {
    if (!has) text.refuse(std::string("has no '") + key + "'");
  }

  // The data must be the rest of the file, exactly: elements x item bytes, without overflow.
  const std::int64_t data_bytes = file_bytes - h.data_offset;
  const std::int64_t most = data_bytes >= 0 ? data_bytes / h.item_bytes : 0;
  const bool empty = std::find(h.shape.begin(), h.shape.end(), 0) != h.shape.end();
  for (const auto d : h.shape) {
    if (empty) {
      h.elements = 0;
      break;
    }
    if (h.elements > most / d) {
      throw InputError(path, 0,
                       "holds " + std::to_string(std::max<std::int64_t>(data_bytes, 0)) +
                           " bytes of data; its header's shape " + shape_text(h.shape) +
                           " needs more");
    }
    h.elements *= d;
  }
  if (h.elements * h.item_bytes != data_bytes) {
    throw InputError(path, 0,
                     "holds " + std::to_string(std::max<std::int64_t>(data_bytes, 0)) +
                         " bytes of data; its header says " + std::to_string(h.elements) +
                         " elements of " + std::to_string(h.item_bytes) + " bytes, shape " +
                         shape_text(h.shape));
  }
  return h;
}

NpyHeader read_npy_header(const std::string& path, const std::string& layout) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    // A FIFO would hold the open below until something writes to it; a device never ends.
    throw InputError(path, 0, "not a regular file; --data-dir must hold " + layout);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "missing; --data-dir must hold " + layout);
  const auto file_bytes = std::filesystem::file_size(path, error);
  if (error) throw InputError(path, 0, "cannot be read: " + error.message());
  // The header, at most: the preamble and the longest header accepted.
  std::string start(
      static_cast<std::size_t>(std::min<std::uintmax_t>(file_bytes, 12 + kMaxNpyHeaderBytes)),
      '\0');
  in.read(start.data(), static_cast<std::streamsize>(start.size()));
  start.resize(static_cast<std::size_t>(in.gcount()));
  return parse_npy_header(start, static_cast<std::int64_t>(file_bytes), path);
}

}  // namespace transient::train
