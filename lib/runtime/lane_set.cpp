#include "runtime/lane_set.hpp"

#include <algorithm>
#include <optional>
#include <stop_token>
#include <utility>

#include "ata/runtime/shutdown_error.hpp"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace ata::runtime::detail {

namespace {

// What the calling thread runs: lets run() and shutdown() refuse to wait for themselves.
thread_local const LaneSet* current_set = nullptr;
thread_local const Lane* current_lane_of_set = nullptr;

}  // namespace

OwnThreadMark::OwnThreadMark(const LaneSet* set, const Lane* lane) noexcept
    : previous_set_(current_set), previous_lane_(current_lane_of_set) {
  current_set = set;
  current_lane_of_set = lane;
}

OwnThreadMark::~OwnThreadMark() {
  current_set = previous_set_;
  current_lane_of_set = previous_lane_;
}

const Lane* OwnThreadMark::current_lane(const LaneSet* set) noexcept {
  return current_set == set ? current_lane_of_set : nullptr;
}

void OwnThreadMark::forget(const LaneSet* set) noexcept {
  if (current_set == set) {
    current_set = nullptr;
    current_lane_of_set = nullptr;
  }
}

TightTimerSlack::TightTimerSlack(const Lane& lane) noexcept {
#ifdef __linux__
  if (lane.slowdown().kind() != Slowdown::Kind::sleep) return;
  const int previous = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
  if (previous > 1 && prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0) previous_ = previous;
#else
  (void)lane;
#endif
}

TightTimerSlack::~TightTimerSlack() {
#ifdef __linux__
  if (previous_ > 0) prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(previous_), 0UL, 0UL, 0UL);
#endif
}

Lane::Lane(std::size_t index, Slowdown slowdown, std::uint64_t run_seed)
    : index_(index), slowdown_(std::move(slowdown)), rng_(run_seed, index) {}

void Lane::pause(Clock::duration delay, const std::stop_token& stop) {
  // A timed wait wakes late, by 17 to 90 us on this project's 2-vCPU machines whatever the
  // timer slack: a fifth of a 100 us delay, which no real worker adds to its task. The lane
  // learns how late its waits wake (a running mean) and wakes that much before the end; and
  // what a wait still overran (or fell short) is taken off the next one, so that the lane's
  // time tracks the sum of its draws even where the lateness has a long tail (51 lanes on 2
  // cores: waits late by more than a delay, which the mean counts as one). Each delay may end
  // early or late by the lateness's spread. At most half a delay is taken off, so none ends
  // before its half, and at most one delay is carried, so that one wait a busy machine delays
  // by milliseconds does not make the next dozen wake early.
  const auto start = Clock::now();
  const auto wake = start + delay - std::clamp(wake_lateness_ + owed_, -delay, delay / 2);
  {
    std::unique_lock lock(pause_mutex_);
    pause_.wait_until(lock, stop, wake, [] { return false; });
  }
  constexpr int kWeight = 8;  // about the last 8 waits
  if (!stop.stop_requested()) {
    const auto now = Clock::now();
    const auto lateness = std::min<Clock::duration>(now - wake, delay);
    wake_lateness_ += (lateness - wake_lateness_) / kWeight;
    owed_ = std::clamp<Clock::duration>(owed_ + (now - start - delay), -delay, delay);
  }
}

LaneSet::LaneSet(const PoolOptions& options, std::string what, bool caller_lane)
    : options_(options),
      caller_lane_(caller_lane),
      what_(std::move(what)),
      abandoned_error_(std::make_exception_ptr(
          ShutdownError(what_ + " is shut down: a lane never ran its share of this batch"))),
      interrupted_error_(std::make_exception_ptr(
          ShutdownError(what_ + " is shut down: this batch was stopped while it ran"))) {}

LaneSet::~LaneSet() = default;

void LaneSet::backlog(std::span<double> out) const noexcept {
  for (std::size_t i = 0; i < out.size() && i < lanes_.size(); ++i) {
    // finished_ first, acquiring the additions that happened before those tasks ran, so that
    // added_ read next is at least as large.
    const std::size_t finished = lanes_[i]->finished_.load(std::memory_order_acquire);
    const std::size_t added = lanes_[i]->added_.load(std::memory_order_relaxed);
    out[i] = added > finished ? static_cast<double>(added - finished) : 0.0;
  }
}

void LaneSet::add_backlog(std::size_t lane, std::size_t tasks) noexcept {
  lanes_[lane]->added_.fetch_add(tasks, std::memory_order_relaxed);
}

