// ISA-L igzip: Intel's deflate, several times faster than zlib at a small cost in ratio. Levels
// 0-3; levels above 0 need a level buffer from the caller, allocated once per encoder at the
// largest size used so far. Whole-buffer mode uses igzip's stateless call (no copy of the input
// into the stream's history buffer); streaming uses the stateful one.

#include <isa-l/igzip_lib.h>

#include <algorithm>
#include <climits>
#include <new>

#include "codecs.h"

namespace accelgate::compress {
namespace {

size_t level_buffer_size(int isal_level) {
  switch (isal_level) {
    case 1:
      return ISAL_DEF_LVL1_DEFAULT;
    case 2:
      return ISAL_DEF_LVL2_DEFAULT;
    case 3:
      return ISAL_DEF_LVL3_DEFAULT;
    default:
      return 0;
  }
}

class IsalEncoder final : public Encoder {
 public:
  Codec codec() const override { return Codec::kIsal; }

  bool begin(int level) override {
    if (!prepare(level)) return false;
    if (!initialised_) {
      isal_deflate_init(&stream_);
      initialised_ = true;
    } else {
      isal_deflate_reset(&stream_);
    }
    configure();
    return true;
  }

  Status write(std::span<const uint8_t>& in, std::span<uint8_t>& out, Flush flush) override {
    if (!initialised_) return Status::kError;
    size_t in_now = std::min<size_t>(in.size(), UINT32_MAX);
    size_t out_now = std::min<size_t>(out.size(), UINT32_MAX);
    bool last = in_now == in.size();
    stream_.next_in = const_cast<uint8_t*>(in.data());  // igzip does not write its input
    stream_.avail_in = static_cast<uint32_t>(in_now);
    stream_.next_out = out.data();
    stream_.avail_out = static_cast<uint32_t>(out_now);
    stream_.end_of_stream = last && flush == Flush::kFinish ? 1 : 0;
    stream_.flush = last && flush == Flush::kSync ? SYNC_FLUSH : NO_FLUSH;
    int rc = isal_deflate(&stream_);
    in = in.subspan(in_now - stream_.avail_in);
    out = out.subspan(out_now - stream_.avail_out);
    if (rc != COMP_OK) return Status::kError;
    if (stream_.internal_state.state == ZSTATE_END) return Status::kDone;
    return Status::kOk;
  }

  std::optional<size_t> compress(std::span<const uint8_t> in, std::span<uint8_t> out,
                                 int level) override {
    if (in.size() > UINT32_MAX || !prepare(level)) return std::nullopt;
    if (!initialised_) {
      isal_deflate_init(&stream_);
      initialised_ = true;
    } else {
      isal_deflate_reset(&stream_);
    }
    configure();
    stream_.next_in = const_cast<uint8_t*>(in.data());
    stream_.avail_in = static_cast<uint32_t>(in.size());
    stream_.next_out = out.data();
    stream_.avail_out = static_cast<uint32_t>(std::min<size_t>(out.size(), UINT32_MAX));
    stream_.end_of_stream = 1;
    stream_.flush = NO_FLUSH;
    if (isal_deflate_stateless(&stream_) != COMP_OK || stream_.avail_in != 0) return std::nullopt;
    return static_cast<size_t>(stream_.total_out);
  }

 private:
  // prepare makes sure the level buffer is big enough for nginx level |level|.
  bool prepare(int level) {
    isal_level_ = codec_level(Codec::kIsal, level);
    size_t need = level_buffer_size(isal_level_);
    if (need > level_buf_size_) {
      level_buf_.reset(new (std::nothrow) uint8_t[need]);
      level_buf_size_ = level_buf_ ? need : 0;
      if (!level_buf_) return false;
    }
    return true;
  }

  void configure() {
    stream_.level = static_cast<uint32_t>(isal_level_);
    stream_.level_buf = level_buf_.get();
    stream_.level_buf_size = static_cast<uint32_t>(level_buf_size_);
    stream_.gzip_flag = IGZIP_GZIP;
    stream_.hist_bits = 0;  // the default 32 KiB window
  }

  isal_zstream stream_{};
  bool initialised_ = false;
  int isal_level_ = 0;
  std::unique_ptr<uint8_t[]> level_buf_;
  size_t level_buf_size_ = 0;
};

}  // namespace

std::unique_ptr<Encoder> make_isal_encoder() { return std::make_unique<IsalEncoder>(); }

}  // namespace accelgate::compress
