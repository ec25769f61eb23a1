#pragma once

// The OpenSSL side of the multi-buffer RSA kernels: key import from an EVP_PKEY, and the
// checked batch, which recomputes in software (OpenSSL, RSA_NO_PADDING) every lane whose result
// failed the kernels' re-encryption check, so a faulty result never leaves (a wrong CRT result
// would reveal a factor of n: Boneh, DeMillo & Lipton, EUROCRYPT 1997).

#include <openssl/evp.h>

#include <cstdint>
#include <span>

#include "accelgate/crypto/mb/rsa_batch.h"
#include "accelgate/crypto/mb/rsa_key.h"

namespace accelgate::crypto::mb {

// ImportStatus extends KeyStatus with the reasons an EVP_PKEY itself is refused.
enum class ImportStatus {
  kOk,
  kNotRsa,          // not an EVP_PKEY_RSA key, or no private CRT parts
  kMultiPrime,      // more than two primes
  kUnsupportedKey,  // prepare_rsa_key refused it; see |key_status|
};

// import_rsa_key prepares |out| from |pkey| (borrowed, not retained). On kUnsupportedKey,
// |key_status| (optional) says why.
ImportStatus import_rsa_key(const EVP_PKEY* pkey, RsaKey* out, KeyStatus* key_status = nullptr);

// CheckedLane is one operation for rsa_private_checked: |pkey| is the same key as |key| and
// serves the software recomputation. |in| and |out| as in RsaLane.
struct CheckedLane {
  const RsaKey* key = nullptr;
  EVP_PKEY* pkey = nullptr;
  const uint8_t* in = nullptr;
  uint8_t* out = nullptr;
};

// CheckedOutcome holds lane masks. Every lane is in exactly one of |ok| (the kernels' result,
// verified), |recomputed| (the kernels' result failed its check and OpenSSL recomputed it) or
// |failed| (OpenSSL refused too, e.g. input >= n: its output is zeroed; or the key's stored
// length does not fit its size class or differs from the EVP_PKEY's, a corrupted key: its
// buffers are not touched, and no lane of the call goes to the kernels).
struct CheckedOutcome {
  uint8_t ok = 0;
  uint8_t recomputed = 0;
  uint8_t failed = 0;
};

// rsa_private_checked runs rsa_private_batch and repairs it as described above. Each
// recomputed lane adds one to software_recompute_count() and logs nothing (the caller owns
// logging and metrics). |fault| is the test hook of rsa_private_batch.
CheckedOutcome rsa_private_checked(Backend backend, std::span<const CheckedLane> lanes,
                                   const FaultInjection* fault = nullptr);

// software_recompute_count is the process-wide number of lanes recomputed in software after a
// failed check (not counting inputs that OpenSSL refused as well).
uint64_t software_recompute_count();

// rsa_private_software is the raw RSA private operation in OpenSSL (RSA_NO_PADDING, with
// OpenSSL's blinding); |in| and |out| hold EVP_PKEY_get_size(pkey) bytes. False on error.
bool rsa_private_software(EVP_PKEY* pkey, const uint8_t* in, uint8_t* out);

}  // namespace accelgate::crypto::mb
