#pragma once

// The OpenSSL side of the multi-buffer EC kernels (issue 6), mirroring openssl_rsa.h: key import
// from an EVP_PKEY, and the checked batches. Each draws what the kernels need (ECDSA nonces from
// OpenSSL's DRBG), encodes what OpenSSL expects (DER signatures), and recomputes in software
// (OpenSSL's EVP) every lane whose result failed the kernels' check, so a faulty result never
// leaves. Each such lane adds one to ec_software_recompute_count().
//
// Every function here is thread-safe and allocation-light: no BIGNUM per operation.

#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "accelgate/crypto/mb/ec_batch.h"
#include "accelgate/crypto/mb/ec_key.h"
#include "accelgate/crypto/mb/openssl_rsa.h"  // CheckedOutcome

namespace accelgate::crypto::mb {

// EcImportStatus says why import_ec_key refused a key; refused keys belong in software.
enum class EcImportStatus {
  kOk,
  kNotEc,             // not an EVP_PKEY_EC key
  kUnsupportedCurve,  // an EC key on a curve other than P-256 and P-384
  kNoPrivateKey,      // a public key only
  kInvalidKey,        // prepare_ec_key refused the scalar
};

// ec_import_status_text is a short static description of |status|.
const char* ec_import_status_text(EcImportStatus status);

// ec_curve_of reports the curve of a P-256 or P-384 key (public or private); false for any other
// key. Cheap; for routing.
bool ec_curve_of(const EVP_PKEY* pkey, EcCurve* curve);

// import_ec_key prepares |out| from |pkey| (borrowed, not retained). Costs one BIGNUM read of the
// private scalar: do it once per key and cache the EcKey.
EcImportStatus import_ec_key(const EVP_PKEY* pkey, EcKey* out);

// ecdsa_der_max_bytes is the longest DER ECDSA-Sig-Value on |curve|: 72 (P-256) or 104 (P-384).
size_t ecdsa_der_max_bytes(EcCurve curve);

// EcdsaCheckedLane is one signature for ecdsa_sign_checked: |pkey| is the same key as |key| and
// serves the software recomputation; |digest| as in EcdsaLane. |der| receives the DER-encoded
// ECDSA-Sig-Value (RFC 5480 §2.2.3 / SEC 1 §C.5), exactly what EVP_PKEY_sign outputs; it is
// resized (reuse the vector to avoid allocations).
struct EcdsaCheckedLane {
  const EcKey* key = nullptr;
  EVP_PKEY* pkey = nullptr;
  const uint8_t* digest = nullptr;
  size_t digest_len = 0;
  std::vector<uint8_t>* der = nullptr;
};

// ecdsa_sign_checked signs |lanes| (1 to 8, all keys of one curve). Nonces: k is drawn for every
// signature from OpenSSL's private DRBG (RAND_priv_bytes_ex on the default library context)
// with rejection sampling to [1, n-1]. Lanes with r == 0 or s == 0 are signed again with a fresh
// nonce (twice at most, then in software, not counted). Lanes that fail the kernels' checks are
// signed by EVP_PKEY_sign(|pkey|) (a fresh random nonce too), counted. Outcome: ok / recomputed
// / failed (software failed as well; |der| is cleared). A call breaking the batch rules fails
// every lane. |fault| is the kernels' test hook.
CheckedOutcome ecdsa_sign_checked(Backend backend, std::span<const EcdsaCheckedLane> lanes,
                                  const EcFaultInjection* fault = nullptr);

// EcdhCheckedLane is one ECDH derivation for ecdh_derive_checked: our |key| and |pkey| (the same
// key), and the peer's public key either as |peer| (an EVP_PKEY of the same curve) or, when
// |peer| is nullptr, as the encoded point |peer_point| (|peer_point_len| bytes, SEC 1 §2.3.3;
// the uncompressed form 04 || x || y runs in the kernels, other forms in software). |out|
// receives ec_field_bytes(curve) bytes, the big-endian x-coordinate (what EVP_PKEY_derive gives).
struct EcdhCheckedLane {
  const EcKey* key = nullptr;
  EVP_PKEY* pkey = nullptr;
  EVP_PKEY* peer = nullptr;
  const uint8_t* peer_point = nullptr;
  size_t peer_point_len = 0;
  uint8_t* out = nullptr;
};

// ecdh_derive_checked derives |lanes| (every key of |curve|). An invalid peer point fails its
// lane (OpenSSL refuses it too); a lane failing the kernels' check is derived again with
// EVP_PKEY_derive, counted.
CheckedOutcome ecdh_derive_checked(Backend backend, EcCurve curve,
                                   std::span<const EcdhCheckedLane> lanes,
                                   const EcFaultInjection* fault = nullptr);

// X25519CheckedLane is one X25519 operation for x25519_checked: the raw 32-byte private key
// |priv| (as EVP_PKEY_get_raw_private_key gives it), the peer's raw 32-byte public key |peer|
// or nullptr for a key generation (then |out| is our public key), and the 32-byte |out|.
struct X25519CheckedLane {
  const uint8_t* priv = nullptr;
  const uint8_t* peer = nullptr;
  uint8_t* out = nullptr;
};

// x25519_checked computes |lanes|. A lane failing the kernels' check, and a lane whose kernel
// result is all zero, is computed again by OpenSSL (EVP_PKEY_derive, or
// EVP_PKEY_get_raw_public_key for a key generation): an all-zero result that OpenSSL confirms
// (a low-order peer point) fails the lane, as OpenSSL's own derive does; a result OpenSSL
// computes is a recomputed lane, counted.
CheckedOutcome x25519_checked(Backend backend, std::span<const X25519CheckedLane> lanes,
                              const EcFaultInjection* fault = nullptr);

// ec_software_recompute_count is the process-wide number of EC lanes (all three algorithms)
// recomputed in software after a failed kernel check (invalid inputs and retries not counted).
uint64_t ec_software_recompute_count();

}  // namespace accelgate::crypto::mb
