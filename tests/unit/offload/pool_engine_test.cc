// The pool engine: crypto threads, completions back on the submitting loop, the shared device,
// and its lock-free submission queue.

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine_test_support.h"
#include "engines/engines.h"
#include "engines/pool/mpmc_queue.h"

namespace accelgate::offload {
namespace {

using namespace std::chrono_literals;
using testing::EngineTest;
using testing::make_op;
using testing::OpCounters;
using testing::wait_for;

config::OffloadSettings pool_settings(int threads) {
  config::OffloadSettings settings;
  settings.crypto = "pool";
  settings.pool_threads = threads;
  return settings;
}

// crypto_threads counts this process's threads named "ag-crypto-*".
int crypto_threads() {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  while (dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name.rfind("ag-crypto-", 0) == 0) ++n;
  }
  ::closedir(dir);
  return n;
}

class PoolEngineTest : public EngineTest {
 protected:
  std::unique_ptr<Engine> make_pool(int threads) {
    auto engine = create_pool(pool_settings(threads), context());
    EXPECT_TRUE(engine.ok()) << (engine.ok() ? "" : engine.error().message);
    return engine.ok() ? std::move(*engine) : nullptr;
  }
};

TEST_F(PoolEngineTest, ProbeAndName) {
  EXPECT_EQ(probe_pool(pool_settings(0)), "");
  EXPECT_EQ(probe_pool(pool_settings(3)), "");
  auto engine = make_pool(1);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->name(), "pool");
  for (OpKind kind : {OpKind::kRsaSign, OpKind::kRsaDecrypt, OpKind::kEcdsaSign,
                      OpKind::kEcdhDerive, OpKind::kX25519Derive, OpKind::kX25519Keygen}) {
    EXPECT_TRUE(engine->accelerates(Op(kind, 2048, [](OpOutput*) { return true; })));
  }
}

TEST_F(PoolEngineTest, CompletesEachOpOnceOnTheLoopThreadWithItsTicket) {
  auto engine = make_pool(2);
  ASSERT_TRUE(engine);
  OpCounters counters;
  std::vector<OpRef> ops;
  constexpr int kOps = 40;
  for (int i = 0; i < kOps; ++i) {
    ops.push_back(make_op(&counters, static_cast<uint8_t>(i), 100us));
    OpOutput out;
    ASSERT_EQ(engine->submit(ops.back(), 1000 + i, &out), SubmitResult::kPending);
    EXPECT_TRUE(out.bytes.empty());  // nothing inline
  }
  EXPECT_EQ(engine->inflight(), static_cast<size_t>(kOps));
  EXPECT_TRUE(sink_.records.empty());  // never from inside submit

  ASSERT_TRUE(run_until([&] { return sink_.records.size() == kOps; }));
  run_for(30ms);  // nothing more may arrive
  ASSERT_EQ(sink_.records.size(), static_cast<size_t>(kOps));
  EXPECT_EQ(engine->inflight(), 0u);
  EXPECT_EQ(counters.calls.load(), kOps);

  std::set<uint64_t> tickets;
  for (const auto& r : sink_.records) {
    EXPECT_EQ(r.thread, std::this_thread::get_id());
    EXPECT_TRUE(r.ok);
    ASSERT_GE(r.ticket, 1000u);
    ASSERT_LT(r.ticket, 1000u + kOps);
    int i = static_cast<int>(r.ticket - 1000);
    EXPECT_EQ(r.op, ops[i]);
    EXPECT_EQ(r.bytes,
              (std::vector<uint8_t>{static_cast<uint8_t>(i), static_cast<uint8_t>(i ^ 0xff)}));
    EXPECT_TRUE(tickets.insert(r.ticket).second) << "ticket " << r.ticket << " twice";
  }
}

