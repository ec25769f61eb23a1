// The provider's TLS13-KDF (src/provider/tls13_kdf.cc) against OpenSSL's (the default provider
// in the default library context): random parameters in both modes and every digest path, the
// parameters both refuse, the context calls, and real TLS 1.3 handshakes between a server in our
// library context and a plain client, which agree on keys only if the key schedules agree.

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "accelgate/provider/provider.h"
#include "backend.h"
#include "gtest/gtest.h"
#include "provider_checks.h"

namespace accelgate::provider {
namespace {

using Bytes = std::vector<uint8_t>;

uint32_t random_below(uint32_t n) {
  uint32_t r = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&r), sizeof(r));
  return r % n;
}

Bytes random_bytes(size_t size) {
  Bytes b(size);
  if (size != 0) RAND_bytes(b.data(), static_cast<int>(size));
  return b;
}

// KdfInput is one derivation: the parameters libssl may pass (an absent optional is not passed).
struct KdfInput {
  int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
  std::optional<std::string> digest, properties;
  std::optional<Bytes> key, salt, prefix, label, data;
  size_t out_size = 32;
};

std::string describe(const KdfInput& in) {
  auto size = [](const std::optional<Bytes>& b) {
    return b ? std::to_string(b->size()) : std::string("none");
  };
  return "mode " + std::to_string(in.mode) + " digest " + in.digest.value_or("none") + " key " +
         size(in.key) + " salt " + size(in.salt) + " prefix " + size(in.prefix) + " label " +
         size(in.label) + " data " + size(in.data) + " out " + std::to_string(in.out_size);
}

// derive runs |in| with the TLS13-KDF that |ctx| fetches; nullopt when it fails.
std::optional<Bytes> derive(OSSL_LIB_CTX* ctx, const KdfInput& in) {
  EVP_KDF* kdf = EVP_KDF_fetch(ctx, OSSL_KDF_NAME_TLS1_3_KDF, nullptr);
  EVP_KDF_CTX* kctx = kdf == nullptr ? nullptr : EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (kctx == nullptr) return std::nullopt;
  int mode = in.mode;
  std::vector<OSSL_PARAM> params;
  params.push_back(OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode));
  if (in.digest) {
    params.push_back(OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                                      const_cast<char*>(in.digest->c_str()), 0));
  }
  if (in.properties) {
    params.push_back(OSSL_PARAM_construct_utf8_string(
        OSSL_KDF_PARAM_PROPERTIES, const_cast<char*>(in.properties->c_str()), 0));
  }
  static uint8_t empty = 0;
  auto octets = [&params](const char* name, const std::optional<Bytes>& b) {
    if (!b) return;
    params.push_back(OSSL_PARAM_construct_octet_string(
        name, b->empty() ? &empty : const_cast<uint8_t*>(b->data()), b->size()));
  };
  octets(OSSL_KDF_PARAM_KEY, in.key);
  octets(OSSL_KDF_PARAM_SALT, in.salt);
  octets(OSSL_KDF_PARAM_PREFIX, in.prefix);
  octets(OSSL_KDF_PARAM_LABEL, in.label);
  octets(OSSL_KDF_PARAM_DATA, in.data);
  params.push_back(OSSL_PARAM_construct_end());
  Bytes out(in.out_size);
  int ok = EVP_KDF_derive(kctx, out.data(), out.size(), params.data());
  EVP_KDF_CTX_free(kctx);
  ERR_clear_error();
  if (ok != 1) return std::nullopt;
  return out;
}

size_t digest_size(const std::string& name) {
  EVP_MD* md = EVP_MD_fetch(nullptr, name.c_str(), nullptr);
  int size = md == nullptr ? 0 : EVP_MD_get_size(md);
  EVP_MD_free(md);
  return static_cast<size_t>(size);
}

