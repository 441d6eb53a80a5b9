// What carries the rendezvous store's requests (coordinator_store.h), without libtorch.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>

namespace transient::train {

// What carries the store's requests: the worker's connection to its coordinator.
class StoreTransport {
 public:
  virtual ~StoreTransport() = default;
  // Sends `request` (the transport adds its "id") and returns the reply, waiting at most
  // `timeout`. Throws std::runtime_error naming why there is no reply (a timeout, the connection
  // lost, the worker told to leave) or, with the coordinator's reason, if it refused the request.
  virtual nlohmann::json store_call(nlohmann::json request, std::chrono::milliseconds timeout) = 0;
};

}  // namespace transient::train
