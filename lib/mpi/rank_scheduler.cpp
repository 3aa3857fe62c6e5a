#include "ata/mpi/rank_scheduler.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "ata/core/backup_rule.hpp"
#include "ata/core/error.hpp"
#include "ata/core/late_binding_rule.hpp"
#include "ata/runtime/batch_options.hpp"
#include "doorbell.hpp"
#include "wire.hpp"

namespace ata::mpi {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::nanoseconds;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
Clock::duration span(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// CPU time of the calling thread, user and system.
nanoseconds thread_cpu() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  const auto tv = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  return tv(usage.ru_utime) + tv(usage.ru_stime);
}

// How the root waits for answers without spinning: it sleeps until this share of a share's
// expected time before its expected answer, then halves the time left at each poll, then polls
// sleeping an eighth of the time it has been waiting past the expected answer, within these
// bounds.
constexpr double kEarlyWake = 0.2;
constexpr auto kShortestSleep = std::chrono::microseconds(50);
constexpr auto kLongestBackoff = std::chrono::microseconds(200);
constexpr auto kLongestNap = std::chrono::milliseconds(5);  // deadlines are checked after it
// Waiting on the doorbells, the root still checks the racers' silence this often (their
// allowance is at least RankOptions::deadline_floor) and polls MPI this often, should a
// message ever come without its bell.
constexpr auto kLongestBellWait = std::chrono::milliseconds(20);
constexpr auto kUnrungPoll = std::chrono::milliseconds(100);
constexpr int kProbesForRung = 3;
// In a fungible race the racers compute back to back whatever the root does, and their results
// wait in MPI's queue: only the B-th result's wait costs time. The root sleeps this share of
// the expected time to the result before it (the results still missing but one, over the
// racers' summed rates), so its sleeps shorten as the round nears its end, and it polls for
// the last one as before.
constexpr double kRaceWake = 0.5;

// The weight of a new round-trip sample in the learned round trip.
constexpr double kRoundTripWeight = 0.25;

// A message on its way to a rank: its buffer lives until MPI says the send is done. A send to
// a stalled or dead rank may never complete; it is dropped unwaited at the end.
struct Outgoing {
  Bytes buffer;
  MPI_Request request = MPI_REQUEST_NULL;
};

// A message matched, being received into its buffer.
struct Incoming {
  Bytes buffer;
  MPI_Status status;
  MPI_Request request = MPI_REQUEST_NULL;
};

// Tasks sent to one rank in this round, still unanswered.
struct Share {
  std::size_t worker = 0;
  std::vector<std::size_t> numbers;
  Clock::time_point deadline;
  Clock::time_point sent;
  // When its answer should arrive, from the learned mean and round trip, if they are known.
  std::optional<Clock::time_point> expected;
  // Sent while its rank still had a share: its answer waits behind that one, so its time is
  // no sample of the link.
  bool queued = false;
  // Task time its rank reported so far (answered tasks and restarted attempts): the rest of
  // the time to its last answer is the link's.
  nanoseconds computed{0};
  // A task of it was withdrawn (its rank's time for it is not reported): no round-trip sample.
  bool altered = false;
};

// The last share sent to a rank, so that even its late answer is a round-trip sample.
struct LastShare {
  std::uint64_t batch = 0;  // RankScheduler::State::batch_id
  Clock::time_point sent;
  bool queued = false;
};

// The task times (seconds) an answer of results carries, its batch id already read.
double compute_seconds(wire::Reader& in) {
  double sum = 0.0;
  while (!in.at_end()) {
    (void)in.u64();
    sum += static_cast<double>(in.u64()) * 1e-9;
    (void)in.bytes();
  }
  return sum;
}

}  // namespace

struct RankScheduler::State {
  MPI_Comm comm = MPI_COMM_NULL;
  Policy* policy = nullptr;
  RankOptions options;
  std::size_t workers = 0;
  std::size_t round = 0;    // the policy's round of the batch running now
  // Which batch a message belongs to: unique in the process, so that an answer to an earlier
  // scheduler's batch of the same round (one that failed while ranks still ran its tasks) is
  // late, never taken for this one's.
  std::uint64_t batch_id = 0;
  bool keep_going = false;  // the batch has retries: a rank reports a failing task, runs on
  bool shut_down = false;
  runtime::Observer* observer = nullptr;
  Clock::time_point born = Clock::now();
  std::vector<bool> lost;
  std::vector<bool> slow;                // link too slow for a share (RankEvent::slow_link)
  std::vector<Clock::time_point> heard;  // the last message from each rank
  std::vector<bool> raced;               // the racers of the batch before (greedy mode)
  std::optional<Clock::time_point> ended;  // when the batch before returned
  std::vector<std::optional<double>> round_trip;  // learned, seconds
  std::vector<std::optional<double>> last_round_trip;
  std::vector<std::optional<Clock::time_point>> ping_sent;  // the outstanding ping
  std::vector<std::optional<LastShare>> last_share;
  std::vector<RankEvent> events;
  std::list<Outgoing> outgoing;
  std::list<Incoming> incoming;  // matched, still arriving
  Bytes inbox;
  detail::Doorbells doorbells{0, false};
  Clock::time_point polled;  // the last poll of MPI

  // Whether MPI may hold a message for the root, or needs its progress engine to move one.
  bool mpi_has_work(Clock::time_point now) const {
    return !doorbells.all_connected() || doorbells.any_news() || !incoming.empty() ||
           !outgoing.empty() || now - polled >= kUnrungPoll;
  }

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
    slow[worker] = kind == RankEvent::Kind::slow_link;
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

  double link_seconds(std::size_t worker) const { return round_trip[worker].value_or(0.0); }

  void learn_round_trip(std::size_t worker, double sample) {
    sample = std::max(sample, 0.0);
    last_round_trip[worker] = sample;
    auto& learned = round_trip[worker];
    learned = learned ? (1.0 - kRoundTripWeight) * *learned + kRoundTripWeight * sample : sample;
  }

