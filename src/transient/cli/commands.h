// The subcommands of the `transient` program. Each add_* function declares one subcommand (or a
// group) on `app` with its flags and a callback that does the work; the callback throws
// InputError for bad input, which main() turns into one `error: ...` line and exit code 2.
#pragma once

#include <CLI/CLI.hpp>

namespace transient::cli {

}  // namespace transient::cli
