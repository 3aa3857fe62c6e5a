#include "doorbell.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <string>
#include <random>

namespace ata::mpi::detail {

namespace {

// A hello: the token, the worker's index, the messages it sent before the invitation, and
// before connecting.
constexpr std::size_t kHelloSize = 4 * sizeof(std::uint64_t);
// A caller that has not said hello by then is dropped (it is not one of ours).
constexpr auto kHelloWait = std::chrono::seconds(2);
// A worker tries each of the root's addresses this long before the next.
constexpr auto kConnectWait = std::chrono::seconds(1);
// Bounds what a malformed invitation or a crowd of strangers can make either side hold.
constexpr std::size_t kMostAddresses = 64;
constexpr std::size_t kMostCallers = 64;

// The interfaces Open MPI's TCP transport was told to use (mpirun passes MCA parameters to
// its ranks in the environment), as subnets ("10.1.0.0/16") or interface names ("eth1").
std::vector<std::string> mpi_interfaces() {
  std::vector<std::string> out;
  const char* include = std::getenv("OMPI_MCA_btl_tcp_if_include");
  if (include == nullptr) return out;
  std::string entry;
  for (const char* c = include;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (!entry.empty()) out.push_back(entry);
      entry.clear();
      if (*c == '\0') break;
    } else {
      entry += *c;
    }
  }
  return out;
}

// Whether interface `name` with `address` (network byte order) is one of `interfaces`.
bool among(const std::vector<std::string>& interfaces, const char* name, std::uint32_t address) {
  for (const auto& entry : interfaces) {
    const auto slash = entry.find('/');
    if (slash == std::string::npos) {
      if (entry == name) return true;
      continue;
    }
    in_addr subnet{};
    int bits = -1;
    try {
      bits = std::stoi(entry.substr(slash + 1));
    } catch (const std::exception&) {
      continue;  // not a subnet Open MPI would take either
    }
    if (bits < 0 || bits > 32 ||
        ::inet_pton(AF_INET, entry.substr(0, slash).c_str(), &subnet) != 1) {
      continue;
    }
    const std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
    if ((ntohl(address) & mask) == (ntohl(subnet.s_addr) & mask)) return true;
  }
  return false;
}

void no_delay(int fd) {
  const int on = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

}  // namespace

Doorbells::Doorbells(std::size_t workers, bool enabled)
    : bells_(workers), rung_(workers, 0), received_(workers, 0), news_since_(workers) {
  if (!enabled) return;
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener) return;
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  any.sin_port = 0;
  socklen_t length = sizeof any;
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&any), sizeof any) != 0 ||
      ::listen(listener.get(), static_cast<int>(std::min<std::size_t>(workers + 8, SOMAXCONN))) !=
          0 ||
      ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&any), &length) != 0) {
    return;
  }
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) return;
  // The interfaces MPI uses first: a bell on another path (a management network, or here a
  // bridge beside the relay that delays MPI's interface) may arrive long before or after the
  // message it announces. Loopback last: from another host (or network namespace) it reaches
  // the wrong machine.
  const auto mpi_uses = mpi_interfaces();
  std::vector<std::uint32_t> others;
  std::vector<std::uint32_t> loopback;
  std::size_t count = 0;
  for (const ifaddrs* i = interfaces; i != nullptr && count < kMostAddresses; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0) continue;
    const auto address = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    auto& list = (i->ifa_flags & IFF_LOOPBACK) != 0      ? loopback
                 : among(mpi_uses, i->ifa_name, address) ? addresses_
                                                         : others;
    list.push_back(address);
    ++count;
  }
  ::freeifaddrs(interfaces);
  addresses_.insert(addresses_.end(), others.begin(), others.end());
  addresses_.insert(addresses_.end(), loopback.begin(), loopback.end());
  if (addresses_.empty()) return;
  std::random_device entropy;
  token_ = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
  port_ = ntohs(any.sin_port);
  listener_ = std::move(listener);
}

Bytes Doorbells::invitation() const {
  wire::Writer w;
  w.u64(token_);
  w.u64(port_);
  w.u64(addresses_.size());
  for (const auto a : addresses_) w.u64(a);
  return std::move(w.buffer());
}

void Doorbells::collect() { wait(Clock::duration::zero()); }

