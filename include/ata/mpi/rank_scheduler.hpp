#pragma once
/// @file
/// The policies of ata over MPI ranks: rank 0 allocates every batch and gathers the results,
/// every other rank is a worker (ata::mpi::serve_tasks). Stalled and dead ranks are survived.

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ata/core/backup_rule.hpp"
#include "ata/core/policy.hpp"
#include "ata/mpi/task_registry.hpp"
#include "ata/runtime/observer.hpp"
#include "ata/runtime/pool_options.hpp"
#include "ata/runtime/round_report.hpp"

namespace ata::mpi {

/// When a rank counts as stalled, when the whole run gives up, and the default hedging.
struct RankOptions {
  /// A share of a tasks on rank r is overdue after floor + factor * (a * m + rtt), m being r's
  /// mean task time as learned by the policy (before r has one, the mean of the ranks that
  /// have one, and before any has one the deadline is first_deadline) and rtt the round trip
  /// of r's link as the scheduler learned it (RankScheduler::round_trip(); 0 before any). A
  /// racer of a fungible race is overdue after floor + factor * (m + rtt) without a word,
  /// counted across its rounds of racing (not between batches, nor in rounds it sat out).
  double deadline_factor = 8.0;
  std::chrono::nanoseconds deadline_floor = std::chrono::milliseconds(200);
  std::chrono::nanoseconds first_deadline = std::chrono::seconds(2);
  /// A batch fails with ata::Error when no rank has answered for this long while it waits
  /// (every rank stalled or dead): a run never hangs.
  std::chrono::nanoseconds give_up_after = std::chrono::seconds(30);
  /// Workers (rank - 1) already known lost, e.g. by the scheduler before this one: they get no
  /// share until they answer.
  std::vector<std::size_t> lost_workers;
  /// Rank 0 listens on a TCP port of every IPv4 interface, each worker rank connects to it and
  /// writes a byte after each message it sends, so that rank 0 sleeps until one comes instead
  /// of polling MPI (whose waits spin). Connections that do not present the scheduler's random
  /// token are dropped. Off, or when a rank cannot connect (a firewall), or once a connection
  /// breaks, rank 0 polls MPI at the times it expects answers.
  bool doorbells = true;
  /// The backup rule of a batch whose plan sets none (Plan::backups()), as
  /// runtime::SchedulerOptions::set_backups() on threads; off by default. A hedged batch (quotas
  /// or an indexed race; a fungible race needs none) has each task answered as it ends, so that
  /// the root sees which task each rank runs and for how long: a free rank (one done with its
  /// share) takes over unstarted tasks of a slower rank (mode on) or runs a copy of an overdue
  /// one, and the first result wins; the other copies are withdrawn, a running one stopped on
  /// its rank (TaskInput::stop_requested()) and its time reported as discarded and censored.
  /// An unset min_overdue is runtime::SchedulerOptions::kDefaultMinOverdue (1 ms). Throws
  /// ata::InvalidArgument from the constructor for settings ata::BackupRule refuses.
  BackupOptions backups;
  /// Late binding, as runtime::LateBindingOptions on threads: a batch whose plan is quotas alone
  /// (no backups, retries or restarts of its own: such a plan runs as planned) is handed out one
  /// task at a time, an indexed race of every usable rank (RoundReport::dispatch: pull), paced
  /// by ata::reached_by_others: a free rank, fastest first, takes the next task unless the busy
  /// ranks would end every waiting task before it could end one (means plus each link's round
  /// trip, since each task crosses it). The policy still plans each batch (Policy::round()
  /// advances), and learns from every task as usual. Each task costs its rank a round trip
  /// idle: worth it when task times vary more than the link's round trip. With `backups` set,
  /// the paced race is hedged as any indexed race (once every task is handed out).
  bool late_binding = false;
};

/// A rank lost (overdue), slow (its link's round trip alone outlasts the other ranks' shares,
/// so its share went to them) or back (it answered again, over a link fast enough), as the
/// batch report lists them.
struct RankEvent {
  enum class Kind { lost, slow_link, back };
  Kind kind = Kind::lost;
  std::size_t rank = 0;   ///< MPI rank (worker index + 1)
  std::size_t round = 0;  ///< the batch during which it happened
  double seconds = 0.0;   ///< since the scheduler was built
};

/// One batch's results (by task, B of them) and what it cost.
struct RankBatch {
  std::vector<Bytes> results;
  /// As on threads; workers are indexed 0..n-2 for ranks 1..n-1. Tasks re-run as backups and
  /// greedy mode's surplus appear with accepted = false.
  runtime::RoundReport report;
  /// Ranks lost or back during this batch.
  std::vector<RankEvent> events;
  /// Tasks sent to another rank because theirs was overdue.
  std::size_t backup_tasks = 0;
  /// Answers of earlier batches that arrived during this one, discarded by round number.
  std::size_t late_answers = 0;
  /// Tasks of the policy's allocation given to other ranks at the start, because their rank
  /// was lost or its link slow.
  std::size_t moved_tasks = 0;
  /// CPU time the root's thread spent in run() (getrusage RUSAGE_THREAD: user + system).
  std::chrono::nanoseconds root_cpu{0};
};

/// The root's side of the rank back-end: one policy over the worker ranks of `comm`.
///
/// @code
/// // every rank: MPI_Init, the same TaskRegistry and the same LaneOptions (slowdowns, seed)
/// if (rank == 0) {
///   ata::AtaPolicy policy(size - 1, alpha);
///   ata::mpi::RankScheduler root(MPI_COMM_WORLD, policy);
///   auto batch = root.run(23, "gradient", ata::mpi::to_bytes(x));
///   bool lost = root.shutdown();
///   ata::mpi::finish(lost);
/// } else {
///   ata::mpi::finish(ata::mpi::serve_tasks(MPI_COMM_WORLD, tasks, pool_options));
/// }
/// @endcode
///
/// Each batch runs the policy's plan (ata::Plan). Quotas (Dispatch::allocated): each rank's
/// quota is sent as one share (task numbers and the batch input); each rank answers once with
/// its results and per-task times, which the policy observes. An indexed race (Dispatch::pull,
/// or Dispatch::mixed beside quotas): the root hands the race's pool [sum of quotas, B) out
/// one index at a time, the lowest unstarted one to each racer at the start (in worker order)
/// and again each time a racer answers, so every index runs once; a claim is a share of one
/// task, with its deadline. A fungible race (Dispatch::greedy: GTA, or a race of a subset; or
/// Dispatch::mixed, quotas beside it, each then at most its quota's samples, sent one by one):
/// every live racer computes tasks until B results are in, sending each as it finishes; then
/// the root sends a stop, a rank drops its running task (TaskInput::stop_requested() turns
/// true), and any result still on its way is discarded by batch (TaskRecord::accepted =
/// false when it arrives before the batch ends, counted in late_answers after). A greedy rank
/// is busy from its start to the stop (RoundReport::busy), as a thread worker is busy until its
/// stopped task ends. A task past its rank's restart budget (Plan::restart_after) is stopped on
/// its rank and run afresh under its number; the root hears its time at once (a censored
/// observation, RoundReport::restarts). A plan's retries (Plan::set_retries) let a task fail
/// that many times: a share's failed task is sent alone to another rank, a fungible race's
/// failed sample is replaced by the rank's next (retries x B failures in all); each failed
/// attempt is a discarded record and counts in RoundReport::retries. Backups (the plan's, else
/// RankOptions::backups) hedge quotas and indexed races with the rule the threads use: see
/// RankOptions::backups.
///
/// Open MPI 4.1 reports no failures, so the root uses only non-blocking point-to-point calls
/// polled against deadlines (RankOptions): a share past its deadline marks its rank stalled,
/// its unfinished tasks are re-run on live ranks, and the rank gets no share (the policy's
/// allocation of it is moved to live ranks) until it answers again. No collective is used.
/// While it waits, the root sleeps until shortly before the earliest answer it expects (from
/// the learned means and round trips), then polls with a backoff: it does not spin a core.
///
/// The round trip of each rank's link is learned apart from its speed: from every answer, the
/// time between the share's send and its answer minus the task times the rank measured, and
/// from pings (answered at once by an idle rank) sent to lost and slow ranks at the start of
/// every batch. The policy learns only the task times the ranks measured, so a slow link is
/// never taken for a slow rank. A rank whose last round trip alone exceeds the longest
/// expected share of the others by more than RankOptions::deadline_floor
/// (RankEvent::Kind::slow_link) has its share given to them, and is used again once a ping
/// shows its link fast enough.
///
/// Several schedulers may drive the same worker ranks one after another (rounds of each
/// start at 1, so a rank still lost under one should not be driven by the next).
///
/// Only on rank 0; one thread at a time; holds policy.mutex() around every policy call.
class RankScheduler {
 public:
  /// Throws ata::InvalidArgument unless called on rank 0 of a communicator of at least 2 ranks
  /// whose worker count (size - 1) equals policy.workers(), and for options out of range (a
  /// factor or a time not positive, a lost worker out of range).
  RankScheduler(MPI_Comm comm, Policy& policy, RankOptions options = {});
  RankScheduler(const RankScheduler&) = delete;
  RankScheduler& operator=(const RankScheduler&) = delete;
  /// Leaves the worker ranks serving: another scheduler (another policy) may drive them next;
  /// the last one calls shutdown().
  ~RankScheduler();

