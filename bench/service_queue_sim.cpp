// ata-serve's setting in virtual time, to find out what sets a strategy's latency tail without
// the noise of two shared cores: n workers of a preset, each a FIFO queue of tasks; requests
// arrive as a Poisson process, each a batch of B tasks (B uniform in [samples, samples-max]).
// An allocated strategy allocates a batch on arrival against the backlog (the tasks queued or
// running on each worker, as the runtime counts it) and observes its task times when it
// completes, as the runtime does; pull hands the batches' tasks, oldest batch first, to
// whichever worker is free. The load is a fraction of pull's capacity, sum 1/mean_i tasks per
// second over the mean B. Prints the latency percentiles, how much worker time stays idle while
// tasks wait in other workers' queues, and with --slow the allocation and backlog of each batch
// slower than 0.9x the p99 (where its last task ran, and behind what). --late binds tasks late
// instead of allocating on arrival, with the rule of the runtime's LateBindingOptions.
//   ./build/bench/ata_bench_service_queue --strategy ata-auto --load 0.8 --slow
//   ./build/bench/ata_bench_service_queue --strategy pull --load 0.8
// docs/service.md reports what it showed.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include "ata/ata.hpp"

namespace {

struct Config {
  std::string strategy = "ata-auto";
  bool load_aware = true;
  std::string preset = "cifar";
  std::size_t workers = 16;
  double unit_us = 100.0;
  double load = 0.8;
  std::size_t samples = 16;
  std::size_t samples_max = 32;
  std::size_t requests = 30000;
  std::size_t warmup = 300;
  std::uint64_t seed = 1;
  bool slow = false;
  bool takeovers = false;
  bool late = false;
};

struct Request {
  double arrival = 0.0;
  double done = 0.0;
  std::size_t tasks = 0;
  std::size_t left = 0;
  std::size_t handed_out = 0;                // pull: tasks given to a worker so far
  std::vector<std::size_t> allocation;       // allocated strategies
  std::vector<double> backlog;               // what the allocation was given
  std::vector<std::vector<double>> seconds;  // per worker, its tasks' times
  std::size_t last_worker = 0;
};

// A preset of c.workers workers, or a scenario file (a name with a '/' or a '.').
ata::models::Scenario workers_of(const Config& c) {
  if (c.preset.find_first_of("/.") == std::string::npos) {
    return ata::models::make_preset(c.preset, c.workers);
  }
  return ata::models::load_scenario(c.preset);
}

class QueueSimulation {
 public:
  explicit QueueSimulation(const Config& c)
      : c_(c),
        scenario_(workers_of(c).scaled(c.unit_us * 1e-6)),
        n_(scenario_.workers()),
        queue_(n_),
        busy_(n_, false),
        running_(n_, 0),
        added_(n_, 0),
        finished_(n_, 0) {
    const auto means = scenario_.means();
    ata::PolicyOptions options;
    options.means = means;
    options.alpha = *std::max_element(means.begin(), means.end());
    options.seed = c.seed;
    policy_ = ata::make_policy(c.strategy, n_, options);
    pull_ = c.strategy == "pull";
    if (c.strategy == "gta") {
      throw ata::InvalidArgument("--strategy gta is not simulated (its surplus tasks are stopped)");
    }
    double capacity = 0.0;  // tasks per second, every worker busy
    for (const double m : means) capacity += 1.0 / m;
    rate_ = c.load * capacity / (0.5 * static_cast<double>(c.samples + c.samples_max));
    for (std::size_t i = 0; i < n_; ++i) worker_rngs_.emplace_back(c.seed, i);
  }

  void run() {
    ata::models::Rng arrivals(c_.seed, n_ + 1);
    double now = 0.0;
    for (std::size_t r = 0; r < c_.requests; ++r) {
      now += -std::log1p(-ata::models::uniform01(arrivals)) / rate_;
      events_.emplace(now, kArrival, r);
    }
    ata::models::Rng sizes(c_.seed, n_ + 2);
    while (!events_.empty()) {
      const auto [time, kind, id] = events_.top();
      events_.pop();
      account(time);
      if (kind == kArrival) {
        const auto spread = static_cast<double>(c_.samples_max - c_.samples + 1);
        arrive(time, c_.samples + static_cast<std::size_t>(ata::models::uniform01(sizes) * spread));
      } else {
        end_task(time, id);
      }
    }
  }

