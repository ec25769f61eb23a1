// Fallback with an injected codec failure: this binary runs with ACCELGATE_TEST_GZIP_FAIL=isal
// (set by CTest), so isal fails every stream; a body meant for isal is compressed by zlib
// instead, counted, and one meant for libdeflate is untouched. When zlib cannot either (here: no
// room for the stream), the body goes out uncompressed, counted too.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "accelgate/common/metrics.h"
#include "accelgate/compress/codec.h"
#include "accelgate/compress/gzip.h"
#include "test_data.h"

namespace accelgate::compress {
namespace {

uint64_t counter(const std::string& line_prefix) {
  std::string text = metrics::Registry::global().render();
  size_t at = text.find(line_prefix + " ");
  if (at == std::string::npos) return 0;
  return std::stoull(text.substr(at + line_prefix.size() + 1));
}

TEST(Fallback, TheHookIsSet) {
  const char* env = std::getenv("ACCELGATE_TEST_GZIP_FAIL");
  ASSERT_NE(env, nullptr) << "run through CTest, which sets ACCELGATE_TEST_GZIP_FAIL=isal";
  EXPECT_TRUE(test_hook_fails(Codec::kIsal));
  EXPECT_FALSE(test_hook_fails(Codec::kZlib));
  EXPECT_FALSE(test_hook_fails(Codec::kLibdeflate));
}

TEST(Fallback, AFailingCodecFallsBackToZlibAndIsCounted) {
  auto e = make_encoder(Codec::kIsal);
  ASSERT_NE(e, nullptr);
  std::vector<uint8_t> in = testing::make_input(testing::Kind::kHtml, 30000);
  std::vector<uint8_t> out(max_compressed_size(in.size()));
  EXPECT_FALSE(e->compress(in, out, 1).has_value());
  std::span<const uint8_t> rest(in);
  std::span<uint8_t> space(out);
  ASSERT_TRUE(e->begin(1));
  EXPECT_EQ(e->write(rest, space, Flush::kFinish), Encoder::Status::kError);

  const std::string to_zlib = R"(accelgate_gzip_fallbacks_total{engine="isal",to="zlib"})";
  const std::string zlib_in = R"(accelgate_gzip_bytes_total{engine="zlib",direction="in"})";
  uint64_t fallbacks = counter(to_zlib);
  uint64_t zlib_bytes = counter(zlib_in);
  GzipResult r = gzip_buffer(Codec::kIsal, 1, in, out);
  ASSERT_TRUE(r.compressed);
  EXPECT_TRUE(r.fell_back);
  EXPECT_EQ(r.engine, Codec::kZlib);
  std::vector<uint8_t> back;
  ASSERT_TRUE(testing::gunzip(out.data(), r.size, &back));
  EXPECT_EQ(back, in);
  EXPECT_EQ(counter(to_zlib), fallbacks + 1);
  EXPECT_EQ(counter(zlib_in), zlib_bytes + in.size());

  GzipResult ld = gzip_buffer(Codec::kLibdeflate, 6, in, out);
  ASSERT_TRUE(ld.compressed);
  EXPECT_FALSE(ld.fell_back);
  EXPECT_EQ(ld.engine, Codec::kLibdeflate);
}

TEST(Fallback, WhenZlibFailsTooTheBodyGoesOutUncompressed) {
  const std::string to_identity = R"(accelgate_gzip_fallbacks_total{engine="zlib",to="identity"})";
  uint64_t before = counter(to_identity);
  std::vector<uint8_t> in = testing::make_input(testing::Kind::kJson, 30000);
  std::vector<uint8_t> small(64);
  GzipResult r = gzip_buffer(Codec::kIsal, 1, in, small);
  EXPECT_FALSE(r.compressed);
  EXPECT_TRUE(r.fell_back);
  EXPECT_EQ(counter(to_identity), before + 1);
}

}  // namespace
}  // namespace accelgate::compress