  /// Runs `batch` tasks of the registered function `task` on `input`. Throws
  /// ata::InvalidArgument for batch = 0 or after shutdown(), and ata::Error when a task
  /// throws on its rank (the message names the rank and the task's error), when no rank
  /// answers for RankOptions::give_up_after. A task that throws fails the batch unless the plan
  /// has retries left for it (see the class). A rank stops a task that has run its restart
  /// budget itself and runs it afresh; the root counts it in RoundReport::restarts and gives
  /// the policy its time as a censored observation.
  [[nodiscard]] RankBatch run(std::size_t batch, const std::string& task, const Bytes& input);

  /// Tells every worker rank to stop serving (never waiting on a stalled one) and returns
  /// whether a rank is still lost: then MPI_Finalize would hang, and finish() skips it.
  bool shutdown();

  /// Tells `observer` (nullptr: none) of every batch from now on, as BatchScheduler does
  /// (runtime::Observer): its start with the plan, what the policy learned, its end with the
  /// report (or failed, when run() throws after the start). On this thread, inside run(). The
  /// task records' starts are on the root's clock: a rank runs a share's tasks back to back
  /// and answers after the last, so they are laid back to back ending when the answer arrived
  /// (a greedy rank answers each task), later than they ran by the answer's way to the root.
  /// The observer must outlive its use.
  void set_observer(runtime::Observer* observer) noexcept;

