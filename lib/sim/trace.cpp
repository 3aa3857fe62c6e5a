#include "ata/sim/trace.hpp"

#include <cmath>
#include <cstdio>
#include <string_view>

#include "ata/core/error.hpp"

namespace ata::sim {

namespace {

void append_escaped(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

// Microseconds with nanosecond resolution: enough for the viewers, and short.
void append_us(std::string& out, double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  out += buf;
}

void append_metadata(std::string& out, const char* what, std::size_t pid, const std::size_t* tid,
                     std::string_view key, std::string_view text, long long number) {
  out += ",\n{\"ph\":\"M\",\"name\":\"";
  out += what;
  out += "\",\"pid\":" + std::to_string(pid);
  if (tid != nullptr) out += ",\"tid\":" + std::to_string(*tid);
  out += ",\"args\":{\"";
  out += key;
  out += "\":";
  if (text.empty()) {
    out += std::to_string(number);
  } else {
    append_escaped(out, text);
  }
  out += "}}";
}

}  // namespace

const char* outcome_name(CopyRecord::Outcome outcome) noexcept {
  switch (outcome) {
    case CopyRecord::Outcome::accepted: return "accepted";
    case CopyRecord::Outcome::stopped: return "stopped";
    case CopyRecord::Outcome::restarted: return "restarted";
  }
  return "accepted";
}

std::string chrome_trace_json(std::span<const TraceProcess> processes, double unit_us,
                              TraceSize* size) {
  if (!(std::isfinite(unit_us) && unit_us > 0.0)) {
    throw InvalidArgument("trace unit must be a finite number of microseconds > 0, got " +
                          std::to_string(unit_us));
  }
  TraceSize counts;
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  // A first entry so that every later one starts with ",\n".
  out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{\"name\":\"ata-sim\"}}";
  ++counts.events;
  for (std::size_t p = 0; p < processes.size(); ++p) {
    const TraceProcess& process = processes[p];
    const std::size_t pid = p + 1;
    const std::size_t rounds_tid = process.workers;
    append_metadata(out, "process_name", pid, nullptr, "name", process.name, 0);
    append_metadata(out, "process_sort_index", pid, nullptr, "sort_index", {},
                    static_cast<long long>(pid));
    append_metadata(out, "thread_name", pid, &rounds_tid, "name", "rounds", 0);
    append_metadata(out, "thread_sort_index", pid, &rounds_tid, "sort_index", {}, -1);
    counts.events += 4;
    for (std::size_t w = 0; w < process.workers; ++w) {
      append_metadata(out, "thread_name", pid, &w, "name", "worker " + std::to_string(w), 0);
      append_metadata(out, "thread_sort_index", pid, &w, "sort_index", {},
                      static_cast<long long>(w));
      counts.events += 2;
    }
    ++counts.processes;
    for (const TracedRound& round : process.rounds) {
      ++counts.rounds;
      const std::string k = std::to_string(round.round);
      out += ",\n{\"ph\":\"X\",\"cat\":\"round\",\"name\":\"round " + k +
             "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(rounds_tid) +
             ",\"ts\":";
      append_us(out, round.start * unit_us);
      out += ",\"dur\":";
      append_us(out, round.wall_time * unit_us);
      out += ",\"args\":{\"round\":" + k + ",\"copies\":" + std::to_string(round.copies.size()) +
             "}}";
      ++counts.events;
      for (const CopyRecord& copy : round.copies) {
        if (copy.worker >= process.workers) {
          throw InvalidArgument("trace of '" + process.name + "': a copy on worker " +
                                std::to_string(copy.worker) + " of " +
                                std::to_string(process.workers));
        }
        const char* outcome = outcome_name(copy.outcome);
        const std::string task = std::to_string(copy.task);
        out += ",\n{\"ph\":\"X\",\"cat\":\"";
        out += outcome;
        out += "\",\"name\":\"task " + task;
        if (copy.outcome != CopyRecord::Outcome::accepted) {
          out += " (";
          out += outcome;
          out += ')';
        }
        out += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(copy.worker) +
               ",\"ts\":";
        append_us(out, (round.start + copy.start) * unit_us);
        out += ",\"dur\":";
        append_us(out, (copy.end - copy.start) * unit_us);
        out += ",\"args\":{\"round\":" + k + ",\"task\":" + task + ",\"outcome\":\"";
        out += outcome;
        out += "\"}}";
        ++counts.copies;
        ++counts.events;
      }
    }
  }
  out += "\n]}\n";
  if (size != nullptr) *size = counts;
  return out;
}

}  // namespace ata::sim
