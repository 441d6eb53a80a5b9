// The gradient all-reduce overlapped with backward (gradient_buckets.h), on a real two-member
// Gloo group over loopback in one process: the gradients every member ends with are the sum of
// the members' own, exactly as a plain backward and a sum give them, whatever each member's
// backward does (no samples at all, a parameter without a gradient); compressed, they are the
// half-precision sum, the flags among the control values stay exact and the loss is the
// half-precision sum of the members' parts.
#include "transient/train/gradient_buckets.h"
#include "transient/train/group_reaper.h"

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <thread>

namespace transient::train {
namespace {

// Two layers and a parameter that forward never uses (registered first: its bucket is the last
// one launched, and the others go during backward).
struct Net : torch::nn::Module {
  Net() {
    torch::manual_seed(3);
    unused = register_parameter("unused", torch::zeros({3}));
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

struct Case {
  Compression compression;
  bool second_has_none;  // member 1 has no samples (its backward does not run)
  const char* name;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Buckets : public ::testing::TestWithParam<Case> {};

TEST_P(Buckets, EveryMemberEndsWithTheSumOfTheMembersGradients) {
  const Case c = GetParam();
  constexpr int kSteps = 3;
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::unique_ptr<Net>> nets;
  std::vector<std::unique_ptr<GradientBuckets>> buckets;
  for (int rank = 0; rank < 2; ++rank) {
    nets.push_back(std::make_unique<Net>());
    // 64-byte buckets: the three tensors of the layers go in buckets of their own.
    buckets.push_back(
        std::make_unique<GradientBuckets>(nets.back()->parameters(), 64, c.compression));
  }
  ASSERT_GE(buckets[0]->bucket_count(), 3);
  // Drawn here: the generator is global, and the members run on threads of their own.
  std::vector<std::vector<torch::Tensor>> inputs(2);
  for (int rank = 0; rank < 2; ++rank) {
    for (int step = 0; step < kSteps; ++step) {
      inputs[rank].push_back(input_of(rank, step, c.second_has_none));
    }
  }
  std::vector<std::vector<std::vector<torch::Tensor>>> seen(2);  // [rank][step][parameter]
  std::vector<std::vector<std::vector<double>>> controls(2);     // [rank][step][value]
  std::vector<std::string> errors(2);
  std::vector<std::vector<std::int64_t>> overlapped(2);  // [rank][step]: launched in backward
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        auto options = c10d::ProcessGroupGloo::Options::create();
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
        auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, 2, options);
        for (int step = 0; step < kSteps; ++step) {
          buckets[rank]->begin(group);
          buckets[rank]->control()[0] = 0.3 + rank;
          buckets[rank]->control()[1] = 1.0;
          buckets[rank]->control()[2] = rank == 0 ? 1.0 : 0.0;
          buckets[rank]->control()[3] = 3.0;
          const auto& x = inputs[rank][static_cast<std::size_t>(step)];
          if (x.defined()) nets[rank]->forward(x).pow(2).sum().backward();
          overlapped[rank].push_back(buckets[rank]->launched());
          buckets[rank]->finish();
          std::vector<torch::Tensor> gradients;
          for (const auto& p : nets[rank]->parameters()) gradients.push_back(p.grad().clone());
          seen[rank].push_back(gradients);
          std::vector<double> values;
          for (int i = 0; i < 4; ++i) {
            values.push_back(buckets[rank]->control()[i].item<double>());
          }
          controls[rank].push_back(values);
        }
      } catch (const std::exception& error) {
        errors[rank] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  for (int step = 0; step < kSteps; ++step) {
    // The parameters do not change between steps here: each step's gradients are its own.
    const auto mine = plain_gradients(inputs[0][static_cast<std::size_t>(step)]);
    const auto theirs = plain_gradients(inputs[1][static_cast<std::size_t>(step)]);
    for (std::size_t p = 0; p < mine.size(); ++p) {
      torch::Tensor expected = mine[p] + theirs[p];
      if (c.compression != Compression::kNone) {
        const auto half = c.compression == Compression::kBf16 ? torch::kBFloat16 : torch::kFloat16;
        expected = (mine[p].to(half) + theirs[p].to(half)).to(torch::kFloat32);
      }
      for (int rank = 0; rank < 2; ++rank) {
        EXPECT_TRUE(torch::equal(seen[rank][static_cast<std::size_t>(step)][p], expected))
            << c.name << ": step " << step << ", parameter " << p << ", member " << rank;
      }
    }
    // Every bucket but the one of the parameter without a gradient went during backward; a
    // member without samples launches them all after it.
    for (int rank = 0; rank < 2; ++rank) {
      const bool ran_backward = rank == 0 || !c.second_has_none;
      EXPECT_EQ(overlapped[rank][static_cast<std::size_t>(step)],
                ran_backward ? buckets[rank]->bucket_count() - 1 : 0)
          << c.name << ": step " << step << ", member " << rank;
    }
    // The losses' sum as the wire carries it: fp32, or each part rounded to half precision and
    // summed in it.
    auto loss = torch::tensor({0.3f}) + torch::tensor({1.3f});
    if (c.compression != Compression::kNone) {
      const auto half = c.compression == Compression::kBf16 ? torch::kBFloat16 : torch::kFloat16;
      loss = torch::tensor({0.3f}).to(half) + torch::tensor({1.3f}).to(half);
      ASSERT_NE(loss.item<double>(),
                (torch::tensor({0.3f}) + torch::tensor({1.3f})).item<double>());
    }
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(controls[rank][static_cast<std::size_t>(step)],
                (std::vector<double>{loss.to(torch::kFloat32).item<double>(), 2.0, 1.0, 6.0}))
          << c.name << ": step " << step << ", member " << rank;
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

// A Gloo group of `size` over `store` for `rank`, collectives timing out after `timeout`.
c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo_group(c10::intrusive_ptr<c10d::Store> store,
                                                      int rank, int size,
                                                      std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

// A survivor left waiting on another survivor that gave its part of the collective up (issue 12:
// 5 s recoveries across a 30 ms path): the wait ends on the coordinator's word
// (CollectiveAborted), not on Gloo's timeout; the buckets go on with fresh buffers, since the
// abandoned collective may still write into the old ones; the reaper ends the abandoned group.
TEST(AbortedWait, EndsOnTheCoordinatorsWordAndTheBucketsGoOnWithFreshBuffers) {
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
  buckets.begin(groups[0]);  // member 1 never joins this collective
  net.forward(torch::randn({5, 8})).pow(2).sum().backward();
  int asked = 0;
  EXPECT_THROW(buckets.finish([&] { return ++asked >= 3; }), CollectiveAborted);
  EXPECT_EQ(asked, 3) << "the wait ended before the coordinator's word";
  EXPECT_NE(net.first->weight.grad().data_ptr(), before);

  // The next step, in a group of one: the gradients are this member's own.
  auto alone =
      gloo_group(c10::make_intrusive<c10d::HashStore>(), 0, 1, std::chrono::milliseconds(3000));
  const torch::Tensor x = input_of(0, 7, false);
  buckets.begin(alone);
  net.forward(x).pow(2).sum().backward();
  buckets.finish([] { return false; });
  const auto expected = plain_gradients(x);
  const auto parameters = net.parameters();
  for (std::size_t p = 0; p < parameters.size(); ++p) {
    EXPECT_TRUE(torch::equal(parameters[p].grad(), expected[p])) << "parameter " << p;
  }

  GroupReaper reaper;  // its destructor waits for the abandoned collective's timeout
  reaper.take(std::move(groups[0]));
  reaper.take(std::move(groups[1]));
  EXPECT_FALSE(groups[0]);
}

INSTANTIATE_TEST_SUITE_P(
    Overlapped, Buckets,
    ::testing::Values(Case{Compression::kNone, false, "fp32"},
                      Case{Compression::kNone, true, "fp32, member 1 without samples"},
                      Case{Compression::kBf16, false, "bf16"},
                      Case{Compression::kFp16, true, "fp16, member 1 without samples"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      switch (info.index) {
        case 0:
          return std::string("Fp32");
        case 1:
          return std::string("Fp32WithAMemberWithoutSamples");
        case 2:
          return std::string("Bf16");
        default:
          return std::string("Fp16WithAMemberWithoutSamples");
      }
    });

TEST(Compression, NamesAreNoneBf16AndFp16) {
  EXPECT_EQ(parse_compression("none"), Compression::kNone);
  EXPECT_EQ(parse_compression("bf16"), Compression::kBf16);
  EXPECT_EQ(parse_compression("fp16"), Compression::kFp16);
  EXPECT_EQ(parse_compression("int8"), std::nullopt);
}

}  // namespace
}  // namespace transient::train
