#pragma once

// Shared by the provider's tests: random test keys as plain OpenSSL and our library context hold
// them, the checks (each one of our private operations compared with plain OpenSSL), the
// fixture that makes the keys once per test binary, the op counters, and running a check inside
// an async job on a thread with an EventLoop and a current Dispatcher.

#include <openssl/async.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accelgate/event/event_loop.h"
#include "accelgate/provider/provider.h"
#include "gtest/gtest.h"
#include "stats.h"

namespace accelgate::provider::test_support {

using Bytes = std::vector<uint8_t>;

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct CtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, CtxFree>;

// self_signed_certificate makes a certificate for |key| (CN=localhost, valid for an hour),
// signed by it; the caller frees it.
inline X509* self_signed_certificate(EVP_PKEY* key) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  X509_set_pubkey(cert, key);
  X509_sign(cert, key, EVP_sha256());
  return cert;
}

inline Bytes random_bytes(size_t min, size_t max) {
  uint32_t r = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&r), sizeof(r));
  Bytes b(min + r % (max - min + 1));
  if (!b.empty()) RAND_bytes(b.data(), static_cast<int>(b.size()));
  return b;
}

// TestKey is one key as plain OpenSSL holds it and as our library context holds it (decoded
// from PEM there, as the server loads its keys), with a peer of the same type for derivation.
struct TestKey {
  std::string name;
  std::string type;  // "RSA", "EC", "X25519"
  Pkey plain;
  Pkey ours;
  Pkey peer;  // plain; for EC and X25519
};

inline Pkey generate_plain(const std::string& type, int rsa_bits, const char* curve) {
  if (type == "RSA") return Pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t(rsa_bits)));
  if (type == "EC") return Pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve));
  return Pkey(EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
}

inline Pkey reload_in(OSSL_LIB_CTX* ctx, EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  Pkey out(PEM_read_bio_PrivateKey_ex(bio, nullptr, nullptr, nullptr, ctx, nullptr));
  BIO_free(bio);
  return out;
}

inline const char* provider_of(const EVP_PKEY* key) {
  const OSSL_PROVIDER* p = EVP_PKEY_get0_provider(key);
  return p == nullptr ? "(legacy)" : OSSL_PROVIDER_get0_name(p);
}

// ---- The checks, each one an operation of ours compared with plain OpenSSL. They return ""
// when right, else what went wrong; they may run inside an async job.

inline std::string verify_plain(EVP_PKEY* key, const char* md, int padding, const Bytes& msg,
                                const Bytes& sig) {
  EVP_MD_CTX* mctx = EVP_MD_CTX_new();
  EVP_PKEY_CTX* pctx = nullptr;
  int ok = EVP_DigestVerifyInit_ex(mctx, &pctx, md, nullptr, nullptr, key, nullptr);
  if (ok == 1 && padding != 0) ok = EVP_PKEY_CTX_set_rsa_padding(pctx, padding);
  if (ok == 1) ok = EVP_DigestVerify(mctx, sig.data(), sig.size(), msg.data(), msg.size());
  EVP_MD_CTX_free(mctx);
  return ok == 1 ? "" : "plain OpenSSL rejects our signature";
}

inline std::string check_digest_sign(OSSL_LIB_CTX* ctx, TestKey& k, const char* md, int padding,
                                     int saltlen = RSA_PSS_SALTLEN_DIGEST) {
  Bytes msg = random_bytes(0, 4096);
  EVP_MD_CTX* mctx = EVP_MD_CTX_new();
  EVP_PKEY_CTX* pctx = nullptr;
  int ok = EVP_DigestSignInit_ex(mctx, &pctx, md, ctx, nullptr, k.ours.get(), nullptr);
  if (ok == 1 && padding != 0) ok = EVP_PKEY_CTX_set_rsa_padding(pctx, padding);
  if (ok == 1 && padding == RSA_PKCS1_PSS_PADDING) {
    ok = EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, saltlen);
  }
  // In two parts, as TLS does not but other callers do.
  size_t half = msg.size() / 2;
  if (ok == 1) ok = EVP_DigestSignUpdate(mctx, msg.data(), half);
  if (ok == 1) ok = EVP_DigestSignUpdate(mctx, msg.data() + half, msg.size() - half);
  size_t len = 0;
  if (ok == 1) ok = EVP_DigestSignFinal(mctx, nullptr, &len);
  Bytes sig(len);
  if (ok == 1) ok = EVP_DigestSignFinal(mctx, sig.data(), &len);
  EVP_MD_CTX_free(mctx);
  if (ok != 1) return std::string("EVP_DigestSign with ") + md + " failed";
  sig.resize(len);
  return verify_plain(k.plain.get(), md, padding, msg, sig);
}

