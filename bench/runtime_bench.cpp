// Scheduler overhead per task for empty tasks on n = 2 threads, side by side with the peers a
// C++ programmer would reach for: tbb::task_group (one run() per task), tbb::parallel_for and
// boost::asio::thread_pool (one post() per task). The "per_task" counter is wall time per task.
//   ./build/bench/ata_bench_runtime --benchmark_min_time=0.5 --benchmark_filter=-IdleSpin
// BM_AtaIdleSpin measures the latency of back-to-back batches against idle polling:
//   ./build/bench/ata_bench_runtime --benchmark_min_time=0.5 --benchmark_filter=IdleSpin
// BM_AtaStream is a TaskStream's cost per task on the same pool, beside the batches':
//   ./build/bench/ata_bench_runtime --benchmark_filter='BM_Ata/allocated_uta/|BM_AtaStream'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <latch>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

// Boost 1.74's Asio uses std::exchange without including <utility> itself (g++ 12).
#include <utility>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_group.h>

#include "ata/ata.hpp"

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

// An observer that keeps every task span and learned mean in buffers allocated up front,
// overwriting the oldest: what a trace recorder costs, without its formatting.
class PreallocatedRecorder final : public ata::runtime::Observer {
 public:
  PreallocatedRecorder() : spans_(kSpans), means_(kMeans) {}

  void on_learned(std::size_t /*round*/,
                  std::span<const ata::WorkerStats> learned) noexcept override {
    for (const ata::WorkerStats& worker : learned) means_[next_mean_++ % kMeans] = worker.mean();
  }
  // The batch's spans in one or two block copies: a ring of kSpans, larger than any batch here.
  void on_batch_end(const ata::runtime::BatchEnd& end) noexcept override {
    if (end.report == nullptr) return;
    const auto& tasks = end.report->tasks;
    const std::size_t at = next_span_ % kSpans;
    const std::size_t head = std::min(tasks.size(), kSpans - at);
    std::copy_n(tasks.begin(), head, spans_.begin() + static_cast<std::ptrdiff_t>(at));
    std::copy(tasks.begin() + static_cast<std::ptrdiff_t>(head), tasks.end(), spans_.begin());
    next_span_ += tasks.size();
  }
  [[nodiscard]] std::size_t spans() const noexcept { return next_span_; }

 private:
  static constexpr std::size_t kSpans = std::size_t{1} << 16;
  static constexpr std::size_t kMeans = std::size_t{1} << 10;
  std::vector<ata::runtime::TaskRecord> spans_;
  std::vector<double> means_;
  std::size_t next_span_ = 0;  // one batch at a time here: no lock needed
  std::size_t next_mean_ = 0;
};

// An observer that keeps every streamed task's record in a ring per worker, allocated up
// front: the stream's hook alone, as PreallocatedRecorder is the batches'. Its calls come
// under the stream's lock, one stream at a time here: no lock of its own. A ring per worker,
// each written by its worker only, so that the records do not move between the cores.
class PreallocatedStreamRecorder final : public ata::runtime::Observer {
 public:
  PreallocatedStreamRecorder() : rings_(kThreads) {}
  void on_stream_task(std::size_t /*stream*/,
                      const ata::runtime::StreamTaskRecord& task) noexcept override {
    Ring& ring = rings_[task.worker];
    ring.records[ring.next++ % kRecords] = task;
  }
  [[nodiscard]] std::size_t records() const noexcept {
    std::size_t total = 0;
    for (const Ring& ring : rings_) total += ring.next;
    return total;
  }

 private:
  static constexpr std::size_t kRecords = std::size_t{1} << 15;
  struct alignas(64) Ring {
    std::vector<ata::runtime::StreamTaskRecord> records =
        std::vector<ata::runtime::StreamTaskRecord>(kRecords);
    std::size_t next = 0;
  };
  std::vector<Ring> rings_;
};

// How a BM_AtaStream row observes its streams.
enum class StreamWatch { none, preallocated, trace_recorder };

