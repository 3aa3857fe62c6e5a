// ata-cluster-relay: the links of a scripts/cluster built with --delay or --loss (docs/mpi.md,
// "Delay and loss: the relay"). This kernel has no netem, so fixed latency and loss are made
// here: every rank's namespace has a TUN device on the relay's /24, and this process reads the
// IP packets each host sends into its TUN, holds each for its link's one-way delay (a timer
// heap), drops it with its link's loss probability, and writes it into the destination host's
// TUN. A packet between hosts a and b waits the larger of their links' delays and is dropped
// with the larger of their loss probabilities. Drops are decided by a counter-based stream per
// (source, destination) pair, so the n-th packet of a pair meets the same fate for one seed,
// whatever the other pairs send. SIGUSR1 re-reads the links file (scripts/cluster delay, loss);
// SIGTERM or SIGINT ends the relay, which then prints what it did.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Link {
  std::chrono::nanoseconds delay{0};
  double loss = 0.0;
};

volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_reload = 0;

std::runtime_error failure(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

// One line per host, in rank order: "DELAY_US LOSS" (scripts/cluster writes it).
std::vector<Link> read_links(const std::string& path, std::size_t hosts) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the links file " + path);
  std::vector<Link> links;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    long long delay_us = -1;
    double loss = -1.0;
    std::string extra;
    if (!(fields >> delay_us >> loss) || (fields >> extra) || delay_us < 0 || loss < 0.0 ||
        loss >= 1.0) {
      throw std::runtime_error(path + ", line " + std::to_string(links.size() + 1) +
                               ": expected 'DELAY_US LOSS' (LOSS in [0, 1)), got '" + line + "'");
    }
    links.push_back({std::chrono::microseconds(delay_us), loss});
  }
  if (links.size() != hosts) {
    throw std::runtime_error(path + ": " + std::to_string(links.size()) + " links for " +
                             std::to_string(hosts) + " hosts");
  }
  return links;
}

// Attaches to the persistent TUN `device` of network namespace `ns` (/run/netns/NS), from
// inside that namespace, then returns to this process's own.
int open_tun(const std::string& ns, const std::string& device) {
  const int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home < 0) throw failure("open /proc/self/ns/net");
  const int target = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) throw failure("open /run/netns/" + ns);
  if (setns(target, CLONE_NEWNET) != 0) throw failure("setns into " + ns);
  const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw failure("open /dev/net/tun");
  ifreq request{};
  request.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (device.size() >= sizeof request.ifr_name) throw std::runtime_error("device name too long");
  std::memcpy(request.ifr_name, device.c_str(), device.size());
  if (ioctl(fd, TUNSETIFF, &request) != 0) throw failure("attach to " + device + " in " + ns);
  if (setns(home, CLONE_NEWNET) != 0) throw failure("setns back");
  close(target);
  close(home);
  return fd;
}

std::array<std::uint8_t, 3> parse_prefix(const std::string& text) {
  std::array<std::uint8_t, 3> prefix{};
  std::istringstream in(text);
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    unsigned octet = 256;
    char dot = '.';
    if ((i > 0 && !(in >> dot)) || dot != '.' || !(in >> octet) || octet > 255) {
      throw CLI::ValidationError("--prefix", "expected A.B.C, got '" + text + "'");
    }
    prefix[i] = static_cast<std::uint8_t>(octet);
  }
  if (!in.eof() && in.peek() != std::char_traits<char>::eof()) {
    throw CLI::ValidationError("--prefix", "expected A.B.C, got '" + text + "'");
  }
  return prefix;
}

// SplitMix64's finaliser: a well-mixed 64-bit value of (seed, pair, packet number).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Pending {
  Clock::time_point due;
  std::uint64_t order;  // FIFO among packets due at the same time
  std::size_t to;
  std::vector<std::uint8_t> bytes;
  bool operator>(const Pending& other) const {
    return due != other.due ? due > other.due : order > other.order;
  }
};

