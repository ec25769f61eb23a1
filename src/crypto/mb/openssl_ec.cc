// openssl_ec.cc: the thin adapter between OpenSSL and the EC kernels (see openssl_ec.h): key
// import, nonces from the DRBG, DER encoding, peer-key decoding and the software recomputation
// of lanes that failed their check. With openssl_rsa.cc, the only files of ag_crypto_mb that
// include OpenSSL.

#include "accelgate/crypto/mb/openssl_ec.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "ec_curves.h"

namespace accelgate::crypto::mb {
namespace {

std::atomic<uint64_t> g_ec_recomputed{0};

void count_recompute() { g_ec_recomputed.fetch_add(1, std::memory_order_relaxed); }

struct CtxFree {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};
using CtxPtr = std::unique_ptr<EVP_PKEY_CTX, CtxFree>;

struct PkeyFree {
  void operator()(EVP_PKEY* pkey) const { EVP_PKEY_free(pkey); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

constexpr detail::BigWords<kMaxEcWords> kOrders[2] = {
    detail::words_from_hex<kMaxEcWords>(detail::kP256Hex.n),
    detail::words_from_hex<kMaxEcWords>(detail::kP384Hex.n),
};

const uint64_t* order_words(EcCurve curve) { return kOrders[curve == EcCurve::kP256 ? 0 : 1].w; }

uint8_t lane_bit(size_t l) { return static_cast<uint8_t>(1u << l); }

// in_scalar_range is 1 <= k < n for a big-endian k of field bytes, in constant time.
bool in_scalar_range(EcCurve curve, const uint8_t* k_be) {
  const int len = ec_field_bytes(curve);
  uint64_t words[kMaxEcWords] = {};
  for (int i = 0; i < len; ++i) {
    const int bit = 8 * (len - 1 - i);
    words[bit / 64] |= uint64_t{k_be[i]} << (bit % 64);
  }
  const uint64_t* n = order_words(curve);
  uint64_t borrow = 0;
  uint64_t any = 0;
  for (int i = 0; i < len / 8; ++i) {
    const unsigned __int128 t = static_cast<unsigned __int128>(words[i]) - n[i] - borrow;
    borrow = static_cast<uint64_t>(t >> 64) & 1;
    any |= words[i];
  }
  const uint64_t ok = borrow & ((any | (0 - any)) >> 63);
  OPENSSL_cleanse(words, sizeof(words));
  return ok != 0;  // the verdict only rejects a draw; it says nothing about the kept nonce
}

// draw_nonces fills nonces[l] (field bytes) for the |lanes| given, uniformly in [1, n-1] by
// rejection (FIPS 186-5 §A.3.2, "rejection sampling"; for P-256 a draw is rejected with
// probability about 2^-32, for P-384 2^-190). One DRBG call serves all lanes (a call costs
// about 0.6 us whatever its length up to a few hundred bytes, a tenth of a P-256 signature);
// a rejected lane draws again alone. Returns the lanes that got a nonce.
uint8_t draw_nonces(EcCurve curve, uint8_t lanes, uint8_t (*nonces)[kMaxEcFieldBytes]) {
  const auto len = static_cast<size_t>(ec_field_bytes(curve));
  uint8_t bytes[kLanes * kMaxEcFieldBytes];
  size_t count = 0;
  for (size_t l = 0; l < static_cast<size_t>(kLanes); ++l) count += (lanes >> l) & 1;
  uint8_t drawn = 0;
  if (count == 0 || RAND_priv_bytes_ex(nullptr, bytes, count * len, 0) != 1) return 0;
  size_t next = 0;
  for (size_t l = 0; l < static_cast<size_t>(kLanes); ++l) {
    if ((lanes & lane_bit(l)) == 0) continue;
    std::memcpy(nonces[l], bytes + len * next++, len);
    for (int attempt = 0; attempt < 64; ++attempt) {
      if (in_scalar_range(curve, nonces[l])) {
        drawn |= lane_bit(l);
        break;
      }
      if (RAND_priv_bytes_ex(nullptr, nonces[l], len, 0) != 1) break;
    }
  }
  OPENSSL_cleanse(bytes, sizeof(bytes));
  return drawn;
}

// der_integer writes the DER INTEGER of the big-endian unsigned |v| (|len| bytes) at |out| and
// returns its length.
size_t der_integer(uint8_t* out, const uint8_t* v, int len) {
  int skip = 0;
  while (skip < len - 1 && v[skip] == 0) ++skip;  // r and s are public: branching is fine
  const bool pad = (v[skip] & 0x80) != 0;
  size_t n = 0;
  out[n++] = 0x02;
  out[n++] = static_cast<uint8_t>(len - skip + (pad ? 1 : 0));
  if (pad) out[n++] = 0x00;
  std::memcpy(out + n, v + skip, static_cast<size_t>(len - skip));
  return n + static_cast<size_t>(len - skip);
}

// der_signature writes ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER } (SEC 1 §C.5).
// Both curves keep the content under 128 bytes, so every length has the short form.
void der_signature(std::vector<uint8_t>* der, const uint8_t* r, const uint8_t* s, int len) {
  der->resize(2 * (3 + static_cast<size_t>(len)) + 2);
  uint8_t* out = der->data();
  size_t n = 2;
  n += der_integer(out + n, r, len);
  n += der_integer(out + n, s, len);
  out[0] = 0x30;
  out[1] = static_cast<uint8_t>(n - 2);
  der->resize(n);
}

bool ecdsa_sign_software(EVP_PKEY* pkey, const uint8_t* digest, size_t digest_len,
                         std::vector<uint8_t>* der) {
  CtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr));
  size_t len = 0;
  if (!ctx || EVP_PKEY_sign_init(ctx.get()) != 1 ||
      EVP_PKEY_sign(ctx.get(), nullptr, &len, digest, digest_len) != 1) {
    return false;
  }
  der->resize(len);
  if (EVP_PKEY_sign(ctx.get(), der->data(), &len, digest, digest_len) != 1) return false;
  der->resize(len);
  return true;
}

// peer_from_point builds an EVP_PKEY of |curve| from an encoded point (any SEC 1 form).
PkeyPtr peer_from_point(EcCurve curve, const uint8_t* point, size_t len) {
  CtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1) return nullptr;
  char group[16];
  std::strcpy(group, curve == EcCurve::kP256 ? "prime256v1" : "secp384r1");
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
      OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, const_cast<uint8_t*>(point), len),
      OSSL_PARAM_construct_end(),
  };
  EVP_PKEY* pkey = nullptr;
  if (EVP_PKEY_fromdata(ctx.get(), &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) return nullptr;
  return PkeyPtr(pkey);
}

