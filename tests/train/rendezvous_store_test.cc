// The coordinator's rendezvous keys (rendezvous_store.h) and the orchestrator conventions of
// `transient worker`: torch-free rules, tested without processes.
#include "transient/train/rendezvous_store.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>

#include "transient/core/error.h"
#include "transient/train/trainer.h"

namespace transient::train {
namespace {

nlohmann::json request(const std::string& op, std::int64_t id, std::vector<std::string> keys,
                       std::vector<std::string> values = {}) {
  nlohmann::json r = {{"store", op}, {"id", id}, {"keys", keys}};
  if (!values.empty()) {
    nlohmann::json encoded = nlohmann::json::array();
    for (const auto& v : values) encoded.push_back(encode_store_value(v));
    r["values"] = encoded;
  }
  return r;
}

std::string value_at(const nlohmann::json& reply, std::size_t i = 0) {
  return decode_store_value(reply.at("values").at(i).get<std::string>());
}

TEST(RendezvousStore, Base64RoundTripsEveryByte) {
  for (std::size_t size : {0, 1, 2, 3, 4, 255, 256, 1000}) {
    std::string bytes;
    for (std::size_t i = 0; i < size; ++i) bytes.push_back(static_cast<char>(i * 7));
    EXPECT_EQ(decode_store_value(encode_store_value(bytes)), bytes) << size;
  }
  EXPECT_THROW(decode_store_value("abc"), std::invalid_argument);
  EXPECT_THROW(decode_store_value("a*c="), std::invalid_argument);
}

TEST(RendezvousStore, GetWaitsForTheKeyAndIsAnsweredWhenItIsSet) {
  RendezvousStore store;
  store.set_generation_prefix("gen/3/");
  EXPECT_FALSE(store.handle("w1", request("get", 7, {"gen/3/pg/rank_0"})).has_value());
  EXPECT_EQ(store.waiting(), 1u);
  const auto set =
      store.handle("w0", request("set", 1, {"gen/3/pg/rank_0"}, {std::string("a\0b", 3)}));
  ASSERT_TRUE(set.has_value());
  EXPECT_EQ(set->at("store_reply"), 1);
  EXPECT_FALSE(set->contains("error"));
  const auto completed = store.take_completed();
  ASSERT_EQ(completed.size(), 1u);
  EXPECT_EQ(completed[0].first, "w1");
  EXPECT_EQ(completed[0].second.at("store_reply"), 7);
  EXPECT_EQ(value_at(completed[0].second), std::string("a\0b", 3));
  EXPECT_TRUE(store.take_completed().empty());
  // Present now: answered at once.
  const auto again = store.handle("w1", request("get", 8, {"gen/3/pg/rank_0"}));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(value_at(*again), std::string("a\0b", 3));
}

TEST(RendezvousStore, MultiGetAndWaitNeedEveryKey) {
  RendezvousStore store;
  EXPECT_FALSE(store.handle("w0", request("multi_get", 1, {"gen/0/a", "gen/0/b"})).has_value());
  EXPECT_FALSE(store.handle("w0", request("wait", 2, {"gen/0/a", "gen/0/b"})).has_value());
  store.handle("w1", request("set", 3, {"gen/0/a"}, {"1"}));
  EXPECT_TRUE(store.take_completed().empty());
  store.handle("w1", request("multi_set", 4, {"gen/0/b", "gen/0/c"}, {"2", "3"}));
  auto completed = store.take_completed();
  ASSERT_EQ(completed.size(), 2u);
  EXPECT_EQ(value_at(completed[0].second, 0), "1");
  EXPECT_EQ(value_at(completed[0].second, 1), "2");
  EXPECT_FALSE(completed[1].second.contains("values"));  // a wait carries no values
  EXPECT_EQ(store.handle("w0", request("check", 5, {"gen/0/c", "gen/0/d"}))->at("ready"), false);
  EXPECT_EQ(store.handle("w0", request("num_keys", 6, {}))->at("count"), 3);
}

TEST(RendezvousStore, AddCountsAndCompareSetFollowsC10d) {
  RendezvousStore store;
  EXPECT_EQ(store.handle("w0", {{"store", "add"}, {"id", 1}, {"keys", {"gen/0/n"}}, {"amount", 2}})
                ->at("count"),
            2);
  EXPECT_EQ(store.handle("w1", {{"store", "add"}, {"id", 2}, {"keys", {"gen/0/n"}}, {"amount", 3}})
                ->at("count"),
            5);
  EXPECT_EQ(value_at(*store.handle("w1", request("get", 3, {"gen/0/n"}))), "5");
  auto cas = [&](const std::string& expected, const std::string& desired) {
    auto r = request("compare_set", 9, {"gen/0/k"}, {desired});
    r["expected"] = encode_store_value(expected);
    return value_at(*store.handle("w0", r));
  };
  EXPECT_EQ(cas("x", "y"), "x");  // missing and something expected: not created
  EXPECT_EQ(cas("", "y"), "y");   // missing and nothing expected: created
  EXPECT_EQ(cas("z", "w"), "y");  // present and not as expected: unchanged
  EXPECT_EQ(cas("y", "w"), "w");  // as expected: replaced
  store.handle("w0", request("append", 10, {"gen/0/k"}, {"!"}));
  EXPECT_EQ(value_at(*store.handle("w0", request("get", 11, {"gen/0/k"}))), "w!");
  EXPECT_EQ(store.handle("w0", request("delete", 12, {"gen/0/k"}))->at("deleted"), true);
  EXPECT_EQ(store.handle("w0", request("delete", 13, {"gen/0/k"}))->at("deleted"), false);
  // add on a key that holds no integer is refused, not a crash.
  store.handle("w0", request("set", 14, {"gen/0/s"}, {"abc"}));
  EXPECT_TRUE(
      store.handle("w0", {{"store", "add"}, {"id", 15}, {"keys", {"gen/0/s"}}, {"amount", 1}})
          ->contains("error"));
  // ... and so is an add past what 64 bits hold (a signed overflow before), the key unchanged.
  const auto largest = std::numeric_limits<std::int64_t>::max();
  auto add = [&](std::int64_t id, const nlohmann::json& amount) {
    return *store.handle("w0",
                         {{"store", "add"}, {"id", id}, {"keys", {"gen/0/m"}}, {"amount", amount}});
  };
  EXPECT_EQ(add(16, largest).at("count"), largest);
  EXPECT_NE(add(17, 1).value("error", "").find("would leave the integers a key holds"),
            std::string::npos);
  EXPECT_TRUE(add(18, std::numeric_limits<std::uint64_t>::max()).contains("error"));
  EXPECT_EQ(value_at(*store.handle("w0", request("get", 19, {"gen/0/m"}))),
            std::to_string(largest));
  // An add as it comes off the wire: nlohmann's parser keeps a non-negative number unsigned.
  const auto parsed =
      nlohmann::json::parse(R"({"store": "add", "id": 20, "keys": ["gen/0/p"], "amount": 2})");
  EXPECT_EQ(store.handle("w0", parsed)->value("count", -1), 2);
}

TEST(RendezvousStore, KeysOutsideTheGenerationAndOversizedOnesAreRefusedByName) {
  RendezvousStore::Limits limits;
  limits.max_value_bytes = 10;
  limits.max_keys = 2;
  limits.max_waits_per_client = 2;
  RendezvousStore store(limits);
  store.set_generation_prefix("gen/5/");
  const auto future = store.handle("w0", request("set", 1, {"gen/6/pg/0"}, {"x"}));
  ASSERT_TRUE(future->contains("error"));
  EXPECT_NE(future->at("error").get<std::string>().find("gen/5/"), std::string::npos);
  EXPECT_TRUE(store.handle("w0", request("set", 2, {"gen/5/a"}, {std::string(11, 'x')}))
                  ->contains("error"));
  EXPECT_FALSE(store.handle("w0", request("set", 3, {"gen/5/a"}, {"x"}))->contains("error"));
  EXPECT_FALSE(store.handle("w0", request("set", 4, {"gen/5/b"}, {"x"}))->contains("error"));
  EXPECT_TRUE(store.handle("w0", request("set", 5, {"gen/5/c"}, {"x"}))->contains("error"));
  EXPECT_FALSE(store.handle("w0", request("set", 6, {"gen/5/a"}, {"y"}))->contains("error"));
  EXPECT_FALSE(store.handle("w1", request("get", 7, {"gen/5/x"})).has_value());
  EXPECT_FALSE(store.handle("w1", request("get", 8, {"gen/5/y"})).has_value());
  EXPECT_TRUE(store.handle("w1", request("get", 9, {"gen/5/z"}))->contains("error"));
  // Nonsense gets an error reply naming what is wrong, never an exception.
  for (const auto& nonsense :
       {nlohmann::json{{"store", "set"}}, nlohmann::json{{"store", "set"}, {"id", 1}, {"keys", 3}},
        nlohmann::json{{"store", 5}, {"id", 1}, {"keys", {"gen/5/a"}}},
        nlohmann::json{{"store", "set"}, {"id", 1}, {"keys", {"gen/5/a"}}, {"values", {"***"}}},
        nlohmann::json{{"store", "drop_table"}, {"id", 1}, {"keys", {"gen/5/a"}}}}) {
    const auto reply = store.handle("w0", nonsense);
    ASSERT_TRUE(reply.has_value()) << nonsense;
    EXPECT_TRUE(reply->contains("error")) << nonsense;
  }
  // The next generation drops the old keys and waits.
  store.drop_client("w1");
  EXPECT_EQ(store.waiting(), 0u);
  store.handle("w1", request("get", 10, {"gen/5/q"}));
  store.set_generation_prefix("gen/6/");
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.waiting(), 0u);
}

// A request names a bounded number of keys, and a reply holds bounded bytes: a multi_get naming
// one 64 KiB key 5,000 times made the coordinator build and send a 437 MB reply.
TEST(RendezvousStore, AReplyAndTheKeysOfARequestAreBounded) {
  RendezvousStore::Limits limits;
  limits.max_keys_per_request = 3;
  limits.max_reply_bytes = 20;
  RendezvousStore store(limits);
  store.set_generation_prefix("gen/0/");
  ASSERT_FALSE(
      store.handle("w0", request("set", 1, {"gen/0/a"}, {std::string(8, 'x')}))->contains("error"));
  const auto two = store.handle("w0", request("multi_get", 2, {"gen/0/a", "gen/0/a"}));
  ASSERT_TRUE(two.has_value());
  EXPECT_FALSE(two->contains("error")) << *two;
  const auto three = store.handle("w0", request("multi_get", 3, {"gen/0/a", "gen/0/a", "gen/0/a"}));
  ASSERT_TRUE(three.has_value());
  EXPECT_NE(three->value("error", "").find("would exceed 20 bytes"), std::string::npos) << *three;
  EXPECT_FALSE(three->contains("values"));
  const auto four =
      store.handle("w0", request("multi_get", 4, {"gen/0/a", "gen/0/a", "gen/0/a", "gen/0/a"}));
  ASSERT_TRUE(four.has_value());
  EXPECT_NE(four->value("error", "").find("naming 4 keys; accepted: up to 3"), std::string::npos)
      << *four;
}

TEST(WorkerEnvironment, FlagsWinThenTransientThenMasterVariables) {
  std::map<std::string, std::string> env;
  auto getenv = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  WorkerOptions none;
  EXPECT_THROW(resolve_worker_environment(none, getenv), InputError);
  env["MASTER_ADDR"] = "10.1.2.3";
  WorkerOptions no_port;
  EXPECT_THROW(resolve_worker_environment(no_port, getenv), InputError);
  env["MASTER_PORT"] = "29400";
  env["TRANSIENT_TOKEN"] = "t0k3n";
  env["GLOO_SOCKET_IFNAME"] = "eth1";
  WorkerOptions master;
  resolve_worker_environment(master, getenv);
  EXPECT_EQ(master.coordinator, "10.1.2.3:29400");
  EXPECT_EQ(master.token, "t0k3n");
  EXPECT_EQ(master.interface, "eth1");
  env["MASTER_ADDR"] = "fd00::7";
  WorkerOptions v6;
  resolve_worker_environment(v6, getenv);
  EXPECT_EQ(v6.coordinator, "[fd00::7]:29400");
  env["TRANSIENT_COORDINATOR"] = "c.example:1";
  WorkerOptions named;
  named.token_file = "/job/token";
  named.advertise = "10.0.0.9";
  resolve_worker_environment(named, getenv);
  EXPECT_EQ(named.coordinator, "c.example:1");
  EXPECT_EQ(named.token, "");      // a token file was given
  EXPECT_EQ(named.interface, "");  // an address was given
  WorkerOptions given;
  given.coordinator = "127.0.0.1:5";
  resolve_worker_environment(given, getenv);
  EXPECT_EQ(given.coordinator, "127.0.0.1:5");
  // A variable that says no HOST:PORT is named, not a --coordinator nobody gave.
  const auto refusal = [&]() -> std::string {
    WorkerOptions options;
    try {
      resolve_worker_environment(options, getenv);
    } catch (const InputError& error) {
      return error.what();
    }
    return "accepted";
  };
  env["TRANSIENT_COORDINATOR"] = "foo";
  EXPECT_EQ(refusal(),
            "TRANSIENT_COORDINATOR: \"foo\" is not HOST:PORT (e.g. 10.0.0.5:29400, "
            "[fd00::5]:29400)");
  env.erase("TRANSIENT_COORDINATOR");
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = "abc";
  EXPECT_EQ(refusal(),
            "MASTER_ADDR:MASTER_PORT: \"127.0.0.1:abc\" is not HOST:PORT (e.g. 10.0.0.5:29400, "
            "[fd00::5]:29400)");
}

}  // namespace
}  // namespace transient::train
