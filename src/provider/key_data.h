#pragma once

// KeyData: our key object, a wrapper around the default provider's key object of the same
// algorithm. Signature, asymmetric cipher and key exchange contexts of ours receive it (OpenSSL
// pairs an operation with the key manager of the same provider) and unwrap it.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "backend.h"

namespace accelgate::provider {

class KeyExport;

// PublicCache holds a key's public point, encoded, once it is known: uncompressed as the import
// or set_params that gave it (a TLS peer's key share arrives that way), or as the default key
// gives it when first read. OpenSSL 3.0's EC get_params exports the whole group with the point:
// about 10 us, as much as mb's share of a P-256 derivation. Guarded by mutex; empty while not
// known.
struct PublicCache {
  std::mutex mutex;
  std::vector<uint8_t> encoded;
};

struct KeyData {
  KeyData(Algorithm a, std::shared_ptr<void> k) : alg(a), inner(std::move(k)) {}

  const Algorithm alg;
  // inner is the default provider's key; its deleter calls the default keymgmt's free.
  std::shared_ptr<void> inner;
  // bits caches OSSL_PKEY_PARAM_BITS (-1: not read yet); reset when the key changes.
  std::atomic<int> bits{-1};
  // exported is the key as parameters for LibraryFns (library_op.h, key_export()): made on
  // first use, shared with the ops that need it, dropped (not changed) when the key changes.
  // Guarded by export_mutex.
  std::mutex export_mutex;
  std::shared_ptr<KeyExport> exported;
  // public_cache is shared with the contexts and ops that read it, which may outlive the key
  // object (the default key inside stays with them); its contents follow the key's changes.
  const std::shared_ptr<PublicCache> public_cache = std::make_shared<PublicCache>();
};

// unwrap returns the default key inside |key| (null for null).
inline void* unwrap(const void* key) {
  return key == nullptr ? nullptr : static_cast<const KeyData*>(key)->inner.get();
}

// key_changed forgets what was derived from |key| (its bits, KeyExport and PublicCache); call it
// when the key changes (import, set_params). |encoded_public|, when not empty, is the new
// encoded public key, given by the caller. Ops already made keep the KeyExport they hold.
void key_changed(KeyData* key, std::vector<uint8_t> encoded_public = {});

// key_bits returns the size of |key| in bits, as an op's key_bits (0 when unknown).
int key_bits(KeyData* key);

}  // namespace accelgate::provider
