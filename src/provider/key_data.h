#pragma once

// KeyData: our key object, a wrapper around the default provider's key object of the same
// algorithm. Signature, asymmetric cipher and key exchange contexts of ours receive it (OpenSSL
// pairs an operation with the key manager of the same provider) and unwrap it.

#include <atomic>
#include <memory>
#include <mutex>

#include "backend.h"

namespace accelgate::provider {

class KeyExport;

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
};

// unwrap returns the default key inside |key| (null for null).
inline void* unwrap(const void* key) {
  return key == nullptr ? nullptr : static_cast<const KeyData*>(key)->inner.get();
}

// key_bits returns the size of |key| in bits, as an op's key_bits (0 when unknown).
int key_bits(KeyData* key);

}  // namespace accelgate::provider