  void report() const {
    std::vector<double> latency;
    for (std::size_t r = c_.warmup; r < requests_.size(); ++r) {
      latency.push_back(requests_[r].done - requests_[r].arrival);
    }
    std::sort(latency.begin(), latency.end());
    const auto ms = [&](double p) {
      return 1e3 * latency[static_cast<std::size_t>(p * static_cast<double>(latency.size() - 1))];
    };
    double worker_seconds = 0.0;
    for (const Request& r : requests_) {
      for (const auto& times : r.seconds) {
        for (const double t : times) worker_seconds += t;
      }
    }
    std::printf(
        "%s%s, load %.2f (%.1f requests/s): p50 %.0f ms, p90 %.0f ms, p99 %.0f ms; "
        "worker time per request %.3f s\n",
        c_.strategy.c_str(), c_.load_aware || pull_ ? "" : " (load-aware off)", c_.load, rate_,
        ms(0.5), ms(0.9), ms(0.99), worker_seconds / static_cast<double>(c_.requests));
    const double worker_time = elapsed_ * static_cast<double>(n_);
    std::printf(
        "  idle workers while tasks wait in queues: %.2f%% of worker time (%.2f%% while more "
        "than 4n wait); more than 4n tasks waiting %.2f%% of the time\n",
        100 * idle_while_waiting_ / worker_time, 100 * idle_while_congested_ / worker_time,
        100 * congested_ / elapsed_);
    if (c_.takeovers) std::printf("  take-overs: %zu\n", takeovers_);
    if (!c_.slow || pull_) return;
    const double threshold = 0.9 * ms(0.99) * 1e-3;
    for (std::size_t r = c_.warmup; r < requests_.size(); ++r) {
      const Request& q = requests_[r];
      if (q.done - q.arrival < threshold) continue;
      std::printf("  %.0f ms, B = %zu, last task on worker %zu; tasks(backlog):",
                  1e3 * (q.done - q.arrival), q.tasks, q.last_worker);
      for (std::size_t i = 0; i < n_; ++i) {
        if (q.allocation[i] > 0) std::printf(" w%zu:%zu(%.0f)", i, q.allocation[i], q.backlog[i]);
      }
      std::printf("\n");
    }
  }

 private:
  static constexpr int kTaskEnd = 0;  // ordered first: a worker is free before an arrival
  static constexpr int kArrival = 1;
  using Event = std::tuple<double, int, std::size_t>;  // time, kind, request or worker

  // Before each event: how the time since the last one was spent. Tasks waiting are those not
  // started (queued on a worker, or not yet handed out by pull).
  void account(double now) {
    const double span = now - last_event_;
    last_event_ = now;
    elapsed_ += span;
    std::size_t idle = 0;
    std::size_t waiting = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      idle += busy_[i] ? 0 : 1;
      waiting += queue_[i].size();
    }
    for (const std::size_t id : pulled_) waiting += requests_[id].tasks - requests_[id].handed_out;
    if (waiting == 0) return;
    idle_while_waiting_ += span * static_cast<double>(idle);
    if (waiting > 4 * n_) {
      idle_while_congested_ += span * static_cast<double>(idle);
      congested_ += span;
    }
  }

  void arrive(double now, std::size_t tasks) {
    const std::size_t id = requests_.size();
    Request& r = requests_.emplace_back();
    r.arrival = now;
    r.tasks = tasks;
    r.left = tasks;
    r.seconds.assign(n_, {});
    if (pull_ || c_.late) {
      pulled_.push_back(id);
    } else {
      r.backlog.resize(n_);
      for (std::size_t i = 0; i < n_; ++i)
        r.backlog[i] = static_cast<double>(added_[i] - finished_[i]);
      ata::Allocation a;
      if (c_.load_aware) {
        policy_->allocate(tasks, r.backlog, a);
      } else {
        policy_->allocate(tasks, a);
      }
      r.allocation.assign(a.begin(), a.end());
      for (std::size_t i = 0; i < n_; ++i) {
        added_[i] += a[i];
        for (std::size_t t = 0; t < a[i]; ++t) queue_[i].push_back(id);
      }
    }
    start_idle(now);
  }

