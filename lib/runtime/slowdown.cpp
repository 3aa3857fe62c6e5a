#include "ata/runtime/slowdown.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "ata/core/error.hpp"

namespace ata::runtime {

namespace {

void require_positive_unit(std::chrono::nanoseconds unit, const char* kind) {
  if (unit <= std::chrono::nanoseconds{0}) {
    throw InvalidArgument(std::string(kind) + " slowdown needs a model unit > 0 ns, got " +
                          std::to_string(unit.count()) + " ns");
  }
}

std::string unit_text(std::chrono::nanoseconds unit) {
  const auto ns = unit.count();
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

// A mean delay beyond the maximum describes no run that could finish: refused up front.
void require_delay_in_range(const models::TimeModel& model, std::chrono::nanoseconds unit,
                            const char* kind) {
  // In seconds, where a huge mean times a unit overflows later than in nanoseconds.
  const double mean = model.mean() * std::chrono::duration<double>(unit).count();
  const auto max = std::chrono::duration_cast<std::chrono::seconds>(Slowdown::kMaxDelay);
  if (!(mean <= static_cast<double>(max.count()))) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", mean);
    throw InvalidArgument(std::string(kind) + " slowdown of " + model.describe() + " x " +
                          unit_text(unit) + " has a mean delay of " + text +
                          " s, above the maximum of " + std::to_string(max.count()) +
                          " s (Slowdown::kMaxDelay)");
  }
}

}  // namespace

Slowdown Slowdown::sleep(models::TimeModel model, std::chrono::nanoseconds unit) {
  require_positive_unit(unit, "a sleep");
  require_delay_in_range(model, unit, "a sleep");
  Slowdown s;
  s.kind_ = Kind::sleep;
  s.unit_ = unit;
  s.phases_.push_back({1, std::move(model)});
  return s;
}

Slowdown Slowdown::burn(models::TimeModel model, std::chrono::nanoseconds unit) {
  require_positive_unit(unit, "a burn");
  require_delay_in_range(model, unit, "a burn");
  Slowdown s = sleep(std::move(model), unit);
  s.kind_ = Kind::burn;
  return s;
}

Slowdown Slowdown::repeat(std::size_t times) {
  if (times == 0)
    throw InvalidArgument("a repeat slowdown runs each task at least once, got times = 0");
  Slowdown s;
  s.kind_ = Kind::repeat;
  s.repetitions_ = times;
  return s;
}

Slowdown& Slowdown::change_at(std::size_t round, models::TimeModel model) {
  if (!draws_delays()) {
    throw InvalidArgument("change_at() needs a sleep or burn slowdown, this one is " + describe());
  }
  if (round == 0)
    throw InvalidArgument("a slowdown change needs round >= 1 (rounds count from 1), got 0");
  require_delay_in_range(model, unit_, kind_ == Kind::sleep ? "a sleep" : "a burn");
  const auto at = std::lower_bound(phases_.begin(), phases_.end(), round,
                                   [](const Phase& p, std::size_t r) { return p.first_round < r; });
  if (at != phases_.end() && at->first_round == round) {
    at->model = std::move(model);
  } else {
    phases_.insert(at, Phase{round, std::move(model)});
  }
  return *this;
}

const models::TimeModel& Slowdown::model(std::size_t round) const {
  if (!draws_delays()) throw Error("a " + describe() + " slowdown has no time model");
  // The last phase starting at or before `round`; round 0 reads as round 1.
  const auto after =
      std::upper_bound(phases_.begin(), phases_.end(), round,
                       [](std::size_t r, const Phase& p) { return r < p.first_round; });
  return after == phases_.begin() ? phases_.front().model : std::prev(after)->model;
}

std::chrono::duration<double> Slowdown::mean_delay(std::size_t round) const {
  if (!draws_delays()) return std::chrono::duration<double>{0.0};
  return std::chrono::duration<double>(unit_) * model(round).mean();
}

std::chrono::nanoseconds Slowdown::draw(std::size_t round, models::Rng& rng) const {
  if (!draws_delays()) return std::chrono::nanoseconds{0};
  // The one place where model units become real time. A draw beyond the maximum (or
  // infinite) is cut to it before the conversion, which could not represent it.
  const double ns = model(round).sample(rng) * static_cast<double>(unit_.count());
  if (!(ns < static_cast<double>(kMaxDelay.count()))) return kMaxDelay;
  return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(ns));
}

std::string Slowdown::describe() const {
  switch (kind_) {
    case Kind::none:
      return "none";
    case Kind::repeat:
      return "repeat(" + std::to_string(repetitions_) + ")";
    case Kind::sleep:
    case Kind::burn:
      break;
  }
  std::string text = (kind_ == Kind::sleep ? "sleep(" : "burn(") +
                     phases_.front().model.describe() + " x " + unit_text(unit_);
  for (std::size_t p = 1; p < phases_.size(); ++p) {
    text += ", from round " + std::to_string(phases_[p].first_round) + ": " +
            phases_[p].model.describe();
  }
  return text + ")";
}

}  // namespace ata::runtime
