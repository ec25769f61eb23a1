// The accelgate provider, in-process (load_builtin): every private operation of ours checked
// against plain OpenSSL (the default provider in the default library context), with random keys
// and messages, in the three ways an operation can wait: outside any async job (inline), inside
// jobs on a worker-like thread with a current Dispatcher (each engine a parameter; woken by the
// wait ctx callback or by the wait fd) and inside jobs on a thread without one (the standalone
// driver of the module).

#include "accelgate/provider/provider.h"

#include <openssl/async.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "accelgate/common/metrics.h"
#include "accelgate/event/event_loop.h"
#include "accelgate/offload/dispatcher.h"
#include "gtest/gtest.h"
#include "provider_checks.h"
#include "stats.h"

namespace accelgate::provider {
namespace {

using namespace test_support;  // the keys, checks and job helpers shared with engine_op_test

TEST_F(ProviderTest, OurKeyManagersWin) {
  // Keys made in our library context belong to our key managers. (Keys decoded from PEM stay
  // with the default provider's decoder's key manager; each operation exports them to ours, which
  // the op counts of the other tests show.)
  Pkey rsa(EVP_PKEY_Q_keygen(ctx_, nullptr, "RSA", size_t(2048)));
  Pkey ec(EVP_PKEY_Q_keygen(ctx_, nullptr, "EC", "P-384"));
  Pkey x(EVP_PKEY_Q_keygen(ctx_, nullptr, "X25519"));
  ASSERT_TRUE(rsa && ec && x);
  EXPECT_STREQ(provider_of(rsa.get()), "accelgate");
  EXPECT_STREQ(provider_of(ec.get()), "accelgate");
  EXPECT_STREQ(provider_of(x.get()), "accelgate");
  EXPECT_EQ(EVP_PKEY_get_bits(rsa.get()), 2048);
  EXPECT_EQ(EVP_PKEY_get_bits(ec.get()), 384);
  // And they work with plain OpenSSL: a signature by our generated key verifies there.
  TestKey k;
  k.type = "RSA";
  k.ours = std::move(rsa);
  k.plain = reload_in(nullptr, k.ours.get());
  ASSERT_NE(k.plain, nullptr);
  EXPECT_EQ(check_digest_sign(ctx_, k, "SHA2-256", RSA_PKCS1_PSS_PADDING), "");
}

TEST_F(ProviderTest, InlineOutsideJobs) {
  auto before = op_counts();
  std::vector<Check> all = checks();
  for (const Check& c : all) EXPECT_EQ(c.run(ctx_), "") << c.name;
  expect_counted(all, before, "inline");
}

TEST_F(ProviderTest, DefaultStillServesTheRest) {
  // Digests and ciphers of our library context come from the default provider.
  unsigned char md[32];
  unsigned int len = 0;
  EVP_MD* sha256 = EVP_MD_fetch(ctx_, "SHA2-256", nullptr);
  ASSERT_NE(sha256, nullptr);
  ASSERT_EQ(EVP_Digest("abc", 3, md, &len, sha256, nullptr), 1);
  EVP_MD_free(sha256);
  const unsigned char kAbc[] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
                                0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
                                0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  EXPECT_EQ(std::memcmp(md, kAbc, 32), 0);

  EVP_CIPHER* gcm = EVP_CIPHER_fetch(ctx_, "AES-128-GCM", nullptr);
  ASSERT_NE(gcm, nullptr);
  Bytes key = random_bytes(16, 16), iv = random_bytes(12, 12), msg = random_bytes(1, 1000);
  Bytes ct(msg.size()), pt(msg.size());
  unsigned char tag[16];
  int n = 0;
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  ASSERT_EQ(EVP_EncryptInit_ex2(c, gcm, key.data(), iv.data(), nullptr), 1);
  ASSERT_EQ(EVP_EncryptUpdate(c, ct.data(), &n, msg.data(), int(msg.size())), 1);
  ASSERT_EQ(EVP_EncryptFinal_ex(c, ct.data() + n, &n), 1);
  ASSERT_EQ(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag), 1);
  ASSERT_EQ(EVP_DecryptInit_ex2(c, gcm, key.data(), iv.data(), nullptr), 1);
  ASSERT_EQ(EVP_DecryptUpdate(c, pt.data(), &n, ct.data(), int(ct.size())), 1);
  ASSERT_EQ(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16, tag), 1);
  EXPECT_EQ(EVP_DecryptFinal_ex(c, pt.data() + n, &n), 1);
  EXPECT_EQ(pt, msg);
  EVP_CIPHER_CTX_free(c);
  EVP_CIPHER_free(gcm);

