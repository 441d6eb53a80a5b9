// The worker's half of the rendezvous store (rendezvous_store.h): a c10d::Store whose every
// operation is a request on the worker's authenticated connection to its coordinator, so that a
// generation's ProcessGroupGloo exchanges its members' addresses without any open store port.
// Operations that wait for keys (get, wait, multiGet) wait at most the store's timeout, and end
// early with an error when the transport says so (the coordinator is lost, a preemption notice
// came). Thread-safe (the transport serialises nothing: requests are told apart by their ids).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <nlohmann/json.hpp>

#include "transient/train/store_transport.h"

namespace transient::train {

class CoordinatorStore : public c10d::Store {
 public:
  // `transport` must outlive the store and its clones.
  CoordinatorStore(StoreTransport& transport, std::chrono::milliseconds timeout);

  c10::intrusive_ptr<c10d::Store> clone() override;
  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;
  void append(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<std::vector<uint8_t>> multiGet(const std::vector<std::string>& keys) override;
  void multiSet(const std::vector<std::string>& keys,
                const std::vector<std::vector<uint8_t>>& values) override;
  bool hasExtendedApi() const override { return true; }

 private:
  nlohmann::json call(const std::string& op, const std::vector<std::string>& keys,
                      const std::vector<std::vector<uint8_t>>& values,
                      std::chrono::milliseconds timeout, nlohmann::json extra = {});
  std::chrono::milliseconds wait_limit(std::chrono::milliseconds asked) const;

  StoreTransport& transport_;
};

}  // namespace transient::train
