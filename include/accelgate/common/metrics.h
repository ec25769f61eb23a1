#pragma once

// The metrics registry: counters, gauges and histograms with labels, rendered as Prometheus text
// (exposition format 0.0.4). One process-wide registry; every worker thread updates the same
// atomic values (relaxed), so /metrics is the sum over workers without any merging step.
//
// Families and their children are created under a mutex and never destroyed, so a pointer to a
// child may be cached and updated lock-free on the hot path.

#include <atomic>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace accelgate::metrics {

class Counter {
 public:
  void inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void add(int64_t n) { value_.fetch_add(n, std::memory_order_relaxed); }
  void set(int64_t n) { value_.store(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Histogram counts observations into fixed upper bounds (seconds, bytes, ...). |bounds| are
// ascending; the +Inf bucket is implicit.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  uint64_t bucket(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // non-cumulative, one per bound
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

enum class Type { kCounter, kGauge, kHistogram };

// Family is one metric name with its label names; with() returns the child for a set of label
// values, creating it on first use. T is Counter, Gauge or Histogram.
template <typename T>
class Family {
 public:
  Family(std::string name, std::string help, std::vector<std::string> labels,
         std::vector<double> bounds = {});

  T& with(std::initializer_list<std::string_view> values);
  T& get() { return with({}); }

  const std::string& name() const { return name_; }
  // render appends this family's Prometheus text to |out|.
  void render(std::string* out) const;

 private:
  std::string name_;
  std::string help_;
  std::vector<std::string> labels_;
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_;
};

// Registry holds every family. Registering a name twice returns the existing family (so layers
// that start per worker can ask again); the type and labels must match.
class Registry {
 public:
  static Registry& global();

  Family<Counter>& counter(const std::string& name, const std::string& help,
                           std::vector<std::string> labels = {});
  Family<Gauge>& gauge(const std::string& name, const std::string& help,
                       std::vector<std::string> labels = {});
  Family<Histogram>& histogram(const std::string& name, const std::string& help,
                               std::vector<std::string> labels, std::vector<double> bounds);

  // render returns the whole registry as Prometheus text, families in registration order.
  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::deque<Family<Counter>> counters_;
  std::deque<Family<Gauge>> gauges_;
  std::deque<Family<Histogram>> histograms_;
  std::vector<std::pair<Type, const void*>> order_;
};

// thread_count is the gauge accelgate_threads{role}: every thread accelgate starts is counted
// under its role ("worker", "crypto" for the pool, "emu" for the emulated device) while it runs
// (DESIGN.md, "Threads": every extra thread is named and counted).
Gauge& thread_count(std::string_view role);

}  // namespace accelgate::metrics
