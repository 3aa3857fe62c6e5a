#include "core/chrome_trace.hpp"

#include <cstdio>
#include <utility>

namespace ata::detail {

namespace {

// Microseconds with nanosecond resolution: enough for the viewers, and short.
void append_us(std::string& out, double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  out += buf;
}

}  // namespace

std::string task_slice_name(std::size_t task, std::size_t copies, std::string_view mark) {
  std::string name = "task " + std::to_string(task);
  std::string notes = copies > 1 ? std::to_string(copies) + " copies" : std::string();
  if (!mark.empty()) notes += (notes.empty() ? "" : ", ") + std::string(mark);
  if (!notes.empty()) name += " (" + notes + ")";
  return name;
}

void append_json_string(std::string& out, std::string_view text) {
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

ChromeTrace::ChromeTrace(std::string_view program) {
  out_ = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  // A first entry so that every later one starts with ",\n".
  out_ += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"args\":{\"name\":";
  append_json_string(out_, program);
  out_ += "}}";
  ++events_;
}

void ChromeTrace::add_metadata(const char* what, std::size_t pid, const std::size_t* tid,
                               std::string_view key, std::string_view text, long long number) {
  out_ += ",\n{\"ph\":\"M\",\"name\":\"";
  out_ += what;
  out_ += "\",\"pid\":" + std::to_string(pid);
  if (tid != nullptr) out_ += ",\"tid\":" + std::to_string(*tid);
  out_ += ",\"args\":{\"";
  out_ += key;
  out_ += "\":";
  if (text.empty()) {
    out_ += std::to_string(number);
  } else {
    append_json_string(out_, text);
  }
  out_ += "}}";
  ++events_;
}

void ChromeTrace::add_process(std::size_t pid, std::string_view name, std::size_t workers) {
  const std::size_t rounds_tid = workers;
  add_metadata("process_name", pid, nullptr, "name", name, 0);
  add_metadata("process_sort_index", pid, nullptr, "sort_index", {}, static_cast<long long>(pid));
  add_metadata("thread_name", pid, &rounds_tid, "name", "rounds", 0);
  add_metadata("thread_sort_index", pid, &rounds_tid, "sort_index", {}, -1);
  for (std::size_t w = 0; w < workers; ++w) {
    add_metadata("thread_name", pid, &w, "name", "worker " + std::to_string(w), 0);
    add_metadata("thread_sort_index", pid, &w, "sort_index", {}, static_cast<long long>(w));
  }
}

void ChromeTrace::add_slice(std::size_t pid, std::size_t tid, std::string_view category,
                            std::string_view name, double start_us, double duration_us,
                            std::string_view args) {
  out_ += ",\n{\"ph\":\"X\",\"cat\":";
  append_json_string(out_, category);
  out_ += ",\"name\":";
  append_json_string(out_, name);
  out_ += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":";
  append_us(out_, start_us);
  out_ += ",\"dur\":";
  append_us(out_, duration_us);
  out_ += ",\"args\":{";
  out_ += args;
  out_ += "}}";
  ++events_;
}

void ChromeTrace::add_flow(std::size_t pid, std::size_t from_tid, std::size_t to_tid,
                           std::string_view name, double at_us) {
  const std::string id = std::to_string(++flows_);
  for (const bool start : {true, false}) {
    out_ += start ? ",\n{\"ph\":\"s\"" : ",\n{\"ph\":\"f\",\"bp\":\"e\"";
    out_ += ",\"cat\":\"batch\",\"name\":";
    append_json_string(out_, name);
    out_ += ",\"id\":" + id + ",\"pid\":" + std::to_string(pid) +
            ",\"tid\":" + std::to_string(start ? from_tid : to_tid) + ",\"ts\":";
    append_us(out_, at_us);
    out_ += '}';
    ++events_;
  }
}

std::string ChromeTrace::finish() {
  out_ += "\n]}\n";
  events_ = 0;
  flows_ = 0;
  return std::exchange(out_, {});
}

}  // namespace ata::detail
