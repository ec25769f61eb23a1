// The premaster secret check of TLS 1.2's RSA key exchange over an unpadded RSA decryption
// (engine_op.h), for ENGINEs, which decrypt without knowing TLS.

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <cstdint>

#include "engine_op.h"

namespace accelgate::provider {
namespace {

constexpr size_t kPremasterSize = 48;  // RFC 5246 §7.4.7.1
constexpr size_t kMinPadding = 8;      // RFC 8017 §7.2.2: PS is at least 8 octets

// The masks are all ones (true) or all zeros (false), computed without branches so that the
// time taken does not depend on the secret block (the Bleichenbacher and Klima-Pokorny-Rosa
// oracles that RFC 5246 §7.4.7.1 is about).
inline uint32_t mask_is_zero(uint32_t a) { return 0u - ((~a & (a - 1)) >> 31); }
inline uint32_t mask_eq(uint32_t a, uint32_t b) { return mask_is_zero(a ^ b); }

}  // namespace

bool tls_premaster_from_block(const uint8_t* block, size_t size, unsigned int client_version,
                              unsigned int alt_version, uint8_t out[48]) {
  // Public facts, checked in variable time: the block must hold 0x00 0x02, the minimum padding,
  // the 0x00 separator and the 48 bytes.
  if (block == nullptr || size < 2 + kMinPadding + 1 + kPremasterSize) return false;
  uint8_t random[kPremasterSize];
  if (RAND_priv_bytes(random, sizeof(random)) != 1) return false;

  // EM = 0x00 || 0x02 || PS || 0x00 || M with M exactly 48 bytes: PS is every byte from index 2
  // to the separator at size - 49, all of them non-zero.
  const size_t separator = size - kPremasterSize - 1;
  uint32_t good = mask_is_zero(block[0]) & mask_eq(block[1], 2);
  for (size_t i = 2; i < separator; ++i) good &= ~mask_is_zero(block[i]);
  good &= mask_is_zero(block[separator]);

  // The first two bytes of M are the version the client offered (RFC 5246 §7.4.7.1); with
  // |alt_version| (the negotiated one, SSL_OP_TLS_ROLLBACK_BUG) either is accepted.
  const uint8_t* m = block + separator + 1;
  uint32_t version_good =
      mask_eq(m[0], (client_version >> 8) & 0xff) & mask_eq(m[1], client_version & 0xff);
  if (alt_version != 0) {
    version_good |= mask_eq(m[0], (alt_version >> 8) & 0xff) & mask_eq(m[1], alt_version & 0xff);
  }
  good &= version_good;

  for (size_t i = 0; i < kPremasterSize; ++i) {
    out[i] = static_cast<uint8_t>((m[i] & good) | (random[i] & ~good));
  }
  OPENSSL_cleanse(random, sizeof(random));
  return true;
}

}  // namespace accelgate::provider
