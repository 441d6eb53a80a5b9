#include "transient/train/rendezvous_store.h"

#include <openssl/evp.h>

#include <algorithm>
#include <stdexcept>

#include "transient/core/json_number.h"

namespace transient::train {
namespace {

// A request the store refuses: the reply carries the reason.
struct Refused : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

std::vector<std::string> keys_of(const nlohmann::json& request, std::size_t at_least) {
  if (!request.contains("keys") || !request.at("keys").is_array()) {
    throw Refused("\"keys\" must be an array of strings");
  }
  std::vector<std::string> keys;
  for (const auto& key : request.at("keys")) {
    if (!key.is_string()) throw Refused("\"keys\" must be an array of strings");
    keys.push_back(key.get<std::string>());
  }
  if (keys.size() < at_least) throw Refused("\"keys\" names too few keys");
  return keys;
}

std::vector<std::string> values_of(const nlohmann::json& request, std::size_t count) {
  if (!request.contains("values") || !request.at("values").is_array() ||
      request.at("values").size() != count) {
    throw Refused("\"values\" must be an array of one base64 value per key");
  }
  std::vector<std::string> values;
  for (const auto& value : request.at("values")) {
    if (!value.is_string()) throw Refused("\"values\" must hold base64 strings");
    try {
      values.push_back(decode_store_value(value.get<std::string>()));
    } catch (const std::invalid_argument&) {
      throw Refused("a value is not base64");
    }
  }
  return values;
}

nlohmann::json encoded(const std::vector<std::string>& values) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& value : values) list.push_back(encode_store_value(value));
  return list;
}

}  // namespace

std::string encode_store_value(const std::string& bytes) {
  std::string text(4 * ((bytes.size() + 2) / 3), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  text.resize(static_cast<std::size_t>(written));
  return text;
}

std::string decode_store_value(const std::string& text) {
  if (text.size() % 4 != 0) throw std::invalid_argument("not base64");
  std::string bytes(3 * (text.size() / 4), '\0');
  const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(bytes.data()),
                                      reinterpret_cast<const unsigned char*>(text.data()),
                                      static_cast<int>(text.size()));
  if (written < 0) throw std::invalid_argument("not base64");
  // EVP_DecodeBlock counts the padding as bytes: take them back off.
  std::size_t size = static_cast<std::size_t>(written);
  for (std::size_t i = text.size(); i > 0 && text[i - 1] == '=' && size > 0; --i) --size;
  bytes.resize(size);
  return bytes;
}

void RendezvousStore::set_generation_prefix(const std::string& prefix) {
  prefix_ = prefix;
  for (auto it = values_.begin(); it != values_.end();) {
    it = it->first.rfind(prefix_, 0) == 0 ? std::next(it) : values_.erase(it);
  }
  waits_.erase(std::remove_if(waits_.begin(), waits_.end(),
                              [&](const Wait& wait) {
                                return std::any_of(wait.keys.begin(), wait.keys.end(),
                                                   [&](const std::string& key) {
                                                     return key.rfind(prefix_, 0) != 0;
                                                   });
                              }),
               waits_.end());
}

void RendezvousStore::check_key(const std::string& key) const {
  if (key.size() > limits_.max_key_bytes) {
    throw Refused("a key longer than " + std::to_string(limits_.max_key_bytes) + " bytes");
  }
  if (key.rfind(prefix_, 0) != 0) {
    throw Refused("key \"" + key.substr(0, 64) + "\" is not under the current generation's \"" +
                  prefix_ + "\"");
  }
}

void RendezvousStore::put(const std::string& key, std::string value) {
  if (value.size() > limits_.max_value_bytes) {
    throw Refused("a value larger than " + std::to_string(limits_.max_value_bytes) + " bytes");
  }
  if (values_.count(key) == 0 && values_.size() >= limits_.max_keys) {
    throw Refused("the store holds " + std::to_string(limits_.max_keys) + " keys already");
  }
  values_[key] = std::move(value);
}

bool RendezvousStore::ready(const std::vector<std::string>& keys) const {
  return std::all_of(keys.begin(), keys.end(),
                     [&](const std::string& key) { return values_.count(key) != 0; });
}

nlohmann::json RendezvousStore::answer(const Wait& wait) const {
  nlohmann::json reply = {{"store_reply", wait.id}};
  if (wait.op != "wait") {
    std::vector<std::string> values;
    std::size_t bytes = 0;
    for (const auto& key : wait.keys) {
      bytes += values_.at(key).size();
      if (bytes > limits_.max_reply_bytes) {
        reply["error"] = "the values of " + std::to_string(wait.keys.size()) +
                         " keys would exceed " + std::to_string(limits_.max_reply_bytes) +
                         " bytes, the most one reply holds";
        return reply;
      }
      values.push_back(values_.at(key));
    }
    reply["values"] = encoded(values);
  }
  return reply;
}

