#include "ata/sim/ringmaster_stream.hpp"

#include <algorithm>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata::sim {

RingmasterStream::RingmasterStream(const models::Scenario& scenario, const StreamOptions& options,
                                   GradientConsumer& consumer)
    : changes_(scenario.changes().begin(), scenario.changes().end()),
      options_(options),
      consumer_(consumer),
      models_(scenario.models().begin(), scenario.models().end()),
      running_(scenario.workers()),
      workers_(options.selection, scenario.workers(), options.threshold,
               options.selection == StreamSelection::oracle ? scenario.means() : std::vector<double>{},
               options.learning) {
  if (options.gradients_per_round == 0) {
    throw InvalidArgument("a stream's gradients per round (for scenario changes) must be >= 1, got 0");
  }
  const std::size_t n = scenario.workers();
  rngs_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) rngs_.emplace_back(options.seed, i);
  apply_changes();  // those of round 1
  keep_busy();
}

double RingmasterStream::worker_time() const noexcept {
  double busy = done_work_;
  for (const Running& r : running_) {
    if (r.busy) busy += time_ - r.start;
  }
  return busy;
}

bool RingmasterStream::busy(std::size_t worker) const {
  detail::require_worker_index(worker, running_.size());
  return running_[worker].busy;
}

void RingmasterStream::reselect_oracle() {
  std::vector<double> means(models_.size());
  for (std::size_t i = 0; i < means.size(); ++i) means[i] = models_[i].mean();
  workers_.set_true_means(means);
}

void RingmasterStream::apply_changes() {
  bool changed = false;
  while (next_change_ < changes_.size() &&
         (changes_[next_change_].round - 1) * options_.gradients_per_round <= version_) {
    const models::WorkerChange& c = changes_[next_change_++];
    models_[c.worker] = c.model;
    changed = true;
  }
  if (changed && options_.selection == StreamSelection::oracle) reselect_oracle();
}

void RingmasterStream::start(std::size_t worker) {
  Running& r = running_[worker];
  r.busy = true;
  ++r.serial;
  r.start_version = version_;
  r.start = time_;
  r.duration = models_[worker].sample(rngs_[worker]);
  consumer_.start(worker);
  completions_.push({time_ + r.duration, worker, r.serial});
  if (options_.stops) by_start_.push({version_, worker, r.serial});
}

void RingmasterStream::keep_busy() {
  for (const std::size_t w : workers_.select()) {
    if (!running_[w].busy) start(w);
  }
}

void RingmasterStream::finish(std::size_t worker, double end, StreamOutcome outcome) {
  Running& r = running_[worker];
  r.busy = false;
  const double elapsed = end - r.start;
  done_work_ += elapsed;
  workers_.observe(worker, elapsed, outcome == StreamOutcome::stopped);
  if (keep_records_) {
    records_.push_back({worker, r.start_version, version_ - r.start_version, r.start, end, outcome});
  }
}

void RingmasterStream::stop_stale() {
  while (!by_start_.empty() && by_start_.front().version + options_.threshold <= version_) {
    const Started s = by_start_.front();
    by_start_.pop();
    const Running& r = running_[s.worker];
    if (!r.busy || r.serial != s.serial) continue;  // already finished
    finish(s.worker, time_, StreamOutcome::stopped);
    ++stopped_;
  }
}

StreamOutcome RingmasterStream::advance() {
  // keep_busy() restarts a selected worker at every event, and a selection is never empty.
  if (completions_.empty()) throw Error("Ringmaster stream: no task is running");
  Completion next = completions_.top();
  completions_.pop();
  // A stopped task leaves its completion in the heap: skipped here.
  while (!running_[next.worker].busy || running_[next.worker].serial != next.serial) {
    next = completions_.top();
    completions_.pop();
  }
  time_ = next.end;
  const std::size_t w = next.worker;
  StreamOutcome outcome = StreamOutcome::discarded;
  if (ringmaster_applies(version_ - running_[w].start_version, options_.threshold)) {
    consumer_.apply(w);
    outcome = StreamOutcome::applied;
  }
  // The record's delay is the arrival's: taken before the version moves.
  finish(w, time_, outcome);
  if (outcome == StreamOutcome::applied) {
    ++version_;
    if (options_.stops) stop_stale();
    apply_changes();
  } else {
    ++discarded_;
  }
  keep_busy();
  return outcome;
}

}  // namespace ata::sim
