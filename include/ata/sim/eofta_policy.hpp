#pragma once
/// @file
/// EOFTA as a policy: the fixed allocation minimising the expected round time, played every round.

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "ata/core/policy.hpp"
#include "ata/models/time_model.hpp"
#include "ata/sim/expected_round_time.hpp"

namespace ata::sim {

/// EOFTA ("eofta"), a yardstick beside OFTA: OFTA minimises the proxy max_i a_i mu_i with the
/// true means; EOFTA minimises the expected round time E[max_i S_i] with the true laws
/// (solve_eofta()), so it counts the spread of the times. Like OFTA it needs knowledge nobody
/// has in practice; the simulator has it.
///
/// @code
/// ata::models::Scenario cluster = ata::models::make_preset("sqrt", 51);
/// ata::sim::EoftaPolicy eofta({cluster.models().begin(), cluster.models().end()});
/// ata::Allocation a = eofta.allocate(23);  // solved once, then the same every round
/// @endcode
///
/// The allocation is solved at the first allocate() of a batch size and kept; set_models()
/// (which ata::sim::Simulation calls when a scenario's WorkerChange takes effect) makes the next
/// allocate() solve again for the new laws.
///
/// Not thread-safe (see Policy).
class EoftaPolicy final : public Policy {
 public:
  /// One law per worker. Throws ata::InvalidArgument for no workers or options.monte_carlo_paths
  /// < 64.
  explicit EoftaPolicy(std::vector<models::TimeModel> workers,
                       const RoundTimeOptions& options = {});

  [[nodiscard]] std::string_view name() const noexcept override { return "eofta"; }
  /// Replaces the laws (one per worker, else ata::InvalidArgument and nothing changes).
  void set_models(std::vector<models::TimeModel> workers);
  /// The last solution (empty before the first allocate() and after set_models()).
  [[nodiscard]] const std::optional<EoftaSolution>& solution() const noexcept { return solution_; }

 private:
  void choose(std::size_t batch, Allocation& out) override;

  std::vector<models::TimeModel> workers_;
  RoundTimeOptions options_;
  std::optional<EoftaSolution> solution_;
};

}  // namespace ata::sim
