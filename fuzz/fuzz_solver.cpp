// Fuzz target: the min-max solver (ata::MinMaxSolver), without and with offsets.
//
// Input: the batch size B in the first 8 bytes (little-endian), then 8-byte IEEE doubles as
// stored, so NaN, infinities, negatives, -0.0, subnormals and huge values occur. Two solves:
// - solve(scores, B) with every double a score;
// - solve(scores, offsets, B) with the doubles read as (score, offset) pairs; an odd count
//   leaves the last score without an offset, which must be refused.
// Checks, for each:
// - B = 0, no worker, a score or offset that is NaN, infinite or negative, or offsets of
//   another size: ata::InvalidArgument, and no other exception for any input;
// - otherwise n entries summing to B; with a zero score, only zero-score workers get tasks, as
//   evenly as possible; with positive scores, exactly the greedy's allocation (the certificate
//   below for any B up to 2^53, the naive O(n B) greedy itself when n B is small), and the same
//   allocation again from the same solver reusing its output; all-zero offsets give exactly
//   the allocation without offsets.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/core/solver.hpp"
#include "fuzz_support.hpp"
#include "support/reference_solvers.hpp"

namespace {

using ata::fuzz::finding;

// Up to here every task count is exact as a double, so the greedy's products are comparable.
constexpr std::uint64_t kExactCounts = std::uint64_t{1} << 53;
// Largest n B for which the naive greedy is run as the reference.
constexpr std::uint64_t kNaiveWork = std::uint64_t{1} << 16;

// Worker i's j-th task costs q_i + j s_i (q_i = 0 without offsets): the greedy takes these
// pairs in increasing order, lower index first on equal cost.
struct Pair {
  double cost;
  std::size_t worker;
  [[nodiscard]] bool before(const Pair& other) const {
    return cost < other.cost || (cost == other.cost && worker < other.worker);
  }
};

// The greedy's allocation is the B earliest pairs: no pair left out may come before a pair
// taken. Each worker's costs only grow with j, so its next pair is its earliest left out.
void check_greedy_order(std::span<const double> scores, std::span<const double> offsets,
                        const ata::Allocation& a) {
  const auto cost = [&](std::size_t i, std::size_t j) {
    return (offsets.empty() ? 0.0 : offsets[i]) + static_cast<double>(j) * scores[i];
  };
  std::optional<Pair> last_taken;
  std::optional<Pair> first_left;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (a[i] > 0) {
      const Pair taken{cost(i, a[i]), i};
      if (!last_taken || last_taken->before(taken)) last_taken = taken;
    }
    const Pair left{cost(i, a[i] + 1), i};
    if (!first_left || left.before(*first_left)) first_left = left;
  }
  if (last_taken && first_left->before(*last_taken)) {
    finding("not the greedy allocation: worker " + std::to_string(first_left->worker) +
            "'s next task (cost " + std::to_string(first_left->cost) + ") comes before worker " +
            std::to_string(last_taken->worker) + "'s last (cost " +
            std::to_string(last_taken->cost) + ")");
  }
}

void check_sum(const ata::Allocation& a, std::size_t workers, std::uint64_t batch) {
  if (a.size() != workers) {
    finding(std::to_string(a.size()) + " entries for " + std::to_string(workers) + " workers");
  }
  std::uint64_t sum = 0;
  for (const std::size_t tasks : a) {
    if (tasks > batch - sum) finding("more than B = " + std::to_string(batch) + " tasks");
    sum += tasks;
  }
  if (sum != batch || a.total() != batch) {
    finding("sum " + std::to_string(sum) + " (total() " + std::to_string(a.total()) +
            ") for B = " + std::to_string(batch));
  }
}

// Zero scores: the loss is 0 with tasks only on zero-score workers, spread round-robin.
void check_zero_spread(std::span<const double> scores, const ata::Allocation& a) {
  std::optional<std::size_t> fewest;
  std::optional<std::size_t> most;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] != 0.0) {
      if (a[i] != 0) finding("worker " + std::to_string(i) + " with a positive score got tasks");
      continue;
    }
    if (!fewest || a[i] < *fewest) fewest = a[i];
    if (!most || a[i] > *most) most = a[i];
  }
  if (*most - *fewest > 1) {
    finding("zero-score workers got between " + std::to_string(*fewest) + " and " +
            std::to_string(*most) + " tasks");
  }
}