// random_input makes a derivation with |digest|, mostly as libssl makes them: random keys,
// labels, contexts and output sizes in either mode.
KdfInput random_input(const std::string& digest) {
  KdfInput in;
  in.digest = digest;
  const size_t hash = digest_size(digest);
  if (random_below(2) == 0) {
    in.mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
    in.key = random_bytes(random_below(4) == 0 ? random_below(300) : hash);
    in.prefix = Bytes{'t', 'l', 's', '1', '3', ' '};
    if (random_below(4) == 0) in.prefix = random_bytes(random_below(40));
    in.label = random_bytes(random_below(256 - in.prefix->size()));
    if (random_below(3) != 0) {
      in.data = random_bytes(random_below(4) == 0 ? random_below(256) : hash);
    }
    // Mostly TLS sizes (keys, IVs, secrets); sometimes several blocks of output.
    const size_t kSizes[] = {12, 16, 32, hash};
    in.out_size = random_below(4) == 0 ? 1 + random_below(static_cast<uint32_t>(hash * 5))
                                       : kSizes[random_below(4)];
  } else {
    in.mode = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
    if (random_below(4) != 0) {
      in.key = random_bytes(random_below(4) == 0 ? random_below(600) : 32);
    }
    if (random_below(3) != 0) in.salt = random_bytes(hash);
    in.prefix = Bytes{'t', 'l', 's', '1', '3', ' '};
    in.label = Bytes{'d', 'e', 'r', 'i', 'v', 'e', 'd'};
    if (random_below(4) == 0) in.label = random_bytes(random_below(100));
    in.out_size = hash;
  }
  return in;
}

class Tls13KdfTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ctx_ = OSSL_LIB_CTX_new();
    ASSERT_NE(ctx_, nullptr);
    Status st = load_builtin(ctx_);
    ASSERT_TRUE(st.ok()) << st.error().message;
  }
  static void TearDownTestSuite() {
    unload_builtin(ctx_);
    OSSL_LIB_CTX_free(ctx_);
    ctx_ = nullptr;
  }

  // expect_same derives |in| with ours and with OpenSSL's: both fail, or both give the same bytes.
  static void expect_same(const KdfInput& in) {
    std::optional<Bytes> ours = derive(ctx_, in);
    std::optional<Bytes> plain = derive(nullptr, in);
    ASSERT_EQ(ours.has_value(), plain.has_value()) << describe(in);
    if (ours) {
      ASSERT_EQ(*ours, *plain) << describe(in);
    }
  }

  static OSSL_LIB_CTX* ctx_;
};

OSSL_LIB_CTX* Tls13KdfTest::ctx_ = nullptr;

TEST_F(Tls13KdfTest, OursIsTheOneFetched) {
  // libssl fetches TLS13-KDF in the SSL_CTX's library context with no property query: ours wins
  // there by the context's default properties (?provider=accelgate), as our key managers do.
  EVP_KDF* kdf = EVP_KDF_fetch(ctx_, OSSL_KDF_NAME_TLS1_3_KDF, nullptr);
  ASSERT_NE(kdf, nullptr);
  EXPECT_STREQ(OSSL_PROVIDER_get0_name(EVP_KDF_get0_provider(kdf)), "accelgate");
  EVP_KDF_free(kdf);
  // HKDF itself stays the default provider's.
  kdf = EVP_KDF_fetch(ctx_, OSSL_KDF_NAME_HKDF, nullptr);
  ASSERT_NE(kdf, nullptr);
  EXPECT_STREQ(OSSL_PROVIDER_get0_name(EVP_KDF_get0_provider(kdf)), "default");
  EVP_KDF_free(kdf);
}

TEST_F(Tls13KdfTest, MatchesOpenSslOnRandomInputs) {
  // The SHA-2 names take our path (each spelling OpenSSL knows); SHA-1 and SHA3-256 go to the
  // default provider's implementation through the backend, and only they (the count).
  const std::vector<std::string> kSha2 = {"SHA2-256", "SHA2-384", "SHA256",  "sha384",
                                          "SHA-256",  "SHA2-224", "SHA2-512"};
  const std::vector<std::string> kOthers = {"SHA1", "SHA3-256"};
  for (const auto* names : {&kSha2, &kOthers}) {
    const uint64_t delegated = tls13_kdf_delegations();
    for (int i = 0; i < 1500; ++i) {
      KdfInput in = random_input((*names)[random_below(names->size())]);
      std::optional<Bytes> ours = derive(ctx_, in);
      std::optional<Bytes> plain = derive(nullptr, in);
      ASSERT_TRUE(plain.has_value()) << describe(in);
      ASSERT_TRUE(ours.has_value()) << describe(in);
      ASSERT_EQ(*ours, *plain) << describe(in);
    }
    EXPECT_EQ(tls13_kdf_delegations(), delegated + (names == &kSha2 ? 0 : 1500));
  }
}