class Relay {
 public:
  Relay(std::vector<int> tuns, std::array<std::uint8_t, 3> prefix, std::vector<Link> links,
        std::uint64_t seed)
      : tuns_(std::move(tuns)),
        prefix_(prefix),
        links_(std::move(links)),
        seed_(seed),
        sent_(tuns_.size() * tuns_.size(), 0),
        last_due_(tuns_.size() * tuns_.size()) {}

  void set_links(std::vector<Link> links) { links_ = std::move(links); }

  // Reads every packet host `from` has sent, and queues or drops each.
  void take(std::size_t from, Clock::time_point now) {
    for (;;) {
      const ssize_t got = read(tuns_[from], buffer_.data(), buffer_.size());
      if (got < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        throw failure("read from host " + std::to_string(from) + "'s TUN");
      }
      const auto size = static_cast<std::size_t>(got);
      const auto to = destination(buffer_.data(), size);
      if (to == tuns_.size() || to == from) {
        ++unroutable_;  // not IPv4 on our /24 (IPv6 router solicitations, say)
        continue;
      }
      const std::size_t pair = from * tuns_.size() + to;
      const double loss = std::max(links_[from].loss, links_[to].loss);
      const auto n = sent_[pair]++;
      const double u = static_cast<double>(mix(seed_ ^ mix(pair) ^ mix(n ^ 0x5bd1e995ULL)) >> 11) *
                       0x1.0p-53;
      if (u < loss) {
        ++dropped_;
        continue;
      }
      // Never before the pair's previous packet: a delay made shorter mid-run reorders nothing.
      auto due = now + std::max(links_[from].delay, links_[to].delay);
      due = std::max(due, last_due_[pair]);
      last_due_[pair] = due;
      queue_.push({due, order_++, to, std::vector<std::uint8_t>(buffer_.begin(),
                                                                buffer_.begin() + got)});
    }
  }

  // Writes every packet due by `now`.
  void deliver(Clock::time_point now) {
    while (!queue_.empty() && queue_.top().due <= now) {
      const auto& p = queue_.top();
      if (write(tuns_[p.to], p.bytes.data(), p.bytes.size()) < 0) {
        ++undelivered_;  // EIO: the host's TUN is down (scripts/cluster link R down)
      } else {
        ++relayed_;
      }
      queue_.pop();
    }
  }

  // How long until the next packet is due, or nothing when none waits.
  std::optional<Clock::duration> wait(Clock::time_point now) const {
    if (queue_.empty()) return std::nullopt;
    return std::max(queue_.top().due - now, Clock::duration::zero());
  }

  void report(const char* priority) const {
    const auto offered = relayed_ + undelivered_ + dropped_ + queue_.size();
    std::fprintf(stderr,
                 "ata-cluster-relay: %llu packets between hosts: %llu relayed, %llu dropped by "
                 "loss (%.2f%%), %llu undelivered (link down), %zu in flight at the end; %llu "
                 "unroutable ignored; ran at %s\n",
                 static_cast<unsigned long long>(offered),
                 static_cast<unsigned long long>(relayed_),
                 static_cast<unsigned long long>(dropped_),
                 offered == 0 ? 0.0 : 100.0 * static_cast<double>(dropped_) /
                                          static_cast<double>(offered),
                 static_cast<unsigned long long>(undelivered_), queue_.size(),
                 static_cast<unsigned long long>(unroutable_), priority);
  }

 private:
  // The host an IPv4 packet is for (its address's last octet minus 1), or tuns_.size().
  std::size_t destination(const std::uint8_t* p, std::size_t size) const {
    if (size < 20 || (p[0] >> 4) != 4) return tuns_.size();
    if (p[16] != prefix_[0] || p[17] != prefix_[1] || p[18] != prefix_[2]) return tuns_.size();
    const std::size_t host = p[19];
    return host >= 1 && host <= tuns_.size() ? host - 1 : tuns_.size();
  }

  std::vector<int> tuns_;
  std::vector<std::uint8_t> buffer_ = std::vector<std::uint8_t>(65536);  // one IP packet at most
  std::array<std::uint8_t, 3> prefix_;
  std::vector<Link> links_;
  std::uint64_t seed_;
  std::vector<std::uint64_t> sent_;
  std::vector<Clock::time_point> last_due_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  std::uint64_t order_ = 0;
  unsigned long long relayed_ = 0;
  unsigned long long dropped_ = 0;
  unsigned long long undelivered_ = 0;
  unsigned long long unroutable_ = 0;
};

