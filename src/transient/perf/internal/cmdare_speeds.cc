#include "transient/perf/internal/cmdare_speeds.h"

namespace transient::perf::internal {

const std::vector<CmdareSpeed>& cmdare_cluster_speeds() {
  static const std::vector<CmdareSpeed> rows = {
      {"ResNet-15", "K80", 1, 9.87},          {"ResNet-15", "K80", 2, 18.91},
      {"ResNet-15", "K80", 3, 28.55},         {"ResNet-15", "K80", 4, 38.03},
      {"ResNet-15", "K80", 5, 46.8},          {"ResNet-15", "K80", 6, 57.3},
      {"ResNet-15", "K80", 7, 65.46},         {"ResNet-15", "K80", 8, 75.81},
      {"ResNet-32", "K80", 1, 4.51},          {"ResNet-32", "K80", 2, 9.06},
      {"ResNet-32", "K80", 3, 13.53},         {"ResNet-32", "K80", 4, 18.13},
      {"ResNet-32", "K80", 5, 22.54},         {"ResNet-32", "K80", 6, 26.91},
      {"ResNet-32", "K80", 7, 31.41},         {"ResNet-32", "K80", 8, 36.02},
      {"ShakeShake-Small", "K80", 1, 2.53},   {"ShakeShake-Small", "K80", 2, 5.09},
      {"ShakeShake-Small", "K80", 3, 7.61},   {"ShakeShake-Small", "K80", 4, 10.05},
      {"ShakeShake-Small", "K80", 5, 12.58},  {"ShakeShake-Small", "K80", 6, 15.01},
      {"ShakeShake-Small", "K80", 7, 17.38},  {"ShakeShake-Small", "K80", 8, 19.84},
      {"ShakeShake-Big", "K80", 1, 0.68},     {"ShakeShake-Big", "K80", 2, 1.34},
      {"ShakeShake-Big", "K80", 3, 2.05},     {"ShakeShake-Big", "K80", 4, 2.64},
      {"ShakeShake-Big", "K80", 5, 3.32},     {"ShakeShake-Big", "K80", 6, 3.97},
      {"ShakeShake-Big", "K80", 7, 4.37},     {"ShakeShake-Big", "K80", 8, 5.02},
      {"ResNet-15", "P100", 1, 20.9},         {"ResNet-15", "P100", 2, 47.1},
      {"ResNet-15", "P100", 3, 62.13},        {"ResNet-15", "P100", 4, 78.72},
      {"ResNet-15", "P100", 5, 93.27},        {"ResNet-15", "P100", 6, 96.12},
      {"ResNet-15", "P100", 7, 97.45},        {"ResNet-15", "P100", 8, 103.69},
      {"ResNet-32", "P100", 1, 11.36},        {"ResNet-32", "P100", 2, 22.54},
      {"ResNet-32", "P100", 3, 34.58},        {"ResNet-32", "P100", 4, 40.8},
      {"ResNet-32", "P100", 5, 44.63},        {"ResNet-32", "P100", 6, 44.23},
      {"ResNet-32", "P100", 7, 47.43},        {"ResNet-32", "P100", 8, 43.15},
      {"ShakeShake-Small", "P100", 1, 6.72},  {"ShakeShake-Small", "P100", 2, 13.62},
      {"ShakeShake-Small", "P100", 3, 19.52}, {"ShakeShake-Small", "P100", 4, 24.83},
      {"ShakeShake-Small", "P100", 5, 27.05}, {"ShakeShake-Small", "P100", 6, 27.44},
      {"ShakeShake-Small", "P100", 7, 28.27}, {"ShakeShake-Small", "P100", 8, 26.95},
      {"ShakeShake-Big", "P100", 1, 2.1},     {"ShakeShake-Big", "P100", 2, 3.96},
      {"ShakeShake-Big", "P100", 3, 4.93},    {"ShakeShake-Big", "P100", 4, 6.01},
      {"ShakeShake-Big", "P100", 5, 6.15},    {"ShakeShake-Big", "P100", 6, 5.99},
      {"ShakeShake-Big", "P100", 7, 6.1},     {"ShakeShake-Big", "P100", 8, 6.52},
  };
  return rows;
}

}  // namespace transient::perf::internal
