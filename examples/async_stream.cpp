// An asynchronous consumer on a TaskStream: four workers of very different speeds compute
// noisy gradients of f(x) = (x - 3)^2 / 2 from the model of the version they started at, and
// the consumer applies each one at once, unless it is `kMaxDelay` versions or more behind
// (such a gradient is thrown away, and a task reaching that delay is stopped early: its stop
// token fires). It prints what every worker did and where the model ended.
#include <ata/ata.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <random>
#include <vector>

namespace {

constexpr std::uint64_t kMaxDelay = 4;
constexpr double kStep = 0.05;
constexpr double kTarget = 1e-3;  // stop once f(x) is below it

// The model of every version so far, for the tasks to read the one they started from.
class History {
 public:
  explicit History(double first) : models_{first} {}
  [[nodiscard]] double at(std::uint64_t version) const {
    std::lock_guard lock(mutex_);
    return models_[version];
  }
  // The model of the next version, published before the stream advances to it.
  void publish(double model) {
    std::lock_guard lock(mutex_);
    models_.push_back(model);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<double> models_;
};

}  // namespace

int main() {
  namespace rt = ata::runtime;
  // Worker i sleeps an exponential time of mean 2^i ms after each gradient.
  rt::PoolOptions options(4);
  for (std::size_t i = 0; i < options.workers(); ++i) {
    options.set_slowdown(i, rt::Slowdown::sleep(ata::models::TimeModel::exponential(
                                std::ldexp(1.0, static_cast<int>(i)))));
  }
  rt::WorkerPool pool(options);
  rt::TaskStream stream(pool);

  double x = -5.0;  // the consumer's alone: it runs under the stream's lock
  History history(x);
  std::vector<std::size_t> applied(pool.size(), 0);
  std::vector<std::size_t> stale(pool.size(), 0);
  const auto report = stream.run(
      [&](const rt::StreamContext& ctx) {
        std::mt19937_64 noise(ctx.task());
        return history.at(ctx.version()) - 3.0 + std::normal_distribution<double>(0.0, 1.0)(noise);
      },
      [&](rt::StreamDelivery<double>& d) {
        if (!d.completed() || d.delay() >= kMaxDelay) {
          ++stale[d.worker()];
          return rt::StreamVerdict::reject;
        }
        x -= kStep * d.value();
        ++applied[d.worker()];
        history.publish(x);
        d.advance();  // d's worker restarts from the model just published
        if ((x - 3.0) * (x - 3.0) / 2.0 < kTarget) d.end_stream();
        return rt::StreamVerdict::accept;
      },
      rt::StreamOptions{}.set_stale_bound(kMaxDelay).set_deadline(std::chrono::seconds(30)));

  std::printf("stream ended by %s after %.3f s at version %llu: x = %.4f (target 3)\n",
              rt::end_name(report.end), report.wall,
              static_cast<unsigned long long>(report.version), x);
  std::printf("tasks %zu: %zu applied, %zu thrown away (%zu stopped at delay %llu)\n",
              report.started, report.accepted, report.rejected, report.stale_stops,
              static_cast<unsigned long long>(kMaxDelay));
  std::printf("%-8s %8s %8s %10s %12s\n", "worker", "tasks", "applied", "discarded", "busy (s)");
  for (std::size_t i = 0; i < pool.size(); ++i) {
    std::printf("%-8zu %8zu %8zu %10zu %12.3f\n", i, report.tasks[i], applied[i], stale[i],
                report.busy[i]);
  }
  return 0;
}
