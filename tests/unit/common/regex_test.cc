// Regex: PCRE2 syntax, case-insensitive on request, clear errors, safe from several threads.

#include "accelgate/common/regex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace accelgate {
namespace {

TEST(Regex, SearchesAnywhereCaselessOnRequest) {
  auto r = Regex::compile(R"(MSIE [4-6]\.)", true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE((*r)->search("Mozilla/4.0 (compatible; msie 6.0; Windows NT 5.1)"));
  EXPECT_FALSE((*r)->search("Mozilla/5.0 (compatible; MSIE 10.0)"));
  auto exact = Regex::compile("^curl/", false);
  ASSERT_TRUE(exact.ok());
  EXPECT_TRUE((*exact)->search("curl/7.88.1"));
  EXPECT_FALSE((*exact)->search("CURL/7.88.1"));
  EXPECT_FALSE((*exact)->search("x curl/7"));
  EXPECT_EQ((*exact)->pattern(), "^curl/");
}

TEST(Regex, ABadPatternSaysWhatAndWhere) {
  auto r = Regex::compile("a(b", true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("offset"), std::string::npos) << r.error().message;
}

TEST(Regex, APathologicalPatternEndsAsNoMatch) {
  auto r = Regex::compile("(a+)+$", false);
  ASSERT_TRUE(r.ok());
  std::string subject(5000, 'a');
  subject.push_back('!');
  EXPECT_FALSE((*r)->search(subject));  // the match limit stops the backtracking
}

TEST(Regex, MatchesFromSeveralThreadsAtOnce) {
  auto r = Regex::compile("bot|spider", true);
  ASSERT_TRUE(r.ok());
  std::atomic<int> matches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if ((*r)->search(i % 2 ? "Googlebot/2.1" : "Firefox")) matches.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(matches.load(), 2000);
}

}  // namespace
}  // namespace accelgate