  void start_idle(double now) {
    if (!c_.late) {
      for (std::size_t i = 0; i < n_; ++i) start_next(i, now);
      return;
    }
    std::vector<std::size_t> order(n_);
    for (std::size_t i = 0; i < n_; ++i) order[i] = i;
    const auto m = estimated_means();
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return m[a] < m[b]; });
    for (const std::size_t i : order) {
      if (busy_[i]) continue;
      std::size_t waiting = 0;
      for (const std::size_t id : pulled_)
        waiting += requests_[id].tasks - requests_[id].handed_out;
      if (waiting == 0) return;
      // Tasks the other workers would end before this one could end one, in FIFO order.
      std::size_t reached = 0;
      for (std::size_t j = 0; j < n_; ++j) {
        if (j == i || !busy_[j] || m[j] <= 0.0) continue;
        // As the runtime's pacer: a task that has run e is expected to run max(m - e, e) more.
        const double ran = now - started_[j];
        const double left = m[i] - std::max(m[j] - ran, ran);
        if (left > 0) reached += static_cast<std::size_t>(left / m[j]);
        if (reached >= waiting) break;
      }
      if (reached >= waiting) continue;
      start_at(i, now, reached);
    }
  }

  std::vector<double> estimated_means() const {
    std::vector<double> m(n_);
    for (std::size_t i = 0; i < n_; ++i) {
      const auto& st = policy_->stats(i);
      m[i] = st.count() > 0 ? st.mean() : 0.0;
    }
    return m;
  }

  // Worker takes the waiting task at FIFO position `skip` (0 = the oldest batch's next).
  void start_at(std::size_t worker, double now, std::size_t skip) {
    std::size_t id = 0;
    for (const std::size_t r : pulled_) {
      const std::size_t left = requests_[r].tasks - requests_[r].handed_out;
      if (skip < left) {
        id = r;
        break;
      }
      skip -= left;
    }
    if (++requests_[id].handed_out == requests_[id].tasks) std::erase(pulled_, id);
    busy_[worker] = true;
    running_[worker] = id;
    started_[worker] = now;
    const double seconds = scenario_.models()[worker].sample(worker_rngs_[worker]);
    requests_[id].seconds[worker].push_back(seconds);
    events_.emplace(now + seconds, kTaskEnd, worker);
  }

  void start_next(std::size_t worker, double now) {
    if (busy_[worker]) return;
    std::size_t id = 0;
    if (pull_) {
      while (!pulled_.empty() &&
             requests_[pulled_.front()].handed_out == requests_[pulled_.front()].tasks) {
        pulled_.pop_front();
      }
      if (pulled_.empty()) return;
      id = pulled_.front();
      ++requests_[id].handed_out;
    } else {
      if (queue_[worker].empty() && !(c_.takeovers && take_over(worker))) return;
      id = queue_[worker].front();
      queue_[worker].pop_front();
    }
    busy_[worker] = true;
    running_[worker] = id;
    const double seconds = scenario_.models()[worker].sample(worker_rngs_[worker]);
    requests_[id].seconds[worker].push_back(seconds);
    events_.emplace(now + seconds, kTaskEnd, worker);
  }

  void end_task(double now, std::size_t worker) {
    busy_[worker] = false;
    ++finished_[worker];
    Request& r = requests_[running_[worker]];
    r.last_worker = worker;
    if (--r.left == 0) {
      r.done = now;
      if (!pull_) learn(r);
    }
    if (c_.late) {
      start_idle(now);
    } else {
      start_next(worker, now);
    }
  }

  // An idle worker with an empty queue takes the unstarted task that would end last (the back
  // of the queue whose expected end is latest), if it expects to end it sooner, as the
  // runtime's backup rule does with its take-overs. The backlog moves with the task.
  bool take_over(std::size_t idle) {
    const auto& means = scenario_.means();
    std::size_t victim = n_;
    double latest = means[idle];
    for (std::size_t j = 0; j < n_; ++j) {
      if (j == idle || queue_[j].empty()) continue;
      const double end =
          (static_cast<double>(queue_[j].size()) + (busy_[j] ? 0.5 : 0.0)) * means[j];
      if (end > latest) {
        latest = end;
        victim = j;
      }
    }
    if (victim == n_) return false;
    queue_[idle].push_back(queue_[victim].back());
    queue_[victim].pop_back();
    --added_[victim];
    ++added_[idle];
    ++takeovers_;
    return true;
  }

  // As the runtime: when the batch is complete, every task time, or one summary per worker.
  void learn(const Request& r) {
    for (std::size_t i = 0; i < n_; ++i) {
      const auto& times = r.seconds[i];
      if (times.empty()) continue;
      if (policy_->needs_every_sample()) {
        for (const double t : times) policy_->observe(i, t);
        continue;
      }
      ata::WorkerStats chunk;
      for (const double t : times) chunk.add(t);
      policy_->observe_summary(i, chunk);
    }
  }

  const Config c_;
  const ata::models::Scenario scenario_;
  const std::size_t n_;
  std::unique_ptr<ata::Policy> policy_;
  bool pull_ = false;
  double rate_ = 0.0;
  std::vector<ata::models::Rng> worker_rngs_;
  std::vector<Request> requests_;
  std::vector<std::deque<std::size_t>> queue_;  // allocated: each worker's tasks, by request
  std::deque<std::size_t> pulled_;              // pull: requests with tasks not handed out
  std::vector<bool> busy_;
  std::vector<std::size_t> running_;  // the request of each busy worker's task
  std::vector<double> started_ = std::vector<double>(n_, 0.0);  // late: each task's start
  std::vector<std::size_t> added_;  // the runtime's backlog is added_ - finished_
  std::vector<std::size_t> finished_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  double last_event_ = 0.0;
  double elapsed_ = 0.0;
  double idle_while_waiting_ = 0.0;    // worker-seconds
  double idle_while_congested_ = 0.0;  // worker-seconds, more than 4n tasks waiting
  double congested_ = 0.0;             // seconds with more than 4n tasks waiting
  std::size_t takeovers_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Config c;
  CLI::App app("ata-serve's setting in virtual time: latency percentiles under Poisson load");
  app.add_option("--strategy", c.strategy, "ata-auto, ata, ata-e, ofta, uta or pull");
  app.add_option("--load-aware", c.load_aware, "allocate against the backlog (true/false)");
  app.add_option("--preset", c.preset,
                 "the workers: a simulator preset, or a scenario file (ignores --workers)");
  app.add_option("--workers", c.workers, "n")->check(CLI::Range(1, 4096));
  app.add_option("--unit-us", c.unit_us, "one model unit, microseconds")
      ->check(CLI::Range(1e-3, 1e6));
  app.add_option("--load", c.load, "offered load, a fraction of pull's capacity")
      ->check(CLI::Range(0.01, 0.99));
  app.add_option("--samples", c.samples, "smallest B")->check(CLI::Range(1, 100000));
  app.add_option("--samples-max", c.samples_max, "largest B")->check(CLI::Range(1, 100000));
  app.add_option("--requests", c.requests, "requests simulated")->check(CLI::Range(1000, 10000000));
  app.add_option("--warmup", c.warmup, "first requests left out of the percentiles")
      ->check(CLI::Range(0, 100000));
  app.add_option("--seed", c.seed, "arrivals, sizes, task times, ata-auto's draws");
  app.add_flag("--slow", c.slow, "print the allocation and backlog of the slowest requests");
  app.add_flag(
      "--late", c.late,
      "late binding, as the runtime's LateBindingOptions: one queue, oldest batch first; a "
      "free worker takes the first task the busy ones would not reach before it ends it");
  app.add_flag("--takeovers", c.takeovers,
               "an idle worker takes over the unstarted task expected to end last elsewhere");
  try {
    app.parse(argc, argv);
    if (c.samples_max < c.samples) c.samples_max = c.samples;
    if (c.warmup >= c.requests) {
      throw ata::InvalidArgument("--warmup must be below --requests, got " +
                                 std::to_string(c.warmup));
    }
    QueueSimulation simulation(c);
    simulation.run();
    simulation.report();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ata_bench_service_queue: %s\n", e.what());
    return 1;
  }
  return 0;
}