inline std::string check_oneshot_sign(OSSL_LIB_CTX* ctx, TestKey& k) {
  // EVP_DigestSign in one call, as libssl signs a handshake.
  Bytes msg = random_bytes(1, 300);
  EVP_MD_CTX* mctx = EVP_MD_CTX_new();
  int ok = EVP_DigestSignInit_ex(mctx, nullptr, "SHA2-384", ctx, nullptr, k.ours.get(), nullptr);
  size_t len = 0;
  if (ok == 1) ok = EVP_DigestSign(mctx, nullptr, &len, msg.data(), msg.size());
  Bytes sig(len);
  if (ok == 1) ok = EVP_DigestSign(mctx, sig.data(), &len, msg.data(), msg.size());
  EVP_MD_CTX_free(mctx);
  if (ok != 1) return "one-shot EVP_DigestSign failed";
  sig.resize(len);
  return verify_plain(k.plain.get(), "SHA2-384", 0, msg, sig);
}

inline std::string check_pkey_sign(OSSL_LIB_CTX* ctx, TestKey& k) {
  // EVP_PKEY_sign over a digest (openssl speed's way).
  Bytes msg = random_bytes(1, 100);
  unsigned char digest[32];
  unsigned int dlen = 0;
  EVP_Digest(msg.data(), msg.size(), digest, &dlen, EVP_sha256(), nullptr);
  PkeyCtx c(EVP_PKEY_CTX_new_from_pkey(ctx, k.ours.get(), nullptr));
  int ok = EVP_PKEY_sign_init(c.get());
  if (ok == 1) ok = EVP_PKEY_CTX_set_signature_md(c.get(), EVP_sha256());
  size_t len = 0;
  if (ok == 1) ok = EVP_PKEY_sign(c.get(), nullptr, &len, digest, dlen);
  Bytes sig(len);
  if (ok == 1) ok = EVP_PKEY_sign(c.get(), sig.data(), &len, digest, dlen);
  if (ok != 1) return "EVP_PKEY_sign failed";
  sig.resize(len);
  PkeyCtx v(EVP_PKEY_CTX_new(k.plain.get(), nullptr));
  ok = EVP_PKEY_verify_init(v.get());
  if (ok == 1) ok = EVP_PKEY_CTX_set_signature_md(v.get(), EVP_sha256());
  if (ok == 1) ok = EVP_PKEY_verify(v.get(), sig.data(), sig.size(), digest, dlen);
  return ok == 1 ? "" : "plain OpenSSL rejects our EVP_PKEY_sign signature";
}

inline std::string check_decrypt(OSSL_LIB_CTX* ctx, TestKey& k, int padding) {
  Bytes plain = random_bytes(1, 48);
  PkeyCtx e(EVP_PKEY_CTX_new(k.plain.get(), nullptr));
  int ok = EVP_PKEY_encrypt_init(e.get());
  if (ok == 1) ok = EVP_PKEY_CTX_set_rsa_padding(e.get(), padding);
  size_t clen = 0;
  if (ok == 1) ok = EVP_PKEY_encrypt(e.get(), nullptr, &clen, plain.data(), plain.size());
  Bytes cipher(clen);
  if (ok == 1) ok = EVP_PKEY_encrypt(e.get(), cipher.data(), &clen, plain.data(), plain.size());
  if (ok != 1) return "plain encryption failed";
  cipher.resize(clen);
  PkeyCtx d(EVP_PKEY_CTX_new_from_pkey(ctx, k.ours.get(), nullptr));
  ok = EVP_PKEY_decrypt_init(d.get());
  if (ok == 1) ok = EVP_PKEY_CTX_set_rsa_padding(d.get(), padding);
  size_t len = 0;
  if (ok == 1) ok = EVP_PKEY_decrypt(d.get(), nullptr, &len, cipher.data(), cipher.size());
  Bytes out(len);
  if (ok == 1) ok = EVP_PKEY_decrypt(d.get(), out.data(), &len, cipher.data(), cipher.size());
  if (ok != 1) return "our decryption failed";
  out.resize(len);
  return out == plain ? "" : "our decryption differs from the plaintext";
}

