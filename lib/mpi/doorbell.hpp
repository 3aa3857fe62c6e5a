#pragma once
// Doorbells: how the root sleeps until an answer comes instead of polling MPI.
//
// Open MPI 4.1 has no blocking receive that does not spin, and each poll of its progress
// engine costs the root 40 to 60 us of CPU over TCP. So each worker rank also holds a plain
// TCP connection to the root and writes one byte on it after each message it sends. The root
// blocks in poll(2) on those connections and calls MPI only when a byte says a message is on
// its way (docs/mpi.md, "An idle root").
//
// Counting: every worker message carries its sequence number (1, 2, ...; wire.hpp). A worker's
// hello on connecting says how many messages it had sent before the invitation and before the
// hello; each byte after it is one more. A rank has news while the root has rung up to a later
// number than it has received; the messages sent between the invitation and the hello count
// as rung, those before the invitation answered an earlier scheduler and are not waited for.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <vector>

#include "models/file_descriptor.hpp"
#include "wire.hpp"

namespace ata::mpi::detail {

using Clock = std::chrono::steady_clock;

using Fd = ata::detail::FileDescriptor;

// The root's side: a listener on every IPv4 interface and one connection per worker rank.
// One thread.
class Doorbells {
 public:
  // Without sockets (or with `enabled` false) nothing rings and the root polls as before.
  Doorbells(std::size_t workers, bool enabled);

  // What the workers need to connect (wire::kDoorbell): a token, the port, the addresses.
  [[nodiscard]] bool listening() const noexcept { return static_cast<bool>(listener_); }
  [[nodiscard]] Bytes invitation() const;

  // Accepts callers, reads their hellos and every byte rung since; never blocks.
  void collect();
  // Blocks until a byte, a caller or `timeout`, then collects.
  void wait(Clock::duration timeout);

  // Every worker is connected and none has hung up: the root may sleep until a bell rings.
  [[nodiscard]] bool all_connected() const noexcept;
  [[nodiscard]] std::size_t connected() const noexcept;
  // Whether `worker` rang for a message the root has not received yet.
  [[nodiscard]] bool news(std::size_t worker) const noexcept {
    return rung_[worker] > received_[worker];
  }
  [[nodiscard]] bool any_news() const noexcept;
  // Since when the oldest news has waited for its message (when its bell was read).
  [[nodiscard]] std::optional<Clock::time_point> news_since() const noexcept;
  // The root received `worker`'s message number `sequence`.
  void received(std::size_t worker, std::uint64_t sequence) noexcept {
    if (sequence > received_[worker]) received_[worker] = sequence;
  }

 private:
  struct Caller {
    Fd fd;
    Bytes hello;
    Clock::time_point since;
  };
  void accept_callers();
  void read_hello(Caller& caller);
  void read_rings(std::size_t worker);

  std::uint64_t token_ = 0;
  std::uint16_t port_ = 0;
  std::vector<std::uint32_t> addresses_;  // network byte order, loopback last
  Fd listener_;
  std::list<Caller> callers_;  // connected, hello not read yet
  std::vector<Fd> bells_;      // per worker
  std::vector<std::uint64_t> rung_;
  std::vector<std::uint64_t> received_;
  std::vector<Clock::time_point> news_since_;  // per worker, while it has news
  bool hung_up_ = false;  // a worker's connection broke: polling from now on
};

// A worker rank's side: numbers its messages, connects to the root without blocking, rings.
class Bell {
 public:
  // The next message's sequence number, counted as sent; rings once connected.
  std::uint64_t next_sequence() noexcept { return ++sent_; }
  void ring() noexcept;
  // Starts connecting to the root named by a wire::kDoorbell message (any older connection is
  // dropped: a new scheduler invited this rank).
  void answer(wire::Reader& invitation, std::size_t worker);
  // Moves a connection attempt on; never blocks.
  void advance() noexcept;

 private:
  void try_next_address() noexcept;

  std::uint64_t sent_ = 0;
  std::uint64_t sent_before_invitation_ = 0;
  std::uint64_t token_ = 0;
  std::uint64_t worker_ = 0;
  std::uint16_t port_ = 0;
  std::vector<std::uint32_t> addresses_;
  std::size_t next_address_ = 0;
  Clock::time_point attempt_since_;
  Fd fd_;
  bool connected_ = false;
};

}  // namespace ata::mpi::detail
