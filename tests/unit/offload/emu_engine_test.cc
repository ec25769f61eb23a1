// The emulated accelerator: latency, capacity, error and hang rates, the control file, and the
// device shared between engines.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "engine_test_support.h"
#include "engines/engines.h"

namespace accelgate::offload {
namespace {

using namespace std::chrono_literals;
using testing::EngineTest;
using testing::make_op;
using testing::OpCounters;
using testing::wait_for;

config::OffloadSettings emu_settings(std::chrono::microseconds latency, uint32_t capacity = 64) {
  config::OffloadSettings settings;
  settings.crypto = "emu";
  settings.emu.latency = latency;
  settings.emu.capacity = capacity;
  return settings;
}

class EmuEngineTest : public EngineTest {
 protected:
  void TearDown() override {
    if (!control_path_.empty()) std::remove(control_path_.c_str());
  }

  std::unique_ptr<Engine> make_emu(const config::OffloadSettings& settings) {
    auto engine = create_emu(settings, context());
    EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error().message);
    return engine.ok() ? std::move(*engine) : nullptr;
  }

  // control_file returns a fresh path for a control file, removed after the test.
  const std::string& control_file() {
    std::string templ = ::testing::TempDir() + "emu_control_XXXXXX";
    int fd = ::mkstemp(templ.data());
    EXPECT_GE(fd, 0);
    ::close(fd);
    control_path_ = templ;
    return control_path_;
  }

  void write_control(const std::string& content) {
    std::ofstream(control_path_, std::ios::trunc) << content;
  }

  std::string control_path_;
};

TEST_F(EmuEngineTest, ProbeChecksTheSettings) {
  EXPECT_EQ(probe_emu(emu_settings(200us)), "");
  EXPECT_NE(probe_emu(emu_settings(200us, 0)), "");
  auto bad = emu_settings(200us);
  bad.emu.error_rate = 1.5;
  EXPECT_NE(probe_emu(bad), "");
  EXPECT_FALSE(create_emu(bad, context()).ok());
  bad = emu_settings(200us);
  bad.emu.hang_rate = -0.1;
  EXPECT_NE(probe_emu(bad), "");
}

TEST_F(EmuEngineTest, CompletesEachOpOnceOnTheLoopThreadNoEarlierThanTheLatency) {
  auto engine = make_emu(emu_settings(20ms));
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->name(), "emu");
  for (OpKind kind : {OpKind::kRsaSign, OpKind::kRsaDecrypt, OpKind::kEcdsaSign,
                      OpKind::kEcdhDerive, OpKind::kX25519Derive, OpKind::kX25519Keygen}) {
    EXPECT_TRUE(engine->accelerates(Op(kind, 256, [](OpOutput*) { return true; })));
  }
  OpCounters counters;
  std::vector<OpRef> ops;
  std::vector<Clock::time_point> submitted;
  constexpr int kOps = 10;
  for (int i = 0; i < kOps; ++i) {
    ops.push_back(make_op(&counters, static_cast<uint8_t>(i)));
    submitted.push_back(Clock::now());
    OpOutput out;
    ASSERT_EQ(engine->submit(ops.back(), 500 + i, &out), SubmitResult::kPending);
  }
  EXPECT_EQ(engine->inflight(), static_cast<size_t>(kOps));
  EXPECT_TRUE(sink_.records.empty());
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == kOps; }));
  run_for(30ms);
  ASSERT_EQ(sink_.records.size(), static_cast<size_t>(kOps));
  EXPECT_EQ(engine->inflight(), 0u);
  std::set<uint64_t> tickets;
  for (const auto& r : sink_.records) {
    ASSERT_GE(r.ticket, 500u);
    ASSERT_LT(r.ticket, 500u + kOps);
    int i = static_cast<int>(r.ticket - 500);
    EXPECT_TRUE(tickets.insert(r.ticket).second);
    EXPECT_EQ(r.op, ops[i]);
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.thread, std::this_thread::get_id());
    EXPECT_EQ(r.bytes,
              (std::vector<uint8_t>{static_cast<uint8_t>(i), static_cast<uint8_t>(i ^ 0xff)}));
    EXPECT_GE(r.at - submitted[i], 20ms) << "op " << i << " completed before the latency";
  }
  EXPECT_EQ(counters.calls.load(), kOps);
}

