#include "transient/train/gradient_buckets.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>

#include "transient/core/error.h"

namespace transient::train {
namespace {

constexpr std::int64_t kControlElements = 5;
// DDP's first bucket: small, so that its all-reduce starts early in backward.
constexpr std::int64_t kFirstBucketBytes = 1 << 20;

// A bucket of `size` elements cut into one slice per member, as even as the size allows (the
// first `size % members` slices one element longer).
std::vector<std::int64_t> slice_sizes(std::int64_t size, int members) {
  std::vector<std::int64_t> slices(static_cast<std::size_t>(members), size / members);
  for (std::int64_t i = 0; i < size % members; ++i) ++slices[static_cast<std::size_t>(i)];
  return slices;
}

// Whether a bucket of `size` elements goes whole to every member (one round) rather than in
// slices (two rounds of the same bytes in all): between two members always, and when it is too
// small to give every member a slice (alone, a member's bucket is the sum as it is).
bool swaps_whole(std::int64_t size, int members) { return members <= 2 || size < members; }

// Makes `buffer` a tensor of `elements` unless it is one already (kept from step to step while
// the generation's size stays; each of a bucket's buffers on its own, since which of them a sum
// uses depends on the member count).
void sized(torch::Tensor& buffer, std::int64_t elements, const torch::TensorOptions& options) {
  if (!buffer.defined() || buffer.numel() != elements) buffer = torch::empty({elements}, options);
}

}  // namespace

void wait_all(std::vector<c10::intrusive_ptr<c10d::Work>>& works, const AbortCheck& aborted) {
  // How often a running work is left to ask `aborted`: a wait that ends early costs nothing,
  // since Work::wait returns as soon as the work completes.
  constexpr std::chrono::milliseconds kPoll(20);
  std::string failure;
  for (auto& work : works) {
    while (aborted && !work->isCompleted()) {
      if (aborted()) {
        throw CollectiveAborted(failure.empty() ? "the coordinator ended the generation" : failure);
      }
      try {
        work->wait(kPoll);
      } catch (const std::exception&) {
        // Timed out ("Operation timed out!") or failed: isCompleted() tells, and the wait below
        // gives a completed work's own outcome.
      }
    }
    try {
      work->wait();
    } catch (const std::exception& error) {
      if (failure.empty()) failure = error.what();
    }
  }
  if (!failure.empty()) throw CollectiveFailure(failure);
}

GradientBuckets::GradientBuckets(const std::vector<torch::Tensor>& parameters,
                                 std::int64_t bucket_bytes, Compression compression)
    : compression_(compression),
      device_(parameters.empty() ? torch::Device(torch::kCPU) : parameters.front().device()),
      parameters_(parameters),
      views_(parameters.size()),
      bucket_of_(parameters.size()),
      reached_(parameters.size(), false) {
  // Filled from the last parameter backwards (backward finishes the last layers first), and
  // closed once it holds at least its size, as DDP's reducer closes its buckets: the first at
  // 1 MiB (or `bucket_bytes` if smaller), so that communication starts early in backward, the
  // others at `bucket_bytes`; a large tensor joins the bucket before it rather than leaving that
  // one small. Every bucket is a collective of its own, and on a long path each costs several
  // round trips whatever its size.
  const std::int64_t bucket_elements = std::max<std::int64_t>(1, bucket_bytes / 4);
  const std::int64_t first_elements =
      std::max<std::int64_t>(1, std::min(kFirstBucketBytes, bucket_bytes) / 4);
  buckets_.emplace_back();
  std::int64_t filled = 0;
  for (std::size_t i = parameters.size(); i-- > 0;) {
    if (filled >= (buckets_.size() == 1 ? first_elements : bucket_elements)) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().members.push_back(i);
    bucket_of_[i] = buckets_.size() - 1;
    filled += parameters[i].numel();
  }
  allocate(true);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    auto accumulator = torch::autograd::impl::grad_accumulator(parameters[i]);
    accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, i](const torch::autograd::variable_list& outputs,
                  const torch::autograd::variable_list&) {
          ready(i);
          return outputs;
        }));
    accumulators_.push_back(std::move(accumulator));
  }
}

