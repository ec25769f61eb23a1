// libdeflate: whole-buffer deflate with better ratios than zlib at each level and about twice its
// speed. It has no streaming API: in streaming mode the encoder keeps the input and compresses it
// when the stream finishes (memory: the whole body, allocated per stream; whole-buffer mode, the
// one the server uses for static files, allocates nothing). Compressors are made per libdeflate
// level on first use and kept.

#include <libdeflate.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "codecs.h"

namespace accelgate::compress {
namespace {

constexpr int kMaxLibdeflateLevel = 12;

class LibdeflateEncoder final : public Encoder {
 public:
  LibdeflateEncoder() = default;
  LibdeflateEncoder(const LibdeflateEncoder&) = delete;
  LibdeflateEncoder& operator=(const LibdeflateEncoder&) = delete;
  ~LibdeflateEncoder() override {
    for (libdeflate_compressor* c : compressors_) libdeflate_free_compressor(c);
  }

  Codec codec() const override { return Codec::kLibdeflate; }

  bool begin(int level) override {
    compressor_ = compressor_for(level);
    pending_.clear();
    output_.clear();
    output_pos_ = 0;
    finished_ = false;
    return compressor_ != nullptr;
  }

  Status write(std::span<const uint8_t>& in, std::span<uint8_t>& out, Flush flush) override {
    if (compressor_ == nullptr) return Status::kError;
    if (!finished_) {
      try {
        pending_.insert(pending_.end(), in.begin(), in.end());
      } catch (const std::bad_alloc&) {
        return Status::kError;
      }
      in = in.subspan(in.size());
      if (flush != Flush::kFinish) return Status::kOk;
      try {
        output_.resize(max_compressed_size(pending_.size()));
      } catch (const std::bad_alloc&) {
        return Status::kError;
      }
      size_t n = libdeflate_gzip_compress(compressor_, pending_.data(), pending_.size(),
                                          output_.data(), output_.size());
      if (n == 0) return Status::kError;
      output_.resize(n);
      std::vector<uint8_t>().swap(pending_);
      finished_ = true;
    }
    size_t n = std::min(out.size(), output_.size() - output_pos_);
    if (n > 0) std::memcpy(out.data(), output_.data() + output_pos_, n);
    output_pos_ += n;
    out = out.subspan(n);
    return output_pos_ == output_.size() ? Status::kDone : Status::kOk;
  }

  std::optional<size_t> compress(std::span<const uint8_t> in, std::span<uint8_t> out,
                                 int level) override {
    libdeflate_compressor* c = compressor_for(level);
    if (c == nullptr) return std::nullopt;
    size_t n = libdeflate_gzip_compress(c, in.data(), in.size(), out.data(), out.size());
    if (n == 0) return std::nullopt;  // did not fit: cannot happen with the documented bound
    return n;
  }

 private:
  libdeflate_compressor* compressor_for(int level) {
    int ld = codec_level(Codec::kLibdeflate, level);
    libdeflate_compressor*& c = compressors_[ld];
    if (c == nullptr) c = libdeflate_alloc_compressor(ld);  // null when memory is short
    return c;
  }

  libdeflate_compressor* compressors_[kMaxLibdeflateLevel + 1] = {};
  libdeflate_compressor* compressor_ = nullptr;  // of the current stream
  std::vector<uint8_t> pending_;                 // streaming: the input so far
  std::vector<uint8_t> output_;                  // streaming: the finished stream
  size_t output_pos_ = 0;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<Encoder> make_libdeflate_encoder() { return std::make_unique<LibdeflateEncoder>(); }

}  // namespace accelgate::compress
