#include "transient/core/csv_table.h"

#include <csv.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "transient/core/atomic_file.h"
#include "transient/core/bounds.h"
#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient {
namespace {

struct ParseState {
  int line = 0;      // line currently fed to the parser
  int row_line = 0;  // line where the row being assembled started
  std::vector<std::string> fields;
  std::vector<CsvRow> rows;
};

void on_field(void* bytes, size_t length, void* data) {
  auto* state = static_cast<ParseState*>(data);
  if (state->fields.empty()) state->row_line = state->line;
  state->fields.emplace_back(bytes ? static_cast<const char*>(bytes) : "", bytes ? length : 0);
}

void on_row(int /*terminator*/, void* data) {
  auto* state = static_cast<ParseState*>(data);
  state->rows.push_back(CsvRow{state->row_line, std::move(state->fields)});
  state->fields.clear();
}

std::string quoted_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += ", ";
    out += "\"" + item + "\"";
  }
  return out;
}

}  // namespace

std::optional<double> parse_number(const std::string& text) {
  const char* begin = text.c_str();
  while (*begin == ' ' || *begin == '\t') ++begin;
  if (*begin == '\0') return std::nullopt;
  // Decimal only: strtod would read "0x10" as 16 and "0x1p-1" as 0.5.
  const std::size_t length = decimal_number_length(begin);
  if (length == 0) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (end != begin + length) return std::nullopt;
  while (*end == ' ' || *end == '\t') ++end;
  if (*end != '\0' || errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  return value;
}

CsvTable CsvTable::read_file(const std::string& path, char delimiter) {
  return parse(transient::read_file(path), path, delimiter);
}

CsvTable CsvTable::parse(const std::string& text, const std::string& name, char delimiter) {
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0)
    throw std::bad_alloc();
  csv_set_delim(&parser, static_cast<unsigned char>(delimiter));
  ParseState state;
  std::size_t pos = 0;
  // A UTF-8 byte order mark is not part of the first column's name.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) pos = 3;
  bool ok = true;
  while (pos < text.size() && ok) {
    std::size_t end = text.find('\n', pos);
    end = end == std::string::npos ? text.size() : end + 1;
    ++state.line;
    const std::size_t fed =
        csv_parse(&parser, text.data() + pos, end - pos, on_field, on_row, &state);
    ok = fed == end - pos;
    pos = end;
  }
  if (ok) ok = csv_fini(&parser, on_field, on_row, &state) == 0;
  const std::string problem = ok ? "" : csv_strerror(csv_error(&parser));
  csv_free(&parser);
  if (!ok) throw InputError(name, state.line, "malformed CSV: " + problem);

  CsvTable table;
  table.name_ = name;
  auto& rows = state.rows;
  if (rows.empty()) throw InputError(name, 0, "the file is empty; expected a header row and data");
  table.header_ = std::move(rows.front().fields);
  table.header_line_ = rows.front().line;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].fields.size() != table.header_.size()) {
      throw InputError(name, rows[i].line,
                       "expected " + std::to_string(table.header_.size()) +
                           " fields as in the header (" + quoted_list(table.header_) + "), found " +
                           std::to_string(rows[i].fields.size()));
    }
    table.rows_.push_back(std::move(rows[i]));
  }
  return table;
}

std::optional<int> CsvTable::find_column(const std::string& column) const {
  for (std::size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == column) return static_cast<int>(i);
  }
  return std::nullopt;
}

int CsvTable::require_column(const std::vector<std::string>& candidates) const {
  for (const auto& candidate : candidates) {
    if (auto index = find_column(candidate)) return *index;
  }
  throw InputError(
      name_, header_line_,
      "missing column " + quoted_list(candidates) + "; the header has " + quoted_list(header_));
}

double CsvTable::number(const CsvRow& row, int column) const {
  const std::string& field = row.fields.at(column);
  if (auto value = parse_number(field)) return *value;
  fail(row, "column \"" + header_.at(column) + "\": \"" + field + "\" is not a number");
}

double CsvTable::number(const CsvRow& row, int column, const Bound& bound) const {
  const double value = number(row, column);
  if (!bound.contains(value)) {
    fail(row, "column \"" + header_.at(column) + "\": " + row.fields.at(column) +
                  " is out of range; accepted: " + bound.accepted());
  }
  return value;
}

const std::string& CsvTable::text(const CsvRow& row, int column) const {
  const std::string& field = row.fields.at(column);
  if (field.empty()) fail(row, "column \"" + header_.at(column) + "\" is empty");
  return field;
}

void CsvTable::fail(const CsvRow& row, const std::string& message) const {
  throw InputError(name_, row.line, message);
}

}  // namespace transient
