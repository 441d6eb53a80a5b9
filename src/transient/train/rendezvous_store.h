// The rendezvous keys of a job, held by the coordinator and served only over its workers'
// authenticated connections (channel.h, token_proof.h): there is no open store port, so nothing
// of the job can be read or written without the token. A generation's ProcessGroupGloo exchanges
// its members' addresses through these keys (c10d's Store operations, carried by the worker's
// CoordinatorStore); this class is the server half, torch-free and socket-free, so that every
// rule is a unit test.
//
// Requests and replies are JSON objects on the worker's connection (protocol.h):
//   {"store":OP,"id":N,"keys":[K...],"values":[base64...],"amount":A,"expected":base64}
//   {"store_reply":N, ...} with "values", "count", "ready" or "deleted", or "error":reason
// OP is set, get, add, check, wait, delete, num_keys, compare_set, multi_get, multi_set or
// append. get, wait and multi_get wait until their keys exist: their replies come later, from
// take_completed(). Keys must lie under the current generation's prefix (set_generation_prefix);
// keys, values, the number of keys and a client's waiting requests are bounded, so a member that
// speaks nonsense cannot make the coordinator hold much memory.
//
// Used by one thread (the coordinator's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace transient::train {

// Base64 (OpenSSL's EVP codec) of store values on the wire. decode_store_value throws
// std::invalid_argument on text that is not base64.
std::string encode_store_value(const std::string& bytes);
std::string decode_store_value(const std::string& text);

class RendezvousStore {
 public:
  struct Limits {
    std::size_t max_key_bytes = 512;
    std::size_t max_value_bytes = 64 << 10;   // a Gloo address is a few hundred bytes
    std::size_t max_keys = 8192;              // under the current prefix
    std::size_t max_waits_per_client = 64;    // requests waiting for keys, per client
    std::size_t max_keys_per_request = 1024;  // a generation of 64 members needs 64
    // A reply's values in all (a multi_get naming one large key 5,000 times asked for 437 MB).
    std::size_t max_reply_bytes = 4 << 20;
  };

  RendezvousStore() = default;
  explicit RendezvousStore(Limits limits) : limits_(limits) {}

  // Keys are accepted only under `prefix` ("gen/<g>/"); every key and waiting request outside it
  // is dropped (the generation it belonged to is over).
  void set_generation_prefix(const std::string& prefix);
  const std::string& generation_prefix() const { return prefix_; }

  // Handles a request of `client` (a worker id). Returns its reply, or nullopt when it waits for
  // keys that do not exist yet. A request of the wrong shape gets an error reply naming it.
  std::optional<nlohmann::json> handle(const std::string& client, const nlohmann::json& request);

  // The replies of waiting requests that the last handle() calls completed, with their clients.
  std::vector<std::pair<std::string, nlohmann::json>> take_completed();

  // The client is gone: its waiting requests are dropped.
  void drop_client(const std::string& client);

  std::size_t size() const { return values_.size(); }
  std::size_t waiting() const { return waits_.size(); }

 private:
  struct Wait {
    std::string client;
    std::int64_t id = 0;
    std::string op;  // get, wait or multi_get
    std::vector<std::string> keys;
  };

  bool ready(const std::vector<std::string>& keys) const;
  nlohmann::json answer(const Wait& wait) const;
  void wake_waits();
  void check_key(const std::string& key) const;
  void put(const std::string& key, std::string value);

  Limits limits_;
  std::string prefix_ = "gen/0/";
  std::map<std::string, std::string> values_;
  std::vector<Wait> waits_;
  std::vector<std::pair<std::string, nlohmann::json>> completed_;
};

}  // namespace transient::train