  // Ed25519 is not ours: the default provider signs with it.
  Pkey ed(EVP_PKEY_Q_keygen(ctx_, nullptr, "ED25519"));
  ASSERT_NE(ed, nullptr);
  EXPECT_STREQ(provider_of(ed.get()), "default");
}

// handshake runs one TLS handshake between a server whose SSL_CTX lives in our library context
// (as the server's does) and a plain client, over memory BIOs, with |version| and |group|.
// Returns "" when it completes with that group.
std::string handshake(OSSL_LIB_CTX* ctx, TestKey& k, int version, const char* group) {
  X509* cert = self_signed_certificate(k.plain.get());

  SSL_CTX* sctx = SSL_CTX_new_ex(ctx, nullptr, TLS_server_method());
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  std::string why;
  if (SSL_CTX_use_certificate(sctx, cert) != 1 || SSL_CTX_use_PrivateKey(sctx, k.ours.get()) != 1) {
    why = "cannot set the server key";
  }
  for (SSL_CTX* c : {sctx, cctx}) {
    SSL_CTX_set_min_proto_version(c, version);
    SSL_CTX_set_max_proto_version(c, version);
    if (SSL_CTX_set1_groups_list(c, group) != 1) why = std::string("unknown group ") + group;
  }
  SSL* server = SSL_new(sctx);
  SSL* client = SSL_new(cctx);
  BIO* server_bio = nullptr;
  BIO* client_bio = nullptr;
  BIO_new_bio_pair(&server_bio, 0, &client_bio, 0);
  SSL_set_bio(server, server_bio, server_bio);
  SSL_set_bio(client, client_bio, client_bio);
  SSL_set_accept_state(server);
  SSL_set_connect_state(client);
  bool server_done = false, client_done = false;
  for (int round = 0; why.empty() && round < 20 && !(server_done && client_done); ++round) {
    if (!client_done) {
      int r = SSL_do_handshake(client);
      client_done = r == 1;
      if (r != 1 && SSL_get_error(client, r) != SSL_ERROR_WANT_READ) why = "client failed";
    }
    if (!server_done && why.empty()) {
      int r = SSL_do_handshake(server);
      server_done = r == 1;
      if (r != 1 && SSL_get_error(server, r) != SSL_ERROR_WANT_READ) why = "server failed";
    }
  }
  if (why.empty() && !(server_done && client_done)) why = "the handshake did not finish";
  int nid = std::strcmp(group, "X25519") == 0  ? NID_X25519
            : std::strcmp(group, "P-256") == 0 ? NID_X9_62_prime256v1
                                               : NID_secp384r1;
  if (why.empty() && SSL_get_negotiated_group(server) != nid) {
    why = "another group was negotiated";
  }
  if (!why.empty()) {
    unsigned long e = ERR_peek_error();
    char text[256] = "";
    ERR_error_string_n(e, text, sizeof(text));
    why += std::string(": ") + text;
    ERR_clear_error();
  }
  SSL_free(server);
  SSL_free(client);
  SSL_CTX_free(sctx);
  SSL_CTX_free(cctx);
  X509_free(cert);
  return why;
}

TEST_F(ProviderTest, TlsHandshakesUseOurGroups) {
  // libssl keeps a TLS group only when the key manager it fetches for it is the provider's that
  // announced the group; ours win the fetch, so ours must announce EC and X25519 groups too.
  auto before = op_counts();
  TestKey& rsa = (*keys_)[0];
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    for (const char* group : {"X25519", "P-256", "P-384"}) {
      EXPECT_EQ(handshake(ctx_, rsa, version, group), "")
          << group << (version == TLS1_3_VERSION ? " TLS 1.3" : " TLS 1.2");
    }
  }
  EXPECT_GT(count_of("rsa_sign", "inline"), before["rsa_sign inline"]);
  EXPECT_GT(count_of("ecdh_derive", "inline"), before["ecdh_derive inline"]);
  EXPECT_GT(count_of("x25519_derive", "inline"), before["x25519_derive inline"]);
  EXPECT_GT(count_of("x25519_keygen", "inline"), before["x25519_keygen inline"]);
}

