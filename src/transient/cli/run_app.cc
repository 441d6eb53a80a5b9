#include "transient/cli/run_app.h"

#include <cstdio>
#include <exception>
#include <string>

#include "transient/core/error.h"
#include "transient/core/text.h"

namespace transient::cli {
namespace {

// The command that was run, as far as CLI11 parsed it ("transient market show"), and its last
// subcommand.
std::string command_path(const CLI::App& app, const CLI::App*& leaf) {
  std::string path = "transient";
  leaf = &app;
  for (auto subs = app.get_subcommands(); !subs.empty(); subs = leaf->get_subcommands()) {
    leaf = subs.front();
    path += " " + leaf->get_name();
  }
  return path;
}

// CLI11's own words for a value it could not read ("Could not convert: --workers = abc") in
// those of every other refusal: --workers: "abc"; accepted: a whole number.
std::string conversion_text(const CLI::App& leaf, const std::string& what) {
  const std::string prefix = "Could not convert: ";
  const auto equals = what.find(" = ");
  if (what.rfind(prefix, 0) != 0 || equals == std::string::npos) return what;
  const std::string name = what.substr(prefix.size(), equals - prefix.size());
  std::string type;
  try {
    type = leaf.get_option(name)->get_type_name();
  } catch (const CLI::Error&) {
    return what;
  }
  const std::string accepted = type.rfind("UINT", 0) == 0    ? "a whole number from 0"
                               : type.rfind("INT", 0) == 0   ? "a whole number"
                               : type.rfind("FLOAT", 0) == 0 ? "a number"
                                                             : "a value of type " + type;
  return name + ": \"" + what.substr(equals + 3) + "\"; accepted: " + accepted;
}

}  // namespace

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
      std::fprintf(stderr, "error: unknown command \"%s\"; accepted: %s\n",
                   printable(argv[1]).c_str(), accepted.c_str());
      return 2;
    }
    const CLI::App* leaf = nullptr;
    const std::string command = command_path(app, leaf);
    const std::string text = dynamic_cast<const CLI::ConversionError*>(&error) != nullptr
                                 ? conversion_text(*leaf, error.what())
                                 : std::string(error.what());
    std::fprintf(stderr, "error: %s (see `%s --help`)\n", printable(text).c_str(), command.c_str());
    return 2;
  } catch (const InputError& error) {
    std::fprintf(stderr, "error: %s\n", printable(error.what()).c_str());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: internal failure: %s\n",
                 printable(error_reason(error.what())).c_str());
    return 1;
  }
  return 0;
}

}  // namespace transient::cli
