// The commands that need libtorch, and how the `transient` program reaches them.
//
// `transient` itself never loads libtorch: starting libtorch (registering its thousands of
// operators) costs 0.2-0.45 s of CPU by machine (docs/benchmarks.md), which `transient plan`,
// `simulate`, `report` and the others have no use for. The commands below live in a second
// program, `transient-torch`, built beside `transient`; `transient train ...` replaces itself
// with `transient-torch train ...` (execv: same process id, same arguments, same signals), so
// users, scripts and process supervisors see one program. `transient --help` lists them with the
// summaries below, which are also the torch program's own (one text for both). Torch-free.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace transient::cli {

struct TorchCommand {
  std::string_view name;
  std::string_view summary;  // the line of `transient --help`
};

inline constexpr std::array<TorchCommand, 4> kTorchCommands{{
    {"train",
     "Data-parallel training on this machine: a coordinator and N worker processes (libtorch, "
     "c10d/Gloo), with checkpoints and exact resume"},
    {"coordinator",
     "The coordinator of a job alone: workers join it from anywhere with `transient worker "
     "--coordinator HOST:PORT --token-file <job>/token`; run again on a job directory it takes "
     "the job back from its journal"},
    {"worker",
     "A worker of a training job: joins the coordinator at HOST:PORT at the next step boundary "
     "and trains until the job ends; SIGTERM (a preemption notice) makes it leave after its step"},
    {"profile",
     "Count the FLOPs of what a model runs (convolutions, linear layers, matrix products) and its "
     "parameters, time its forward+backward and SGD step on this machine, and write a workload "
     "profile for `predict --profile` and `plan --profile`"},
}};

// The summary of the torch command `name`. REQUIRES: it is one of kTorchCommands.
std::string torch_command_summary(std::string_view name);

// Whether `transient ARG ...` is run by transient-torch: a torch command, or --version (which
// names the libtorch, CUDA and NCCL the trainer was built with).
bool runs_in_torch_program(std::string_view first_argument);

// The GLIBC_TUNABLES that transient-torch runs with, given this process's (`existing`, null when
// unset): glibc's malloc backs its heap with transparent huge pages (glibc.malloc.hugetlb=1,
// where the kernel's transparent_hugepage setting is `madvise` or `always`). libtorch's start
// registers its operators in about 100 MB of small allocations, and with 4 KiB pages a fifth of
// that start's CPU went to page faults: 179 -> 141 ms of CPU, 16,000 -> 3,000 page faults, the
// same resident memory (docs/benchmarks.md). A setting of the user's is kept, and so is their
// own glibc.malloc.hugetlb.
std::string torch_program_tunables(const char* existing);

// Replaces this process with transient-torch (beside this program's own file) given the same
// arguments, and GLIBC_TUNABLES as torch_program_tunables says. Returns only on failure, with
// one line saying why (the path it looked for).
std::string exec_torch_program(char** argv);

}  // namespace transient::cli
