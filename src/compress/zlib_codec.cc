// zlib: the reference codec, and the fallback of every other one. A gzip stream is deflate with
// windowBits 15 + 16 (zlib writes the RFC 1952 header and trailer itself) and memLevel 8, the
// settings nginx's gzip filter starts from.

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "codecs.h"

namespace accelgate::compress {
namespace {

constexpr int kGzipWindowBits = 15 + 16;
constexpr int kMemLevel = 8;

class ZlibEncoder final : public Encoder {
 public:
  ZlibEncoder() = default;
  ZlibEncoder(const ZlibEncoder&) = delete;
  ZlibEncoder& operator=(const ZlibEncoder&) = delete;
  ~ZlibEncoder() override {
    if (initialised_) deflateEnd(&z_);
  }

  Codec codec() const override { return Codec::kZlib; }

  bool begin(int level) override {
    int zl = codec_level(Codec::kZlib, level);
    if (!initialised_) {
      if (deflateInit2(&z_, zl, Z_DEFLATED, kGzipWindowBits, kMemLevel, Z_DEFAULT_STRATEGY) !=
          Z_OK) {
        return false;
      }
      initialised_ = true;
      level_ = zl;
      return true;
    }
    if (deflateReset(&z_) != Z_OK) return false;
    // After a reset nothing is buffered, so changing the level compresses nothing yet.
    if (zl != level_) {
      if (deflateParams(&z_, zl, Z_DEFAULT_STRATEGY) != Z_OK) return false;
      level_ = zl;
    }
    return true;
  }

  Status write(std::span<const uint8_t>& in, std::span<uint8_t>& out, Flush flush) override {
    if (!initialised_) return Status::kError;
    // avail_in and avail_out are 32-bit: larger spans are worked through in pieces, and the
    // flush applies only once the last piece of input has been given.
    size_t in_now = std::min<size_t>(in.size(), UINT_MAX);
    size_t out_now = std::min<size_t>(out.size(), UINT_MAX);
    int mode = Z_NO_FLUSH;
    if (in_now == in.size()) {
      mode = flush == Flush::kFinish ? Z_FINISH : flush == Flush::kSync ? Z_SYNC_FLUSH : Z_NO_FLUSH;
    }
    z_.next_in = const_cast<Bytef*>(in.data());  // zlib does not write its input
    z_.avail_in = static_cast<uInt>(in_now);
    z_.next_out = out.data();
    z_.avail_out = static_cast<uInt>(out_now);
    int rc = deflate(&z_, mode);
    in = in.subspan(in_now - z_.avail_in);
    out = out.subspan(out_now - z_.avail_out);
    if (rc == Z_STREAM_END) return Status::kDone;
    // Z_BUF_ERROR only says no progress was possible (no room, or nothing to do): not an error.
    if (rc == Z_OK || rc == Z_BUF_ERROR) return Status::kOk;
    return Status::kError;
  }

  std::optional<size_t> compress(std::span<const uint8_t> in, std::span<uint8_t> out,
                                 int level) override {
    if (!begin(level)) return std::nullopt;
    size_t capacity = out.size();
    for (;;) {
      size_t before = in.size() + out.size();
      Status s = write(in, out, Flush::kFinish);
      if (s == Status::kDone) return capacity - out.size();
      if (s == Status::kError || out.empty() || in.size() + out.size() == before) {
        return std::nullopt;
      }
    }
  }

 private:
  z_stream z_{};
  bool initialised_ = false;
  int level_ = 0;
};

}  // namespace

std::unique_ptr<Encoder> make_zlib_encoder() { return std::make_unique<ZlibEncoder>(); }

}  // namespace accelgate::compress
