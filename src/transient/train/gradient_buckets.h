// The gradient all-reduce of a step, overlapped with backward: parameters are grouped into
// buckets (the first of at least 1 MiB, the others of at least `bucket_bytes`), each a flat buffer
// that the parameters' .grad are views into (backward accumulates straight into it, with no copy);
// a hook on each parameter's gradient accumulator counts the bucket's gradients as backward
// finishes them, and a bucket whose gradients are all final is all-reduced at once, while backward
// goes on with the layers before it (as DDP's reducer does).
//
// Buckets are launched in one fixed order, the last parameters' first (backward's order), and a
// ready bucket waits for the ones before it: every member issues the same collectives in the same
// order whatever its timing, including a member with no samples this step (whose backward does
// not run) and parameters that got no gradient, which finish() launches. Each bucket carries a
// flag a parameter after its gradients, summed with them: whether any member's backward reached
// the parameter (DDP's "globally unused" parameters are those none reached).
//
// Five control values travel with the gradients, at the end of the first bucket launched: this
// member's part of the step's mean loss, a stop flag, a change flag (the generation ends at this
// step's boundary), a leave flag (summed: how many leave) and the samples of its share it could
// not train on (images that did not decode), so that they cost no collective of their own. They
// must be set before backward. Every collective costs message rounds whatever its size, which is
// also why a bucket is closed only once it is full (DDP's rule) rather than before a large tensor.
//
// A bucket's sum is made of Gloo's alltoall collectives (c10d's `alltoall_base`), not of its ring
// all-reduce, whose 2(n-1) rounds of messages follow one another (on a 30 ms path, about 60 ms
// among three members: docs/benchmarks.md). With the same bytes on the wire:
// - two members swap their whole buffers, one round (the ring's two rounds each carry half),
//   sent from the bucket itself: no copy, and one bucket's size more memory (the ring: none);
// - three or more: each member is sent every member's part of its own slice of the bucket
//   (slices as even as the size allows), sums them in rank order, and sends the sum to all: two
//   rounds. The second round of every bucket is issued after the first of all, in bucket order,
//   so that every member issues the same collectives in the same order.
// Every member ends with the same bits (the slice's owner computed them, or both of two members
// the same single addition), and the sum is the one of the members' gradients up to floating-point
// order. No bucket is written before every round it needs has arrived (the summed slices arrive
// beside it and are copied in: one copy of the bucket a step), so that a member lost in the
// middle of the sums leaves every survivor its own gradients, from which the step is resumed
// rather than redone (holds_own_gradients()).
//
// Parameters on a GPU (`--device cuda`): their gradients are views into a device buffer per
// bucket, which backward fills; the sums go over Gloo from pinned host memory. A ready bucket is
// copied to its host buffer (the copy waits for the GPU to finish the bucket's gradients, on the
// hook's thread, while the rounds of earlier buckets run), summed there as above, and copied back
// once every bucket's sum has arrived, without blocking (the pinned buffer is next written only
// after the step's later synchronisations). A failed or given-up sum never reaches the device
// buffers: they hold this member's own gradients until then, so a step can always be resumed.
//
// Compression (`--compress bf16|fp16`) sends each bucket as a half-precision copy, summed in fp32
// and rounded to half precision once, then widened back into the fp32 buffer: half the bytes on
// the wire. The control values go with it: the flags stay exact (small whole numbers), the loss is
// the rounded sum of the members' rounded parts (bf16: about 3 significant digits; fp16 reads a
// sum above 65504 as infinite, i.e. diverged, as it would read such a gradient).
#pragma once

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "transient/train/option_names.h"

