#include "rsa_encoding.h"

#include <openssl/crypto.h>
#include <openssl/objects.h>
#include <openssl/rand.h>

#include <charconv>
#include <memory>

namespace accelgate::provider {
namespace {

struct MdFree {
  void operator()(EVP_MD* md) const { EVP_MD_free(md); }
};
using Md = std::unique_ptr<EVP_MD, MdFree>;

Md fetch(OSSL_LIB_CTX* libctx, const std::string& name) {
  return Md(EVP_MD_fetch(libctx, name.c_str(), nullptr));
}

// digest_info is the DER DigestInfo prefix of |md| (RFC 8017 §9.2 note 1: SEQUENCE { SEQUENCE {
// OID, NULL }, OCTET STRING }, the digest to follow), or "" when |md| has no OID.
std::vector<uint8_t> digest_info_prefix(const EVP_MD* md) {
  const ASN1_OBJECT* oid = OBJ_nid2obj(EVP_MD_get_type(md));
  if (oid == nullptr || OBJ_length(oid) == 0) return {};
  const size_t oid_len = OBJ_length(oid);
  const auto h = static_cast<size_t>(EVP_MD_get_size(md));
  // Every length is below 128 (an OID of tens of bytes, a digest of at most 64), so each DER
  // length is one byte.
  const size_t algorithm = 2 + oid_len + 2;            // content: OID TLV + NULL
  const size_t total = 2 + (2 + algorithm) + (2 + h);  // DigestInfo TLV with the digest
  if (total - 2 >= 128) return {};
  std::vector<uint8_t> out;
  out.reserve(total - h);
  out.insert(out.end(), {0x30, static_cast<uint8_t>(total - 2), 0x30,
                         static_cast<uint8_t>(algorithm), 0x06, static_cast<uint8_t>(oid_len)});
  const unsigned char* der = OBJ_get0_data(oid);
  out.insert(out.end(), der, der + oid_len);
  out.insert(out.end(), {0x05, 0x00, 0x04, static_cast<uint8_t>(h)});
  return out;
}

// EMSA-PKCS1-v1_5 (RFC 8017 §9.2): 00 01 FF..FF 00 T, T = DigestInfo || digest (or the input).
std::optional<std::vector<uint8_t>> encode_pkcs1(OSSL_LIB_CTX* libctx, const std::string& digest,
                                                 const uint8_t* tbs, size_t tbslen, size_t k) {
  std::vector<uint8_t> t;
  if (!digest.empty()) {
    Md md = fetch(libctx, digest);
    if (md == nullptr || tbslen != static_cast<size_t>(EVP_MD_get_size(md.get()))) {
      return std::nullopt;
    }
    t = digest_info_prefix(md.get());
    if (t.empty()) return std::nullopt;
  }
  t.insert(t.end(), tbs, tbs + tbslen);
  if (t.size() + 11 > k) return std::nullopt;  // PS needs at least 8 bytes
  std::vector<uint8_t> em(k, 0xff);
  em[0] = 0x00;
  em[1] = 0x01;
  em[k - t.size() - 1] = 0x00;
  std::copy(t.begin(), t.end(), em.end() - static_cast<std::ptrdiff_t>(t.size()));
  return em;
}

// salt_length turns OpenSSL's salt length text into bytes for signing: "digest" (-1) is the
// digest's length, "max" (-3) and "auto" (-2: when signing, the maximum) the most that fits.
std::optional<size_t> salt_length(const std::string& text, size_t h, size_t em_len) {
  long v = -2;
  if (text == "digest") {
    v = -1;
  } else if (text == "max") {
    v = -3;
  } else if (!text.empty() && text != "auto") {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  }
  if (em_len < h + 2) return std::nullopt;
  if (v == -1) return h;
  if (v == -2 || v == -3) return em_len - h - 2;
  if (v < 0) return std::nullopt;
  return static_cast<size_t>(v);
}

// EMSA-PSS-ENCODE (RFC 8017 §9.1.1) with MGF1 (§B.2.1).
std::optional<std::vector<uint8_t>> encode_pss(OSSL_LIB_CTX* libctx,
                                               const RsaSignEncoding& encoding, const uint8_t* tbs,
                                               size_t tbslen, int mod_bits) {
  Md md = fetch(libctx, encoding.digest);
  Md mgf1 = fetch(libctx, encoding.mgf1.empty() ? encoding.digest : encoding.mgf1);
  if (md == nullptr || mgf1 == nullptr) return std::nullopt;
  const auto h = static_cast<size_t>(EVP_MD_get_size(md.get()));
  if (tbslen != h) return std::nullopt;
  const size_t em_bits = static_cast<size_t>(mod_bits) - 1;
  const size_t em_len = (em_bits + 7) / 8;
  std::optional<size_t> s_len = salt_length(encoding.saltlen, h, em_len);
  if (!s_len || em_len < h + *s_len + 2) return std::nullopt;

  std::vector<uint8_t> salt(*s_len);
  if (!salt.empty() && RAND_bytes_ex(libctx, salt.data(), salt.size(), 0) != 1) {
    return std::nullopt;
  }
  // H = Hash(00 x 8 || mHash || salt)
  uint8_t hash[EVP_MAX_MD_SIZE];
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  static constexpr uint8_t kZeros[8] = {};
  bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, md.get(), nullptr) == 1 &&
            EVP_DigestUpdate(ctx, kZeros, sizeof(kZeros)) == 1 &&
            EVP_DigestUpdate(ctx, tbs, tbslen) == 1 &&
            EVP_DigestUpdate(ctx, salt.data(), salt.size()) == 1 &&
            EVP_DigestFinal_ex(ctx, hash, nullptr) == 1;
  // maskedDB = DB xor MGF1(H, emLen - hLen - 1), DB = PS (zeros) || 01 || salt
  const size_t db_len = em_len - h - 1;
  std::vector<uint8_t> em(em_len, 0);
  em[db_len - *s_len - 1] = 0x01;
  std::copy(salt.begin(), salt.end(), em.begin() + static_cast<std::ptrdiff_t>(db_len - *s_len));
  const auto mgf_h = static_cast<size_t>(EVP_MD_get_size(mgf1.get()));
  uint8_t block[EVP_MAX_MD_SIZE];
  for (uint32_t counter = 0; ok && counter * mgf_h < db_len; ++counter) {
    const uint8_t c[4] = {static_cast<uint8_t>(counter >> 24), static_cast<uint8_t>(counter >> 16),
                          static_cast<uint8_t>(counter >> 8), static_cast<uint8_t>(counter)};
    ok = EVP_DigestInit_ex(ctx, mgf1.get(), nullptr) == 1 && EVP_DigestUpdate(ctx, hash, h) == 1 &&
         EVP_DigestUpdate(ctx, c, sizeof(c)) == 1 && EVP_DigestFinal_ex(ctx, block, nullptr) == 1;
    for (size_t i = 0; ok && i < mgf_h && counter * mgf_h + i < db_len; ++i) {
      em[counter * mgf_h + i] ^= block[i];
    }
  }
  EVP_MD_CTX_free(ctx);
  OPENSSL_cleanse(salt.data(), salt.size());
  if (!ok) return std::nullopt;
  em[0] &= static_cast<uint8_t>(0xff >> (8 * em_len - em_bits));
  std::copy(hash, hash + h, em.begin() + static_cast<std::ptrdiff_t>(db_len));
  em[em_len - 1] = 0xbc;
  // The raw operation takes the modulus' bytes: emLen is one less when modBits = 8k + 1.
  const size_t k = (static_cast<size_t>(mod_bits) + 7) / 8;
  if (em_len < k) em.insert(em.begin(), k - em_len, 0);
  return em;
}

}  // namespace

std::optional<std::vector<uint8_t>> encode_rsa_signature(OSSL_LIB_CTX* libctx,
                                                         const RsaSignEncoding& encoding,
                                                         const uint8_t* tbs, size_t tbslen,
                                                         int modulus_bits) {
  if (modulus_bits < 512) return std::nullopt;
  if (encoding.scheme == RsaSignEncoding::Scheme::kPss) {
    if (encoding.digest.empty()) return std::nullopt;
    return encode_pss(libctx, encoding, tbs, tbslen, modulus_bits);
  }
  return encode_pkcs1(libctx, encoding.digest, tbs, tbslen,
                      (static_cast<size_t>(modulus_bits) + 7) / 8);
}

}  // namespace accelgate::provider
