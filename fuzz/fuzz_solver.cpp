// Fuzz target: the min-max solver (ata::MinMaxSolver).
//
// Input: the batch size B in the first 8 bytes (little-endian), then one score per 8 bytes, an
// IEEE double as stored, so NaN, infinities, negatives, -0.0, subnormals and huge values occur.
// Checks:
// - B = 0, no worker, or a score that is NaN, infinite or negative: ata::InvalidArgument, and
//   no other exception for any input;
// - otherwise n entries summing to B; with a zero score, only zero-score workers get tasks, as
//   evenly as possible; with positive scores, exactly the greedy's allocation (the certificate
//   below for any B up to 2^53, the naive O(n B) greedy itself when n B is small), and the same
//   allocation again from the same solver reusing its output.

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

// Worker `worker`'s j-th task costs j s_i: the greedy takes these pairs in increasing order,
// lower index first on equal cost.
struct Pair {
  double cost;
  std::size_t worker;
  [[nodiscard]] bool before(const Pair& other) const {
    return cost < other.cost || (cost == other.cost && worker < other.worker);
  }
};

// The greedy's allocation is the B earliest pairs: no pair left out may come before a pair
// taken. Each worker's costs only grow with j, so its next pair is its earliest left out.
void check_greedy_order(std::span<const double> scores, const ata::Allocation& a) {
  std::optional<Pair> last_taken;
  std::optional<Pair> first_left;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (a[i] > 0) {
      const Pair taken{static_cast<double>(a[i]) * scores[i], i};
      if (!last_taken || last_taken->before(taken)) last_taken = taken;
    }
    const Pair left{static_cast<double>(a[i] + 1) * scores[i], i};
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::uint64_t batch = 0;
  if (size > 0) std::memcpy(&batch, data, std::min(size, sizeof batch));
  std::vector<double> scores(size > sizeof batch ? (size - sizeof batch) / sizeof(double) : 0);
  if (!scores.empty()) {
    std::memcpy(scores.data(), data + sizeof batch, scores.size() * sizeof(double));
  }

  bool valid = batch > 0 && !scores.empty();
  bool any_zero = false;
  for (const double s : scores) {
    valid = valid && std::isfinite(s) && s >= 0.0;
    any_zero = any_zero || s == 0.0;
  }

  ata::MinMaxSolver solver;
  std::optional<ata::Allocation> result;
  try {
    result = solver.solve(scores, batch);
  } catch (const ata::InvalidArgument& e) {
    if (valid) finding(std::string("valid input rejected: ") + e.what());
    return 0;
  } catch (const std::exception& e) {
    finding("solve threw " + ata::fuzz::type_name(e) + ": " + e.what());
  }
  if (!valid) finding("invalid input accepted");

  const ata::Allocation& a = *result;
  check_sum(a, scores.size(), batch);
  if (any_zero) {
    check_zero_spread(scores, a);
    return 0;
  }
  if (batch <= kExactCounts) check_greedy_order(scores, a);
  if (batch <= kNaiveWork / scores.size()) {
    const std::vector<std::size_t> reference = ata::testing::naive_greedy(scores, batch);
    if (!std::equal(reference.begin(), reference.end(), a.begin(), a.end())) {
      finding("differs from the naive greedy");
    }
  }
  ata::Allocation again = a;
  solver.solve(scores, batch, again);
  if (again != a) finding("a second solve() reusing its output differs");
  return 0;
}
