#include "runtime/admission.hpp"

#include <utility>

namespace ata::runtime::detail {

void Admission::enter() {
  std::unique_lock lock(mutex_);
  if (in_flight_ < limit_ && waiters_.empty()) {
    ++in_flight_;
    return;
  }
  // Notified under the lock, so the flag outlives every use leave() makes of it.
  bool admitted = false;
  waiters_.push_back({next_ticket_++, [this, &admitted] {
                        std::lock_guard inner(mutex_);
                        admitted = true;
                        admitted_.notify_all();
                      }});
  admitted_.wait(lock, [&] { return admitted; });
}

std::optional<Admission::Ticket> Admission::enter_or_queue(std::function<void()> on_admitted) {
  std::lock_guard lock(mutex_);
  if (in_flight_ < limit_ && waiters_.empty()) {
    ++in_flight_;
    return std::nullopt;
  }
  const Ticket ticket = next_ticket_++;
  waiters_.push_back({ticket, std::move(on_admitted)});
  return ticket;
}

bool Admission::withdraw(Ticket ticket) {
  std::lock_guard lock(mutex_);
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it->ticket == ticket) {
      waiters_.erase(it);
      return true;
    }
  }
  return false;
}

void Admission::leave() noexcept {
  std::function<void()> next;
  {
    std::lock_guard lock(mutex_);
    if (waiters_.empty()) {
      --in_flight_;
      return;
    }
    next = std::move(waiters_.front().on_admitted);  // the slot passes to it
    waiters_.pop_front();
  }
  next();
}

std::size_t Admission::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

}  // namespace ata::runtime::detail
