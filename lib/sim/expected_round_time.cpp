#include "ata/sim/expected_round_time.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <unordered_map>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/core/solver.hpp"
#include "ata/models/random.hpp"
#include "core/checks.hpp"

namespace ata::sim {

namespace {

// log P(S <= t) when P = 0: exp() of it, or of any sum that contains it, is 0 in doubles.
constexpr double kLogZero = -1000.0;
// Quadrature: 8-point Gauss-Legendre panels, kBulkPanels on the bulk of the distributions and
// kTailPanels on their tails.
constexpr std::size_t kBulkPanels = 192;
constexpr std::size_t kTailPanels = 64;
constexpr std::array<double, 4> kGaussNodes{0.1834346424956498, 0.5255324099163290,
                                            0.7966664774136267, 0.9602898564975363};
constexpr std::array<double, 4> kGaussWeights{0.3626837833783620, 0.3137066458778873,
                                              0.2223810344533745, 0.1012285362903763};
constexpr std::size_t kMinPaths = 64;
// The lower bound processes this many quadrature nodes at a time (bounds its memory).
constexpr std::size_t kBoundChunk = 256;
// The most distribution values (cached at the quadrature's nodes, or Monte Carlo sums) a
// computation may hold: 400 MB.
constexpr double kMaxValues = 5e7;

// Throws when `values` exceeds kMaxValues, naming the cluster's size.
void require_room(double values, std::size_t workers, std::size_t batch) {
  if (values > kMaxValues) {
    throw InvalidArgument("EOFTA for n = " + std::to_string(workers) +
                          " workers and B = " + std::to_string(batch) + " tasks would hold about " +
                          ata::detail::to_text(values) + " values of distributions (at most " +
                          ata::detail::to_text(kMaxValues) +
                          "): it is a yardstick for clusters of up to a few thousand workers "
                          "and tasks");
  }
}

// ln Gamma(x), x > 0: Lanczos (g = 7, 9 terms), relative error ~1e-15. Not std::lgamma, which
// writes the global signgam and so is not thread-safe.
double log_gamma(double x) {
  static constexpr std::array<double, 9> c{
      0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
      771.32342877765313,   -176.61502916214059,   12.507343278686905,
      -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
  if (x < 0.5) {
    return std::log(std::numbers::pi / std::sin(std::numbers::pi * x)) - log_gamma(1.0 - x);
  }
  x -= 1.0;
  double a = c[0];
  for (std::size_t i = 1; i < c.size(); ++i) a += c[i] / (x + static_cast<double>(i));
  const double t = x + 7.5;
  return 0.5 * std::log(2.0 * std::numbers::pi) + (x + 0.5) * std::log(t) - t + std::log(a);
}

// log P(s, x), the regularised lower incomplete gamma function (the CDF at x of a gamma law of
// shape s and scale 1), floored at kLogZero. Series below s + 1, Lentz's continued fraction for
// the upper tail above (Numerical Recipes 6.2).
double log_gamma_p(double s, double x, double log_gamma_s) {
  if (!(x > 0.0)) return kLogZero;
  const double log_prefix = s * std::log(x) - x - log_gamma_s;
  if (x < s + 1.0) {
    double term = 1.0 / s;
    double sum = term;
    for (int n = 1; n < 100000; ++n) {
      term *= x / (s + n);
      sum += term;
      if (term < sum * 1e-17) break;
    }
    return std::max(log_prefix + std::log(sum), kLogZero);
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - s;
  double c = 1.0 / kTiny;
  double d = 1.0 / b;
  double h = d;
  for (int n = 1; n < 100000; ++n) {
    const double an = -n * (n - s);
    b += 2.0;
    d = an * d + b;
    if (std::abs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1.0) < 1e-16) break;
  }
  return std::log1p(-std::exp(log_prefix) * h);
}

// The law of S(a), the sum of a task times of one worker: exact for constant and gamma-family
// times (shift + Gamma(shape, scale) per task sums to a shift + Gamma(a shape, scale)),
// otherwise the empirical law of `paths` simulated sums, extended one draw per path at a time.
class SumLaw {
 public:
  SumLaw(const models::TimeModel& model, std::size_t worker, std::size_t paths, std::uint64_t seed)
      : model_(model), rng_(seed, worker), paths_(paths) {
    if (model.variance() == 0.0) {
      kind_ = Kind::constant;
      return;
    }
    switch (model.kind()) {
      case models::TimeModel::Kind::exponential:
        set_gamma(0.0, 1.0, model.mean());
        break;
      case models::TimeModel::Kind::shifted_exponential: {
        const double scale = std::sqrt(model.variance());
        set_gamma(std::max(model.mean() - scale, 0.0), 1.0, scale);
        break;
      }
      case models::TimeModel::Kind::gamma: {
        const double scale = model.variance() / model.mean();
        set_gamma(0.0, model.mean() / scale, scale);
        break;
      }
      default:
        kind_ = Kind::empirical;
        break;
    }
  }

  [[nodiscard]] bool exact() const noexcept { return kind_ != Kind::empirical; }

  // E[S(a)]: a times the model's mean, or the paths' average for the empirical law (so that
  // E[max_i S_i] >= max_i E[S_i] holds for the values this law gives).
  [[nodiscard]] double mean(std::size_t a) {
    if (kind_ != Kind::empirical) return static_cast<double>(a) * model_.mean();
    const auto& c = column(a);
    double sum = 0.0;
    for (const double x : c) sum += x;
    return sum / static_cast<double>(c.size());
  }

  // S(a) >= start(a) surely.
  [[nodiscard]] double start(std::size_t a) {
    switch (kind_) {
      case Kind::constant:
        return static_cast<double>(a) * model_.mean();
      case Kind::gamma:
        return static_cast<double>(a) * shift_;
      case Kind::empirical:
        break;
    }
    return column(a).front();
  }

  // P(S(a) > end(a)) < 1e-13 (empirical: no path above it).
  [[nodiscard]] double end(std::size_t a) {
    switch (kind_) {
      case Kind::constant:
        return static_cast<double>(a) * model_.mean();
      case Kind::gamma: {
        const double s = static_cast<double>(a) * shape_;
        return static_cast<double>(a) * shift_ + scale_ * (s + 8.0 * std::sqrt(s) + 32.0);
      }
      case Kind::empirical:
        break;
    }
    return column(a).back();
  }

  // Where most of S(a)'s mass lies: mean + 6 standard deviations.
  [[nodiscard]] double bulk_end(std::size_t a) {
    if (kind_ == Kind::empirical) {
      const auto& c = column(a);
      return c[c.size() - 1 - c.size() / 1000];  // the 99.9% quantile
    }
    const double k = static_cast<double>(a);
    return k * model_.mean() + 6.0 * std::sqrt(k * model_.variance());
  }

  // Points at which P(S(a) <= t) starts or turns steep relative to a quadrature panel, so that
  // panels never straddle a step or a narrow rise.
  void add_breaks(std::size_t a, double panel, std::vector<double>& out) {
    const double first = start(a);
    if (first > 0.0) out.push_back(first);
    if (kind_ != Kind::gamma) return;
    const double k = static_cast<double>(a);
    const double sd = scale_ * std::sqrt(k * shape_);
    if (sd >= panel) return;
    const double centre = k * model_.mean();
    for (const double z : {-8.0, -4.0, -2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0}) {
      const double t = centre + z * sd;
      if (t > first) out.push_back(t);
    }
  }

  // out[j] = log P(S(a) <= points[j]), points ascending, floored at kLogZero.
  void log_cdf(std::size_t a, std::span<const double> points, std::span<double> out) {
    const double k = static_cast<double>(a);
    switch (kind_) {
      case Kind::constant: {
        const double step = k * model_.mean();
        for (std::size_t j = 0; j < points.size(); ++j) out[j] = points[j] >= step ? 0.0 : kLogZero;
        return;
      }
      case Kind::gamma: {
        const double s = k * shape_;
        const double log_gamma_s = log_gamma(s);
        const double shift = k * shift_;
        const double last = end(a);
        for (std::size_t j = 0; j < points.size(); ++j) {
          out[j] =
              points[j] >= last ? 0.0 : log_gamma_p(s, (points[j] - shift) / scale_, log_gamma_s);
        }
        return;
      }
      case Kind::empirical:
        break;
    }
    const auto& c = column(a);
    const double paths = static_cast<double>(c.size());
    std::size_t below = 0;
    for (std::size_t j = 0; j < points.size(); ++j) {
      while (below < c.size() && c[below] <= points[j]) ++below;
      out[j] = below == 0 ? kLogZero : std::log(static_cast<double>(below) / paths);
    }
  }

 private:
  enum class Kind { constant, gamma, empirical };

  void set_gamma(double shift, double shape, double scale) {
    kind_ = Kind::gamma;
    shift_ = shift;
    shape_ = shape;
    scale_ = scale;
  }

  // The sorted sums of a draws on every path; path r's S(a + 1) is its S(a) plus one draw.
  const std::vector<double>& column(std::size_t a) {
    if (sums_.empty()) sums_.assign(paths_, 0.0);  // only empirical laws need them
    while (columns_.size() < a) {
      for (double& s : sums_) s += model_.sample(rng_);
      columns_.push_back(sums_);
      std::sort(columns_.back().begin(), columns_.back().end());
    }
    return columns_[a - 1];
  }

  models::TimeModel model_;
  Kind kind_ = Kind::empirical;
  double shift_ = 0.0;
  double shape_ = 0.0;
  double scale_ = 0.0;
  models::Rng rng_;
  std::size_t paths_;
  std::vector<double> sums_;
  std::vector<std::vector<double>> columns_;
};

struct Quadrature {
  std::vector<double> nodes;  // ascending
  std::vector<double> weights;
};

// Gauss-Legendre panels on [0, end]: kBulkPanels even ones up to `bulk`, kTailPanels beyond,
// each split at the breaks.
Quadrature make_quadrature(double bulk, double end, std::vector<double> breaks) {
  Quadrature q;
  if (!(end > 0.0)) return q;
  bulk = std::clamp(bulk, end / static_cast<double>(kBulkPanels + kTailPanels), end);
  for (std::size_t j = 0; j <= kBulkPanels; ++j) {
    breaks.push_back(bulk * static_cast<double>(j) / static_cast<double>(kBulkPanels));
  }
  for (std::size_t j = 1; j <= kTailPanels; ++j) {
    breaks.push_back(bulk +
                     (end - bulk) * static_cast<double>(j) / static_cast<double>(kTailPanels));
  }
  std::sort(breaks.begin(), breaks.end());
  const double resolution = end * 1e-12;
  std::vector<double> edges;
  for (const double b : breaks) {
    if (b < 0.0 || b > end) continue;
    if (edges.empty() || b - edges.back() > resolution) edges.push_back(b);
  }
  q.nodes.reserve(8 * edges.size());
  q.weights.reserve(8 * edges.size());
  for (std::size_t e = 1; e < edges.size(); ++e) {
    const double half = 0.5 * (edges[e] - edges[e - 1]);
    const double mid = 0.5 * (edges[e] + edges[e - 1]);
    for (std::size_t k = kGaussNodes.size(); k-- > 0;) {
      q.nodes.push_back(mid - half * kGaussNodes[k]);
      q.weights.push_back(half * kGaussWeights[k]);
    }
    for (std::size_t k = 0; k < kGaussNodes.size(); ++k) {
      q.nodes.push_back(mid + half * kGaussNodes[k]);
      q.weights.push_back(half * kGaussWeights[k]);
    }
  }
  return q;
}

// E[max_i S_i(a_i)] = integral of 1 - prod_i P(S_i <= t) on a quadrature that covers every
// allocation with a_i <= limit_i, with log P(S_i(a) <= t) cached per (worker, a) at its nodes.
class Evaluator {
 public:
  Evaluator(std::span<const models::TimeModel> workers, const RoundTimeOptions& options)
      : models_(workers), paths_(options.monte_carlo_paths) {
    laws_.reserve(workers.size());
    for (std::size_t i = 0; i < workers.size(); ++i) {
      laws_.emplace_back(workers[i], i, options.monte_carlo_paths, options.seed);
    }
  }

  // A new quadrature for the allocations with a_i <= limit[i] (of `batch` tasks); forgets the
  // cached values. Throws ata::InvalidArgument when they would take too much memory.
  void cover(std::span<const std::size_t> limit, std::size_t batch) {
    double pairs = 0.0;
    double sums = 0.0;  // Monte Carlo sums the cover generates
    for (std::size_t i = 0; i < laws_.size(); ++i) {
      pairs += static_cast<double>(limit[i]);
      if (!laws_[i].exact()) sums += static_cast<double>(limit[i]) * static_cast<double>(paths_);
    }
    require_room(sums + pairs * 8.0 * (kBulkPanels + kTailPanels), laws_.size(), batch);
    double end = 0.0;
    double bulk = 0.0;
    for (std::size_t i = 0; i < laws_.size(); ++i) {
      if (limit[i] == 0) continue;
      end = std::max(end, laws_[i].end(limit[i]));  // S(a) grows with a: the last covers all
      bulk = std::max(bulk, laws_[i].bulk_end(limit[i]));
    }
    std::vector<double> breaks;
    const double panel = std::min(bulk, end) / static_cast<double>(kBulkPanels);
    for (std::size_t i = 0; i < laws_.size(); ++i) {
      for (std::size_t a = 1; a <= limit[i]; ++a) laws_[i].add_breaks(a, panel, breaks);
    }
    quadrature_ = make_quadrature(bulk, end, std::move(breaks));
    require_room(sums + pairs * static_cast<double>(quadrature_.nodes.size()), laws_.size(), batch);
    stride_ = 1 + *std::max_element(limit.begin(), limit.end());
    cache_.clear();
  }

  [[nodiscard]] const Quadrature& quadrature() const noexcept { return quadrature_; }
  [[nodiscard]] SumLaw& law(std::size_t worker) { return laws_[worker]; }
  [[nodiscard]] const models::TimeModel& model(std::size_t worker) const { return models_[worker]; }
  [[nodiscard]] std::size_t paths() const noexcept { return paths_; }

  // log P(S_worker(a) <= t) at the nodes; all zeros for a = 0. a must be within the cover.
  [[nodiscard]] const std::vector<double>& log_cdf(std::size_t worker, std::size_t a) {
    if (a == 0) {
      zeros_.assign(quadrature_.nodes.size(), 0.0);
      return zeros_;
    }
    auto [it, inserted] = cache_.try_emplace(worker * stride_ + a);
    if (inserted) {
      it->second.resize(quadrature_.nodes.size());
      laws_[worker].log_cdf(a, quadrature_.nodes, it->second);
    }
    return it->second;
  }

  // total[k] = sum_i log P(S_i(a_i) <= t_k).
  void total_log(const Allocation& allocation, std::vector<double>& total) {
    total.assign(quadrature_.nodes.size(), 0.0);
    for (std::size_t i = 0; i < allocation.size(); ++i) {
      if (allocation[i] == 0) continue;
      const auto& l = log_cdf(i, allocation[i]);
      for (std::size_t k = 0; k < total.size(); ++k) total[k] += l[k];
    }
  }

  [[nodiscard]] double integrate(std::span<const double> total) const {
    double sum = 0.0;
    for (std::size_t k = 0; k < total.size(); ++k)
      sum -= quadrature_.weights[k] * std::expm1(total[k]);
    return sum;
  }

  [[nodiscard]] double value(const Allocation& allocation) {
    total_log(allocation, scratch_);
    return integrate(scratch_);
  }

 private:
  std::span<const models::TimeModel> models_;
  std::vector<SumLaw> laws_;
  std::size_t paths_;
  Quadrature quadrature_;
  std::size_t stride_ = 1;
  std::unordered_map<std::size_t, std::vector<double>> cache_;
  std::vector<double> zeros_;
  std::vector<double> scratch_;
};

void check_options(std::span<const models::TimeModel> workers, const RoundTimeOptions& options) {
  if (workers.empty()) throw InvalidArgument("a cluster needs at least one worker, got 0");
  if (options.monte_carlo_paths < kMinPaths) {
    throw InvalidArgument("monte_carlo_paths must be >= " + std::to_string(kMinPaths) + ", got " +
                          std::to_string(options.monte_carlo_paths));
  }
}

// limit[i] = the most tasks worker i can have in an allocation whose E[max_i S_i] is at most
// `value`: since E[max_i S_i] >= E[S_i(a_i)], those with E[S_i(a)] > value are out (a small
// slack absorbs the quadrature's rounding). Never below `keep`, the allocation that has `value`.
void set_limits(Evaluator& ev, const Allocation& keep, double value, std::size_t batch,
                std::vector<std::size_t>& limit) {
  const double most = value * (1.0 + 1e-6);
  // The Monte Carlo sums the search below generates, bounded from the laws' means (the
  // empirical means of 4,096 sums are within a few % of them).
  double sums = 0.0;
  for (std::size_t i = 0; i < limit.size(); ++i) {
    const models::TimeModel& model = ev.model(i);
    if (ev.law(i).exact() || model.mean() <= 0.0) continue;
    sums += std::min(static_cast<double>(batch), 1.1 * most / model.mean() + 1.0);
  }
  require_room(sums * static_cast<double>(ev.paths()), limit.size(), batch);
  for (std::size_t i = 0; i < limit.size(); ++i) {
    std::size_t a = 0;
    while (a < batch && ev.law(i).mean(a + 1) <= most) ++a;
    limit[i] = std::max(a, keep[i]);
  }
}

// `a` without worker `skip`: its tasks go to the other workers one at a time by the min-max
// rule (smallest (a_j + 1) mu_j, lowest index first), within the limits. Fewer tasks than
// a.total() when the limits leave no room.
Allocation drop(const Allocation& a, std::size_t skip, std::span<const double> means,
                std::span<const std::size_t> limit) {
  std::vector<std::size_t> tasks(a.begin(), a.end());
  tasks[skip] = 0;
  for (std::size_t t = 0; t < a[skip]; ++t) {
    std::size_t best = means.size();
    double best_level = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < means.size(); ++j) {
      if (j == skip || tasks[j] >= limit[j]) continue;
      const double level = static_cast<double>(tasks[j] + 1) * means[j];
      if (level < best_level) {
        best_level = level;
        best = j;
      }
    }
    if (best == means.size()) break;
    ++tasks[best];
  }
  return Allocation(std::move(tasks));
}

// Upper bound on max over allocations (a_i <= limit_i, sum = batch) of sum_i log P(S_i(a_i) <= t)
// at every node: each worker's log P(S_i(a) <= t), a = 0..limit_i, is replaced by its least
// concave majorant, whose marginal gains are non-increasing, so the batch's best choice is its
// `batch` largest marginal gains over all workers.
double lower_bound(Evaluator& ev, std::span<const std::size_t> limit, std::size_t batch) {
  const Quadrature& q = ev.quadrature();
  std::size_t longest = 0;
  for (const std::size_t l : limit) longest = std::max(longest, l);
  std::vector<std::vector<double>> logs;  // per (worker with limit > 0, a): the chunk's values
  std::vector<double> gains;
  std::vector<double> g(longest + 1);
  std::vector<std::size_t> hull;
  double bound = 0.0;
  for (std::size_t from = 0; from < q.nodes.size(); from += kBoundChunk) {
    const std::size_t to = std::min(q.nodes.size(), from + kBoundChunk);
    const std::span<const double> points(q.nodes.data() + from, to - from);
    logs.clear();
    for (std::size_t i = 0; i < limit.size(); ++i) {
      for (std::size_t a = 1; a <= limit[i]; ++a) {
        logs.emplace_back(points.size());
        ev.law(i).log_cdf(a, points, logs.back());
      }
    }
    for (std::size_t k = 0; k < points.size(); ++k) {
      gains.clear();
      std::size_t row = 0;
      for (std::size_t i = 0; i < limit.size(); ++i) {
        const std::size_t top = limit[i];
        if (top == 0) continue;
        g[0] = 0.0;
        for (std::size_t a = 1; a <= top; ++a) g[a] = logs[row++][k];
        // Upper hull of the points (a, g[a]), a = 0..top (monotone chain).
        hull.clear();
        for (std::size_t a = 0; a <= top; ++a) {
          while (hull.size() >= 2) {
            const std::size_t u = hull[hull.size() - 2];
            const std::size_t v = hull.back();
            // Drop v when it lies on or below the chord from u to a.
            const double lhs = (g[v] - g[u]) * static_cast<double>(a - u);
            const double rhs = (g[a] - g[u]) * static_cast<double>(v - u);
            if (lhs <= rhs) {
              hull.pop_back();
            } else {
              break;
            }
          }
          hull.push_back(a);
        }
        for (std::size_t h = 1; h < hull.size(); ++h) {
          const double slope =
              (g[hull[h]] - g[hull[h - 1]]) / static_cast<double>(hull[h] - hull[h - 1]);
          for (std::size_t s = hull[h - 1]; s < hull[h]; ++s) gains.push_back(slope);
        }
      }
      double best = kLogZero;
      if (gains.size() >= batch) {
        std::nth_element(gains.begin(), gains.begin() + static_cast<std::ptrdiff_t>(batch - 1),
                         gains.end(), std::greater<>());
        best = 0.0;
        for (std::size_t j = 0; j < batch; ++j) best += gains[j];
      }
      bound -= q.weights[from + k] * std::expm1(std::min(best, 0.0));
    }
  }
  return bound;
}

}  // namespace

double expected_round_time(std::span<const models::TimeModel> workers, const Allocation& allocation,
                           const RoundTimeOptions& options) {
  check_options(workers, options);
  if (allocation.size() != workers.size()) {
    throw InvalidArgument("the allocation has " + std::to_string(allocation.size()) +
                          " workers but the cluster has " + std::to_string(workers.size()));
  }
  if (allocation.total() == 0) return 0.0;
  Evaluator ev(workers, options);
  ev.cover(allocation.tasks(), allocation.total());
  return ev.value(allocation);
}

namespace {

// An upper estimate of the values Evaluator::cover(limit) holds, without Monte Carlo: the
// empirical laws' sums (limit x paths), plus every (worker, a) pair's values at the nodes,
// counted from the breaks the exact laws add and one per pair of an empirical law, on panels
// sized from the laws' means and variances. `workers` and `laws` match.
double cover_values(std::span<const models::TimeModel> workers, Evaluator& ev,
                    std::span<const std::size_t> limit) {
  double pairs = 0.0;
  double sums = 0.0;
  double bulk = 0.0;
  for (std::size_t i = 0; i < limit.size(); ++i) {
    if (limit[i] == 0) continue;
    const double k = static_cast<double>(limit[i]);
    pairs += k;
    if (!ev.law(i).exact()) sums += k * static_cast<double>(ev.paths());
    bulk = std::max(bulk, k * workers[i].mean() + 6.0 * std::sqrt(k * workers[i].variance()));
  }
  const double grid = pairs * 8.0 * (kBulkPanels + kTailPanels + 1);
  if (sums + grid > kMaxValues) return sums + grid;  // too many already: no need to count
  const double panel = bulk / static_cast<double>(kBulkPanels);
  double breaks = 0.0;
  std::vector<double> scratch;
  for (std::size_t i = 0; i < limit.size(); ++i) {
    for (std::size_t a = 1; a <= limit[i]; ++a) {
      if (!ev.law(i).exact()) {
        breaks += 1.0;
        continue;
      }
      scratch.clear();
      ev.law(i).add_breaks(a, panel, scratch);
      breaks += static_cast<double>(scratch.size());
    }
  }
  return sums + pairs * 8.0 * (kBulkPanels + kTailPanels + 1 + breaks);
}

std::string too_much(double values, std::size_t workers, std::size_t batch) {
  try {
    require_room(values, workers, batch);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return {};
}

}  // namespace

EoftaCost estimate_eofta_cost(std::span<const models::TimeModel> workers, std::size_t batch,
                              const RoundTimeOptions& options, double max_sweep_terms) {
  check_options(workers, options);
  if (batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  const std::size_t n = workers.size();
  EoftaCost cost;
  cost.max_values = kMaxValues;
  std::vector<double> means(n);
  for (std::size_t i = 0; i < n; ++i) means[i] = workers[i].mean();
  const Allocation ofta = solve_min_max(means, batch);
  Evaluator ev(workers, options);
  // 1. OFTA's own quadrature, then its expected round time, as solve_eofta() starts.
  cost.values = cover_values(workers, ev, ofta.tasks());
  if (cost.reason = too_much(cost.values, n, batch); !cost.fits()) return cost;
  double value = 0.0;
  try {
    ev.cover(ofta.tasks(), batch);
    value = ev.value(ofta);
  } catch (const InvalidArgument& e) {
    cost.reason = e.what();
    return cost;
  }
  // 2. The bounds on the tasks (set_limits(), with the laws' means for the empirical laws'
  // path averages) and the quadrature that covers them.
  const double most = value * (1.0 + 1e-6);
  std::vector<std::size_t> limit(n);
  double sums = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!ev.law(i).exact() && means[i] > 0.0) {
      sums += std::min(static_cast<double>(batch), 1.1 * most / means[i] + 1.0);
    }
    std::size_t a = 0;
    if (means[i] <= 0.0) {
      a = batch;
    } else {
      // Exact laws: E[S(a)] = a mu. Empirical ones: path averages within a few % of it.
      const double slack = ev.law(i).exact() ? 1.0 : 1.1;
      a = static_cast<std::size_t>(
          std::min(static_cast<double>(batch), std::floor(slack * most / means[i])));
    }
    limit[i] = std::max(a, ofta[i]);
  }
  sums *= static_cast<double>(options.monte_carlo_paths);
  if (cost.reason = too_much(sums, n, batch); !cost.fits()) {
    cost.values = std::max(cost.values, sums);
    return cost;
  }
  cost.values = std::max(cost.values, cover_values(workers, ev, limit));
  if (cost.reason = too_much(cost.values, n, batch); !cost.fits()) return cost;
  // 3. One sweep of the local search: every worker with tasks against every receiver.
  double pairs = 0.0;
  double receivers = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    pairs += static_cast<double>(limit[i]);
    if (ofta[i] + 1 <= limit[i] && static_cast<double>(ofta[i] + 1) * means[i] < value) {
      receivers += 1.0;
    }
  }
  const double nodes = cost.values / std::max(pairs, 1.0);
  cost.sweep_terms = nodes * static_cast<double>(ofta.support().size()) * receivers;
  if (cost.sweep_terms > max_sweep_terms) {
    cost.reason = "EOFTA for n = " + std::to_string(n) + " workers and B = " +
                  std::to_string(batch) + " tasks would take about " +
                  ata::detail::to_text(cost.sweep_terms) +
                  " terms per sweep of its search (at most " + ata::detail::to_text(max_sweep_terms) +
                  ")";
  }
  return cost;
}