TEST_F(Tls13KdfTest, MatchesOpenSslAtTheBoundaries) {
  // Keys around the digest's size and its block size (longer keys are hashed first), outputs
  // around one block and at the 255-block limit, in both modes.
  for (const char* digest : {"SHA2-256", "SHA2-384"}) {
    const size_t hash = digest_size(digest), block = hash == 32 ? 64 : 128;
    for (size_t key : {size_t{0}, size_t{1}, hash - 1, hash, hash + 1, block - 1, block, block + 1,
                       size_t{300}}) {
      for (size_t out : {size_t{1}, hash - 1, hash, hash + 1, 255 * hash}) {
        KdfInput in;
        in.digest = digest;
        in.key = random_bytes(key);
        in.prefix = Bytes{'t', 'l', 's', '1', '3', ' '};
        in.label = Bytes{'k', 'e', 'y'};
        in.data = random_bytes(hash);
        in.out_size = out;
        ASSERT_TRUE(derive(ctx_, in).has_value()) << describe(in);
        expect_same(in);
        if (out == hash) {  // the key as the input secret, with a previous secret
          in.mode = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
          in.salt = random_bytes(hash);
          ASSERT_TRUE(derive(ctx_, in).has_value()) << describe(in);
          expect_same(in);
        }
      }
    }
  }
}

TEST_F(Tls13KdfTest, PropertiesGoWithTheDigest) {
  // A digest asked for with properties is fetched with them, as OpenSSL does: ours passes such a
  // derivation to the default provider rather than ignore them.
  KdfInput in;
  in.digest = "SHA2-256";
  in.key = random_bytes(32);
  in.prefix = Bytes{'t', 'l', 's', '1', '3', ' '};
  in.label = Bytes{'i', 'v'};
  in.out_size = 12;
  in.properties = "provider=default";
  const uint64_t delegated = tls13_kdf_delegations();
  ASSERT_TRUE(derive(ctx_, in).has_value());
  EXPECT_EQ(tls13_kdf_delegations(), delegated + 1);
  expect_same(in);
  in.properties = "provider=nonexistent";
  EXPECT_FALSE(derive(ctx_, in).has_value());
  expect_same(in);
}

TEST_F(Tls13KdfTest, RfcVectorsOfTheKeySchedule) {
  // RFC 8448 §3 (a simple 1-RTT handshake, TLS_AES_128_GCM_SHA256): the early secret (extract
  // of zeros with no previous secret), then the handshake secret from the early secret and the
  // (EC)DHE shared secret.
  auto hex = [](const char* s) {
    Bytes b;
    for (; s[0] != '\0' && s[1] != '\0'; s += 2) {
      b.push_back(static_cast<uint8_t>(std::stoi(std::string(s, 2), nullptr, 16)));
    }
    return b;
  };
  KdfInput early;
  early.mode = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
  early.digest = "SHA2-256";
  early.prefix = Bytes{'t', 'l', 's', '1', '3', ' '};
  early.label = Bytes{'d', 'e', 'r', 'i', 'v', 'e', 'd'};
  std::optional<Bytes> early_secret = derive(ctx_, early);
  ASSERT_TRUE(early_secret.has_value());
  EXPECT_EQ(*early_secret, hex("33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a"));

  KdfInput handshake = early;
  handshake.salt = *early_secret;
  handshake.key = hex("8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d");
  std::optional<Bytes> handshake_secret = derive(ctx_, handshake);
  ASSERT_TRUE(handshake_secret.has_value());
  EXPECT_EQ(*handshake_secret,
            hex("1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac"));

  // Then the server's handshake traffic key and IV from its traffic secret.
  KdfInput key;
  key.digest = "SHA2-256";
  key.key = hex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38");
  key.prefix = Bytes{'t', 'l', 's', '1', '3', ' '};
  key.label = Bytes{'k', 'e', 'y'};
  key.out_size = 16;
  std::optional<Bytes> write_key = derive(ctx_, key);
  ASSERT_TRUE(write_key.has_value());
  EXPECT_EQ(*write_key, hex("3fce516009c21727d0f2e4e86ee403bc"));
  key.label = Bytes{'i', 'v'};
  key.out_size = 12;
  std::optional<Bytes> iv = derive(ctx_, key);
  ASSERT_TRUE(iv.has_value());
  EXPECT_EQ(*iv, hex("5d313eb2671276ee13000b30"));
}

