#pragma once

// RSA signature encodings (RFC 8017 §9): the message an RSA signature raises to d, for engines
// that compute the private operation themselves (the mb engine) and so need the padding done
// before. What OpenSSL's default provider would do inside its sign: the same encoding, so the
// signature verifies the same way (the tests check every one with OpenSSL).

#include <openssl/evp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accelgate::provider {

// RsaSignEncoding says how a signature of a digest is encoded: PKCS#1 v1.5 with |digest| (its
// DigestInfo; no digest: the input is signed as it is, as RSA_PKCS1_PADDING without a digest
// does) or PSS with |digest|, |mgf1| and |saltlen| (OpenSSL's PSS salt length text: "digest",
// "max", "auto" or a number; the numeric codes -1, -2, -3 as OpenSSL's RSA_PSS_SALTLEN_*).
struct RsaSignEncoding {
  enum class Scheme : uint8_t { kPkcs1v15, kPss };
  Scheme scheme = Scheme::kPkcs1v15;
  std::string digest;
  std::string mgf1;     // "" = the same as digest
  std::string saltlen;  // "" = "auto" for signing
};

// encode_rsa_signature returns the encoded message for a key of |modulus_bits| bits, left-padded
// with zeros to the modulus' bytes, so that the signature is EM^d mod n; nullopt when the
// encoding is impossible (a digest of the wrong length, a salt that does not fit) or not one we
// make (an unknown digest). |libctx| fetches the digests and the PSS salt's random bytes.
std::optional<std::vector<uint8_t>> encode_rsa_signature(OSSL_LIB_CTX* libctx,
                                                         const RsaSignEncoding& encoding,
                                                         const uint8_t* tbs, size_t tbslen,
                                                         int modulus_bits);

}  // namespace accelgate::provider
