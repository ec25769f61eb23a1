// ec_batch.cc: the EC batch entry points (ec_batch.h). Placeholder while the kernels are written:
// every lane reports neither ok nor a reason, so openssl_ec.h's wrappers compute it in software.

#include "accelgate/crypto/mb/ec_batch.h"

namespace accelgate::crypto::mb {

X25519Outcome x25519_batch(Backend /*backend*/, std::span<const X25519Lane> /*lanes*/,
                           const EcFaultInjection* /*fault*/) {
  return {};
}

EcOutcome ecdsa_sign_batch(Backend /*backend*/, EcCurve /*curve*/,
                           std::span<const EcdsaLane> /*lanes*/,
                           const EcFaultInjection* /*fault*/) {
  return {};
}

EcOutcome ecdh_batch(Backend /*backend*/, EcCurve /*curve*/, std::span<const EcdhLane> /*lanes*/,
                     const EcFaultInjection* /*fault*/) {
  return {};
}

}  // namespace accelgate::crypto::mb
