// The built-in catalogs and the one way commands turn `--catalog NAME|FILE.csv` into a Catalog.
//
// Built-in catalogs carry facts (prices, GPU counts, speeds) in code with a source line; the
// project ships no copy of the data files they come from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "transient/cloud/catalog.h"
#include "transient/core/registry.h"

namespace transient::cloud {

// Every built-in catalog, in a stable order.
const std::vector<PluginInfo>& builtin_catalogs();

// The built-in catalog `name`; InputError listing the built-in names if there is none.
Catalog builtin_catalog(const std::string& name);

// A built-in catalog by name, or else a CSV file by path (anything ending in .csv or naming an
// existing file). Throws InputError listing the built-in names when it is neither.
Catalog load_catalog(const std::string& name_or_path);

// A provider's stated default CPU-only server in `region`, on demand, for catalogs that list no
// CPU-only type there (the built-in `aws-gpu` lists only 8-GPU servers). The provider is read
// from the region's form: GCE's "us-east1" (letters, a dash, letters ending in a digit) gives
// n1-standard-4 (4 vCPUs, 15 GiB) at $0.143/h, the ICAC 2019 paper's price (February 2019);
// AWS's "us-east-1" (a trailing "-digit") gives c5.xlarge (4 vCPUs, 8 GiB) at $0.17/h, DeepVM's
// us-east-1 price (docs/plan.md). The same price is given for every region of a provider.
// nullopt for a region of neither form.
std::optional<InstanceType> default_cpu_server(const std::string& region);

}  // namespace transient::cloud
