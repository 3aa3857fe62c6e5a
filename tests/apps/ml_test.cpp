#include <algorithm>
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ata/core/error.hpp"
#include "dataset.hpp"
#include "problems.hpp"

using Catch::Approx;
using Catch::Matchers::ContainsSubstring;

namespace {

// Central differences of a scalar function of x, coordinate by coordinate.
template <typename F>
std::vector<double> finite_difference(F f, std::vector<double> x) {
  std::vector<double> g(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double h = 1e-6 * std::max(1.0, std::abs(x[k]));
    const double keep = x[k];
    x[k] = keep + h;
    const double up = f(x);
    x[k] = keep - h;
    const double down = f(x);
    x[k] = keep;
    g[k] = (up - down) / (2.0 * h);
  }
  return g;
}

std::vector<double> random_point(std::size_t d, std::uint64_t seed) {
  ata::models::Rng rng(seed);
  std::vector<double> x(d);
  for (double& v : x) v = ata::models::standard_normal(rng);
  return x;
}

}  // namespace

TEST_CASE("gradients match finite differences", "[apps][ml]") {
  const ata::ml::LogisticProblem logistic(ata::ml::make_classification(40, 6, 1), 0.01, "synthetic");
  const ata::ml::LeastSquaresProblem squares(ata::ml::make_regression(40, 6, 2), "synthetic");
  const auto x = random_point(6, 3);
  std::vector<double> g(6);
  for (std::size_t j : {0u, 7u, 39u}) {
    logistic.sample_gradient(j, x, g);
    const auto fd = finite_difference([&](const std::vector<double>& y) { return logistic.sample_loss(j, y); }, x);
    for (std::size_t k = 0; k < 6; ++k) CHECK(g[k] == Approx(fd[k]).margin(1e-7));
    squares.sample_gradient(j, x, g);
    const auto fd2 = finite_difference([&](const std::vector<double>& y) { return squares.sample_loss(j, y); }, x);
    for (std::size_t k = 0; k < 6; ++k) CHECK(g[k] == Approx(fd2[k]).margin(1e-6));
  }
  const ata::ml::QuadraticProblem quadratic(8, 0.0);  // no noise: the exact gradient
  ata::models::Rng rng(4);
  const auto y = random_point(8, 5);
  std::vector<double> gq(8);
  quadratic.stochastic_gradient(y, rng, gq);
  const auto fdq = finite_difference([&](const std::vector<double>& z) { return quadratic.loss(z); }, y);
  for (std::size_t k = 0; k < 8; ++k) CHECK(gq[k] == Approx(fdq[k]).margin(1e-7));
}

TEST_CASE("proxes satisfy their optimality condition", "[apps][ml]") {
  // y = prox_{g f_j}(x)  <=>  (y - x) / g + grad f_j(y) = 0
  const ata::ml::LogisticProblem logistic(ata::ml::make_classification(30, 5, 6), 0.05, "synthetic");
  const ata::ml::LeastSquaresProblem squares(ata::ml::make_regression(30, 5, 7), "synthetic");
  const auto x = random_point(5, 8);
  std::vector<double> y(5);
  std::vector<double> g(5);
  for (double step : {1e-3, 0.5, 50.0}) {
    for (std::size_t j : {0u, 11u, 29u}) {
      logistic.sample_prox(j, x, step, y);
      logistic.sample_gradient(j, y, g);
      for (std::size_t k = 0; k < 5; ++k) CHECK((y[k] - x[k]) / step + g[k] == Approx(0.0).margin(1e-9));
      squares.sample_prox(j, x, step, y);
      squares.sample_gradient(j, y, g);
      for (std::size_t k = 0; k < 5; ++k) CHECK((y[k] - x[k]) / step + g[k] == Approx(0.0).margin(1e-9));
    }
  }
}