// ata's scheduler with the policy `name` on a pool of kThreads workers; the caller only waits,
// or, with `caller_lane`, is the last of the kThreads workers (a CallerLanePool),
// as the caller of tbb::task_group is one of its threads.
// `backups`: nullopt keeps the scheduler's default (SchedulerOptions{}).
void BM_Ata(benchmark::State& state, const std::string& name, bool time_chunks,
            std::optional<ata::BackupMode> backups = ata::BackupMode::off,
            bool task_records = true, bool observed = false, bool caller_lane = false) {
  const std::size_t batch = batch_of(state);
  std::unique_ptr<ata::runtime::Lanes> pool;
  if (caller_lane) {
    pool = std::make_unique<ata::runtime::CallerLanePool>(kThreads - 1);
  } else {
    pool = std::make_unique<ata::runtime::WorkerPool>(kThreads);
  }
  auto policy = ata::make_policy(name, kThreads);
  auto options =
      ata::runtime::SchedulerOptions{}.set_time_chunks(time_chunks).set_task_records(task_records);
  if (backups) options.set_backups(ata::BackupOptions{}.set_mode(*backups));
  ata::runtime::BatchScheduler scheduler(*pool, *policy, options);
  PreallocatedRecorder recorder;
  if (observed) scheduler.set_observer(&recorder);
  std::atomic<std::size_t> sink = 0;
  for (auto _ : state) {
    scheduler.run(batch, [&](const ata::runtime::TaskContext& ctx) {
      if (ctx.task() == 0) sink.fetch_add(1, std::memory_order_relaxed);
    });
  }
  benchmark::DoNotOptimize(sink.load());
  benchmark::DoNotOptimize(recorder.spans());
  count_tasks(state, batch);
}

// The caller thread plus one TBB worker: kThreads threads run tasks, as in the pool above.
void BM_TbbTaskGroup(benchmark::State& state) {
  const std::size_t batch = batch_of(state);
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, kThreads);
  std::atomic<std::size_t> sink = 0;
  for (auto _ : state) {
    tbb::task_group group;
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

void BM_TbbParallelFor(benchmark::State& state) {
  const std::size_t batch = batch_of(state);
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, kThreads);
  std::atomic<std::size_t> sink = 0;
  for (auto _ : state) {
    tbb::parallel_for(std::size_t{0}, batch, [&sink](std::size_t t) {
      if (t == 0) sink.fetch_add(1, std::memory_order_relaxed);
    });
  }
  benchmark::DoNotOptimize(sink.load());
  count_tasks(state, batch);
}

