#pragma once
/// @file
/// Ringmaster ASGD in virtual time: a stream of tasks, each started from the model version of
/// its start, applied at once when fresh, discarded (or stopped) when its delay reaches R.

#include <cstddef>
#include <cstdint>
#include <queue>
#include <span>
#include <string_view>
#include <vector>

#include "ata/core/ringmaster_workers.hpp"
#include "ata/models/random.hpp"
#include "ata/models/scenario.hpp"

namespace ata::sim {

// The selections and their names are the engine-independent part (ata/core/ringmaster_workers.hpp),
// shared with the threads' stream.
using ata::stream_selection;
using ata::stream_strategy_names;
using ata::StreamSelection;

struct StreamOptions {
  std::size_t threshold = 0;  ///< R >= 1: a gradient of delay >= R is never applied
  /// Rule 4: a task whose delay reaches R is stopped at once (its time censored) and its
  /// worker restarted, rather than left to finish and be discarded.
  bool stops = true;
  StreamSelection selection = StreamSelection::all;
  std::uint64_t seed = 1;  ///< worker i draws its times from Rng(seed, i), as in Simulation
  /// A scenario change of round r applies to the tasks started from version
  /// (r - 1) x gradients_per_round on: after as many gradients as r - 1 rounds average (the
  /// experiments set the batch B, so that rounds and streams change after the same count).
  std::size_t gradients_per_round = 1;
  RingmasterSelection::Options learning;  ///< for StreamSelection::learned
};

/// What the stream does with the gradients. start(w) is called when worker w starts a task,
/// at the current point x^k (the consumer computes or reserves w's gradient there); apply(w)
/// when that gradient is applied: x^{k+1} = x^k - gamma g_w. A discarded or stopped task
/// gets no call.
class GradientConsumer {
 public:
  virtual ~GradientConsumer() = default;
  virtual void start(std::size_t worker) = 0;
  virtual void apply(std::size_t worker) = 0;
};

/// What became of one task.
enum class StreamOutcome : std::uint8_t { applied, discarded, stopped };

/// One finished or stopped task (RingmasterStream::set_records()).
struct StreamTask {
  std::size_t worker = 0;
  std::size_t start_version = 0;  ///< k of the point x^k it started from
  std::size_t delay = 0;          ///< updates applied while it ran (at its end or stop)
  double start = 0.0;
  double end = 0.0;  ///< its completion, or its stop
  StreamOutcome outcome = StreamOutcome::applied;
};

/// The event stream of Ringmaster ASGD (Maranjyan, Tyurin, Richtarik, ICML 2025) on a simulated
/// cluster:
/// 1. every selected idle worker starts a task from the current version k;
/// 2. the next completion (ties: lower worker) has delay delta = k - its start version: if
///    delta < R it is applied (k becomes k + 1), else discarded;
/// 3. with stops, after each applied update every task of delay R is stopped;
/// 4. the selection is asked again, and step 1 follows.
/// A scenario change of round r applies to the tasks started from version
/// (r - 1) x StreamOptions::gradients_per_round on; the oracle re-selects then. With a learned selection, every task's duration is observed: complete,
/// or censored at its stop.
///
/// @code
/// ata::sim::RingmasterStream stream(scenario, {.threshold = 16}, consumer);
/// while (stream.applied() < 1000) stream.advance();
/// double busy = stream.worker_time();   // includes the tasks still running
/// @endcode
///
/// Reproducible: the same scenario, options and consumer calls give the same events. Not
/// thread-safe.
class RingmasterStream {
 public:
  /// Starts the first tasks. Throws ata::InvalidArgument for threshold 0, gradients_per_round 0
  /// (and bad learning options). The scenario is copied; the consumer must outlive the stream.
  RingmasterStream(const models::Scenario& scenario, const StreamOptions& options,
                   GradientConsumer& consumer);

  /// Processes the next completion and returns its outcome.
  StreamOutcome advance();

  [[nodiscard]] double time() const noexcept { return time_; }
  [[nodiscard]] std::size_t version() const noexcept { return version_; }
  [[nodiscard]] std::size_t applied() const noexcept { return version_; }
  [[nodiscard]] std::size_t discarded() const noexcept { return discarded_; }
  [[nodiscard]] std::size_t stopped() const noexcept { return stopped_; }
  /// Busy worker time up to time(): finished, discarded and stopped tasks, and the elapsed part
  /// of those still running.
  [[nodiscard]] double worker_time() const noexcept;
  /// Whether worker w runs a task now.
  [[nodiscard]] bool busy(std::size_t worker) const;
  /// The learned selection (StreamSelection::learned), else null.
  [[nodiscard]] const RingmasterSelection* learned() const noexcept { return workers_.learned(); }

  /// Keep every finished and stopped task (off by default).
  void set_records(bool on) noexcept { keep_records_ = on; }
  [[nodiscard]] std::span<const StreamTask> records() const noexcept { return records_; }

 private:
  struct Running {
    bool busy = false;
    std::size_t serial = 0;  // tells a stale heap or stop entry from the current task
    std::size_t start_version = 0;
    double start = 0.0;
    double duration = 0.0;
  };
  struct Completion {
    double end;
    std::size_t worker;
    std::size_t serial;
    bool operator>(const Completion& o) const noexcept {
      return end != o.end ? end > o.end : worker > o.worker;
    }
  };
  struct Started {
    std::size_t version;
    std::size_t worker;
    std::size_t serial;
  };

  void start(std::size_t worker);
  void keep_busy();
  void apply_changes();
  void finish(std::size_t worker, double end, StreamOutcome outcome);
  void stop_stale();
  void reselect_oracle();

  std::vector<models::WorkerChange> changes_;  // the scenario's, by round
  StreamOptions options_;
  GradientConsumer& consumer_;
  std::vector<models::TimeModel> models_;
  std::vector<models::Rng> rngs_;
  std::vector<Running> running_;
  std::priority_queue<Completion, std::vector<Completion>, std::greater<>> completions_;
  std::queue<Started> by_start_;  // in start order, so by start version
  std::size_t next_change_ = 0;
  RingmasterWorkers workers_;  // which workers are kept busy
  double time_ = 0.0;
  std::size_t version_ = 0;
  std::size_t discarded_ = 0;
  std::size_t stopped_ = 0;
  double done_work_ = 0.0;  // finished and stopped tasks
  bool keep_records_ = false;
  std::vector<StreamTask> records_;
};

}  // namespace ata::sim
