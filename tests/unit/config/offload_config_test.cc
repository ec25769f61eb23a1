// The `offload { }` block: defaults, every directive, and its errors with file:line.

#include <gtest/gtest.h>

#include "config_fixture.h"

namespace accelgate::config {
namespace {

using namespace std::chrono_literals;

TEST_F(ConfigTest, OffloadDefaults) {
  auto c = ok("");
  const OffloadSettings& o = c->offload;
  EXPECT_EQ(o.crypto, "auto");
  EXPECT_TRUE(o.fallback);
  EXPECT_EQ(o.op_timeout, 50ms);
  EXPECT_EQ(o.retry_interval, 5000ms);
  EXPECT_EQ(o.pool_threads, 0);
  EXPECT_EQ(o.notify, OffloadSettings::Notify::kEvent);
  EXPECT_EQ(o.poll_mode, OffloadSettings::PollMode::kHeuristic);
  EXPECT_EQ(o.mb_flush, 100us);
  EXPECT_EQ(o.emu.latency, 200us);
  EXPECT_EQ(o.emu.capacity, 64u);
  EXPECT_EQ(o.emu.error_rate, 0);
  EXPECT_EQ(o.emu.hang_rate, 0);
  EXPECT_TRUE(o.emu.control.empty());
}

TEST_F(ConfigTest, OffloadBlock) {
  auto c = ok(R"(
    offload {
      crypto emu;
      fallback off;
      op_timeout 20ms;
      retry_interval 1s;
      pool_threads 3;
      notify poll;
      poll_mode timer;
      mb_flush 30us;
      emu latency=2ms capacity=4 error_rate=0.3 hang_rate=0.1 control=var/emu.ctl;
    }
  )");
  const OffloadSettings& o = c->offload;
  EXPECT_EQ(o.crypto, "emu");
  EXPECT_FALSE(o.fallback);
  EXPECT_EQ(o.op_timeout, 20ms);
  EXPECT_EQ(o.retry_interval, 1000ms);
  EXPECT_EQ(o.pool_threads, 3);
  EXPECT_EQ(o.notify, OffloadSettings::Notify::kPoll);
  EXPECT_EQ(o.poll_mode, OffloadSettings::PollMode::kTimer);
  EXPECT_EQ(o.mb_flush, 30us);
  EXPECT_EQ(o.emu.latency, 2000us);
  EXPECT_EQ(o.emu.capacity, 4u);
  EXPECT_DOUBLE_EQ(o.emu.error_rate, 0.3);
  EXPECT_DOUBLE_EQ(o.emu.hang_rate, 0.1);
  EXPECT_EQ(o.emu.control, cwd_ + "/var/emu.ctl");
  EXPECT_EQ(o.where.line, 2);

  EXPECT_EQ(ok("offload { crypto openssl:qatprovider; pool_threads auto; }")->offload.crypto,
            "openssl:qatprovider");
  EXPECT_EQ(ok("offload { crypto off; }")->offload.crypto, "off");
  EXPECT_EQ(ok("offload { emu latency=150us; }")->offload.emu.latency, 150us);
  EXPECT_EQ(ok("offload { emu latency=1s; }")->offload.emu.latency, 1'000'000us);
}

TEST_F(ConfigTest, OpensslEngineCtrl) {
  EXPECT_TRUE(ok("offload { crypto openssl:qatengine; }")->offload.engine_ctrls.empty());
  auto c = ok(R"(
    offload {
      openssl_engine_ctrl ENABLE_HEURISTIC_POLLING;
      openssl_engine_ctrl SET_INTERNAL_POLL_INTERVAL 10000;
      crypto openssl:qatengine;
      openssl_engine_ctrl "SET_CONF_SECTION" "a b";
    }
  )");
  const auto& ctrls = c->offload.engine_ctrls;
  ASSERT_EQ(ctrls.size(), 3u);  // in the order written, before or after `crypto`
  EXPECT_EQ(ctrls[0].name, "ENABLE_HEURISTIC_POLLING");
  EXPECT_FALSE(ctrls[0].has_value);
  EXPECT_EQ(ctrls[0].where.line, 3);
  EXPECT_EQ(ctrls[1].name, "SET_INTERNAL_POLL_INTERVAL");
  EXPECT_TRUE(ctrls[1].has_value);
  EXPECT_EQ(ctrls[1].value, "10000");
  EXPECT_EQ(ctrls[1].where.line, 4);
  EXPECT_EQ(ctrls[2].value, "a b");
  EXPECT_EQ(ctrls[2].where.line, 6);
}

TEST_F(ConfigTest, OpensslEngineCtrlErrors) {
  EXPECT_CONFIG_ERROR(
      error("offload {\n crypto openssl:kae;\n openssl_engine_ctrl A B C;\n}"),
      "test.conf:3: ", "invalid number of arguments in \"openssl_engine_ctrl\" directive");
  EXPECT_CONFIG_ERROR(
      error("offload {\n crypto openssl:kae;\n openssl_engine_ctrl;\n}"),
      "test.conf:3: ", "invalid number of arguments in \"openssl_engine_ctrl\" directive");
  EXPECT_CONFIG_ERROR(error("offload { crypto openssl:kae; openssl_engine_ctrl \"\" 1; }"),
                      "test.conf:1: ", "expecting a control command name");
  EXPECT_CONFIG_ERROR(error("openssl_engine_ctrl POLL;"),
                      "test.conf:1: ", "\"openssl_engine_ctrl\" directive is not allowed here");
  // Without an openssl:ID engine the command would go nowhere: refused at its own line.
  EXPECT_CONFIG_ERROR(error("offload {\n crypto emu;\n\n openssl_engine_ctrl X 1;\n}"),
                      "test.conf:4: ", "\"openssl_engine_ctrl\" needs \"crypto openssl:ID\"");
  EXPECT_CONFIG_ERROR(error("offload {\n openssl_engine_ctrl X 1;\n}"),
                      "test.conf:2: ", "needs \"crypto openssl:ID\"");
}

TEST_F(ConfigTest, OffloadErrors) {
  EXPECT_CONFIG_ERROR(error("offload {\n crypto qat;\n}"), "test.conf:2: ",
                      "invalid value \"qat\" in \"crypto\" directive, expecting auto, off, sw");
  EXPECT_CONFIG_ERROR(error("offload { crypto openssl:; }"),
                      "test.conf:1: ", "invalid value \"openssl:\"");
  EXPECT_CONFIG_ERROR(error("offload { op_timeout 0; }"), "test.conf:1: ", "at least 1ms");
  EXPECT_CONFIG_ERROR(error("offload { pool_threads 0; }"), "test.conf:1: ", "invalid value \"0\"");
  EXPECT_CONFIG_ERROR(error("offload { notify sometimes; }"),
                      "test.conf:1: ", "expecting event or poll");
  EXPECT_CONFIG_ERROR(error("offload { poll_mode lazy; }"),
                      "test.conf:1: ", "expecting heuristic, timer or busy");
  EXPECT_CONFIG_ERROR(error("offload {\n mb_flush soon;\n}"),
                      "test.conf:2: ", "expecting a time such as 0, 20us or 1ms, at most 1s");
  EXPECT_CONFIG_ERROR(error("offload { mb_flush 2s; }"), "test.conf:1: ", "at most 1s");
  EXPECT_CONFIG_ERROR(error("offload { mb_flush 1ms; mb_flush 2ms; }"),
                      "test.conf:1: ", "duplicate");
  EXPECT_CONFIG_ERROR(error("offload {\n emu error_rate=1.5;\n}"),
                      "test.conf:2: ", "expecting a fraction from 0 to 1");
  EXPECT_CONFIG_ERROR(error("offload { emu latency=fast; }"),
                      "test.conf:1: ", "expecting a time such as 200us");
  EXPECT_CONFIG_ERROR(error("offload { emu capacity=0; }"),
                      "test.conf:1: ", "expecting a number from 1");
  EXPECT_CONFIG_ERROR(error("offload { emu speed=11; }"),
                      "test.conf:1: ", "expecting latency=, capacity=");
  EXPECT_CONFIG_ERROR(error("offload { crypto sw; crypto pool; }"),
                      "test.conf:1: ", "\"crypto\" directive is duplicate");
  EXPECT_CONFIG_ERROR(error("offload { }\noffload { }"),
                      "test.conf:2: ", "\"offload\" directive is duplicate");
  EXPECT_CONFIG_ERROR(error("http {\n offload { }\n}"),
                      "test.conf:2: ", "\"offload\" directive is not allowed here");
  EXPECT_CONFIG_ERROR(error("crypto sw;"),
                      "test.conf:1: ", "\"crypto\" directive is not allowed here");
}

}  // namespace
}  // namespace accelgate::config
