// What both programs (`transient` and `transient-torch`, see torch_commands.h) do with a command
// line: parse it, run the command and turn what it throws into one `error: ...` line and an exit
// code (2 for bad input or an unknown command, 1 for an internal failure, the command's own code
// when it chose one). Torch-free.
#pragma once

#include <CLI/CLI.hpp>

namespace transient::cli {

// The program's description, the first line of `transient --help`.
inline constexpr const char* kAppDescription =
    "transient: train deep-learning models on cheap, revocable cloud servers, and know before "
    "renting which cluster meets a deadline or a budget.";

// Parses argv with `app` (whose commands are added) and runs the command; returns the exit code.
int run_app(CLI::App& app, int argc, char** argv);

}  // namespace transient::cli