void RendezvousStore::wake_waits() {
  for (auto it = waits_.begin(); it != waits_.end();) {
    if (ready(it->keys)) {
      completed_.emplace_back(it->client, answer(*it));
      it = waits_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<nlohmann::json> RendezvousStore::handle(const std::string& client,
                                                      const nlohmann::json& request) {
  const std::int64_t id =
      request.contains("id") ? whole_number_in(request.at("id")).value_or(-1) : -1;
  nlohmann::json reply = {{"store_reply", id}};
  try {
    if (id < 0) throw Refused("a store request needs an \"id\" (a non-negative integer)");
    const std::string op =
        request.at("store").is_string() ? request.at("store").get<std::string>() : "";
    if (op == "num_keys") {
      reply["count"] = values_.size();
      return reply;
    }
    const auto keys = keys_of(request, 1);
    if (keys.size() > limits_.max_keys_per_request) {
      throw Refused("a request naming " + std::to_string(keys.size()) + " keys; accepted: up to " +
                    std::to_string(limits_.max_keys_per_request));
    }
    for (const auto& key : keys) check_key(key);
    if (op == "set" || op == "multi_set" || op == "append") {
      if (op != "multi_set" && keys.size() != 1) throw Refused(op + " takes one key");
      const auto values = values_of(request, keys.size());
      for (std::size_t i = 0; i < keys.size(); ++i) {
        auto it = values_.find(keys[i]);
        put(keys[i], op == "append" && it != values_.end() ? it->second + values[i] : values[i]);
      }
      wake_waits();
      return reply;
    }
    if (op == "add") {
      if (keys.size() != 1 || !request.contains("amount") ||
          !request.at("amount").is_number_integer()) {
        throw Refused("add takes one key and an integer \"amount\"");
      }
      std::int64_t value = 0;
      if (auto it = values_.find(keys[0]); it != values_.end()) {
        try {
          std::size_t used = 0;
          value = std::stoll(it->second, &used);
          if (used != it->second.size()) throw std::invalid_argument("trailing bytes");
        } catch (const std::exception&) {
          throw Refused("add on key \"" + keys[0] + "\", which does not hold an integer");
        }
      }
      // An int64 amount however the JSON holds it (off the wire, a non-negative one is unsigned).
      const auto amount = whole_number_in(request.at("amount"));
      if (!amount || __builtin_add_overflow(value, *amount, &value)) {
        throw Refused("add of " + request.at("amount").dump() + " to key \"" + keys[0] +
                      "\" would leave the integers a key holds (64 bits)");
      }
      put(keys[0], std::to_string(value));
      reply["count"] = value;
      wake_waits();
      return reply;
    }
    if (op == "compare_set") {
      const auto values = values_of(request, 1);
      if (keys.size() != 1 || !request.contains("expected") ||
          !request.at("expected").is_string()) {
        throw Refused("compare_set takes one key, one value and \"expected\"");
      }
      const std::string expected = decode_store_value(request.at("expected").get<std::string>());
      auto it = values_.find(keys[0]);
      // c10d's semantics: a missing key is created when nothing was expected; a present one is
      // replaced when it holds what was expected; the reply is the value the key holds after.
      if ((it == values_.end() && expected.empty()) ||
          (it != values_.end() && it->second == expected)) {
        put(keys[0], values[0]);
        wake_waits();
        reply["values"] = encoded({values[0]});
      } else {
        reply["values"] = encoded({it == values_.end() ? expected : it->second});
      }
      return reply;
    }
    if (op == "check") {
      reply["ready"] = ready(keys);
      return reply;
    }
    if (op == "delete") {
      reply["deleted"] = values_.erase(keys[0]) > 0;
      return reply;
    }
    if (op == "get" || op == "wait" || op == "multi_get") {
      if (op == "get" && keys.size() != 1) throw Refused("get takes one key");
      Wait wait{client, id, op, keys};
      if (ready(keys)) return answer(wait);
      const auto mine = std::count_if(waits_.begin(), waits_.end(),
                                      [&](const Wait& w) { return w.client == client; });
      if (static_cast<std::size_t>(mine) >= limits_.max_waits_per_client) {
        throw Refused("more than " + std::to_string(limits_.max_waits_per_client) +
                      " requests of this worker wait for keys");
      }
      waits_.push_back(std::move(wait));
      return std::nullopt;
    }
    throw Refused("unknown store operation \"" + op.substr(0, 32) +
                  "\"; accepted: set, get, add, check, wait, delete, num_keys, compare_set, "
                  "multi_get, multi_set, append");
  } catch (const std::invalid_argument& error) {
    reply["error"] = error.what();
  } catch (const nlohmann::json::exception& error) {
    reply["error"] = std::string("a malformed store request: ") + error.what();
  }
  return reply;
}

std::vector<std::pair<std::string, nlohmann::json>> RendezvousStore::take_completed() {
  return std::exchange(completed_, {});
}

void RendezvousStore::drop_client(const std::string& client) {
  waits_.erase(std::remove_if(waits_.begin(), waits_.end(),
                              [&](const Wait& wait) { return wait.client == client; }),
               waits_.end());
}

}  // namespace transient::train
