#include "ata/sim/scenario.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ata/core/error.hpp"
#include "core/checks.hpp"

namespace ata::sim {

Scenario::Scenario(std::string name, std::vector<TimeModel> workers, std::vector<WorkerChange> changes)
    : name_(std::move(name)), models_(std::move(workers)), changes_(std::move(changes)) {
  if (models_.empty()) throw InvalidArgument("scenario '" + name_ + "' has no workers");
  for (const auto& change : changes_) {
    detail::require_worker_index(change.worker, models_.size());
    if (change.round < 1) throw InvalidArgument("a worker change needs round >= 1 (rounds count from 1), got 0");
  }
  std::stable_sort(changes_.begin(), changes_.end(),
                   [](const WorkerChange& a, const WorkerChange& b) { return a.round < b.round; });
}

std::vector<double> Scenario::means() const {
  std::vector<double> means;
  means.reserve(models_.size());
  for (const auto& m : models_) means.push_back(m.mean());
  return means;
}

double Scenario::max_mean() const {
  double most = 0.0;
  for (const auto& m : models_) most = std::max(most, m.mean());
  return most;
}

Scenario Scenario::scaled(double factor) const {
  std::vector<TimeModel> models;
  for (const auto& m : models_) models.push_back(m.scaled(factor));
  std::vector<WorkerChange> changes;
  for (const auto& c : changes_) changes.push_back({c.round, c.worker, c.model.scaled(factor)});
  return Scenario(name_, std::move(models), std::move(changes));
}

namespace {

constexpr std::array<std::string_view, 7> kPresets{"linear", "sqrt",    "log",     "quadratic",
                                                   "cifar",  "mixture", "slowdown"};

// The paper's synthetic law: X_i = m_i/2 + Exp(mean m_i/2), m_i = 2*29*f(i).
std::vector<TimeModel> paper_workers(std::size_t n, const std::function<double(double)>& f) {
  std::vector<TimeModel> models;
  for (std::size_t i = 1; i <= n; ++i) {
    const double half = 29.0 * f(static_cast<double>(i));
    models.push_back(TimeModel::shifted_exponential(half, half));
  }
  return models;
}

// Five laws with mean m each.
std::vector<TimeModel> mixture_group(double m) {
  const double sigma = 1.0;
  return {TimeModel::exponential(m), TimeModel::uniform(0.0, 2.0 * m),
          TimeModel::half_normal(m * std::sqrt(std::numbers::pi / 2.0)),
          TimeModel::lognormal(std::log(m) - sigma * sigma / 2.0, sigma), TimeModel::gamma(2.0, m / 2.0)};
}

}  // namespace

std::span<const std::string_view> preset_names() noexcept { return kPresets; }

Scenario make_preset(std::string_view name, std::size_t workers, std::size_t change_round) {
  if (workers == 0) throw InvalidArgument("a scenario needs at least one worker, got 0");
  const std::string label(name);
  if (name == "linear" || name == "cifar") return Scenario(label, paper_workers(workers, [](double i) { return i; }));
  if (name == "sqrt") return Scenario(label, paper_workers(workers, [](double i) { return std::sqrt(i); }));
  if (name == "log") return Scenario(label, paper_workers(workers, [](double i) { return std::log(i + 1.0); }));
  if (name == "quadratic") return Scenario(label, paper_workers(workers, [](double i) { return i * i; }));
  if (name == "mixture") {
    std::vector<TimeModel> models;
    for (std::size_t i = 0; i < workers; ++i) {
      const double m = 58.0 * static_cast<double>(i / 5 + 1);
      models.push_back(mixture_group(m)[i % 5]);
    }
    return Scenario(label, std::move(models));
  }
  if (name == "slowdown") {
    auto models = paper_workers(workers, [](double i) { return std::sqrt(i); });
    WorkerChange change{change_round, 0, models[0].scaled(10.0)};
    return Scenario(label, std::move(models), {change});
  }
  std::string known;
  for (const auto n : kPresets) known += (known.empty() ? "" : ", ") + std::string(n);
  throw InvalidArgument("unknown scenario '" + label + "'; expected one of: " + known +
                        ", or a JSON file");
}

namespace {

using nlohmann::json;

class ScenarioReader {
 public:
  explicit ScenarioReader(std::string_view origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InvalidArgument("scenario " + origin_ + ": " + where + ": " + what);
  }

  double number(const json& node, const std::string& where, const char* key) const {
    if (!node.contains(key)) fail(where, std::string("missing \"") + key + "\"");
    const json& value = node.at(key);
    if (!value.is_number()) fail(where, std::string("\"") + key + "\" must be a number, got " + value.dump());
    return value.get<double>();
  }

  void only_keys(const json& node, const std::string& where, std::set<std::string> allowed) const {
    allowed.insert({"model", "count", "outage", "weight", "round", "worker"});
    for (const auto& [key, value] : node.items()) {
      if (!allowed.contains(key)) fail(where, "unknown key \"" + key + "\"");
    }
  }