  // A share of `tasks` on `worker`, sent now: its deadline, and when its answer should come.
  Share share(std::size_t worker, std::vector<std::size_t> numbers, bool queued) {
    Share sh;
    sh.worker = worker;
    sh.sent = Clock::now();
    sh.queued = queued;
    const auto mean = expected_task_seconds(worker);
    if (mean) {
      const double expected = static_cast<double>(numbers.size()) * *mean + link_seconds(worker);
      sh.expected = sh.sent + span(expected);
      sh.deadline = sh.sent + options.deadline_floor + span(options.deadline_factor * expected);
    } else {
      sh.deadline = sh.sent + options.first_deadline;
    }
    sh.numbers = std::move(numbers);
    last_share[worker] = LastShare{batch_id, sh.sent, queued};
    return sh;
  }

  bool usable(std::size_t worker) const { return !lost[worker] && !slow[worker]; }

  // Gives each of `numbers` to the live rank expected to finish it first, counting the tasks
  // it already has (`load`); returns the numbers per worker. Empty when every rank is lost.
  std::vector<std::vector<std::size_t>> spread(const std::vector<std::size_t>& numbers,
                                               std::vector<std::size_t>& load) const {
    std::vector<std::vector<std::size_t>> out(workers);
    std::vector<double> mean(workers, 1.0);
    bool any_live = false;
    bool any_usable = false;
    for (std::size_t w = 0; w < workers; ++w) {
      if (!lost[w]) any_live = true;
      if (usable(w)) any_usable = true;
      if (const auto m = expected_task_seconds(w)) mean[w] = std::max(*m, 1e-12);
    }
    if (!any_live) return {};
    for (const std::size_t number : numbers) {
      std::size_t best = workers;
      for (std::size_t w = 0; w < workers; ++w) {
        // Ranks with slow links only when every live rank has one.
        if (lost[w] || (any_usable && slow[w])) continue;
        const auto finish = [&](std::size_t v) {
          return link_seconds(v) + static_cast<double>(load[v] + 1) * mean[v];
        };
        if (best == workers || finish(w) < finish(best)) best = w;
      }
      out[best].push_back(number);
      ++load[best];
    }
    return out;
  }

  // A share (the tasks `numbers`, answered together or, in a hedged batch, each as it ends), or
  // the samples of a fungible race (wire::Answers::greedy), each answered as it ends: the
  // quota's `numbers`, then, with `race_first`, the race's numbers from it on, a stride of the
  // worker count apart. `restart_after`: each sample's budget in seconds (+infinity: none).
  Bytes work_message(wire::Answers answers, const std::string& task,
                     std::vector<std::size_t> numbers, const Bytes& input,
                     double restart_after = std::numeric_limits<double>::infinity(),
                     std::optional<std::size_t> race_first = std::nullopt) const {
    wire::Writer w;
    w.u64(round);
    w.u64(batch_id);
    w.u64(static_cast<std::uint64_t>(answers));
    // Stride 0: no race after the quota; else the last number is the race's first.
    w.u64(race_first ? workers : 0);
    if (race_first) numbers.push_back(*race_first);
    // Saturated: a budget too long for 64 bits of nanoseconds is none.
    const double ns = restart_after * 1e9;
    w.u64(ns < 1.8e19 ? static_cast<std::uint64_t>(ns) : wire::kNoBudget);
    w.u64(keep_going ? 1 : 0);
    w.text(task);
    w.u64(numbers.size());
    for (const std::size_t n : numbers) w.u64(n);
    w.bytes(input);
    return std::move(w.buffer());
  }

  // A live rank is slow when its last measured round trip alone outlasts the longest share
  // expected of the other ranks with quotas (their tasks times their means, plus their links)
  // by more than the deadline floor, the delay a loaded machine's scheduling may add to any
  // answer: waiting for it would cost more than giving its share to them. It is back once a
  // ping shows its link fast enough again.
  void update_slow_links(const Allocation& quotas, std::vector<RankEvent>& batch_events) {
    // The longest and second longest expected shares: the longest of the others is one of
    // them, for every rank, in O(n).
    std::optional<double> longest;
    std::optional<double> second;
    std::size_t longest_on = workers;
    for (std::size_t v = 0; v < workers; ++v) {
      if (lost[v] || slow[v] || quotas[v] == 0) continue;
      const auto mean = expected_task_seconds(v);
      if (!mean) continue;
      const double expected = static_cast<double>(quotas[v]) * *mean + link_seconds(v);
      if (!longest || expected > *longest) {
        second = longest;
        longest = expected;
        longest_on = v;
      } else if (!second || expected > *second) {
        second = expected;
      }
    }
    for (std::size_t w = 0; w < workers; ++w) {
      if (lost[w] || !last_round_trip[w]) continue;
      const auto longest_other = w == longest_on ? second : longest;
      const bool too_slow =
          longest_other && *last_round_trip[w] > *longest_other + seconds(options.deadline_floor);
      if (too_slow && !slow[w]) mark(w, RankEvent::Kind::slow_link, batch_events);
      if (!too_slow && slow[w]) mark(w, RankEvent::Kind::back, batch_events);
    }
  }

  // A ping to each lost or slow rank without one outstanding, the size of the batch's input so
  // that it crosses a rate-limited link as a share would; an idle rank echoes it at once.
  void send_pings(const Bytes& input, const std::vector<bool>& working) {
    for (std::size_t w = 0; w < workers; ++w) {
      if (usable(w) || working[w] || ping_sent[w]) continue;
      wire::Writer ping;
      ping.u64(batch_id);
      ping.bytes(input);
      ping_sent[w] = Clock::now();
      send(w, wire::kPing, std::move(ping.buffer()));
    }
  }

