// RSA signature encodings made for the mb engine (rsa_encoding.h): each encoded message, raised
// to d with OpenSSL's raw private operation, must verify with OpenSSL's own PKCS#1 v1.5 or PSS
// verification under the same parameters, on keys whose modulus is a whole number of bytes and
// on one that is not (1537 bits: the PSS message is a byte shorter than the modulus; OpenSSL
// makes no 2049-bit keys, it rounds them to 2048).

#include "rsa_encoding.h"

#include <gtest/gtest.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <memory>
#include <string>
#include <vector>

namespace accelgate::provider {
namespace {

using Bytes = std::vector<uint8_t>;

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct CtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, CtxFree>;

Bytes digest_of(const char* md, const Bytes& msg) {
  Bytes out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  EVP_MD* m = EVP_MD_fetch(nullptr, md, nullptr);
  EXPECT_NE(m, nullptr) << md;
  EXPECT_EQ(EVP_Digest(msg.data(), msg.size(), out.data(), &len, m, nullptr), 1);
  EVP_MD_free(m);
  out.resize(len);
  return out;
}

// sign_raw is em^d mod n with OpenSSL (no padding).
Bytes sign_raw(EVP_PKEY* key, const Bytes& em) {
  PkeyCtx ctx(EVP_PKEY_CTX_new(key, nullptr));
  Bytes sig(static_cast<size_t>(EVP_PKEY_get_size(key)));
  size_t len = sig.size();
  if (EVP_PKEY_sign_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_NO_PADDING) != 1 ||
      EVP_PKEY_sign(ctx.get(), sig.data(), &len, em.data(), em.size()) != 1) {
    return {};
  }
  sig.resize(len);
  return sig;
}

// verify checks |sig| over |tbs| with OpenSSL's verification of |e| (PSS: any salt length).
bool verify(EVP_PKEY* key, const RsaSignEncoding& e, const Bytes& tbs, const Bytes& sig) {
  PkeyCtx ctx(EVP_PKEY_CTX_new(key, nullptr));
  if (EVP_PKEY_verify_init(ctx.get()) != 1) return false;
  bool pss = e.scheme == RsaSignEncoding::Scheme::kPss;
  if (EVP_PKEY_CTX_set_rsa_padding(ctx.get(), pss ? RSA_PKCS1_PSS_PADDING : RSA_PKCS1_PADDING) !=
      1) {
    return false;
  }
  if (!e.digest.empty() &&
      EVP_PKEY_CTX_set_signature_md(ctx.get(), EVP_get_digestbyname(e.digest.c_str())) != 1) {
    return false;
  }
  if (pss) {
    if (EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx.get(), RSA_PSS_SALTLEN_AUTO) != 1) return false;
    if (!e.mgf1.empty() &&
        EVP_PKEY_CTX_set_rsa_mgf1_md(ctx.get(), EVP_get_digestbyname(e.mgf1.c_str())) != 1) {
      return false;
    }
  }
  return EVP_PKEY_verify(ctx.get(), sig.data(), sig.size(), tbs.data(), tbs.size()) == 1;
}

class RsaEncodingTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    key_.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(GetParam())));
    ASSERT_NE(key_, nullptr);
    ASSERT_EQ(EVP_PKEY_get_bits(key_.get()), GetParam());
  }

  // check encodes, signs raw and verifies with OpenSSL; returns the encoded message.
  Bytes check(const RsaSignEncoding& e, const Bytes& tbs) {
    auto em = encode_rsa_signature(nullptr, e, tbs.data(), tbs.size(), GetParam());
    EXPECT_TRUE(em.has_value()) << e.digest << " " << e.saltlen;
    if (!em) return {};
    EXPECT_EQ(em->size(), static_cast<size_t>(EVP_PKEY_get_size(key_.get())));
    Bytes sig = sign_raw(key_.get(), *em);
    EXPECT_FALSE(sig.empty());
    EXPECT_TRUE(verify(key_.get(), e, tbs, sig))
        << (e.scheme == RsaSignEncoding::Scheme::kPss ? "PSS " : "PKCS#1 ") << e.digest
        << " mgf1=" << e.mgf1 << " saltlen=" << e.saltlen << " bits=" << GetParam();
    return *em;
  }

  Pkey key_;
};

TEST_P(RsaEncodingTest, Pkcs1v15VerifiesWithEveryDigest) {
  Bytes msg(100);
  RAND_bytes(msg.data(), static_cast<int>(msg.size()));
  for (const char* md : {"SHA1", "SHA2-224", "SHA2-256", "SHA2-384", "SHA2-512", "SHA3-256"}) {
    RsaSignEncoding e;
    e.digest = md;
    Bytes em = check(e, digest_of(md, msg));
    // The same digest always encodes the same way (no randomness in v1.5).
    auto again = encode_rsa_signature(nullptr, e, digest_of(md, msg).data(),
                                      digest_of(md, msg).size(), GetParam());
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, em);
  }
  // Without a digest the input is signed as it is (TLS 1.1's MD5+SHA1 concatenation shape).
  RsaSignEncoding raw;
  Bytes input(36, 0x5a);
  check(raw, input);
}

TEST_P(RsaEncodingTest, PssVerifiesWithEverySaltLengthAndMgf1) {
  Bytes msg(64);
  RAND_bytes(msg.data(), static_cast<int>(msg.size()));
  for (const char* md : {"SHA2-256", "SHA2-384", "SHA2-512"}) {
    for (const char* salt : {"digest", "max", "auto", "", "0", "20", "-1", "-2", "-3"}) {
      for (const char* mgf1 : {"", "SHA1"}) {
        RsaSignEncoding e;
        e.scheme = RsaSignEncoding::Scheme::kPss;
        e.digest = md;
        e.mgf1 = mgf1;
        e.saltlen = salt;
        Bytes em1 = check(e, digest_of(md, msg));
        if (std::string(salt) != "0") {
          // A random salt: two encodings of the same digest differ.
          auto em2 = encode_rsa_signature(nullptr, e, digest_of(md, msg).data(),
                                          digest_of(md, msg).size(), GetParam());
          ASSERT_TRUE(em2);
          EXPECT_NE(*em2, em1) << md << " " << salt;
        }
      }
    }
  }
}

TEST_P(RsaEncodingTest, RefusesWhatCannotBeEncoded) {
  Bytes short_digest(31, 1);
  RsaSignEncoding e;
  e.digest = "SHA2-256";
  EXPECT_FALSE(
      encode_rsa_signature(nullptr, e, short_digest.data(), short_digest.size(), GetParam()));
  e.scheme = RsaSignEncoding::Scheme::kPss;
  EXPECT_FALSE(
      encode_rsa_signature(nullptr, e, short_digest.data(), short_digest.size(), GetParam()));
  Bytes d(32, 1);
  e.saltlen = "100000";  // does not fit
  EXPECT_FALSE(encode_rsa_signature(nullptr, e, d.data(), d.size(), GetParam()));
  e.saltlen = "-4";
  EXPECT_FALSE(encode_rsa_signature(nullptr, e, d.data(), d.size(), GetParam()));
  e.saltlen = "digest";
  e.digest = "no-such-digest";
  EXPECT_FALSE(encode_rsa_signature(nullptr, e, d.data(), d.size(), GetParam()));
  e.digest.clear();  // PSS needs a digest
  EXPECT_FALSE(encode_rsa_signature(nullptr, e, d.data(), d.size(), GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Sizes, RsaEncodingTest, ::testing::Values(1537, 2048, 3072, 4096));

}  // namespace
}  // namespace accelgate::provider