struct ServerModeCase {
  const char* engine;
  bool callback;
};

void PrintTo(const ServerModeCase& c, std::ostream* os) {
  *os << c.engine << (c.callback ? " woken by callback" : " woken by wait fd");
}

class ServerModeTest : public ProviderTest, public ::testing::WithParamInterface<ServerModeCase> {};

TEST_P(ServerModeTest, MatchesOpenSsl) {
  const ServerModeCase param = GetParam();
  std::vector<Check> all = checks();
  auto before = op_counts();
  std::thread worker([&] {
    auto loop = event::EventLoop::create();
    ASSERT_TRUE(loop.ok());
    config::OffloadSettings settings;
    settings.crypto = param.engine;
    settings.fallback = false;  // a result must come from the engine under test
    settings.op_timeout = std::chrono::milliseconds(10000);
    settings.emu.latency = std::chrono::microseconds(300);
    auto dispatcher = offload::Dispatcher::create(loop->get(), settings);
    ASSERT_TRUE(dispatcher.ok()) << dispatcher.error().message;
    (*dispatcher)->make_current();
    int pauses = 0;
    for (const Check& c : all) {
      std::string why;
      bool ok = run_job_on_loop(
          loop->get(), param.callback,
          [&] {
            why = c.run(ctx_);
            return why.empty();
          },
          &pauses);
      EXPECT_TRUE(ok) << c.name << ": " << why;
    }
    // sw computes inside submit; the others complete later and so pause the job.
    if (std::string(param.engine) != "sw") {
      EXPECT_GT(pauses, 0);
    }
    dispatcher->reset();
    OPENSSL_thread_stop();
  });
  worker.join();
  expect_counted(all, before, param.engine);
}

INSTANTIATE_TEST_SUITE_P(Engines, ServerModeTest,
                         ::testing::Values(ServerModeCase{"sw", true}, ServerModeCase{"pool", true},
                                           ServerModeCase{"pool", false},
                                           ServerModeCase{"emu", true},
                                           ServerModeCase{"emu", false}),
                         [](const auto& info) {
                           return std::string(info.param.engine) +
                                  (info.param.callback ? "_callback" : "_fd");
                         });

