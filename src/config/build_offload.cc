// The `offload { }` block of the main context (DESIGN.md, "Configuration"). Engine names are
// checked here; whether an engine can run on this machine is decided when the server starts
// (the offload layer probes it), so `-t` on a build host without a card still passes.

#include <charconv>
#include <cmath>

#include "builder.h"

namespace accelgate::config {
namespace {

void offload(Builder& b, const Directive& d) {
  OffloadSettings& o = b.config().offload;
  o.where = d.where;
  b.run_block(d, kOffload);
  // Control commands are for an ENGINE loaded by `crypto openssl:ID` (whether ID is an ENGINE
  // or a provider is known only when it loads; a provider refuses them then).
  if (!o.engine_ctrls.empty() && !o.crypto.starts_with("openssl:")) {
    fail(o.engine_ctrls.front().where,
         R"("openssl_engine_ctrl" needs "crypto openssl:ID" naming an OpenSSL ENGINE)");
  }
}

void crypto(Builder& b, const Directive& d) {
  const std::string& v = d.args[0];
  static const char* const kNames[] = {"auto", "off", "sw", "pool", "emu", "mb"};
  bool known = false;
  for (const char* name : kNames) known |= v == name;
  if (v.starts_with("openssl:")) known = v.size() > 8;
  if (!known) {
    invalid_value(d, v, "expecting auto, off, sw, pool, emu, mb or openssl:<id>");
  }
  b.config().offload.crypto = v;
}

void fallback(Builder& b, const Directive& d) { b.config().offload.fallback = flag_arg(d, 0); }

void op_timeout(Builder& b, const Directive& d) {
  Millis t = time_arg(d, 0);
  if (t.count() == 0) invalid_value(d, d.args[0], "the timeout must be at least 1ms");
  b.config().offload.op_timeout = t;
}

void retry_interval(Builder& b, const Directive& d) {
  b.config().offload.retry_interval = time_arg(d, 0);
}

void pool_threads(Builder& b, const Directive& d) {
  if (d.args[0] == "auto") {
    b.config().offload.pool_threads = 0;
    return;
  }
  b.config().offload.pool_threads = static_cast<int>(number_arg(d, 0, 1, 256));
}

void notify(Builder& b, const Directive& d) {
  const std::string& v = d.args[0];
  if (v == "event") {
    b.config().offload.notify = OffloadSettings::Notify::kEvent;
  } else if (v == "poll") {
    b.config().offload.notify = OffloadSettings::Notify::kPoll;
  } else {
    invalid_value(d, v, "expecting event or poll");
  }
}

void poll_mode(Builder& b, const Directive& d) {
  const std::string& v = d.args[0];
  using M = OffloadSettings::PollMode;
  if (v == "heuristic") {
    b.config().offload.poll_mode = M::kHeuristic;
  } else if (v == "timer") {
    b.config().offload.poll_mode = M::kTimer;
  } else if (v == "busy") {
    b.config().offload.poll_mode = M::kBusy;
  } else {
    invalid_value(d, v, "expecting heuristic, timer or busy");
  }
}

// openssl_engine_ctrl NAME [VALUE]; as asynch_mode_nginx's engine settings and openssl.cnf's
// engine sections pass them (ENGINE_ctrl_cmd_string): QAT_Engine's ENABLE_HEURISTIC_POLLING,
// SET_INTERNAL_POLL_INTERVAL 10000, ... The engine checks name and value when it loads.
void openssl_engine_ctrl(Builder& b, const Directive& d) {
  OffloadSettings::EngineCtrl ctrl;
  ctrl.name = d.args[0];
  if (ctrl.name.empty()) invalid_value(d, ctrl.name, "expecting a control command name");
  ctrl.has_value = d.args.size() > 1;
  if (ctrl.has_value) ctrl.value = d.args[1];
  ctrl.where = d.where;
  b.config().offload.engine_ctrls.push_back(std::move(ctrl));
}

// parse_micros reads "200us", "2ms", "1s" or a bare number of milliseconds (nginx's default unit).
std::optional<std::chrono::microseconds> parse_micros(std::string_view text) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  std::string_view unit(end, text.data() + text.size() - end);
  if (n > 60'000'000) return std::nullopt;
  if (unit == "us") return std::chrono::microseconds(n);
  if (unit == "ms" || unit.empty()) return std::chrono::microseconds(n * 1000);
  if (unit == "s") return std::chrono::microseconds(n * 1'000'000);
  return std::nullopt;
}

std::optional<double> parse_rate(std::string_view text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0 ||
      v > 1) {
    return std::nullopt;
  }
  return v;
}

// mb_flush TIME; at most 1s: a batch waiting longer would pass any sane op_timeout.
void mb_flush(Builder& b, const Directive& d) {
  auto v = parse_micros(d.args[0]);
  if (!v || *v > std::chrono::seconds(1)) {
    invalid_value(d, d.args[0], "expecting a time such as 0, 20us or 1ms, at most 1s");
  }
  b.config().offload.mb_flush = *v;
}

// emu latency=200us capacity=64 error_rate=0 hang_rate=0 control=FILE;
void emu(Builder& b, const Directive& d) {
  OffloadSettings::Emu& e = b.config().offload.emu;
  for (const std::string& arg : d.args) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      invalid_value(d, arg, "expecting latency=, capacity=, error_rate=, hang_rate= or control=");
    }
    std::string_view key(arg.data(), eq);
    std::string_view value(arg.data() + eq + 1, arg.size() - eq - 1);
    if (key == "latency") {
      auto v = parse_micros(value);
      if (!v) invalid_value(d, arg, "expecting a time such as 200us or 2ms");
      e.latency = *v;
    } else if (key == "capacity") {
      uint64_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 1'000'000) {
        invalid_value(d, arg, "expecting a number from 1 to 1000000");
      }
      e.capacity = static_cast<uint32_t>(n);
    } else if (key == "error_rate" || key == "hang_rate") {
      auto v = parse_rate(value);
      if (!v) invalid_value(d, arg, "expecting a fraction from 0 to 1");
      (key == "error_rate" ? e.error_rate : e.hang_rate) = *v;
    } else if (key == "control") {
      if (value.empty()) invalid_value(d, arg, "expecting a file name");
      e.control = b.resolve_path(std::string(value));
    } else {
      invalid_value(d, arg, "expecting latency=, capacity=, error_rate=, hang_rate= or control=");
    }
  }
}

using F = DirectiveSpec::Flags;

constexpr DirectiveSpec kOffloadDirectives[] = {
    {"offload", kMain, 0, 0, F::kBlock | F::kOnce, offload},
    {"crypto", kOffload, 1, 1, F::kOnce, crypto},
    {"fallback", kOffload, 1, 1, F::kOnce, fallback},
    {"op_timeout", kOffload, 1, 1, F::kOnce, op_timeout},
    {"retry_interval", kOffload, 1, 1, F::kOnce, retry_interval},
    {"pool_threads", kOffload, 1, 1, F::kOnce, pool_threads},
    {"notify", kOffload, 1, 1, F::kOnce, notify},
    {"poll_mode", kOffload, 1, 1, F::kOnce, poll_mode},
    {"mb_flush", kOffload, 1, 1, F::kOnce, mb_flush},
    {"emu", kOffload, 1, kAnyArgs, F::kOnce, emu},
    {"openssl_engine_ctrl", kOffload, 1, 2, F::kNone, openssl_engine_ctrl},
};

}  // namespace

std::span<const DirectiveSpec> offload_directives() { return kOffloadDirectives; }

}  // namespace accelgate::config
