// One batch on two threads, watched by ata::prometheus: the registry then counts it.
#include <ata/ata.hpp>
#include <ata/metrics/prometheus_observer.hpp>
#include <iostream>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <string>

int main() {
  prometheus::Registry registry;
  ata::metrics::PrometheusObserver metrics(registry, 2);
  ata::runtime::WorkerPool pool(2);
  ata::UniformPolicy policy(2);
  ata::runtime::BatchScheduler scheduler(pool, policy);
  scheduler.set_observer(&metrics);
  scheduler.run(4, [](const ata::runtime::TaskContext&) {});
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  const bool counted = text.find("ata_batches_total{outcome=\"succeeded\"} 1\n") != std::string::npos;
  std::cout << (counted ? "one batch counted\n" : text);
  return counted ? 0 : 1;
}