void GradientBuckets::allocate(bool device_too) {
  // The control values ride at the end of the first bucket launched, compressed or not: a
  // collective of their own would cost a path's round trips for 16 bytes.
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    std::int64_t size = 0;
    for (const std::size_t i : bucket.members) size += parameters_[i].numel();
    const bool carries_control = b == 0;
    const auto flags = static_cast<std::int64_t>(bucket.members.size());
    // On a GPU the host buffer is pinned: copies to and from it run without staging.
    bucket.flat = torch::zeros({size + flags + (carries_control ? kControlElements : 0)},
                               torch::TensorOptions(torch::kFloat32).pinned_memory(on_device()));
    bucket.used = bucket.flat.narrow(0, size, flags);
    // On a GPU a new host buffer leaves the device buffer and the .grad views into it as they are.
    if (!on_device() || device_too) {
      if (on_device()) {
        bucket.grads = torch::zeros({size}, torch::TensorOptions(torch::kFloat32).device(device_));
      }
      const torch::Tensor& views = on_device() ? bucket.grads : bucket.flat;
      std::int64_t offset = 0;
      for (const std::size_t i : bucket.members) {
        torch::Tensor parameter = parameters_[i];
        // Laid out as the parameter is (channels-last convolution weights: models.h), so that
        // autograd accumulates into it without a copy to another layout.
        const auto slot = views.narrow(0, offset, parameter.numel());
        views_[i] = parameter.is_non_overlapping_and_dense()
                        ? slot.as_strided(parameter.sizes(), parameter.strides())
                        : slot.view(parameter.sizes());
        parameter.mutable_grad() = views_[i];
        offset += parameter.numel();
      }
    }
    if (carries_control) control_ = bucket.flat.narrow(0, size + flags, kControlElements);
    bucket.sent = bucket.received = bucket.summed = torch::Tensor();  // made at the first launch
    bucket.first.reset();
    bucket.second.reset();
    if (compression_ != Compression::kNone) {
      bucket.wire =
          torch::zeros({bucket.flat.numel()},
                       compression_ == Compression::kBf16 ? torch::kBFloat16 : torch::kFloat16);
    }
  }
}

GradientBuckets::~GradientBuckets() {
  // The hooks capture `this` and live in the accumulators, which only this object and a graph
  // being differentiated hold (a parameter holds its accumulator weakly): none runs once this
  // object is gone, as long as no backward outlives it (the worker's never does).
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

void GradientBuckets::begin(c10::intrusive_ptr<c10d::ProcessGroupGloo> group, bool keep) {
  std::lock_guard<std::mutex> lock(mutex_);
  TRANSIENT_CHECK(!keep || (on_device() ? own_on_device_ : own_));  // kept: this member's own
  own_ = true;
  own_on_device_ = true;
  // The gradients finish() took away (no member's backward reached them) are views again.
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i].grad().defined()) parameters_[i].mutable_grad() = views_[i];
  }
  if (!keep) std::fill(reached_.begin(), reached_.end(), false);
  for (auto& bucket : buckets_) {
    if (!keep && on_device()) {
      bucket.grads.zero_();
    } else if (!keep) {
      bucket.flat.zero_();
    }
    bucket.pending = static_cast<int>(bucket.members.size());
    bucket.first.reset();
    bucket.second.reset();
  }
  if (on_device()) control_.zero_();  // the host buffers' gradients are copied in whole
  group_ = std::move(group);
  error_.clear();
  next_ = 0;
  armed_ = true;
}

std::int64_t GradientBuckets::launched() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<std::int64_t>(next_);
}

bool GradientBuckets::holds_own_gradients() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return on_device() ? own_on_device_ : own_;
}

std::int64_t GradientBuckets::rounds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::int64_t rounds = 0;
  for (const auto& bucket : buckets_) rounds += (bucket.first ? 1 : 0) + (bucket.second ? 1 : 0);
  return rounds;
}

void GradientBuckets::ready(std::size_t parameter) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_) return;
  reached_[parameter] = true;
  --buckets_[bucket_of_[parameter]].pending;
  launch_ready_locked();
}

void GradientBuckets::launch_ready_locked() {
  while (next_ < buckets_.size() && buckets_[next_].pending <= 0 && error_.empty()) {
    launch_locked(buckets_[next_]);
    ++next_;
  }
}