bool ecdh_derive_software(EVP_PKEY* pkey, EVP_PKEY* peer, uint8_t* out, size_t out_len) {
  CtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr));
  size_t len = out_len;
  return ctx && EVP_PKEY_derive_init(ctx.get()) == 1 &&
         EVP_PKEY_derive_set_peer(ctx.get(), peer) == 1 &&
         EVP_PKEY_derive(ctx.get(), out, &len) == 1 && len == out_len;
}

bool x25519_software(const uint8_t* priv, const uint8_t* peer, uint8_t* out) {
  PkeyPtr key(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, priv, 32));
  if (!key) return false;
  size_t len = 32;
  if (peer == nullptr) {
    return EVP_PKEY_get_raw_public_key(key.get(), out, &len) == 1 && len == 32;
  }
  PkeyPtr peer_key(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer, 32));
  if (!peer_key) return false;
  CtxPtr ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr));
  return ctx && EVP_PKEY_derive_init(ctx.get()) == 1 &&
         EVP_PKEY_derive_set_peer(ctx.get(), peer_key.get()) == 1 &&
         EVP_PKEY_derive(ctx.get(), out, &len) == 1 && len == 32;
}

}  // namespace

const char* ec_import_status_text(EcImportStatus status) {
  switch (status) {
    case EcImportStatus::kOk:
      return "ok";
    case EcImportStatus::kNotEc:
      return "not an EC key";
    case EcImportStatus::kUnsupportedCurve:
      return "curve other than P-256 and P-384";
    case EcImportStatus::kNoPrivateKey:
      return "no private key";
    case EcImportStatus::kInvalidKey:
      return "private scalar not in [1, n-1]";
  }
  return "unknown";
}

bool ec_curve_of(const EVP_PKEY* pkey, EcCurve* curve) {
  if (pkey == nullptr || EVP_PKEY_get_base_id(pkey) != EVP_PKEY_EC) return false;
  char name[64];
  size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, name, sizeof(name), &len) !=
      1) {
    return false;
  }
  if (std::strcmp(name, "prime256v1") == 0 || std::strcmp(name, "P-256") == 0 ||
      std::strcmp(name, "secp256r1") == 0) {
    *curve = EcCurve::kP256;
    return true;
  }
  if (std::strcmp(name, "secp384r1") == 0 || std::strcmp(name, "P-384") == 0) {
    *curve = EcCurve::kP384;
    return true;
  }
  return false;
}

