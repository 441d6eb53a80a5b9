// The orchestrator conventions of `transient worker` (trainer.h). Torch-free.
#include "transient/core/error.h"
#include "transient/train/channel.h"
#include "transient/train/trainer.h"

namespace transient::train {

void resolve_worker_environment(WorkerOptions& options,
                                const std::function<std::string(const char*)>& getenv) {
  if (options.coordinator.empty()) {
    const std::string named = getenv("TRANSIENT_COORDINATOR");
    const std::string host = getenv("MASTER_ADDR");
    const std::string port = getenv("MASTER_PORT");
    // Checked here, named as the variable set: it was blamed on a --coordinator nobody gave.
    if (!named.empty()) {
      parse_endpoint(named, "TRANSIENT_COORDINATOR");
      options.coordinator = named;
    } else if (!host.empty()) {
      if (port.empty()) {
        throw InputError(
            "MASTER_ADDR is set but MASTER_PORT is not; accepted: both, "
            "TRANSIENT_COORDINATOR=HOST:PORT, or --coordinator HOST:PORT");
      }
      // An IPv6 address gets its brackets, as parse_endpoint reads them.
      options.coordinator =
          (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
      parse_endpoint(options.coordinator, "MASTER_ADDR:MASTER_PORT");
    } else {
      throw InputError(
          "no coordinator given; accepted: --coordinator HOST:PORT, "
          "TRANSIENT_COORDINATOR=HOST:PORT, or MASTER_ADDR and MASTER_PORT");
    }
  }
  if (options.token.empty() && options.token_file.empty())
    options.token = getenv("TRANSIENT_TOKEN");
  if (options.interface.empty() && options.advertise.empty()) {
    options.interface = getenv("GLOO_SOCKET_IFNAME");
  }
}

}  // namespace transient::train
