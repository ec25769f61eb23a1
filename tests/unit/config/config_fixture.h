#pragma once

// ConfigTest gives each test a fresh temporary directory to write configuration files into and
// helpers that parse text as "test.conf" in that directory.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "accelgate/config/config.h"

namespace accelgate::config {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ag_config_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    cwd_ = std::filesystem::current_path().string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // write puts |text| into |name| under the temp directory and returns its path.
  std::string write(const std::string& name, const std::string& text) {
    std::filesystem::path path = std::filesystem::path(dir_) / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  std::shared_ptr<const Config> ok(const std::string& text) {
    auto result = parse_config_text(text, "test.conf", dir_);
    EXPECT_TRUE(result.ok()) << result.error().message;
    return result.ok() ? *result : std::make_shared<const Config>();
  }

  std::string error(const std::string& text) {
    auto result = parse_config_text(text, "test.conf", dir_);
    EXPECT_FALSE(result.ok()) << text;
    return result.ok() ? "" : result.error().message;
  }

  std::string dir_;
  std::string cwd_;
};

// EXPECT_CONFIG_ERROR checks that |message| starts with |where| ("file:line: ") and holds |what|.
#define EXPECT_CONFIG_ERROR(message, where, what)                    \
  do {                                                               \
    std::string m_ = (message);                                      \
    EXPECT_EQ(m_.substr(0, std::string(where).size()), where) << m_; \
    EXPECT_NE(m_.find(what), std::string::npos) << m_;               \
  } while (0)

}  // namespace accelgate::config
