#include "transient/train/coordinator_store.h"

#include <c10/util/Exception.h>

#include "transient/train/rendezvous_store.h"

namespace transient::train {
namespace {

std::string bytes_of(const std::vector<uint8_t>& value) { return {value.begin(), value.end()}; }

std::vector<uint8_t> value_of(const nlohmann::json& text) {
  const std::string bytes = decode_store_value(text.get<std::string>());
  return {bytes.begin(), bytes.end()};
}

}  // namespace

CoordinatorStore::CoordinatorStore(StoreTransport& transport, std::chrono::milliseconds timeout)
    : c10d::Store(timeout), transport_(transport) {}

c10::intrusive_ptr<c10d::Store> CoordinatorStore::clone() {
  return c10::make_intrusive<CoordinatorStore>(transport_, timeout_);
}

nlohmann::json CoordinatorStore::call(const std::string& op, const std::vector<std::string>& keys,
                                      const std::vector<std::vector<uint8_t>>& values,
                                      std::chrono::milliseconds timeout, nlohmann::json extra) {
  nlohmann::json request = extra.is_object() ? std::move(extra) : nlohmann::json::object();
  request["store"] = op;
  request["keys"] = keys;
  if (!values.empty() || op == "multi_set") {
    nlohmann::json encoded = nlohmann::json::array();
    for (const auto& value : values) encoded.push_back(encode_store_value(bytes_of(value)));
    request["values"] = std::move(encoded);
  }
  try {
    return transport_.store_call(std::move(request), timeout);
  } catch (const std::runtime_error& error) {
    // c10d's own stores fail this way; ProcessGroupGloo passes it on to whoever formed the group.
    C10_THROW_ERROR(DistStoreError, std::string("rendezvous store: ") + error.what());
  }
}

std::chrono::milliseconds CoordinatorStore::wait_limit(std::chrono::milliseconds asked) const {
  // Gloo asks for c10d's default of 300 s; the store's own timeout (the job's) bounds every wait.
  if (asked == kNoTimeout) return timeout_;
  return std::min(asked, timeout_);
}

void CoordinatorStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  call("set", {key}, {value}, timeout_);
}

std::vector<uint8_t> CoordinatorStore::compareSet(const std::string& key,
                                                  const std::vector<uint8_t>& expected,
                                                  const std::vector<uint8_t>& desired) {
  const auto reply = call("compare_set", {key}, {desired}, timeout_,
                          {{"expected", encode_store_value(bytes_of(expected))}});
  return value_of(reply.at("values").at(0));
}

std::vector<uint8_t> CoordinatorStore::get(const std::string& key) {
  return value_of(call("get", {key}, {}, timeout_).at("values").at(0));
}

int64_t CoordinatorStore::add(const std::string& key, int64_t value) {
  return call("add", {key}, {}, timeout_, {{"amount", value}}).at("count").get<int64_t>();
}

bool CoordinatorStore::deleteKey(const std::string& key) {
  return call("delete", {key}, {}, timeout_).at("deleted").get<bool>();
}

bool CoordinatorStore::check(const std::vector<std::string>& keys) {
  return call("check", keys, {}, timeout_).at("ready").get<bool>();
}

int64_t CoordinatorStore::getNumKeys() {
  return call("num_keys", {}, {}, timeout_).at("count").get<int64_t>();
}

void CoordinatorStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void CoordinatorStore::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  call("wait", keys, {}, wait_limit(timeout));
}

void CoordinatorStore::append(const std::string& key, const std::vector<uint8_t>& value) {
  call("append", {key}, {value}, timeout_);
}

std::vector<std::vector<uint8_t>> CoordinatorStore::multiGet(const std::vector<std::string>& keys) {
  std::vector<std::vector<uint8_t>> values;
  for (const auto& value : call("multi_get", keys, {}, timeout_).at("values")) {
    values.push_back(value_of(value));
  }
  return values;
}

void CoordinatorStore::multiSet(const std::vector<std::string>& keys,
                                const std::vector<std::vector<uint8_t>>& values) {
  call("multi_set", keys, values, timeout_);
}

}  // namespace transient::train
