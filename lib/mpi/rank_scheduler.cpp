#include "ata/mpi/rank_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "ata/core/error.hpp"
#include "wire.hpp"

namespace ata::mpi {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::nanoseconds;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A message on its way to a rank: its buffer lives until MPI says the send is done. A send to
// a stalled or dead rank may never complete; it is dropped unwaited at the end.
struct Outgoing {
  Bytes buffer;
  MPI_Request request = MPI_REQUEST_NULL;
};

// Tasks sent to one rank in this round, still unanswered.
struct Share {
  std::size_t worker = 0;
  std::vector<std::size_t> numbers;
  Clock::time_point deadline;
};

}  // namespace

struct RankScheduler::State {
  MPI_Comm comm = MPI_COMM_NULL;
  Policy* policy = nullptr;
  RankOptions options;
  std::size_t workers = 0;
  std::size_t round = 0;    // the policy's round of the batch running now
  std::size_t batches = 0;  // batches run by this scheduler
  bool shut_down = false;
  runtime::Observer* observer = nullptr;
  Clock::time_point born = Clock::now();
  std::vector<bool> lost;
  std::vector<Clock::time_point> heard;  // the last message from each rank
  std::vector<RankEvent> events;
  std::list<Outgoing> outgoing;
  Bytes inbox;

  void send(std::size_t worker, wire::Tag tag, Bytes buffer) {
    auto& o = outgoing.emplace_back(Outgoing{std::move(buffer), MPI_REQUEST_NULL});
    MPI_Isend(o.buffer.data(), static_cast<int>(o.buffer.size()), MPI_BYTE,
              static_cast<int>(worker + 1), tag, comm, &o.request);
  }

  void reap_sends() {
    for (auto it = outgoing.begin(); it != outgoing.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? outgoing.erase(it) : std::next(it);
    }
  }

  void mark(std::size_t worker, RankEvent::Kind kind, std::vector<RankEvent>& batch_events) {
    lost[worker] = kind == RankEvent::Kind::lost;
    const RankEvent e{kind, worker + 1, round, seconds(Clock::now() - born)};
    events.push_back(e);
    batch_events.push_back(e);
  }

  // Mean task time of `worker` as the policy learned it, else of the ranks it knows, else none.
  std::optional<double> expected_task_seconds(std::size_t worker) const {
    std::lock_guard lock(policy->mutex());
    if (policy->stats(worker).count() > 0) return policy->stats(worker).mean();
    double sum = 0.0;
    std::size_t known = 0;
    for (const auto& s : policy->all_stats()) {
      if (s.count() > 0) {
        sum += s.mean();
        ++known;
      }
    }
    if (known == 0) return std::nullopt;
    return sum / static_cast<double>(known);
  }

