#include "transient/perf/measurement_set.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "transient/core/atomic_file.h"
#include "transient/core/bounds.h"
#include "transient/core/csv_table.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/core/text.h"
#include "transient/perf/workload.h"

namespace transient::perf {
namespace {

namespace fs = std::filesystem;

constexpr Bound kMegabytes{0.0, 1e9, "MB"};                      // a checkpoint's size
constexpr Bound kStep{0.0, 1e12, "steps", true};                 // a step number, as --steps allows
constexpr Bound kRank{0.0, 1e4, "(a worker's rank)", true};      // below the servers' bound
constexpr Bound kGeneration{0.0, 1e12, "(a generation)", true};  // one per membership change
constexpr double kShortestStepS = 1e-6;                          // steps.csv's resolution

bool has(const CsvTable& table, const std::vector<std::string>& columns) {
  for (const auto& column : columns) {
    if (!table.find_column(column)) return false;
  }
  return true;
}

bool header_is(const CsvTable& table, const std::vector<std::string>& columns) {
  return table.header() == columns;
}

// CM-DARE names GPUs by their TFLOPS in some tables; ours are the catalog's names.
std::string gpu_name(const std::string& text) {
  const std::string u = uppercase(text);
  if (u == "100") return "P100";
  return u;
}

double gpu_tflops_of(const std::string& gpu) {
  // The TFLOPS CM-DARE's tables give these GPUs (cloud/catalog_registry.cc carries the same).
  if (gpu == "K80") return 4.113;
  if (gpu == "P100") return 9.526;
  return 0.0;
}

const Workload& workload_at(const CsvTable& table, const CsvRow& row, const std::string& name) {
  const Workload* found = find_workload_or_null(name);
  if (found == nullptr) {
    std::string list;
    for (const auto& w : builtin_workloads()) list += (list.empty() ? "" : ", ") + w.name;
    table.fail(row, "unknown workload \"" + name + "\"; accepted: " + list);
  }
  return *found;
}

struct SpeedKey {
  bool cluster;  // from a cluster-scaling experiment (else a single-worker one)
  std::string workload, gpu;
  int workers;
  bool operator<(const SpeedKey& o) const {
    return std::tie(cluster, workload, gpu, workers) <
           std::tie(o.cluster, o.workload, o.gpu, o.workers);
  }
};

struct SpeedSum {
  double sum = 0;
  int count = 0;
  double tflops = 0;
  std::string source;
};

class Reader {
 public:
  explicit Reader(std::set<fs::path> job_dirs) : job_dirs_(std::move(job_dirs)) {}
  void read_file(const fs::path& path);
  MeasurementSet finish();

 private:
  void feature_table(const CsvTable& table);
  void run_series(const CsvTable& table, const fs::path& path);
  void cluster_figure(const CsvTable& table);
  void published(const CsvTable& table);
  void checkpoints(const CsvTable& table);
  void restarts(const CsvTable& table);
  void trainer_steps(const CsvTable& table);
  void not_used(const std::string& path, const std::string& what) {
    out_.not_used.push_back(path + ": " + what + ", not used by perf");
  }

  bool trainer_job_file(const fs::path& path);
  void trainer_events(const fs::path& path);

