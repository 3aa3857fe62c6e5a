#include "ata/core/confidence.hpp"

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <limits>

#include "ata/core/error.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

// Expected values computed by hand (Python, double precision) from width = sqrt(L/K) + L/K,
// L = ln(2 k^2) (include/ata/core/confidence.hpp):
// round 1: L = ln 2, K = 4: width = sqrt(ln2/4) + ln2/4 = 0.5895641007188351
// round 10: L = ln 200 = 5.298317366548036, K = 100: width = 0.2831639149656169
TEST_CASE("confidence widths and bounds match hand-computed values", "[core][confidence]") {
  CHECK(ata::confidence_log(1) == Approx(std::log(2.0)));
  CHECK(ata::confidence_log(10) == Approx(5.298317366548036));
  CHECK(ata::confidence_width(4, 1) == Approx(0.5895641007188351));
  CHECK(ata::confidence_width(100, 10) == Approx(0.2831639149656169));
  CHECK(std::isinf(ata::confidence_width(0, 3)));

  CHECK(ata::ata_lower_bound(10.0, 4, 1, 1.0) == Approx(8.82087179856233));
  CHECK(ata::ata_lower_bound(3.0, 100, 10, 0.5) == Approx(2.716836085034383));
  CHECK(ata::ata_lower_bound(1.0, 4, 1, 1.0) == 0.0);  // clipped at 0
  CHECK(ata::ata_lower_bound(5.0, 0, 7, 1.0) == 0.0);  // never sampled

  CHECK(ata::ata_empirical_lower_bound(10.0, 4, 1, 0.5) == Approx(4.104358992811648));
  CHECK(ata::ata_empirical_lower_bound(3.0, 100, 10, 0.25) == Approx(2.575254127551575));
  CHECK(ata::ata_empirical_lower_bound(10.0, 4, 1, 1.0) == 0.0);
  CHECK(ata::ata_empirical_lower_bound(5.0, 0, 7, 1.0) == 0.0);
}

TEST_CASE("confidence functions reject bad parameters", "[core][confidence][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_WITH(ata::confidence_log(0), ContainsSubstring("round"));
  REQUIRE_THROWS_WITH(ata::ata_lower_bound(1.0, 3, 2, 0.0), ContainsSubstring("alpha"));
  REQUIRE_THROWS_WITH(ata::ata_lower_bound(1.0, 3, 2, -1.0), ContainsSubstring("-1"));
  REQUIRE_THROWS_WITH(ata::ata_lower_bound(nan, 3, 2, 1.0), ContainsSubstring("mean"));
  REQUIRE_THROWS_WITH(ata::ata_empirical_lower_bound(1.0, 3, 2, 0.0), ContainsSubstring("eta"));
  REQUIRE_THROWS_AS(ata::ata_empirical_lower_bound(1.0, 3, 2, nan), ata::InvalidArgument);
}
