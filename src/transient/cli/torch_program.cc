#include "transient/cli/torch_program.h"

#include <CLI/CLI.hpp>

#include <string>

#include "transient/cli/commands.h"
#include "transient/cli/run_app.h"
#include "transient/train/build_info.h"

namespace transient::cli {

int run_torch_program(int argc, char** argv, launch::ForkServer* fork_server) {
  CLI::App app{kAppDescription, "transient"};
  app.set_version_flag("--version", [] {
    return "transient " TRANSIENT_VERSION "\n" + train::describe(train::build_info());
  });
  add_train_commands(app, fork_server);
  add_profile_command(app);
  return run_app(app, argc, argv);
}

}  // namespace transient::cli