  std::set<fs::path> job_dirs_;  // folders holding a steps.csv
  MeasurementSet out_;
  std::map<SpeedKey, SpeedSum> tables_;  // aggregated tables
  std::map<SpeedKey, SpeedSum> runs_;    // raw run exports
  std::set<std::string> seen_rows_;      // dedupe identical rows repeated across tables
};

void Reader::feature_table(const CsvTable& table) {
  const auto model = table.find_column("Model (temp)");
  const auto gpu = table.find_column("GPU (temp)");
  if (!model || !gpu) {
    not_used(table.name(), "a CM-DARE feature table without model names");
    return;
  }
  const int tflops = table.require_column({"GPU TFLOPS"});
  const int speed = table.require_column({"Speed (steps/sec)"});
  const int latency = table.require_column({"Latency (ms)"});
  int rows = 0;
  for (const auto& row : table.rows()) {
    const std::string& lat = row.fields[latency];
    if (!lat.empty() && parse_number(lat) != 0.3) continue;  // added-latency experiments
    const Workload& w = workload_at(table, row, table.text(row, *model));
    const std::string g = gpu_name(table.text(row, *gpu));
    const double steps = table.number(row, speed, bounds::kStepsPerS);
    if (!(steps > 0)) table.fail(row, "column \"Speed (steps/sec)\" must be > 0");
    // The same runs appear in several tables; count each once.
    const std::string key = w.name + "|" + g + "|" + row.fields[speed];
    if (!seen_rows_.insert(key).second) continue;
    SpeedSum& sum = tables_[{false, w.name, g, 1}];
    sum.sum += steps;
    sum.count += 1;
    sum.tflops = table.number(row, tflops, bounds::kGpuTflops);
    if (sum.source.empty()) sum.source = table.name();
    ++rows;
  }
  out_.used.push_back(table.name() + ": " + std::to_string(rows) + " new single-worker runs");
}

void Reader::run_series(const CsvTable& table, const fs::path& path) {
  const std::string folder = lowercase(path.parent_path().filename().string());
  static const std::regex single("0lat_(k80|p100)_(.+)");
  static const std::regex cluster("(.+?)(k80|p100|100)worker([0-9]+)");
  std::smatch match;
  std::string workload_name, gpu;
  int workers = 1;
  bool is_cluster = false;
  if (std::regex_match(folder, match, single)) {
    gpu = gpu_name(match[1]);
    workload_name = match[2];
  } else if (std::regex_match(folder, match, cluster)) {
    workload_name = match[1];
    gpu = gpu_name(match[2]);
    const auto count = parse_number(match[3]);
    if (!count || !bounds::kServers.contains(*count)) {
      throw InputError(path.string(), 0,
                       "folder \"" + folder + "\" names " + std::string(match[3]) +
                           " workers; accepted: " + bounds::kServers.accepted());
    }
    workers = static_cast<int>(*count);
    is_cluster = true;
  } else {
    not_used(path.string(),
             "a TensorBoard scalar export outside a speed run folder "
             "(0lat_<gpu>_<model> or <model><gpu>worker<N>), e.g. accuracy");
    return;
  }
  const Workload* w = find_workload_or_null(workload_name);
  if (w == nullptr) {
    throw InputError(path.string(), 0, "folder names unknown workload \"" + workload_name + "\"");
  }
  const int value = table.require_column({"Value"});
  SpeedSum& sum = runs_[{is_cluster, w->name, gpu, workers}];
  bool first = true;
  for (const auto& row : table.rows()) {
    const double steps = table.number(row, value, bounds::kStepsPerS);
    if (first) {  // the first sample includes start-up
      first = false;
      continue;
    }
    sum.sum += steps;
    sum.count += 1;
  }
  sum.tflops = gpu_tflops_of(gpu);
  sum.source = path.string();
  out_.used.push_back(path.string() + ": a run of " + std::to_string(workers) + " x " + gpu + " " +
                      w->name);
}

void Reader::cluster_figure(const CsvTable& table) {
  const int gpu = table.require_column({"gpu"});
  const int ps = table.require_column({"num_ps"});
  const int model = table.require_column({"model"});
  const int workers = table.require_column({"num_workers"});
  const int speed = table.require_column({"speed_steps_per_sec_mean"});
  for (const auto& row : table.rows()) {
    if (table.number(row, ps) != 1) table.fail(row, "num_ps must be 1 (CM-DARE's set-up)");
    const Workload& w = workload_at(table, row, table.text(row, model));
    const double n = table.number(row, workers, bounds::kServers);
    const std::string g = gpu_name(table.text(row, gpu));
    SpeedSum& sum = tables_[{true, w.name, g, static_cast<int>(n)}];
    sum.sum += table.number(row, speed, bounds::kStepsPerS);
    sum.count += 1;
    sum.tflops = gpu_tflops_of(g);
    sum.source = table.name() + ":" + std::to_string(row.line);
  }
  out_.used.push_back(table.name() + ": " + std::to_string(table.rows().size()) +
                      " cluster speeds");
}

void Reader::published(const CsvTable& table) {
  const int measured = table.require_column({"Step Time (s)"});
  const int predicted = table.require_column({"Predicted (s)"});
  const int gpu = table.require_column({"GPU (temp)"});
  const int model = table.require_column({"Model (temp)"});
  for (const auto& row : table.rows()) {
    PublishedPrediction p;
    p.workload = workload_at(table, row, table.text(row, model)).name;
    p.gpu = gpu_name(table.text(row, gpu));
    p.measured_step_s = table.number(row, measured, bounds::kDurationS);
    p.predicted_step_s = table.number(row, predicted, bounds::kDurationS);
    out_.published.push_back(p);
  }
  out_.used.push_back(table.name() + ": CM-DARE's published predictions");
}

void Reader::checkpoints(const CsvTable& table) {
  const auto model = table.find_column("Model");
  const int size = table.require_column({"Checkpoint Size (MB)", "checkpoint_size_MB"});
  const int duration =
      table.require_column({"Duration mean (s)", "Duration", "checkpoint_duration_mean_s"});
  const auto local = table.find_column("Local duration mean (s)");
  const auto parameters = table.find_column("Number of Parameters");
  for (const auto& row : table.rows()) {
    CheckpointMeasurement c;
    if (model) c.workload = row.fields[*model];
    c.size_mb = table.number(row, size, kMegabytes);
    c.duration_s = table.number(row, duration, bounds::kDurationS);
    // Some rows leave these empty: not measured.
    if (local && !row.fields[*local].empty())
      c.local_duration_s = table.number(row, *local, bounds::kDurationS);
    if (parameters && !row.fields[*parameters].empty()) {
      c.parameters = table.number(row, *parameters, bounds::kParameters);
    }
    if (c.size_mb <= 0 || c.duration_s <= 0 || c.local_duration_s < 0 || c.parameters < 0) {
      table.fail(row, "sizes and durations must be > 0");
    }
    out_.checkpoints.push_back(c);
  }
  out_.used.push_back(table.name() + ": " + std::to_string(table.rows().size()) +
                      " checkpoint durations");
}

void Reader::restarts(const CsvTable& table) {
  const int model = table.require_column({"model"});
  const int type = table.require_column({"start_type"});
  const int seconds = table.require_column({"seconds"});
  for (const auto& row : table.rows()) {
    RestartMeasurement r;
    r.workload = table.text(row, model);
    const std::string kind = table.text(row, type);
    if (kind != "cold" && kind != "warm") table.fail(row, "start_type must be cold or warm");
    r.warm = kind == "warm";
    r.seconds = table.number(row, seconds, bounds::kDurationS);
    out_.restarts.push_back(r);
  }
  out_.used.push_back(table.name() + ": " + std::to_string(table.rows().size()) + " restart times");
}

void Reader::trainer_steps(const CsvTable& table) {
  const int step = table.require_column({"step"});
  const int worker = table.require_column({"worker"});
  const auto gen = table.find_column("gen");  // older files: one generation, 0
  const int batch = table.require_column({"batch"});
  const int data = table.require_column({"data_s"});
  const int compute = table.require_column({"compute_s"});
  const int allreduce = table.require_column({"allreduce_s"});
  const int optimizer = table.require_column({"optimizer_s"});
  // (step, generation) -> the step as that generation trained it; the trainer's merge keeps one
  // generation per step (train/step_records.h), the latest, and so does this.
  std::map<std::pair<long, long>, TrainerStepMeasurement> steps;
  std::map<std::tuple<long, long, long>, int> seen;  // (step, generation, rank) -> its line
  for (const auto& row : table.rows()) {
    const auto s = static_cast<long>(table.number(row, step, kStep));
    const auto w = static_cast<long>(table.number(row, worker, kRank));
    const auto g = gen ? static_cast<long>(table.number(row, *gen, kGeneration)) : 0L;
    // A row written twice (a file appended to itself) would count its worker and batch twice.
    const auto [first, fresh] = seen.emplace(std::tuple{s, g, w}, row.line);
    if (!fresh) {
      table.fail(row, "repeats the row of step " + std::to_string(s) + ", worker " +
                          std::to_string(w) + " and generation " + std::to_string(g) + " of line " +
                          std::to_string(first->second) +
                          "; accepted: one row per step, worker and generation");
    }
    const double d = table.number(row, data, bounds::kDurationS),
                 c = table.number(row, compute, bounds::kDurationS),
                 a = table.number(row, allreduce, bounds::kDurationS),
                 o = table.number(row, optimizer, bounds::kDurationS);
    // The trainer writes microseconds; a step of none would be an infinite speed.
    if (!(d + c + a + o >= kShortestStepS)) {
      table.fail(row,
                 "the step's times (data_s + compute_s + allreduce_s + optimizer_s) add up to " +
                     number_text(d + c + a + o) +
                     " s, and a step takes time; accepted: a total of at least 1e-6 s");
    }
    TrainerStepMeasurement& m = steps[{s, g}];
    m.workers += 1;
    m.batch += table.number(row, batch, bounds::kBatch);
    m.compute_s = std::max(m.compute_s, c);
    m.allreduce_s += a;
    m.step_s = std::max(m.step_s, d + c + a + o);
    m.source = table.name();
  }
  std::size_t kept = 0;
  for (auto it = steps.begin(); it != steps.end(); ++it) {
    const auto next = std::next(it);
    if (next != steps.end() && next->first.first == it->first.first) continue;  // a later gen
    TrainerStepMeasurement& m = it->second;
    m.allreduce_s /= m.workers;
    out_.trainer_steps.push_back(m);
    ++kept;
  }
  out_.used.push_back(table.name() + ": " + std::to_string(kept) + " trainer steps");
}

void Reader::trainer_events(const fs::path& path) {
  const std::string text = transient::read_file(path.string());
  std::size_t begin = 0;
  int line = 0, writes = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string row = text.substr(begin, end - begin);
    begin = end + 1;
    ++line;
    if (row.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json event;
    try {
      event = nlohmann::json::parse(row);
    } catch (const nlohmann::json::exception&) {
      // A syntax error, or a number beyond a double (1e400) that nlohmann reports apart.
      throw InputError(path.string(), line, "not a JSON object; accepted: one event per line");
    }
    if (!event.is_object()) {
      throw InputError(path.string(), line, "not a JSON object; accepted: one event per line");
    }
    const auto kind = event.find("event");
    if (kind == event.end() || !kind->is_string() || *kind != "checkpoint") continue;
    const auto bytes = event.find("bytes");
    const auto write_s = event.find("write_s");
    if (bytes == event.end() || write_s == event.end() || !bytes->is_number() ||
        !write_s->is_number() || bytes->get<double>() <= 0 ||
        !bounds::kBytes.contains(bytes->get<double>()) ||
        !bounds::kDurationS.contains(write_s->get<double>())) {
      throw InputError(path.string(), line,
                       "a checkpoint event needs \"bytes\" > 0 (" + bounds::kBytes.accepted() +
                           ") and \"write_s\" (" + bounds::kDurationS.accepted() + ")");
    }
    out_.trainer_checkpoints.push_back({bytes->get<double>(), write_s->get<double>()});
    ++writes;
  }
  out_.used.push_back(path.string() + ": " + std::to_string(writes) + " checkpoint writes");
}

// Files inside a trainer job directory; false if `path` is not in one.
bool Reader::trainer_job_file(const fs::path& path) {
  fs::path dir;
  for (const auto& job : job_dirs_) {
    const auto relative = path.lexically_relative(job);
    if (!relative.empty() && *relative.begin() != "..") dir = job;
  }
  if (dir.empty()) return false;
  const std::string name = path.string();
  if (path.parent_path() == dir && path.filename() == "job.json") {
    const nlohmann::json job = load_json_file(name);
    if (!job.is_object() || !job.contains("model") || !job.at("model").is_string()) {
      throw InputError(name, 0, "a trainer job.json needs \"model\" (a string)");
    }
    out_.trainer_models[(dir / "steps.csv").string()] = job.at("model").get<std::string>();
    out_.used.push_back(name + ": the model of the job");
    return true;
  }
  if (path.parent_path() == dir && path.filename() == "events.jsonl") {
    trainer_events(path);
    return true;
  }
  if (path.parent_path() == dir && path.filename() == "summary.json") {
    // Only the workers' threads, which a CPU's step depends on; a summary cut short says none.
    nlohmann::json summary;
    try {
      summary = load_json_file(name);
    } catch (const InputError&) {
      not_used(name, "a trainer summary.json that is not whole");
      return true;
    }
    const auto threads = summary.is_object() ? summary.value("threads_per_worker", nlohmann::json())
                                             : nlohmann::json();
    // As a profile holds them (workload.cc): 1 to 4096.
    if (threads.is_number_integer() && threads.get<long long>() >= 1 &&
        threads.get<long long>() <= 4096) {
      out_.trainer_threads[(dir / "steps.csv").string()] = threads.get<int>();
      out_.used.push_back(name + ": the workers' threads");
    } else {
      not_used(name, "a trainer summary.json without the workers' threads");
    }
    return true;
  }
  if (path.parent_path() == dir && path.filename() == "steps.csv") return false;
  not_used(name, "part of a trainer job directory (checkpoints, part files)");
  return true;
}

void Reader::read_file(const fs::path& path) {
  const std::string name = path.string();
  if (trainer_job_file(path)) return;
  if (path.extension() != ".csv") {
    throw InputError(name, 0,
                     "unrecognised measurement file; accepted: CSV files of CM-DARE's formats "
                     "or the trainer's steps.csv (see `transient fit --help`)");
  }
  const CsvTable table = CsvTable::read_file(name);
  if (has(table, {"GPU TFLOPS", "Model FLOPs", "Speed (steps/sec)"})) return feature_table(table);
  if (header_is(table, {"Wall time", "Step", "Value"})) return run_series(table, path);
  if (header_is(table, {"Wall time", "Step", "Value", "Step Time"})) {
    return not_used(name,
                    "a CM-DARE speed time series (the same runs as the single-worker "
                    "tables)");
  }
  if (has(table, {"gpu", "num_ps", "model", "num_workers", "speed_steps_per_sec_mean"})) {
    return cluster_figure(table);
  }
  if (has(table, {"Step Time (s)", "Predicted (s)", "GPU (temp)", "Model (temp)"})) {
    return published(table);
  }
  if (has(table, {"Model", "Duration mean (s)", "Checkpoint Size (MB)"}) ||
      has(table, {"checkpoint_size_MB", "checkpoint_duration_mean_s"})) {
    return checkpoints(table);
  }
  if (has(table, {"Model", "Local duration", "Duration", "Checkpoint Size (MB)"})) {
    return not_used(name,
                    "per-run checkpoint durations (aggregated in ckpt.csv / "
                    "aggregated.csv)");
  }
  if (header_is(table, {"model", "start_type", "run", "seconds"})) return restarts(table);
  if (has(table,
          {"step", "worker", "batch", "data_s", "compute_s", "allreduce_s", "optimizer_s"})) {
    return trainer_steps(table);
  }
  if (header_is(table, {"Provisioning", "Staging", "Booting"}) ||
      has(table, {"gpu", "request_type", "mean_s", "std_s"})) {
    return not_used(name, "server start-up times (market::StartupModel models them)");
  }
  if (has(table, {"gpu", "region", "hour_index", "cdf"}) || has(table, {"hours_after_start_bin"}) ||
      has(table, {"hour_of_day_bin"}) || has(table, {"lifetime_or_time_between_failures_s"}) ||
      has(table, {"series", "bin", "count"})) {
    return not_used(name, "revocation data (the market part models it)");
  }
  if (has(table, {"steps_since_last_checkpoint", "run", "total_training_time_s"})) {
    return not_used(name,
                    "training time against steps since the last checkpoint (the "
                    "simulator's restart-from-checkpoint recovery reproduces it)");
  }
  std::string header;
  for (const auto& column : table.header()) header += (header.empty() ? "" : ",") + column;
  throw InputError(name, table.header_line(),
                   "unrecognised measurement file (header \"" + header +
                       "\"); accepted: CM-DARE's feature tables, run exports, "
                       "speed_vs_num_workers, sigmetrics predictions, checkpoint and restart "
                       "tables, or the trainer's steps.csv");
}

MeasurementSet Reader::finish() {
  for (const auto& [key, sum] : runs_) {
    if (tables_.count(key) || sum.count == 0) continue;
    tables_[key] = sum;
  }
  for (const auto& [key, sum] : tables_) {
    SpeedMeasurement m;
    m.workload = key.workload;
    m.gpu = key.gpu;
    m.workers = key.workers;
    m.gpu_tflops = sum.tflops > 0 ? sum.tflops : gpu_tflops_of(key.gpu);
    m.steps_per_s = sum.sum / sum.count;
    m.source = sum.source;
    if (!(m.gpu_tflops > 0)) {
      throw InputError(m.source, 0, "no TFLOPS known for GPU " + m.gpu);
    }
    (key.cluster ? out_.cluster : out_.single_worker).push_back(m);
  }
  return std::move(out_);
}

}  // namespace

MeasurementSet read_measurements(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    throw InputError("--data " + dir + ": not a directory of measurement files");
  }
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    const std::string leaf = it->path().filename().string();
    std::error_code entry_error;
    if (!leaf.empty() && leaf[0] == '.') {
      if (it->is_directory(entry_error)) it.disable_recursion_pending();
      continue;
    }
    // A symlink loop: named, not thrown as the standard library's filesystem_error.
    const fs::file_status status = it->status(entry_error);
    if (status.type() == fs::file_type::none) {
      throw InputError(it->path().string(), 0,
                       "cannot be read: " + entry_error.message() +
                           "; accepted: measurement files and folders of them");
    }
    if (fs::is_regular_file(status)) files.push_back(it->path());
  }
  if (error) throw InputError("--data " + dir + ": " + error.message());
  std::sort(files.begin(), files.end());
  std::set<fs::path> job_dirs;
  for (const auto& file : files) {
    if (file.filename() == "steps.csv") job_dirs.insert(file.parent_path());
  }
  Reader reader(std::move(job_dirs));
  for (const auto& file : files) reader.read_file(file);
  return reader.finish();
}

}  // namespace transient::perf
