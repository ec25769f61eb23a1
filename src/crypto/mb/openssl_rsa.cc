// openssl_rsa.cc: the thin adapter between OpenSSL and the kernels (see openssl_rsa.h). The only
// file of ag_crypto_mb that includes OpenSSL.

#include "accelgate/crypto/mb/openssl_rsa.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/rsa.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

namespace accelgate::crypto::mb {
namespace {

std::atomic<uint64_t> g_recomputed{0};

struct BnFree {
  void operator()(BIGNUM* bn) const { BN_clear_free(bn); }
};
using BnPtr = std::unique_ptr<BIGNUM, BnFree>;

struct CtxFree {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};

BnPtr get_bn(const EVP_PKEY* pkey, const char* name) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(pkey, name, &bn) != 1) return nullptr;
  return BnPtr(bn);
}

// SecretBytes is a byte buffer wiped on destruction.
struct SecretBytes {
  explicit SecretBytes(size_t n) : bytes(n) {}
  ~SecretBytes() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;
  std::vector<uint8_t> bytes;
};

}  // namespace

ImportStatus import_rsa_key(const EVP_PKEY* pkey, RsaKey* out, KeyStatus* key_status) {
  // RSA-PSS-restricted keys are refused: their software path cannot do a raw operation.
  if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_RSA) return ImportStatus::kNotRsa;
  if (BnPtr third = get_bn(pkey, OSSL_PKEY_PARAM_RSA_FACTOR3)) return ImportStatus::kMultiPrime;
  BnPtr n = get_bn(pkey, OSSL_PKEY_PARAM_RSA_N);
  BnPtr e = get_bn(pkey, OSSL_PKEY_PARAM_RSA_E);
  BnPtr p = get_bn(pkey, OSSL_PKEY_PARAM_RSA_FACTOR1);
  BnPtr q = get_bn(pkey, OSSL_PKEY_PARAM_RSA_FACTOR2);
  BnPtr dp = get_bn(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT1);
  BnPtr dq = get_bn(pkey, OSSL_PKEY_PARAM_RSA_EXPONENT2);
  BnPtr qinv = get_bn(pkey, OSSL_PKEY_PARAM_RSA_COEFFICIENT1);
  if (!n || !e || !p || !q || !dp || !dq || !qinv) return ImportStatus::kNotRsa;

  // Public sizes pick the lengths; secret parts are written at a fixed length (half of n's
  // byte length, rounded up), which BN_bn2binpad does without revealing their own lengths.
  const int n_len = BN_num_bytes(n.get());
  const int e_len = BN_num_bytes(e.get());
  const int half_len = (n_len + 1) / 2;
  SecretBytes nb(static_cast<size_t>(n_len)), eb(static_cast<size_t>(e_len));
  SecretBytes pb(half_len), qb(half_len), dpb(half_len), dqb(half_len), qinvb(half_len);
  if (BN_bn2binpad(n.get(), nb.bytes.data(), n_len) < 0 ||
      BN_bn2binpad(e.get(), eb.bytes.data(), e_len) < 0 ||
      BN_bn2binpad(p.get(), pb.bytes.data(), half_len) < 0 ||
      BN_bn2binpad(q.get(), qb.bytes.data(), half_len) < 0 ||
      BN_bn2binpad(dp.get(), dpb.bytes.data(), half_len) < 0 ||
      BN_bn2binpad(dq.get(), dqb.bytes.data(), half_len) < 0 ||
      BN_bn2binpad(qinv.get(), qinvb.bytes.data(), half_len) < 0) {
    if (key_status != nullptr) *key_status = KeyStatus::kUnsupportedFactors;
    return ImportStatus::kUnsupportedKey;
  }
  const RsaKeyParts parts{nb.bytes,  eb.bytes,  pb.bytes,   qb.bytes,
                          dpb.bytes, dqb.bytes, qinvb.bytes};
  const KeyStatus status = prepare_rsa_key(parts, out);
  if (key_status != nullptr) *key_status = status;
  return status == KeyStatus::kOk ? ImportStatus::kOk : ImportStatus::kUnsupportedKey;
}

bool rsa_private_software(EVP_PKEY* pkey, const uint8_t* in, uint8_t* out) {
  std::unique_ptr<EVP_PKEY_CTX, CtxFree> ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr));
  if (!ctx || EVP_PKEY_decrypt_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_NO_PADDING) != 1) {
    return false;
  }
  const auto len = static_cast<size_t>(EVP_PKEY_get_size(pkey));
  size_t out_len = len;
  if (EVP_PKEY_decrypt(ctx.get(), out, &out_len, in, len) != 1 || out_len != len) return false;
  return true;
}

CheckedOutcome rsa_private_checked(Backend backend, std::span<const CheckedLane> lanes,
                                   const FaultInjection* fault) {
  CheckedOutcome outcome;
  if (lanes.empty() || lanes.size() > static_cast<size_t>(kLanes)) return outcome;
  RsaLane mb_lanes[kLanes];
  for (size_t l = 0; l < lanes.size(); ++l) {
    mb_lanes[l] = RsaLane{lanes[l].key, lanes[l].in, lanes[l].out};
  }
  // A lane whose key's stored length does not fit its size class or differs from its EVP_PKEY's
  // (a key corrupted in memory) fails: its buffers' length is unknown, so nothing is read from
  // or written to them, and the other lanes go to software.
  uint8_t sound = 0;
  for (size_t l = 0; l < lanes.size(); ++l) {
    const RsaKey& key = *lanes[l].key;
    if (modulus_bytes_fit(key.size(), key.modulus_bytes()) &&
        key.modulus_bytes() == EVP_PKEY_get_size(lanes[l].pkey)) {
      sound |= static_cast<uint8_t>(1u << l);
    }
  }
  const auto all = static_cast<uint8_t>((1u << lanes.size()) - 1);
  // Keep the inputs: a lane recomputed in software needs them, and out may alias in.
  uint8_t inputs[kLanes][512];
  for (size_t l = 0; l < lanes.size(); ++l) {
    if ((sound & (1u << l)) == 0) continue;
    std::memcpy(inputs[l], lanes[l].in, static_cast<size_t>(lanes[l].key->modulus_bytes()));
  }
  const BatchOutcome batch =
      sound == all ? rsa_private_batch(backend, {mb_lanes, lanes.size()}, fault) : BatchOutcome{};
  for (size_t l = 0; l < lanes.size(); ++l) {
    const auto bit = static_cast<uint8_t>(1u << l);
    if ((batch.verified & bit) != 0) {
      outcome.ok |= bit;
      continue;
    }
    if ((sound & bit) == 0) {
      outcome.failed |= bit;
      continue;
    }
    const auto len = static_cast<size_t>(lanes[l].key->modulus_bytes());
    if (rsa_private_software(lanes[l].pkey, inputs[l], lanes[l].out)) {
      outcome.recomputed |= bit;
      // An input >= n is a caller's error, not a fault of ours; only count real mismatches.
      if ((batch.in_range & bit) != 0) g_recomputed.fetch_add(1, std::memory_order_relaxed);
    } else {
      outcome.failed |= bit;
      std::memset(lanes[l].out, 0, len);
    }
  }
  OPENSSL_cleanse(inputs, sizeof(inputs));
  return outcome;
}

uint64_t software_recompute_count() { return g_recomputed.load(std::memory_order_relaxed); }

}  // namespace accelgate::crypto::mb
