#include "accelgate/common/metrics.h"

#include <cstdio>

namespace accelgate::metrics {
namespace {

// escape_label escapes a label value as the exposition format requires (\\, \", \n).
void append_escaped(std::string* out, std::string_view v) {
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      out->append("\\n");
    } else {
      out->push_back(c);
    }
  }
}

void append_labels(std::string* out, const std::vector<std::string>& names,
                   const std::vector<std::string>& values, std::string_view extra = {}) {
  if (names.empty() && extra.empty()) return;
  out->push_back('{');
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out->push_back(',');
    out->append(names[i]);
    out->append("=\"");
    append_escaped(out, values[i]);
    out->push_back('"');
  }
  if (!extra.empty()) {
    if (!names.empty()) out->push_back(',');
    out->append(extra);
  }
  out->push_back('}');
}

void append_number(std::string* out, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  out->append(buf);
}

void append_header(std::string* out, const std::string& name, const std::string& help,
                   const char* type) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void render_child(std::string* out, const std::string& name, const std::vector<std::string>& labels,
                  const std::vector<std::string>& values, const Counter& c) {
  out->append(name);
  append_labels(out, labels, values);
  out->append(" ").append(std::to_string(c.value())).append("\n");
}

void render_child(std::string* out, const std::string& name, const std::vector<std::string>& labels,
                  const std::vector<std::string>& values, const Gauge& g) {
  out->append(name);
  append_labels(out, labels, values);
  out->append(" ").append(std::to_string(g.value())).append("\n");
}

void render_child(std::string* out, const std::string& name, const std::vector<std::string>& labels,
                  const std::vector<std::string>& values, const Histogram& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= h.bounds().size(); ++i) {
    std::string le = "le=\"";
    if (i < h.bounds().size()) {
      cumulative += h.bucket(i);
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%g", h.bounds()[i]);
      le += buf;
    } else {
      cumulative = h.count();
      le += "+Inf";
    }
    le += "\"";
    out->append(name).append("_bucket");
    append_labels(out, labels, values, le);
    out->append(" ").append(std::to_string(cumulative)).append("\n");
  }
  out->append(name).append("_sum");
  append_labels(out, labels, values);
  out->append(" ");
  append_number(out, h.sum());
  out->append("\n");
  out->append(name).append("_count");
  append_labels(out, labels, values);
  out->append(" ").append(std::to_string(h.count())).append("\n");
}

template <typename T>
const char* type_name();
template <>
const char* type_name<Counter>() {
  return "counter";
}
template <>
const char* type_name<Gauge>() {
  return "gauge";
}
template <>
const char* type_name<Histogram>() {
  return "histogram";
}

template <typename T>
std::unique_ptr<T> make_child(const std::vector<double>& bounds) {
  if constexpr (std::is_same_v<T, Histogram>) {
    return std::make_unique<Histogram>(bounds);
  } else {
    (void)bounds;
    return std::make_unique<T>();
  }
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  double old = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(old, old + v, std::memory_order_relaxed)) {
  }
}

template <typename T>
Family<T>::Family(std::string name, std::string help, std::vector<std::string> labels,
                  std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      labels_(std::move(labels)),
      bounds_(std::move(bounds)) {}

template <typename T>
T& Family<T>::with(std::initializer_list<std::string_view> values) {
  std::vector<std::string> key(values.begin(), values.end());
  key.resize(labels_.size());
  std::lock_guard lock(mutex_);
  auto& child = children_[key];
  if (!child) child = make_child<T>(bounds_);
  return *child;
}

template <typename T>
void Family<T>::render(std::string* out) const {
  append_header(out, name_, help_, type_name<T>());
  std::lock_guard lock(mutex_);
  for (const auto& [values, child] : children_) render_child(out, name_, labels_, values, *child);
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Registry& Registry::global() {
  // Never destroyed: threads stopped during exit (the provider module's driver, torn down by
  // OpenSSL's own exit handler) still update their gauges.
  static auto* registry = new Registry();
  return *registry;
}

namespace {
template <typename T>
Family<T>* find(std::deque<Family<T>>& families, const std::string& name) {
  for (auto& f : families) {
    if (f.name() == name) return &f;
  }
  return nullptr;
}
}  // namespace

Family<Counter>& Registry::counter(const std::string& name, const std::string& help,
                                   std::vector<std::string> labels) {
  std::lock_guard lock(mutex_);
  if (auto* f = find(counters_, name)) return *f;
  auto& f = counters_.emplace_back(name, help, std::move(labels));
  order_.emplace_back(Type::kCounter, &f);
  return f;
}

Family<Gauge>& Registry::gauge(const std::string& name, const std::string& help,
                               std::vector<std::string> labels) {
  std::lock_guard lock(mutex_);
  if (auto* f = find(gauges_, name)) return *f;
  auto& f = gauges_.emplace_back(name, help, std::move(labels));
  order_.emplace_back(Type::kGauge, &f);
  return f;
}

Family<Histogram>& Registry::histogram(const std::string& name, const std::string& help,
                                       std::vector<std::string> labels,
                                       std::vector<double> bounds) {
  std::lock_guard lock(mutex_);
  if (auto* f = find(histograms_, name)) return *f;
  auto& f = histograms_.emplace_back(name, help, std::move(labels), std::move(bounds));
  order_.emplace_back(Type::kHistogram, &f);
  return f;
}

std::string Registry::render() const {
  std::string out;
  std::lock_guard lock(mutex_);
  for (const auto& [type, family] : order_) {
    switch (type) {
      case Type::kCounter:
        static_cast<const Family<Counter>*>(family)->render(&out);
        break;
      case Type::kGauge:
        static_cast<const Family<Gauge>*>(family)->render(&out);
        break;
      case Type::kHistogram:
        static_cast<const Family<Histogram>*>(family)->render(&out);
        break;
    }
  }
  return out;
}

Gauge& thread_count(std::string_view role) {
  static auto& family = Registry::global().gauge(
      "accelgate_threads", "Threads accelgate runs, by role (worker, crypto, emu).", {"role"});
  return family.with({role});
}

}  // namespace accelgate::metrics