void write_ready(const std::string& path) {
  const std::string temp = path + ".tmp";
  std::ofstream(temp) << getpid() << '\n';
  if (std::rename(temp.c_str(), path.c_str()) != 0) throw failure("rename " + temp);
}

int run(const std::vector<std::string>& namespaces, const std::string& device,
        const std::string& prefix_text, const std::string& links_path, std::uint64_t seed,
        const std::string& ready) {
  const auto prefix = parse_prefix(prefix_text);
  std::vector<int> tuns;
  for (const auto& ns : namespaces) tuns.push_back(open_tun(ns, device));
  Relay relay(tuns, prefix, read_links(links_path, tuns.size()), seed);

  // Signals arrive only inside ppoll, so the loop sees each at a known point.
  sigset_t handled;
  sigemptyset(&handled);
  for (const int s : {SIGTERM, SIGINT, SIGUSR1}) sigaddset(&handled, s);
  sigset_t during_wait;
  sigprocmask(SIG_BLOCK, &handled, &during_wait);
  struct sigaction action {};
  action.sa_handler = [](int s) {
    if (s == SIGUSR1) {
      g_reload = 1;
    } else {
      g_stop = 1;
    }
  };
  for (const int s : {SIGTERM, SIGINT, SIGUSR1}) sigaction(s, &action, nullptr);
  // Timers fire within a microsecond of the due time, not the default 50 us slack; and the
  // relay is the network, so the machine's load must not delay it: a real-time priority where
  // allowed (the kernel keeps 5% of each CPU for the rest), else the highest nice.
  prctl(PR_SET_TIMERSLACK, 1UL);
  const sched_param priority{.sched_priority = 10};
  const bool real_time = sched_setscheduler(0, SCHED_FIFO, &priority) == 0;
  if (!real_time) setpriority(PRIO_PROCESS, 0, -20);
  if (!ready.empty()) write_ready(ready);

  std::vector<pollfd> polls;
  for (const int fd : tuns) polls.push_back({fd, POLLIN, 0});
  while (g_stop == 0) {
    const auto wait = relay.wait(Clock::now());
    timespec timeout{};
    if (wait) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*wait).count();
      timeout.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
      timeout.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    }
    const int ready_fds = ppoll(polls.data(), polls.size(), wait ? &timeout : nullptr,
                                &during_wait);
    if (ready_fds < 0 && errno != EINTR) throw failure("ppoll");
    if (g_reload != 0) {
      g_reload = 0;
      relay.set_links(read_links(links_path, tuns.size()));
    }
    const auto now = Clock::now();
    for (std::size_t i = 0; ready_fds > 0 && i < polls.size(); ++i) {
      if ((polls[i].revents & POLLIN) != 0) relay.take(i, now);
    }
    relay.deliver(Clock::now());
  }
  relay.report(real_time ? "SCHED_FIFO 10" : "nice -20");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The delaying, lossy links of a scripts/cluster cluster (run by the script)"};
  std::vector<std::string> namespaces;
  std::string device = "atr";
  std::string prefix;
  std::string links;
  std::uint64_t seed = 1;
  std::string ready;
  app.add_option("--netns", namespaces, "the hosts' network namespaces, in rank order")
      ->required();
  app.add_option("--device", device, "the TUN device's name in every namespace");
  app.add_option("--prefix", prefix, "the relay's /24 (A.B.C): host r is A.B.C.(r+1)")->required();
  app.add_option("--links", links, "per host, in rank order: 'DELAY_US LOSS' lines")->required();
  app.add_option("--seed", seed, "the seed of the drop decisions");
  app.add_option("--ready", ready, "a file written (with this process's id) once it relays");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(namespaces, device, prefix, links, seed, ready);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ata-cluster-relay: %s\n", e.what());
    return 1;
  }
}