// check_tls_decrypt decrypts TLS 1.2 RSA key exchanges as libssl does (RSA_PKCS1_WITH_TLS_PADDING
// with the versions as parameters, a 48-byte output): the premaster secret when its version is
// the client's (or the negotiated one, when given), else 48 random bytes and no error (RFC 5246
// §7.4.7.1), also for a plaintext of the wrong length.
inline std::string check_tls_decrypt(OSSL_LIB_CTX* ctx, TestKey& k) {
  auto encrypt = [&](const Bytes& plain) {
    PkeyCtx e(EVP_PKEY_CTX_new(k.plain.get(), nullptr));
    size_t len = 0;
    Bytes cipher;
    if (EVP_PKEY_encrypt_init(e.get()) == 1 &&
        EVP_PKEY_CTX_set_rsa_padding(e.get(), RSA_PKCS1_PADDING) == 1 &&
        EVP_PKEY_encrypt(e.get(), nullptr, &len, plain.data(), plain.size()) == 1) {
      cipher.resize(len);
      if (EVP_PKEY_encrypt(e.get(), cipher.data(), &len, plain.data(), plain.size()) != 1) len = 0;
      cipher.resize(len);
    }
    return cipher;
  };
  auto decrypt = [&](const Bytes& cipher, unsigned int client, unsigned int negotiated) {
    PkeyCtx d(EVP_PKEY_CTX_new_from_pkey(ctx, k.ours.get(), nullptr));
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_uint(OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION, &client),
        OSSL_PARAM_construct_uint(OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION, &negotiated),
        OSSL_PARAM_construct_end()};
    Bytes out(48);
    size_t len = out.size();
    if (EVP_PKEY_decrypt_init(d.get()) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(d.get(), RSA_PKCS1_WITH_TLS_PADDING) != 1 ||
        EVP_PKEY_CTX_set_params(d.get(), params) != 1 ||
        EVP_PKEY_decrypt(d.get(), out.data(), &len, cipher.data(), cipher.size()) != 1) {
      return Bytes();
    }
    out.resize(len);
    return out;
  };
  Bytes premaster = random_bytes(48, 48);
  premaster[0] = 0x03;
  premaster[1] = 0x03;
  Bytes cipher = encrypt(premaster);
  if (cipher.empty()) return "plain encryption failed";
  if (decrypt(cipher, 0x0303, 0) != premaster) return "the TLS 1.2 premaster secret differs";
  premaster[1] = 0x02;  // a client that put another version in (a rollback, or a buggy one)
  cipher = encrypt(premaster);
  Bytes got = decrypt(cipher, 0x0303, 0);
  if (got.size() != 48 || got == premaster) return "a wrong version gave no random secret";
  if (decrypt(cipher, 0x0303, 0x0302) != premaster) return "the negotiated version is refused";
  Bytes short_one(premaster.begin(), premaster.end() - 1);
  got = decrypt(encrypt(short_one), 0x0303, 0);
  if (got.size() != 48 || std::equal(short_one.begin(), short_one.end(), got.begin())) {
    return "a 47-byte premaster secret gave no random secret";
  }
  return "";
}

inline Bytes derive(OSSL_LIB_CTX* ctx, EVP_PKEY* key, EVP_PKEY* peer) {
  PkeyCtx c(EVP_PKEY_CTX_new_from_pkey(ctx, key, nullptr));
  size_t len = 0;
  if (EVP_PKEY_derive_init(c.get()) != 1 || EVP_PKEY_derive_set_peer(c.get(), peer) != 1 ||
      EVP_PKEY_derive(c.get(), nullptr, &len) != 1) {
    return {};
  }
  Bytes out(len);
  if (EVP_PKEY_derive(c.get(), out.data(), &len) != 1) return {};
  out.resize(len);
  return out;
}