EcImportStatus import_ec_key(const EVP_PKEY* pkey, EcKey* out) {
  if (pkey == nullptr || EVP_PKEY_get_base_id(pkey) != EVP_PKEY_EC) return EcImportStatus::kNotEc;
  EcCurve curve{};
  if (!ec_curve_of(pkey, &curve)) return EcImportStatus::kUnsupportedCurve;
  BIGNUM* d = nullptr;
  if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, &d) != 1 || d == nullptr) {
    return EcImportStatus::kNoPrivateKey;
  }
  // A fixed length (the field's), which BN_bn2binpad writes without revealing d's own length.
  uint8_t bytes[kMaxEcFieldBytes];
  const int len = ec_field_bytes(curve);
  const bool fits = BN_bn2binpad(d, bytes, len) == len;
  BN_clear_free(d);
  if (!fits) return EcImportStatus::kInvalidKey;
  const EcKeyStatus status = prepare_ec_key(curve, {bytes, static_cast<size_t>(len)}, out);
  OPENSSL_cleanse(bytes, sizeof(bytes));
  return status == EcKeyStatus::kOk ? EcImportStatus::kOk : EcImportStatus::kInvalidKey;
}

size_t ecdsa_der_max_bytes(EcCurve curve) { return curve == EcCurve::kP256 ? 72 : 104; }

CheckedOutcome ecdsa_sign_checked(Backend backend, std::span<const EcdsaCheckedLane> lanes,
                                  const EcFaultInjection* fault) {
  CheckedOutcome outcome;
  const size_t count = lanes.size();
  if (count == 0 || count > static_cast<size_t>(kLanes)) return outcome;
  const EcCurve curve = lanes[0].key->curve();
  for (const EcdsaCheckedLane& lane : lanes) {
    if (lane.key->curve() != curve) {
      outcome.failed = static_cast<uint8_t>((1u << count) - 1);
      for (const EcdsaCheckedLane& l : lanes) l.der->clear();
      return outcome;
    }
  }
  const int len = ec_field_bytes(curve);
  uint8_t nonce[kLanes][kMaxEcFieldBytes];
  uint8_t r[kLanes][kMaxEcFieldBytes];
  uint8_t s[kLanes][kMaxEcFieldBytes];
  uint8_t software = 0;  // lanes to sign with OpenSSL
  uint8_t counted = 0;   // ... of which after a failed check
  auto pending = static_cast<uint8_t>((1u << count) - 1);
  // Three rounds at most: the first and two retries for r == 0 or s == 0.
  for (int round = 0; round < 3 && pending != 0; ++round) {
    EcdsaLane batch[kLanes];
    size_t index[kLanes];
    size_t used = 0;
    const uint8_t drawn = draw_nonces(curve, pending, nonce);
    software |= static_cast<uint8_t>(pending & ~drawn);
    for (size_t l = 0; l < count; ++l) {
      if ((drawn & lane_bit(l)) == 0) continue;
      batch[used] =
          EcdsaLane{lanes[l].key, lanes[l].digest, lanes[l].digest_len, nonce[l], r[l], s[l]};
      index[used++] = l;
    }
    pending = 0;
    if (used == 0) break;
    // The fault hook names a lane of the caller's span; in a compacted retry it would move.
    const EcOutcome out =
        ecdsa_sign_batch(backend, curve, {batch, used}, round == 0 ? fault : nullptr);
    for (size_t i = 0; i < used; ++i) {
      const size_t l = index[i];
      const auto bit = static_cast<uint8_t>(1u << i);
      if ((out.ok & bit) != 0) {
        der_signature(lanes[l].der, r[l], s[l], len);
        outcome.ok |= lane_bit(l);
      } else if ((out.retry & bit) != 0) {
        pending |= lane_bit(l);
      } else {
        software |= lane_bit(l);
        if ((out.check_failed & bit) != 0) counted |= lane_bit(l);
      }
    }
  }
  software |= pending;
  OPENSSL_cleanse(nonce, sizeof(nonce));
  for (size_t l = 0; l < count; ++l) {
    if ((software & lane_bit(l)) == 0) continue;
    if (ecdsa_sign_software(lanes[l].pkey, lanes[l].digest, lanes[l].digest_len, lanes[l].der)) {
      outcome.recomputed |= lane_bit(l);
      if ((counted & lane_bit(l)) != 0) count_recompute();
    } else {
      outcome.failed |= lane_bit(l);
      lanes[l].der->clear();
    }
  }
  return outcome;
}

