// The `transient worker` process: joins the job through the coordinator's store, builds the
// generation's ProcessGroupGloo and trains its shard of every step.
#include <signal.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "transient/core/atomic_file.h"
#include "transient/core/error.h"
#include "transient/train/checkpoint.h"
#include "transient/train/fashion_mnist.h"
#include "transient/train/models.h"
#include "transient/train/protocol.h"
#include "transient/train/sharding.h"
#include "transient/train/store_text.h"
#include "transient/train/trainer.h"

namespace transient::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
};

Endpoint parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  Endpoint endpoint;
  if (colon != std::string::npos && colon > 0) {
    endpoint.host = text.substr(0, colon);
    try {
      const int port = std::stoi(text.substr(colon + 1));
      if (port > 0 && port < 65536) endpoint.port = static_cast<std::uint16_t>(port);
    } catch (const std::exception&) {
    }
  }
  if (endpoint.port == 0) {
    throw InputError("--coordinator: \"" + text + "\" is not HOST:PORT (e.g. 127.0.0.1:29500)");
  }
  return endpoint;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

void post_event(c10d::Store& store, const nlohmann::json& event) {
  const auto n = store.add("events/count", 1);
  set_text(store, "events/" + std::to_string(n), event.dump());
}

// One flat buffer per bucket; each parameter's .grad is a view into it, so backward accumulates
// straight into the buffer and the all-reduce needs no copy. The last bucket carries two extra
// elements after the gradients: this worker's part of the step's mean loss and a stop flag, so
// that they travel inside the gradient all-reduce instead of costing a round trip of their own.
class GradientBuckets {
 public:
  GradientBuckets(const std::vector<torch::Tensor>& parameters, std::int64_t bucket_bytes) {
    const std::int64_t bucket_elements = std::max<std::int64_t>(1, bucket_bytes / 4);
    std::vector<std::vector<torch::Tensor>> groups(1);
    std::int64_t filled = 0;
    for (const auto& parameter : parameters) {
      if (filled > 0 && filled + parameter.numel() > bucket_elements) {
        groups.emplace_back();
        filled = 0;
      }
      groups.back().push_back(parameter);
      filled += parameter.numel();
    }
    for (std::size_t b = 0; b < groups.size(); ++b) {
      std::int64_t size = 0;
      for (const auto& parameter : groups[b]) size += parameter.numel();
      const bool last = b + 1 == groups.size();
      auto flat = torch::zeros({size + (last ? kControlElements : 0)}, torch::kFloat32);
      std::int64_t offset = 0;
      for (auto parameter : groups[b]) {
        parameter.mutable_grad() =
            flat.narrow(0, offset, parameter.numel()).view(parameter.sizes());
        offset += parameter.numel();
      }
      if (last) control_ = flat.narrow(0, size, kControlElements);
      flats_.push_back(flat);
    }
  }

  void zero() {
    for (auto& flat : flats_) flat.zero_();
  }
  std::vector<torch::Tensor>& flats() { return flats_; }
  torch::Tensor& control() { return control_; }

 private:
  static constexpr std::int64_t kControlElements = 2;
  std::vector<torch::Tensor> flats_;
  torch::Tensor control_;
};

// This worker's rows of steps.csv, in a part file of its own that the coordinator merges.
class StepRecorder {
 public:
  explicit StepRecorder(const std::string& path) : out_(path, std::ios::app) {
    if (!out_) throw InputError(path, 0, "cannot open the step records for writing");
  }
  void record(std::int64_t step, int worker, std::int64_t batch, double data_s, double compute_s,
              double allreduce_s, double optimizer_s, double loss) {
    char line[256];
    std::snprintf(line, sizeof(line), "%lld,%d,%lld,%.6f,%.6f,%.6f,%.6f,%.6f\n",
                  static_cast<long long>(step), worker, static_cast<long long>(batch), data_s,
                  compute_s, allreduce_s, optimizer_s, loss);
    // Flushed at once (one write(2) per step): a SIGKILLed worker loses no row of a step that a
    // checkpoint already covers.
    out_ << line << std::flush;
  }

 private:
  std::ofstream out_;
};

std::string sgd_state_key(const torch::Tensor& parameter) {
  // torch::optim::SGD keys its per-parameter state by the address of the TensorImpl.
  return c10::guts::to_string(parameter.unsafeGetTensorImpl());
}