  Clock::time_point deadline_for(std::size_t worker, std::size_t tasks) const {
    const auto mean = expected_task_seconds(worker);
    if (!mean) return Clock::now() + options.first_deadline;
    const double s = options.deadline_factor * static_cast<double>(tasks) * *mean;
    return Clock::now() + options.deadline_floor +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  // Gives each of `numbers` to the live rank expected to finish it first, counting the tasks
  // it already has (`load`); returns the numbers per worker. Empty when every rank is lost.
  std::vector<std::vector<std::size_t>> spread(const std::vector<std::size_t>& numbers,
                                               std::vector<std::size_t>& load) const {
    std::vector<std::vector<std::size_t>> out(workers);
    std::vector<double> mean(workers, 1.0);
    bool any_live = false;
    for (std::size_t w = 0; w < workers; ++w) {
      if (!lost[w]) any_live = true;
      if (const auto m = expected_task_seconds(w)) mean[w] = std::max(*m, 1e-12);
    }
    if (!any_live) return {};
    for (const std::size_t number : numbers) {
      std::size_t best = workers;
      for (std::size_t w = 0; w < workers; ++w) {
        if (lost[w]) continue;
        const auto finish = [&](std::size_t v) {
          return static_cast<double>(load[v] + 1) * mean[v];
        };
        if (best == workers || finish(w) < finish(best)) best = w;
      }
      out[best].push_back(number);
      ++load[best];
    }
    return out;
  }

  Bytes work_message(bool greedy, const std::string& task, const std::vector<std::size_t>& numbers,
                     const Bytes& input) const {
    wire::Writer w;
    w.u64(round);
    w.u64(greedy ? 1 : 0);
    w.u64(workers);
    w.text(task);
    w.u64(numbers.size());
    for (const std::size_t n : numbers) w.u64(n);
    w.bytes(input);
    return std::move(w.buffer());
  }

  // The next message from any rank, if one is there.
  std::optional<MPI_Status> poll() {
    int flag = 0;
    MPI_Message message;
    MPI_Status status;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &message, &status);
    if (!flag) return std::nullopt;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    inbox.resize(static_cast<std::size_t>(count));
    MPI_Mrecv(inbox.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
    return status;
  }
};

RankScheduler::RankScheduler(MPI_Comm comm, Policy& policy, RankOptions options) : state_(nullptr) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (rank != 0) {
    throw InvalidArgument("RankScheduler runs on rank 0, not on rank " + std::to_string(rank));
  }
  if (size < 2)
    throw InvalidArgument("RankScheduler needs at least 2 ranks, got " + std::to_string(size));
  if (policy.workers() != static_cast<std::size_t>(size - 1)) {
    throw InvalidArgument("the policy has " + std::to_string(policy.workers()) +
                          " workers, but the communicator has " + std::to_string(size - 1) +
                          " worker ranks");
  }
  if (!(options.deadline_factor > 0.0) || options.deadline_floor < nanoseconds{0} ||
      options.first_deadline <= nanoseconds{0} || options.give_up_after <= nanoseconds{0}) {
    throw InvalidArgument(
        "rank options need deadline_factor > 0, deadline_floor >= 0, "
        "first_deadline > 0 and give_up_after > 0");
  }
  state_ = new State;
  state_->comm = comm;
  state_->policy = &policy;
  state_->options = options;
  state_->workers = static_cast<std::size_t>(size - 1);
  state_->lost.assign(state_->workers, false);
  state_->heard.assign(state_->workers, state_->born);
  for (const std::size_t w : options.lost_workers) {
    if (w >= state_->workers) {
      throw InvalidArgument("lost worker " + std::to_string(w) + " out of range (" +
                            std::to_string(state_->workers) + " workers)");
    }
    state_->lost[w] = true;
  }
}

RankScheduler::~RankScheduler() { delete state_; }

std::size_t RankScheduler::workers() const noexcept { return state_->workers; }

bool RankScheduler::lost(std::size_t worker) const {
  if (worker >= state_->workers) {
    throw InvalidArgument("worker " + std::to_string(worker) + " out of range (" +
                          std::to_string(state_->workers) + " workers)");
  }
  return state_->lost[worker];
}

const std::vector<RankEvent>& RankScheduler::events() const noexcept { return state_->events; }

void RankScheduler::set_observer(runtime::Observer* observer) noexcept {
  state_->observer = observer;
}