// The mb engine through the provider: RSA signatures (PKCS#1 v1.5 and PSS, every key size) are
// encoded by the provider (rsa_encoding.h), ECDSA P-256/P-384 signatures get the digest, ECDH
// the peer's point, X25519 derivations both raw keys and X25519 key generations a private key
// the provider draws (it makes the key from mb's public key); mb computes them and plain OpenSSL
// checks them. With `fallback off`, so a result comes from mb; everything mb does not
// accelerate (RSA decryption) goes to sw. On a CPU without IFMA the test hook runs mb on its
// portable back end; a second hook sends every batch, even of one op, to the kernels (the checks
// run one at a time), so that no op here is computed by OpenSSL inside mb.
// metric_value reads an unlabelled metric of this process (0 when absent).
uint64_t metric_value(const std::string& name) {
  std::istringstream text(metrics::Registry::global().render());
  for (std::string line; std::getline(text, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stoull(line.substr(name.size() + 1));
  }
  return 0;
}

TEST_F(ProviderTest, MbEngineServesEveryOpItHasKernelsFor) {
  ::setenv("ACCELGATE_TEST_MB_PORTABLE", "1", 1);
  ::setenv("ACCELGATE_TEST_MB_KERNELS_ALWAYS", "1", 1);
  const std::set<std::string> mb_kinds = {"rsa_sign", "ecdsa_sign", "ecdh_derive", "x25519_derive",
                                          "x25519_keygen"};
  std::vector<Check> served;
  for (Check& c : checks()) {
    bool all_mb = true;
    for (const std::string& k : c.kinds) all_mb = all_mb && mb_kinds.count(k) == 1;
    if (all_mb) served.push_back(std::move(c));
  }
  std::set<std::string> kinds;
  for (const Check& c : served) kinds.insert(c.kinds.begin(), c.kinds.end());
  ASSERT_EQ(kinds, mb_kinds);
  ASSERT_GE(served.size(), 16u);  // RSA signatures of four kinds on three sizes, EC, X25519
  auto before = op_counts();
  uint64_t software_before = metric_value("accelgate_offload_mb_software_total");
  uint64_t recomputed_before = metric_value("accelgate_offload_mb_recomputed_total");
  std::thread worker([&] {
    auto loop = event::EventLoop::create();
    ASSERT_TRUE(loop.ok());
    config::OffloadSettings settings;
    settings.crypto = "mb";
    settings.fallback = false;
    settings.op_timeout = std::chrono::milliseconds(10000);
    auto dispatcher = offload::Dispatcher::create(loop->get(), settings);
    ASSERT_TRUE(dispatcher.ok()) << dispatcher.error().message;
    (*dispatcher)->make_current();
    int pauses = 0;
    for (const Check& c : served) {
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
    EXPECT_GT(pauses, 0) << "mb completes at the loop's idle hook, so every job pauses";
    // The key generation batch above left spare key pairs (the private key drawn by mb, op.h):
    // the next generations take them at submit. Each key must still derive what OpenSSL derives
    // with its public key; with spares, only the derivation pauses.
    auto keygen = std::find_if(served.begin(), served.end(),
                               [](const Check& c) { return c.kinds.front() == "x25519_keygen"; });
    ASSERT_NE(keygen, served.end());
    int keygen_pauses = 0;
    for (int i = 0; i < 4; ++i) {
      std::string why;
      bool ok = run_job_on_loop(
          loop->get(), true,
          [&] {
            why = keygen->run(ctx_);
            return why.empty();
          },
          &keygen_pauses);
      EXPECT_TRUE(ok) << keygen->name << " from a spare, " << i << ": " << why;
    }
    EXPECT_EQ(keygen_pauses, 4) << "one pause per job (the derivation): key pairs from spares";
    dispatcher->reset();
    OPENSSL_thread_stop();
  });
  worker.join();
  ::unsetenv("ACCELGATE_TEST_MB_KERNELS_ALWAYS");
  expect_counted(served, before, "mb");
  EXPECT_EQ(count_of("x25519_derive", "sw"), before["x25519_derive sw"]);
  EXPECT_EQ(count_of("ecdh_derive", "sw"), before["ecdh_derive sw"]);
  EXPECT_EQ(metric_value("accelgate_offload_mb_software_total"), software_before)
      << "an op was computed by OpenSSL inside mb: the kernels were not exercised";
  EXPECT_EQ(metric_value("accelgate_offload_mb_recomputed_total"), recomputed_before)
      << "a kernel result failed its check and was recomputed by OpenSSL";
}

// ---- LibraryFns: every op that produces bytes also carries a LibraryFn, which redoes it in
// another library context (the `openssl` engine's). Here that context is a fresh one with only
// the default provider, and the engine is a test engine that calls compute_with_library itself.

// LibraryEngine computes every op through its LibraryFn in |libctx| with no property query,
// inside submit (kDone). It keeps the ops it served, for reruns after their callers are gone,
// and the kinds of the ops it could not serve. Used on one thread. With |uses_library_fn|
// false it says it needs no LibraryFn (Engine::uses_library_fn), as every engine but the
// vendor one does.
class LibraryEngine final : public offload::Engine {
 public:
  struct Served {
    offload::OpRef op;
    Bytes first;  // the output of the run that served the op
  };

  LibraryEngine(OSSL_LIB_CTX* libctx, bool uses_library_fn)
      : libctx_(libctx), uses_library_fn_(uses_library_fn) {}
  // Another name without LibraryFns: the circuit breaker that its failures open is per name.
  std::string_view name() const override { return uses_library_fn_ ? "library" : "no-library"; }
  bool uses_library_fn() const override { return uses_library_fn_; }
  bool accelerates(const offload::Op&) const override { return true; }
  offload::SubmitResult submit(const offload::OpRef& op, uint64_t,
                               offload::OpOutput* out) override {
    std::string kind(offload::op_kind_name(op->kind()));
    if (!op->has_library_fn()) {
      without_fn_.push_back(kind);
      return offload::SubmitResult::kFailed;
    }
    if (!op->compute_with_library({libctx_, nullptr, nullptr}, out)) {
      failed_.push_back(kind);
      ERR_clear_error();
      return offload::SubmitResult::kFailed;
    }
    served_.push_back({op, out->bytes});
    return offload::SubmitResult::kDone;
  }

  const std::vector<Served>& served() const { return served_; }
  const std::vector<std::string>& without_fn() const { return without_fn_; }
  const std::vector<std::string>& failed() const { return failed_; }

 private:
  OSSL_LIB_CTX* libctx_;
  bool uses_library_fn_;
  std::vector<Served> served_;
  std::vector<std::string> without_fn_;
  std::vector<std::string> failed_;
};

// LibraryRun is a worker-like thread whose dispatcher's only engine is a LibraryEngine over a
// fresh library context with the default provider (fallback off: a result comes from it).
class LibraryRun {
 public:
  LibraryRun() {
    libctx_ = OSSL_LIB_CTX_new();
    if (libctx_ != nullptr) default_ = OSSL_PROVIDER_load(libctx_, "default");
  }
  ~LibraryRun() {
    if (default_ != nullptr) OSSL_PROVIDER_unload(default_);
    OSSL_LIB_CTX_free(libctx_);
  }
  LibraryRun(const LibraryRun&) = delete;
  LibraryRun& operator=(const LibraryRun&) = delete;

  // run calls |body| on a new thread with a current dispatcher, then |after| there once the
  // dispatcher is gone (the engine's ops are then held by the engine's copy of them only).
  void run(const std::function<void(event::EventLoop*, LibraryEngine*)>& body,
           const std::function<void(const std::vector<LibraryEngine::Served>&)>& after,
           bool uses_library_fn = true) {
    ASSERT_NE(default_, nullptr);
    std::thread worker([&] {
      auto loop = event::EventLoop::create();
      ASSERT_TRUE(loop.ok());
      config::OffloadSettings settings;
      settings.fallback = false;
      std::vector<std::unique_ptr<offload::Engine>> engines;
      auto engine = std::make_unique<LibraryEngine>(libctx_, uses_library_fn);
      LibraryEngine* library = engine.get();
      engines.push_back(std::move(engine));
      auto dispatcher =
          offload::Dispatcher::create_with_engines(loop->get(), settings, std::move(engines));
      dispatcher->make_current();
      body(loop->get(), library);
      std::vector<LibraryEngine::Served> served = library->served();
      dispatcher.reset();
      after(served);
      OPENSSL_thread_stop();
    });
    worker.join();
  }

 private:
  OSSL_LIB_CTX* libctx_ = nullptr;
  OSSL_PROVIDER* default_ = nullptr;
};

TEST_F(ProviderTest, LibraryFnsMatchOpenSsl) {
  std::vector<Check> all;
  for (Check& c : checks()) {
    if (c.kinds.front() != "x25519_keygen") all.push_back(std::move(c));
  }
  auto before = op_counts();
  // The served ops of the TLS premaster checks: a rejected premaster secret is new random bytes
  // on every run (RFC 5246 §7.4.7.1), so their reruns are not compared. Nor those of the key
  // share checks: they change the peer key after deriving with it, and a LibraryFn holds the
  // key, not a copy of it.
  std::set<size_t> not_compared;
  LibraryRun library;
  library.run(
      [&](event::EventLoop* loop, LibraryEngine* engine) {
        int pauses = 0;
        for (const Check& c : all) {
          std::string why;
          size_t first = engine->served().size();
          bool ok = run_job_on_loop(
              loop, true,
              [&] {
                why = c.run(ctx_);
                return why.empty();
              },
              &pauses);
          EXPECT_TRUE(ok) << c.name << ": " << why;
          if (c.name.find("TLS 1.2 premaster") != std::string::npos ||
              c.name.find("key share") != std::string::npos) {
            for (size_t i = first; i < engine->served().size(); ++i) not_compared.insert(i);
          }
        }
        EXPECT_EQ(engine->without_fn(), std::vector<std::string>{});
        EXPECT_EQ(engine->failed(), std::vector<std::string>{});
      },
      [&](const std::vector<LibraryEngine::Served>& served) {
        // Every caller has returned and freed its contexts: a LibraryFn holds all it needs (an
        // engine may run it late). Decryption and derivation give the same bytes again.
        std::set<std::string> kinds;
        for (size_t i = 0; i < served.size(); ++i) {
          const LibraryEngine::Served& s = served[i];
          std::string kind(offload::op_kind_name(s.op->kind()));
          kinds.insert(kind);
          OSSL_LIB_CTX* fresh = OSSL_LIB_CTX_new();
          OSSL_PROVIDER* def = OSSL_PROVIDER_load(fresh, "default");
          offload::OpOutput again;
          EXPECT_TRUE(s.op->compute_with_library({fresh, nullptr, nullptr}, &again)) << kind;
          if (kind != "rsa_sign" && kind != "ecdsa_sign" && not_compared.count(i) == 0) {
            EXPECT_EQ(again.bytes, s.first) << kind;
          }
          EXPECT_FALSE(again.bytes.empty()) << kind;
          OSSL_PROVIDER_unload(def);
          OSSL_LIB_CTX_free(fresh);
        }
        EXPECT_EQ(kinds, (std::set<std::string>{"rsa_sign", "rsa_decrypt", "ecdsa_sign",
                                                "ecdh_derive", "x25519_derive"}));
      });
  expect_counted(all, before, "library");
}

TEST_F(ProviderTest, NoLibraryFnWhereNoEngineUsesOne) {
  // Building a LibraryFn costs about a microsecond per op (the parameters, the key's export):
  // ops get none when no engine of the dispatcher's chain calls it.
  std::vector<Check> some;
  std::set<std::string> kinds;
  for (Check& c : checks()) {
    const std::string& kind = c.kinds.front();
    if ((kind == "rsa_sign" || kind == "ecdsa_sign" || kind == "rsa_decrypt" ||
         kind == "ecdh_derive" || kind == "x25519_derive") &&
        kinds.insert(kind).second) {
      some.push_back(std::move(c));
    }
  }
  ASSERT_EQ(some.size(), 5U);
  LibraryRun library;
  library.run(
      [&](event::EventLoop* loop, LibraryEngine* engine) {
        int pauses = 0;
        for (const Check& c : some) {
          EXPECT_FALSE(run_job_on_loop(
              loop, true, [&] { return c.run(ctx_).empty(); }, &pauses))
              << c.name;  // fallback off: the engine cannot compute it
          ERR_clear_error();
        }
        std::vector<std::string> want;
        for (const Check& c : some) want.push_back(c.kinds.front());
        EXPECT_EQ(engine->without_fn(), want);
        EXPECT_TRUE(engine->served().empty());
      },
      [](const std::vector<LibraryEngine::Served>&) {}, /*uses_library_fn=*/false);
}

TEST_F(ProviderTest, NoLibraryFnForKeygenOrKdf) {
  // X25519 keygen must produce a key of our default provider: no LibraryFn. ECDH with a KDF is
  // not TLS's, and its parameters are not carried: no LibraryFn either. Both fail on an engine
  // that needs one (fallback off here), and both work in software.
  TestKey* x25519 = nullptr;
  TestKey* p256 = nullptr;
  for (TestKey& k : *keys_) {
    if (k.name == "x25519") x25519 = &k;
    if (k.name == "p256") p256 = &k;
  }
  ASSERT_TRUE(x25519 != nullptr && p256 != nullptr);
  auto kdf_derive = [&]() -> Bytes {
    Pkey peer_pub = public_only(p256->peer.get());
    PkeyCtx c(EVP_PKEY_CTX_new_from_pkey(ctx_, p256->ours.get(), nullptr));
    size_t len = 32;
    Bytes out(len);
    if (EVP_PKEY_derive_init(c.get()) != 1 ||
        EVP_PKEY_derive_set_peer(c.get(), peer_pub.get()) != 1 ||
        EVP_PKEY_CTX_set_ecdh_kdf_type(c.get(), EVP_PKEY_ECDH_KDF_X9_63) != 1 ||
        EVP_PKEY_CTX_set_ecdh_kdf_md(c.get(), EVP_sha256()) != 1 ||
        EVP_PKEY_CTX_set_ecdh_kdf_outlen(c.get(), 32) != 1 ||
        EVP_PKEY_derive(c.get(), out.data(), &len) != 1) {
      ERR_clear_error();
      return {};
    }
    out.resize(len);
    return out;
  };
  EXPECT_EQ(kdf_derive().size(), 32U);  // outside a job: software
  EXPECT_EQ(check_x25519_keygen(ctx_, *x25519), "");

  LibraryRun library;
  library.run(
      [&](event::EventLoop* loop, LibraryEngine* engine) {
        int pauses = 0;
        EXPECT_FALSE(run_job_on_loop(
            loop, true, [&] { return check_x25519_keygen(ctx_, *x25519).empty(); }, &pauses));
        EXPECT_FALSE(run_job_on_loop(
            loop, true, [&] { return !kdf_derive().empty(); }, &pauses));
        ERR_clear_error();
        EXPECT_EQ(engine->without_fn(), (std::vector<std::string>{"x25519_keygen", "ecdh_derive"}));
        EXPECT_EQ(engine->failed(), std::vector<std::string>{});
      },
      [](const std::vector<LibraryEngine::Served>&) {});
}

// run_job_standalone runs |fn| in an async job on a thread without a dispatcher, waiting as
// `openssl speed` does (poll on the wait fd) or, with |callback|, for the wait ctx callback
// (which comes from the driver thread).
bool run_job_standalone(bool callback, std::function<bool()> fn) {
  struct Wake {
    std::mutex mutex;
    std::condition_variable cv;
    bool woken = false;
  } wake;
  ASYNC_WAIT_CTX* wait_ctx = ASYNC_WAIT_CTX_new();
  if (callback) {
    ASYNC_WAIT_CTX_set_callback(
        wait_ctx,
        [](void* arg) {
          auto* w = static_cast<Wake*>(arg);
          std::lock_guard lock(w->mutex);
          w->woken = true;
          w->cv.notify_one();
          return 1;
        },
        &wake);
  }
  ASYNC_JOB* job = nullptr;
  int ret = 0;
  std::function<bool()>* fn_ptr = &fn;
  bool ok = false;
  for (;;) {
    int r = ASYNC_start_job(&job, wait_ctx, &ret, job_main, &fn_ptr, sizeof(fn_ptr));
    if (r == ASYNC_FINISH) {
      ok = ret == 1;
      break;
    }
    if (r != ASYNC_PAUSE) break;
    if (callback) {
      std::unique_lock lock(wake.mutex);
      wake.cv.wait(lock, [&] { return wake.woken; });
      wake.woken = false;
    } else {
      OSSL_ASYNC_FD fd = -1;
      size_t n = 1;
      if (ASYNC_WAIT_CTX_get_all_fds(wait_ctx, &fd, &n) != 1 || n != 1) break;
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, 10000);
    }
  }
  ASYNC_WAIT_CTX_free(wait_ctx);
  return ok;
}

TEST_F(ProviderTest, StandaloneDriver) {
  // The driver is process-wide and reads its settings once, on first use.
  setenv("ACCELGATE_CRYPTO", "pool", 1);
  std::vector<Check> all = checks();
  auto before = op_counts();
  for (bool callback : {false, true}) {
    std::thread app([&] {
      for (const Check& c : all) {
        std::string why;
        bool ok = run_job_standalone(callback, [&] {
          why = c.run(ctx_);
          return why.empty();
        });
        EXPECT_TRUE(ok) << c.name << (callback ? " (callback): " : " (fd): ") << why;
      }
      OPENSSL_thread_stop();
    });
    app.join();
  }
  expect_counted(all, before, "pool");
}

}  // namespace
}  // namespace accelgate::provider
