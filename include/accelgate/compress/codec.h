#pragma once

// The codec interface (issue 7, item 1): zlib (the reference), ISA-L igzip and libdeflate behind
// one Encoder, each producing a standard gzip stream (RFC 1952: header, deflate data, CRC-32 and
// length trailer) that any gunzip reads.
//
// Levels are nginx's `gzip_comp_level` 1-9 everywhere in accelgate; codec_level() maps them onto
// each codec's own range (zlib 1-9, igzip 0-3, libdeflate 1-12). The mapping is in codec.cc with
// the corpus measurements it rests on, and in src/compress/README.md.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

namespace accelgate::compress {

enum class Codec : uint8_t { kZlib, kIsal, kLibdeflate };
inline constexpr size_t kCodecCount = 3;
inline constexpr Codec kAllCodecs[kCodecCount] = {Codec::kZlib, Codec::kIsal, Codec::kLibdeflate};

// codec_name is the codec's name in `gzip_engine`, in the `engine` metric label and in logs:
// "zlib", "isal", "libdeflate".
std::string_view codec_name(Codec codec);
std::optional<Codec> parse_codec(std::string_view name);

inline constexpr int kMinLevel = 1;
inline constexpr int kMaxLevel = 9;

// codec_level maps nginx level |level| (1-9; clamped) onto |codec|'s own level.
int codec_level(Codec codec, int level);

// max_compressed_size bounds the gzip stream any codec makes of |n| input bytes at any level
// (stored blocks in the worst case, plus header and trailer).
size_t max_compressed_size(size_t n);

// Flush is what write() does with the input it has taken.
enum class Flush {
  kNone,    // the codec may hold input back to compress it better
  kSync,    // everything given so far is emitted, byte-aligned (an empty stored block)
  kFinish,  // the stream ends: the rest, the last block, the trailer
};

// Encoder makes one gzip stream at a time and is reused for the next (begin() starts over), so
// its working memory (window, hash tables, level buffers) is allocated once. One thread at a time;
// an encoder may move between threads between streams.
class Encoder {
 public:
  enum class Status {
    kOk,     // progress; call again with more input or more output space
    kDone,   // with Flush::kFinish: the whole stream, trailer included, has been written
    kError,  // the codec failed; the stream is unusable until the next begin()
  };

  virtual ~Encoder() = default;
  virtual Codec codec() const = 0;

  // begin starts a new stream at nginx level |level|. False when the codec cannot (memory).
  virtual bool begin(int level) = 0;

  // write is streaming mode: takes bytes from the front of |in| and writes to the front of |out|,
  // advancing both past what it used. Input may be held back under Flush::kNone; kSync emits it;
  // kFinish ends the stream (call again while it returns kOk: the output was full). A codec with
  // no streaming API of its own (libdeflate) keeps the whole input and compresses it at kFinish;
  // its kSync emits nothing.
  virtual Status write(std::span<const uint8_t>& in, std::span<uint8_t>& out, Flush flush) = 0;

  // compress is whole-buffer mode: one complete stream of |in| at nginx level |level| into |out|,
  // whose size must be at least max_compressed_size(in.size()). Returns the stream's size, or
  // nullopt when the codec failed.
  virtual std::optional<size_t> compress(std::span<const uint8_t> in, std::span<uint8_t> out,
                                         int level) = 0;
};

// make_encoder returns a new encoder of |codec|, or null when memory is short. When the test
// hook ACCELGATE_TEST_GZIP_FAIL names the codec (a comma-separated list of codec names, or
// "all"), the encoder fails every stream, so fallback can be tested; unset, it costs nothing.
std::unique_ptr<Encoder> make_encoder(Codec codec);

// test_hook_fails says whether ACCELGATE_TEST_GZIP_FAIL names |codec|.
bool test_hook_fails(Codec codec);

}  // namespace accelgate::compress
