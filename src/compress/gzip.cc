#include "accelgate/compress/gzip.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>

#include "accelgate/common/log.h"
#include "accelgate/common/metrics.h"

namespace accelgate::compress {
namespace {

// kProfiles: bench/micro/codecs on the corpus (README.md, "Measurements"), per nginx level:
// MB/s of input per core for zlib, isal, libdeflate at the mapped levels, then output size
// relative to zlib's at that level.
constexpr LevelProfile kProfiles[kMaxLevel + 1] = {
    {{0, 0, 0}, {1, 1, 1}},
    {{77, 361, 156}, {1.0, 1.057, 0.919}},  // 1
    {{70, 297, 149}, {1.0, 1.021, 0.959}},  // 2
    {{59, 308, 144}, {1.0, 1.050, 0.987}},  // 3
    {{49, 121, 80}, {1.0, 1.071, 1.001}},   // 4
    {{37, 120, 61}, {1.0, 1.107, 0.999}},   // 5
    {{29, 104, 59}, {1.0, 1.121, 1.012}},   // 6
    {{27, 118, 49}, {1.0, 1.125, 1.005}},   // 7
    {{20, 114, 38}, {1.0, 1.127, 1.000}},   // 8
    {{19, 124, 38}, {1.0, 1.127, 1.000}},   // 9
};

metrics::Family<metrics::Counter>& bytes_family() {
  static auto& f = metrics::Registry::global().counter(
      "accelgate_gzip_bytes_total",
      "Bytes compressed by each gzip engine, into it (in) and out of it (out).",
      {"engine", "direction"});
  return f;
}

metrics::Family<metrics::Counter>& fallbacks_family() {
  static auto& f = metrics::Registry::global().counter(
      "accelgate_gzip_fallbacks_total",
      "Bodies a gzip engine could not compress, by where they went (zlib, or identity: sent "
      "uncompressed).",
      {"engine", "to"});
  return f;
}

// Counters are looked up once per process: the hot path only does relaxed atomic adds.
struct CodecCounters {
  metrics::Counter* in[kCodecCount];
  metrics::Counter* out[kCodecCount];
  metrics::Counter* to_zlib[kCodecCount];
  metrics::Counter* to_identity[kCodecCount];
};

const CodecCounters& counters() {
  static const CodecCounters c = [] {
    CodecCounters made{};
    for (Codec codec : kAllCodecs) {
      auto i = static_cast<size_t>(codec);
      made.in[i] = &bytes_family().with({codec_name(codec), "in"});
      made.out[i] = &bytes_family().with({codec_name(codec), "out"});
      // zlib is the last codec: what it cannot compress goes out uncompressed.
      if (codec != Codec::kZlib) {
        made.to_zlib[i] = &fallbacks_family().with({codec_name(codec), "zlib"});
      }
      made.to_identity[i] = &fallbacks_family().with({codec_name(codec), "identity"});
    }
    return made;
  }();
  return c;
}

std::atomic<int64_t> g_last_fallback_log{0};  // steady-clock seconds of the last warning

}  // namespace

const LevelProfile& level_profile(int level) {
  return kProfiles[std::clamp(level, kMinLevel, kMaxLevel)];
}

Codec choose_codec(std::optional<Codec> requested, int level) {
  if (requested) return *requested;
  const LevelProfile& p = level_profile(level);
  Codec best = Codec::kZlib;
  for (Codec c : kAllCodecs) {
    auto i = static_cast<size_t>(c);
    if (p.size_vs_zlib[i] > kAutoRatioLimit) continue;
    if (p.mb_per_s[i] > p.mb_per_s[static_cast<size_t>(best)]) best = c;
  }
  return best;
}

Encoder* thread_encoder(Codec codec) {
  thread_local std::array<std::unique_ptr<Encoder>, kCodecCount> encoders;
  auto& e = encoders[static_cast<size_t>(codec)];
  if (!e) e = make_encoder(codec);
  return e.get();
}

void count_bytes(Codec engine, size_t in, size_t out) {
  const CodecCounters& c = counters();
  c.in[static_cast<size_t>(engine)]->inc(in);
  c.out[static_cast<size_t>(engine)]->inc(out);
}

void count_fallback(Codec from, bool to_identity) {
  const CodecCounters& c = counters();
  auto i = static_cast<size_t>(from);
  metrics::Counter* counter = to_identity || from == Codec::kZlib ? c.to_identity[i] : c.to_zlib[i];
  counter->inc();
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  int64_t last = g_last_fallback_log.load(std::memory_order_relaxed);
  if (now - last < 5 ||
      !g_last_fallback_log.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    return;
  }
  std::string_view name = codec_name(from);
  AG_LOG_WARN(
      "gzip engine \"%.*s\" could not compress a body; it went %s (logged once per 5 s; see "
      "accelgate_gzip_fallbacks_total)",
      static_cast<int>(name.size()), name.data(), to_identity ? "out uncompressed" : "to zlib");
}

GzipResult gzip_buffer(Codec preferred, int level, std::span<const uint8_t> in,
                       std::span<uint8_t> out) {
  GzipResult r;
  Codec order[2] = {preferred, Codec::kZlib};
  size_t steps = preferred == Codec::kZlib ? 1 : 2;
  for (size_t i = 0; i < steps; ++i) {
    Encoder* e = thread_encoder(order[i]);
    std::optional<size_t> n;
    if (e != nullptr && out.size() >= max_compressed_size(in.size())) {
      n = e->compress(in, out, level);
    }
    if (n) {
      r.compressed = true;
      r.engine = order[i];
      r.size = *n;
      count_bytes(order[i], in.size(), *n);
      return r;
    }
    // Counted against the codec that failed, with where the body goes next.
    r.fell_back = true;
    count_fallback(order[i], i + 1 == steps);
  }
  return r;
}

}  // namespace accelgate::compress