void LaneSet::settle_backlog(std::size_t lane, std::size_t tasks) noexcept {
  // Tasks that will never run: withdrawn from what was added, on whatever thread.
  lanes_[lane]->added_.fetch_sub(tasks, std::memory_order_relaxed);
}

std::size_t LaneSet::queued() const {
  std::size_t total = 0;
  for (const auto& lane : lanes_) total += lane->queued_.load(std::memory_order_relaxed);
  return total;
}

std::vector<std::size_t> LaneSet::stuck() const {
  std::vector<std::size_t> out;
  std::optional<Lane::Clock::time_point> now;  // read for a lane in a marked task only
  for (const auto& lane : lanes_) {
    if (lane->stuck_at_.load(std::memory_order_relaxed) == Lane::kNoTask) continue;
    if (!now) now = Lane::Clock::now();
    if (lane->stuck_for(*now) > 0.0) out.push_back(lane->index_);
  }
  return out;
}

bool LaneSet::is_own_thread() const noexcept { return current_set == this; }

void LaneSet::submit(const std::shared_ptr<Chunk>& chunk, std::span<const std::size_t> targets) {
  submit_chosen(chunk, [&] { return targets; });
}

void LaneSet::refuse() const {
  throw ShutdownError(what_ + " is shut down: cannot run a batch on it");
}

void LaneSet::queue_locked(const std::shared_ptr<Chunk>& chunk,
                           std::span<const std::size_t> targets) noexcept {
  for (std::size_t target : targets) {
    Lane& lane = *lanes_[target];
    QueueEntry& entry = chunk->entry(target);
    entry.chunk = chunk;
    {
      std::lock_guard lock(lane.queue_mutex_);
      if (lane.tail_ == nullptr) {
        lane.head_ = &entry;
      } else {
        lane.tail_->next = &entry;
      }
      lane.tail_ = &entry;
      lane.queued_.fetch_add(1, std::memory_order_release);
    }
    wake(lane);
  }
}

Chunk* LaneSet::take_next(Lane& lane) noexcept {
  if (lane.stopping_ || lane.head_ == nullptr) return nullptr;
  QueueEntry* entry = std::exchange(lane.head_, lane.head_->next);
  if (lane.head_ == nullptr) lane.tail_ = nullptr;
  entry->next = nullptr;
  lane.running_ = std::move(entry->chunk);
  lane.queued_.fetch_sub(1, std::memory_order_relaxed);
  return lane.running_.get();
}

bool LaneSet::run_chunk(Lane& lane, Chunk& chunk) noexcept {
  chunk.run(lane);
  std::unique_lock lock(lane.queue_mutex_);
  // May be the chunk's last reference: it dies on return, outside the lock.
  const std::shared_ptr<Chunk> finished = std::move(lane.running_);
  const bool more = lane.head_ != nullptr && !lane.stopping_;
  lock.unlock();
  // A shutdown may be waiting for the running chunk to end.
  lane.queue_changed_.notify_all();
  return more;
}

void LaneSet::abandon_queued(Lane& lane, const std::exception_ptr& reason) noexcept {
  std::unique_lock lock(lane.queue_mutex_);
  QueueEntry* queued = std::exchange(lane.head_, nullptr);
  lane.tail_ = nullptr;
  lane.queued_.store(0, std::memory_order_relaxed);
  lock.unlock();
  // Outside the queue lock: abandoning may complete a batch, waking its waiter.
  while (queued != nullptr) {
    QueueEntry* entry = std::exchange(queued, queued->next);
    entry->next = nullptr;
    // The entry lives in the chunk, which may die with this reference: nothing touches the
    // entry after the move.
    const std::shared_ptr<Chunk> chunk = std::move(entry->chunk);
    chunk->abandon(lane.index_, reason);
  }
}

void LaneSet::stop_lanes() noexcept {
  {
    std::lock_guard order(submit_mutex_);
    shut_down_ = true;
  }
  for (auto& lane : lanes_) {
    std::unique_lock lock(lane->queue_mutex_);
    lane->stopping_ = true;
    const std::shared_ptr<Chunk> running = lane->running_;
    lock.unlock();
    lane->queue_changed_.notify_all();
    // Outside the queue lock: stopping may complete a batch, waking its waiter.
    if (running) running->interrupt(interrupted_error_);
    abandon_queued(*lane, abandoned_error_);
  }
}

}  // namespace ata::runtime::detail