TEST_F(EmuEngineTest, CapacityIsSharedByTheEnginesOfOneDevice) {
  auto settings = emu_settings(100ms, 4);
  auto engine = make_emu(settings);
  auto other_loop_engine = make_emu(settings);  // same settings: the same device
  ASSERT_TRUE(engine && other_loop_engine);
  OpCounters counters;
  std::vector<OpRef> ops;
  OpOutput out;
  for (int i = 0; i < 3; ++i) {
    ops.push_back(make_op(&counters, static_cast<uint8_t>(i)));
    ASSERT_EQ(engine->submit(ops.back(), i, &out), SubmitResult::kPending);
  }
  ops.push_back(make_op(&counters, 3));
  ASSERT_EQ(other_loop_engine->submit(ops.back(), 3, &out), SubmitResult::kPending);
  auto refused = make_op(&counters, 4);
  EXPECT_EQ(engine->submit(refused, 4, &out), SubmitResult::kBusy);
  EXPECT_EQ(other_loop_engine->submit(refused, 4, &out), SubmitResult::kBusy);
  EXPECT_EQ(refused.use_count(), 1);  // a refused op is not kept
  EXPECT_EQ(engine->inflight(), 3u);
  EXPECT_EQ(other_loop_engine->inflight(), 1u);

  // Other settings: another device, with room of its own.
  auto separate = make_emu(emu_settings(100ms, 5));
  ASSERT_TRUE(separate);
  auto elsewhere = make_op(&counters, 5);
  EXPECT_EQ(separate->submit(elsewhere, 5, &out), SubmitResult::kPending);

  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 5; }));
  for (const auto& r : sink_.records) EXPECT_TRUE(r.ok);
  // Room again once the device has completed its ops.
  EXPECT_EQ(engine->submit(refused, 44, &out), SubmitResult::kPending);
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 6; }));
  EXPECT_EQ(sink_.records.back().ticket, 44u);
}

TEST_F(EmuEngineTest, ErrorRateOneFailsEveryOp) {
  auto settings = emu_settings(0us);
  settings.emu.error_rate = 1.0;
  auto engine = make_emu(settings);
  ASSERT_TRUE(engine);
  OpCounters counters;
  OpOutput out;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(engine->submit(make_op(&counters, 1), i, &out), SubmitResult::kPending);
  }
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 20; }));
  for (const auto& r : sink_.records) {
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(r.bytes.empty());
  }
  EXPECT_EQ(counters.calls.load(), 0);  // a failed op is not computed
}

TEST_F(EmuEngineTest, ErrorRateZeroFailsNoOp) {
  auto engine = make_emu(emu_settings(0us));
  ASSERT_TRUE(engine);
  OpCounters counters;
  OpOutput out;
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(engine->submit(make_op(&counters, 2), i, &out), SubmitResult::kPending);
  }
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 50; }));
  for (const auto& r : sink_.records) {
    EXPECT_TRUE(r.ok);
    EXPECT_EQ(r.bytes, (std::vector<uint8_t>{2, 2 ^ 0xff}));
  }
}

TEST_F(EmuEngineTest, ErrorRateHalfFailsSomeOps) {
  auto settings = emu_settings(0us, 400);
  settings.emu.error_rate = 0.5;
  auto engine = make_emu(settings);
  ASSERT_TRUE(engine);
  OpCounters counters;
  OpOutput out;
  for (int i = 0; i < 400; ++i) {
    ASSERT_EQ(engine->submit(make_op(&counters, 3), i, &out), SubmitResult::kPending);
  }
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 400; }));
  auto failed = std::count_if(sink_.records.begin(), sink_.records.end(),
                              [](const auto& r) { return !r.ok; });
  // Binomial(400, 0.5): outside 100..300 with probability far below 1e-20.
  EXPECT_GT(failed, 100);
  EXPECT_LT(failed, 300);
  EXPECT_EQ(counters.calls.load(), 400 - failed);
}

TEST_F(EmuEngineTest, HungOpsNeverCompleteAndAreReleasedLater) {
  auto settings = emu_settings(0us, 2);
  settings.emu.hang_rate = 1.0;
  auto engine = make_emu(settings);
  ASSERT_TRUE(engine);
  OpCounters counters;
  std::vector<OpRef> ops;
  OpOutput out;
  for (int i = 0; i < 2; ++i) {
    ops.push_back(make_op(&counters, 1));
    ASSERT_EQ(engine->submit(ops.back(), i, &out), SubmitResult::kPending);
  }
  run_for(150ms);
  EXPECT_TRUE(sink_.records.empty());
  EXPECT_EQ(engine->inflight(), 2u);
  auto third = make_op(&counters, 1);
  EXPECT_EQ(engine->submit(third, 2, &out), SubmitResult::kBusy);  // hung ops hold their slots

  // After a while the device lets go of them: counted out, references released, never reported.
  ASSERT_TRUE(run_until([&] { return engine->inflight() == 0; }, 10s));
  EXPECT_TRUE(wait_for([&] { return ops[0].use_count() == 1 && ops[1].use_count() == 1; }));
  EXPECT_TRUE(sink_.records.empty());
  EXPECT_EQ(counters.calls.load(), 0);
  EXPECT_EQ(engine->submit(third, 3, &out), SubmitResult::kPending);
}