// public_only returns a plain copy of |key|'s public half.
inline Pkey public_only(EVP_PKEY* key) {
  unsigned char* der = nullptr;
  int n = i2d_PUBKEY(key, &der);
  const unsigned char* p = der;
  Pkey pub(d2i_PUBKEY(nullptr, &p, n));
  OPENSSL_free(der);
  return pub;
}

inline std::string check_derive(OSSL_LIB_CTX* ctx, TestKey& k) {
  Pkey peer_pub = public_only(k.peer.get());
  Pkey our_pub = public_only(k.plain.get());
  Bytes ours = derive(ctx, k.ours.get(), peer_pub.get());
  Bytes expected = derive(nullptr, k.peer.get(), our_pub.get());
  if (ours.empty() || expected.empty()) return "derive failed";
  return ours == expected ? "" : "our shared secret differs from OpenSSL's";
}

// encoded_point returns |key|'s public point as OpenSSL encodes it (uncompressed).
inline Bytes encoded_point(EVP_PKEY* key) {
  unsigned char* p = nullptr;
  const size_t n = EVP_PKEY_get1_encoded_public_key(key, &p);
  Bytes out(p, p + n);
  OPENSSL_free(p);
  return out;
}

// check_derive_key_share: the peer a key of ours made from an encoded point, as libssl makes a
// key share's (an import), derived with; then given another point (set_params, as
// EVP_PKEY_set1_encoded_public_key does) and derived with again: each secret must be its
// point's, whatever the provider remembers of the first.
inline std::string check_derive_key_share(OSSL_LIB_CTX* ctx, TestKey& k) {
  char group[64] = "";
  if (EVP_PKEY_get_utf8_string_param(k.peer.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                     nullptr) != 1) {
    return "the peer has no group";
  }
  Pkey other = generate_plain("EC", 0, group);
  Pkey our_pub = public_only(k.plain.get());
  Bytes point = encoded_point(k.peer.get());
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
      OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()),
      OSSL_PARAM_construct_end()};
  PkeyCtx from(EVP_PKEY_CTX_new_from_name(ctx, "EC", nullptr));
  EVP_PKEY* made = nullptr;
  if (EVP_PKEY_fromdata_init(from.get()) != 1 ||
      EVP_PKEY_fromdata(from.get(), &made, EVP_PKEY_PUBLIC_KEY, params) != 1) {
    return "the key share did not import";
  }
  Pkey share(made);
  if (std::strcmp(provider_of(share.get()), "accelgate") != 0) return "the key share is not ours";
  for (EVP_PKEY* plain_peer : {k.peer.get(), other.get()}) {
    if (plain_peer == other.get()) {
      Bytes next = encoded_point(other.get());
      if (EVP_PKEY_set1_encoded_public_key(share.get(), next.data(), next.size()) != 1) {
        return "set1_encoded_public_key failed";
      }
    }
    Bytes ours = derive(ctx, k.ours.get(), share.get());
    Bytes expected = derive(nullptr, plain_peer, our_pub.get());
    if (ours.empty() || expected.empty()) return "derive with the key share failed";
    if (ours != expected) {
      return plain_peer == other.get() ? "after set1_encoded_public_key the old point was used"
                                       : "our shared secret with the key share differs";
    }
  }
  return "";
}

inline std::string check_x25519_keygen(OSSL_LIB_CTX* ctx, TestKey& k) {
  Pkey generated(EVP_PKEY_Q_keygen(ctx, nullptr, "X25519"));
  if (generated == nullptr) return "X25519 keygen failed";
  if (std::strcmp(provider_of(generated.get()), "accelgate") != 0) return "keygen is not ours";
  Pkey peer_pub = public_only(k.peer.get());
  Pkey gen_pub = public_only(generated.get());
  Bytes ours = derive(ctx, generated.get(), peer_pub.get());
  Bytes expected = derive(nullptr, k.peer.get(), gen_pub.get());
  if (ours.empty() || expected.empty()) return "derive with the generated key failed";
  return ours == expected ? "" : "the generated key derives another secret";
}