TEST_F(PoolEngineTest, ThreadsComputeOpsInParallel) {
  auto engine = make_pool(2);
  ASSERT_TRUE(engine);
  OpCounters counters;
  // Each op waits (up to 10 s) until the other is running too: they can only both finish early
  // if two threads run them at once.
  std::atomic<bool> both_running{false};
  auto op_a = make_op(&counters, 1, 0us, &both_running);
  auto op_b = make_op(&counters, 2, 0us, &both_running);
  OpOutput out;
  ASSERT_EQ(engine->submit(op_a, 1, &out), SubmitResult::kPending);
  ASSERT_EQ(engine->submit(op_b, 2, &out), SubmitResult::kPending);
  bool overlapped = wait_for([&] { return counters.running.load() == 2; });
  both_running = true;
  EXPECT_TRUE(overlapped);
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 2; }));
  EXPECT_EQ(counters.max_running.load(), 2);
}

TEST_F(PoolEngineTest, FullQueueIsBusy) {
  auto engine = make_pool(1);
  ASSERT_TRUE(engine);
  OpCounters counters;
  std::atomic<bool> release{false};
  std::vector<OpRef> ops;
  OpOutput out;
  // The only thread is held by the first op, so every other op stays queued.
  ops.push_back(make_op(&counters, 0, 0us, &release));
  ASSERT_EQ(engine->submit(ops.back(), 0, &out), SubmitResult::kPending);
  ASSERT_TRUE(wait_for([&] { return counters.running.load() == 1; }));
  SubmitResult result = SubmitResult::kPending;
  for (int i = 1; i < 100000 && result == SubmitResult::kPending; ++i) {
    ops.push_back(make_op(&counters, static_cast<uint8_t>(i)));
    result = engine->submit(ops.back(), i, &out);
  }
  EXPECT_EQ(result, SubmitResult::kBusy);
  ops.pop_back();  // the refused one
  size_t accepted = ops.size();
  EXPECT_GT(accepted, 2u);
  EXPECT_EQ(engine->inflight(), accepted);

  release = true;
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == accepted; }));
  for (const auto& r : sink_.records) EXPECT_TRUE(r.ok);
  // The refused op was not kept: every op is held by the test alone again.
  for (const auto& op : ops) EXPECT_EQ(op.use_count(), 2);  // |ops| and the sink's record
  // Room again.
  auto again = make_op(&counters, 7);
  EXPECT_EQ(engine->submit(again, 424242, &out), SubmitResult::kPending);
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == accepted + 1; }));
  EXPECT_EQ(sink_.records.back().ticket, 424242u);
}

TEST_F(PoolEngineTest, PollReapsABurstAtOnce) {
  auto engine = make_pool(2);
  ASSERT_TRUE(engine);
  EXPECT_FALSE(engine->poll());  // nothing submitted: no work
  OpCounters counters;
  std::vector<OpRef> ops;
  constexpr int kOps = 100;
  OpOutput out;
  for (int i = 0; i < kOps; ++i) {
    ops.push_back(make_op(&counters, static_cast<uint8_t>(i)));
    ASSERT_EQ(engine->submit(ops.back(), i, &out), SubmitResult::kPending);
  }
  // The loop does not run meanwhile, so finished ops pile up in the completion list.
  ASSERT_TRUE(wait_for([&] { return counters.calls.load() == kOps; }));
  std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(engine->poll());
  // Every op but the last each thread computed was delivered before that last computation
  // ended, so one poll takes at least kOps - 2 completions.
  EXPECT_GE(sink_.records.size(), static_cast<size_t>(kOps - 2));
  for (const auto& r : sink_.records) EXPECT_EQ(r.thread, std::this_thread::get_id());
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == kOps; }));
  EXPECT_FALSE(engine->poll());
  EXPECT_EQ(engine->inflight(), 0u);
}