  /// Worker ranks (size - 1).
  [[nodiscard]] std::size_t workers() const noexcept;
  /// Worker ranks whose doorbell is connected (RankOptions::doorbells); they connect as they
  /// read the scheduler's first message, so during the first batch.
  [[nodiscard]] std::size_t doorbells_connected() const noexcept;
  /// Whether worker `worker` (rank worker + 1) is currently stalled or dead.
  [[nodiscard]] bool lost(std::size_t worker) const;
  /// Every loss and return so far.
  [[nodiscard]] const std::vector<RankEvent>& events() const noexcept;
  /// Whether `worker`'s link is currently too slow to give it a share (RankEvent::slow_link).
  [[nodiscard]] bool slow_link(std::size_t worker) const;
  /// The round trip of `worker`'s link in seconds as learned so far (an exponentially weighted
  /// mean of its samples, so a link that changes is followed), or nothing before any sample.
  [[nodiscard]] std::optional<double> round_trip(std::size_t worker) const;

 private:
  struct State;
  State* state_;
};

/// A worker rank's loop: runs the shares the root sends, each task followed by its slowdown
/// (options.slowdown(rank - 1), drawn from models::Rng(options.seed(), rank - 1) exactly as
/// thread worker rank - 1 draws), until the root's shutdown. Returns whether a rank was lost
/// (pass it to finish()). options.workers() must be size - 1 (ata::InvalidArgument).
/// A task that throws is reported to the root, which throws ata::Error naming it.
[[nodiscard]] bool serve_tasks(MPI_Comm comm, const TaskRegistry& tasks,
                               const runtime::LaneOptions& options);

/// Ends the process's MPI: MPI_Finalize, unless `rank_lost` (Open MPI 4.1's MPI_Finalize
/// waits for every rank, a dead one too): then stdout and stderr are flushed and the process
/// exits with `exit_code` at once. Under mpirun --enable-recovery the job then ends normally.
void finish(bool rank_lost, int exit_code = 0);

}  // namespace ata::mpi