void GradientBuckets::launch_locked(Bucket& bucket) {
  // This member's flags, summed with the gradients: how many members' backward reached each.
  float* used = bucket.used.data_ptr<float>();
  for (std::size_t m = 0; m < bucket.members.size(); ++m) {
    used[m] = reached_[bucket.members[m]] ? 1.0F : 0.0F;
  }
  try {
    const int members = group_->getSize();
    if (on_device()) {
      if (members == 1) return;  // the sum is this member's own, where it is
      // Waits for the GPU to finish this bucket's gradients (backward's later layers are queued
      // already); the earlier buckets' rounds go on meanwhile.
      bucket.flat.narrow(0, 0, bucket.grads.numel()).copy_(bucket.grads);
    }
    torch::Tensor source = bucket.flat;
    if (compression_ != Compression::kNone) {
      bucket.wire.copy_(bucket.flat);
      source = bucket.wire;
    }
    if (members == 1) return;  // the sum is this member's own
    const std::int64_t size = source.numel();
    if (swaps_whole(size, members)) {
      // Nothing to itself: between two members the buffer itself is sent, with no copy.
      std::vector<std::int64_t> counts(static_cast<std::size_t>(members), size);
      counts[static_cast<std::size_t>(group_->getRank())] = 0;
      torch::Tensor sent = source;
      if (members > 2) {  // a bucket too small for slices: one copy for each other member
        sized(bucket.sent, (members - 1) * size, source.options());
        for (int to = 0; to < members - 1; ++to) {
          bucket.sent.narrow(0, to * size, size).copy_(source);
        }
        sent = bucket.sent;
      }
      sized(bucket.received, (members - 1) * size, source.options());
      // Two vectors: c10d moves each count vector it is given into the work.
      std::vector<std::int64_t> received_counts = counts;
      bucket.first = group_->alltoall_base(bucket.received, sent, received_counts, counts);
      return;
    }
    std::vector<std::int64_t> slices = slice_sizes(size, members);
    const std::int64_t mine = slices[static_cast<std::size_t>(group_->getRank())];
    // Room for the parts of this member's slice now, and for the summed slices of the whole
    // bucket in the second round (uncompressed).
    sized(bucket.received, std::max(members * mine, size), source.options());
    torch::Tensor parts = bucket.received.narrow(0, 0, members * mine);
    std::vector<std::int64_t> from_each(static_cast<std::size_t>(members), mine);
    bucket.first = group_->alltoall_base(parts, source, from_each, slices);
  } catch (const std::exception& error) {
    error_ = error.what();  // backward goes on; finish() says what went wrong
  }
}

void GradientBuckets::sum_first_round(Bucket& bucket) {
  const int members = group_->getSize();
  torch::Tensor target = compression_ == Compression::kNone ? bucket.flat : bucket.wire;
  const std::int64_t size = target.numel();
  // A whole bucket is written by the sum below; one summed in slices only once its second round
  // is done (finish()).
  if (swaps_whole(size, members)) own_ = false;
  if (members == 1) {
    if (compression_ != Compression::kNone) bucket.flat.copy_(bucket.wire);
    return;
  }
  const int rank = group_->getRank();
  if (members == 2) {
    // One addition, the same on both members (a + b is b + a); half-precision operands are
    // added in fp32 and the sum rounded once.
    target.add_(bucket.received);
    if (compression_ != Compression::kNone) bucket.flat.copy_(bucket.wire);
    return;
  }
  if (swaps_whole(size, members)) {
    // Every member's buffer, its own from `target` and the others' as received (in rank order,
    // itself left out), added in rank order in fp32: every member makes the same additions in
    // the same order, so every member ends with the same bits.
    const auto part = [&](int from) {
      return from == rank ? target
                          : bucket.received.narrow(0, (from < rank ? from : from - 1) * size, size);
    };
    torch::Tensor sum = part(0).to(torch::kFloat32, false, true);
    for (int from = 1; from < members; ++from) sum.add_(part(from));
    target.copy_(sum);  // rounded once to half precision when compressing
    if (compression_ != Compression::kNone) bucket.flat.copy_(bucket.wire);
    return;
  }
  // This member's slice, summed, then sent to every member (itself too) into its place.
  std::vector<std::int64_t> slices = slice_sizes(size, members);
  const std::int64_t mine = slices[static_cast<std::size_t>(rank)];
  // The parts of this member's slice, one from each member in rank order, added in fp32.
  torch::Tensor sum = bucket.received.narrow(0, 0, mine).to(torch::kFloat32, false, true);
  for (int from = 1; from < members; ++from) {
    sum.add_(bucket.received.narrow(0, from * mine, mine));
  }
  sized(bucket.summed, members * mine, target.options());
  for (int to = 0; to < members; ++to) bucket.summed.narrow(0, to * mine, mine).copy_(sum);
  std::vector<std::int64_t> to_each(static_cast<std::size_t>(members), mine);
  // Into `received` (the parts are summed) or the half-precision copy, not the bucket itself:
  // a second round that fails half-way leaves this member's gradients whole.
  torch::Tensor gathered =
      compression_ == Compression::kNone ? bucket.received.narrow(0, 0, size) : bucket.wire;
  bucket.second = group_->alltoall_base(gathered, bucket.summed, slices, to_each);
}

