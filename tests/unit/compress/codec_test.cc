// Every codec, every level: whole-buffer and streaming output is a standard gzip stream that
// zlib's inflate (and so `gzip -d`) turns back into the exact input, for web text and binary
// data from 0 bytes to 8 MB; the documented bound holds for incompressible input; the level map
// and the auto choice keep their promises.

#include "accelgate/compress/codec.h"

#include <gtest/gtest.h>

#include <map>

#include "accelgate/compress/gzip.h"
#include "test_data.h"

namespace accelgate::compress {
namespace {

using testing::gunzip;
using testing::Kind;
using testing::kKinds;
using testing::make_input;

std::vector<uint8_t> compress_whole(Encoder& e, const std::vector<uint8_t>& in, int level) {
  std::vector<uint8_t> out(max_compressed_size(in.size()));
  auto n = e.compress(in, out, level);
  if (!n) return {};
  out.resize(*n);
  return out;
}

// compress_stream feeds |in| in |chunk|-byte pieces through a 4 KiB output window, with a sync
// flush every |sync_every| pieces (0: never), and finishes with the last piece. Empty on failure.
std::vector<uint8_t> compress_stream(Encoder& e, const std::vector<uint8_t>& in, int level,
                                     size_t chunk, size_t sync_every) {
  if (!e.begin(level)) return {};
  std::vector<uint8_t> result;
  uint8_t window[4096];
  size_t pos = 0;
  for (size_t pieces = 1;; ++pieces) {
    size_t take = std::min(chunk, in.size() - pos);
    std::span<const uint8_t> piece(in.data() + pos, take);
    pos += take;
    Flush flush = Flush::kNone;
    if (pos == in.size()) {
      flush = Flush::kFinish;
    } else if (sync_every != 0 && pieces % sync_every == 0) {
      flush = Flush::kSync;
    }
    for (;;) {
      std::span<uint8_t> space(window);
      size_t before = piece.size();
      Encoder::Status s = e.write(piece, space, flush);
      size_t produced = sizeof(window) - space.size();
      result.insert(result.end(), window, window + produced);
      if (s == Encoder::Status::kError) return {};
      if (s == Encoder::Status::kDone)
        return flush == Flush::kFinish ? result : std::vector<uint8_t>{};
      // kOk: a full window means more output is waiting; otherwise the piece is done once it
      // has been taken (for kFinish the codec must reach kDone, so progress is required).
      if (!space.empty() && piece.empty() && flush != Flush::kFinish) break;
      if (produced == 0 && piece.size() == before) return {};  // no progress: a codec bug
    }
  }
}

class CodecTest : public ::testing::TestWithParam<Codec> {};

TEST_P(CodecTest, WholeBufferRoundTripsEveryLevelAndKind) {
  auto e = make_encoder(GetParam());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->codec(), GetParam());
  for (Kind k : kKinds) {
    for (size_t size :
         {size_t{0}, size_t{1}, size_t{100}, size_t{4095}, size_t{65536}, size_t{300000}}) {
      std::vector<uint8_t> in = make_input(k, size);
      for (int level = kMinLevel; level <= kMaxLevel; ++level) {
        SCOPED_TRACE(std::string(testing::kind_name(k)) + " size " + std::to_string(size) +
                     " level " + std::to_string(level));
        std::vector<uint8_t> gz = compress_whole(*e, in, level);
        ASSERT_FALSE(gz.empty());
        EXPECT_EQ(gz[0], 0x1f);  // RFC 1952 §2.3.1: ID1 ID2 CM=8 (deflate)
        EXPECT_EQ(gz[1], 0x8b);
        EXPECT_EQ(gz[2], 8);
        std::vector<uint8_t> back;
        ASSERT_TRUE(gunzip(gz, &back));
        EXPECT_EQ(back, in);
        if (k != Kind::kBinary && size >= 4095) {
          EXPECT_LT(gz.size(), in.size() / 2);
        }
      }
    }
  }
}

TEST_P(CodecTest, EightMegabytesRoundTrip) {
  auto e = make_encoder(GetParam());
  ASSERT_NE(e, nullptr);
  for (Kind k : {Kind::kHtml, Kind::kBinary}) {
    std::vector<uint8_t> in = make_input(k, size_t{8} << 20);
    for (int level : {1, 6}) {
      std::vector<uint8_t> gz = compress_whole(*e, in, level);
      ASSERT_FALSE(gz.empty());
      std::vector<uint8_t> back;
      ASSERT_TRUE(gunzip(gz, &back));
      EXPECT_TRUE(back == in) << testing::kind_name(k) << " level " << level;
    }
  }
}

TEST_P(CodecTest, StreamingRoundTripsInPiecesWithAndWithoutSyncFlushes) {
  auto e = make_encoder(GetParam());
  ASSERT_NE(e, nullptr);
  for (Kind k : {Kind::kJs, Kind::kJson, Kind::kBinary}) {
    for (size_t size : {size_t{0}, size_t{10}, size_t{70000}, size_t{1} << 20}) {
      std::vector<uint8_t> in = make_input(k, size, 3);
      for (int level : {1, 4, 9}) {
        for (size_t chunk : {size_t{1000}, size_t{16384}}) {
          for (size_t sync_every : {size_t{0}, size_t{3}}) {
            SCOPED_TRACE(std::string(testing::kind_name(k)) + " size " + std::to_string(size) +
                         " level " + std::to_string(level) + " chunk " + std::to_string(chunk) +
                         " sync " + std::to_string(sync_every));
            std::vector<uint8_t> gz = compress_stream(*e, in, level, chunk, sync_every);
            ASSERT_FALSE(gz.empty());
            std::vector<uint8_t> back;
            ASSERT_TRUE(gunzip(gz, &back));
            EXPECT_TRUE(back == in);
          }
        }
      }
    }
  }
}

TEST_P(CodecTest, SyncFlushEmitsEverythingGivenSoFar) {
  auto e = make_encoder(GetParam());
  ASSERT_TRUE(e->begin(6));
  std::vector<uint8_t> in = make_input(Kind::kHtml, 5000);
  std::vector<uint8_t> out(max_compressed_size(in.size()));
  std::span<const uint8_t> rest(in);
  std::span<uint8_t> space(out);
  ASSERT_EQ(e->write(rest, space, Flush::kSync), Encoder::Status::kOk);
  EXPECT_TRUE(rest.empty());
  size_t produced = out.size() - space.size();
  if (GetParam() == Codec::kLibdeflate) {
    // No streaming API: the input is kept whole and nothing is emitted before kFinish.
    EXPECT_EQ(produced, 0u);
    ASSERT_EQ(e->write(rest, space, Flush::kFinish), Encoder::Status::kDone);
    std::vector<uint8_t> back;
    ASSERT_TRUE(gunzip(out.data(), out.size() - space.size(), &back));
    EXPECT_EQ(back, in);
    return;
  }
  ASSERT_GT(produced, 10u);
  // A sync flush ends with an empty stored block: 00 00 ff ff (RFC 1951 §3.2.4).
  EXPECT_EQ(out[produced - 4], 0x00);
  EXPECT_EQ(out[produced - 3], 0x00);
  EXPECT_EQ(out[produced - 2], 0xff);
  EXPECT_EQ(out[produced - 1], 0xff);
  // What was flushed decompresses (without the stream's end) to the whole input.
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 16 + 15), Z_OK);
  std::vector<uint8_t> back(in.size() + 16);
  z.next_in = out.data();
  z.avail_in = static_cast<uInt>(produced);
  z.next_out = back.data();
  z.avail_out = static_cast<uInt>(back.size());
  EXPECT_EQ(inflate(&z, Z_SYNC_FLUSH), Z_OK);
  EXPECT_EQ(back.size() - z.avail_out, in.size());
  inflateEnd(&z);
}

