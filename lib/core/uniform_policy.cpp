#include "ata/core/uniform_policy.hpp"

#include <numeric>

namespace ata {

UniformPolicy::UniformPolicy(std::size_t workers) : Policy(workers), everyone_(workers) {
  std::iota(everyone_.begin(), everyone_.end(), std::size_t{0});
}

void UniformPolicy::choose(std::size_t batch, Allocation& out) {
  spread_.spread(everyone_, batch, out);
}

}  // namespace ata
