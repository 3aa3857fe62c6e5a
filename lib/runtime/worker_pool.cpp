#include "ata/runtime/worker_pool.hpp"

#include "runtime/pool_core.hpp"

namespace ata::runtime {

detail::PoolCore& detail::core_of(WorkerPool& pool) noexcept { return *pool.core_; }

WorkerPool::WorkerPool(std::size_t workers) : WorkerPool(PoolOptions(workers)) {}

WorkerPool::WorkerPool(const PoolOptions& options)
    : core_(std::make_unique<detail::PoolCore>(options)) {}

WorkerPool::~WorkerPool() = default;

std::size_t WorkerPool::size() const noexcept { return core_->size(); }

const PoolOptions& WorkerPool::options() const noexcept { return core_->options(); }

std::size_t WorkerPool::queued_chunks() const { return core_->queued(); }

bool WorkerPool::is_shut_down() const noexcept { return core_->is_shut_down(); }

void WorkerPool::shutdown() { core_->shutdown(); }

}  // namespace ata::runtime