TEST_P(CodecTest, EncoderIsReusableAcrossLevelsAndAfterAFailedStream) {
  auto e = make_encoder(GetParam());
  std::vector<uint8_t> in = make_input(Kind::kCss, 50000);
  for (int level : {9, 1, 5, 1}) {
    std::vector<uint8_t> back;
    ASSERT_TRUE(gunzip(compress_whole(*e, in, level), &back));
    EXPECT_EQ(back, in);
  }
  // An output too small fails that stream only.
  std::vector<uint8_t> tiny(16);
  EXPECT_FALSE(e->compress(in, tiny, 1).has_value());
  std::vector<uint8_t> back;
  ASSERT_TRUE(gunzip(compress_whole(*e, in, 1), &back));
  EXPECT_EQ(back, in);
}

TEST_P(CodecTest, IncompressibleInputFitsTheBound) {
  auto e = make_encoder(GetParam());
  for (size_t size : {size_t{1}, size_t{5000}, size_t{65535}, size_t{65537}, size_t{1} << 21}) {
    std::vector<uint8_t> in = make_input(Kind::kBinary, size, 9);
    for (int level = kMinLevel; level <= kMaxLevel; ++level) {
      std::vector<uint8_t> out(max_compressed_size(size));
      auto n = e->compress(in, out, level);
      ASSERT_TRUE(n.has_value()) << "size " << size << " level " << level;
      EXPECT_LE(*n, max_compressed_size(size));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CodecTest, ::testing::ValuesIn(kAllCodecs),
                         [](const ::testing::TestParamInfo<Codec>& info) {
                           return std::string(codec_name(info.param));
                         });

TEST(CodecNames, RoundTrip) {
  for (Codec c : kAllCodecs) EXPECT_EQ(parse_codec(codec_name(c)), c);
  EXPECT_EQ(codec_name(Codec::kIsal), "isal");
  EXPECT_EQ(codec_name(Codec::kLibdeflate), "libdeflate");
  EXPECT_FALSE(parse_codec("gzip").has_value());
}

TEST(LevelMap, StaysInEachCodecsRangeAndNeverDecreases) {
  for (Codec c : kAllCodecs) {
    int previous = -1;
    for (int level = kMinLevel; level <= kMaxLevel; ++level) {
      int mapped = codec_level(c, level);
      EXPECT_GE(mapped, previous) << codec_name(c) << " " << level;
      previous = mapped;
      switch (c) {
        case Codec::kZlib:
          EXPECT_EQ(mapped, level);
          break;
        case Codec::kIsal:
          EXPECT_GE(mapped, 0);
          EXPECT_LE(mapped, 3);
          break;
        case Codec::kLibdeflate:
          EXPECT_GE(mapped, 1);
          EXPECT_LE(mapped, 12);
          break;
      }
    }
  }
  EXPECT_EQ(codec_level(Codec::kZlib, 0), 1);  // out of range levels are clamped
  EXPECT_EQ(codec_level(Codec::kZlib, 12), 9);
}

TEST(AutoChoice, IsTheFastestCodecWithinTenPercentOfZlib) {
  for (int level = kMinLevel; level <= kMaxLevel; ++level) {
    const LevelProfile& p = level_profile(level);
    Codec chosen = choose_codec(std::nullopt, level);
    auto ci = static_cast<size_t>(chosen);
    EXPECT_LE(p.size_vs_zlib[ci], kAutoRatioLimit) << level;
    for (Codec c : kAllCodecs) {
      auto i = static_cast<size_t>(c);
      if (p.size_vs_zlib[i] <= kAutoRatioLimit) {
        EXPECT_GE(p.mb_per_s[ci], p.mb_per_s[i]) << level;
      }
    }
  }
  EXPECT_EQ(choose_codec(Codec::kZlib, 1), Codec::kZlib);  // an explicit engine is kept
  EXPECT_EQ(choose_codec(Codec::kLibdeflate, 1), Codec::kLibdeflate);
}

TEST(GzipBuffer, CompressesAndCountsAndFallsBackToIdentityWhenNothingFits) {
  std::vector<uint8_t> in = make_input(Kind::kHtml, 20000);
  std::vector<uint8_t> out(max_compressed_size(in.size()));
  GzipResult r = gzip_buffer(Codec::kIsal, 1, in, out);
  ASSERT_TRUE(r.compressed);
  EXPECT_FALSE(r.fell_back);
  EXPECT_EQ(r.engine, Codec::kIsal);
  std::vector<uint8_t> back;
  ASSERT_TRUE(gunzip(out.data(), r.size, &back));
  EXPECT_EQ(back, in);
  // An output smaller than the bound is refused by every codec: the body goes out as it is.
  std::vector<uint8_t> small(100);
  GzipResult none = gzip_buffer(Codec::kLibdeflate, 6, in, small);
  EXPECT_FALSE(none.compressed);
  EXPECT_TRUE(none.fell_back);
}

TEST(GzipBuffer, ThreadEncodersAreMadeOncePerThread) {
  Encoder* a = thread_encoder(Codec::kZlib);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(thread_encoder(Codec::kZlib), a);
  EXPECT_NE(thread_encoder(Codec::kIsal), a);
}

}  // namespace
}  // namespace accelgate::compress
