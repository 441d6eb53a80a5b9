#include "transient/train/checkpoint.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/core/structured_input.h"
#include "transient/records/job_files.h"

namespace transient::train {
namespace {

constexpr const char* kFormat = "transient-checkpoint-v2";
constexpr const char* kFormatV1 = "transient-checkpoint-v1";

c10::impl::GenericDict to_dict(const NamedTensors& tensors) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  for (const auto& [name, tensor] : tensors) dict.insert(name, tensor);
  return dict;
}

NamedTensors from_dict(const c10::IValue& value, const std::string& key, const std::string& path) {
  if (!value.isGenericDict()) {
    throw InputError(path, 0, "not a transient checkpoint: \"" + key + "\" is not a dict");
  }
  NamedTensors tensors;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor()) {
      throw InputError(path, 0, "not a transient checkpoint: \"" + key + "\" holds a non-tensor");
    }
    tensors.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
  }
  return tensors;
}

}  // namespace

std::string checkpoint_name(std::int64_t step) {
  char name[64];
  std::snprintf(name, sizeof(name), "step-%08lld.pt", static_cast<long long>(step));
  return name;
}

std::uint32_t crc32_of(const char* bytes, std::size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large buffers in pieces.
  while (size > 0) {
    const auto piece = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes), piece);
    bytes += piece;
    size -= piece;
  }
  return static_cast<std::uint32_t>(crc);
}

std::vector<char> serialize_checkpoint(const CheckpointState& state) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("format", std::string(kFormat));
  dict.insert("model", to_dict(state.model_state));
  dict.insert("model_name", state.model);
  dict.insert("optimizer", state.optimizer);
  c10::impl::GenericDict slots(c10::StringType::get(), c10::AnyType::get());
  for (const auto& [slot, tensors] : state.optimizer_state) slots.insert(slot, to_dict(tensors));
  dict.insert("optimizer_state", slots);
  dict.insert("global_batch", state.global_batch);
  dict.insert("seed", static_cast<std::int64_t>(state.seed));
  dict.insert("step", state.step);
  dict.insert("epoch", state.epoch);
  dict.insert("cursor", state.cursor);
  dict.insert("rng_state", state.rng_state);
  if (state.loss_scale > 0) {
    c10::impl::GenericDict scaler(c10::StringType::get(), c10::AnyType::get());
    scaler.insert("scale", state.loss_scale);
    scaler.insert("growth_factor", kLossScaleGrowth);
    scaler.insert("backoff_factor", kLossScaleBackoff);
    scaler.insert("growth_interval", kLossScaleInterval);
    scaler.insert("_growth_tracker", state.loss_scale_steps);
    dict.insert("grad_scaler", scaler);
  }
  // torch::pickle_save's layout (data.pkl and data/<i> in a zip archive, as torch.save writes),
  // but without the TorchScript type tags on dicts: Python's torch.load, whose default since
  // PyTorch 2.6 is weights_only=True, refuses them (torch.jit._pickle.restore_type_tag).
  std::vector<char> pickled;
  torch::jit::Pickler pickler(
      [&](const char* bytes, std::size_t size) {
        pickled.insert(pickled.end(), bytes, bytes + size);
      },
      nullptr, nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(dict);
  pickler.stop();
  std::vector<char> archive;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, std::size_t size) {
    const auto* begin = static_cast<const char*>(bytes);
    archive.insert(archive.end(), begin, begin + size);
    return size;
  });
  torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(),
                                     writer);
  writer.writeEndOfFile();
  return archive;
}