bool usable(double value) { return std::isfinite(value) && value >= 0.0; }

// The checks common to both solves once `a` came back for valid input: size and sum, zero
// scores spread, the greedy's allocation. True when the positive-score checks ran.
bool check_allocation(std::span<const double> scores, std::span<const double> offsets,
                      std::uint64_t batch, const ata::Allocation& a) {
  check_sum(a, scores.size(), batch);
  if (std::any_of(scores.begin(), scores.end(), [](double s) { return s == 0.0; })) {
    check_zero_spread(scores, a);
    return false;
  }
  if (batch <= kExactCounts) check_greedy_order(scores, offsets, a);
  if (batch <= kNaiveWork / scores.size()) {
    const std::vector<std::size_t> reference = ata::testing::naive_greedy(scores, batch, offsets);
    if (!std::equal(reference.begin(), reference.end(), a.begin(), a.end())) {
      finding(std::string("differs from the naive greedy") +
              (offsets.empty() ? "" : " with offsets"));
    }
  }
  return true;
}

void check_plain(std::span<const double> scores, std::uint64_t batch) {
  const bool valid =
      batch > 0 && !scores.empty() && std::all_of(scores.begin(), scores.end(), usable);
  ata::MinMaxSolver solver;
  std::optional<ata::Allocation> result;
  try {
    result = solver.solve(scores, batch);
  } catch (const ata::InvalidArgument& e) {
    if (valid) finding(std::string("valid input rejected: ") + e.what());
    return;
  } catch (const std::exception& e) {
    finding("solve threw " + ata::fuzz::type_name(e) + ": " + e.what());
  }
  if (!valid) finding("invalid input accepted");
  if (!check_allocation(scores, {}, batch, *result)) return;
  ata::Allocation again = *result;
  solver.solve(scores, batch, again);
  if (again != *result) finding("a second solve() reusing its output differs");
}

// `pairs`: score, offset, score, offset, ...; an odd count leaves one score without offset.
void check_with_offsets(std::span<const double> pairs, std::uint64_t batch) {
  std::vector<double> scores;
  std::vector<double> offsets;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    (k % 2 == 0 ? scores : offsets).push_back(pairs[k]);
  }
  const bool valid = batch > 0 && !scores.empty() && scores.size() == offsets.size() &&
                     std::all_of(scores.begin(), scores.end(), usable) &&
                     std::all_of(offsets.begin(), offsets.end(), usable);
  ata::MinMaxSolver solver;
  ata::Allocation a;
  try {
    solver.solve(scores, offsets, batch, a);
  } catch (const ata::InvalidArgument& e) {
    if (valid) finding(std::string("valid input rejected with offsets: ") + e.what());
    return;
  } catch (const std::exception& e) {
    finding("solve with offsets threw " + ata::fuzz::type_name(e) + ": " + e.what());
  }
  if (!valid) finding("invalid input accepted with offsets");
  if (!check_allocation(scores, offsets, batch, a)) return;
  ata::Allocation again = a;
  solver.solve(scores, offsets, batch, again);
  if (again != a) finding("a second solve() with offsets reusing its output differs");
  if (std::all_of(offsets.begin(), offsets.end(), [](double q) { return q == 0.0; }) &&
      a != ata::MinMaxSolver{}.solve(scores, batch)) {
    finding("all-zero offsets differ from solve() without offsets");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint64_t batch = 0;
  if (size > 0) std::memcpy(&batch, data, std::min(size, sizeof batch));
  std::vector<double> doubles(size > sizeof batch ? (size - sizeof batch) / sizeof(double) : 0);
  if (!doubles.empty()) {
    std::memcpy(doubles.data(), data + sizeof batch, doubles.size() * sizeof(double));
  }
  check_plain(doubles, batch);
  check_with_offsets(doubles, batch);
  return 0;
}
