// Catalog CSV files (cloud/catalog), and a cluster spec read against the catalog they make.
#include "fuzz_input.h"
#include "transient/cloud/catalog.h"
#include "transient/perf/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const transient::fuzz::ScratchFile file("catalog.csv", transient::fuzz::as_text(data, size));
  transient::fuzz::accept_or_input_error([&] {
    const auto catalog = transient::cloud::Catalog::read_csv(file.path());
    for (const char* spec : {"1xk80", "2xv100:spot,1xps", "4xn1-standard-8"}) {
      transient::fuzz::accept_or_input_error(
          [&] { transient::perf::parse_cluster_spec(spec, catalog); });
    }
  });
  return 0;
}
