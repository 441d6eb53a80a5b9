#include "transient/market/startup_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>
#include <sstream>

#include "transient/core/csv_table.h"
#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient::market {
StartupModel::StartupModel(std::vector<double> samples_s, std::string description)
    : samples_s_(std::move(samples_s)), description_(std::move(description)) {
  TRANSIENT_CHECK(!samples_s_.empty());
  std::sort(samples_s_.begin(), samples_s_.end());
  TRANSIENT_CHECK_GE(samples_s_.front(), 0.0);
}

namespace {

std::string folder_text(const std::string& data_dir, const std::string& prefix) {
  return (std::filesystem::path(data_dir) / ("cmdare/startup_time/" + prefix + "{east,west}"))
      .string();
}

}  // namespace

StartupModel StartupModel::load_cmdare(const std::string& data_dir, cloud::Market market,
                                       const std::string& gpu, const std::string& region) {
  namespace fs = std::filesystem;
  const std::string prefix = market == cloud::Market::spot ? "pre_" : "on_demand_";
  std::set<std::string> gpus;
  std::set<std::string> regions;
  std::vector<double> samples_s;
  std::vector<std::string> read;  // the files the selection read
  for (const std::string side : {"east", "west"}) {
    const std::string folder = "cmdare/startup_time/" + prefix + side;
    const fs::path dir = fs::path(data_dir) / folder;
    std::error_code error;
    if (!fs::is_directory(dir, error)) {
      throw InputError(dir.string(), 0,
                       "data folder not found; give the shared data directory with --data-dir DIR "
                       "(it holds cmdare/startup_time/)");
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".csv") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      const std::string name = file.filename().string();
      const std::string file_gpu = name.find("p100") != std::string::npos ? "P100" : "K80";
      gpus.insert(file_gpu);
      regions.insert(side);
      if (!gpu.empty() && !same_ignoring_case(gpu, file_gpu)) continue;
      if (!region.empty() && lowercase(region) != side) continue;
      read.push_back(file.string());
      const CsvTable table = CsvTable::read_file(file.string());
      const int provisioning = table.require_column({"Provisioning"});
      const int staging = table.require_column({"Staging"});
      const int booting = table.require_column({"Booting"});
      for (const CsvRow& row : table.rows()) {
        const double total = table.number(row, provisioning) + table.number(row, staging) +
                             table.number(row, booting);
        if (total < 0.0) table.fail(row, "a negative start-up time; accepted: seconds >= 0");
        samples_s.push_back(total);
      }
    }
  }
  if (!gpu.empty() && !gpus.count(uppercase(gpu))) {
    throw InputError("start-up model: no measurements for gpu \"" + gpu +
                     "\"; accepted: " + join(gpus));
  }
  if (!region.empty() && !regions.count(lowercase(region))) {
    throw InputError("start-up model: no measurements for region \"" + region +
                     "\"; accepted: " + join(regions));
  }
  if (samples_s.empty()) {
    // Files of the selection without rows (a header alone) were an internal check's failure.
    throw InputError(read.empty() ? folder_text(data_dir, prefix) : read.front(), 0,
                     "no start-up measured for " + (gpu.empty() ? std::string("any GPU") : gpu) +
                         " in " + (region.empty() ? std::string("east or west") : region) +
                         "; accepted: CSV files of at least one row (Provisioning, Staging, "
                         "Booting)");
  }
  std::ostringstream description;
  description << "CM-DARE " << cloud::to_string(market) << " start-up (provisioning+staging+"
              << "booting), " << (gpu.empty() ? std::string("K80+P100") : gpu) << ", "
              << (region.empty() ? std::string("east+west") : lowercase(region)) << ", "
              << samples_s.size() << " servers";
  return StartupModel(std::move(samples_s), description.str());
}

StartupModel StartupModel::builtin_default(cloud::Market market) {
  if (market == cloud::Market::spot) {
    return StartupModel({87.3}, "built-in spot start-up 87.3 s (mean of CM-DARE's 45 servers)");
  }
  return StartupModel({71.0}, "built-in on-demand start-up 71.0 s (mean of CM-DARE's 55 servers)");
}

StartupModel StartupModel::load_or_default(const std::string& data_dir, cloud::Market market) {
  std::error_code error;
  if (!std::filesystem::is_directory(std::filesystem::path(data_dir) / "cmdare" / "startup_time",
                                     error)) {
    return builtin_default(market);
  }
  return load_cmdare(data_dir, market);
}

double StartupModel::stddev_s() const {
  const double mean = mean_s();
  double sum = 0.0;
  for (double s : samples_s_) sum += (s - mean) * (s - mean);
  return samples_s_.size() > 1 ? std::sqrt(sum / static_cast<double>(samples_s_.size() - 1)) : 0.0;
}

double StartupModel::mean_s() const {
  return std::accumulate(samples_s_.begin(), samples_s_.end(), 0.0) /
         static_cast<double>(samples_s_.size());
}

double StartupModel::median_s() const {
  const std::size_t n = samples_s_.size();
  return n % 2 == 1 ? samples_s_[n / 2] : 0.5 * (samples_s_[n / 2 - 1] + samples_s_[n / 2]);
}

}  // namespace transient::market
