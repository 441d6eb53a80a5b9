// The `transient` program: parses flags and files once and calls the parts.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "transient/cli/commands.h"
#include "transient/core/error.h"
#if TRANSIENT_WITH_TORCH
#include "transient/train/build_info.h"
#endif

int main(int argc, char** argv) {
  CLI::App app{
      "transient: train deep-learning models on cheap, revocable cloud servers, and know before "
      "renting which cluster meets a deadline or a budget.",
      "transient"};
  // The libtorch line and the GPU line are asked of libtorch only when --version is given.
  app.set_version_flag("--version", [] {
    std::string text = "transient " TRANSIENT_VERSION;
#if TRANSIENT_WITH_TORCH
    text += "\n" + transient::train::describe(transient::train::build_info());
#else
    text += "\nbuilt without libtorch (no trainer)";
#endif
    return text;
  });
  app.require_subcommand(1);
  app.fallthrough(false);
  transient::cli::add_catalog_command(app);
  transient::cli::add_market_command(app);
  transient::cli::add_simulate_command(app);
  transient::cli::add_fit_command(app);
  transient::cli::add_predict_command(app);
  transient::cli::add_plan_command(app);
  transient::cli::add_report_command(app);
  transient::cli::add_status_command(app);

#if TRANSIENT_WITH_TORCH
  transient::cli::add_train_commands(app);
  transient::cli::add_profile_command(app);
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& error) {
    return error.get_exit_code();  // a command that said why itself and chose its exit code
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      std::string accepted;
      for (const CLI::App* command : app.get_subcommands({})) {
        if (command->get_group().empty()) continue;  // hidden commands
        accepted += (accepted.empty() ? "" : ", ") + command->get_name();
      }
      std::fprintf(stderr, "error: unknown command \"%s\"; accepted: %s\n", argv[1],
                   accepted.c_str());
      return 2;
    }
    std::fprintf(stderr, "error: %s (see `transient --help`)\n", error.what());
    return 2;
  } catch (const transient::InputError& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: internal failure: %s\n", error.what());
    return 1;
  }
  return 0;
}
