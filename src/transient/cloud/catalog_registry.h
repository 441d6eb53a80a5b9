// The built-in catalogs and the one way commands turn `--catalog NAME|FILE.csv` into a Catalog.
//
// Built-in catalogs carry facts (prices, GPU counts, speeds) in code with a source line; the
// project ships no copy of the data files they come from.
#pragma once

#include <string>
#include <vector>

#include "transient/cloud/catalog.h"

namespace transient::cloud {

struct CatalogInfo {
  std::string name;         // e.g. "gce-2019"
  std::string description;  // one line for people
};

// Every built-in catalog, in a stable order.
const std::vector<CatalogInfo>& builtin_catalogs();

// The built-in catalog `name`; InputError listing the built-in names if there is none.
Catalog builtin_catalog(const std::string& name);

// A built-in catalog by name, or else a CSV file by path (anything ending in .csv or naming an
// existing file). Throws InputError listing the built-in names when it is neither.
Catalog load_catalog(const std::string& name_or_path);

}  // namespace transient::cloud