class Worker {
 public:
  Worker(const JobConfig& job, const GenerationConfig& generation, int rank,
         c10::intrusive_ptr<c10d::Store> store)
      : job_(job),
        options_(job.options),
        generation_(generation),
        rank_(rank),
        world_size_(static_cast<int>(generation.members.size())),
        store_(std::move(store)),
        checkpoints_((std::filesystem::path(options_.job_dir) / "checkpoints").string(),
                     options_.keep) {
    torch::manual_seed(options_.seed);
    data_ = FashionMnist::load(options_.data_dir);
    data_.train.images = data_.train.images.narrow(0, 0, job_.train_samples);
    data_.train.labels = data_.train.labels.narrow(0, 0, job_.train_samples);
    if (options_.test_subset > 0 && options_.test_subset < data_.test.labels.size(0)) {
      data_.test.images = data_.test.images.narrow(0, 0, options_.test_subset);
      data_.test.labels = data_.test.labels.narrow(0, 0, options_.test_subset);
    }
    model_ = make_model(options_.model, ImageShape{1, 28, 28});
    model_->train();
    for (const auto& item : model_->named_parameters()) {
      parameter_names_.push_back(item.key());
      parameters_.push_back(item.value());
    }
    optimizer_ =
        std::make_unique<torch::optim::SGD>(parameters_, torch::optim::SGDOptions(options_.lr)
                                                             .momentum(options_.momentum)
                                                             .weight_decay(options_.weight_decay));
    if (!generation_.checkpoint.empty()) load_checkpoint();
    step_ = generation_.start_step;

    auto pg_options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(120));
    pg_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    auto prefix = c10::make_intrusive<c10d::PrefixStore>(
        generation_prefix(generation_.generation) + "pg", store_);
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(prefix, rank_, world_size_, pg_options);
    buckets_ = std::make_unique<GradientBuckets>(parameters_, options_.bucket_bytes);
  }

  WorkerResult run() {
    const std::string records_dir = (std::filesystem::path(options_.job_dir) / "records").string();
    StepRecorder recorder(
        (std::filesystem::path(records_dir) / ("steps-" + std::to_string(rank_) + ".part.csv"))
            .string());
    std::unique_ptr<CheckpointWriter> writer;
    if (rank_ == 0) {
      writer = std::make_unique<CheckpointWriter>(checkpoints_, [this](const CheckpointRecord& r) {
        post_event(*store_, {{"event", "checkpoint"},
                             {"step", r.step},
                             {"bytes", r.bytes},
                             {"write_s", r.write_s},
                             {"file", r.file}});
      });
    }
    const std::string prefix = generation_prefix(generation_.generation);
    std::int64_t last_checkpoint_step = generation_.start_step;
    auto last_checkpoint_time = Clock::now();
    std::int64_t evaluated_at = -1;
    WorkerResult result;
    std::vector<std::int64_t> permutation;
    std::int64_t permutation_epoch = -1;
    bool stop = false;

    while (step_ < job_.total_steps && !stop) {
      const auto position = position_of_step(step_, job_.train_samples, options_.global_batch);
      auto phase_start = Clock::now();
      if (position.epoch != permutation_epoch) {
        permutation = epoch_permutation(job_.train_samples, options_.seed, position.epoch);
        permutation_epoch = position.epoch;
      }
      const Shard shard = shard_of(position, world_size_, rank_);
      torch::Tensor images;
      torch::Tensor labels;
      if (shard.count > 0) {
        auto index =
            torch::from_blob(permutation.data() + shard.begin, {shard.count}, torch::kInt64);
        images = normalise_images(data_.train.images.index_select(0, index));
        labels = data_.train.labels.index_select(0, index);
      }
      const double data_s = seconds_since(phase_start);

      phase_start = Clock::now();
      buckets_->zero();
      double local_loss = 0;
      if (shard.count > 0) {
        auto scores = model_->forward(images);
        // Summed over the shard and divided by the global batch: the all-reduced sum is then
        // exactly the mean gradient of the global batch, whatever the split.
        auto loss = torch::nn::functional::cross_entropy(
                        scores, labels,
                        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)) /
                    static_cast<double>(position.batch);
        loss.backward();
        local_loss = loss.item<double>();
      }
      bool stop_requested = false;
      if (rank_ == 0) stop_requested = store_->check({"control/stop"});
      buckets_->control()[0] = local_loss;
      buckets_->control()[1] = stop_requested ? 1.0 : 0.0;
      const double compute_s = seconds_since(phase_start);

      phase_start = Clock::now();
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      for (auto& flat : buckets_->flats()) {
        std::vector<torch::Tensor> tensors{flat};
        works.push_back(group_->allreduce(tensors));
      }
      for (auto& work : works) work->wait();
      const double allreduce_s = seconds_since(phase_start);

      phase_start = Clock::now();
      const double lr = learning_rate_at(step_, job_.total_steps, job_.warmup_steps, options_.lr);
      for (auto& group : optimizer_->param_groups()) {
        static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
      }
      optimizer_->step();
      const double optimizer_s = seconds_since(phase_start);

      ++step_;
      const double loss = buckets_->control()[0].item<double>();
      recorder.record(step_, rank_, shard.count, data_s, compute_s, allreduce_s, optimizer_s, loss);
      stop = buckets_->control()[1].item<double>() > 0 ||
             (options_.stop_at_step > 0 && step_ >= options_.stop_at_step);
      if (rank_ == 0) {
        set_text(*store_, prefix + "progress",
                 to_json(ProgressReport{step_, position.epoch, loss, lr}).dump());
      }

      const bool epoch_end = position.cursor + position.batch >= job_.train_samples;
      if (epoch_end) {
        std::tie(result.test_accuracy, result.test_loss) = evaluate();
        evaluated_at = step_;
        if (rank_ == 0) {
          post_event(*store_, {{"event", "epoch"},
                               {"epoch", position.epoch + 1},
                               {"step", step_},
                               {"train_loss", loss},
                               {"test_accuracy", result.test_accuracy},
                               {"test_loss", result.test_loss}});
        }
      }
      if (writer) {
        const bool due_by_steps =
            options_.checkpoint_every_steps > 0 && step_ % options_.checkpoint_every_steps == 0;
        const bool due_by_time = options_.checkpoint_every_s > 0 &&
                                 seconds_since(last_checkpoint_time) >= options_.checkpoint_every_s;
        if (due_by_steps || due_by_time) {
          writer->submit(snapshot());
          last_checkpoint_step = step_;
          last_checkpoint_time = Clock::now();
        }
      }
    }
    result.step = step_;
    result.stopped = step_ < job_.total_steps;
    if (!result.stopped && evaluated_at != step_) {
      std::tie(result.test_accuracy, result.test_loss) = evaluate();
    }
    if (writer) {
      // The last state is always kept, so a finished or paused job can be continued or read.
      if (last_checkpoint_step != step_ || step_ == 0) writer->submit(snapshot());
      writer->wait();
    }
    return result;
  }

 private:
  void load_checkpoint() {
    CheckpointRecord record;
    record.file = generation_.checkpoint;
    record.bytes = generation_.checkpoint_bytes;
    record.crc32 = generation_.checkpoint_crc32;
    const std::string path = checkpoints_.path_of(record);
    const auto state = deserialize_checkpoint(checkpoints_.read_verified(record), path);
    if (state.model != options_.model || state.global_batch != options_.global_batch) {
      throw InputError(path, 0, "checkpoint of another job (model " + state.model + ")");
    }
    torch::NoGradGuard no_grad;
    auto copy_into = [&](const NamedTensors& saved,
                         torch::OrderedDict<std::string, torch::Tensor> targets, const char* what) {
      if (saved.size() != targets.size()) {
        throw InputError(path, 0, std::string("checkpoint holds a different number of ") + what);
      }
      for (const auto& [name, tensor] : saved) {
        auto* target = targets.find(name);
        if (target == nullptr || !target->sizes().equals(tensor.sizes())) {
          throw InputError(path, 0,
                           std::string("checkpoint's ") + what + " \"" + name +
                               "\" does not fit the model " + options_.model);
        }
        target->copy_(tensor);
      }
    };
    copy_into(state.parameters, model_->named_parameters(), "parameters");
    copy_into(state.buffers, model_->named_buffers(), "buffers");
    auto parameters = model_->named_parameters();
    for (const auto& [name, buffer] : state.momentum) {
      auto* parameter = parameters.find(name);
      if (parameter == nullptr) {
        throw InputError(path, 0, "checkpoint's momentum \"" + name + "\" has no parameter");
      }
      auto param_state = std::make_unique<torch::optim::SGDParamState>();
      param_state->momentum_buffer(buffer.clone());
      optimizer_->state()[sgd_state_key(*parameter)] = std::move(param_state);
    }
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state.rng_state);
  }

  CheckpointState snapshot() {
    CheckpointState state;
    state.model = options_.model;
    state.global_batch = options_.global_batch;
    state.seed = options_.seed;
    state.step = step_;
    const auto next = position_of_step(step_, job_.train_samples, options_.global_batch);
    state.epoch = next.epoch;
    state.cursor = next.cursor;
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      state.parameters.emplace_back(parameter_names_[i], parameters_[i].detach().clone());
      auto it = optimizer_->state().find(sgd_state_key(parameters_[i]));
      if (it != optimizer_->state().end()) {
        const auto& sgd_state = static_cast<torch::optim::SGDParamState&>(*it->second);
        if (sgd_state.momentum_buffer().defined()) {
          state.momentum.emplace_back(parameter_names_[i], sgd_state.momentum_buffer().clone());
        }
      }
    }
    for (const auto& item : model_->named_buffers()) {
      state.buffers.emplace_back(item.key(), item.value().clone());
    }
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    state.rng_state = generator.get_state();
    return state;
  }

  // Rank 0's batch-norm statistics become everyone's (each worker saw only its shards), then the
  // test set is split among the workers and the counts all-reduced.
  std::pair<double, double> evaluate() {
    torch::NoGradGuard no_grad;
    for (auto& item : model_->named_buffers()) {
      std::vector<torch::Tensor> tensors{item.value()};
      group_->broadcast(tensors)->wait();
    }
    model_->eval();
    const std::int64_t samples = data_.test.labels.size(0);
    const auto sizes = split_batch(samples, world_size_);
    std::int64_t begin = 0;
    for (int r = 0; r < rank_; ++r) begin += sizes[static_cast<std::size_t>(r)];
    const std::int64_t end = begin + sizes[static_cast<std::size_t>(rank_)];
    double correct = 0;
    double loss_sum = 0;
    for (std::int64_t at = begin; at < end; at += 1000) {
      const std::int64_t count = std::min<std::int64_t>(1000, end - at);
      auto images = normalise_images(data_.test.images.narrow(0, at, count));
      auto labels = data_.test.labels.narrow(0, at, count);
      auto scores = model_->forward(images);
      loss_sum += torch::nn::functional::cross_entropy(
                      scores, labels,
                      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                      .item<double>();
      correct += scores.argmax(1).eq(labels).sum().item<double>();
    }
    model_->train();
    std::vector<torch::Tensor> totals{
        torch::tensor({correct, loss_sum, static_cast<double>(end - begin)}, torch::kFloat64)};
    group_->allreduce(totals)->wait();
    const double count = totals[0][2].item<double>();
    return {totals[0][0].item<double>() / count, totals[0][1].item<double>() / count};
  }

  JobConfig job_;
  const TrainOptions& options_;
  GenerationConfig generation_;
  int rank_;
  int world_size_;
  c10::intrusive_ptr<c10d::Store> store_;
  CheckpointDirectory checkpoints_;
  FashionMnist data_;
  std::shared_ptr<Model> model_;
  std::vector<std::string> parameter_names_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::int64_t step_ = 0;
};

}  // namespace