TEST_F(Tls13KdfTest, RefusesWhatOpenSslRefuses) {
  KdfInput base;
  base.digest = "SHA2-384";
  base.key = random_bytes(48);
  base.prefix = Bytes{'t', 'l', 's', '1', '3', ' '};
  base.label = Bytes{'k', 'e', 'y'};
  base.out_size = 32;
  ASSERT_TRUE(derive(ctx_, base).has_value());

  KdfInput in = base;
  in.mode = EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND;  // not a TLS 1.3 step
  EXPECT_FALSE(derive(ctx_, in).has_value());
  expect_same(in);
  in = base;
  in.digest.reset();  // no digest
  EXPECT_FALSE(derive(ctx_, in).has_value());
  expect_same(in);
  in = base;
  in.digest = "NO-SUCH-DIGEST";
  EXPECT_FALSE(derive(ctx_, in).has_value());
  expect_same(in);
  in = base;
  in.key.reset();  // an expansion needs a secret
  EXPECT_FALSE(derive(ctx_, in).has_value());
  expect_same(in);
  in = base;
  in.label = random_bytes(256 - 6 + 1);  // prefix and label over 255 bytes
  EXPECT_FALSE(derive(ctx_, in).has_value());
  expect_same(in);
  in = base;
  in.data = random_bytes(256);  // context over 255 bytes
  EXPECT_FALSE(derive(ctx_, in).has_value());
  expect_same(in);
  in = base;
  in.out_size = 255 * 48 + 1;  // more than 255 blocks
  EXPECT_FALSE(derive(ctx_, in).has_value());
  expect_same(in);
  in = base;
  in.mode = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
  in.out_size = 32;  // an extraction gives exactly HashLen bytes
  EXPECT_FALSE(derive(ctx_, in).has_value());
  expect_same(in);
  // A previous secret of another size than HashLen: OpenSSL reads HashLen bytes of it anyway
  // (past its end when shorter); ours refuses.
  in = base;
  in.mode = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
  in.out_size = 48;
  in.salt = random_bytes(47);
  EXPECT_FALSE(derive(ctx_, in).has_value());
  in.salt = random_bytes(49);  // OpenSSL uses the first 48 bytes of this one
  EXPECT_FALSE(derive(ctx_, in).has_value());
}

TEST_F(Tls13KdfTest, ContextCalls) {
  EVP_KDF* kdf = EVP_KDF_fetch(ctx_, OSSL_KDF_NAME_TLS1_3_KDF, nullptr);
  ASSERT_NE(kdf, nullptr);
  EVP_KDF_CTX* kctx = EVP_KDF_CTX_new(kdf);
  ASSERT_NE(kctx, nullptr);
  // A new context is in EXTRACT_AND_EXPAND mode, which has no fixed size (and no derivation).
  EXPECT_EQ(EVP_KDF_CTX_get_kdf_size(kctx), SIZE_MAX);

  // Parameters set before the derivation (not with it) are kept; mode given as a string.
  Bytes secret = random_bytes(32), context = random_bytes(32);
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, const_cast<char*>("EXPAND_ONLY"), 0),
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, secret.data(), secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PREFIX, const_cast<char*>("tls13 "), 6),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_LABEL, const_cast<char*>("c hs traffic"),
                                        12),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_DATA, context.data(), context.size()),
      OSSL_PARAM_construct_end(),
  };
  ASSERT_EQ(EVP_KDF_CTX_set_params(kctx, params), 1);
  EXPECT_EQ(EVP_KDF_CTX_get_kdf_size(kctx), SIZE_MAX);  // an expansion has no fixed size
  Bytes out(32);
  ASSERT_EQ(EVP_KDF_derive(kctx, out.data(), out.size(), nullptr), 1);
  KdfInput same;
  same.digest = "SHA256";
  same.key = secret;
  same.prefix = Bytes{'t', 'l', 's', '1', '3', ' '};
  same.label = Bytes(params[4].data_size);
  std::memcpy(same.label->data(), params[4].data, params[4].data_size);
  same.data = context;
  std::optional<Bytes> plain = derive(nullptr, same);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(out, *plain);

  // A copy derives the same, and keeps its own key when the original's changes.
  EVP_KDF_CTX* copy = EVP_KDF_CTX_dup(kctx);
  ASSERT_NE(copy, nullptr);
  Bytes other_key = random_bytes(32);
  OSSL_PARAM rekey[] = {
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, other_key.data(), other_key.size()),
      OSSL_PARAM_construct_end()};
  ASSERT_EQ(EVP_KDF_CTX_set_params(kctx, rekey), 1);
  Bytes again(32);
  ASSERT_EQ(EVP_KDF_derive(copy, again.data(), again.size(), nullptr), 1);
  EXPECT_EQ(again, out);
  ASSERT_EQ(EVP_KDF_derive(kctx, again.data(), again.size(), nullptr), 1);
  EXPECT_NE(again, out);
  EVP_KDF_CTX_free(copy);

  int extract = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
  OSSL_PARAM mode[] = {OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &extract),
                       OSSL_PARAM_construct_end()};
  ASSERT_EQ(EVP_KDF_CTX_set_params(kctx, mode), 1);
  EXPECT_EQ(EVP_KDF_CTX_get_kdf_size(kctx), 32u);  // SHA-256's size in EXTRACT_ONLY mode

  // A reset context has no key: with the mode, digest and label given again, an expansion fails.
  EVP_KDF_CTX_reset(kctx);
  OSSL_PARAM no_key[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_MODE, const_cast<char*>("EXPAND_ONLY"), 0),
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_LABEL, const_cast<char*>("key"), 3),
      OSSL_PARAM_construct_end()};
  EXPECT_EQ(EVP_KDF_derive(kctx, out.data(), out.size(), no_key), 0);
  ERR_clear_error();
  EVP_KDF_CTX_free(kctx);
  EVP_KDF_free(kdf);
}

