#include "transient/cloud/catalog_registry.h"

#include <filesystem>
#include <regex>
#include <system_error>

#include "transient/core/error.h"
#include "transient/core/registry.h"

namespace transient::cloud {
namespace {

// FP32 TFLOPS of one GPU. K80 and P100: the figures of CM-DARE's feature tables (`GPU TFLOPS`:
// one GK210 die of a K80 at its 824 MHz base clock, a P100 PCIe at its 1329 MHz boost clock), so
// that speeds predicted from them match the research. The others: NVIDIA's data sheets.
constexpr double kK80Tflops = 4.113;
constexpr double kP100Tflops = 9.526;
constexpr double kV100Tflops = 14.0;  // V100 PCIe; an SXM2 V100 is 15.7
constexpr double kV100SxmTflops = 15.7;
constexpr double kA100Tflops = 19.5;
constexpr double kH100Tflops = 67.0;  // H100 and H200 SXM
constexpr double kM60Tflops = 4.8;    // one of the two GPUs of an M60 board
constexpr double kT4Tflops = 8.1;
constexpr double kA10gTflops = 31.2;

InstanceType make(const char* name, const char* gpu, int gpus, double tflops, int vcpus,
                  double memory_gib, double network_gbps, double on_demand_usd_per_h,
                  double spot_usd_per_h, const char* region, const char* zone) {
  InstanceType type;
  type.name = name;
  type.gpu = gpu;
  type.gpus = gpus;
  type.gpu_tflops = tflops;
  type.vcpus = vcpus;
  type.memory_gib = memory_gib;
  type.network_gbps = network_gbps;
  type.on_demand_usd_per_h = on_demand_usd_per_h;
  type.spot_usd_per_h = spot_usd_per_h;
  type.region = region;
  type.zone = zone;
  return type;
}

Catalog gce_2019() {
  // GPU servers are named after the parameter-server VM shape (n1-standard-4: 4 vCPUs, 15 GiB,
  // GCE's 2 Gbit/s per vCPU) with one GPU; the paper gives only whole-server prices. Zones are
  // ones the 2019 lifetimes were measured in (V100s were not offered in us-east1 then).
  return Catalog(
      "gce-2019",
      "ICAC 2019 \"Speeding up Deep Learning with Transient Servers\", Table II (GCE, February "
      "2019, $/h on-demand / preemptible, billed per second); GPU TFLOPS as in CM-DARE",
      {
          make("n1-standard-4+k80", "K80", 1, kK80Tflops, 4, 15, 8, 0.723, 0.256, "us-east1",
               "us-east1-c"),
          make("n1-standard-4+p100", "P100", 1, kP100Tflops, 4, 15, 8, 1.43, 0.551, "us-east1",
               "us-east1-c"),
          make("n1-standard-4+v100", "V100", 1, kV100Tflops, 4, 15, 8, 2.144, 0.861, "us-central1",
               "us-central1-a"),
          make("n1-standard-4", "", 0, 0.0, 4, 15, 8, 0.143, 0.041, "us-east1", "us-east1-c"),
      });
}

Catalog aws_deepvm() {
  // DeepVM's "flops" figures (g3s 100, g4dn 377, g5 696) are relative scores, not TFLOPS; the
  // GPU TFLOPS here are NVIDIA's FP32 figures. Prices are DeepVM's (us-east-1 list prices).
  return Catalog(
      "aws-deepvm",
      "lass-lab/DeepVM solution/data.json (AWS us-east-1 on-demand and spot $/h, vCPU, GiB, "
      "Gbit/s); GPU TFLOPS from NVIDIA data sheets",
      {
          make("g3s.xlarge", "M60", 1, kM60Tflops, 4, 30.5, 10, 0.75, 0.225, "us-east-1", ""),
          make("g4dn.xlarge", "T4", 1, kT4Tflops, 4, 16, 25, 0.526, 0.1578, "us-east-1", ""),
          make("g5.xlarge", "A10G", 1, kA10gTflops, 4, 16, 10, 1.006, 0.3018, "us-east-1", ""),
          make("c3.xlarge", "", 0, 0.0, 4, 7.5, 0.3, 0.21, 0.1281, "us-east-1", ""),
          make("c4.xlarge", "", 0, 0.0, 4, 7.5, 1.7, 0.199, 0.1257, "us-east-1", ""),
          make("t3.xlarge", "", 0, 0.0, 4, 16, 5, 0.1664, 0.1033, "us-east-1", ""),
          make("c5.xlarge", "", 0, 0.0, 4, 8, 10, 0.17, 0.0999, "us-east-1", ""),
          make("m6i.xlarge", "", 0, 0.0, 4, 16, 12.5, 0.192, 0.12, "us-east-1", ""),
          make("d3.xlarge", "", 0, 0.0, 4, 32, 15, 0.499, 0.1584, "us-east-1", ""),
          make("c5n.xlarge", "", 0, 0.0, 4, 10.5, 25, 0.216, 0.127, "us-east-1", ""),
          make("c6in.xlarge", "", 0, 0.0, 4, 8, 30, 0.2268, 0.1272, "us-east-1", ""),
      });
}

struct AwsGpuRow {
  const char* type;
  const char* region;
  const char* zone;
  double on_demand_usd_per_h;  // 0 = not sold on demand there
  double spot_usd_per_h;       // 0 = no spot market there
};

// Rows of SkyPilot's public AWS catalog (aws_gpu_spot_vs_ondemand_excerpt.csv).
constexpr AwsGpuRow kAwsGpuRows[] = {
    {"p3dn.24xlarge", "ap-northeast-1", "apne1-az4", 42.783, 13.2021},
    {"p3dn.24xlarge", "eu-west-1", "euw1-az1", 33.711, 15.2176},
    {"p3dn.24xlarge", "eu-west-1", "euw1-az2", 33.711, 20.0865},
    {"p3dn.24xlarge", "us-east-1", "use1-az1", 31.212, 3.8094},
    {"p3dn.24xlarge", "us-east-1", "use1-az6", 31.212, 3.2632},
    {"p3dn.24xlarge", "us-west-2", "usw2-az1", 31.212, 9.186},
    {"p3dn.24xlarge", "us-west-2", "usw2-az3", 31.212, 10.3031},
    {"p4d.24xlarge", "ap-northeast-1", "apne1-az4", 44.92215, 14.052},
    {"p4d.24xlarge", "ap-northeast-2", "apne2-az4", 45.38848, 12.402},
    {"p4d.24xlarge", "ap-south-1", "aps1-az1", 39.32, 0},
    {"p4d.24xlarge", "ap-south-1", "aps1-az2", 39.32, 0},
    {"p4d.24xlarge", "ap-south-1", "aps1-az3", 39.32, 0},
    {"p4d.24xlarge", "ap-southeast-2", "apse2-az1", 42.60438, 4.3239},
    {"p4d.24xlarge", "ap-southeast-2", "apse2-az2", 42.60438, 4.2604},
    {"p4d.24xlarge", "eu-central-1", "euc1-az3", 40.94475, 18.213},
    {"p4d.24xlarge", "eu-west-1", "euw1-az2", 35.39655, 16.3182},
    {"p4d.24xlarge", "us-east-1", "use1-az1", 32.7726, 6.7915},
    {"p4d.24xlarge", "us-east-1", "use1-az2", 32.7726, 9.6107},
    {"p4d.24xlarge", "us-east-1", "use1-az6", 32.7726, 5.0933},
    {"p4d.24xlarge", "us-east-2", "use2-az1", 32.7726, 7.8531},
    {"p4d.24xlarge", "us-east-2", "use2-az2", 32.7726, 5.4287},
    {"p4d.24xlarge", "us-west-2", "usw2-az1", 32.7726, 10.507},
    {"p4d.24xlarge", "us-west-2", "usw2-az2", 32.7726, 11.3278},
    {"p4d.24xlarge", "us-west-2", "usw2-az3", 32.7726, 11.377},
    {"p4de.24xlarge", "us-east-1", "use1-az4", 40.96575, 7.8074},
    {"p4de.24xlarge", "us-east-1", "use1-az6", 40.96575, 5.8394},
    {"p4de.24xlarge", "us-west-2", "usw2-az1", 40.96575, 7.107},
    {"p4de.24xlarge", "us-west-2", "usw2-az2", 40.96575, 7.2328},
    {"p4de.24xlarge", "us-west-2", "usw2-az3", 40.96575, 6.8849},
    {"p5.48xlarge", "ap-northeast-1", "apne1-az1", 123.19496, 40.0976},
    {"p5.48xlarge", "ap-northeast-1", "apne1-az4", 123.19496, 35.6815},
    {"p5.48xlarge", "ap-south-1", "aps1-az1", 117.984, 15.6847},
    {"p5.48xlarge", "ap-south-1", "aps1-az2", 117.984, 11.7984},
    {"p5.48xlarge", "ap-south-1", "aps1-az3", 117.984, 12.3198},
    {"p5.48xlarge", "ap-southeast-2", "apse2-az1", 127.816, 95.8182},
    {"p5.48xlarge", "ap-southeast-2", "apse2-az2", 127.816, 127.3201},
    {"p5.48xlarge", "ap-southeast-2", "apse2-az3", 127.816, 13.1487},
    {"p5.48xlarge", "ca-central-1", "cac1-az4", 113.068, 113.068},
    {"p5.48xlarge", "eu-north-1", "eun1-az1", 105.2024, 0},
    {"p5.48xlarge", "eu-north-1", "eun1-az2", 105.2024, 0},
    {"p5.48xlarge", "eu-north-1", "eun1-az3", 105.2024, 28.528},
    {"p5.48xlarge", "eu-west-2", "euw2-az1", 127.816, 43.0145},
    {"p5.48xlarge", "eu-west-2", "euw2-az2", 127.816, 45.5027},
    {"p5.48xlarge", "eu-west-2", "euw2-az3", 127.816, 45.8492},
    {"p5.48xlarge", "us-east-1", "use1-az1", 98.32, 30.326},
    {"p5.48xlarge", "us-east-1", "use1-az2", 98.32, 27.6948},
    {"p5.48xlarge", "us-east-1", "use1-az3", 98.32, 20.9934},
    {"p5.48xlarge", "us-east-1", "use1-az4", 98.32, 29.3511},
    {"p5.48xlarge", "us-east-1", "use1-az5", 98.32, 25.8774},
    {"p5.48xlarge", "us-east-1", "use1-az6", 98.32, 25.3026},
    {"p5.48xlarge", "us-east-2", "use2-az1", 98.32, 14.3773},
    {"p5.48xlarge", "us-east-2", "use2-az2", 98.32, 15.6465},
    {"p5.48xlarge", "us-east-2", "use2-az3", 98.32, 18.2766},
    {"p5.48xlarge", "us-west-1", "usw1-az1", 122.9, 0},
    {"p5.48xlarge", "us-west-1", "usw1-az3", 122.9, 17.1371},
    {"p5.48xlarge", "us-west-2", "usw2-az1", 98.32, 33.2399},
    {"p5.48xlarge", "us-west-2", "usw2-az2", 98.32, 30.9762},
    {"p5.48xlarge", "us-west-2", "usw2-az3", 98.32, 31.737},
    {"p5.48xlarge", "us-west-2", "usw2-az4", 98.32, 30.5798},
    {"p5e.48xlarge", "ap-southeast-3", "apse3-az1", 0, 14.925},
    {"p5e.48xlarge", "us-east-2", "use2-az1", 0, 16.3895},
    {"p5e.48xlarge", "us-east-2", "use2-az3", 0, 14.4663},
    {"p5e.48xlarge", "us-west-2", "usw2-az3", 0, 15.7656},
    {"p5en.48xlarge", "ap-northeast-1", "apne1-az4", 106.0, 32.6174},
    {"p5en.48xlarge", "ap-northeast-2", "apne2-az1", 117.024, 22.4906},
    {"p5en.48xlarge", "ap-south-1", "aps1-az1", 101.76, 12.1188},
    {"p5en.48xlarge", "ap-south-1", "aps1-az3", 101.76, 14.9639},
    {"p5en.48xlarge", "ap-southeast-3", "apse3-az2", 117.024, 11.7024},
    {"p5en.48xlarge", "ap-southeast-3", "apse3-az3", 117.024, 11.7024},
    {"p5en.48xlarge", "us-east-1", "use1-az2", 84.8, 24.2902},
    {"p5en.48xlarge", "us-east-2", "use2-az1", 84.8, 17.2194},
    {"p5en.48xlarge", "us-east-2", "use2-az2", 84.8, 15.4924},
    {"p5en.48xlarge", "us-east-2", "use2-az3", 84.8, 17.2405},
    {"p5en.48xlarge", "us-west-1", "usw1-az3", 106.0, 0},
    {"p5en.48xlarge", "us-west-2", "usw2-az2", 84.8, 25.9397},
    {"p5en.48xlarge", "us-west-2", "usw2-az3", 84.8, 25.5123},
    {"p5en.48xlarge", "us-west-2", "usw2-az4", 84.8, 25.2326},
};

Catalog aws_gpu() {
  // Hardware per type from AWS's instance type pages: GPU model and count, vCPUs, GiB, Gbit/s.
  struct Hardware {
    const char* type;
    const char* gpu;
    double tflops;
    int vcpus;
    double memory_gib;
    double network_gbps;
  };
  static constexpr Hardware kHardware[] = {
      {"p3dn.24xlarge", "V100-32GB", kV100SxmTflops, 96, 768, 100},
      {"p4d.24xlarge", "A100", kA100Tflops, 96, 1152, 400},
      {"p4de.24xlarge", "A100-80GB", kA100Tflops, 96, 1152, 400},
      {"p5.48xlarge", "H100", kH100Tflops, 192, 2048, 3200},
      {"p5e.48xlarge", "H200", kH100Tflops, 192, 2048, 3200},
      {"p5en.48xlarge", "H200", kH100Tflops, 192, 2048, 3200},
  };
  std::vector<InstanceType> types;
  for (const AwsGpuRow& row : kAwsGpuRows) {
    const Hardware* hardware = nullptr;
    for (const Hardware& h : kHardware) {
      if (std::string(h.type) == row.type) hardware = &h;
    }
    TRANSIENT_CHECK(hardware != nullptr);
    types.push_back(make(row.type, hardware->gpu, 8, hardware->tflops, hardware->vcpus,
                         hardware->memory_gib, hardware->network_gbps, row.on_demand_usd_per_h,
                         row.spot_usd_per_h, row.region, row.zone));
  }
  return Catalog("aws-gpu",
                 "skypilot-org/skypilot-catalog AWS excerpt (8-GPU instances, $/h on-demand and "
                 "spot by availability zone); hardware from AWS, GPU TFLOPS from NVIDIA",
                 std::move(types));
}

const Registry<Catalog (*)()>& builtins() {
  static const Registry<Catalog (*)()> kBuiltins(
      "catalog", {
                     {{"gce-2019",
                       "GCE February 2019 K80/P100/V100 servers and the n1-standard-4 parameter "
                       "server, on-demand and preemptible (the ICAC 2019 paper's Table II)",
                       {}},
                      gce_2019},
                     {{"aws-deepvm",
                       "AWS instances of DeepVM: 3 one-GPU types (M60, T4, A10G) and 8 CPU types, "
                       "on-demand and spot",
                       {}},
                      aws_deepvm},
                     {{"aws-gpu",
                       "AWS 8-GPU instances (V100, A100, H100, H200) by availability zone, from "
                       "SkyPilot's catalog",
                       {}},
                      aws_gpu},
                 });
  return kBuiltins;
}

}  // namespace

std::optional<InstanceType> default_cpu_server(const std::string& region) {
  static const std::regex kAwsRegion("[a-z]{2}(-[a-z]+)+-[0-9]+");
  static const std::regex kGceRegion("[a-z]+-[a-z]+[0-9]+");
  if (std::regex_match(region, kGceRegion)) {
    // The parameter-server VM of gce_2019(), the paper's Table II.
    return make("n1-standard-4", "", 0, 0.0, 4, 15, 8, 0.143, 0.0, region.c_str(), "");
  }
  if (std::regex_match(region, kAwsRegion)) {
    // DeepVM's data.json row (as in aws_deepvm()); AWS's "up to 10 Gbit/s".
    return make("c5.xlarge", "", 0, 0.0, 4, 8, 10, 0.17, 0.0, region.c_str(), "");
  }
  return std::nullopt;
}

const std::vector<PluginInfo>& builtin_catalogs() { return builtins().infos(); }

Catalog builtin_catalog(const std::string& name) {
  if (const auto* builtin = builtins().find(name)) return builtin->create();
  throw InputError("unknown catalog \"" + name + "\"; accepted: " + builtins().names() +
                   ", or a CSV file");
}

Catalog load_catalog(const std::string& name_or_path) {
  if (const auto* builtin = builtins().find(name_or_path)) return builtin->create();
  std::error_code error;
  const bool is_csv =
      name_or_path.size() > 4 && name_or_path.compare(name_or_path.size() - 4, 4, ".csv") == 0;
  if (is_csv || std::filesystem::is_regular_file(name_or_path, error)) {
    return Catalog::read_csv(name_or_path);
  }
  throw InputError("unknown catalog \"" + name_or_path + "\"; accepted: " + builtins().names() +
                   ", or a CSV file (FILE.csv)");
}

}  // namespace transient::cloud
