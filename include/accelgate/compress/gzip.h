#pragma once

// Compressing one body with fallback (issue 7, item 3): the chosen codec first; if it fails (an
// error, memory), zlib; if zlib fails too, the body goes out uncompressed. Every step down is
// counted (accelgate_gzip_fallbacks_total{engine,to}) and warned about (rate-limited), and the
// response is never broken. Also the `gzip_engine auto` choice and the bytes metric.

#include <cstddef>
#include <optional>
#include <span>

#include "accelgate/compress/codec.h"

namespace accelgate::compress {

// LevelProfile is what bench/micro/codecs measured for one nginx level on the web corpus, per
// codec (indexed by Codec): single-core throughput and output size relative to zlib's.
struct LevelProfile {
  double mb_per_s[kCodecCount];
  double size_vs_zlib[kCodecCount];  // 1.0 for zlib itself
};
const LevelProfile& level_profile(int level);

// kAutoRatioLimit is `gzip_engine auto`'s bound: the output may be at most 10 % larger than
// zlib's at the same level (issue 7, item 5).
inline constexpr double kAutoRatioLimit = 1.10;

// choose_codec resolves `gzip_engine` at nginx level |level|: |requested| when it names a codec,
// else (auto) the fastest codec whose output stays within kAutoRatioLimit of zlib's, by the
// measured profile of that level.
Codec choose_codec(std::optional<Codec> requested, int level);

// GzipResult is how one body came out.
struct GzipResult {
  bool compressed = false;      // false: every codec failed; send the body uncompressed
  Codec engine = Codec::kZlib;  // the codec that made the stream (when compressed)
  size_t size = 0;              // bytes of the gzip stream written to the output
  bool fell_back = false;       // the preferred codec failed
};

// gzip_buffer compresses |in| into |out| (at least max_compressed_size(in.size()) bytes) with
// |preferred| at nginx level |level|, falling back to zlib and then to identity. Uses the calling
// thread's encoders (thread_encoder), so it allocates nothing after a thread's first body of a
// codec and level. Counts accelgate_gzip_bytes_total. Any thread.
GzipResult gzip_buffer(Codec preferred, int level, std::span<const uint8_t> in,
                       std::span<uint8_t> out);

// thread_encoder is the calling thread's encoder of |codec|, made on first use; null when it
// cannot be made (memory). It lives as long as the thread.
Encoder* thread_encoder(Codec codec);

// count_bytes adds one compressed body to accelgate_gzip_bytes_total{engine,direction}.
void count_bytes(Codec engine, size_t in, size_t out);
// count_fallback counts one body that |from| could not compress and that went to zlib
// (to_identity false) or out uncompressed (to_identity true), and logs it (rate-limited).
void count_fallback(Codec from, bool to_identity);

}  // namespace accelgate::compress