// TlsPeer is one end of an in-memory TLS connection.
struct TlsPeer {
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  ~TlsPeer() {
    SSL_free(ssl);
    SSL_CTX_free(ctx);
  }
};

// self_signed makes an ECDSA P-256 key and a certificate for it (plain OpenSSL).
std::pair<EVP_PKEY*, X509*> self_signed() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  return {key, test_support::self_signed_certificate(key)};
}

// server_context makes a TLS 1.3 server's SSL_CTX in |libctx| with |suite| and |groups|.
SSL_CTX* server_context(OSSL_LIB_CTX* libctx, const char* suite, const char* groups) {
  static const std::pair<EVP_PKEY*, X509*> kCert = self_signed();
  SSL_CTX* ctx = SSL_CTX_new_ex(libctx, nullptr, TLS_server_method());
  if (ctx == nullptr || SSL_CTX_use_certificate(ctx, kCert.second) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, kCert.first) != 1 ||
      SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_ciphersuites(ctx, suite) != 1 || SSL_CTX_set1_groups_list(ctx, groups) != 1) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  return ctx;
}

// connect runs a TLS 1.3 handshake between a server of |server_ctx| and a plain client over a
// BIO pair (resuming |*session| if set, else storing the new one there), then application data
// both ways, with key updates when |key_update| is set; "" when everything arrived intact and
// the group was |expected_group| (P-256 means a HelloRetryRequest: the client's first share is
// X25519).
std::string connect(SSL_CTX* server_ctx, const char* suite, SSL_SESSION** session, bool key_update,
                    int expected_group) {
  TlsPeer server, client;
  client.ctx = SSL_CTX_new(TLS_client_method());
  if (client.ctx == nullptr) return "SSL_CTX_new failed";
  SSL_CTX_set_min_proto_version(client.ctx, TLS1_3_VERSION);
  if (SSL_CTX_set_ciphersuites(client.ctx, suite) != 1) {
    return std::string("unknown suite ") + suite;
  }
  // The client sends a key share for its first group only; a server without that group asks
  // for another one (HelloRetryRequest).
  if (SSL_CTX_set1_groups_list(client.ctx, "X25519:P-256") != 1) return "cannot set the groups";
  SSL_CTX_up_ref(server_ctx);
  server.ctx = server_ctx;
  server.ssl = SSL_new(server.ctx);
  client.ssl = SSL_new(client.ctx);
  BIO* server_bio = nullptr;
  BIO* client_bio = nullptr;
  BIO_new_bio_pair(&server_bio, 0, &client_bio, 0);
  SSL_set_bio(server.ssl, server_bio, server_bio);
  SSL_set_bio(client.ssl, client_bio, client_bio);
  SSL_set_accept_state(server.ssl);
  SSL_set_connect_state(client.ssl);
  if (*session != nullptr) SSL_set_session(client.ssl, *session);

  bool server_done = false, client_done = false;
  for (int round = 0; round < 20 && !(server_done && client_done); ++round) {
    if (!client_done) {
      int r = SSL_do_handshake(client.ssl);
      client_done = r == 1;
      if (r != 1 && SSL_get_error(client.ssl, r) != SSL_ERROR_WANT_READ) return "client failed";
    }
    if (!server_done) {
      int r = SSL_do_handshake(server.ssl);
      server_done = r == 1;
      if (r != 1 && SSL_get_error(server.ssl, r) != SSL_ERROR_WANT_READ) return "server failed";
    }
  }
  if (!(server_done && client_done)) return "the handshake did not finish";
  if (SSL_version(server.ssl) != TLS1_3_VERSION) return "not TLS 1.3";
  if (SSL_get_negotiated_group(server.ssl) != expected_group) return "another group";
  // The exporter secret (RFC 8446 §7.5) agrees on both ends.
  unsigned char exported[2][32];
  for (int i = 0; i < 2; ++i) {
    if (SSL_export_keying_material(i == 0 ? server.ssl : client.ssl, exported[i], 32, "test", 4,
                                   reinterpret_cast<const unsigned char*>("ctx"), 3, 1) != 1) {
      return "no exported keying material";
    }
  }
  if (std::memcmp(exported[0], exported[1], 32) != 0) return "the exporters differ";

  // Application data both ways (the client reads the server's tickets first), then again after
  // a key update that the server requests.
  auto exchange = [&](const char* what) -> std::string {
    const char kPing[] = "ping", kPong[] = "pong";
    char buf[16] = {};
    if (SSL_write(client.ssl, kPing, 4) != 4) return std::string(what) + ": client write failed";
    if (SSL_read(server.ssl, buf, sizeof(buf)) != 4 || std::memcmp(buf, kPing, 4) != 0) {
      return std::string(what) + ": the server read no ping";
    }
    if (SSL_write(server.ssl, kPong, 4) != 4) return std::string(what) + ": server write failed";
    if (SSL_read(client.ssl, buf, sizeof(buf)) != 4 || std::memcmp(buf, kPong, 4) != 0) {
      return std::string(what) + ": the client read no pong";
    }
    return "";
  };
  if (std::string e = exchange("after the handshake"); !e.empty()) return e;
  if (key_update) {
    if (SSL_key_update(server.ssl, SSL_KEY_UPDATE_REQUESTED) != 1) return "no key update";
    if (std::string e = exchange("after the key update"); !e.empty()) return e;
    if (std::string e = exchange("after the client's update"); !e.empty()) return e;
  }
  // A connection freed without close_notify makes its session not resumable.
  SSL_shutdown(client.ssl);
  SSL_shutdown(server.ssl);
  if (*session == nullptr) {
    *session = SSL_get1_session(client.ssl);
  } else if (SSL_session_reused(server.ssl) != 1) {
    return "the session was not resumed";
  }
  return "";
}

TEST_F(Tls13KdfTest, HandshakesWithEverySuite) {
  for (const char* suite :
       {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}) {
    SSL_CTX* server = server_context(ctx_, suite, "X25519:P-256");
    SSL_CTX* server_p256 = server_context(ctx_, suite, "P-256");
    ASSERT_TRUE(server != nullptr && server_p256 != nullptr) << suite;
    SSL_SESSION* session = nullptr;
    EXPECT_EQ(connect(server, suite, &session, true, NID_X25519), "") << suite;
    ASSERT_NE(session, nullptr) << suite;
    EXPECT_EQ(connect(server, suite, &session, false, NID_X25519), "") << suite << " resumed";
    SSL_SESSION_free(session);
    session = nullptr;
    EXPECT_EQ(connect(server_p256, suite, &session, false, NID_X9_62_prime256v1), "")
        << suite << " after HRR";
    SSL_SESSION_free(session);
    SSL_CTX_free(server);
    SSL_CTX_free(server_p256);
    ERR_clear_error();
  }
}

}  // namespace
}  // namespace accelgate::provider