CheckpointState deserialize_checkpoint(const std::vector<char>& bytes, const std::string& path) {
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const std::exception& error) {
    throw InputError(path, 0, "cannot read the checkpoint (not a torch archive)");
  }
  if (!value.isGenericDict()) throw InputError(path, 0, "not a transient checkpoint: not a dict");
  const auto dict = value.toGenericDict();
  auto field = [&](const std::string& key) {
    auto it = dict.find(key);
    if (it == dict.end()) {
      throw InputError(path, 0, "not a transient checkpoint: no \"" + key + "\" entry");
    }
    return it->value();
  };
  const auto format = field("format").isString() ? field("format").toStringRef() : "";
  if (format != kFormat && format != kFormatV1) {
    throw InputError(
        path, 0, std::string("not a checkpoint of format ") + kFormat + " (or " + kFormatV1 + ")");
  }
  CheckpointState state;
  try {
    if (format == kFormatV1) {
      state.model = field("model").toStringRef();
      state.model_state = from_dict(field("parameters"), "parameters", path);
      const auto buffers = from_dict(field("buffers"), "buffers", path);
      state.model_state.insert(state.model_state.end(), buffers.begin(), buffers.end());
      auto momentum = from_dict(field("momentum"), "momentum", path);
      if (!momentum.empty()) state.optimizer_state.emplace_back("momentum_buffer", momentum);
    } else {
      state.model = field("model_name").toStringRef();
      state.model_state = from_dict(field("model"), "model", path);
      state.optimizer = field("optimizer").toStringRef();
      const auto slots = field("optimizer_state");
      if (!slots.isGenericDict()) {
        throw InputError(path, 0, "not a transient checkpoint: \"optimizer_state\" is not a dict");
      }
      for (const auto& entry : slots.toGenericDict()) {
        const std::string slot = entry.key().toStringRef();
        state.optimizer_state.emplace_back(slot, from_dict(entry.value(), slot, path));
      }
    }
    state.global_batch = field("global_batch").toInt();
    state.seed = static_cast<std::uint64_t>(field("seed").toInt());
    state.step = field("step").toInt();
    state.epoch = field("epoch").toInt();
    state.cursor = field("cursor").toInt();
    state.rng_state = field("rng_state").toTensor();
    if (const auto scaler = dict.find("grad_scaler"); scaler != dict.end()) {
      const auto entries = scaler->value().toGenericDict();
      const auto scale = entries.find("scale");
      const auto steps = entries.find("_growth_tracker");
      if (scale == entries.end() || steps == entries.end()) {
        throw InputError(path, 0, "its grad_scaler lacks \"scale\" or \"_growth_tracker\"");
      }
      state.loss_scale = scale->value().toDouble();
      state.loss_scale_steps = steps->value().toInt();
      if (!(state.loss_scale > 0) || state.loss_scale_steps < 0) {
        throw InputError(path, 0, "its grad_scaler holds a scale that is not positive");
      }
    }
  } catch (const c10::Error&) {
    throw InputError(path, 0, "not a transient checkpoint: an entry of the wrong type");
  }
  return state;
}

CheckpointDirectory::CheckpointDirectory(std::string dir, int keep)
    : dir_(std::move(dir)), keep_(std::max(1, keep)) {}

std::string CheckpointDirectory::manifest_path() const {
  return (std::filesystem::path(dir_) / records::kManifestFile).string();
}

std::string CheckpointDirectory::path_of(const CheckpointRecord& record) const {
  return (std::filesystem::path(dir_) / record.file).string();
}

CheckpointRecord CheckpointDirectory::write(const CheckpointState& state) {
  const auto start = std::chrono::steady_clock::now();
  const auto bytes = serialize_checkpoint(state);
  CheckpointRecord record;
  record.file = checkpoint_name(state.step);
  record.step = state.step;
  record.bytes = static_cast<std::int64_t>(bytes.size());
  record.crc32 = crc32_of(bytes.data(), bytes.size());
  write_file_atomically(path_of(record), std::string_view(bytes.data(), bytes.size()));
  add_to_manifest(record);
  record.write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return record;
}

std::string CheckpointDirectory::incoming_path(std::int64_t step, const std::string& sender) const {
  return (std::filesystem::path(dir_) / (checkpoint_name(step) + ".tmp.incoming-" + sender))
      .string();
}

void CheckpointDirectory::adopt(const std::string& temporary, const CheckpointRecord& record) {
  std::error_code error;
  std::filesystem::rename(temporary, path_of(record), error);
  if (error) {
    std::filesystem::remove(temporary, error);
    throw InputError(path_of(record), 0, "cannot store the checkpoint: " + error.message());
  }
  sync_directory(dir_);
  add_to_manifest(record);
}

