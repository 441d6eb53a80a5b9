// Cluster specs (`--cluster`, `--evaluate`: perf/cluster_spec) against the built-in catalog.
#include "fuzz_input.h"
#include "transient/cloud/catalog_registry.h"
#include "transient/perf/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const transient::cloud::Catalog catalog = transient::cloud::load_catalog("gce-2019");
  const std::string text = transient::fuzz::as_text(data, size);
  transient::fuzz::accept_or_input_error(
      [&] { transient::perf::parse_cluster_spec(text, catalog); });
  return 0;
}
