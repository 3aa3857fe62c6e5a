// Quick start: ATA learns the speeds of five workers it has never seen and converges to the
// allocation an oracle that knows the mean task times would choose.
//
// Each worker's task time is exponential with the mean below; every round needs B = 10 results.
// Round time is the slowest worker's busy time; it is compared with OFTA (the oracle).
#include <ata/ata.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

namespace {

// Plays `rounds` rounds of `policy` and returns the summed round times.
double play(ata::Policy& policy, const std::vector<double>& means, std::size_t batch,
            std::size_t rounds, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  double total = 0.0;
  ata::Allocation a;
  for (std::size_t k = 0; k < rounds; ++k) {
    policy.allocate(batch, a);
    double round_time = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      double busy = 0.0;
      for (std::size_t t = 0; t < a[i]; ++t) {
        const double seconds = std::exponential_distribution<double>(1.0 / means[i])(rng);
        policy.observe(i, seconds);
        busy += seconds;
      }
      round_time = std::max(round_time, busy);
    }
    total += round_time;
  }
  return total;
}

void print_allocation(const char* label, const ata::Allocation& a) {
  std::printf("%-25s", label);
  for (std::size_t tasks : a) std::printf(" %5zu", tasks);
  std::printf("\n");
}

}  // namespace

int main() {
  const std::vector<double> means{1.0, 1.7, 2.9, 4.3, 7.1};
  const std::size_t batch = 10;
  const std::size_t rounds = 5000;

  ata::OraclePolicy oracle(means);
  ata::AtaEmpiricalPolicy learner(means.size(), /*eta=*/1.0);
  const double oracle_time = play(oracle, means, batch, rounds, 1);
  const double learner_time = play(learner, means, batch, rounds, 1);

  std::printf("5 workers, mean task times 1.0 1.7 2.9 4.3 7.1; B = %zu; %zu rounds\n", batch, rounds);
  print_allocation("oracle (OFTA):", oracle.allocate(batch));
  print_allocation("learned (ATA-Empirical):", learner.allocate(batch));
  std::printf("%-25s", "learned mean times:");
  for (std::size_t i = 0; i < means.size(); ++i) std::printf(" %5.2f", learner.stats(i).mean());
  std::printf("\ntotal round time: OFTA %.0f, ATA-Empirical %.0f (ratio %.3f)\n", oracle_time,
              learner_time, learner_time / oracle_time);
  return 0;
}