TEST_F(PoolEngineTest, ABurstOfCompletionsWakesTheLoopFewTimes) {
  auto engine = make_pool(2);
  ASSERT_TRUE(engine);
  OpCounters counters;
  std::vector<OpRef> ops;
  constexpr int kOps = 100;
  OpOutput out;
  for (int i = 0; i < kOps; ++i) {
    ops.push_back(make_op(&counters, static_cast<uint8_t>(i)));
    ASSERT_EQ(engine->submit(ops.back(), i, &out), SubmitResult::kPending);
  }
  ASSERT_TRUE(wait_for([&] { return counters.calls.load() == kOps; }));
  std::this_thread::sleep_for(5ms);
  // Only the eventfd wakes the loop here (no poll() call): completions that share a loop
  // iteration came with one wake-up.
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == kOps; }));
  std::map<uint64_t, int> per_iteration;
  for (const auto& r : sink_.records) ++per_iteration[r.iteration];
  EXPECT_LE(per_iteration.size(), 3u);
  int largest = 0;
  for (auto [iteration, n] : per_iteration) largest = std::max(largest, n);
  EXPECT_GE(largest, kOps - 2);
}

TEST_F(PoolEngineTest, EngineDestroyedWithOpsInFlightDropsThem) {
  OpCounters counters;
  std::vector<OpRef> ops;
  {
    auto engine = make_pool(2);
    ASSERT_TRUE(engine);
    OpOutput out;
    for (int i = 0; i < 20; ++i) {
      ops.push_back(make_op(&counters, static_cast<uint8_t>(i), 2ms));
      ASSERT_EQ(engine->submit(ops.back(), i, &out), SubmitResult::kPending);
    }
    ASSERT_TRUE(wait_for([&] { return counters.calls.load() >= 1; }));
  }  // the last engine: the device's threads finish their op and are joined
  EXPECT_TRUE(wait_for([] { return crypto_threads() == 0; }));
  for (const auto& op : ops) EXPECT_EQ(op.use_count(), 1);  // nobody kept a reference
  run_for(20ms);
  EXPECT_TRUE(sink_.records.empty());
  EXPECT_LT(counters.calls.load(), 20);  // queued ops of a dead engine are not computed
}

TEST_F(PoolEngineTest, OpsOfADeadEngineAreDroppedWhileTheDeviceLivesOn) {
  auto survivor = make_pool(2);
  ASSERT_TRUE(survivor);
  OpCounters counters;
  std::vector<OpRef> ops;
  {
    auto engine = make_pool(2);
    ASSERT_TRUE(engine);
    OpOutput out;
    for (int i = 0; i < 20; ++i) {
      ops.push_back(make_op(&counters, static_cast<uint8_t>(i), 2ms));
      ASSERT_EQ(engine->submit(ops.back(), i, &out), SubmitResult::kPending);
    }
  }
  // The threads still hold the dead engine's ops; they drop them as they come to them.
  EXPECT_TRUE(wait_for([&] {
    return std::all_of(ops.begin(), ops.end(), [](const OpRef& op) { return op.use_count() == 1; });
  }));
  run_for(20ms);
  EXPECT_TRUE(sink_.records.empty());

  // The survivor's own ops are unaffected.
  OpOutput out;
  auto mine = make_op(&counters, 9);
  ASSERT_EQ(survivor->submit(mine, 99, &out), SubmitResult::kPending);
  ASSERT_TRUE(run_until([&] { return sink_.records.size() == 1; }));
  EXPECT_EQ(sink_.records[0].ticket, 99u);
  EXPECT_EQ(sink_.records[0].bytes, (std::vector<uint8_t>{9, 9 ^ 0xff}));
}

TEST_F(PoolEngineTest, EnginesWithTheSameSettingsShareOneDevice) {
  // Threads are named before create_pool returns; a joined thread may linger in /proc for a
  // moment, hence the waits when the count goes down.
  ASSERT_TRUE(wait_for([] { return crypto_threads() == 0; }));
  auto a = make_pool(3);
  EXPECT_EQ(crypto_threads(), 3);
  auto b = make_pool(3);  // another loop, or the next config snapshot: same threads
  EXPECT_EQ(crypto_threads(), 3);
  auto c = make_pool(2);  // other settings: a device of its own
  EXPECT_EQ(crypto_threads(), 5);
  a.reset();
  EXPECT_EQ(crypto_threads(), 5);
  b.reset();  // the last user of the 3-thread device
  EXPECT_TRUE(wait_for([] { return crypto_threads() == 2; }));
  c.reset();
  EXPECT_TRUE(wait_for([] { return crypto_threads() == 0; }));
}

