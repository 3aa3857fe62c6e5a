#pragma once
// The messages between the root and the worker ranks, as flat byte buffers.
//
// root -> worker:
// - kWork (the policy's round, the batch id, how it is answered (Answers), stride, budget, keep
//   going after a failure?, task name, task numbers, input; greedy: the quota's numbers, then
//   with a stride the race's first);
// - kStop (batch id: a greedy batch has its B results);
// - kWithdraw (batch id, task number: a hedged batch has that task's result from another rank,
//   or gave the task to another: skip it, or stop it if it runs);
// - kShutdown (whether a rank was lost);
// - kPing (batch id, padding the size of the input);
// - kDoorbell (token, port, addresses: where the root waits for rings; doorbell.hpp).
// worker -> root, each starting with the batch id it answers (the root drops other batches')
// and ending with the worker's sequence number for it (1, 2, ...; doorbell.hpp):
// - kResults (then per task: number, nanoseconds, result bytes);
// - kRestarted (number, nanoseconds: a task stopped at its budget, run afresh);
// - kFailure (task number or kNoNumber, nanoseconds, message);
// - kStopped (a greedy batch ended here; the rank is alive);
// - kWithdrawn (number, nanoseconds: a running task stopped by kWithdraw, its result dropped);
// - kPong (the ping echoed as soon as the rank is not running a share).

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ata/core/error.hpp"
#include "ata/mpi/task_registry.hpp"

namespace ata::mpi::wire {

// A work message's restart budget in nanoseconds when its racer has none.
inline constexpr std::uint64_t kNoBudget = UINT64_MAX;
// A failure's task number when no task ran (the task's name is unknown on the rank).
inline constexpr std::uint64_t kNoNumber = UINT64_MAX;

enum Tag : int {
  kWork = 1,
  kStop = 2,
  kShutdown = 3,
  kResults = 4,
  kFailure = 5,
  kStopped = 6,
  kPing = 7,
  kPong = 8,
  kRestarted = 9,
  kWithdraw = 10,
  kWithdrawn = 11,
  kDoorbell = 12
};

// How a rank answers a kWork message's tasks.
enum class Answers : std::uint64_t {
  together = 0,  // a share: one kResults with every task, once all ran
  greedy = 1,    // samples, each answered as it ends, until the root sends anything
  each = 2,      // a hedged share: each task answered as it ends; kWithdraw skips or stops one
};

class Writer {
 public:
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void bytes(std::span<const std::byte> b) {
    u64(b.size());
    raw(b.data(), b.size());
  }
  void text(const std::string& s) { bytes(std::as_bytes(std::span(s.data(), s.size()))); }
  // Without a length: the rest of a message.
  void raw_bytes(std::span<const std::byte> b) { raw(b.data(), b.size()); }
  Bytes& buffer() noexcept { return buffer_; }

 private:
  void raw(const void* p, std::size_t n) {
    if (n == 0) return;
    const std::size_t at = buffer_.size();
    buffer_.resize(at + n);
    std::memcpy(buffer_.data() + at, p, n);
  }
  Bytes buffer_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> b) : b_(b) {}
  std::uint64_t u64() {
    std::uint64_t v = 0;
    need(sizeof v);
    std::memcpy(&v, b_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::span<const std::byte> bytes() {
    const std::uint64_t n = u64();
    need(n);
    const auto out = b_.subspan(at_, n);
    at_ += n;
    return out;
  }
  [[nodiscard]] bool at_end() const noexcept { return at_ == b_.size(); }
  std::string text() {
    const auto b = bytes();
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }

 private:
  void need(std::uint64_t n) const {
    if (n > b_.size() - at_) throw Error("ata::mpi: a truncated message between ranks");
  }
  std::span<const std::byte> b_;
  std::size_t at_ = 0;
};

}  // namespace ata::mpi::wire
