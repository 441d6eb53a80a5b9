// The `transient` program: parses flags and files once and calls the parts. The commands that
// need libtorch run in transient-torch (torch_main.cc), which this program becomes for them
// (torch_commands.h): this one never loads libtorch.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "transient/cli/commands.h"
#include "transient/cli/run_app.h"
#include "transient/cli/torch_commands.h"

int main(int argc, char** argv) {
#if TRANSIENT_WITH_TORCH
  if (argc > 1 && transient::cli::runs_in_torch_program(argv[1])) {
    const std::string why = transient::cli::exec_torch_program(argv);
    std::fprintf(stderr, "error: %s\n", why.c_str());
    return 1;
  }
#endif
  CLI::App app{transient::cli::kAppDescription, "transient"};
  app.set_version_flag("--version", [] {
    return std::string("transient " TRANSIENT_VERSION "\nbuilt without libtorch (no trainer)");
  });
  transient::cli::add_catalog_command(app);
  transient::cli::add_market_command(app);
  transient::cli::add_simulate_command(app);
  transient::cli::add_fit_command(app);
  transient::cli::add_predict_command(app);
  transient::cli::add_plan_command(app);
  transient::cli::add_report_command(app);
  transient::cli::add_status_command(app);
#if TRANSIENT_WITH_TORCH
  // Listed by --help and in the unknown-command line; never parsed here (see above).
  for (const auto& command : transient::cli::kTorchCommands) {
    app.add_subcommand(std::string(command.name), std::string(command.summary));
  }
#endif
  return transient::cli::run_app(app, argc, argv);
}