TEST_F(PoolEngineTest, AutoStartsOneThreadPerOnlineCpu) {
  ASSERT_TRUE(wait_for([] { return crypto_threads() == 0; }));
  auto engine = make_pool(0);
  ASSERT_TRUE(engine);
  EXPECT_EQ(crypto_threads(), static_cast<int>(std::thread::hardware_concurrency()));
}

TEST_F(PoolEngineTest, ThreadsAreNamed) {
  auto engine = make_pool(2);
  ASSERT_TRUE(engine);
  std::set<std::string> names;
  DIR* dir = ::opendir("/proc/self/task");
  ASSERT_NE(dir, nullptr);
  while (dirent* entry = ::readdir(dir)) {
    std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name)) names.insert(name);
  }
  ::closedir(dir);
  EXPECT_TRUE(names.count("ag-crypto-0"));
  EXPECT_TRUE(names.count("ag-crypto-1"));
}

// The submission queue on its own.

TEST(BoundedMpmcQueueTest, FullAndEmpty) {
  pool::BoundedMpmcQueue<int> queue(5);  // rounded up to 8
  EXPECT_EQ(queue.capacity(), 8u);
  int v = 0;
  EXPECT_FALSE(queue.try_pop(&v));
  for (int i = 0; i < 8; ++i) {
    int x = i;
    EXPECT_TRUE(queue.try_push(x));
  }
  int extra = 99;
  EXPECT_FALSE(queue.try_push(extra));
  EXPECT_EQ(extra, 99);  // not moved from when refused
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(queue.try_pop(&v));
    EXPECT_EQ(v, i);  // FIFO
  }
  EXPECT_FALSE(queue.try_pop(&v));
  // Wrap around several laps.
  for (int i = 0; i < 100; ++i) {
    int x = i;
    ASSERT_TRUE(queue.try_push(x));
    ASSERT_TRUE(queue.try_pop(&v));
    EXPECT_EQ(v, i);
  }
}

TEST(BoundedMpmcQueueTest, ManyProducersAndConsumersDeliverEachValueOnce) {
  pool::BoundedMpmcQueue<uint64_t> queue(64);
  constexpr int kProducers = 4;
  constexpr int kConsumers = 4;
  constexpr uint64_t kPerProducer = 20000;
  std::vector<std::vector<uint64_t>> got(kConsumers);
  std::atomic<uint64_t> popped{0};
  std::vector<std::thread> threads;
  threads.reserve(kProducers + kConsumers);
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (uint64_t i = 0; i < kPerProducer; ++i) {
        uint64_t v = (static_cast<uint64_t>(p) << 32) | i;
        while (!queue.try_push(v)) std::this_thread::yield();
      }
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&, c] {
      uint64_t v = 0;
      while (popped.load() < kProducers * kPerProducer) {
        if (queue.try_pop(&v)) {
          got[c].push_back(v);
          popped.fetch_add(1);
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<uint64_t> all;
  for (auto& g : got) {
    // Within one consumer, each producer's values come in the order they were pushed.
    std::map<uint64_t, uint64_t> last;
    for (uint64_t v : g) {
      uint64_t p = v >> 32;
      uint64_t i = v & 0xffffffffu;
      if (last.count(p)) {
        EXPECT_GT(i, last[p]);
      }
      last[p] = i;
    }
    all.insert(all.end(), g.begin(), g.end());
  }
  ASSERT_EQ(all.size(), kProducers * kPerProducer);
  std::sort(all.begin(), all.end());
  EXPECT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end()) << "a value came twice";
  uint64_t v = 0;
  EXPECT_FALSE(queue.try_pop(&v));
}

}  // namespace
}  // namespace accelgate::offload