void Doorbells::wait(Clock::duration timeout) {
  if (!listener_) return;
  std::vector<pollfd> fds;
  fds.push_back({listener_.get(), POLLIN, 0});
  for (const auto& c : callers_) fds.push_back({c.fd.get(), POLLIN, 0});
  for (const auto& b : bells_) fds.push_back({b.get(), POLLIN, 0});  // -1: ignored by poll
  const auto ns = std::max<std::int64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count(), 0);
  const timespec until{static_cast<time_t>(ns / 1'000'000'000),
                       static_cast<long>(ns % 1'000'000'000)};
  if (::ppoll(fds.data(), fds.size(), &until, nullptr) <= 0) return;
  std::size_t at = 1;
  for (auto it = callers_.begin(); it != callers_.end(); ++at) {
    const bool readable = fds[at].revents != 0;
    auto next = std::next(it);
    if (readable) read_hello(*it);
    if (!it->fd || Clock::now() - it->since > kHelloWait) callers_.erase(it);
    it = next;
  }
  for (std::size_t w = 0; w < bells_.size(); ++w, ++at) {
    if (fds[at].revents != 0) read_rings(w);
  }
  if (fds[0].revents != 0) accept_callers();
}

void Doorbells::accept_callers() {
  for (;;) {
    Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) return;  // EAGAIN, or a caller gone before it was accepted
    if (callers_.size() >= kMostCallers) callers_.pop_front();
    callers_.push_back(Caller{std::move(fd), {}, Clock::now()});
  }
}

void Doorbells::read_hello(Caller& caller) {
  std::array<std::byte, kHelloSize> buffer{};
  const auto got = ::read(caller.fd.get(), buffer.data(), kHelloSize - caller.hello.size());
  if (got <= 0) {
    if (got == 0 || (errno != EAGAIN && errno != EINTR)) caller.fd.reset();
    return;
  }
  caller.hello.insert(caller.hello.end(), buffer.begin(), buffer.begin() + got);
  if (caller.hello.size() < kHelloSize) return;
  wire::Reader in(caller.hello);
  const std::uint64_t token = in.u64();
  const std::uint64_t worker = in.u64();
  const std::uint64_t sent_before_invitation = in.u64();
  const std::uint64_t sent_before = in.u64();
  if (token != token_ || worker >= bells_.size() || sent_before_invitation > sent_before) {
    caller.fd.reset();
    return;
  }
  no_delay(caller.fd.get());
  bells_[worker] = std::move(caller.fd);
  // Messages sent before the hello ring no bell. Those sent after the invitation answer this
  // scheduler: they are waited for. Earlier ones answered another scheduler's batches (late,
  // or received by it already): they are not. A message may be received before its bell
  // rings (MPI and this connection race): then the bell is no news.
  received_[worker] = std::max(received_[worker], sent_before_invitation);
  rung_[worker] = std::max(rung_[worker], sent_before);
  news_since_[worker] = Clock::now();
  read_rings(worker);
}

void Doorbells::read_rings(std::size_t worker) {
  std::array<char, 512> buffer{};
  for (;;) {
    const auto got = ::read(bells_[worker].get(), buffer.data(), buffer.size());
    if (got > 0) {
      if (!news(worker)) news_since_[worker] = Clock::now();
      rung_[worker] += static_cast<std::uint64_t>(got);
      // A short read took every byte there was: no second call to hear EAGAIN.
      if (static_cast<std::size_t>(got) < buffer.size()) return;
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return;
    bells_[worker].reset();  // hung up (ended, killed, or invited by a later scheduler)
    hung_up_ = true;
    return;
  }
}

bool Doorbells::all_connected() const noexcept {
  return listener_ && !hung_up_ &&
         std::all_of(bells_.begin(), bells_.end(), [](const Fd& b) { return bool(b); });
}

std::size_t Doorbells::connected() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(bells_.begin(), bells_.end(), [](const Fd& b) { return bool(b); }));
}

std::optional<Clock::time_point> Doorbells::news_since() const noexcept {
  std::optional<Clock::time_point> oldest;
  for (std::size_t w = 0; w < rung_.size(); ++w) {
    if (news(w) && (!oldest || news_since_[w] < *oldest)) oldest = news_since_[w];
  }
  return oldest;
}

bool Doorbells::any_news() const noexcept {
  for (std::size_t w = 0; w < rung_.size(); ++w) {
    if (news(w)) return true;
  }
  return false;
}

void Bell::answer(wire::Reader& invitation, std::size_t worker) {
  fd_.reset();
  connected_ = false;
  addresses_.clear();
  token_ = invitation.u64();
  port_ = static_cast<std::uint16_t>(invitation.u64());
  const std::uint64_t count = invitation.u64();
  if (count > kMostAddresses) throw Error("ata::mpi: a malformed doorbell invitation");
  for (std::uint64_t i = 0; i < count; ++i) {
    addresses_.push_back(static_cast<std::uint32_t>(invitation.u64()));
  }
  worker_ = worker;
  sent_before_invitation_ = sent_;
  next_address_ = 0;
  try_next_address();
}

void Bell::try_next_address() noexcept {
  fd_.reset();
  for (; next_address_ < addresses_.size(); ++next_address_) {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return;
    sockaddr_in root{};
    root.sin_family = AF_INET;
    root.sin_port = htons(port_);
    root.sin_addr.s_addr = addresses_[next_address_];
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&root), sizeof root) == 0 ||
        errno == EINPROGRESS) {
      fd_ = std::move(fd);
      attempt_since_ = Clock::now();
      return;
    }
  }
}

void Bell::advance() noexcept {
  if (connected_ || !fd_) return;
  pollfd p{fd_.get(), POLLOUT, 0};
  if (::poll(&p, 1, 0) <= 0) {
    if (Clock::now() - attempt_since_ > kConnectWait) {
      ++next_address_;
      try_next_address();
    }
    return;
  }
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
    ++next_address_;
    try_next_address();
    return;
  }
  no_delay(fd_.get());
  wire::Writer hello;
  hello.u64(token_);
  hello.u64(worker_);
  hello.u64(sent_before_invitation_);
  hello.u64(sent_);
  const auto& bytes = hello.buffer();
  if (::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
      static_cast<ssize_t>(bytes.size())) {
    fd_.reset();  // the root polls for this rank
    return;
  }
  connected_ = true;
}

void Bell::ring() noexcept {
  if (!connected_) return;
  const char one = 1;
  if (::send(fd_.get(), &one, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
    // A bell that cannot ring must not ring again: the root sees it hang up and polls.
    fd_.reset();
    connected_ = false;
  }
}

}  // namespace ata::mpi::detail
