// Cost per task of each kind of lanes against its native peer, empty tasks, 2 threads each,
// measured side by side in one run (the "per_task" counter is wall time per task):
// - AsioLanes, 2 lanes on a boost::asio::thread_pool(2), vs posting the B handlers to the same
//   kind of pool and waiting on a latch;
// - ArenaLanes, 2 arenas of concurrency 1, vs a tbb::task_group run in a task_arena(2);
// - WorkerPool(2) vs a tbb::task_group with 2 threads (as bench/runtime_bench.cpp).
// The lanes run allocated batches (UTA): the caller waits while the lanes run B/2 tasks each.
// The floor of the posted kinds is their hand-over itself: BM_AsioPostChunks and
// BM_ArenaEnqueueChunks post one handler per lane running B/2 tasks in a row, without ata.
//   ./build/bench/ata_bench_lanes --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstddef>
#include <latch>
#include <memory>
#include <vector>

#include <utility>  // before Asio (g++ 12)
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include "ata/ata.hpp"
#include "ata/runtime/arena_lanes.hpp"
#include "ata/runtime/asio_lanes.hpp"

namespace {

constexpr std::size_t kThreads = 2;

void count_tasks(benchmark::State& state, std::size_t batch) {
  state.counters["per_task"] =
      benchmark::Counter(static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}

std::size_t batch_of(const benchmark::State& state) {
  return static_cast<std::size_t>(state.range(0));
}

// Batches of empty tasks on `lanes`, the caller waiting for each.
void run_batches(benchmark::State& state, ata::runtime::Lanes& lanes) {
  const std::size_t batch = batch_of(state);
  ata::UniformPolicy policy(lanes.size());
  ata::runtime::BatchScheduler scheduler(lanes, policy);
  std::atomic<std::size_t> sink = 0;
  for (auto _ : state) {
    scheduler.run(batch, [&](const ata::runtime::TaskContext& ctx) {
      if (ctx.task() == 0) sink.fetch_add(1, std::memory_order_relaxed);
    });
  }
  benchmark::DoNotOptimize(sink.load());
  count_tasks(state, batch);
}

void BM_AsioLanes(benchmark::State& state) {
  boost::asio::thread_pool pool(kThreads);
  {
    ata::runtime::AsioLanes lanes(
        std::vector<boost::asio::any_io_executor>(kThreads, pool.get_executor()));
    run_batches(state, lanes);
  }
  pool.join();
}

void BM_AsioPost(benchmark::State& state) {
  const std::size_t batch = batch_of(state);
  boost::asio::thread_pool pool(kThreads);
  std::atomic<std::size_t> sink = 0;
  for (auto _ : state) {
    std::latch done(static_cast<std::ptrdiff_t>(batch));
    for (std::size_t t = 0; t < batch; ++t) {
      boost::asio::post(pool, [&done, &sink, t] {
        if (t == 0) sink.fetch_add(1, std::memory_order_relaxed);
        done.count_down();
      });
    }
    done.wait();
  }
  pool.join();
  benchmark::DoNotOptimize(sink.load());
  count_tasks(state, batch);
}

// What a posted lane does per batch, without ata: one handler per lane, B/2 tasks each.
void BM_AsioPostChunks(benchmark::State& state) {
  const std::size_t batch = batch_of(state);
  boost::asio::thread_pool pool(kThreads);
  std::atomic<std::size_t> sink = 0;
  for (auto _ : state) {
    std::latch done(static_cast<std::ptrdiff_t>(kThreads));
    for (std::size_t lane = 0; lane < kThreads; ++lane) {
      boost::asio::post(pool, [&done, &sink, batch, lane] {
        for (std::size_t t = lane; t < batch; t += kThreads) {
          if (t == 0) sink.fetch_add(1, std::memory_order_relaxed);
        }
        done.count_down();
      });
    }
    done.wait();
  }
  pool.join();
  benchmark::DoNotOptimize(sink.load());
  count_tasks(state, batch);
}

void BM_ArenaLanes(benchmark::State& state) {
  std::vector<oneapi::tbb::task_arena::constraints> parts(kThreads);
  for (auto& part : parts) part.set_max_concurrency(1);
  ata::runtime::ArenaLanes lanes(parts);
  run_batches(state, lanes);
}

// The caller joins the arena (its reserved slot) and one TBB worker: kThreads threads.
void BM_ArenaTaskGroup(benchmark::State& state) {
  const std::size_t batch = batch_of(state);
  oneapi::tbb::task_arena arena(static_cast<int>(kThreads));
  std::atomic<std::size_t> sink = 0;
  for (auto _ : state) {
    arena.execute([&] {
      oneapi::tbb::task_group group;
      for (std::size_t t = 0; t < batch; ++t) {
        group.run([&sink, t] {
          if (t == 0) sink.fetch_add(1, std::memory_order_relaxed);
        });
      }
      group.wait();
    });
  }
  benchmark::DoNotOptimize(sink.load());
  count_tasks(state, batch);
}

// What an arena lane does per batch, without ata: one enqueue per arena, B/2 tasks each.
void BM_ArenaEnqueueChunks(benchmark::State& state) {
  const std::size_t batch = batch_of(state);
  oneapi::tbb::global_control threads(oneapi::tbb::global_control::max_allowed_parallelism,
                                      kThreads + 1);
  std::vector<std::unique_ptr<oneapi::tbb::task_arena>> arenas;
  for (std::size_t lane = 0; lane < kThreads; ++lane) {
    arenas.push_back(std::make_unique<oneapi::tbb::task_arena>(1, 0));
  }
  std::atomic<std::size_t> sink = 0;
  for (auto _ : state) {
    std::latch done(static_cast<std::ptrdiff_t>(kThreads));
    for (std::size_t lane = 0; lane < kThreads; ++lane) {
      arenas[lane]->enqueue([&done, &sink, batch, lane] {
        for (std::size_t t = lane; t < batch; t += kThreads) {
          if (t == 0) sink.fetch_add(1, std::memory_order_relaxed);
        }
        done.count_down();
      });
    }
    done.wait();
  }
  benchmark::DoNotOptimize(sink.load());
  count_tasks(state, batch);
}

void BM_WorkerPool(benchmark::State& state) {
  ata::runtime::WorkerPool pool(kThreads);
  run_batches(state, pool);
}

void BM_TaskGroup(benchmark::State& state) {
  const std::size_t batch = batch_of(state);
  oneapi::tbb::global_control threads(oneapi::tbb::global_control::max_allowed_parallelism,
                                      kThreads);
  std::atomic<std::size_t> sink = 0;
  for (auto _ : state) {
    oneapi::tbb::task_group group;
    for (std::size_t t = 0; t < batch; ++t) {
      group.run([&sink, t] {
        if (t == 0) sink.fetch_add(1, std::memory_order_relaxed);
      });
    }
    group.wait();
  }
  benchmark::DoNotOptimize(sink.load());
  count_tasks(state, batch);
}

void Batches(benchmark::internal::Benchmark* b) {
  b->ArgName("B")->Arg(2)->Arg(64)->Arg(1024)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

// Each kind next to its peer.
BENCHMARK(BM_AsioLanes)->Apply(Batches);
BENCHMARK(BM_AsioPost)->Apply(Batches);
BENCHMARK(BM_AsioPostChunks)->Apply(Batches);
BENCHMARK(BM_ArenaLanes)->Apply(Batches);
BENCHMARK(BM_ArenaTaskGroup)->Apply(Batches);
BENCHMARK(BM_ArenaEnqueueChunks)->Apply(Batches);
BENCHMARK(BM_WorkerPool)->Apply(Batches);
BENCHMARK(BM_TaskGroup)->Apply(Batches);