  // How long the root sleeps before its next poll: until shortly before the earliest answer
  // expected. With several answers expected and `last_decides` (quotas alone: no answer brings
  // its rank more work), only the round's last answer sets when the round ends, and the others
  // wait in MPI's queue meanwhile: until shortly before the latest one, it polls once per
  // kLongestBackoff per answer expected. Then half the time left to the earliest answer, so
  // that an answer on time is seen within a few polls and an early one within half its
  // earliness; past it, a backoff from that point (from the last message, without
  // expectations), with `last_decides` of at most kLongestBackoff per answer still expected.
  // The backoff does not
  // restart at each answer: the answers of a quota batch come close together, and polling each
  // gap afresh from the shortest sleep cost most of the root's CPU per round. A quota answer
  // late by a whole task of the slowest rank (16 ms on `linear`) is common.
  // `race_wait`: in a fungible race, how long the results still missing may wait (kRaceWake).
  Clock::duration idle_sleep(const std::vector<Share>& shares, Clock::time_point now,
                             Clock::time_point last_progress,
                             std::optional<Clock::duration> race_wait, bool last_decides) const {
    std::optional<Clock::time_point> wake;
    std::optional<Clock::time_point> next_answer;
    std::optional<Clock::time_point> last_wake;  // shortly before the latest answer expected
    if (race_wait) wake = now + *race_wait;
    Clock::time_point earliest_deadline = now + kLongestNap;
    int expecting = 0;
    for (const auto& sh : shares) {
      earliest_deadline = std::min(earliest_deadline, sh.deadline);
      if (!sh.expected) continue;
      ++expecting;
      const auto early = *sh.expected - span(kEarlyWake * seconds(*sh.expected - sh.sent));
      wake = wake ? std::min(*wake, early) : early;
      last_wake = last_wake ? std::max(*last_wake, early) : early;
      next_answer = next_answer ? std::min(*next_answer, *sh.expected) : *sh.expected;
    }
    if (wake && *wake > now + kShortestSleep) return std::min(*wake, earliest_deadline) - now;
    // Sleeps longer than kLongestBackoff stop at the earliest deadline (kShortestSleep at least).
    const auto bounded = [&](Clock::duration sleep) {
      return std::min(sleep, std::max<Clock::duration>(earliest_deadline - now, kShortestSleep));
    };
    if (last_decides && expecting > 1 && *last_wake > now + kShortestSleep) {
      return bounded(std::min<Clock::duration>(*last_wake - now, kLongestBackoff * expecting));
    }
    if (next_answer && *next_answer > now + 2 * kShortestSleep) {
      return std::min((*next_answer - now) / 2, earliest_deadline - now);
    }
    const auto since = next_answer ? *next_answer : wake ? *wake : last_progress;
    if (!last_decides || expecting <= 1) {
      return std::clamp<Clock::duration>((now - since) / 8, kShortestSleep, kLongestBackoff);
    }
    return bounded(std::clamp<Clock::duration>((now - since) / 8, kShortestSleep,
                                               kLongestBackoff * expecting));
  }

  // With doorbells: how long the root may wait for a bell, until the earliest deadline of a
  // share (hedging and pacing bound it further).
  Clock::duration deadline_sleep(const std::vector<Share>& shares, Clock::time_point now) const {
    Clock::time_point wake = std::min(now + kLongestBellWait, polled + kUnrungPoll);
    for (const auto& sh : shares) wake = std::min(wake, sh.deadline);
    return std::max<Clock::duration>(wake - now, Clock::duration::zero());
  }

  // The next message received whole from any rank, if there is one. A message is matched as
  // soon as its first part arrives, and received without blocking: a large answer crossing a
  // slow link, or one whose link goes down midway, must not hold the root (a blocking
  // MPI_Mrecv would spin until its last byte, or forever).
  std::optional<MPI_Status> poll() {
    polled = Clock::now();
    // Messages an earlier poll found whole come first: a probe that finds nothing new costs a
    // turn of Open MPI's progress engine, and a race's queued results would pay it each.
    const bool whole_waiting =
        std::any_of(incoming.begin(), incoming.end(),
                    [](const Incoming& in) { return in.request == MPI_REQUEST_NULL; });
    if (whole_waiting) {
      // Not if an older message of its rank still arrives: then the others' are probed for.
      if (auto status = take_complete()) return status;
    }
    for (int probes = 1;; ++probes) {
      int flag = 0;
      MPI_Message message;
      MPI_Status status;
      MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &message, &status);
      // A bell rang for a message not matched yet: over TCP, Open MPI's first probe after its
      // bytes arrive reads them and the next one matches it (measured: 2,012 of 2,100 OFTA
      // answers), so the root probes again rather than sleeping and waking for it.
      if (!flag && probes < kProbesForRung && incoming.empty() && doorbells.any_news()) continue;
      if (!flag) break;
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      auto& in = incoming.emplace_back(Incoming{Bytes(static_cast<std::size_t>(count)), status,
                                                MPI_REQUEST_NULL});
      MPI_Imrecv(in.buffer.data(), count, MPI_BYTE, &message, &in.request);
    }
    return take_complete();
  }

  // The oldest message received whole whose rank has no older one still arriving, moved to
  // `inbox`, if there is one. Every message found whole is marked so (its request
  // MPI_REQUEST_NULL), for the next poll to take without calling MPI.
  std::optional<MPI_Status> take_complete() {
    std::vector<int> arriving;
    auto first = incoming.end();
    for (auto it = incoming.begin(); it != incoming.end(); ++it) {
      const int source = it->status.MPI_SOURCE;
      if (std::find(arriving.begin(), arriving.end(), source) != arriving.end()) continue;
      int done = 1;
      if (it->request != MPI_REQUEST_NULL) MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      if (!done) {
        arriving.push_back(source);
      } else if (first == incoming.end()) {
        first = it;
      }
    }
    if (first == incoming.end()) return std::nullopt;
    inbox = std::move(first->buffer);
    const MPI_Status status = first->status;
    incoming.erase(first);
    // The sender's sequence number ends the message (wire.hpp).
    if (inbox.size() < sizeof(std::uint64_t)) throw Error("ata::mpi: a truncated message");
    std::uint64_t sequence = 0;
    std::memcpy(&sequence, inbox.data() + inbox.size() - sizeof sequence, sizeof sequence);
    inbox.resize(inbox.size() - sizeof sequence);
    doorbells.received(static_cast<std::size_t>(status.MPI_SOURCE - 1), sequence);
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
  [[maybe_unused]] const BackupRule validated(options.backups);  // throws for bad settings
  state_ = new State;
  state_->comm = comm;
  state_->policy = &policy;
  state_->options = options;
  state_->workers = static_cast<std::size_t>(size - 1);
  state_->lost.assign(state_->workers, false);
  state_->slow.assign(state_->workers, false);
  state_->heard.assign(state_->workers, state_->born);
  state_->raced.assign(state_->workers, false);
  state_->round_trip.assign(state_->workers, std::nullopt);
  state_->last_round_trip.assign(state_->workers, std::nullopt);
  state_->ping_sent.assign(state_->workers, std::nullopt);
  state_->last_share.assign(state_->workers, std::nullopt);
  for (const std::size_t w : options.lost_workers) {
    if (w >= state_->workers) {
      throw InvalidArgument("lost worker " + std::to_string(w) + " out of range (" +
                            std::to_string(state_->workers) + " workers)");
    }
    state_->lost[w] = true;
  }
  state_->doorbells = detail::Doorbells(state_->workers, options.doorbells);
  if (state_->doorbells.listening()) {
    for (std::size_t w = 0; w < state_->workers; ++w) {
      state_->send(w, wire::kDoorbell, state_->doorbells.invitation());
    }
  }
}

