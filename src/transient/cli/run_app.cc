#include "transient/cli/run_app.h"

#include <cstdio>
#include <exception>
#include <string>

#include "transient/core/error.h"

namespace transient::cli {

int run_app(CLI::App& app, int argc, char** argv) {
  app.require_subcommand(1);
  app.fallthrough(false);
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
  } catch (const InputError& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: internal failure: %s\n", error.what());
    return 1;
  }
  return 0;
}

}  // namespace transient::cli