int run_worker(const WorkerOptions& options) {
  // Ctrl-C reaches the whole process group: the coordinator turns it into an orderly pause.
  ::signal(SIGINT, SIG_IGN);
  const Endpoint endpoint = parse_endpoint(options.coordinator);
  if (options.worker_id.empty() || options.worker_id.find('/') != std::string::npos) {
    throw InputError("--worker-id: \"" + options.worker_id + "\" must be non-empty without '/'");
  }
  const std::string token = trimmed(read_file(options.token_file));

  c10d::TCPStoreOptions store_options;
  store_options.port = endpoint.port;
  store_options.isServer = false;
  store_options.waitWorkers = false;
  store_options.timeout = std::chrono::seconds(300);
  auto store = c10::make_intrusive<c10d::TCPStore>(endpoint.host, store_options);

  set_text(*store, "join/" + options.worker_id, token);
  const JobConfig job = job_config_from_json(nlohmann::json::parse(get_text(*store, "job/config")));
  const GenerationConfig generation = generation_config_from_json(
      nlohmann::json::parse(get_text(*store, generation_prefix(0) + "config")));
  const auto member =
      std::find(generation.members.begin(), generation.members.end(), options.worker_id);
  if (member == generation.members.end()) {
    throw InputError("the coordinator at " + options.coordinator + " did not admit worker " +
                     options.worker_id + " (wrong token?)");
  }
  const int rank = static_cast<int>(member - generation.members.begin());
  torch::set_num_threads(std::max(1, options.threads > 0 ? options.threads : job.options.threads));

  Worker worker(job, generation, rank, store);
  const WorkerResult result = worker.run();
  set_text(*store, generation_prefix(generation.generation) + "done/" + std::to_string(rank),
           to_json(result).dump());
  return 0;
}

}  // namespace transient::train
