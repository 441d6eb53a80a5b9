// transient-torch: the commands of `transient` that need libtorch (torch_commands.h). Users run
// them as `transient train ...`; `transient` replaces itself with this program for them.
#include <CLI/CLI.hpp>

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
  return transient::cli::run_app(app, argc, argv);
}
