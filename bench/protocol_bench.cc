// The coordinator <-> worker protocol's bulk messages: a checkpoint travels to the coordinator
// (and back to a worker that fetches it) in chunks of 512 KiB as base64 in JSON lines. Times
// writing and reading one chunk's line as the channel does (to_line, parse_line) against
// nlohmann's serializer and parser on the same line. docs/benchmarks.md, "A checkpoint's chunks
// on the wire".
#include <benchmark/benchmark.h>

#include <cstddef>
#include <string>

#include "transient/train/channel.h"
#include "transient/train/messages.h"
#include "transient/train/rendezvous_store.h"

namespace {

using namespace transient::train;

constexpr std::size_t kChunkBytes = 512 << 10;  // worker_connection.cc's chunk

nlohmann::json chunk_message() {
  std::string bytes(kChunkBytes, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7919) >> 3);
  message::CheckpointPart part;
  part.part = "chunk";
  part.id = 7;
  part.data = encode_store_value(bytes);
  return message::encode(part);
}

void chunk_write_to_line(benchmark::State& state) {
  const auto message = chunk_message();
  for (auto _ : state) benchmark::DoNotOptimize(to_line(message));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kChunkBytes));
}
BENCHMARK(chunk_write_to_line)->Unit(benchmark::kMillisecond);

void chunk_write_dump(benchmark::State& state) {
  const auto message = chunk_message();
  for (auto _ : state) benchmark::DoNotOptimize(message.dump());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kChunkBytes));
}
BENCHMARK(chunk_write_dump)->Unit(benchmark::kMillisecond);

void chunk_read_parse_line(benchmark::State& state) {
  const auto line = chunk_message().dump();
  for (auto _ : state) benchmark::DoNotOptimize(message::parse_line(line));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kChunkBytes));
}
BENCHMARK(chunk_read_parse_line)->Unit(benchmark::kMillisecond);

void chunk_read_json_parse(benchmark::State& state) {
  const auto line = chunk_message().dump();
  for (auto _ : state) benchmark::DoNotOptimize(nlohmann::json::parse(line));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kChunkBytes));
}
BENCHMARK(chunk_read_json_parse)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
