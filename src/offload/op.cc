#include "accelgate/offload/op.h"

#include <openssl/evp.h>

namespace accelgate::offload {

PrivateKey::~PrivateKey() { EVP_PKEY_free(pkey_); }

std::shared_ptr<const void> PrivateKey::prepared(const PrepareFn& make) const {
  once_([&] { prepared_ = make(pkey_); });
  return prepared_;
}

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kRsaSign:
      return "rsa_sign";
    case OpKind::kRsaDecrypt:
      return "rsa_decrypt";
    case OpKind::kEcdsaSign:
      return "ecdsa_sign";
    case OpKind::kEcdhDerive:
      return "ecdh_derive";
    case OpKind::kX25519Derive:
      return "x25519_derive";
    case OpKind::kX25519Keygen:
      return "x25519_keygen";
    case OpKind::kGzip:
      return "gzip";
  }
  return "unknown";
}

}  // namespace accelgate::offload