// kThreads pool threads; the caller posts and waits on a latch, as run() waits for its batch.
void BM_AsioThreadPool(benchmark::State& state) {
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

// A TaskStream on the same pool: empty tasks on both workers, a consumer that accepts and
// advances the version at each delivery and ends the stream at the `tasks`-th. per_task is the
// stream's wall time (start to last delivery, its end's stopped tasks included) per task
// delivered, to compare with BM_Ata's batches. `stale_bound`: with it, each advance scans the
// running tasks for stale ones. `watch`: an observer of the streams, PreallocatedStreamRecorder
// or a TraceRecorder keeping the first and the last stream with its default bound (the last's
// slot is reused, as in a long run).
void BM_AtaStream(benchmark::State& state, std::optional<std::uint64_t> stale_bound,
                  StreamWatch watch = StreamWatch::none) {
  const auto tasks = static_cast<std::size_t>(state.range(0));
  ata::runtime::WorkerPool pool(kThreads);
  ata::runtime::TaskStream stream(pool);
  PreallocatedStreamRecorder preallocated;
  ata::runtime::TraceRecorder recorder(1, 1);
  if (watch == StreamWatch::preallocated) stream.set_observer(&preallocated);
  if (watch == StreamWatch::trace_recorder) stream.set_observer(&recorder);
  ata::runtime::StreamOptions options;
  if (stale_bound) options.set_stale_bound(*stale_bound);
  std::size_t delivered = 0;
  for (auto _ : state) {
    std::size_t seen = 0;
    const auto report = stream.run([](const ata::runtime::StreamContext&) {},
                                   [&](ata::runtime::StreamDelivery<void>& d) {
                                     d.advance();
                                     if (++seen == tasks) d.end_stream();
                                     return ata::runtime::StreamVerdict::accept;
                                   },
                                   options);
    delivered += report.started;
  }
  state.counters["per_task"] = benchmark::Counter(
      static_cast<double>(delivered), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  benchmark::DoNotOptimize(preallocated.records());
}

// Latency of back-to-back batches against how long idle threads poll before sleeping
// (PoolOptions::set_idle_spin), allocated mode.
void BM_AtaIdleSpin(benchmark::State& state) {
  const std::size_t batch = batch_of(state);
  const auto spin = std::chrono::microseconds(state.range(1));
  ata::runtime::WorkerPool pool(ata::runtime::PoolOptions(kThreads).set_idle_spin(spin));
  ata::UniformPolicy policy(kThreads);
  ata::runtime::BatchScheduler scheduler(pool, policy);
  for (auto _ : state) scheduler.run(batch, [](const ata::runtime::TaskContext&) {});
  count_tasks(state, batch);
}

void Batches(benchmark::internal::Benchmark* b) {
  b->ArgName("B")->Arg(2)->Arg(64)->Arg(1024)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// Streams of as many tasks as the batches have, and a long one (its steady state).
void StreamLengths(benchmark::internal::Benchmark* b) {
  b->ArgName("tasks")->Arg(64)->Arg(1024)->Arg(16384)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Ata, allocated_uta, std::string("uta"), false)->Apply(Batches);
// The scheduler's default hedging (backup copies): what allocated_uta costs as users get it.
BENCHMARK_CAPTURE(BM_Ata, allocated_uta_hedged, std::string("uta"), false, std::nullopt)
    ->Apply(Batches);
// The caller as the second worker (one pool thread), without and with the default hedging.
BENCHMARK_CAPTURE(BM_Ata, caller_uta, std::string("uta"), false, ata::BackupMode::off, true,
                  false, true)
    ->Apply(Batches);
BENCHMARK_CAPTURE(BM_Ata, caller_uta_hedged, std::string("uta"), false, std::nullopt, true,
                  false, true)
    ->Apply(Batches);
BENCHMARK_CAPTURE(BM_Ata, allocated_ata_e, std::string("ata-e"), false)->Apply(Batches);
// With an observer keeping every span in a preallocated buffer (Observer; docs/timelines.md).
BENCHMARK_CAPTURE(BM_Ata, allocated_ata_e_observed, std::string("ata-e"), false,
                  ata::BackupMode::off, true, true)
    ->Apply(Batches);
// What tracking costs (SchedulerOptions::set_backups; docs/stragglers.md).
BENCHMARK_CAPTURE(BM_Ata, allocated_uta_copies, std::string("uta"), false, ata::BackupMode::copies)
    ->Apply(Batches);
BENCHMARK_CAPTURE(BM_Ata, allocated_uta_backups, std::string("uta"), false, ata::BackupMode::on)
    ->Apply(Batches);
// One clock read per chunk (SchedulerOptions::set_time_chunks).
BENCHMARK_CAPTURE(BM_Ata, allocated_ata_e_chunks, std::string("ata-e"), true)->Apply(Batches);
// No per-task records in the report (SchedulerOptions::set_task_records(false)).
BENCHMARK_CAPTURE(BM_Ata, allocated_ata_e_norecords, std::string("ata-e"), false,
                  ata::BackupMode::off, false)
    ->Apply(Batches);
BENCHMARK_CAPTURE(BM_Ata, allocated_ata_e_chunks_norecords, std::string("ata-e"), true,
                  ata::BackupMode::off, false)
    ->Apply(Batches);
// Every task's time observed under the policy's lock (needs_every_sample()).
BENCHMARK_CAPTURE(BM_Ata, allocated_ata_auto, std::string("ata-auto"), false)->Apply(Batches);
BENCHMARK_CAPTURE(BM_Ata, pull, std::string("pull"), false)->Apply(Batches);
BENCHMARK_CAPTURE(BM_AtaStream, stream, std::nullopt)->Apply(StreamLengths);
// Observed: a record per task into preallocated rings, and the trace recorder (Observer;
// docs/timelines.md).
BENCHMARK_CAPTURE(BM_AtaStream, stream_observed, std::nullopt, StreamWatch::preallocated)
    ->Apply(StreamLengths);
BENCHMARK_CAPTURE(BM_AtaStream, stream_traced, std::nullopt, StreamWatch::trace_recorder)
    ->Apply(StreamLengths);
BENCHMARK_CAPTURE(BM_AtaStream, stream_stale_bound, std::uint64_t{2})
    ->ArgName("tasks")
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TbbTaskGroup)->Apply(Batches);
BENCHMARK(BM_TbbParallelFor)->Apply(Batches);
BENCHMARK(BM_AsioThreadPool)->Apply(Batches);
BENCHMARK(BM_AtaIdleSpin)
    ->ArgNames({"B", "spin_us"})
    ->ArgsProduct({{2, 64}, {0, 5, 20, 50, 200}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