namespace {

// An exclusive lock on a checkpoint directory's manifest, held while it lives.
class ManifestLock {
 public:
  explicit ManifestLock(const std::string& dir)
      : fd_(::open((std::filesystem::path(dir) / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC,
                   0644)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~ManifestLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  ManifestLock(const ManifestLock&) = delete;
  ManifestLock& operator=(const ManifestLock&) = delete;

 private:
  int fd_;
};

}  // namespace

void CheckpointDirectory::add_to_manifest(const CheckpointRecord& record) const {
  // Two workers may write at once (a rank 0 dropped as silent that wakes mid-write, and the new
  // one): the manifest's read-modify-write is under an exclusive lock on the directory, and the
  // manifest is kept in step order, so the newest checkpoint is the one of the latest step.
  ManifestLock lock(dir_);
  auto records = list();
  std::vector<CheckpointRecord> kept;
  for (const auto& old : records) {
    if (old.step != record.step) kept.push_back(old);
  }
  kept.push_back(record);
  std::stable_sort(kept.begin(), kept.end(),
                   [](const auto& a, const auto& b) { return a.step < b.step; });
  std::vector<CheckpointRecord> dropped;
  while (static_cast<int>(kept.size()) > keep_) {
    dropped.push_back(kept.front());
    kept.erase(kept.begin());
  }
  write_manifest(kept);
  // Only now that the manifest no longer lists them may the old files go.
  for (const auto& old : dropped) std::filesystem::remove(path_of(old));
}

void CheckpointDirectory::write_manifest(const std::vector<CheckpointRecord>& records) const {
  nlohmann::json manifest;
  manifest["format"] = kFormat;
  manifest["checkpoints"] = nlohmann::json::array();
  for (const auto& record : records) {
    manifest["checkpoints"].push_back({{"file", record.file},
                                       {"step", record.step},
                                       {"bytes", record.bytes},
                                       {"crc32", record.crc32}});
  }
  write_file_atomically(manifest_path(), manifest.dump(2) + "\n");
}

std::vector<CheckpointRecord> CheckpointDirectory::list() const {
  const std::string path = manifest_path();
  if (!std::filesystem::exists(path)) return {};
  const auto manifest = parse_json(read_file(path), path);
  std::vector<CheckpointRecord> records;
  try {
    for (const auto& entry : manifest.at("checkpoints")) {
      CheckpointRecord record;
      record.file = entry.at("file").get<std::string>();
      record.step = entry.at("step").get<std::int64_t>();
      record.bytes = entry.at("bytes").get<std::int64_t>();
      record.crc32 = entry.at("crc32").get<std::uint32_t>();
      if (record.file.find('/') != std::string::npos) {
        throw InputError(path, 0, "lists a checkpoint outside its directory: " + record.file);
      }
      records.push_back(record);
    }
  } catch (const nlohmann::json::exception& error) {
    throw InputError(path, 0, std::string("not a checkpoint manifest: ") + error.what());
  }
  return records;
}

std::vector<char> CheckpointDirectory::read_verified(const CheckpointRecord& record) const {
  const std::string path = path_of(record);
  const std::string bytes = read_file(path);
  if (static_cast<std::int64_t>(bytes.size()) != record.bytes) {
    throw InputError(path, 0,
                     "checkpoint is " + std::to_string(bytes.size()) +
                         " bytes, the manifest says " + std::to_string(record.bytes) +
                         " (truncated or overwritten)");
  }
  if (crc32_of(bytes.data(), bytes.size()) != record.crc32) {
    throw InputError(path, 0, "checkpoint is corrupt (CRC-32 differs from the manifest's)");
  }
  return std::vector<char>(bytes.begin(), bytes.end());
}

std::vector<CheckpointRecord> CheckpointDirectory::set_aside_from(std::int64_t step,
                                                                  const std::string& prefix) {
  ManifestLock lock(dir_);
  std::vector<CheckpointRecord> kept;
  std::vector<CheckpointRecord> set_aside;
  for (const auto& record : list()) (record.step >= step ? set_aside : kept).push_back(record);
  if (set_aside.empty()) return set_aside;
  write_manifest(kept);
  // Only now that the manifest no longer lists them are the files renamed.
  for (const auto& record : set_aside) {
    std::error_code ignored;  // a file already missing was not a checkpoint to resume from
    std::filesystem::rename(path_of(record), std::filesystem::path(dir_) / (prefix + record.file),
                            ignored);
  }
  return set_aside;
}

void CheckpointDirectory::remove_leftovers() const {
  if (!std::filesystem::is_directory(dir_)) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) {
      std::filesystem::remove(entry.path());
    }
  }
}

CheckpointWriter::CheckpointWriter(Write write,
                                   std::function<void(const CheckpointRecord&)> on_written)
    : write_(std::move(write)), on_written_(std::move(on_written)), thread_([this] { run(); }) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CheckpointWriter::rethrow_locked() {
  if (error_) {
    auto error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

void CheckpointWriter::abandon() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.reset();
    stopping_ = true;
  }
  changed_.notify_all();
}

void CheckpointWriter::submit(CheckpointState state) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !pending_.has_value() || error_; });
  rethrow_locked();
  pending_ = std::move(state);
  changed_.notify_all();
}

void CheckpointWriter::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return (!pending_.has_value() && !busy_) || error_; });
  rethrow_locked();
}

void CheckpointWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return pending_.has_value() || stopping_; });
    if (!pending_.has_value()) return;  // stopping, nothing left to write
    CheckpointState state = std::move(*pending_);
    pending_.reset();
    busy_ = true;
    lock.unlock();
    changed_.notify_all();  // submit() may hand over the next state while this one is written
    std::exception_ptr error;
    try {
      const auto record = write_(state);
      if (on_written_) on_written_(record);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    busy_ = false;
    if (error) error_ = error;
    changed_.notify_all();
  }
}

}  // namespace transient::train
