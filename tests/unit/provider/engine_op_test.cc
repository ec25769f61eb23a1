// The ENGINE path of the openssl engine (`crypto openssl:ID` with ID an OpenSSL ENGINE): keys
// bound to the engine and legacy operations through it (src/provider/engine_op.cc), loading,
// control commands, capabilities and polling (src/offload/engines/openssl/vendor_engine.cc).
//
// The engine is build/ag_emu_engine.so, the emulated ENGINE of tests/engine: it pauses the async
// job until its device thread completes the operation and then computes with OpenSSL's own
// methods. Every RSA and EC check of provider_checks.h (random keys; PKCS#1 v1.5 and PSS
// signatures, PKCS#1 v1.5, OAEP and TLS 1.2 decryption, ECDSA and ECDH on P-256 and P-384) runs
// in async jobs on a worker-like thread whose dispatcher's only engine is the openssl engine
// (fallback off, so every result comes from it) and is compared with plain OpenSSL; the emulated
// engine's own counters prove that it computed them.
//
// OPENSSL_SUPPRESS_DEPRECATED: the capability tests build small ENGINEs in-process with the
// ENGINE API, deprecated in OpenSSL 3.0 (this file is built only where OpenSSL has it).
#define OPENSSL_SUPPRESS_DEPRECATED

#include <openssl/engine.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "accelgate/common/metrics.h"
#include "accelgate/offload/dispatcher.h"
#include "engines/engines.h"
#include "provider_checks.h"

namespace accelgate::provider {
namespace {

using namespace test_support;  // the keys, checks and job helpers shared with provider_test

const char* const kEmuEngine = AG_EMU_ENGINE_PATH;

std::string stats_path() { return ::testing::TempDir() + "ag_emu_engine_unit.stats"; }
std::string polled_stats_path() { return ::testing::TempDir() + "ag_emu_engine_polled.stats"; }

using Stats = std::map<std::string, uint64_t>;

// read_stats reads the emulated engine's counters (tests/engine/ag_emu_engine.cc), rewritten by
// its device thread within 100 ms of a change.
Stats read_stats(const std::string& path) {
  Stats out;
  std::ifstream in(path);
  std::string name;
  uint64_t n = 0;
  while (in >> name >> n) out[name] = n;
  return out;
}

// wait_for_stats waits until |pred| holds for the counters that |read| returns (or 3 s have
// passed) and returns them.
template <typename Read, typename Pred>
Stats wait_for_stats(Read read, Pred pred) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  Stats stats = read();
  while (!pred(stats) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stats = read();
  }
  return stats;
}

// ops_total reads accelgate_offload_ops_total{engine,op,result} from the metrics registry.
double ops_total(const std::string& engine, const std::string& op, const std::string& result) {
  std::string key = "accelgate_offload_ops_total{engine=\"" + engine + "\",op=\"" + op +
                    "\",result=\"" + result + "\"} ";
  std::string text = metrics::Registry::global().render();
  size_t at = text.find(key);
  return at == std::string::npos ? 0 : std::stod(text.substr(at + key.size()));
}

class EngineOpTest : public ProviderTest {
 protected:
  static void SetUpTestSuite() {
    // Read by the emulated engine when it is first bound; a file of an earlier run goes first.
    for (const char* name :
         {"ag_emu_engine_unit", "ag_emu_engine_polled", "ag_emu_engine_failing"}) {
      ::unlink((::testing::TempDir() + name + ".stats").c_str());
    }
    setenv("AG_EMU_ENGINE_STATS", stats_path().c_str(), 1);
    setenv("AG_EMU_ENGINE_LATENCY_US", "300", 1);
    ProviderTest::SetUpTestSuite();
  }

  // engine_checks are the checks of the RSA and EC keys (X25519 goes to no ENGINE).
  static std::vector<Check> engine_checks() {
    std::vector<Check> out;
    for (Check& c : checks()) {
      if (c.kinds.front().starts_with("x25519")) continue;
      out.push_back(std::move(c));
    }
    return out;
  }

