// The asynchronous front end's cost against the blocking one, per batch of empty tasks on
// n = 2 workers: scheduler.run() against async_run() completing a callback on an io_context run
// by the caller (the same engine underneath; the difference is the operation's allocation,
// Asio's post, and the caller's sleep in io_context::run() until the worker wakes it), and
// async_run() with a caller that polls the io_context instead (docs/runtime.md: the sleep and
// wake-up are most of the cost at B = 1). Compare the rows of one batch size side by side:
//   ./build/bench/ata_bench_async --benchmark_min_time=0.3
#include <benchmark/benchmark.h>

#include <utility>  // before Asio (g++ 12)

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <exception>
#include <thread>

#include "ata/ata.hpp"
#include "ata/runtime/async_run.hpp"

namespace {

constexpr std::size_t kWorkers = 2;

const auto kEmpty = [](const ata::runtime::TaskContext&) {};

void BM_Run(benchmark::State& state) {
  const auto batch = static_cast<std::size_t>(state.range(0));
  ata::runtime::WorkerPool pool(kWorkers);
  ata::UniformPolicy policy(kWorkers);
  ata::runtime::BatchScheduler scheduler(pool, policy);
  for (auto _ : state) benchmark::DoNotOptimize(scheduler.run(batch, kEmpty).report.round);
}

void BM_AsyncRun(benchmark::State& state) {
  const auto batch = static_cast<std::size_t>(state.range(0));
  ata::runtime::WorkerPool pool(kWorkers);
  ata::UniformPolicy policy(kWorkers);
  ata::runtime::BatchScheduler scheduler(pool, policy);
  boost::asio::io_context io;
  for (auto _ : state) {
    std::size_t round = 0;
    ata::runtime::async_run(
        scheduler, batch, kEmpty,
        boost::asio::bind_executor(io, [&](std::exception_ptr, ata::runtime::BatchResult<void> r) {
          round = r.report.round;
        }));
    io.run();
    io.restart();
    benchmark::DoNotOptimize(round);
  }
}

// As BM_AsyncRun, but the caller polls the io_context until the handler has run, yielding
// between polls, as run() polls for the pool's idle spin (50 us) before it sleeps: what is left
// of the difference is the operation itself, without the caller's sleep and wake-up.
void BM_AsyncRunPolling(benchmark::State& state) {
  const auto batch = static_cast<std::size_t>(state.range(0));
  ata::runtime::WorkerPool pool(kWorkers);
  ata::UniformPolicy policy(kWorkers);
  ata::runtime::BatchScheduler scheduler(pool, policy);
  boost::asio::io_context io;
  for (auto _ : state) {
    std::size_t round = 0;
    ata::runtime::async_run(
        scheduler, batch, kEmpty,
        boost::asio::bind_executor(io, [&](std::exception_ptr, ata::runtime::BatchResult<void> r) {
          round = r.report.round;
        }));
    while (round == 0) {
      io.poll();
      std::this_thread::yield();  // as run()'s polling: the workers may need this core
    }
    io.restart();
    benchmark::DoNotOptimize(round);
  }
}

}  // namespace

BENCHMARK(BM_Run)->Arg(1)->Arg(16)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AsyncRun)->Arg(1)->Arg(16)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AsyncRunPolling)->Arg(1)->Arg(16)->Arg(256)->Unit(benchmark::kMicrosecond);