RankScheduler::~RankScheduler() {
  // A message still arriving (from a lost rank) is written into its buffer whenever the rest
  // of it comes: those buffers live as long as the process.
  static std::mutex abandoned_mutex;
  static std::list<Incoming> abandoned;
  {
    std::lock_guard lock(abandoned_mutex);
    abandoned.splice(abandoned.end(), state_->incoming);
  }
  delete state_;
}

std::size_t RankScheduler::workers() const noexcept { return state_->workers; }

std::size_t RankScheduler::doorbells_connected() const noexcept {
  return state_->doorbells.connected();
}

namespace {
void check_worker(std::size_t worker, std::size_t workers) {
  if (worker >= workers) {
    throw InvalidArgument("worker " + std::to_string(worker) + " out of range (" +
                          std::to_string(workers) + " workers)");
  }
}
}  // namespace

bool RankScheduler::lost(std::size_t worker) const {
  check_worker(worker, state_->workers);
  return state_->lost[worker];
}

bool RankScheduler::slow_link(std::size_t worker) const {
  check_worker(worker, state_->workers);
  return state_->slow[worker];
}

std::optional<double> RankScheduler::round_trip(std::size_t worker) const {
  check_worker(worker, state_->workers);
  return state_->round_trip[worker];
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
  const auto cpu_at_start = thread_cpu();
  const std::size_t n = s.workers;
  Plan plan;
  {
    std::lock_guard lock(s.policy->mutex());
    s.policy->plan(batch, plan);
    s.round = s.policy->round();
    static std::atomic<std::uint64_t> batches{0};
    s.batch_id = ++batches;
  }
  plan.check(batch, n, s.policy->name());
  // Late binding (RankOptions::late_binding): a plan of quotas alone is handed out one task at a
  // time as an indexed race of every rank, paced by ata::reached_by_others. One with backups,
  // retries or restarts of its own runs as planned (it binds on arrival), as on threads.
  const bool own_recovery = plan.backups() || plan.retries().value_or(0) > 0 || plan.has_restarts();
  const bool paced =
      s.options.late_binding && plan.dispatch() == Dispatch::allocated && !own_recovery;
  if (paced) plan = Plan::race(n, RaceKind::indexed);
  // A fungible race (with quotas or without): every sample is answered as it ends, and any B
  // results will do. Quota ranks run their quota's samples, racers race after theirs.
  const bool fungible = !plan.racers().empty() && plan.race_kind() == RaceKind::fungible;
  const bool indexed = !plan.racers().empty() && plan.race_kind() == RaceKind::indexed;
  // The plan's backups, else the scheduler's (RankOptions::backups). They hedge quotas and
  // indexed races; a fungible race needs none, any sample will do, as in the simulator and on
  // threads. (Overdue shares go elsewhere whatever the plan.)
  BackupOptions backup_options = plan.backups().value_or(s.options.backups);
  if (!backup_options.min_overdue) {
    backup_options.min_overdue =
        std::chrono::duration<double>(runtime::SchedulerOptions::kDefaultMinOverdue).count();
  }
  const BackupRule rule(backup_options);
  const bool hedging = rule.options().enabled() && !fungible;
  // Quotas, unhedged and not paced: no answer brings its rank more work, so only the last one
  // sets when the round ends.
  const bool quotas_alone = plan.racers().empty() && !hedging && !paced;
  const wire::Answers answers = hedging ? wire::Answers::each : wire::Answers::together;
  // Each task may fail `retries` times (a fungible race: retries x B failures in all, a failed
  // sample replaced by the next), as on threads.
  const std::size_t retries = plan.retries().value_or(0);
  s.keep_going = retries > 0;
  const std::size_t most = std::numeric_limits<std::size_t>::max();
  const std::size_t failures_allowed = retries > most / batch ? most : retries * batch;
  std::vector<std::size_t> failures_of(fungible ? 0 : batch, 0);
  std::size_t failures = 0;
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
  std::vector<Share> shares;  // allocated mode: outstanding shares, in sending order
  // Hedged: when each rank's running task started, as the root can tell (a share's arrival, or
  // the rank's last answer: it starts its next task as it sends one).
  std::vector<Clock::time_point> running_since(n, start);
  const auto has_share = [&](std::size_t w) {
    return std::any_of(shares.begin(), shares.end(),
                       [&](const Share& sh) { return sh.worker == w; });
  };
  // Sends `numbers` to `w` as a share (`queued`: behind another of its shares) and keeps it.
  const auto send_share = [&](std::size_t w, std::vector<std::size_t> numbers,
                              bool queued) -> Share& {
    if (!has_share(w)) running_since[w] = Clock::now() + span(s.link_seconds(w) / 2);
    s.send(w, wire::kWork, s.work_message(answers, task, numbers, input, plan.restart_after(w)));
    return shares.emplace_back(s.share(w, std::move(numbers), queued));
  };
  std::vector<bool> started(n, false);  // fungible: ranks computing this round
  std::vector<std::size_t> answered_samples(n, 0);  // fungible: results received per rank
  std::vector<Clock::time_point> started_at(n, start);
  // An indexed race's pool is [sum of quotas, B); next_claim is its lowest unstarted index. A
  // racer claims one index at a time, here on the root, so each index is started exactly once
  // and in the order the racers become free.
  std::size_t next_claim = batch;
  // Late binding: the ranks fastest first (unmeasured first: they get measured), and what the
  // rule sees of each (means plus the link's round trip: each task crosses it).
  std::vector<std::size_t> by_speed(n);
  std::vector<PacedWorker> paced_view(n);
  if (paced) {
    std::lock_guard lock(s.policy->mutex());
    for (std::size_t w = 0; w < n; ++w) {
      by_speed[w] = w;
      const auto& stats = s.policy->stats(w);
      paced_view[w].mean = stats.count() > 0 ? stats.mean() + s.link_seconds(w) : 0.0;
    }
    std::stable_sort(by_speed.begin(), by_speed.end(), [&](std::size_t a, std::size_t b) {
      return paced_view[a].mean < paced_view[b].mean;
    });
  }
  // Late binding: each free rank, fastest first, takes the next index unless the busy ranks
  // reach every waiting index before it could end one (then it and the slower ones wait).
  // Returns when to look again while indices wait on a waiting rank: after the fastest waiting
  // rank's mean (at least kLongestBackoff), as a busy rank's task that runs long lets it in.
  const auto pace = [&]() -> std::optional<Clock::duration> {
    const double now = seconds(Clock::now() - s.born);
    for (std::size_t w = 0; w < n; ++w) {
      paced_view[w].busy = has_share(w);
      paced_view[w].started = seconds(running_since[w] - s.born);
    }
    for (const std::size_t w : by_speed) {
      if (next_claim >= batch) return std::nullopt;
      if (!s.usable(w) || paced_view[w].busy) continue;
      const std::size_t waiting = batch - next_claim;
      if (reached_by_others(paced_view, w, now, waiting, 0.0) >= waiting) {
        return std::max<Clock::duration>(span(paced_view[w].mean), kLongestBackoff);
      }
      send_share(w, {next_claim++}, false);
      paced_view[w].busy = true;
      paced_view[w].started = seconds(running_since[w] - s.born);
    }
    return std::nullopt;
  };
  const auto claim_if_free = [&](std::size_t w) {
    if (paced) {
      (void)pace();
      return;
    }
    if (next_claim >= batch || !s.usable(w) || !plan.is_racer(w) || has_share(w)) return;
    send_share(w, {next_claim}, false);
    ++next_claim;
  };
  // A fungible race's results still missing, `missing`, arrive at the racers' summed rates: the
  // root may sleep kRaceWake of the time all but the last take (unknown while a racer has no
  // mean yet).
  const auto race_wait = [&](std::size_t missing) -> std::optional<Clock::duration> {
    if (!fungible || missing < 3) return std::nullopt;
    double rate = 0.0;
    for (std::size_t w = 0; w < n; ++w) {
      if (!started[w] || s.lost[w]) continue;
      const auto mean = s.expected_task_seconds(w);
      if (!mean || !(*mean > 0.0)) return std::nullopt;
      rate += 1.0 / *mean;
    }
    if (!(rate > 0.0)) return std::nullopt;
    return span(kRaceWake * static_cast<double>(missing - 2) / rate);
  };
  const auto any_live_racer = [&] {
    return std::any_of(plan.racers().begin(), plan.racers().end(),
                       [&](std::size_t w) { return s.usable(w); });
  };

  // A fungible race numbers the quotas' samples 0, 1, ... in worker order, as the simulator
  // does, and worker w's k-th race sample (sum of quotas) + w + k * n.
  const std::size_t race_numbers_from = plan.quotas().total();
  if (fungible) {
    // A streaming rank answers at least once per round (a result or its stop), so silence
    // since the last message, across rounds, is what makes it overdue; but only while it
    // computes: from its start if it did not compute in the batch before (it had no share, as
    // when ata-auto switches plans), and not while the caller was between batches. A lost
    // rank's quota is not moved: the race's results replace its samples.
    report.round = s.round;
    std::size_t next = 0;
    for (std::size_t w = 0; w < n; ++w) {
      std::vector<std::size_t> quota(plan.quotas()[w]);
      for (std::size_t& number : quota) number = next++;
      if ((quota.empty() && !plan.is_racer(w)) || s.lost[w]) continue;
      if (!s.raced[w] || !s.ended) {
        s.heard[w] = start;
      } else {
        s.heard[w] = std::min(start, s.heard[w] + (start - *s.ended));
      }
      started[w] = true;
      const auto race_first =
          plan.is_racer(w) ? std::optional(race_numbers_from + w) : std::nullopt;
      s.send(w, wire::kWork,
             s.work_message(wire::Answers::greedy, task, std::move(quota), input,
                            plan.restart_after(w), race_first));
    }
    // A ping would end a racer's round: only the lost ranks get one.
    s.send_pings(input, started);
  } else {
    const Allocation& a = plan.quotas();
    report.round = s.round;
    s.update_slow_links(a, out.events);
    // The shares of lost ranks and of slow links go to the others; the others keep the
    // policy's choice.
    std::vector<std::vector<std::size_t>> per(n);
    std::vector<std::size_t> moved;
    std::vector<std::size_t> load(n, 0);
    std::size_t next = 0;
    for (std::size_t w = 0; w < n; ++w) {
      for (std::size_t t = 0; t < a[w]; ++t) (s.usable(w) ? per[w] : moved).push_back(next++);
      if (s.usable(w)) load[w] = a[w];
    }
    out.moved_tasks = moved.size();
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
      send_share(w, per[w], false);
    }
    // The racers' first claims, in worker order, as the simulator starts them at t = 0.
    for (const std::size_t w : plan.racers()) claim_if_free(w);
    std::vector<bool> working(n, false);
    for (const auto& sh : shares) working[sh.worker] = true;
    s.send_pings(input, working);
  }

  auto last_progress = Clock::now();
  // Copies stopped before their end (at their budget, or withdrawn): censored observations.
  std::vector<std::pair<std::size_t, double>> censored;
  std::vector<std::size_t> unassigned;  // allocated mode, every rank lost: tasks waiting
  if (!fungible && shares.empty()) {
    for (std::size_t t = 0; t < batch; ++t) unassigned.push_back(t);
  }
  // Task `number` failed on `failed`, with a retry left: out of its share there, and sent alone
  // to the usable rank expected to finish it first, another than `failed` if there is one (as
  // the threads retry on another lane).
  const auto retry_elsewhere = [&](std::size_t number, std::size_t failed) {
    for (auto it = shares.begin(); it != shares.end(); ++it) {
      const auto at = std::find(it->numbers.begin(), it->numbers.end(), number);
      if (it->worker != failed || at == it->numbers.end()) continue;
      it->numbers.erase(at);
      it->altered = true;
      if (it->numbers.empty()) shares.erase(it);
      break;
    }
    std::vector<std::size_t> load(n, 0);
    for (const auto& sh : shares) load[sh.worker] += sh.numbers.size();
    const auto finish = [&](std::size_t w) {
      return s.link_seconds(w) +
             static_cast<double>(load[w] + 1) * s.expected_task_seconds(w).value_or(1.0);
    };
    std::size_t best = n;
    for (std::size_t w = 0; w < n; ++w) {
      if (s.usable(w) && w != failed && (best == n || finish(w) < finish(best))) best = w;
    }
    if (best == n && !s.lost[failed]) best = failed;
    if (best == n) {
      unassigned.push_back(number);  // every rank lost: it waits for one, as a share does
      return;
    }
    send_share(best, {number}, load[best] > 0);
    if (indexed) claim_if_free(failed);  // its claim failed: it is free for the next
  };
  // A share's task answered by its rank: out of the share, its time counted. The share's last
  // answer, beyond the task times its rank measured, is a round trip of the link (unless the
  // share waited behind another, or lost a task to a withdrawal).
  const auto answer_share = [&](std::size_t w, std::size_t number, nanoseconds took) {
    for (Share& sh : shares) {
      const auto at = std::find(sh.numbers.begin(), sh.numbers.end(), number);
      if (sh.worker != w || at == sh.numbers.end()) continue;
      sh.numbers.erase(at);
      sh.computed += took;
      if (sh.numbers.empty() && !sh.queued && !sh.altered) {
        s.learn_round_trip(w, seconds(last_progress - sh.sent) - seconds(sh.computed));
      }
      return;
    }
  };
  // The tasks outstanding on each rank, in the order it runs them (its shares in sending order):
  // the first is running, the rest unstarted.
  std::vector<std::vector<std::size_t>> queue(n);
  const auto fill_queues = [&] {
    for (auto& q : queue) q.clear();
    for (const Share& sh : shares) {
      queue[sh.worker].insert(queue[sh.worker].end(), sh.numbers.begin(), sh.numbers.end());
    }
  };
  // Hedged: task `number` out of `w`'s shares, and `w` told to skip it, or stop it if it runs.
  const auto withdraw = [&](std::size_t w, std::size_t number) {
    for (Share& sh : shares) {
      const auto at = std::find(sh.numbers.begin(), sh.numbers.end(), number);
      if (sh.worker != w || at == sh.numbers.end()) continue;
      sh.numbers.erase(at);
      sh.altered = true;
    }
    wire::Writer message;
    message.u64(s.batch_id);
    message.u64(number);
    s.send(w, wire::kWithdraw, std::move(message.buffer()));
  };
  // Hedged: running copies withdrawn whose rank has not said yet how long they ran
  // (kWithdrawn): (worker, task, since when it ran).
  std::vector<std::tuple<std::size_t, std::size_t, Clock::time_point>> stopping;
  // Hedged: task `number` has its result from `winner`: its other copies are withdrawn.
  const auto withdraw_copies = [&](std::size_t number, std::size_t winner) {
    fill_queues();
    for (std::size_t w = 0; w < n; ++w) {
      const auto& q = queue[w];
      if (w == winner || std::find(q.begin(), q.end(), number) == q.end()) continue;
      if (q.front() == number) {
        stopping.emplace_back(w, number, running_since[w]);
        running_since[w] = Clock::now();  // its next task starts about now
      }
      withdraw(w, number);
    }
    std::erase_if(shares, [](const Share& sh) { return sh.numbers.empty(); });
  };
  // Hedged: asks the plan's backup rule what the free ranks should do, does it, and returns how
  // long until a running copy may become overdue (at most kLongestNap).
  std::vector<BackupWorker> view(n);
  std::vector<std::size_t> copies_of(batch);
  const auto hedge = [&]() -> Clock::duration {
    for (;;) {
      const auto now = Clock::now();
      fill_queues();
      std::fill(copies_of.begin(), copies_of.end(), 0);
      for (const auto& q : queue) {
        for (const std::size_t t : q) ++copies_of[t];
      }
      {
        std::lock_guard lock(s.policy->mutex());
        for (std::size_t w = 0; w < n; ++w) {
          const auto& stats = s.policy->stats(w);
          view[w].mean = stats.count() > 0 ? stats.mean() : 0.0;
        }
      }
      for (std::size_t w = 0; w < n; ++w) {
        BackupWorker& v = view[w];
        v.running = s.usable(w) && !queue[w].empty();
        v.unstarted = v.running ? queue[w].size() - 1 : 0;
        v.elapsed = v.running ? std::max(0.0, seconds(now - running_since[w])) : 0.0;
        v.copies = v.running ? copies_of[queue[w].front()] : 0;
        v.available = (plan.quotas()[w] > 0 || plan.is_racer(w)) && s.usable(w) &&
                      queue[w].empty() && (!indexed || next_claim >= batch);
        v.stalled = false;
      }
      const BackupAction action = rule.next(view);
      if (action.kind == BackupAction::Kind::none) {
        const double wait = rule.time_to_next_overdue(view);
        return wait < seconds(kLongestNap) ? span(wait) : Clock::duration(kLongestNap);
      }
      if (action.kind == BackupAction::Kind::backup) {
        send_share(action.worker, {queue[action.from].front()}, false);
        ++report.backup_copies;
      } else {
        const std::size_t number = queue[action.from].back();
        withdraw(action.from, number);
        std::erase_if(shares, [](const Share& sh) { return sh.numbers.empty(); });
        send_share(action.worker, {number}, false);
        ++report.takeovers;
      }
    }
  };
  // Whether the root last slept on the doorbells (else: until an answer was expected, when it
  // polls MPI whatever rang).
  bool slept_on_bells = false;
  while (finished < batch) {
    // After a wait on the bells, MPI is polled only for what rang: each poll costs the root
    // tens of microseconds over TCP.
    const bool poll_mpi = !slept_on_bells || s.mpi_has_work(Clock::now());
    const auto status = poll_mpi ? s.poll() : std::optional<MPI_Status>{};
    if (status) {
      last_progress = Clock::now();
      const std::size_t w = static_cast<std::size_t>(status->MPI_SOURCE) - 1;
      s.heard[w] = last_progress;
      wire::Reader in(s.inbox);
      const std::uint64_t answered_batch = in.u64();
      if (s.lost[w]) {
        s.mark(w, RankEvent::Kind::back, out.events);
        if (fungible && !started[w] && plan.is_racer(w)) {  // it joins the race
          started[w] = true;
          started_at[w] = Clock::now();
          s.send(w, wire::kWork,
                 s.work_message(wire::Answers::greedy, task, {}, input, plan.restart_after(w),
                                race_numbers_from + w));
        }
        if (indexed) claim_if_free(w);
      }
      if (status->MPI_TAG == wire::kPong) {
        if (s.ping_sent[w]) s.learn_round_trip(w, seconds(last_progress - *s.ping_sent[w]));
        s.ping_sent[w].reset();
        continue;
      }
      if (status->MPI_TAG == wire::kStopped) {
        // A quota rank that does not race ran its quota: it computes nothing more this round.
        if (fungible && answered_batch == s.batch_id && !plan.is_racer(w)) started[w] = false;
        continue;
      }
      if (answered_batch != s.batch_id) {
        ++out.late_answers;
        // Late, but a round trip of the rank's link all the same (of its last share only: no
        // other is remembered).
        const auto& last = s.last_share[w];
        if (status->MPI_TAG == wire::kResults && last && last->batch == answered_batch &&
            !last->queued) {
          s.learn_round_trip(w, seconds(last_progress - last->sent) - compute_seconds(in));
        }
        continue;
      }
      if (status->MPI_TAG == wire::kRestarted) {
        // A task stopped at its rank's budget: its time is spent and censored, and the rank
        // has started it afresh. A share's answer is that much later than expected, and that
        // time is no part of its link's round trip.
        const std::uint64_t number = in.u64();
        const nanoseconds took{static_cast<nanoseconds::rep>(in.u64())};
        report.busy[w] += took;
        report.tasks.push_back(
            {fungible ? batch + report.tasks.size() : static_cast<std::size_t>(number), w, took,
             false});
        censored.emplace_back(w, seconds(took));
        ++report.restarts;
        running_since[w] = last_progress;
        bool running = true;  // the rank's first share holds the restarted task
        for (Share& sh : shares) {
          if (sh.worker != w) continue;
          sh.deadline += took;
          if (sh.expected) *sh.expected += took;
          if (std::exchange(running, false)) sh.computed += took;
        }
        continue;
      }
      if (status->MPI_TAG == wire::kWithdrawn) {
        // A copy stopped because another gave its result first (or took it over): its time is
        // spent, discarded and censored.
        const std::uint64_t number = in.u64();
        const nanoseconds took{static_cast<nanoseconds::rep>(in.u64())};
        report.busy[w] += took;
        report.tasks.push_back(
            {static_cast<std::size_t>(number), w, took, false,
             std::chrono::duration_cast<nanoseconds>(last_progress - start) - took});
        censored.emplace_back(w, seconds(took));
        running_since[w] = last_progress;
        std::erase_if(stopping, [&](const auto& copy) {
          return std::get<0>(copy) == w && std::get<1>(copy) == number;
        });
        continue;
      }
      if (status->MPI_TAG == wire::kFailure) {
        const std::uint64_t number = in.u64();
        const nanoseconds took{static_cast<nanoseconds::rep>(in.u64())};
        const std::string what = in.text();
        const bool retried = number != wire::kNoNumber &&
                             (fungible ? failures < failures_allowed
                                       : number < batch && failures_of[number] < retries);
        if (!retried) {
          throw Error("rank " + std::to_string(w + 1) + " failed in round " +
                      std::to_string(s.round) + ": " + what);
        }
        ++failures;
        ++report.retries;
        running_since[w] = last_progress;
        report.busy[w] += took;
        report.tasks.push_back(
            {fungible ? batch + report.tasks.size() : static_cast<std::size_t>(number), w, took,
             false});
        if (!fungible) {
          ++failures_of[number];
          retry_elsewhere(static_cast<std::size_t>(number), w);
        }
        continue;
      }
      running_since[w] = last_progress;
      // Where this answer's tasks go (an accepted slot, or a discarded record) and their times,
      // to place them back to back ending at the arrival (set_observer()).
      std::vector<std::pair<nanoseconds*, nanoseconds>> placed;
      while (!in.at_end()) {
        const std::uint64_t number = in.u64();
        const nanoseconds took{static_cast<nanoseconds::rep>(in.u64())};
        const auto result = in.bytes();
        report.busy[w] += took;
        if (!fungible) answer_share(w, static_cast<std::size_t>(number), took);
        std::size_t slot = fungible ? finished : static_cast<std::size_t>(number);
        const bool accept = fungible ? finished < batch : (slot < batch && !done[slot]);
        // A quota rank that does not race is done at its quota's last result (its "stopped"
        // may come after the B-th result: it must not count as busy until then).
        if (fungible && !plan.is_racer(w) && ++answered_samples[w] == plan.quotas()[w]) {
          started[w] = false;
        }
        if (!accept) {
          report.tasks.push_back({fungible ? batch + report.tasks.size() : slot, w, took, false});
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
        if (hedging) withdraw_copies(slot, w);
      }
      auto end = std::chrono::duration_cast<nanoseconds>(last_progress - start);
      for (std::size_t i = placed.size(), discarded = report.tasks.size(); i-- > 0;) {
        end -= placed[i].second;
        // The discarded records are the last ones pushed, in the answer's order.
        *(placed[i].first != nullptr ? placed[i].first : &report.tasks[--discarded].start) = end;
      }
      std::erase_if(shares, [](const Share& sh) { return sh.numbers.empty(); });
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
    if (fungible) {
      for (std::size_t w = 0; w < n; ++w) {
        if (!started[w] || s.lost[w]) continue;
        const auto mean = s.expected_task_seconds(w);
        const auto allowed =
            mean ? s.options.deadline_floor +
                       span(s.options.deadline_factor * (*mean + s.link_seconds(w)))
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
          const bool queued = has_share(w);
          Share& sh = send_share(w, spread[w], queued);
          // Its deadline counts the tasks it still has before these.
          if (queued) {
            const auto mean = s.expected_task_seconds(w).value_or(0.0);
            const double ahead = static_cast<double>(load[w] - spread[w].size()) * mean;
            sh.deadline += span(s.options.deadline_factor * ahead);
            if (sh.expected) *sh.expected += span(ahead);
          }
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
    // The root must not take a worker's core: it sleeps while no answer is expected, and no
    // longer than until a running copy becomes overdue.
    const auto results_may_wait = race_wait(batch - finished);
    const auto before = Clock::now();
    // With every doorbell connected and MPI idle, the root sleeps until a bell rings or a
    // deadline; else it polls at the times an answer is expected (idle_sleep). A race's
    // results still wait in MPI's queue while they may.
    const bool results_queue = results_may_wait && *results_may_wait > kShortestSleep;
    const bool on_bells = !results_queue && !s.mpi_has_work(before);
    auto sleep = on_bells
                     ? s.deadline_sleep(shares, before)
                     : s.idle_sleep(shares, before, last_progress, results_may_wait, quotas_alone);
    // A bell rang for a message MPI has not delivered yet: it is on its way, usually within
    // microseconds; but the bell's connection may take a faster path than MPI's (measured: 5
    // ms ahead when a relay delayed only MPI's interface), so the polls back off from the ring.
    if (const auto since = s.doorbells.news_since(); since && !results_queue) {
      sleep = std::min<Clock::duration>(
          sleep,
          std::clamp<Clock::duration>((before - *since) / 8, kShortestSleep, kLongestBackoff));
    }
    if (hedging) sleep = std::min(sleep, std::max<Clock::duration>(hedge(), kShortestSleep));
    if (paced) {
      if (const auto again = pace()) sleep = std::min(sleep, *again);
    }
    slept_on_bells = on_bells;
    if (on_bells) {
      s.doorbells.wait(sleep);  // reads what rang
    } else {
      if (!s.doorbells.all_connected()) s.doorbells.collect();  // takes the ranks' hellos
      std::this_thread::sleep_for(sleep);
    }
  }
  s.raced = started;
  // Fungible: each rank's task cut short by the stop, a censored observation (as the simulator
  // and the threads have it): it ran at least the rank's span past the tasks it answered.
  std::vector<std::pair<std::size_t, double>> cut;
  if (fungible) {
    // A streaming rank computes from its start until the stop: its running task's time is spent
    // although its result never comes, so that whole span counts as busy.
    const auto stopped = Clock::now();
    for (std::size_t w = 0; w < n; ++w) {
      if (!started[w] || s.lost[w]) continue;
      const auto span = std::chrono::duration_cast<nanoseconds>(stopped - started_at[w]);
      if (span > report.busy[w]) cut.emplace_back(w, seconds(span - report.busy[w]));
      report.busy[w] = std::max(report.busy[w], span);
      wire::Writer stop;
      stop.u64(s.batch_id);
      s.send(w, wire::kStop, std::move(stop.buffer()));
    }
  }
  // Hedged: a withdrawn copy whose rank has not confirmed its stop ran at least until now (its
  // kWithdrawn will come as a late answer): its time is counted from the root's view.
  for (const auto& [w, number, since] : stopping) {
    const auto took = std::chrono::duration_cast<nanoseconds>(Clock::now() - since);
    report.busy[w] += took;
    report.tasks.push_back(
        {number, w, took, false, std::chrono::duration_cast<nanoseconds>(since - start)});
    censored.emplace_back(w, seconds(took));
  }
  for (std::size_t t = 0; t < batch; ++t) {
    report.tasks.push_back({t, accepted_on[t], accepted_time[t], true, accepted_start[t]});
  }
  // The B accepted results by slot, then the discarded copies (a share's restarted attempts
  // by task, a fungible race's after B).
  std::sort(report.tasks.begin(), report.tasks.end(), [](const auto& x, const auto& y) {
    return x.accepted != y.accepted ? x.accepted : x.task < y.task;
  });
  {
    std::lock_guard lock(s.policy->mutex());
    try {
      for (std::size_t t = 0; t < batch; ++t) {
        s.policy->observe(accepted_on[t], std::chrono::duration<double>(accepted_time[t]).count());
      }
      for (const auto& [w, ran] : cut) s.policy->observe_censored(w, ran);
      for (const auto& [w, ran] : censored) s.policy->observe_censored(w, ran);
    } catch (...) {
      report.learning_error = std::current_exception();
    }
    if (s.observer != nullptr) s.observer->on_learned(s.round, s.policy->all_stats());
  }
  report.wall = std::chrono::duration_cast<nanoseconds>(Clock::now() - start);
  report.start = start;
  out.root_cpu = thread_cpu() - cpu_at_start;
  failed_end.end.outcome = runtime::BatchOutcome::succeeded;
  failed_end.end.report = &report;
  failed_end.observer = nullptr;  // told here, while `out` is still this function's
  if (s.observer != nullptr) s.observer->on_batch_end(failed_end.end);
  s.ended = Clock::now();
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