TEST_CASE("the logistic prox root solves t = u + v sigma(-t) at extremes", "[apps][ml]") {
  for (double u : {-60.0, -3.0, 0.0, 2.5, 60.0}) {
    for (double v : {0.0, 1e-6, 1.0, 1e3}) {
      const double t = ata::ml::logistic_prox_root(u, v);
      const double s = 1.0 / (1.0 + std::exp(t));
      INFO("u=" << u << " v=" << v);
      CHECK(t >= u);
      CHECK(t <= u + v);
      CHECK(t - u - v * s == Approx(0.0).margin(1e-10 * std::max(1.0, v)));
    }
  }
}

TEST_CASE("optimal losses are the minima", "[apps][ml]") {
  const ata::ml::LogisticProblem logistic(ata::ml::make_classification(60, 4, 9), 0.01, "synthetic");
  const auto x = random_point(4, 10);
  CHECK(logistic.optimal_loss() < logistic.loss(x));
  CHECK(logistic.optimal_loss() < logistic.loss(logistic.initial_point()));
  const ata::ml::QuadraticProblem quadratic(20, 1e-3);
  CHECK(quadratic.optimal_loss() < quadratic.loss(quadratic.initial_point()));
  CHECK(quadratic.optimal_loss() == Approx(-0.125 * 20.0 / 21.0));  // -b'A^{-1}b / 2 for this A
}

TEST_CASE("the LIBSVM loader reads heart_scale", "[apps][ml][libsvm]") {
  auto data = ata::ml::load_libsvm(ATA_TEST_DATA_DIR "/heart_scale");
  CHECK(data.rows == 270);
  CHECK(data.cols == 13);
  CHECK(data.targets[0] == 1.0);
  CHECK(data.row(0)[0] == Approx(0.708333));
  CHECK(data.row(0)[10] == 0.0);  // feature 11 is absent on the first line
  ata::ml::as_plus_minus_one(data, "heart_scale");
  const ata::ml::LogisticProblem problem(std::move(data), 1e-3, "heart_scale");
  CHECK(problem.optimal_loss() < std::log(2.0));  // better than x = 0
}

TEST_CASE("the LIBSVM loader explains what is wrong", "[apps][ml][libsvm][errors]") {
  const auto fails = [](const char* text, const char* expected) {
    INFO(text);
    REQUIRE_THROWS_WITH(ata::ml::parse_libsvm(text, "t.svm"), ContainsSubstring("t.svm") && ContainsSubstring(expected));
  };
  fails("+1 1:0.5 2\n", "line 1: expected index:value, got '2'");
  fails("+1 1:0.5\n-1 0:1\n", "line 2: feature index 0");
  fails("+1 1:abc\n", "bad feature value 'abc'");
  fails("one 1:1\n", "bad label 'one'");
  fails("+1 x:1\n", "bad feature index 'x'");
  fails("+1 3:1 2:1\n", "indices must increase");
  fails("+1 1:nan\n", "bad feature value 'nan'");
  fails("", "no data");
  fails("# only a comment\n\n", "no data");
  fails("+1\n-1\n", "no features");
  REQUIRE_THROWS_WITH(ata::ml::load_libsvm("/nonexistent.svm"), ContainsSubstring("cannot read LIBSVM file"));
  auto three = ata::ml::parse_libsvm("1 1:1\n2 1:1\n3 1:1\n", "three.svm");
  REQUIRE_THROWS_WITH(ata::ml::as_plus_minus_one(three, "three.svm"), ContainsSubstring("exactly 2 labels, got 3"));
  const auto comments = ata::ml::parse_libsvm("# header\n+1 1:1 # trailing\n\n-1 2:3\n", "c.svm");
  CHECK(comments.rows == 2);
  CHECK(comments.cols == 2);
  CHECK(comments.row(1)[1] == 3.0);
}

TEST_CASE("problems reject bad settings", "[apps][ml][errors]") {
  REQUIRE_THROWS_WITH(ata::ml::QuadraticProblem(0, 1e-3), ContainsSubstring("dimension"));
  REQUIRE_THROWS_WITH(ata::ml::LogisticProblem(ata::ml::make_classification(5, 2, 1), 0.0, "s"),
                      ContainsSubstring("l2 > 0"));
  auto data = ata::ml::make_regression(5, 2, 1);
  REQUIRE_THROWS_WITH(ata::ml::LogisticProblem(data, 0.1, "s"), ContainsSubstring("labels +-1"));
  const ata::ml::QuadraticProblem quadratic(3, 0.0);
  ata::models::Rng rng(1);
  std::vector<double> out(3);
  REQUIRE_THROWS_WITH(quadratic.stochastic_prox(quadratic.initial_point(), 1.0, rng, out), ContainsSubstring("no stochastic prox"));
}