  // run_on_worker runs |checks| in async jobs on a new thread whose dispatcher is made from
  // |settings|; returns how often the jobs paused. Every check must succeed.
  static int run_on_worker(const config::OffloadSettings& settings,
                           const std::vector<Check>& checks) {
    int pauses = 0;
    std::thread worker([&] {
      auto loop = event::EventLoop::create();
      ASSERT_TRUE(loop.ok());
      auto dispatcher = offload::Dispatcher::create(loop->get(), settings);
      ASSERT_TRUE(dispatcher.ok()) << dispatcher.error().message;
      (*dispatcher)->make_current();
      for (const Check& c : checks) {
        std::string why;
        bool ok = run_job_on_loop(
            loop->get(), true,
            [&] {
              why = c.run(ctx_);
              return why.empty();
            },
            &pauses);
        EXPECT_TRUE(ok) << c.name << ": " << why;
      }
      dispatcher->reset();
      OPENSSL_thread_stop();
    });
    worker.join();
    return pauses;
  }

  static config::OffloadSettings engine_settings() {
    config::OffloadSettings s;
    s.crypto = std::string("openssl:") + kEmuEngine;
    s.fallback = false;  // a result must come from the engine under test
    s.op_timeout = std::chrono::milliseconds(10000);
    return s;
  }
};

struct NotifyCase {
  config::OffloadSettings::Notify notify;
  config::OffloadSettings::PollMode poll_mode;
  const char* name;
};

class EngineNotifyTest : public EngineOpTest, public ::testing::WithParamInterface<NotifyCase> {};

// engine_copy is a copy of the emulated engine named |name|, for the cases that set an engine up
// otherwise (external polling, control commands): an ENGINE is set up once per process, so
// "another card" is another shared object, with counters of its own (AG_EMU_ENGINE_STATS is read
// by each copy when it is first bound).
std::string engine_copy(const std::string& name) {
  std::string copy = ::testing::TempDir() + name + ".so";
  std::ifstream in(kEmuEngine, std::ios::binary);
  std::ofstream out(copy, std::ios::binary | std::ios::trunc);
  out << in.rdbuf();
  return copy;
}

std::string polled_engine() {
  static const std::string path = engine_copy("ag_emu_engine_polled");
  return path;
}

TEST_P(EngineNotifyTest, MatchesOpenSsl) {
  config::OffloadSettings settings = engine_settings();
  settings.notify = GetParam().notify;
  settings.poll_mode = GetParam().poll_mode;
  bool polled = settings.notify == config::OffloadSettings::Notify::kPoll;
  if (polled) {
    settings.crypto = "openssl:" + polled_engine();
    setenv("AG_EMU_ENGINE_STATS", polled_stats_path().c_str(), 1);
  }
  auto emu_stats = [polled] { return read_stats(polled ? polled_stats_path() : stats_path()); };
  std::vector<Check> all = engine_checks();
  auto before = op_counts();
  std::map<std::string, double> errors;
  for (const char* op : {"rsa_sign", "rsa_decrypt", "ecdsa_sign", "ecdh_derive"}) {
    errors[op] = ops_total("openssl", op, "error");
  }
  Stats emu_before = emu_stats();
  int pauses = run_on_worker(settings, all);
  EXPECT_GT(pauses, 0);  // the openssl engine's jobs paused, so the TLS-like jobs did too
  expect_counted(all, before, "openssl");
  for (const auto& [op, n] : errors) EXPECT_EQ(ops_total("openssl", op, "error"), n) << op;
  auto grew = [&](const Stats& now, const char* name) {
    auto was = emu_before.find(name);
    auto is = now.find(name);
    return is != now.end() && is->second > (was == emu_before.end() ? 0 : was->second);
  };
  Stats stats = wait_for_stats(emu_stats, [&](const Stats& now) {
    return grew(now, "rsa_priv_enc") && grew(now, "rsa_priv_dec") && grew(now, "ecdsa_sign") &&
           grew(now, "ecdh_compute_key") && grew(now, "async") && (!polled || grew(now, "polls"));
  });
  // The engine computed them, in jobs it paused (async).
  for (const char* name :
       {"rsa_priv_enc", "rsa_priv_dec", "ecdsa_sign", "ecdh_compute_key", "async"}) {
    EXPECT_TRUE(grew(stats, name)) << name << " did not grow";
  }
  // notify poll sends POLL (the emulated engine then completes only on POLL: external polling).
  EXPECT_EQ(grew(stats, "polls"), polled);
  // Keys are bound to the engine once per key (KeyExport), not once per op: a few for the 3 RSA
  // and 2 EC test keys (OpenSSL may export a key to our key manager more than once), against
  // many operations.
  uint64_t rsa_ops = stats["rsa_priv_enc"] + stats["rsa_priv_dec"] - emu_before["rsa_priv_enc"] -
                     emu_before["rsa_priv_dec"];
  EXPECT_LE(stats["rsa_keys"] - emu_before["rsa_keys"], 2 * 3u);
  EXPECT_LE(stats["ec_keys"] - emu_before["ec_keys"], 2 * 2u);
  EXPECT_GT(rsa_ops, 6 * 3u);
}

INSTANTIATE_TEST_SUITE_P(
    Notify, EngineNotifyTest,
    ::testing::Values(NotifyCase{config::OffloadSettings::Notify::kEvent,
                                 config::OffloadSettings::PollMode::kHeuristic, "event"},
                      NotifyCase{config::OffloadSettings::Notify::kPoll,
                                 config::OffloadSettings::PollMode::kHeuristic, "poll_heuristic"},
                      NotifyCase{config::OffloadSettings::Notify::kPoll,
                                 config::OffloadSettings::PollMode::kTimer, "poll_timer"},
                      NotifyCase{config::OffloadSettings::Notify::kPoll,
                                 config::OffloadSettings::PollMode::kBusy, "poll_busy"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(EngineOpTest, X25519GoesToTheNextEngineUncounted) {
  // The ENGINE does no X25519: with fallback on, software serves it at first hand (ok, not
  // fallback), and nothing is counted against the openssl engine.
  config::OffloadSettings settings = engine_settings();
  settings.fallback = true;
  std::vector<Check> x25519;
  for (Check& c : checks()) {
    if (c.kinds.front() == "x25519_derive") x25519.push_back(std::move(c));
  }
  ASSERT_FALSE(x25519.empty());
  double sw_ok = ops_total("sw", "x25519_derive", "ok");
  auto before = op_counts();
  run_on_worker(settings, x25519);
  expect_counted(x25519, before, "sw");
  EXPECT_GT(ops_total("sw", "x25519_derive", "ok"), sw_ok);
  for (const char* result : {"ok", "error", "busy", "timeout", "fallback"}) {
    EXPECT_EQ(ops_total("openssl", "x25519_derive", result), 0) << result;
  }
  EXPECT_EQ(ops_total("sw", "x25519_derive", "fallback"), 0);
}

TEST_F(EngineOpTest, FailingEngineFallsBack) {
  // ERROR_RATE 1 through openssl_engine_ctrl (a control command before ENGINE_init): every op
  // fails on the engine and is computed in software (fallback on); the caller sees no failure.
  config::OffloadSettings settings = engine_settings();
  settings.crypto = "openssl:" + engine_copy("ag_emu_engine_failing");
  std::string failing_stats = ::testing::TempDir() + "ag_emu_engine_failing.stats";
  setenv("AG_EMU_ENGINE_STATS", failing_stats.c_str(), 1);
  auto emu_stats = [&] { return read_stats(failing_stats); };
  settings.fallback = true;
  settings.retry_interval = std::chrono::milliseconds(0);  // keep offering it the ops
  settings.engine_ctrls.push_back({"ERROR_RATE", "1", true, {}});
  std::vector<Check> rsa;
  for (Check& c : engine_checks()) {
    if (c.name.starts_with("rsa2048")) rsa.push_back(std::move(c));
  }
  double errors = ops_total("openssl", "rsa_sign", "error");
  double fallbacks = ops_total("sw", "rsa_sign", "fallback");
  auto emu_before = emu_stats();
  run_on_worker(settings, rsa);
  EXPECT_GT(ops_total("openssl", "rsa_sign", "error"), errors);
  EXPECT_GT(ops_total("sw", "rsa_sign", "fallback"), fallbacks);
  Stats stats =
      wait_for_stats(emu_stats, [&](Stats& now) { return now["failed"] > emu_before["failed"]; });
  EXPECT_GT(stats["failed"], emu_before["failed"]);
}

// ---- Loading, control commands and capabilities, with ENGINEs made here.

struct RsaMethodFree {
  void operator()(RSA_METHOD* m) const { RSA_meth_free(m); }
};

int copied_priv_enc(int flen, const unsigned char* from, unsigned char* to, RSA* rsa, int pad) {
  return RSA_meth_get_priv_enc(RSA_PKCS1_OpenSSL())(flen, from, to, rsa, pad);
}

// add_engine adds an ENGINE |id| to OpenSSL's list (so ENGINE_by_id finds it), with |rsa| as its
// RSA method when not null. The list keeps it until the process ends.
void add_engine(const char* id, RSA_METHOD* rsa) {
  ENGINE* e = ENGINE_new();
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(ENGINE_set_id(e, id), 1);
  ASSERT_EQ(ENGINE_set_name(e, id), 1);
  if (rsa != nullptr) {
    ASSERT_EQ(ENGINE_set_RSA(e, rsa), 1);
  }
  ASSERT_EQ(ENGINE_add(e), 1);
  ENGINE_free(e);  // the list holds its own reference
}

bool accelerates(const offload::Engine& engine, offload::OpKind kind, int bits) {
  offload::Op op(kind, bits, [](offload::OpOutput*) { return false; });
  return engine.accelerates(op);
}

TEST_F(EngineOpTest, CapabilitiesComeFromTheEnginesMethods) {
  static RSA_METHOD* sign_only = [] {
    RSA_METHOD* m = RSA_meth_dup(RSA_PKCS1_OpenSSL());
    RSA_meth_set_priv_enc(m, copied_priv_enc);
    return m;
  }();
  add_engine("ag_test_rsa_sign", sign_only);
  add_engine("ag_test_ctrl", sign_only);
  add_engine("ag_test_nothing", nullptr);
  auto loop = event::EventLoop::create();
  ASSERT_TRUE(loop.ok());
  struct NullSink final : offload::CompletionSink {
    void complete(const offload::OpRef&, uint64_t, bool, offload::OpOutput&&) override {}
  } sink;
  offload::EngineContext context{loop->get(), &sink};

  config::OffloadSettings s;
  s.crypto = "openssl:ag_test_rsa_sign";
  auto engine = offload::create_openssl(s, context);
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  EXPECT_TRUE(accelerates(**engine, offload::OpKind::kRsaSign, 2048));
  EXPECT_FALSE(accelerates(**engine, offload::OpKind::kRsaDecrypt, 2048));
  EXPECT_FALSE(accelerates(**engine, offload::OpKind::kEcdsaSign, 256));
  EXPECT_FALSE(accelerates(**engine, offload::OpKind::kEcdhDerive, 256));
  EXPECT_FALSE(accelerates(**engine, offload::OpKind::kX25519Derive, 256));
  EXPECT_FALSE(accelerates(**engine, offload::OpKind::kX25519Keygen, 256));
  EXPECT_EQ(offload::probe_openssl(s), "");
  EXPECT_NE(offload::describe_openssl(s).find("ENGINE \"ag_test_rsa_sign\""), std::string::npos)
      << offload::describe_openssl(s);
  EXPECT_NE(offload::describe_openssl(s).find(": accelerates RSA sign"), std::string::npos)
      << offload::describe_openssl(s);
  EXPECT_EQ(offload::describe_openssl(s).find("RSA decrypt"), std::string::npos)
      << offload::describe_openssl(s);
  engine->reset();

  s.crypto = "openssl:ag_test_nothing";
  EXPECT_NE(offload::probe_openssl(s).find("implements none of"), std::string::npos)
      << offload::probe_openssl(s);

  // A control command the engine does not know fails the load, naming the directive's line.
  s.crypto = "openssl:ag_test_ctrl";
  s.engine_ctrls.push_back({"NO_SUCH_COMMAND", "1", true, {"accelgate.conf", 7}});
  std::string why = offload::probe_openssl(s);
  EXPECT_NE(why.find("accelgate.conf:7: openssl_engine_ctrl NO_SUCH_COMMAND 1: refused"),
            std::string::npos)
      << why;

  s.engine_ctrls.clear();
  s.crypto = "openssl:ag_test_no_such_engine";
  why = offload::probe_openssl(s);
  EXPECT_NE(why.find("cannot load the OpenSSL provider \"ag_test_no_such_engine\""),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("cannot load the OpenSSL ENGINE \"ag_test_no_such_engine\""),
            std::string::npos)
      << why;
}

TEST_F(EngineOpTest, EngineSupportIsReported) {
  config::OffloadSettings s;
  EXPECT_NE(offload::describe_openssl(s).find("OpenSSL ENGINE support: compiled in"),
            std::string::npos)
      << offload::describe_openssl(s);
}

}  // namespace
}  // namespace accelgate::provider
