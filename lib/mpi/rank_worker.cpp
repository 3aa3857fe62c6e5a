// A worker rank: serves the root's shares until its shutdown.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <list>
#include <optional>
#include <thread>

#include "ata/core/error.hpp"
#include "ata/core/plan.hpp"
#include "ata/models/random.hpp"
#include "ata/mpi/rank_scheduler.hpp"
#include "doorbell.hpp"
#include "wire.hpp"

namespace ata::mpi {

namespace {

using Clock = std::chrono::steady_clock;

// An idle worker polls this many times, then sleeps between polls: an eighth of the time it
// has been idle, within these bounds (a rank idle for long answers its next share at most the
// longest sleep late, and costs the machine few wake-ups meanwhile).
constexpr std::size_t kHotPolls = 200;
constexpr auto kShortestSleep = std::chrono::microseconds(50);
constexpr auto kLongestSleep = std::chrono::microseconds(250);

Clock::duration idle_sleep(Clock::duration idle) {
  return std::clamp<Clock::duration>(idle / 8, kShortestSleep, kLongestSleep);
}

bool message_waiting(MPI_Comm comm) {
  int flag = 0;
  MPI_Iprobe(0, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

enum class Delayed { done, stopped, past_budget };

// The slowdown's delay, `length` from the task's start: the task lasts its draw, as in the
// simulator, whatever part of it the task's own run took. It ends early at the task's
// restart budget, and when `interrupted` (if set) says the task's result is no longer wanted.
Delayed delay(const runtime::Slowdown& slowdown, Clock::time_point start,
              std::chrono::nanoseconds length, const std::function<bool()>& interrupted,
              Clock::time_point budget_end) {
  const auto end = start + length;
  length = std::chrono::duration_cast<std::chrono::nanoseconds>(end - Clock::now());
  if (length <= std::chrono::nanoseconds{0}) return Delayed::done;
  const bool burn = slowdown.kind() == runtime::Slowdown::Kind::burn;
  if (!interrupted && !burn && budget_end >= end) {
    std::this_thread::sleep_for(length);
    return Delayed::done;
  }
  constexpr auto kSlice = std::chrono::milliseconds(1);
  for (auto now = Clock::now(); now < end; now = Clock::now()) {
    if (now >= budget_end) return Delayed::past_budget;
    if (interrupted && interrupted()) return Delayed::stopped;
    if (!burn) {
      std::this_thread::sleep_for(std::min<Clock::duration>({kSlice, end - now, budget_end - now}));
    }
  }
  return Delayed::done;
}

struct Work {
  std::uint64_t round = 0;  // the policy's: tasks and slowdowns draw by it
  std::uint64_t batch = 0;  // echoed in every answer (the root's batch id)
  bool greedy = false;      // a fungible race's samples, each answered as it ends
  bool each = false;        // a hedged share: each task answered as it ends, or withdrawn
  // Greedy: 0, the samples are `numbers` (a quota's); else the last of `numbers` is the race's
  // first, and the race's numbers advance by `stride` (the worker count).
  std::uint64_t stride = 0;
  // A task that has run this long is stopped and a fresh one started.
  std::optional<std::chrono::nanoseconds> restart_after;
  // The plan has retries: a failing task is reported and the rest run on; else the first
  // failure ends the work.
  bool keep_going = false;
  std::string task;
  std::vector<std::uint64_t> numbers;  // allocated: the share
  std::span<const std::byte> input;

  // Greedy: the number of sample k (counting only samples that were not restarted), or none
  // when the quota is run and the rank does not race.
  [[nodiscard]] std::optional<std::uint64_t> sample_number(std::size_t k) const {
    const std::size_t quota = stride > 0 ? numbers.size() - 1 : numbers.size();
    if (k < quota) return numbers[k];
    if (stride == 0) return std::nullopt;
    return numbers.back() + (k - quota) * stride;
  }
};

// The sample's budget after `restarted_in_row` restarts in a row (ata::backed_off_budget).
std::optional<std::chrono::nanoseconds> budget_of(const Work& w, std::size_t restarted_in_row) {
  if (!w.restart_after) return std::nullopt;
  const double ns = backed_off_budget(static_cast<double>(w.restart_after->count()),
                                      restarted_in_row);
  if (!(ns < 1e18)) return std::nullopt;  // backed off past any task: none
  return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
}

class Worker {
 public:
  Worker(MPI_Comm comm, const TaskRegistry& tasks, const runtime::LaneOptions& options,
         std::size_t index)
      : comm_(comm),
        tasks_(tasks),
        slowdown_(options.slowdown(index)),
        rng_(options.seed(), index) {}

  enum class Ran { sent, dropped, restarted };

  // One task with its slowdown, its result written to `out`, or, past `budget` (restarted), a
  // kRestarted message sent with its number and running time; dropped when a greedy round was
  // stopped meanwhile, or the task was withdrawn from a hedged share (its result is then
  // dropped; a withdrawn task's time is sent as kWithdrawn).
  Ran run_one(const Work& w, const TaskFunction& f, std::uint64_t number, wire::Writer& out,
              std::optional<std::chrono::nanoseconds> budget) {
    const auto start = Clock::now();
    const auto budget_end = budget ? start + *budget : Clock::time_point::max();
    TaskInput in{w.round, number, w.input, {}};
    std::function<bool()> interrupted;
    if (w.greedy) {
      interrupted = [this] { return message_waiting(comm_); };
    } else if (w.each) {
      interrupted = [this, &w, number] { return withdrawn(w.batch, number); };
    }
    if (interrupted || budget) {
      in.stop = [&interrupted, budget_end] {
        return Clock::now() >= budget_end || (interrupted && interrupted());
      };
    }
    Bytes result;
    for (std::size_t r = 0; r < slowdown_.repetitions(); ++r) result = f(in);
    const Delayed delayed =
        delay(slowdown_, start, slowdown_.draw(w.round, rng_), interrupted, budget_end);
    const auto now = Clock::now();
    const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(now - start);
    // A stopped task's number and running time, under `tag`.
    const auto send_stopped = [&](wire::Tag tag) {
      wire::Writer stopped;
      stopped.u64(w.batch);
      stopped.u64(number);
      stopped.u64(static_cast<std::uint64_t>(took.count()));
      send(stopped, tag);
    };
    if (delayed == Delayed::stopped || (w.each && withdrawn(w.batch, number))) {
      if (w.each) send_stopped(wire::kWithdrawn);
      return Ran::dropped;
    }
    // Past its budget, whatever it ended with is discarded, as on threads.
    if (delayed == Delayed::past_budget || now >= budget_end) {
      send_stopped(wire::kRestarted);
      return Ran::restarted;
    }
    if (in.stop_requested()) return Ran::dropped;  // ended after the round did: surplus
    out.u64(number);
    out.u64(static_cast<std::uint64_t>(took.count()));
    out.bytes(result);
    return Ran::sent;
  }

  // Sends without waiting for rank 0 to receive: a message past the transport's eager limit
  // (4 KB over shared memory) would hold the rank in MPI_Send until rank 0's next poll, idle
  // while it could compute (measured: GTA's rounds with 16 KB gradients took 47 ms instead of
  // 24). At most kMostUnsent wait at once, so that a rank producing faster than rank 0 reads
  // holds bounded memory: past that it waits for its oldest.
  // Each message ends with its sequence number and rings the root's doorbell once sent.
  void send(wire::Writer& out, wire::Tag tag) {
    reap_sends();
    if (outgoing_.size() >= kMostUnsent) {
      MPI_Wait(&outgoing_.front().request, MPI_STATUS_IGNORE);
      outgoing_.pop_front();
    }
    bell_.advance();  // a hello sent now counts the messages before this one
    out.u64(bell_.next_sequence());
    Outgoing& o = outgoing_.emplace_back(Outgoing{std::move(out.buffer()), MPI_REQUEST_NULL});
    MPI_Isend(o.buffer.data(), static_cast<int>(o.buffer.size()), MPI_BYTE, 0, tag, comm_,
              &o.request);
    bell_.ring();
  }

  detail::Bell& bell() noexcept { return bell_; }

  // Forgets the sends rank 0 has received (each test also moves MPI's progress on).
  void reap_sends() {
    for (auto it = outgoing_.begin(); it != outgoing_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? outgoing_.erase(it) : std::next(it);
    }
  }

  // At shutdown: lets the sends still waiting complete for up to kShutdownGrace (rank 0 reads
  // no more once it has shut down), then cancels the rest.
  void finish_sends() {
    const auto until = Clock::now() + kShutdownGrace;
    while (!outgoing_.empty() && Clock::now() < until) {
      reap_sends();
      std::this_thread::yield();
    }
    for (Outgoing& o : outgoing_) {
      MPI_Cancel(&o.request);
      MPI_Request_free(&o.request);
    }
    abandoned_.splice(abandoned_.end(), outgoing_);  // MPI may still read them until finalized
  }

  // Tells the root that task `number` (wire::kNoNumber: none, the task is unknown) failed
  // after `took`.
  void report_failure(const Work& w, std::uint64_t number, std::chrono::nanoseconds took,
                      const std::exception& e) {
    wire::Writer failure;
    failure.u64(w.batch);
    failure.u64(number);
    failure.u64(static_cast<std::uint64_t>(took.count()));
    failure.text("task '" + w.task + "': " + e.what());
    send(failure, wire::kFailure);
  }

  // Runs task `number` until it ends within its budget (a task past it is stopped and run
  // afresh under its number, as in the simulator; the root hears of each stopped attempt at
  // once, kRestarted), or until it fails: then reported, and false.
  template <class Run>
  bool attempt(const Work& w, std::uint64_t number, Run run) {
    const auto start = Clock::now();
    try {
      for (std::size_t restarted_in_row = 0; run(budget_of(w, restarted_in_row)) == Ran::restarted;
           ++restarted_in_row) {
      }
      return true;
    } catch (const std::exception& e) {
      report_failure(w, number,
                     std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start), e);
      return false;
    }
  }

  void serve(const Work& w) {
    const TaskFunction* f = nullptr;
    try {
      f = &tasks_.find(w.task);
    } catch (const std::exception& e) {
      report_failure(w, wire::kNoNumber, std::chrono::nanoseconds{0}, e);
      return;
    }
    if (w.each) {
      // A hedged share: each result goes at once, so that the root sees which task runs here
      // and how long; a task withdrawn before it starts is skipped.
      for (const std::uint64_t number : w.numbers) {
        if (withdrawn(w.batch, number)) continue;
        wire::Writer one;
        one.u64(w.batch);
        Ran ran = Ran::dropped;
        const bool ended = attempt(
            w, number, [&](auto budget) { return ran = run_one(w, *f, number, one, budget); });
        if (!ended && !w.keep_going) return;
        if (ended && ran == Ran::sent) send(one, wire::kResults);
      }
      return;
    }
    if (!w.greedy) {
      wire::Writer out;
      out.u64(w.batch);
      for (const std::uint64_t number : w.numbers) {
        const bool ran =
            attempt(w, number, [&](auto budget) { return run_one(w, *f, number, out, budget); });
        if (!ran && !w.keep_going) return;
      }
      send(out, wire::kResults);
      return;
    }
    // Greedy: one message per result (or restarted sample) until the root sends anything or
    // the samples run out. A failed sample is replaced by the next.
    std::size_t k = 0;
    for (auto number = w.sample_number(k); number && !message_waiting(comm_);
         number = w.sample_number(++k)) {
      wire::Writer one;
      one.u64(w.batch);
      Ran ran = Ran::dropped;
      const bool ended = attempt(
          w, *number, [&](auto budget) { return ran = run_one(w, *f, *number, one, budget); });
      if (!ended) {
        if (!w.keep_going) return;
        continue;
      }
      if (ran == Ran::dropped) break;
      send(one, wire::kResults);
    }
    // Tells the root this rank is alive although its last task was dropped: a slow rank
    // may finish no task in a short greedy round.
    wire::Writer stopped;
    stopped.u64(w.batch);
    send(stopped, wire::kStopped);
  }

 private:
  // Whether the root withdrew task `number` of batch `batch` (kWithdraw): receives the
  // withdrawals waiting, leaving every other message queued. Those of other batches are stale.
  bool withdrawn(std::uint64_t batch, std::uint64_t number) {
    for (;;) {
      int found = 0;
      MPI_Message message;
      MPI_Status status;
      MPI_Improbe(0, wire::kWithdraw, comm_, &found, &message, &status);
      if (!found) break;
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      Bytes buffer(static_cast<std::size_t>(count));
      MPI_Mrecv(buffer.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      wire::Reader in(buffer);
      const std::uint64_t of = in.u64();
      const std::uint64_t task = in.u64();
      if (of != withdrawn_batch_) {
        withdrawn_.clear();
        withdrawn_batch_ = of;
      }
      withdrawn_.push_back(task);
    }
    if (batch != withdrawn_batch_) return false;
    return std::find(withdrawn_.begin(), withdrawn_.end(), number) != withdrawn_.end();
  }

  struct Outgoing {
    Bytes buffer;
    MPI_Request request;
  };
  static constexpr std::size_t kMostUnsent = 64;
  static constexpr auto kShutdownGrace = std::chrono::seconds(1);

  MPI_Comm comm_;
  std::list<Outgoing> outgoing_;   // sent, not yet received by rank 0, oldest first
  std::list<Outgoing> abandoned_;  // cancelled at shutdown
  const TaskRegistry& tasks_;
  const runtime::Slowdown& slowdown_;
  models::Rng rng_;
  // The withdrawn tasks of the last batch that withdrew any (earlier ones' are stale).
  std::uint64_t withdrawn_batch_ = 0;
  std::vector<std::uint64_t> withdrawn_;
  detail::Bell bell_;
};

}  // namespace

bool serve_tasks(MPI_Comm comm, const TaskRegistry& tasks, const runtime::LaneOptions& options) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank == 0) throw InvalidArgument("serve_tasks() runs on worker ranks, not on rank 0");
  if (options.workers() != static_cast<std::size_t>(size - 1)) {
    throw InvalidArgument("the pool options describe " + std::to_string(options.workers()) +
                          " workers, but the communicator has " + std::to_string(size - 1) +
                          " worker ranks");
  }
  Worker worker(comm, tasks, options, static_cast<std::size_t>(rank - 1));
  Bytes buffer;
  for (;;) {
    MPI_Message message;
    MPI_Status status;
    // Open MPI's blocking probe spins on the CPU: with more ranks than cores, idle workers
    // would take the cores of busy ones. Poll, yielding, then sleep between polls (as the
    // thread pool's idle workers do).
    int found = 0;
    const auto idle_since = Clock::now();
    for (std::size_t polls = 0;; ++polls) {
      MPI_Improbe(0, MPI_ANY_TAG, comm, &found, &message, &status);
      if (found) break;
      worker.reap_sends();
      worker.bell().advance();
      if (polls < kHotPolls) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(idle_sleep(Clock::now() - idle_since));
      }
    }
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    buffer.resize(static_cast<std::size_t>(count));
    MPI_Mrecv(buffer.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
    wire::Reader in(buffer);
    if (status.MPI_TAG == wire::kShutdown) {
      worker.finish_sends();
      return in.u64() != 0;
    }
    if (status.MPI_TAG == wire::kPing) {  // the root measures this rank's link
      wire::Writer pong;
      pong.raw_bytes(buffer);
      worker.send(pong, wire::kPong);
      continue;
    }
    if (status.MPI_TAG == wire::kDoorbell) {
      worker.bell().answer(in, static_cast<std::size_t>(rank - 1));
      continue;
    }
    // A stop for a greedy round already over, or a withdrawal for a share already run.
    if (status.MPI_TAG != wire::kWork) continue;
    Work w;
    w.round = in.u64();
    w.batch = in.u64();
    switch (static_cast<wire::Answers>(in.u64())) {
      case wire::Answers::together:
        break;
      case wire::Answers::greedy:
        w.greedy = true;
        break;
      case wire::Answers::each:
        w.each = true;
        break;
      default:
        throw Error("ata::mpi: a share answered in an unknown way");
    }
    w.stride = in.u64();
    if (const std::uint64_t budget = in.u64(); budget != wire::kNoBudget) {
      w.restart_after = std::chrono::nanoseconds(static_cast<std::int64_t>(budget));
    }
    w.keep_going = in.u64() != 0;
    w.task = in.text();
    const std::uint64_t n = in.u64();
    if (n > buffer.size() / sizeof(std::uint64_t)) throw Error("ata::mpi: a malformed share");
    w.numbers.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) w.numbers.push_back(in.u64());
    if (w.greedy && w.stride > 0 && w.numbers.empty()) {
      throw Error("ata::mpi: a race without its first number");
    }
    w.input = in.bytes();
    worker.serve(w);
  }
}

void finish(bool rank_lost, int exit_code) {
  if (!rank_lost) {
    MPI_Finalize();
    return;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(exit_code);
}

}  // namespace ata::mpi