EoftaSolution solve_eofta(std::span<const models::TimeModel> workers, std::size_t batch,
                          const RoundTimeOptions& options) {
  check_options(workers, options);
  if (batch < 1) throw InvalidArgument("batch size B must be >= 1, got 0");
  const std::size_t n = workers.size();
  std::vector<double> means(n);
  for (std::size_t i = 0; i < n; ++i) means[i] = workers[i].mean();

  EoftaSolution result;
  const Allocation ofta = solve_min_max(means, batch);
  Evaluator ev(workers, options);
  ev.cover(ofta.tasks(), batch);
  // E[max_i S_i] >= max_i a_i mu_i, so an allocation with a_i mu_i above OFTA's value cannot
  // beat OFTA: that bounds every worker's tasks.
  std::vector<std::size_t> limit(n);
  set_limits(ev, ofta, ev.value(ofta), batch, limit);
  ev.cover(limit, batch);

  Allocation best = ofta;
  double best_value = ev.value(ofta);
  result.ofta_expected_round_time = best_value;

  // OFTA on the j fastest workers, for every j below the number OFTA uses.
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return means[x] < means[y]; });
  const std::size_t used = ofta.support().size();
  std::vector<double> fastest;
  for (std::size_t j = 1; j < used; ++j) {
    fastest.assign(j, 0.0);
    for (std::size_t r = 0; r < j; ++r) fastest[r] = means[order[r]];
    const Allocation sub = solve_min_max(fastest, batch);
    Allocation candidate(n);
    bool within = true;
    for (std::size_t r = 0; r < j; ++r) {
      candidate.add(order[r], sub[r]);
      within = within && sub[r] <= limit[order[r]];
    }
    if (!within) continue;
    const double v = ev.value(candidate);
    if (v < best_value) {
      best_value = v;
      best = candidate;
    }
  }

  // Local search: the best single-task move or worker drop, while it improves.
  std::vector<double> total;
  std::vector<double> base;
  std::vector<std::vector<double>> up(n);
  std::vector<std::size_t> receivers;
  const std::size_t nodes = ev.quadrature().nodes.size();
  const auto& weights = ev.quadrature().weights;
  for (;;) {
    ev.total_log(best, total);
    receivers.clear();
    for (std::size_t j = 0; j < n; ++j) {
      if (best[j] + 1 > limit[j] || static_cast<double>(best[j] + 1) * means[j] >= best_value)
        continue;
      receivers.push_back(j);
      const auto& now = ev.log_cdf(j, best[j]);
      const auto& next = ev.log_cdf(j, best[j] + 1);
      up[j].resize(nodes);
      for (std::size_t k = 0; k < nodes; ++k) up[j][k] = next[k] - now[k];
    }
    // The best move: (from, to) moves one task; (from, n) drops worker `from`.
    std::size_t from = n;
    std::size_t to = n;
    double candidate_value = best_value;
    for (std::size_t i = 0; i < n; ++i) {
      if (best[i] == 0) continue;
      const auto& now = ev.log_cdf(i, best[i]);
      const auto& fewer = ev.log_cdf(i, best[i] - 1);
      base.resize(nodes);
      for (std::size_t k = 0; k < nodes; ++k) base[k] = total[k] + fewer[k] - now[k];
      for (const std::size_t j : receivers) {
        if (j == i) continue;
        // Every term is >= 0, so a partial sum above the best so far ends the candidate.
        double v = 0.0;
        const auto& u = up[j];
        for (std::size_t k = 0; k < nodes && v < candidate_value; ++k) {
          v -= weights[k] * std::expm1(base[k] + u[k]);
        }
        if (v < candidate_value) {
          candidate_value = v;
          from = i;
          to = j;
        }
      }
      const Allocation dropped = drop(best, i, means, limit);
      if (dropped.total() == batch) {
        const double v = ev.value(dropped);
        if (v < candidate_value) {
          candidate_value = v;
          from = i;
          to = n;
        }
      }
    }
    if (from == n || !(candidate_value < best_value * (1.0 - 1e-12))) break;
    if (to == n) {
      best = drop(best, from, means, limit);
    } else {
      std::vector<std::size_t> tasks(best.begin(), best.end());
      --tasks[from];
      ++tasks[to];
      best = Allocation(std::move(tasks));
    }
    best_value = candidate_value;
    ++result.moves;
  }

  // The optimum has E[S_i] <= its value <= best_value: the lower bound ranges over those.
  set_limits(ev, best, best_value, batch, limit);
  for (std::size_t i = 0; i < n; ++i) {
    if (limit[i] > 0 && !ev.law(i).exact()) result.exact = false;
  }
  result.lower_bound = std::min(lower_bound(ev, limit, batch), best_value);
  result.allocation = std::move(best);
  result.expected_round_time = best_value;
  return result;
}

}  // namespace ata::sim