void GradientBuckets::settle(const AbortCheck& aborted) {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (auto& bucket : buckets_) {
    if (bucket.first) works.push_back(bucket.first);
    if (bucket.second) works.push_back(bucket.second);
  }
  wait_all(works, aborted);
}

void GradientBuckets::finish(const AbortCheck& aborted) {
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& bucket : buckets_) bucket.pending = 0;
    launch_ready_locked();
    armed_ = false;
    error = error_;
  }
  // The hooks are disarmed: from here on only this thread uses the buckets and the group.
  try {
    try {
      if (!error.empty()) throw CollectiveFailure(error);
      // In bucket order: each first round waited for, and a sum in slices started (its second
      // round); the sums that write a whole bucket at once wait until every first round has
      // arrived, so that a failed one leaves every bucket this member's own gradients.
      const int members = group_->getSize();
      for (std::size_t b = 0; b < next_; ++b) {
        Bucket& bucket = buckets_[b];
        if (bucket.first) {
          std::vector<c10::intrusive_ptr<c10d::Work>> first{bucket.first};
          wait_all(first, aborted);
        }
        if (!swaps_whole(bucket.flat.numel(), members)) sum_first_round(bucket);
      }
      for (std::size_t b = 0; b < next_; ++b) {
        if (swaps_whole(buckets_[b].flat.numel(), members)) sum_first_round(buckets_[b]);
      }
      settle(aborted);  // the second rounds
      for (auto& bucket : buckets_) {
        if (!bucket.second) continue;
        own_ = false;
        bucket.flat.copy_(compression_ == Compression::kNone
                              ? bucket.received.narrow(0, 0, bucket.flat.numel())
                              : bucket.wire);
      }
      if (on_device() && members > 1) {
        // Every sum has arrived: back to the device, without waiting (pinned memory).
        for (auto& bucket : buckets_) {
          bucket.grads.copy_(bucket.flat.narrow(0, 0, bucket.grads.numel()), true);
        }
        own_on_device_ = false;
      }
      // A parameter no member's backward reached keeps no gradient (PyTorch's None), as DDP
      // leaves a globally unused parameter's: the optimiser then leaves it, its weight decay and
      // its momentum, as it would in one process. Its zeros were summed all the same, so that
      // every member issues the same collectives whatever its backward reached.
      for (const auto& bucket : buckets_) {
        const float* used = bucket.used.data_ptr<float>();
        for (std::size_t m = 0; m < bucket.members.size(); ++m) {
          if (used[m] == 0) {
            parameters_[bucket.members[m]].mutable_grad() = torch::Tensor();
          }
        }
      }
    } catch (const CollectiveAborted&) {
      throw;
    } catch (const std::exception& failure) {
      // A round failed or could not be launched: the others still run on the buffers; wait for
      // them (or for the coordinator's word) before saying so.
      const std::string what = failure.what();
      try {
        settle(aborted);
      } catch (const CollectiveAborted&) {
        throw;
      } catch (const CollectiveFailure&) {
      }
      throw CollectiveFailure(what);
    }
  } catch (const CollectiveAborted&) {
    group_.reset();
    // The rounds still running hold the old buffers and may yet write into them, but only read
    // the buckets themselves: the new buckets start with what they held (this member's gradients,
    // unless a sum had been written in).
    std::vector<torch::Tensor> held;
    for (const auto& bucket : buckets_) held.push_back(bucket.flat);
    allocate(false);
    if (own_ && !on_device()) {
      for (std::size_t b = 0; b < buckets_.size(); ++b) buckets_[b].flat.copy_(held[b]);
    }
    throw;
  } catch (...) {
    group_.reset();
    throw;
  }
  group_.reset();
}

}  // namespace transient::train