  TimeModel model(const json& node, const std::string& where) const {
    if (!node.is_object()) fail(where, "expected an object, got " + node.dump());
    if (!node.contains("model") || !node.at("model").is_string()) fail(where, "missing \"model\" (a string)");
    const std::string kind = node.at("model").get<std::string>();
    try {
      TimeModel base = build(node, where, kind);
      if (node.contains("outage")) {
        const json& o = node.at("outage");
        const std::string w = where + ".outage";
        if (!o.is_object()) fail(w, "expected an object with \"probability\" and \"timeout\"");
        base = TimeModel::outage(base, number(o, w, "probability"), number(o, w, "timeout"));
      }
      return base;
    } catch (const InvalidArgument& e) {
      if (std::string_view(e.what()).starts_with("scenario ")) throw;
      fail(where, e.what());
    }
  }

 private:
  TimeModel build(const json& node, const std::string& where, const std::string& kind) const {
    if (kind == "constant") {
      only_keys(node, where, {"value"});
      return TimeModel::constant(number(node, where, "value"));
    }
    if (kind == "exponential") {
      only_keys(node, where, {"mean"});
      return TimeModel::exponential(number(node, where, "mean"));
    }
    if (kind == "shifted_exponential") {
      only_keys(node, where, {"shift", "mean"});
      return TimeModel::shifted_exponential(number(node, where, "shift"), number(node, where, "mean"));
    }
    if (kind == "gamma") {
      only_keys(node, where, {"shape", "scale"});
      return TimeModel::gamma(number(node, where, "shape"), number(node, where, "scale"));
    }
    if (kind == "lognormal") {
      only_keys(node, where, {"mu", "sigma"});
      return TimeModel::lognormal(number(node, where, "mu"), number(node, where, "sigma"));
    }
    if (kind == "uniform") {
      only_keys(node, where, {"low", "high"});
      return TimeModel::uniform(number(node, where, "low"), number(node, where, "high"));
    }
    if (kind == "half_normal") {
      only_keys(node, where, {"sigma"});
      return TimeModel::half_normal(number(node, where, "sigma"));
    }
    if (kind == "pareto") {
      only_keys(node, where, {"scale", "shape"});
      return TimeModel::pareto(number(node, where, "scale"), number(node, where, "shape"));
    }
    if (kind == "mixture") {
      only_keys(node, where, {"components"});
      if (!node.contains("components") || !node.at("components").is_array()) {
        fail(where, "a mixture needs \"components\" (an array)");
      }
      std::vector<double> weights;
      std::vector<TimeModel> components;
      std::size_t j = 0;
      for (const json& c : node.at("components")) {
        const std::string w = where + ".components[" + std::to_string(j++) + "]";
        weights.push_back(c.is_object() && c.contains("weight") ? number(c, w, "weight") : 1.0);
        components.push_back(model(c, w));
      }
      return TimeModel::mixture(std::move(weights), std::move(components));
    }
    fail(where, "unknown model \"" + kind +
                    "\"; expected constant, exponential, shifted_exponential, gamma, lognormal, "
                    "uniform, half_normal, pareto or mixture");
  }

  std::string origin_;
};

std::size_t whole_number(const ScenarioReader& reader, const json& node, const std::string& where,
                         const char* key, std::size_t fallback) {
  if (!node.contains(key)) return fallback;
  const json& value = node.at(key);
  if (!value.is_number_integer() || value.get<long long>() < 0) {
    reader.fail(where, std::string("\"") + key + "\" must be a whole number >= 0, got " + value.dump());
  }
  return value.get<std::size_t>();
}

}  // namespace

Scenario parse_scenario(std::string_view json_text, std::string_view origin) {
  const ScenarioReader reader(origin);
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::parse_error& e) {
    reader.fail("invalid JSON", e.what());
  }
  if (!root.is_object()) reader.fail("top level", "expected an object with \"workers\"");
  for (const auto& [key, value] : root.items()) {
    if (key != "name" && key != "workers" && key != "changes") reader.fail("top level", "unknown key \"" + key + "\"");
  }
  if (!root.contains("workers") || !root.at("workers").is_array()) {
    reader.fail("top level", "missing \"workers\" (an array)");
  }
  std::string name = root.value("name", std::string(origin));
  std::vector<TimeModel> models;
  std::size_t index = 0;
  for (const json& node : root.at("workers")) {
    const std::string where = "workers[" + std::to_string(index++) + "]";
    const TimeModel m = reader.model(node, where);
    const std::size_t count = whole_number(reader, node, where, "count", 1);
    models.insert(models.end(), count, m);
  }
  if (models.empty()) reader.fail("workers", "no workers (an empty list, or counts of 0)");
  std::vector<WorkerChange> changes;
  if (root.contains("changes")) {
    if (!root.at("changes").is_array()) reader.fail("changes", "expected an array");
    index = 0;
    for (const json& node : root.at("changes")) {
      const std::string where = "changes[" + std::to_string(index++) + "]";
      WorkerChange change{whole_number(reader, node, where, "round", 0),
                          whole_number(reader, node, where, "worker", 0), reader.model(node, where)};
      if (change.round < 1) reader.fail(where, "needs \"round\" >= 1");
      if (change.worker >= models.size()) {
        reader.fail(where, "worker " + std::to_string(change.worker) + " is out of range [0, " +
                               std::to_string(models.size()) + ")");
      }
      changes.push_back(std::move(change));
    }
  }
  return Scenario(std::move(name), std::move(models), std::move(changes));
}

Scenario load_scenario(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw InvalidArgument("cannot read scenario file '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_scenario(text.str(), path);
}

}  // namespace ata::sim
