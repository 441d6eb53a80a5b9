// transient-torch: the commands of `transient` that need libtorch (torch_commands.h). Users run
// them as `transient train ...`; `transient` replaces itself with this program for them.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "transient/cli/torch_program.h"
#include "transient/core/text.h"
#include "transient/launch/fork_server.h"
#include "transient/train/cuda_support.h"

namespace {

// A worker the launcher's fork server started: `transient ARGS...` in the state this program had
// when the server was forked.
int run_forked(const std::vector<std::string>& args) {
  std::vector<std::string> words{"transient"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  return transient::cli::run_torch_program(static_cast<int>(words.size()), argv.data(), nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything asks libtorch about CUDA: it keeps its first answer.
  transient::train::load_cuda_where_it_can_run();
  // `transient train` starts its workers from a fork server forked now, while this process has
  // one thread, so that none pays libtorch's start-up again (launch/fork_server.h). Not where
  // CUDA can run: GPU workers start by exec, as they did when checked on a GPU; nor with
  // TRANSIENT_FORK_SERVER=off.
  std::unique_ptr<transient::launch::ForkServer> fork_server;
  if (argc > 1 && std::string(argv[1]) == "train" && !transient::train::nvidia_driver_present()) {
    const char* setting = std::getenv("TRANSIENT_FORK_SERVER");
    const std::string wanted = setting != nullptr ? setting : "on";
    if (wanted != "on" && wanted != "off") {
      std::fprintf(stderr, "error: TRANSIENT_FORK_SERVER=%s: accepted: on, off\n",
                   transient::printable(wanted).c_str());
      return 2;
    }
    if (wanted == "on") fork_server = transient::launch::ForkServer::start(run_forked, argc, argv);
  }
  const int code = transient::cli::run_torch_program(argc, argv, fork_server.get());
  // The command is over: its records are closed, its threads joined, its processes waited for.
  // What is left are static objects, libtorch's above all, whose destructors (its operator
  // registry unregistering every kernel) took a third of a short process's CPU: 0.07 s of the
  // 0.21 s of `--help`. The process ends without them once what it printed is flushed (the
  // kernel frees the rest, and a GPU's driver its contexts; the fork server exits as its socket
  // closes).
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}