RankBatch RankScheduler::run(std::size_t batch, const std::string& task, const Bytes& input) {
  State& s = *state_;
  if (batch == 0) throw InvalidArgument("batch size B must be >= 1, got 0");
  if (s.shut_down) throw InvalidArgument("RankScheduler::run() after shutdown()");
  const auto start = Clock::now();
  const std::size_t n = s.workers;
  Plan plan;
  {
    std::lock_guard lock(s.policy->mutex());
    s.policy->plan(batch, plan);
    s.round = s.policy->round();
  }
  ++s.batches;
  plan.check(batch, n, s.policy->name());
  const bool greedy = plan.dispatch() == Dispatch::greedy;
  const bool indexed = !plan.racers().empty() && plan.race_kind() == RaceKind::indexed;
  std::string refused;
  if (plan.dispatch() == Dispatch::mixed && !indexed) refused = "quotas and a fungible race";
  if (plan.backups()) refused = "backups of its own";
  if (plan.retries()) refused = "retries";
  if (plan.has_restarts()) refused = "restart budgets";
  if (!refused.empty()) {
    throw Error("policy '" + std::string(s.policy->name()) + "' planned " + refused +
                ", which the rank back-end does not run");
  }
  if (s.observer != nullptr) s.observer->on_batch_start({s.round, batch, plan, start});
  // Every start is followed by one end: failed, unless the batch returns.
  struct FailedEnd {
    runtime::Observer* observer;
    runtime::BatchEnd end;
    ~FailedEnd() {
      if (observer != nullptr) observer->on_batch_end(end);
    }
  } failed_end{s.observer, {s.round, batch, runtime::BatchOutcome::failed, nullptr}};

  RankBatch out;
  auto& report = out.report;
  report.dispatch = plan.dispatch();
  report.allocation = Allocation(n);
  report.busy.assign(n, nanoseconds{0});
  out.results.resize(batch);
  std::vector<bool> done(batch, false);
  std::vector<std::size_t> accepted_on(batch, n);
  std::vector<nanoseconds> accepted_time(batch);
  std::vector<nanoseconds> accepted_start(batch, runtime::TaskRecord::kUnmeasured);
  std::size_t finished = 0;
  std::vector<Share> shares;            // allocated mode: outstanding shares
  std::vector<bool> started(n, false);  // greedy mode: ranks computing this round
  std::vector<Clock::time_point> started_at(n, start);
  // An indexed race's pool is [sum of quotas, B); next_claim is its lowest unstarted index. A
  // racer claims one index at a time, here on the root, so each index is started exactly once
  // and in the order the racers become free.
  std::size_t next_claim = batch;
  const auto claim_if_free = [&](std::size_t w) {
    const bool busy =
        std::any_of(shares.begin(), shares.end(), [&](const Share& sh) { return sh.worker == w; });
    if (next_claim >= batch || s.lost[w] || !plan.is_racer(w) || busy) return;
    s.send(w, wire::kWork, s.work_message(false, task, {next_claim}, input));
    shares.push_back(Share{w, {next_claim}, s.deadline_for(w, 1)});
    ++next_claim;
  };
  const auto any_live_racer = [&] {
    return std::any_of(plan.racers().begin(), plan.racers().end(),
                       [&](std::size_t w) { return !s.lost[w]; });
  };

  if (greedy) {
    // A greedy rank answers at least once per round (a result or its stop), so silence since
    // the last message, across rounds, is what makes it overdue.
    if (s.batches == 1) s.heard.assign(n, start);
    report.round = s.round;
    for (const std::size_t w : plan.racers()) {
      if (s.lost[w]) continue;
      started[w] = true;
      s.send(w, wire::kWork, s.work_message(true, task, {w}, input));
    }
  } else {
    const Allocation& a = plan.quotas();
    report.round = s.round;
    // The shares of lost ranks go to live ones; the others keep the policy's choice.
    std::vector<std::vector<std::size_t>> per(n);
    std::vector<std::size_t> moved;
    std::vector<std::size_t> load(n, 0);
    std::size_t next = 0;
    for (std::size_t w = 0; w < n; ++w) {
      for (std::size_t t = 0; t < a[w]; ++t) (s.lost[w] ? moved : per[w]).push_back(next++);
      if (!s.lost[w]) load[w] = a[w];
    }
    next_claim = next;
    if (indexed && !any_live_racer()) {  // the pool is shared out as lost ranks' quotas are
      while (next_claim < batch) moved.push_back(next_claim++);
    }
    if (!moved.empty()) {
      // Every rank lost: nothing is sent, and the tasks wait below for a rank to answer.
      const auto spread = s.spread(moved, load);
      for (std::size_t w = 0; w < spread.size(); ++w) {
        per[w].insert(per[w].end(), spread[w].begin(), spread[w].end());
      }
    }
    for (std::size_t w = 0; w < n; ++w) {
      if (per[w].empty()) continue;
      s.send(w, wire::kWork, s.work_message(false, task, per[w], input));
      shares.push_back(Share{w, per[w], s.deadline_for(w, per[w].size())});
    }
    // The racers' first claims, in worker order, as the simulator starts them at t = 0.
    for (const std::size_t w : plan.racers()) claim_if_free(w);
  }

  auto last_progress = Clock::now();
  std::size_t idle_polls = 0;
  std::vector<std::size_t> unassigned;  // allocated mode, every rank lost: tasks waiting
  if (!greedy && shares.empty()) {
    for (std::size_t t = 0; t < batch; ++t) unassigned.push_back(t);
  }
  while (finished < batch) {
    if (const auto status = s.poll()) {
      idle_polls = 0;
      last_progress = Clock::now();
      const std::size_t w = static_cast<std::size_t>(status->MPI_SOURCE) - 1;
      s.heard[w] = last_progress;
      wire::Reader in(s.inbox);
      const std::uint64_t round = in.u64();
      if (s.lost[w]) {
        s.mark(w, RankEvent::Kind::back, out.events);
        if (greedy && !started[w] && plan.is_racer(w)) {  // it joins the round
          started[w] = true;
          started_at[w] = Clock::now();
          s.send(w, wire::kWork, s.work_message(true, task, {w}, input));
        }
        if (indexed) claim_if_free(w);
      }
      if (status->MPI_TAG == wire::kStopped) continue;
      if (round != s.round) {
        ++out.late_answers;
        continue;
      }
      if (status->MPI_TAG == wire::kFailure) {
        throw Error("rank " + std::to_string(w + 1) + " failed in round " + std::to_string(round) +
                    ": " + in.text());
      }
      std::vector<std::size_t> answered;
      // Where this answer's tasks go (an accepted slot, or a discarded record) and their times,
      // to place them back to back ending at the arrival (set_observer()).
      std::vector<std::pair<nanoseconds*, nanoseconds>> placed;
      while (!in.at_end()) {
        const std::uint64_t number = in.u64();
        const nanoseconds took{static_cast<nanoseconds::rep>(in.u64())};
        const auto result = in.bytes();
        report.busy[w] += took;
        answered.push_back(number);
        std::size_t slot = greedy ? finished : static_cast<std::size_t>(number);
        const bool accept = greedy ? finished < batch : (slot < batch && !done[slot]);
        if (!accept) {
          report.tasks.push_back({greedy ? batch + report.tasks.size() : slot, w, took, false});
          placed.emplace_back(nullptr, took);
          continue;
        }
        placed.emplace_back(&accepted_start[slot], took);
        done[slot] = true;
        out.results[slot].assign(result.begin(), result.end());
        accepted_on[slot] = w;
        accepted_time[slot] = took;
        report.allocation.add(w);
        ++finished;
      }
      auto end = std::chrono::duration_cast<nanoseconds>(last_progress - start);
      for (std::size_t i = placed.size(), discarded = report.tasks.size(); i-- > 0;) {
        end -= placed[i].second;
        // The discarded records are the last ones pushed, in the answer's order.
        *(placed[i].first != nullptr ? placed[i].first : &report.tasks[--discarded].start) = end;
      }
      // The shares this answer covers are no longer outstanding.
      std::erase_if(shares, [&](const Share& sh) {
        if (sh.worker != w) return false;
        return std::all_of(sh.numbers.begin(), sh.numbers.end(), [&](std::size_t t) {
          return std::find(answered.begin(), answered.end(), t) != answered.end();
        });
      });
      if (indexed) claim_if_free(w);
      continue;
    }
    s.reap_sends();
    const auto now = Clock::now();
    // Overdue shares: their rank is lost until it answers, their open tasks go elsewhere.
    std::vector<std::size_t> overdue_tasks;
    for (auto it = shares.begin(); it != shares.end();) {
      if (now < it->deadline) {
        ++it;
        continue;
      }
      if (!s.lost[it->worker]) s.mark(it->worker, RankEvent::Kind::lost, out.events);
      for (const std::size_t t : it->numbers) {
        if (!done[t]) overdue_tasks.push_back(t);
      }
      it = shares.erase(it);
    }
    if (greedy) {
      for (std::size_t w = 0; w < n; ++w) {
        if (!started[w] || s.lost[w]) continue;
        const auto mean = s.expected_task_seconds(w);
        const auto allowed =
            mean ? s.options.deadline_floor +
                       std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(s.options.deadline_factor * *mean))
                 : Clock::duration(s.options.first_deadline);
        if (now - s.heard[w] > allowed) {
          s.mark(w, RankEvent::Kind::lost, out.events);
        }
      }
    }
    // Every racer lost: the unclaimed pool goes to live ranks like an overdue share.
    if (indexed && next_claim < batch && !any_live_racer()) {
      while (next_claim < batch) overdue_tasks.push_back(next_claim++);
    }
    overdue_tasks.insert(overdue_tasks.end(), unassigned.begin(), unassigned.end());
    unassigned.clear();
    if (!overdue_tasks.empty()) {
      std::vector<std::size_t> load(n, 0);
      for (const auto& sh : shares) load[sh.worker] += sh.numbers.size();
      const auto spread = s.spread(overdue_tasks, load);
      if (spread.empty()) {
        unassigned = std::move(overdue_tasks);
      } else {
        for (std::size_t w = 0; w < n; ++w) {
          if (spread[w].empty()) continue;
          out.backup_tasks += spread[w].size();
          s.send(w, wire::kWork, s.work_message(false, task, spread[w], input));
          shares.push_back(Share{w, spread[w], s.deadline_for(w, load[w])});
        }
      }
    }
    if (now - last_progress > s.options.give_up_after) {
      std::string which;
      for (std::size_t w = 0; w < n; ++w) {
        if (s.lost[w]) which += (which.empty() ? "" : ", ") + std::to_string(w + 1);
      }
      throw Error(
          "no worker rank answered for " +
          std::to_string(
              std::chrono::duration_cast<std::chrono::seconds>(s.options.give_up_after).count()) +
          " s in round " + std::to_string(s.round) +
          " (lost ranks: " + (which.empty() ? "none" : which) + ")");
    }
    // Poll hot for a moment, then sleep briefly: the root must not take a worker's core.
    if (++idle_polls < 200) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  if (greedy) {
    // A greedy rank computes from its start until the stop: its running task's time is spent
    // although its result never comes, so that whole span counts as busy.
    const auto stopped = Clock::now();
    for (std::size_t w = 0; w < n; ++w) {
      if (!started[w] || s.lost[w]) continue;
      report.busy[w] = std::max(report.busy[w],
                                std::chrono::duration_cast<nanoseconds>(stopped - started_at[w]));
      wire::Writer stop;
      stop.u64(s.round);
      s.send(w, wire::kStop, std::move(stop.buffer()));
    }
  }
  for (std::size_t t = 0; t < batch; ++t) {
    report.tasks.push_back({t, accepted_on[t], accepted_time[t], true, accepted_start[t]});
  }
  std::sort(report.tasks.begin(), report.tasks.end(),
            [](const auto& x, const auto& y) { return x.task < y.task; });
  {
    std::lock_guard lock(s.policy->mutex());
    try {
      for (std::size_t t = 0; t < batch; ++t) {
        s.policy->observe(accepted_on[t], std::chrono::duration<double>(accepted_time[t]).count());
      }
    } catch (...) {
      report.learning_error = std::current_exception();
    }
    if (s.observer != nullptr) s.observer->on_learned(s.round, s.policy->all_stats());
  }
  report.wall = std::chrono::duration_cast<nanoseconds>(Clock::now() - start);
  report.start = start;
  failed_end.end.outcome = runtime::BatchOutcome::succeeded;
  failed_end.end.report = &report;
  failed_end.observer = nullptr;  // told here, while `out` is still this function's
  if (s.observer != nullptr) s.observer->on_batch_end(failed_end.end);
  return out;
}

bool RankScheduler::shutdown() {
  State& s = *state_;
  if (s.shut_down) return std::any_of(s.lost.begin(), s.lost.end(), [](bool l) { return l; });
  s.shut_down = true;
  const bool any_lost = std::any_of(s.lost.begin(), s.lost.end(), [](bool l) { return l; });
  for (std::size_t w = 0; w < s.workers; ++w) {
    wire::Writer bye;
    bye.u64(any_lost ? 1 : 0);
    s.send(w, wire::kShutdown, std::move(bye.buffer()));
  }
  // Sends to live ranks complete; a lost rank's may not, and is not waited for.
  const auto until = Clock::now() + std::chrono::seconds(1);
  while (!s.outgoing.empty() && Clock::now() < until) {
    s.reap_sends();
    std::this_thread::yield();
  }
  return any_lost;
}

}  // namespace ata::mpi