TEST_F(EmuEngineTest, ControlFileTakesTheDeviceDownAndUp) {
  auto settings = emu_settings(300ms);
  settings.emu.control = control_file();
  write_control("up\n");
  auto engine = make_emu(settings);
  ASSERT_TRUE(engine);
  OpCounters counters;
  OpOutput out;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(engine->submit(make_op(&counters, 1), i, &out), SubmitResult::kPending);
  }
  write_control("down\n");
  // The ops in flight fail as the device goes down, before their latency is over.
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 3; }));
  for (const auto& r : sink_.records) EXPECT_FALSE(r.ok);
  EXPECT_EQ(counters.calls.load(), 0);
  EXPECT_EQ(engine->submit(make_op(&counters, 1), 10, &out), SubmitResult::kFailed);

  write_control("up");
  SubmitResult result = SubmitResult::kFailed;
  auto probe = make_op(&counters, 4);
  ASSERT_TRUE(wait_for([&] {
    result = engine->submit(probe, 11, &out);
    return result != SubmitResult::kFailed;
  }));
  EXPECT_EQ(result, SubmitResult::kPending);
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 4; }));
  EXPECT_TRUE(sink_.records.back().ok);
  EXPECT_EQ(sink_.records.back().ticket, 11u);
  EXPECT_EQ(sink_.records.back().bytes, (std::vector<uint8_t>{4, 4 ^ 0xff}));
}

TEST_F(EmuEngineTest, ADeviceMadeWhileTheControlFileSaysDownStartsDown) {
  auto settings = emu_settings(0us);
  settings.emu.control = control_file();
  write_control("down");
  auto engine = make_emu(settings);
  ASSERT_TRUE(engine);
  OpCounters counters;
  OpOutput out;
  EXPECT_EQ(engine->submit(make_op(&counters, 1), 1, &out), SubmitResult::kFailed);
  // A missing file means up.
  std::remove(control_path_.c_str());
  EXPECT_TRUE(wait_for(
      [&] { return engine->submit(make_op(&counters, 1), 2, &out) == SubmitResult::kPending; }));
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 1; }));
  EXPECT_TRUE(sink_.records[0].ok);
}

TEST_F(EmuEngineTest, EngineDestroyedWithOpsInFlightDropsThem) {
  OpCounters counters;
  std::vector<OpRef> ops;
  auto settings = emu_settings(30ms);
  auto survivor = make_emu(settings);  // keeps the device (and its thread) alive
  ASSERT_TRUE(survivor);
  {
    auto engine = make_emu(settings);
    ASSERT_TRUE(engine);
    OpOutput out;
    for (int i = 0; i < 10; ++i) {
      ops.push_back(make_op(&counters, 1));
      ASSERT_EQ(engine->submit(ops.back(), i, &out), SubmitResult::kPending);
    }
  }
  EXPECT_TRUE(wait_for([&] {
    return std::all_of(ops.begin(), ops.end(), [](const OpRef& op) { return op.use_count() == 1; });
  }));
  run_for(50ms);
  EXPECT_TRUE(sink_.records.empty());
  EXPECT_EQ(counters.calls.load(), 0);  // nobody wanted them, so they were not computed

  // The whole device goes with its last engine, hung and queued ops included.
  auto hang_settings = emu_settings(0us);
  hang_settings.emu.hang_rate = 1.0;
  std::vector<OpRef> hung;
  {
    auto engine = make_emu(hang_settings);
    ASSERT_TRUE(engine);
    OpOutput out;
    for (int i = 0; i < 5; ++i) {
      hung.push_back(make_op(&counters, 1));
      ASSERT_EQ(engine->submit(hung.back(), i, &out), SubmitResult::kPending);
    }
    run_for(20ms);
  }
  for (const auto& op : hung) EXPECT_EQ(op.use_count(), 1);
  run_for(20ms);
  EXPECT_TRUE(sink_.records.empty());
}

TEST_F(EmuEngineTest, ABurstOfCompletionsComesWithFewWakeUps) {
  auto engine = make_emu(emu_settings(0us));
  ASSERT_TRUE(engine);
  OpCounters counters;
  OpOutput out;
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(engine->submit(make_op(&counters, 1), i, &out), SubmitResult::kPending);
  }
  ASSERT_TRUE(wait_for([&] { return counters.calls.load() == 50; }));
  std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(engine->poll());
  EXPECT_GE(sink_.records.size(), 49u);  // all but (at most) the one being delivered
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 50; }));
  EXPECT_FALSE(engine->poll());
}

}  // namespace
}  // namespace accelgate::offload
