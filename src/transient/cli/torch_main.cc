// transient-torch: the commands of `transient` that need libtorch (torch_commands.h). Users run
// them as `transient train ...`; `transient` replaces itself with this program for them.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "transient/cli/commands.h"
#include "transient/cli/run_app.h"
#include "transient/train/build_info.h"
#include "transient/train/cuda_support.h"

int main(int argc, char** argv) {
  // Before anything asks libtorch about CUDA: it keeps its first answer.
  transient::train::load_cuda_where_it_can_run();
  CLI::App app{transient::cli::kAppDescription, "transient"};
  app.set_version_flag("--version", [] {
    return "transient " TRANSIENT_VERSION "\n" +
           transient::train::describe(transient::train::build_info());
  });
  transient::cli::add_train_commands(app);
  transient::cli::add_profile_command(app);
  const int code = transient::cli::run_app(app, argc, argv);
  // The command is over: its records are closed, its threads joined, its processes waited for.
  // What is left are static objects, libtorch's above all, whose destructors (its operator
  // registry unregistering every kernel) took a third of a short process's CPU: 0.07 s of the
  // 0.21 s of `--help`. The process ends without them once what it printed is flushed (the
  // kernel frees the rest, and a GPU's driver its contexts).
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}