CheckedOutcome ecdh_derive_checked(Backend backend, EcCurve curve,
                                   std::span<const EcdhCheckedLane> lanes,
                                   const EcFaultInjection* fault) {
  CheckedOutcome outcome;
  const size_t count = lanes.size();
  if (count == 0 || count > static_cast<size_t>(kLanes)) return outcome;
  const int len = ec_field_bytes(curve);
  const size_t point_len = 1 + 2 * static_cast<size_t>(len);
  uint8_t points[kLanes][1 + 2 * kMaxEcFieldBytes];
  EcdhLane batch[kLanes];
  size_t index[kLanes];
  size_t used = 0;
  uint8_t software = 0;
  for (size_t l = 0; l < count; ++l) {
    const EcdhCheckedLane& lane = lanes[l];
    if (lane.key->curve() != curve) {
      software |= lane_bit(l);
      continue;
    }
    size_t got = 0;
    const uint8_t* point = nullptr;
    if (lane.peer != nullptr) {
      if (EVP_PKEY_get_octet_string_param(lane.peer, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, points[l],
                                          sizeof(points[l]), &got) == 1) {
        point = points[l];
      }
    } else {
      point = lane.peer_point;
      got = lane.peer_point_len;
    }
    // The kernels take the uncompressed form; anything else (compressed, hybrid, wrong length)
    // is OpenSSL's to decode or refuse.
    if (point == nullptr || got != point_len || point[0] != 0x04) {
      software |= lane_bit(l);
      continue;
    }
    batch[used] = EcdhLane{lane.key, point + 1, point + 1 + len, lane.out};
    index[used++] = l;
  }
  uint8_t counted = 0;
  if (used > 0) {
    const EcOutcome out = ecdh_batch(backend, curve, {batch, used}, fault);
    for (size_t i = 0; i < used; ++i) {
      const size_t l = index[i];
      const auto bit = static_cast<uint8_t>(1u << i);
      if ((out.ok & bit) != 0) {
        outcome.ok |= lane_bit(l);
      } else if ((out.invalid_input & bit) != 0) {
        outcome.failed |= lane_bit(l);  // OpenSSL refuses such a point as well
        std::memset(lanes[l].out, 0, static_cast<size_t>(len));
      } else {
        software |= lane_bit(l);
        if ((out.check_failed & bit) != 0) counted |= lane_bit(l);
      }
    }
  }
  for (size_t l = 0; l < count; ++l) {
    if ((software & lane_bit(l)) == 0) continue;
    const EcdhCheckedLane& lane = lanes[l];
    PkeyPtr built;
    EVP_PKEY* peer = lane.peer;
    if (peer == nullptr && lane.peer_point != nullptr) {
      built = peer_from_point(curve, lane.peer_point, lane.peer_point_len);
      peer = built.get();
    }
    if (peer != nullptr &&
        ecdh_derive_software(lane.pkey, peer, lane.out, static_cast<size_t>(len))) {
      outcome.recomputed |= lane_bit(l);
      if ((counted & lane_bit(l)) != 0) count_recompute();
    } else {
      outcome.failed |= lane_bit(l);
      std::memset(lane.out, 0, static_cast<size_t>(len));
    }
  }
  return outcome;
}

CheckedOutcome x25519_checked(Backend backend, std::span<const X25519CheckedLane> lanes,
                              const EcFaultInjection* fault) {
  CheckedOutcome outcome;
  const size_t count = lanes.size();
  if (count == 0 || count > static_cast<size_t>(kLanes)) return outcome;
  // Keep the inputs: |out| may alias them, and software needs them.
  uint8_t priv[kLanes][32];
  uint8_t peer[kLanes][32];
  X25519Lane batch[kLanes];
  for (size_t l = 0; l < count; ++l) {
    std::memcpy(priv[l], lanes[l].priv, 32);
    if (lanes[l].peer != nullptr) std::memcpy(peer[l], lanes[l].peer, 32);
    batch[l] = X25519Lane{priv[l], lanes[l].peer != nullptr ? peer[l] : nullptr, lanes[l].out};
  }
  const X25519Outcome out = x25519_batch(backend, {batch, count}, fault);
  for (size_t l = 0; l < count; ++l) {
    const uint8_t bit = lane_bit(l);
    if ((out.ok & bit) != 0) {
      outcome.ok |= bit;
      continue;
    }
    const uint8_t* peer_in = lanes[l].peer != nullptr ? peer[l] : nullptr;
    if (x25519_software(priv[l], peer_in, lanes[l].out)) {
      outcome.recomputed |= bit;
      // OpenSSL succeeding where the kernels gave zero or failed the check: a fault of ours.
      count_recompute();
    } else {
      outcome.failed |= bit;
      std::memset(lanes[l].out, 0, 32);
    }
  }
  OPENSSL_cleanse(priv, sizeof(priv));
  return outcome;
}

uint64_t ec_software_recompute_count() { return g_ec_recomputed.load(std::memory_order_relaxed); }

}  // namespace accelgate::crypto::mb
