#include "ata/core/allocation.hpp"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <limits>
#include <vector>

#include "ata/core/error.hpp"

using Catch::Matchers::ContainsSubstring;

TEST_CASE("allocation counts tasks and support", "[core][allocation]") {
  ata::Allocation a(4);
  CHECK(a.size() == 4);
  CHECK(a.total() == 0);
  CHECK(a.support().empty());
  a.add(1, 3);
  a.add(3);
  CHECK(a.total() == 4);
  CHECK(a.at(1) == 3);
  CHECK(a[3] == 1);
  CHECK(a.support() == std::vector<std::size_t>{1, 3});
  a.clear();
  CHECK(a.total() == 0);
  CHECK(a.size() == 4);

  const ata::Allocation b(std::vector<std::size_t>{2, 0, 5});
  CHECK(b.total() == 7);
  CHECK(b == ata::Allocation(std::vector<std::size_t>{2, 0, 5}));
}

TEST_CASE("proxy loss is the largest a_i * lambda_i over the support", "[core][allocation]") {
  const ata::Allocation a(std::vector<std::size_t>{2, 0, 1});
  CHECK(a.proxy_loss(std::vector<double>{1.0, 5.0, 4.0}) == 4.0);
  CHECK(a.proxy_loss(std::vector<double>{3.0, 100.0, 4.0}) == 6.0);
  // A worker without tasks does not count, even with an infinite lambda.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(a.proxy_loss(std::vector<double>{1.0, inf, 1.0}) == 2.0);
  CHECK(ata::Allocation(2).proxy_loss(std::vector<double>{1.0, 1.0}) == 0.0);
}

TEST_CASE("allocation rejects bad input", "[core][allocation][errors]") {
  ata::Allocation a(2);
  REQUIRE_THROWS_MATCHES(a.add(2), ata::InvalidArgument,
                         Catch::Matchers::MessageMatches(ContainsSubstring("worker index 2")));
  REQUIRE_THROWS_AS(a.at(5), ata::InvalidArgument);
  REQUIRE_THROWS_WITH(a.proxy_loss(std::vector<double>{1.0}), ContainsSubstring("1 values"));
  REQUIRE_THROWS_WITH(a.proxy_loss(std::vector<double>{1.0, -1.0}), ContainsSubstring("lambda[1]"));
  REQUIRE_THROWS_WITH(a.proxy_loss(std::vector<double>{std::numeric_limits<double>::quiet_NaN(), 1.0}),
                      ContainsSubstring("nan"));
}
