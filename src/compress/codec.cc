#include "accelgate/compress/codec.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>

#include "accelgate/common/log.h"
#include "codecs.h"

namespace accelgate::compress {
namespace {

// The level maps, indexed by nginx level (index 0 unused). Each nginx level goes to the fastest
// level of the codec whose output on the web corpus (shared/bench/corpus.sh, 39.7 MB of HTML, JS,
// CSS and JSON, file by file) is at most 10 % larger than zlib's at the same level for levels 1-3
// (chosen for speed), 2 % for levels 4-6, 0.5 % for levels 7-9 (chosen for size); where no level
// of the codec gets there (isal from level 4 on), the codec's best. Measured with
// bench/micro/codecs; the numbers are in src/compress/README.md.
constexpr int kIsalLevels[kMaxLevel + 1] = {0, 0, 1, 1, 3, 3, 3, 3, 3, 3};
constexpr int kLibdeflateLevels[kMaxLevel + 1] = {0, 1, 1, 1, 3, 5, 5, 6, 7, 7};

// FailingEncoder is the test hook's encoder: every stream fails, as a broken codec would.
class FailingEncoder final : public Encoder {
 public:
  explicit FailingEncoder(Codec codec) : codec_(codec) {}
  Codec codec() const override { return codec_; }
  bool begin(int) override { return true; }
  Status write(std::span<const uint8_t>&, std::span<uint8_t>&, Flush) override {
    return Status::kError;
  }
  std::optional<size_t> compress(std::span<const uint8_t>, std::span<uint8_t>, int) override {
    return std::nullopt;
  }

 private:
  Codec codec_;
};

// failing_codecs is the set ACCELGATE_TEST_GZIP_FAIL names, as a bit per codec; read once.
unsigned failing_codecs() {
  static const unsigned mask = [] {
    const char* env = std::getenv("ACCELGATE_TEST_GZIP_FAIL");
    if (env == nullptr || *env == '\0') return 0u;
    unsigned m = 0;
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      std::string name = list.substr(start, comma == std::string::npos ? comma : comma - start);
      if (name == "all") m = (1u << kCodecCount) - 1;
      if (auto c = parse_codec(name)) m |= 1u << static_cast<unsigned>(*c);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    AG_LOG_WARN("test hook active: ACCELGATE_TEST_GZIP_FAIL=%s makes these gzip codecs fail", env);
    return m;
  }();
  return mask;
}

}  // namespace

std::string_view codec_name(Codec codec) {
  switch (codec) {
    case Codec::kZlib:
      return "zlib";
    case Codec::kIsal:
      return "isal";
    case Codec::kLibdeflate:
      return "libdeflate";
  }
  return "unknown";
}

std::optional<Codec> parse_codec(std::string_view name) {
  for (Codec c : kAllCodecs) {
    if (codec_name(c) == name) return c;
  }
  return std::nullopt;
}

int codec_level(Codec codec, int level) {
  level = std::clamp(level, kMinLevel, kMaxLevel);
  switch (codec) {
    case Codec::kZlib:
      return level;
    case Codec::kIsal:
      return kIsalLevels[level];
    case Codec::kLibdeflate:
      return kLibdeflateLevels[level];
  }
  return level;
}

size_t max_compressed_size(size_t n) {
  // Stored blocks cost 5 bytes per 64 KiB (zlib, igzip); libdeflate's bound allows 5 bytes per
  // 5,000-byte block. n/512 covers both with room; 1 KiB covers the header, the trailer and
  // igzip's largest block header (ISAL_DEF_MAX_HDR_SIZE, 328 bytes).
  return n + (n >> 9) + 1024;
}

bool test_hook_fails(Codec codec) {
  return (failing_codecs() & (1u << static_cast<unsigned>(codec))) != 0;
}

std::unique_ptr<Encoder> make_encoder(Codec codec) {
  try {
    if (test_hook_fails(codec)) return std::make_unique<FailingEncoder>(codec);
    switch (codec) {
      case Codec::kZlib:
        return make_zlib_encoder();
      case Codec::kIsal:
        return make_isal_encoder();
      case Codec::kLibdeflate:
        return make_libdeflate_encoder();
    }
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return nullptr;
}

}  // namespace accelgate::compress