namespace transient::train {

// A collective of the current generation failed (a peer died, went silent or left it).
struct CollectiveFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The wait for a collective was given up (the coordinator ended the generation) while some of
// its works still ran. Gloo cannot cancel them: they end with their own timeout, and until then
// their group must not be destroyed on a thread that has anything else to do (its destructor
// waits for them; see GroupReaper) and their tensors must not be used again.
struct CollectiveAborted : CollectiveFailure {
  using CollectiveFailure::CollectiveFailure;
};

// Whether the generation has been ended from outside (checked while a collective is waited for).
using AbortCheck = std::function<bool()>;

// Waits for every work, then throws CollectiveFailure with the first one's error, if any. While a
// work is still running `aborted` is asked every few milliseconds; once it says so, the wait ends
// with CollectiveAborted, leaving the works that still run. Why: when a member dies, a survivor
// can be left waiting on another survivor for a message that will never come (that one's part
// of the collective failed first), and Gloo would hold it for the whole collective timeout.
void wait_all(std::vector<c10::intrusive_ptr<c10d::Work>>& works, const AbortCheck& aborted = {});

class GradientBuckets {
 public:
  GradientBuckets(const std::vector<torch::Tensor>& parameters, std::int64_t bucket_bytes,
                  Compression compression);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Zeroes the gradients and arms the hooks: backward's buckets go to `group` as they fill. With
  // `keep`, the gradients are not zeroed and backward adds to them: a step resumed after a failed
  // sum that left this member its own gradients (holds_own_gradients()), in a new group.
  void begin(c10::intrusive_ptr<c10d::ProcessGroupGloo> group, bool keep = false);
  // After backward: launches what backward did not (all of it for a member with no samples),
  // waits for every bucket and widens compressed ones back; disarms the hooks. A parameter that
  // no member's backward reached is then left without a gradient (undefined .grad, PyTorch's
  // None, as DDP leaves a globally unused parameter), so that the optimiser leaves it as one
  // process would: no weight decay, no momentum (begin() gives it its view back). Throws
  // CollectiveFailure (after waiting for every work) if a collective failed, or
  // CollectiveAborted if `aborted` ended the wait first: then every buffer is new (the
  // parameters' .grad views move to new buckets, which start with what the old ones held), since
  // works still running may write into the old ones.
  void finish(const AbortCheck& aborted = {});

  // The five control values (set before backward; summed over the members after finish()).
  torch::Tensor& control() { return control_; }
  std::int64_t bucket_count() const { return static_cast<std::int64_t>(buckets_.size()); }
  // Buckets launched so far this step: after backward, those whose all-reduce overlapped it.
  std::int64_t launched() const;
  // After finish(): the rounds of messages (collectives) this step's sums took, all buckets
  // together.
  std::int64_t rounds() const;
  // After finish() threw CollectiveFailure: whether the buckets still hold this member's own
  // gradients and control values, untouched by any sum, so that the step can be resumed
  // (begin(group, true)) by computing only the lost members' samples. A bucket is written only
  // once every round it needs has arrived (the whole buckets' sums wait for every bucket's first
  // round, the slices' second rounds arrive beside the bucket and are copied in after the last),
  // so this holds after any failed round, and after CollectiveAborted too (the new buffers
  // start with the gradients the old ones held).
  bool holds_own_gradients() const;

 private:
  struct Bucket {
    std::vector<std::size_t> members;  // its parameters, in their order in `flat`
    torch::Tensor flat;      // fp32, the parameters' .grad are views into it (+ control, maybe);
                             // on a GPU: the pinned host copy of `grads` that is summed
    torch::Tensor used;      // in `flat`, after the gradients: one flag a parameter, 1 where
                             // this member's backward reached it (summed: how many members')
    torch::Tensor grads;     // on a GPU: the device buffer the .grad are views into
    torch::Tensor wire;      // the half-precision copy of `flat` sent when compressing
    torch::Tensor sent;      // swapped whole among three or more: a copy for each other member
    torch::Tensor received;  // what the first round brings (swapped whole: the others' buffers;
                             // in slices: the parts of this member's slice, then the summed
                             // slices of the second round, uncompressed)
    torch::Tensor summed;    // three or more: this member's slice summed, once for each member
    c10::intrusive_ptr<c10d::Work> first;  // this step's rounds; null when not launched
    c10::intrusive_ptr<c10d::Work> second;
    int pending = 0;  // of its parameters, those not final yet in this step's backward
  };

  void allocate(bool device_too);  // each bucket's buffers, and the .grad views into them
  bool on_device() const { return device_.type() != torch::kCPU; }
  void ready(std::size_t parameter);       // from the hook on that parameter's accumulator
  void launch_ready_locked();              // launches buckets in order while they are ready
  void launch_locked(Bucket& bucket);      // the first round
  void sum_first_round(Bucket& bucket);    // after it: the sum, or the second round launched
  void settle(const AbortCheck& aborted);  // waits for every launched round, throws the first error

  Compression compression_;
  torch::Device device_;  // the parameters'
  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> views_;    // each parameter's .grad: its view into its bucket
  std::vector<Bucket> buckets_;         // in launch order: the last parameters' first
  std::vector<std::size_t> bucket_of_;  // parameter index -> index into buckets_
  torch::Tensor control_;
  std::vector<bool> reached_;  // parameter index -> this step's backward reached it, here
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;  // kept alive for the hooks

  mutable std::mutex mutex_;  // the hooks may run on autograd's device threads
  bool armed_ = false;
  bool own_ = false;  // the buckets hold this member's gradients, no sum written into them
  bool own_on_device_ = false;  // on a GPU: the device buffers do (no sum copied back yet)
  std::size_t next_ = 0;        // the next bucket to launch
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::string error_;  // a launch that threw: nothing more is launched this step
};

}  // namespace transient::train
