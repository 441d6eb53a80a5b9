// A CSV file read whole into memory, with the line number of every row, so that every bad value
// can be reported as `file:line: column "x": what is wrong; accepted: ...`.
//
// Parsing (quotes, embedded delimiters, CRLF) is done by libcsv; this class adds the header,
// line numbers and typed, validated access. Immutable after construction; safe to share.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace transient {

struct Bound;

struct CsvRow {
  int line = 0;                     // 1-based line in the file where the row starts
  std::vector<std::string> fields;  // as read, surrounding spaces removed
};

class CsvTable {
 public:
  // Reads `path`; the first non-empty row is the header. Throws InputError if the file cannot be
  // read, is empty, or a row has a different number of fields than the header.
  static CsvTable read_file(const std::string& path, char delimiter = ',');
  // The same from text in memory; `name` is used in error messages in place of a path.
  static CsvTable parse(const std::string& text, const std::string& name, char delimiter = ',');

  const std::string& name() const { return name_; }
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<CsvRow>& rows() const { return rows_; }
  int header_line() const { return header_line_; }

  // Index of the column called `column` (exact, case-sensitive), if present.
  std::optional<int> find_column(const std::string& column) const;
  // Index of the first of `candidates` present; throws InputError listing them otherwise.
  int require_column(const std::vector<std::string>& candidates) const;

  // Field `column` of `row` as a finite number; throws InputError naming file, line and column.
  double number(const CsvRow& row, int column) const;
  // The same within `bound` (core/bounds.h); the error line says the bound.
  double number(const CsvRow& row, int column, const Bound& bound) const;
  // Field `column` of `row`, non-empty; throws InputError otherwise.
  const std::string& text(const CsvRow& row, int column) const;

  // An InputError located at `row` of this file.
  [[noreturn]] void fail(const CsvRow& row, const std::string& message) const;

 private:
  std::string name_;
  std::vector<std::string> header_;
  int header_line_ = 0;
  std::vector<CsvRow> rows_;
};

// Parses a whole string as a finite decimal double ("1e3", " 2.5 "); nullopt if anything is left
// over, and for the forms strtod reads besides decimals: hexadecimal ("0x10"), inf, nan.
std::optional<double> parse_number(const std::string& text);

}  // namespace transient
