// How fast a training job runs on a cluster: the plug-in point between performance measurements
// or models and the simulator / the planner.
//
// A ThroughputModel is immutable after construction and safe to share between threads. Speeds are
// in steps per second, a step being one update of the parameters (job_batch.h): with
// asynchronous parameter servers every worker's update of its batch, as the research counts
// them (so that a table measured on CM-DARE's clusters and a job's "64,000 steps" mean the same
// thing); with all-reduce one synchronous step of the whole cluster on the job's batch, as
// `transient train --steps` counts them. With the default batch (the workload's, 128) both are
// steps of 128 samples.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "transient/cloud/instance_type.h"

namespace transient::perf {

// How the workers combine their gradients.
enum class Architecture {
  async_ps,   // asynchronous parameter servers (TensorFlow, the research's set-up)
  allreduce,  // synchronous data parallelism with ring all-reduce (our trainer)
};

std::string_view to_string(Architecture architecture);  // "async-ps", "allreduce"
// Accepts "async-ps", "ps", "allreduce", "sync"; false if `text` is none of them.
bool parse_architecture(std::string_view text, Architecture& out);

// `count` servers of one instance type, each running one worker per GPU.
struct WorkerGroup {
  cloud::InstanceType type;  // the server; models read its GPU model and count, TFLOPS, network
  int count = 0;             // number of servers of this type, >= 0
};

// The workers of a cluster and how they train together.
struct ClusterShape {
  std::vector<WorkerGroup> workers;                    // one entry per instance type
  Architecture architecture = Architecture::async_ps;  // how gradients are combined
  int parameter_servers = 1;                           // for async_ps; ignored for allreduce

  // The workers: one per GPU of every server (a CPU-only server counts as one).
  int total_workers() const;
  int total_servers() const;
};

struct Prediction {
  double steps_per_s = 0.0;  // steps per second of the whole cluster (see the top)
  std::string bottleneck;    // what limits the speed, e.g. "parameter server"; empty if unknown
  // Models that know the workload fill these too (0 = not given, as the table model leaves them).
  // Seconds of one worker step: all-reduce, the synchronous step; async-ps, the mean over the
  // cluster's workers.
  double step_time_s = 0.0;
  double samples_per_s = 0.0;  // training samples per second of the whole cluster
};

class ThroughputModel {
 public:
  virtual ~ThroughputModel() = default;

  // The registry name, e.g. "table".
  virtual std::string name() const = 0;
  // One line for people: what the model is and what data it uses.
  virtual std::string describe() const = 0;

  // The cluster's speed. A cluster without workers runs at 0 steps/s. Throws InputError if the
  // model cannot predict for this cluster (e.g. a GPU it has no data for), naming what it knows.
  virtual Prediction predict(const ClusterShape& cluster) const = 0;
};

}  // namespace transient::perf
