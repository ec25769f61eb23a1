#include "accelgate/common/metrics.h"

#include <gtest/gtest.h>

#include <thread>

namespace accelgate::metrics {
namespace {

TEST(Metrics, CounterWithLabelsRendersPrometheusText) {
  Registry& r = Registry::global();
  auto& family = r.counter("test_requests_total", "Test requests.", {"code"});
  family.with({"200"}).inc();
  family.with({"200"}).inc(2);
  family.with({"404"}).inc();
  std::string text = r.render();
  EXPECT_NE(text.find("# TYPE test_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("test_requests_total{code=\"200\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("test_requests_total{code=\"404\"} 1\n"), std::string::npos);
}

TEST(Metrics, SameNameReturnsSameFamily) {
  Registry& r = Registry::global();
  auto& a = r.gauge("test_gauge", "A gauge.");
  auto& b = r.gauge("test_gauge", "A gauge.");
  EXPECT_EQ(&a, &b);
  a.get().add(5);
  b.get().add(-2);
  EXPECT_EQ(a.get().value(), 3);
}

TEST(Metrics, LabelValuesAreEscaped) {
  Registry& r = Registry::global();
  r.counter("test_escape_total", "Escapes.", {"v"}).with({"a\"b\\c\nd"}).inc();
  EXPECT_NE(r.render().find("test_escape_total{v=\"a\\\"b\\\\c\\nd\"} 1"), std::string::npos);
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Registry& r = Registry::global();
  auto& h = r.histogram("test_latency_seconds", "Latency.", {}, {0.1, 1.0}).get();
  h.observe(0.05);
  h.observe(0.5);
  h.observe(0.5);
  h.observe(5);
  std::string text = r.render();
  EXPECT_NE(text.find("test_latency_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("test_latency_seconds_bucket{le=\"1\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("test_latency_seconds_bucket{le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("test_latency_seconds_count 4\n"), std::string::npos);
  size_t sum = text.find("test_latency_seconds_sum ");
  ASSERT_NE(sum, std::string::npos);
  EXPECT_DOUBLE_EQ(std::stod(text.substr(sum + 25)), 0.05 + 0.5 + 0.5 + 5);
}

TEST(Metrics, CountersSumAcrossThreads) {
  auto& c = Registry::global().counter("test_threads_total", "Threads.").get();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 10000; ++i) c.inc();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000u);
}

}  // namespace
}  // namespace accelgate::metrics
