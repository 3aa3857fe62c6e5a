#pragma once
// The AsioLanes kinds of the [lanes] tests (see lane_kinds.hpp): an io_context per lane, one
// thread_pool shared by every lane, a strand per lane on a shared pool. Shared by the lane and
// engine tests.
#include <utility>  // before Asio (g++ 12)

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "ata/runtime/asio_lanes.hpp"
#include "lanes/lane_kinds.hpp"

namespace ata::testing {
namespace asio = boost::asio;

// One io_context per lane, each run by a thread of its own: a lane is one part of the service.
struct AsioContextPerLane {
  static constexpr std::string_view name = "AsioLanes, an io_context per lane";
  AsioContextPerLane() {
    for (std::size_t i = 0; i < kMaxLanes; ++i) {
      contexts.push_back(std::make_unique<asio::io_context>());
      guards.emplace_back(contexts.back()->get_executor());
      threads.emplace_back([context = contexts.back().get()] { context->run(); });
    }
  }
  ~AsioContextPerLane() {
    guards.clear();
    for (auto& thread : threads) thread.join();
  }
  AsioContextPerLane(const AsioContextPerLane&) = delete;
  AsioContextPerLane& operator=(const AsioContextPerLane&) = delete;

  std::unique_ptr<ata::runtime::Lanes> make(const ata::runtime::LaneOptions& options) {
    std::vector<asio::any_io_executor> executors;
    for (std::size_t i = 0; i < options.workers(); ++i) {
      executors.emplace_back(contexts[i]->get_executor());
    }
    return std::make_unique<ata::runtime::AsioLanes>(executors, options);
  }

  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::vector<std::thread> threads;
};

// Every lane posts to one thread_pool, as a service with one pool would.
struct AsioSharedPool {
  static constexpr std::string_view name = "AsioLanes, one thread_pool";
  asio::thread_pool pool{kMaxLanes};
  ~AsioSharedPool() { pool.join(); }
  std::unique_ptr<ata::runtime::Lanes> make(const ata::runtime::LaneOptions& options) {
    return std::make_unique<ata::runtime::AsioLanes>(
        std::vector<asio::any_io_executor>(options.workers(), pool.get_executor()), options);
  }
};

// A strand per lane on one shared pool.
struct AsioStrands {
  static constexpr std::string_view name = "AsioLanes, a strand per lane";
  asio::thread_pool pool{kMaxLanes};
  ~AsioStrands() { pool.join(); }
  std::unique_ptr<ata::runtime::Lanes> make(const ata::runtime::LaneOptions& options) {
    std::vector<asio::any_io_executor> executors;
    for (std::size_t i = 0; i < options.workers(); ++i) {
      executors.emplace_back(asio::make_strand(pool.get_executor()));
    }
    return std::make_unique<ata::runtime::AsioLanes>(executors, options);
  }
};

}  // namespace ata::testing
