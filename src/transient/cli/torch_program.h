// transient-torch's command line (torch_commands.h) as a function: what its main() runs, and
// what the trainer's tests run in their own process for a command that is refused before any
// job starts (a flag, a file, a job directory), where a process of its own would spend 0.15-0.2 s
// of CPU starting libtorch to print one line (docs/benchmarks.md).
#pragma once

namespace transient::launch {
class ForkServer;
}

namespace transient::cli {

// Parses `transient ARGS...` (argv[0] is the program's name) for the torch commands and runs
// the command: `train` starts its local workers from `fork_server` when given (by exec
// otherwise). Returns the exit code; bad input is one `error: ...` line on stderr and 2
// (run_app.h).
int run_torch_program(int argc, char** argv, launch::ForkServer* fork_server);

}  // namespace transient::cli