namespace {

std::string libsvm_error(const std::string& text) {
  try {
    (void)ata::ml::parse_libsvm(text, "t.svm");
  } catch (const ata::InvalidArgument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("the LIBSVM loader sizes the data before allocating it", "[apps][libsvm][errors]") {
  // rows x columns used to overflow and write out of bounds.
  CHECK_THAT(libsvm_error("1 1:1\n-1 9223372036854775808:0.2\n"),
             ContainsSubstring("t.svm: 2 rows x 9223372036854775808 features") &&
                 ContainsSubstring("more than the limit of 1 GiB"));
  CHECK_THAT(libsvm_error("1 99999999999999999999:1\n"),
             ContainsSubstring("line 1: feature index '99999999999999999999' is too large"));
  // 20 bytes asking for 1.6 GB dense.
  CHECK_THAT(libsvm_error("1 1:1\n1 100000000:1\n"),
             ContainsSubstring("more than the limit of 1 GiB"));
  // A wide file is fine to load, but not to solve exactly: f* needs a cols x cols matrix.
  auto wide = ata::ml::parse_libsvm("1 1:1\n-1 20000:1\n", "wide.svm");
  CHECK(wide.cols == 20000);
  ata::ml::as_plus_minus_one(wide, "wide.svm");
  REQUIRE_THROWS_WITH(
      ata::ml::LogisticProblem(wide, 1e-3, "wide.svm"),
      ContainsSubstring("20000 features (a 20000 x 20000 matrix to compute f*) need 2.98 GiB"));
  REQUIRE_THROWS_WITH(ata::ml::LeastSquaresProblem(wide, "wide.svm"),
                      ContainsSubstring("20000 x 20000 matrix"));
  REQUIRE_THROWS_WITH(ata::ml::make_classification(100'000'000, 20, 1),
                      ContainsSubstring("100000000 rows x 20 features need 14.9 GiB"));
  // The quadratic's f* is in closed form: a large dimension costs no d x d matrix.
  CHECK(ata::ml::QuadraticProblem(1'000'000, 0.0).optimal_loss() ==
        Approx(-0.125 * 1e6 / (1e6 + 1.0)));
}

TEST_CASE("LIBSVM errors quote input short and escaped, and say why a file cannot be read",
          "[apps][libsvm][errors]") {
  const auto printable_and_short = [](const std::string& message) {
    INFO(message);
    CHECK(message.size() < 200);
    CHECK(
        std::all_of(message.begin(), message.end(), [](char c) { return c >= 0x20 && c < 0x7f; }));
  };
  std::string elf =
      "\x7f"
      "ELF\x02\x01\x01";
  elf += std::string(20, '\0') + "\xd0" + "a\n";
  const auto binary = libsvm_error(elf);
  CHECK_THAT(binary, ContainsSubstring("line 1: bad label '\\x7fELF\\x02"));
  printable_and_short(binary);
  printable_and_short(libsvm_error("1 " + std::string(1'000'000, '7') + ":1\n"));
  printable_and_short(libsvm_error("1 1:" + std::string(1'000'000, 'x') + "\n"));
  printable_and_short(libsvm_error(std::string(1'000'000, 'y')));
  const auto folder = std::filesystem::temp_directory_path().string();
  REQUIRE_THROWS_WITH(
      ata::ml::load_libsvm(folder),
      ContainsSubstring("cannot read LIBSVM file '" + folder + "': it is a folder"));
  REQUIRE_THROWS_WITH(ata::ml::load_libsvm("/nonexistent.svm"),
                      ContainsSubstring("No such file or directory"));
}
