// The gradient all-reduce overlapped with backward (gradient_buckets.h), on real Gloo groups of
// two, three and four members over loopback in one process: the gradients every member ends with
// are the sum of the members' own, exactly as a plain backward and a sum in rank order give them,
// whatever each member's backward does (no samples at all, a parameter without a gradient), and
// whether a bucket goes whole to every member or in slices; compressed, they are the fp32 sum of
// the members' half-precision parts rounded once to half precision, the flags among the control
// values stay exact and the loss is the rounded sum of the members' rounded parts.
#include "transient/train/gradient_buckets.h"
#include "transient/train/group_reaper.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <thread>

namespace transient::train {
namespace {

// Two layers and a parameter that forward never uses (registered first: its bucket is the last
// one launched, and the others go during backward; after the sum it has no gradient).
struct Net : torch::nn::Module {
  Net() {
    torch::manual_seed(3);
    unused = register_parameter("unused", torch::zeros({2}));
    first = register_module("first", torch::nn::Linear(8, 16));
    second = register_module("second", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return second->forward(torch::relu(first->forward(x)));
  }
  torch::Tensor unused;
  torch::nn::Linear first{nullptr};
  torch::nn::Linear second{nullptr};
};

// Member `rank`'s input at `step`; undefined when it has no samples.
torch::Tensor input_of(int rank, int step, bool second_has_none) {
  if (rank == 1 && second_has_none) return {};
  torch::manual_seed(100 + 10 * step + rank);
  return torch::randn({5, 8});
}

// The gradients of a plain backward of `net` on `x` (zeros where it has none).
std::vector<torch::Tensor> plain_gradients(const torch::Tensor& x) {
  Net net;
  if (x.defined()) net.forward(x).pow(2).sum().backward();
  std::vector<torch::Tensor> gradients;
  for (const auto& p : net.parameters()) {
    gradients.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  }
  return gradients;
}

// Net's parameter that forward never uses (the first registered).
constexpr std::size_t kUnused = 0;

// What a member's parameter ends a step with: a copy of its gradient, undefined where it has none.
torch::Tensor gradient_of(const torch::Tensor& parameter) {
  return parameter.grad().defined() ? parameter.grad().clone() : torch::Tensor();
}

// A Gloo group of `size` over `store` for `rank`, collectives timing out after `timeout`.
c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo_group(
    c10::intrusive_ptr<c10d::Store> store, int rank, int size,
    std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return make_gloo_group(store, rank, size, options);
}

struct Case {
  int members;
  Compression compression;
  bool second_has_none;  // member 1 has no samples (its backward does not run)
  const char* name;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Buckets : public ::testing::TestWithParam<Case> {};

TEST_P(Buckets, EveryMemberEndsWithTheSumOfTheMembersGradients) {
  const Case c = GetParam();
  const int n = c.members;
  const auto members = static_cast<std::size_t>(n);
  constexpr int kSteps = 3;
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::unique_ptr<Net>> nets;
  std::vector<std::unique_ptr<GradientBuckets>> buckets;
  for (int rank = 0; rank < n; ++rank) {
    nets.push_back(std::make_unique<Net>());
    // 64-byte buckets: the layers' tensors go in buckets of their own but the last two (together,
    // with the control values), and the unused parameter's 2 elements and its flag are too few
    // for four members' slices.
    buckets.push_back(
        std::make_unique<GradientBuckets>(nets.back()->parameters(), 64, c.compression));
  }
  ASSERT_GE(buckets[0]->bucket_count(), 3);
  // Drawn here: the generator is global, and the members run on threads of their own.
  std::vector<std::vector<torch::Tensor>> inputs(members);
  for (int rank = 0; rank < n; ++rank) {
    for (int step = 0; step < kSteps; ++step) {
      inputs[static_cast<std::size_t>(rank)].push_back(input_of(rank, step, c.second_has_none));
    }
  }
  std::vector<std::vector<std::vector<torch::Tensor>>> seen(members);  // [rank][step][parameter]
  std::vector<std::vector<std::vector<double>>> controls(members);     // [rank][step][value]
  std::vector<std::string> errors(members);
  std::vector<std::vector<std::int64_t>> overlapped(members);  // [rank][step]: launched in backward
  std::vector<std::int64_t> rounds(members);                   // [rank]: of the last step
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      const auto r = static_cast<std::size_t>(rank);
      try {
        auto group = gloo_group(store, rank, n);
        for (int step = 0; step < kSteps; ++step) {
          buckets[r]->begin(group);
          buckets[r]->control()[0] = 0.3 + rank;
          buckets[r]->control()[1] = 1.0;
          buckets[r]->control()[2] = rank == 0 ? 1.0 : 0.0;
          buckets[r]->control()[3] = 3.0;
          const auto& x = inputs[r][static_cast<std::size_t>(step)];
          if (x.defined()) nets[r]->forward(x).pow(2).sum().backward();
          overlapped[r].push_back(buckets[r]->launched());
          buckets[r]->finish();
          rounds[r] = buckets[r]->rounds();
          std::vector<torch::Tensor> gradients;
          for (const auto& p : nets[r]->parameters()) gradients.push_back(gradient_of(p));
          seen[r].push_back(gradients);
          std::vector<double> values;
          for (int i = 0; i < 4; ++i) values.push_back(buckets[r]->control()[i].item<double>());
          controls[r].push_back(values);
        }
      } catch (const std::exception& error) {
        errors[r] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int rank = 0; rank < n; ++rank) ASSERT_EQ(errors[static_cast<std::size_t>(rank)], "");
  // Rounds of messages: one a bucket between two members; two among more, but for a bucket too
  // small to give each member a slice (the unused parameter's 3 elements among four).
  const std::int64_t bucket_count = buckets[0]->bucket_count();
  const std::int64_t expected_rounds = n == 2   ? bucket_count
                                       : n == 3 ? 2 * bucket_count
                                                : 2 * bucket_count - 1;
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(rounds[static_cast<std::size_t>(rank)], expected_rounds)
        << c.name << ", member " << rank;
  }
  const bool compressed = c.compression != Compression::kNone;
  const auto half = c.compression == Compression::kBf16 ? torch::kBFloat16 : torch::kFloat16;
  // The members' values summed in rank order as the wire carries them: fp32, or each rounded to
  // half precision, summed in fp32 and the sum rounded once.
  const auto wire_sum = [&](const std::vector<torch::Tensor>& parts) {
    torch::Tensor sum = compressed ? parts[0].to(half).to(torch::kFloat32) : parts[0].clone();
    for (std::size_t i = 1; i < parts.size(); ++i) {
      sum += compressed ? parts[i].to(half).to(torch::kFloat32) : parts[i];
    }
    return compressed ? sum.to(half).to(torch::kFloat32) : sum;
  };
  for (int step = 0; step < kSteps; ++step) {
    const auto s = static_cast<std::size_t>(step);
    // The parameters do not change between steps here: each step's gradients are its own.
    std::vector<std::vector<torch::Tensor>> own;  // [rank][parameter]
    for (int rank = 0; rank < n; ++rank) {
      own.push_back(plain_gradients(inputs[static_cast<std::size_t>(rank)][s]));
    }
    for (std::size_t p = 0; p < own[0].size(); ++p) {
      std::vector<torch::Tensor> parts;
      for (const auto& gradients : own) parts.push_back(gradients[p]);
      const torch::Tensor expected = wire_sum(parts);
      for (int rank = 0; rank < n; ++rank) {
        const auto& got = seen[static_cast<std::size_t>(rank)][s][p];
        // The parameter forward never uses: no member's backward reached it, and it is left
        // without a gradient, as DDP leaves it (the optimiser then leaves it alone).
        if (p == kUnused) {
          EXPECT_FALSE(got.defined()) << c.name << ": step " << step << ", member " << rank;
        } else {
          EXPECT_TRUE(got.defined() && torch::equal(got, expected))
              << c.name << ": step " << step << ", parameter " << p << ", member " << rank;
        }
      }
    }
    // Every bucket but the one of the parameter without a gradient went during backward; a
    // member without samples launches them all after it.
    for (int rank = 0; rank < n; ++rank) {
      const bool ran_backward = rank != 1 || !c.second_has_none;
      EXPECT_EQ(overlapped[static_cast<std::size_t>(rank)][s],
                ran_backward ? buckets[static_cast<std::size_t>(rank)]->bucket_count() - 1 : 0)
          << c.name << ": step " << step << ", member " << rank;
    }
    std::vector<torch::Tensor> losses;
    for (int rank = 0; rank < n; ++rank) {
      losses.push_back(torch::tensor({static_cast<float>(0.3 + rank)}));
    }
    const double loss = wire_sum(losses).item<double>();
    if (compressed) {
      torch::Tensor unrounded = losses[0].clone();
      for (std::size_t i = 1; i < losses.size(); ++i) unrounded += losses[i];
      ASSERT_NE(loss, unrounded.item<double>()) << "the rounding is not seen";
    }
    for (int rank = 0; rank < n; ++rank) {
      EXPECT_EQ(controls[static_cast<std::size_t>(rank)][s],
                (std::vector<double>{loss, 1.0 * n, 1.0, 3.0 * n}))
          << c.name << ": step " << step << ", member " << rank;
    }
  }
}

// One step of the first `members` of `nets` (each with its `buckets`, on its input, none if
// undefined) in a fresh group, `keep`ing the gradients the buckets hold (a resumed step): the
// gradients each ends with ([rank][parameter]), or the error of any.
template <typename Module>
std::vector<std::vector<torch::Tensor>> step_in_a_group_of(
    int members, std::vector<std::unique_ptr<Module>>& nets,
    std::vector<std::unique_ptr<GradientBuckets>>& buckets,
    const std::vector<torch::Tensor>& inputs, bool keep = false) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::vector<torch::Tensor>> seen(static_cast<std::size_t>(members));
  std::vector<std::string> errors(static_cast<std::size_t>(members));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < members; ++rank) {
    threads.emplace_back([&, rank] {
      const auto r = static_cast<std::size_t>(rank);
      try {
        auto group = gloo_group(store, rank, members);
        buckets[r]->begin(group, keep);
        if (inputs[r].defined()) nets[r]->forward(inputs[r]).pow(2).sum().backward();
        buckets[r]->finish();
        for (const auto& p : nets[r]->parameters()) seen[r].push_back(gradient_of(p));
      } catch (const std::exception& error) {
        errors[r] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& error : errors) {
    if (!error.empty()) throw std::runtime_error(error);
  }
  return seen;
}

// A member's buckets serve generation after generation, whose sizes change: two members (whole
// buffers), three (sums in slices), two again, three again. Found by the kills-and-joins
// equivalence test: a buffer kept from a generation of the other kind had the wrong size.
TEST(BucketsAcrossGenerations, ServeGroupsOfChangingSize) {
  std::vector<std::unique_ptr<Net>> nets;
  std::vector<std::unique_ptr<GradientBuckets>> buckets;
  std::vector<torch::Tensor> inputs;
  for (int rank = 0; rank < 3; ++rank) {
    nets.push_back(std::make_unique<Net>());
    buckets.push_back(
        std::make_unique<GradientBuckets>(nets.back()->parameters(), 64, Compression::kNone));
    inputs.push_back(input_of(rank, 0, false));
  }
  std::vector<std::vector<torch::Tensor>> own;  // [rank][parameter]
  for (const auto& x : inputs) own.push_back(plain_gradients(x));
  for (const int members : {2, 3, 2, 3}) {
    const auto seen = step_in_a_group_of(members, nets, buckets, inputs);
    for (std::size_t p = 0; p < own[0].size(); ++p) {
      torch::Tensor expected = own[0][p] + own[1][p];
      if (members == 3) expected += own[2][p];
      for (int rank = 0; rank < members; ++rank) {
        if (p == kUnused) {
          EXPECT_FALSE(seen[static_cast<std::size_t>(rank)][p].defined());
          continue;
        }
        EXPECT_TRUE(torch::equal(seen[static_cast<std::size_t>(rank)][p], expected))
            << members << " members: parameter " << p << ", member " << rank;
      }
    }
  }
}

// A convolution and a linear layer; the convolution's weight channels-last (NHWC in memory), as
// the trainer lays out the ResNets' (models.h).
struct ConvNet : torch::nn::Module {
  explicit ConvNet(bool channels_last) {
    torch::manual_seed(5);
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3).padding(1)));
    head = register_module("head", torch::nn::Linear(4 * 4 * 4, 3));
    if (channels_last) {
      conv->weight.set_data(conv->weight.contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return head->forward(torch::relu(conv->forward(x)).flatten(1));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear head{nullptr};
};

// A channels-last weight's gradient is a view of its bucket laid out as the weight is, so that
// backward accumulates into the bucket with no copy to another layout; the members end with the
// sum of their gradients as with contiguous weights.
TEST(BucketLayout, AChannelsLastWeightsGradientIsLaidOutLikeItInTheBucket) {
  std::vector<std::unique_ptr<ConvNet>> nets;
  std::vector<std::unique_ptr<GradientBuckets>> buckets;
  std::vector<torch::Tensor> inputs;
  std::vector<torch::Tensor> expected;
  for (int rank = 0; rank < 2; ++rank) {
    nets.push_back(std::make_unique<ConvNet>(true));
    buckets.push_back(
        std::make_unique<GradientBuckets>(nets.back()->parameters(), 64, Compression::kNone));
    torch::manual_seed(200 + rank);
    inputs.push_back(torch::randn({5, 2, 4, 4}));
    ConvNet plain(false);
    plain.forward(inputs.back()).pow(2).sum().backward();
    for (std::size_t p = 0; p < plain.parameters().size(); ++p) {
      const auto gradient = plain.parameters()[p].grad();
      if (rank == 0) {
        expected.push_back(gradient.clone());
      } else {
        expected[p] += gradient;
      }
    }
  }
  const auto weight = nets[0]->conv->weight;
  ASSERT_TRUE(weight.is_contiguous(torch::MemoryFormat::ChannelsLast));
  ASSERT_FALSE(weight.is_contiguous());
  const auto seen = step_in_a_group_of(2, nets, buckets, inputs);
  EXPECT_EQ(weight.grad().strides(), weight.strides());
  for (int rank = 0; rank < 2; ++rank) {
    for (std::size_t p = 0; p < expected.size(); ++p) {
      EXPECT_TRUE(torch::allclose(seen[static_cast<std::size_t>(rank)][p], expected[p], 1e-5, 1e-6))
          << "parameter " << p << ", member " << rank;
    }
  }
}

// A bucket is closed once it holds at least the bucket size (DDP's rule): the small last layers
// share the bucket of the large tensor before them instead of being a collective of their own,
// which on a long path costs as many round trips as a full one.
TEST(BucketLayout, ALargeTensorJoinsTheSmallBucketBeforeIt) {
  auto parameter = [](std::int64_t elements) {
    return torch::zeros({elements}, torch::requires_grad());
  };
  // In registration order; backward, and the buckets, go from the last.
  const std::vector<torch::Tensor> parameters{parameter(300), parameter(5000), parameter(20),
                                              parameter(10)};
  GradientBuckets buckets(parameters, 4096, Compression::kNone);  // 1024 elements
  EXPECT_EQ(buckets.bucket_count(), 2);                           // {10, 20, 5000} and {300}
  EXPECT_EQ(GradientBuckets(parameters, 1 << 20, Compression::kNone).bucket_count(), 1);
  EXPECT_EQ(GradientBuckets(parameters, 4, Compression::kNone).bucket_count(), 4);
}

// DDP's two sizes: the first bucket closes at 1 MiB, so that its all-reduce starts early in
// backward, the others at the bucket size (25 MiB by default), so that a large model pays a few
// collectives a step rather than one a MiB.
TEST(BucketLayout, TheFirstBucketClosesAtOneMebibyteTheOthersAtTheBucketSize) {
  auto parameter = [](std::int64_t elements) {
    return torch::zeros({elements}, torch::requires_grad());
  };
  const std::vector<torch::Tensor> parameters{parameter(300'000), parameter(300'000),
                                              parameter(300'000), parameter(20), parameter(10)};
  // {10, 20, 300000} (1.2 MB) and {300000, 300000}.
  EXPECT_EQ(GradientBuckets(parameters, 25 << 20, Compression::kNone).bucket_count(), 2);
  // At 1 MiB every bucket closes as the first does.
  EXPECT_EQ(GradientBuckets(parameters, 1 << 20, Compression::kNone).bucket_count(), 3);
}

// A survivor left waiting on another survivor that gave its part of the collective up (issue 12:
// 5 s recoveries across a 30 ms path): the wait ends on the coordinator's word
// (CollectiveAborted), not on Gloo's timeout; the buckets go on with fresh buffers, since the
// abandoned collective may still write into the old ones, and with the gradients they held, from
// which the step is resumed; the reaper ends the abandoned group.
TEST(AbortedWait, EndsOnTheCoordinatorsWordAndTheGradientsMoveToFreshBuffers) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<c10::intrusive_ptr<c10d::ProcessGroupGloo>> groups(2);
  std::vector<std::thread> forming;
  for (int rank = 0; rank < 2; ++rank) {
    forming.emplace_back([&, rank] {
      groups[static_cast<std::size_t>(rank)] =
          gloo_group(store, rank, 2, std::chrono::milliseconds(3000));
    });
  }
  for (auto& thread : forming) thread.join();

  Net net;
  GradientBuckets buckets(net.parameters(), 1 << 20, Compression::kNone);
  const void* before = net.first->weight.grad().data_ptr();
  const torch::Tensor first = input_of(0, 6, false);
  buckets.begin(groups[0]);  // member 1 never joins this collective
  net.forward(first).pow(2).sum().backward();
  int asked = 0;
  EXPECT_THROW(buckets.finish([&] { return ++asked >= 3; }), CollectiveAborted);
  EXPECT_EQ(asked, 3) << "the wait ended before the coordinator's word";
  EXPECT_NE(net.first->weight.grad().data_ptr(), before);
  ASSERT_TRUE(buckets.holds_own_gradients());
  const auto parameters = net.parameters();
  const auto kept = plain_gradients(first);
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    EXPECT_TRUE(torch::equal(parameters[p].grad(), kept[p])) << "parameter " << p;
  }

  // The step resumed in a group of one: the gradients kept and those of the lost samples.
  auto alone =
      gloo_group(c10::make_intrusive<c10d::HashStore>(), 0, 1, std::chrono::milliseconds(3000));
  const torch::Tensor x = input_of(0, 7, false);
  buckets.begin(alone, true);
  net.forward(x).pow(2).sum().backward();
  buckets.finish([] { return false; });
  const auto lost = plain_gradients(x);
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    if (p == kUnused) {
      EXPECT_FALSE(parameters[p].grad().defined());
      continue;
    }
    EXPECT_TRUE(torch::equal(parameters[p].grad(), kept[p] + lost[p])) << "parameter " << p;
  }

  GroupReaper reaper;  // its destructor waits for the abandoned collective's timeout
  reaper.take(std::move(groups[0]));
  reaper.take(std::move(groups[1]));
  EXPECT_FALSE(groups[0]);
}

// A member lost in the middle of a step: the survivors' first rounds fail and leave each its own
// gradients and control values, untouched; in the next generation they resume the step by
// computing only the lost member's samples (split among them) into the gradients they kept, and
// the sum is the one of every member's gradients, as if nobody had been lost.
struct Loss {
  int members;
  Compression compression;
  const char* name;
  // Lost after sending its part of the first round (one bucket): the survivors' first round
  // completes, their second fails.
  bool after_first_round = false;
};

void PrintTo(const Loss& c, std::ostream* os) { *os << c.name; }

class ResumedStep : public ::testing::TestWithParam<Loss> {};

TEST_P(ResumedStep, AddsTheLostMembersSamplesToTheGradientsKept) {
  // A survivor's send to the lost member's closed connection raises SIGPIPE (seen in CI): the
  // worker process ignores it (run_worker), and so does this test.
  ::signal(SIGPIPE, SIG_IGN);
  const Loss c = GetParam();
  const int n = c.members;
  const int survivors = n - 1;
  std::vector<std::unique_ptr<Net>> nets;
  std::vector<std::unique_ptr<GradientBuckets>> buckets;
  std::vector<torch::Tensor> inputs;
  for (int rank = 0; rank < n; ++rank) {
    nets.push_back(std::make_unique<Net>());
    buckets.push_back(std::make_unique<GradientBuckets>(
        nets.back()->parameters(), c.after_first_round ? 1 << 20 : 64, c.compression));
    inputs.push_back(input_of(rank, 0, false));
  }
  std::vector<std::vector<torch::Tensor>> own;  // [rank][parameter]
  for (const auto& x : inputs) own.push_back(plain_gradients(x));

  // The group of n forms; the last member is lost before it sums anything, or after its part of
  // the first round (its group destroyed: its connections close).
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<c10::intrusive_ptr<c10d::ProcessGroupGloo>> groups(static_cast<std::size_t>(n));
  {
    std::vector<std::thread> forming;
    for (int rank = 0; rank < n; ++rank) {
      forming.emplace_back([&, rank] {
        groups[static_cast<std::size_t>(rank)] =
            gloo_group(store, rank, n, std::chrono::milliseconds(5000));
      });
    }
    for (auto& thread : forming) thread.join();
  }
  std::vector<std::string> failures(static_cast<std::size_t>(survivors));
  {
    std::vector<std::thread> threads;
    if (c.after_first_round) {
      ASSERT_EQ(buckets[0]->bucket_count(), 1);
      threads.emplace_back([&] {
        // The one bucket: the parameters, a flag each and the 5 control values, in slices as
        // GradientBuckets cuts it (the first size % n one element longer); this, the last
        // member's, among the shorter.
        std::int64_t size = 5;
        for (const auto& p : nets.back()->parameters()) size += p.numel() + 1;
        std::vector<std::int64_t> slices(static_cast<std::size_t>(n), size / n);
        for (std::int64_t i = 0; i < size % n; ++i) ++slices[static_cast<std::size_t>(i)];
        std::vector<std::int64_t> from_each(static_cast<std::size_t>(n), size / n);
        const auto dtype = c.compression == Compression::kBf16 ? torch::kBFloat16 : torch::kFloat32;
        torch::Tensor sent = torch::zeros({size}, dtype);
        torch::Tensor parts = torch::empty({n * (size / n)}, dtype);
        std::vector<c10::intrusive_ptr<c10d::Work>> works{
            groups.back()->alltoall_base(parts, sent, from_each, slices)};
        wait_all(works);
        groups.back().reset();
      });
    } else {
      groups.back().reset();
    }
    for (int rank = 0; rank < survivors; ++rank) {
      threads.emplace_back([&, rank] {
        const auto r = static_cast<std::size_t>(rank);
        buckets[r]->begin(groups[r]);
        buckets[r]->control()[0] = 0.5 + rank;
        nets[r]->forward(inputs[r]).pow(2).sum().backward();
        try {
          buckets[r]->finish();
        } catch (const CollectiveFailure& failure) {
          failures[r] = failure.what();
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }
  GroupReaper reaper;
  for (auto& group : groups) {
    if (group) reaper.take(std::move(group));
  }
  for (int rank = 0; rank < survivors; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    ASSERT_NE(failures[r], "") << "member " << rank << "'s sum did not fail";
    ASSERT_TRUE(buckets[r]->holds_own_gradients()) << "member " << rank;
    const auto parameters = nets[r]->parameters();
    for (std::size_t p = 0; p < parameters.size(); ++p) {
      EXPECT_TRUE(torch::equal(parameters[p].grad(), own[r][p]))
          << "member " << rank << ", parameter " << p << ": not its own gradient any more";
    }
    EXPECT_EQ(buckets[r]->control()[0].item<float>(), static_cast<float>(0.5 + rank));
  }

  // The next generation: the survivors split the lost member's 5 samples (alone, all of them;
  // else the first two survivors take 2 and 3, the others none).
  const torch::Tensor lost = inputs.back();
  std::vector<torch::Tensor> parts(static_cast<std::size_t>(survivors));
  parts[0] = survivors == 1 ? lost : lost.narrow(0, 0, 2);
  if (survivors > 1) parts[1] = lost.narrow(0, 2, 3);
  const auto seen = step_in_a_group_of(survivors, nets, buckets, parts, true);
  for (std::size_t p = 0; p < own[0].size(); ++p) {
    torch::Tensor expected = own[0][p].clone();
    for (int rank = 1; rank < n; ++rank) expected += own[static_cast<std::size_t>(rank)][p];
    for (int rank = 0; rank < survivors; ++rank) {
      const auto& got = seen[static_cast<std::size_t>(rank)][p];
      if (p == kUnused) {
        EXPECT_FALSE(got.defined()) << c.name << ", member " << rank;
        continue;
      }
      if (c.compression == Compression::kNone) {
        // Alone, one addition onto the kept gradient, as the sum makes it; otherwise the lost
        // samples' sum is cut in two, summed in another order.
        EXPECT_TRUE(survivors == 1 ? torch::equal(got, expected)
                                   : torch::allclose(got, expected, 1e-5, 1e-5))
            << c.name << ": parameter " << p << ", member " << rank;
      } else {
        EXPECT_TRUE(torch::allclose(got, expected, 2e-2, 2e-2))
            << c.name << ": parameter " << p << ", member " << rank;
      }
    }
  }
  // The kept gradients are used once: after a sum that succeeded, nothing can be resumed.
  EXPECT_FALSE(buckets[0]->holds_own_gradients());
}

INSTANTIATE_TEST_SUITE_P(
    AfterALoss, ResumedStep,
    ::testing::Values(Loss{2, Compression::kNone, "OfTwoTheSurvivorAlone"},
                      Loss{3, Compression::kNone, "OfThree"},
                      Loss{3, Compression::kBf16, "OfThreeBf16"},
                      Loss{4, Compression::kNone, "OfFour"},
                      Loss{3, Compression::kNone, "OfThreeInTheSecondRound", true},
                      Loss{3, Compression::kBf16, "OfThreeInTheSecondRoundBf16", true}),
    [](const ::testing::TestParamInfo<Loss>& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Overlapped, Buckets,
    ::testing::Values(Case{2, Compression::kNone, false, "Fp32"},
                      Case{2, Compression::kNone, true, "Fp32WithAMemberWithoutSamples"},
                      Case{2, Compression::kBf16, false, "Bf16"},
                      Case{2, Compression::kFp16, true, "Fp16WithAMemberWithoutSamples"},
                      Case{3, Compression::kNone, false, "ThreeMembersFp32"},
                      Case{3, Compression::kBf16, true,
                           "ThreeMembersBf16WithAMemberWithoutSamples"},
                      Case{4, Compression::kNone, true, "FourMembersFp32WithAMemberWithoutSamples"},
                      Case{4, Compression::kFp16, false, "FourMembersFp16"}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace transient::train
