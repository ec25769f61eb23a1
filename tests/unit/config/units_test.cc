// The value parsers behind every size, time, number and flag argument.

#include "units.h"

#include <gtest/gtest.h>

namespace accelgate::config {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(UnitsTest, Numbers) {
  EXPECT_EQ(parse_number("0"), 0u);
  EXPECT_EQ(parse_number("1024"), 1024u);
  EXPECT_EQ(parse_number("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(parse_number("18446744073709551616"));  // one past the largest
  EXPECT_FALSE(parse_number(""));
  EXPECT_FALSE(parse_number("-1"));
  EXPECT_FALSE(parse_number("12a"));
  EXPECT_FALSE(parse_number(" 1"));
}

TEST(UnitsTest, Sizes) {
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("16k"), 16u * 1024);
  EXPECT_EQ(parse_size("16K"), 16u * 1024);
  EXPECT_EQ(parse_size("1m"), 1u << 20);
  EXPECT_EQ(parse_size("3M"), 3u << 20);
  EXPECT_EQ(parse_size("2g"), uint64_t{2} << 30);
  EXPECT_EQ(parse_size("2G"), uint64_t{2} << 30);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_FALSE(parse_size("1kb"));
  EXPECT_FALSE(parse_size("k"));
  EXPECT_FALSE(parse_size("1t"));
  EXPECT_FALSE(parse_size("1.5m"));
  EXPECT_FALSE(parse_size("17179869184g"));  // 2^34 GiB overflows 64 bits
}

TEST(UnitsTest, Times) {
  EXPECT_EQ(parse_time("30"), seconds(30));
  EXPECT_EQ(parse_time("30s"), seconds(30));
  EXPECT_EQ(parse_time("500ms"), Millis(500));
  EXPECT_EQ(parse_time("5m"), minutes(5));
  EXPECT_EQ(parse_time("2h"), hours(2));
  EXPECT_EQ(parse_time("1d"), hours(24));
  EXPECT_EQ(parse_time("1w"), hours(24 * 7));
  EXPECT_EQ(parse_time("1M"), hours(24 * 30));
  EXPECT_EQ(parse_time("1y"), hours(24 * 365));
  EXPECT_EQ(parse_time("1h 30m"), minutes(90));
  EXPECT_EQ(parse_time("1h30m"), minutes(90));
  EXPECT_EQ(parse_time("1m 5s 250ms"), Millis(65'250));
  EXPECT_EQ(parse_time("1h 30"), minutes(60) + seconds(30));  // a last bare number is seconds
  EXPECT_EQ(parse_time("0"), Millis(0));
  EXPECT_FALSE(parse_time(""));
  EXPECT_FALSE(parse_time("s"));
  EXPECT_FALSE(parse_time("30m 1h"));  // units must decrease
  EXPECT_FALSE(parse_time("1m 1m"));
  EXPECT_FALSE(parse_time("10x"));
  EXPECT_FALSE(parse_time("30 5"));
  EXPECT_FALSE(parse_time("-1s"));
  EXPECT_FALSE(parse_time("69y"));  // past 2^31 - 1 seconds
  EXPECT_FALSE(parse_time("99999999999999999999"));
  EXPECT_EQ(parse_time("68y"), hours(24 * 365 * 68));
}

TEST(UnitsTest, Flags) {
  EXPECT_EQ(parse_flag("on"), true);
  EXPECT_EQ(parse_flag("off"), false);
  EXPECT_FALSE(parse_flag("yes"));
  EXPECT_FALSE(parse_flag("On"));
}

}  // namespace
}  // namespace accelgate::config
