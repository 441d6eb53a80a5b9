// Lifetime CDF files (`market show lifetime cdf=FILE`, market/lifetime_model).
#include "fuzz_input.h"
#include "transient/market/lifetime_model.h"
#include "transient/market/revocation_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const transient::fuzz::ScratchFile file("lifetimes.txt", transient::fuzz::as_text(data, size));
  transient::fuzz::accept_or_input_error([&] {
    transient::market::LifetimeModel::from_cdf_file(file.path(), 24 * 3600.0)->describe();
  });
  return 0;
}