// Check is one named check on one key; kinds lists the op kinds it makes.
struct Check {
  std::string name;
  std::function<std::string(OSSL_LIB_CTX*)> run;
  std::vector<std::string> kinds;
};

class ProviderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ctx_ = OSSL_LIB_CTX_new();
    ASSERT_NE(ctx_, nullptr);
    Status st = load_builtin(ctx_);
    ASSERT_TRUE(st.ok()) << st.error().message;
    keys_ = new std::vector<TestKey>();
    struct Spec {
      const char* name;
      const char* type;
      int bits;
      const char* curve;
    };
    for (Spec s : {Spec{"rsa2048", "RSA", 2048, nullptr}, Spec{"rsa3072", "RSA", 3072, nullptr},
                   Spec{"rsa4096", "RSA", 4096, nullptr}, Spec{"p256", "EC", 0, "P-256"},
                   Spec{"p384", "EC", 0, "P-384"}, Spec{"x25519", "X25519", 0, nullptr}}) {
      TestKey k;
      k.name = s.name;
      k.type = s.type;
      k.plain = generate_plain(s.type, s.bits, s.curve);
      ASSERT_NE(k.plain, nullptr) << s.name;
      k.ours = reload_in(ctx_, k.plain.get());
      ASSERT_NE(k.ours, nullptr) << s.name;
      if (k.type != "RSA") k.peer = generate_plain(s.type, s.bits, s.curve);
      keys_->push_back(std::move(k));
    }
  }

  static void TearDownTestSuite() {
    delete keys_;
    keys_ = nullptr;
    unload_builtin(ctx_);
    OSSL_LIB_CTX_free(ctx_);
    ctx_ = nullptr;
  }

  // checks lists every check on every key.
  static std::vector<Check> checks() {
    std::vector<Check> all;
    for (TestKey& k : *keys_) {
      TestKey* key = &k;
      if (k.type == "RSA") {
        all.push_back({k.name + " PKCS#1 v1.5 SHA-256",
                       [key](OSSL_LIB_CTX* c) {
                         return check_digest_sign(c, *key, "SHA2-256", RSA_PKCS1_PADDING);
                       },
                       {"rsa_sign"}});
        all.push_back({k.name + " PSS SHA-384",
                       [key](OSSL_LIB_CTX* c) {
                         return check_digest_sign(c, *key, "SHA2-384", RSA_PKCS1_PSS_PADDING);
                       },
                       {"rsa_sign"}});
        all.push_back({k.name + " PSS SHA-256 maximal salt",
                       [key](OSSL_LIB_CTX* c) {
                         return check_digest_sign(c, *key, "SHA2-256", RSA_PKCS1_PSS_PADDING,
                                                  RSA_PSS_SALTLEN_MAX);
                       },
                       {"rsa_sign"}});
        all.push_back({k.name + " one-shot",
                       [key](OSSL_LIB_CTX* c) { return check_oneshot_sign(c, *key); },
                       {"rsa_sign"}});
        all.push_back({k.name + " EVP_PKEY_sign",
                       [key](OSSL_LIB_CTX* c) { return check_pkey_sign(c, *key); },
                       {"rsa_sign"}});
        all.push_back({k.name + " decrypt PKCS#1 v1.5",
                       [key](OSSL_LIB_CTX* c) { return check_decrypt(c, *key, RSA_PKCS1_PADDING); },
                       {"rsa_decrypt"}});
        all.push_back(
            {k.name + " decrypt OAEP",
             [key](OSSL_LIB_CTX* c) { return check_decrypt(c, *key, RSA_PKCS1_OAEP_PADDING); },
             {"rsa_decrypt"}});
        all.push_back({k.name + " decrypt TLS 1.2 premaster",
                       [key](OSSL_LIB_CTX* c) { return check_tls_decrypt(c, *key); },
                       {"rsa_decrypt"}});
      } else if (k.type == "EC") {
        all.push_back({k.name + " ECDSA SHA-256",
                       [key](OSSL_LIB_CTX* c) { return check_digest_sign(c, *key, "SHA2-256", 0); },
                       {"ecdsa_sign"}});
        all.push_back({k.name + " one-shot",
                       [key](OSSL_LIB_CTX* c) { return check_oneshot_sign(c, *key); },
                       {"ecdsa_sign"}});
        all.push_back({k.name + " ECDH",
                       [key](OSSL_LIB_CTX* c) { return check_derive(c, *key); },
                       {"ecdh_derive"}});
        all.push_back({k.name + " ECDH with a key share",
                       [key](OSSL_LIB_CTX* c) { return check_derive_key_share(c, *key); },
                       {"ecdh_derive"}});
      } else {
        all.push_back({k.name + " derive",
                       [key](OSSL_LIB_CTX* c) { return check_derive(c, *key); },
                       {"x25519_derive"}});
        all.push_back({k.name + " keygen",
                       [key](OSSL_LIB_CTX* c) { return check_x25519_keygen(c, *key); },
                       {"x25519_keygen", "x25519_derive"}});
      }
    }
    return all;
  }

  inline static OSSL_LIB_CTX* ctx_ = nullptr;
  inline static std::vector<TestKey>* keys_ = nullptr;
};

