#include "ata/models/scenario.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "ata/core/error.hpp"
#include "core/checks.hpp"
#include "models/text_file.hpp"

namespace ata::models {

Scenario::Scenario(std::string name, std::vector<TimeModel> workers, std::vector<WorkerChange> changes)
    : name_(std::move(name)), models_(std::move(workers)), changes_(std::move(changes)) {
  if (models_.empty()) throw InvalidArgument("scenario '" + name_ + "' has no workers");
  if (models_.size() > kMaxWorkers) {
    throw InvalidArgument("scenario '" + name_ + "' has " + std::to_string(models_.size()) +
                          " workers, more than the limit of " + std::to_string(kMaxWorkers));
  }
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
  if (workers > Scenario::kMaxWorkers) {
    throw InvalidArgument("a scenario has at most " + std::to_string(Scenario::kMaxWorkers) +
                          " workers, got " + std::to_string(workers));
  }
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

using ata::detail::excerpt;
using nlohmann::json;

// A JSON value as a message may quote it: short and escaped.
std::string quoted(const json& value) { return excerpt(value.dump()); }

// A place deep in a file ("workers[0].components[0]...") kept to one readable line: its start
// and its end.
std::string shortened(const std::string& place) {
  constexpr std::size_t kKeep = 36;
  if (place.size() <= 2 * kKeep + 3) return place;
  return place.substr(0, kKeep) + "..." + place.substr(place.size() - kKeep);
}

// The first pass over a scenario's text, before any tree is built. It refuses nesting deeper
// than kMaxScenarioJsonDepth (a tree that deep crashes whatever recurses over it) and a key
// repeated in one object (nlohmann::json keeps the last one without a word), and keeps a
// syntax error's message without the library's prefix or raw input bytes.
class StructureCheck {
 public:
  struct Problem {
    std::string where;
    std::string what;
  };

  bool null() { return element(); }
  bool boolean(bool /*value*/) { return element(); }
  bool number_integer(json::number_integer_t /*value*/) { return element(); }
  bool number_unsigned(json::number_unsigned_t /*value*/) { return element(); }
  bool number_float(json::number_float_t /*value*/, const json::string_t& /*text*/) {
    return element();
  }
  bool string(json::string_t& /*value*/) { return element(); }
  bool binary(json::binary_t& /*value*/) { return element(); }
  bool start_object(std::size_t /*size*/) { return open(true); }
  bool start_array(std::size_t /*size*/) { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& name) {
    Frame& object = frames_.back();
    if (!object.keys.insert(name).second) {
      problem_ = {path(frames_.size() - 1),
                  "repeated key \"" + excerpt(name) + "\" (a key may appear once per object)"};
      return false;
    }
    object.key = name;
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, ...": the part after the tag.
    std::string_view message = e.what();
    if (const auto tag_end = message.find("] ");
        message.starts_with("[json.exception.") && tag_end != message.npos) {
      message.remove_prefix(tag_end + 2);
    }
    problem_ = {"invalid JSON", excerpt(message, 160)};
    return false;
  }

  [[nodiscard]] const std::optional<Problem>& problem() const noexcept { return problem_; }

 private:
  struct Frame {
    bool object = false;
    std::string key;        // objects: the key being read
    std::size_t index = 0;  // arrays: the element being read
    std::set<std::string> keys;
  };

  bool open(bool object) {
    if (frames_.size() == kMaxScenarioJsonDepth) {
      problem_ = {path(frames_.size()), "nested deeper than " +
                                            std::to_string(kMaxScenarioJsonDepth) +
                                            " arrays and objects (the limit of a scenario file)"};
      return false;
    }
    frames_.push_back({object, {}, 0, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return element();
  }

  bool element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
    return true;
  }

  // "workers[2].components[0]": the place the first `depth` open containers point to.
  [[nodiscard]] std::string path(std::size_t depth) const {
    std::string out;
    for (std::size_t i = 0; i < depth; ++i) {
      const Frame& f = frames_[i];
      if (f.object) {
        if (!out.empty()) out += '.';
        out += excerpt(f.key);
      } else {
        out.append("[").append(std::to_string(f.index)).append("]");
      }
    }
    return out.empty() ? "top level" : shortened(out);
  }

  std::vector<Frame> frames_;
  std::optional<Problem> problem_;
};

// Where a model appears decides which keys it may carry besides its parameters.
enum class Place { worker, component, change };

class ScenarioReader {
 public:
  explicit ScenarioReader(std::string_view origin) : origin_(excerpt(origin, 200)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InvalidArgument("scenario " + origin_ + ": " + shortened(where) + ": " + what);
  }

  double number(const json& node, const std::string& where, const char* key) const {
    if (!node.contains(key)) fail(where, std::string("missing \"") + key + "\"");
    const json& value = node.at(key);
    if (!value.is_number()) {
      fail(where, std::string("\"") + key + "\" must be a number, got " + quoted(value));
    }
    return value.get<double>();
  }

  // A required whole number >= 0.
  std::size_t whole_number(const json& node, const std::string& where, const char* key) const {
    if (!node.contains(key)) fail(where, std::string("missing \"") + key + "\"");
    const json& value = node.at(key);
    // nlohmann::json reads integers >= 0 as unsigned, negative ones as signed, the rest as floats.
    if (!value.is_number_unsigned()) {
      fail(where, std::string("\"") + key + "\" must be a whole number >= 0, got " + quoted(value));
    }
    return value.get<std::size_t>();
  }

  TimeModel model(const json& node, const std::string& where, Place place,
                  std::size_t mixture_depth) const {
    if (!node.is_object()) fail(where, "expected an object, got " + quoted(node));
    if (!node.contains("model") || !node.at("model").is_string()) fail(where, "missing \"model\" (a string)");
    const std::string kind = node.at("model").get<std::string>();
    try {
      TimeModel base = build(node, where, kind, place, mixture_depth);
      if (node.contains("outage")) base = outage(base, node.at("outage"), where + ".outage");
      return base;
    } catch (const InvalidArgument& e) {
      if (std::string_view(e.what()).starts_with("scenario ")) throw;
      fail(where, e.what());  // a factory's own check, e.g. "exponential mean must be ..."
    }
  }

 private:
  // Refuses any key but "model", "outage", the model's parameters and what `place` allows.
  void only_keys(const json& node, const std::string& where, Place place,
                 std::initializer_list<std::string_view> parameters) const {
    std::vector<std::string_view> allowed{"model"};
    allowed.insert(allowed.end(), parameters);
    allowed.emplace_back("outage");
    switch (place) {
      case Place::worker:
        allowed.emplace_back("count");
        break;
      case Place::component:
        allowed.emplace_back("weight");
        break;
      case Place::change:
        allowed.insert(allowed.end(), {"round", "worker"});
        break;
    }
    for (const auto& [key, value] : node.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string expected;
      for (const auto a : allowed) expected += (expected.empty() ? "" : ", ") + std::string(a);
      std::string what = "unknown key \"" + excerpt(key) + "\"";
      if (key == "count") what = "\"count\" belongs to an entry of \"workers\"";
      if (key == "weight") what = "\"weight\" belongs to a mixture component";
      if (key == "round" || key == "worker") {
        what = "\"" + key + "\" belongs to an entry of \"changes\"";
      }
      fail(where, what + "; expected " + expected);
    }
  }

  TimeModel outage(const TimeModel& base, const json& node, const std::string& where) const {
    if (!node.is_object()) {
      fail(where, "expected an object with \"probability\" and \"timeout\", got " + quoted(node));
    }
    for (const auto& [key, value] : node.items()) {
      if (key != "probability" && key != "timeout") {
        fail(where, "unknown key \"" + excerpt(key) + "\"; expected probability, timeout");
      }
    }
    return TimeModel::outage(base, number(node, where, "probability"),
                             number(node, where, "timeout"));
  }

  TimeModel build(const json& node, const std::string& where, const std::string& kind, Place place,
                  std::size_t mixture_depth) const {
    if (kind == "constant") {
      only_keys(node, where, place, {"value"});
      return TimeModel::constant(number(node, where, "value"));
    }
    if (kind == "exponential") {
      only_keys(node, where, place, {"mean"});
      return TimeModel::exponential(number(node, where, "mean"));
    }
    if (kind == "shifted_exponential") {
      only_keys(node, where, place, {"shift", "mean"});
      return TimeModel::shifted_exponential(number(node, where, "shift"), number(node, where, "mean"));
    }
    if (kind == "gamma") {
      only_keys(node, where, place, {"shape", "scale"});
      return TimeModel::gamma(number(node, where, "shape"), number(node, where, "scale"));
    }
    if (kind == "lognormal") {
      only_keys(node, where, place, {"mu", "sigma"});
      return TimeModel::lognormal(number(node, where, "mu"), number(node, where, "sigma"));
    }
    if (kind == "uniform") {
      only_keys(node, where, place, {"low", "high"});
      return TimeModel::uniform(number(node, where, "low"), number(node, where, "high"));
    }
    if (kind == "half_normal") {
      only_keys(node, where, place, {"sigma"});
      return TimeModel::half_normal(number(node, where, "sigma"));
    }
    if (kind == "pareto") {
      only_keys(node, where, place, {"scale", "shape"});
      return TimeModel::pareto(number(node, where, "scale"), number(node, where, "shape"));
    }
    if (kind == "mixture") return mixture(node, where, place, mixture_depth + 1);
    fail(where, "unknown model \"" + excerpt(kind) +
                    "\"; expected constant, exponential, shifted_exponential, gamma, lognormal, "
                    "uniform, half_normal, pareto or mixture");
  }

  TimeModel mixture(const json& node, const std::string& where, Place place,
                    std::size_t depth) const {
    if (depth > kMaxMixtureDepth) {
      fail(where, "mixtures nested deeper than " + std::to_string(kMaxMixtureDepth) +
                      " levels (the limit of a scenario file)");
    }
    only_keys(node, where, place, {"components"});
    if (!node.contains("components") || !node.at("components").is_array() ||
        node.at("components").empty()) {
      fail(where, "a mixture needs \"components\" (a non-empty array)");
    }
    std::vector<double> weights;
    std::vector<TimeModel> components;
    double total = 0.0;
    std::size_t j = 0;
    for (const json& c : node.at("components")) {
      const std::string w = where + ".components[" + std::to_string(j++) + "]";
      components.push_back(model(c, w, Place::component, depth));
      const double weight = number(c, w, "weight");
      if (!(weight >= 0.0 && weight <= 1.0)) {
        fail(w, "\"weight\" must be in [0, 1], got " + quoted(c.at("weight")));
      }
      weights.push_back(weight);
      total += weight;
    }
    // Weights are probabilities: a sum other than 1 is a mistake in the file, not something to
    // renormalise silently.
    if (std::abs(total - 1.0) > kWeightTolerance) {
      fail(where, "the mixture's weights must sum to 1, got " + detail::to_text(total));
    }
    return TimeModel::mixture(std::move(weights), std::move(components));
  }

  static constexpr double kWeightTolerance = 1e-6;
  std::string origin_;
};

}  // namespace

Scenario parse_scenario(std::string_view json_text, std::string_view origin) {
  const ScenarioReader reader(origin);
  StructureCheck structure;
  if (!json::sax_parse(json_text, &structure) && structure.problem()) {
    reader.fail(structure.problem()->where, structure.problem()->what);
  }
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {  // StructureCheck has seen the same text: not expected
    reader.fail("invalid JSON", excerpt(e.what(), 160));
  }
  if (!root.is_object()) {
    reader.fail("top level", "expected an object with \"workers\", got " + quoted(root));
  }
  for (const auto& [key, value] : root.items()) {
    if (key != "name" && key != "workers" && key != "changes") {
      reader.fail("top level",
                  "unknown key \"" + excerpt(key) + "\"; expected name, workers, changes");
    }
  }
  if (!root.contains("workers") || !root.at("workers").is_array()) {
    reader.fail("top level", "missing \"workers\" (an array)");
  }
  std::string name(origin);
  if (root.contains("name")) {
    const json& value = root.at("name");
    constexpr std::size_t kMaxName = 200;
    if (!value.is_string() || value.get<std::string>().size() > kMaxName ||
        excerpt(value.get<std::string>(), kMaxName) != value.get<std::string>()) {
      reader.fail("name", "must be a string of at most " + std::to_string(kMaxName) +
                              " printable ASCII characters, got " + quoted(value));
    }
    name = value.get<std::string>();
  }
  std::vector<TimeModel> models;
  std::size_t index = 0;
  for (const json& node : root.at("workers")) {
    const std::string where = "workers[" + std::to_string(index++) + "]";
    const TimeModel m = reader.model(node, where, Place::worker, 0);
    const std::size_t count =
        node.contains("count") ? reader.whole_number(node, where, "count") : 1;
    if (count > Scenario::kMaxWorkers - models.size()) {
      reader.fail(where, "\"count\" " + std::to_string(count) + " makes more than " +
                             std::to_string(Scenario::kMaxWorkers) +
                             " workers (the limit of a scenario)");
    }
    models.insert(models.end(), count, m);
  }
  if (models.empty()) reader.fail("workers", "no workers (an empty list, or counts of 0)");
  std::vector<WorkerChange> changes;
  if (root.contains("changes")) {
    if (!root.at("changes").is_array()) {
      reader.fail("changes", "expected an array, got " + quoted(root.at("changes")));
    }
    index = 0;
    for (const json& node : root.at("changes")) {
      const std::string where = "changes[" + std::to_string(index++) + "]";
      TimeModel m = reader.model(node, where, Place::change, 0);
      WorkerChange change{reader.whole_number(node, where, "round"),
                          reader.whole_number(node, where, "worker"), std::move(m)};
      if (change.round < 1) {
        reader.fail(where, "\"round\" must be >= 1 (rounds count from 1), got 0");
      }
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
  return parse_scenario(detail::read_text_file(path, kMaxScenarioFileBytes, "scenario file"), path);
}

}  // namespace ata::models
