#pragma once

// Library ops: how a private operation of ours is redone in another library context, the
// LibraryFn of its op (op.h). The `openssl` engine calls it inside an ASYNC job of its own with
// its library context (a card's provider and the default one) and property query.
//
// Everything the function needs is captured when the op is made, on the caller's thread: the
// operation's parameters (a snapshot of the caller's default context, see the *_params
// functions of signature.cc, asym_cipher.cc and keyexch.cc), the input, and shared handles on
// the keys. Nothing in it refers to the caller's context, which may be gone when the function
// runs (an op completed late, after a fallback).
//
// Keys travel as parameters: the default provider's key manager exports them and
// EVP_PKEY_fromdata imports them into the other context. A private key is exported once per
// KeyData, the first time a LibraryFn of it runs (KeyExport), not once per op: exporting an RSA
// key costs about as much as a few handshakes' worth of allocations, and no export happens at
// all while no engine asks for a LibraryFn. A peer key (ECDH, X25519) is new in every
// handshake and exported public only, when the function runs.

#include <openssl/core.h>
#include <openssl/param_build.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "accelgate/offload/op.h"
#include "backend.h"
#include "key_data.h"

namespace accelgate::provider {

// ParamsClearFree frees an OSSL_PARAM array allocated by OpenSSL (OSSL_PARAM_dup, _merge,
// OSSL_PARAM_BLD_to_param) after cleansing every value in it: arrays of ours may hold private
// keys, and OpenSSL 3.0 has no OSSL_PARAM_clear_free.
struct ParamsClearFree {
  void operator()(OSSL_PARAM* params) const;
};
using OwnedParams = std::unique_ptr<OSSL_PARAM, ParamsClearFree>;

// ParamsBuilder builds an OwnedParams array (OSSL_PARAM_BLD): values are copied by build().
class ParamsBuilder {
 public:
  ParamsBuilder();
  ~ParamsBuilder();
  ParamsBuilder(const ParamsBuilder&) = delete;
  ParamsBuilder& operator=(const ParamsBuilder&) = delete;

  // The push functions keep pointers to |value| until build().
  void push_utf8(const char* key, const char* value);
  void push_int(const char* key, int value);
  void push_uint(const char* key, unsigned int value);
  void push_octets(const char* key, const void* value, size_t size);
  // build returns the array (possibly empty: only the end marker), or null when any push or
  // the build failed.
  OwnedParams build();

 private:
  OSSL_PARAM_BLD* bld_;
  bool ok_;
};

// export_key returns the default key |inner| of |alg| as parameters, with |selection|
// (OSSL_KEYMGMT_SELECT_*); null on failure.
OwnedParams export_key(Algorithm alg, const void* inner, int selection);

// KeyExport is a private key as parameters (OSSL_KEYMGMT_SELECT_ALL), exported on the first
// params() call and kept until the last op that holds it ends. Thread-safe.
class KeyExport {
 public:
  KeyExport(Algorithm alg, std::shared_ptr<void> inner) : alg_(alg), inner_(std::move(inner)) {}

  // params returns the exported key, or null when the export failed. Any thread.
  const OSSL_PARAM* params() const;

  // private_key returns the key as an EVP_PKEY of the default provider in the backend's
  // library context (imported from params() on the first call), for engines that do the
  // arithmetic themselves; null when it cannot be made. Any thread.
  std::shared_ptr<const offload::PrivateKey> private_key() const;
  // engine_key returns the key as a legacy EVP_PKEY bound to |engine| (engine_op.h), made on the
  // first call for that engine and kept with this export, so a server binds each certificate key
  // once, not once per handshake. The kept key holds a functional reference on the engine (it is
  // finished only after the key is gone). Null when it cannot be made (not cached: the next call
  // tries again). Any thread.
  std::shared_ptr<EVP_PKEY> engine_key(ENGINE* engine) const;

 private:
  const Algorithm alg_;
  const std::shared_ptr<void> inner_;  // the default key; kept alive for a late export
  mutable std::once_flag once_;
  mutable OwnedParams params_;
  mutable std::once_flag pkey_once_;
  mutable std::shared_ptr<const offload::PrivateKey> private_key_;
  // One entry per engine the key was used with (one, in practice). An ENGINE* cannot be reused
  // for another engine while an entry holds a reference on it.
  mutable std::mutex engine_keys_mutex_;
  mutable std::vector<std::pair<ENGINE*, std::shared_ptr<EVP_PKEY>>> engine_keys_;
};

// key_export returns |key|'s KeyExport, making it on first use (the export itself waits for
// params()). Thread-safe.
std::shared_ptr<KeyExport> key_export(KeyData* key);

// LibraryRecipe is what a LibraryFn redoes: |operation| with |key| (and |peer|), |params| given
// to the EVP_PKEY_*_init_ex call, over |input|, with an output cut to |outsize| as the
// software path does.
struct LibraryRecipe {
  enum class Operation : uint8_t { kSign, kDecrypt, kDerive };
  Operation operation = Operation::kSign;
  Algorithm alg = Algorithm::kRsa;
  std::shared_ptr<KeyExport> key;
  // peer is the default provider's peer key (kDerive), exported public only when the function
  // runs; shared so that it outlives the caller's context.
  std::shared_ptr<void> peer;
  OwnedParams params;          // may be null: none
  std::vector<uint8_t> input;  // kSign: the digest; kDecrypt: the ciphertext; kDerive: none
  size_t outsize = 0;
};

// library_fn makes the LibraryFn of |recipe|. For a target with a library context only, it
// imports the key (and the peer) into the context with the target's property query, runs the
// operation there and returns the bytes; for a target with an ENGINE it runs the operation
// through the engine (run_engine_op, engine_op.h). It returns false on any failure (the
// dispatcher then falls back), leaving OpenSSL's errors on the calling thread's queue.
offload::LibraryFn library_fn(std::shared_ptr<const LibraryRecipe> recipe);

// output_twice runs |step| (an EVP call with an output buffer and length) to learn the output
// size, cuts it to |outsize| (as the software path of each operation does) and runs it again
// into |bytes|.
template <typename Step>
bool output_twice(Step step, size_t outsize, std::vector<uint8_t>* bytes) {
  size_t len = 0;
  if (step(nullptr, &len) != 1) return false;
  len = std::min(len, outsize);
  bytes->resize(len);
  if (step(bytes->data(), &len) != 1) return false;
  bytes->resize(len);
  return true;
}

}  // namespace accelgate::provider
