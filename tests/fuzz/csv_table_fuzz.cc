// CSV tables (core/csv_table): parsing, then every field read as a number and as text, the way
// every CSV reader of the program reads its columns.
#include "fuzz_input.h"
#include "transient/core/csv_table.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = transient::fuzz::as_text(data, size);
  transient::fuzz::accept_or_input_error([&] {
    const auto table = transient::CsvTable::parse(text, "input.csv");
    for (const auto& row : table.rows()) {
      for (std::size_t column = 0; column < row.fields.size(); ++column) {
        transient::fuzz::accept_or_input_error(
            [&] { table.number(row, static_cast<int>(column)); });
        transient::fuzz::accept_or_input_error([&] { table.text(row, static_cast<int>(column)); });
      }
    }
  });
  return 0;
}