// count_of reads one "op engine" counter.
inline uint64_t count_of(const std::string& kind, const std::string& engine) {
  auto counts = op_counts();
  auto it = counts.find(kind + " " + engine);
  return it == counts.end() ? 0 : it->second;
}

// expect_counted checks that every kind of |checks| was counted on |engine| since |before|.
inline void expect_counted(const std::vector<Check>& checks,
                           const std::map<std::string, uint64_t>& before,
                           const std::string& engine) {
  for (const Check& c : checks) {
    for (const std::string& kind : c.kinds) {
      auto it = before.find(kind + " " + engine);
      uint64_t was = it == before.end() ? 0 : it->second;
      EXPECT_GT(count_of(kind, engine), was) << kind << " never ran on " << engine;
    }
  }
}

// ---- Inside async jobs.

inline int job_main(void* arg) {
  auto* fn = *static_cast<std::function<bool()>**>(arg);
  return (*fn)() ? 1 : 0;
}

// StopLoop stops a loop when a wait fd becomes readable.
class StopLoop final : public event::IoHandler {
 public:
  explicit StopLoop(event::EventLoop* loop) : loop_(loop) {}
  void on_io(uint32_t) override { loop_->stop(); }

 private:
  event::EventLoop* loop_;
};

// run_job_on_loop runs |fn| in an async job on this thread, which has |loop| and a current
// dispatcher; while the job waits it runs the loop until the completion wakes the job, through
// the wait ctx's callback (|callback|) or its wait fd. Returns |fn|'s answer; *paused says
// whether the job paused at least once.
inline bool run_job_on_loop(event::EventLoop* loop, bool callback, std::function<bool()> fn,
                            int* pauses) {
  ASYNC_WAIT_CTX* wait_ctx = ASYNC_WAIT_CTX_new();
  if (callback) {
    ASYNC_WAIT_CTX_set_callback(
        wait_ctx,
        [](void* arg) {
          static_cast<event::EventLoop*>(arg)->stop();
          return 1;
        },
        loop);
  }
  StopLoop stopper(loop);
  int watched_fd = -1;
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
    ++*pauses;
    if (!callback && watched_fd < 0) {
      size_t n = 0;
      ASYNC_WAIT_CTX_get_all_fds(wait_ctx, nullptr, &n);
      if (n != 1) break;
      OSSL_ASYNC_FD fd = -1;
      ASYNC_WAIT_CTX_get_all_fds(wait_ctx, &fd, &n);
      if (!loop->add_readable(fd, &stopper).ok()) break;
      watched_fd = fd;
    }
    loop->run();
  }
  if (watched_fd >= 0) loop->remove(watched_fd);
  ASYNC_WAIT_CTX_free(wait_ctx);
  return ok;
}

}  // namespace accelgate::provider::test_support
