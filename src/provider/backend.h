#pragma once

// Backend: OpenSSL's default provider in a private library context, shared by every instance of
// the accelgate provider in the process (the server's built-in one, or the module). Our key
// managers, signatures, asymmetric ciphers and key exchanges forward each call to the default
// implementation found here, by function id, with the default provider's context and the default
// key or context that ours wraps. TLS13-KDF is ours (tls13_kdf.cc) and uses the context only for
// digests it does not compute itself.
//
// acquire() creates it on the first provider init and release() frees it after the last
// teardown; between the two, get() is valid on every thread. Everything here is read-only after
// acquire() except the standalone driver, which locks.

#include <openssl/core.h>
#include <openssl/core_dispatch.h>

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "accelgate/common/result.h"

namespace accelgate::provider {

class StandaloneDriver;

// Algorithm is the key type an implementation of ours belongs to; it is also the template
// parameter of the functions that OpenSSL calls without a context (one entry point each).
enum class Algorithm : uint8_t { kRsa, kEc, kX25519 };
inline constexpr size_t kAlgorithmCount = 3;

// Operation is the kind of implementation (OSSL_OP_KEYMGMT, ...) we proxy.
enum class Operation : uint8_t { kKeymgmt, kSignature, kAsymCipher, kKeyexch };
inline constexpr size_t kOperationCount = 4;

// kMaxFunctionId bounds the function ids we resolve (OSSL_FUNC_KEYMGMT_DUP is 44).
inline constexpr int kMaxFunctionId = 64;

class Backend {
 public:
  // acquire returns the process's backend, creating it on first use; |crypto| is the provider's
  // `crypto` parameter from the configuration ("" when not given), kept by the first caller.
  static Result<Backend*> acquire(const std::string& crypto);
  // release drops one acquire(); the last one stops the standalone driver and frees everything.
  static void release();
  // get is the live backend (between acquire and release).
  static Backend& get();

  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  OSSL_LIB_CTX* libctx() const { return libctx_; }
  void* default_provctx() const { return default_provctx_; }
  OSSL_PROVIDER* default_provider() const { return default_provider_; }

  // has says whether the default provider implements function |id| of |op| for |alg|.
  bool has(Operation op, Algorithm alg, int id) const {
    return id > 0 && id < kMaxFunctionId && functions_[index(op)][index(alg)][id] != nullptr;
  }
  // fn is the default implementation of function |id| (null when it has none); Fn is the
  // OSSL_FUNC_*_fn type of that id.
  template <typename Fn>
  Fn* fn(Operation op, Algorithm alg, int id) const {
    return reinterpret_cast<Fn*>(functions_[index(op)][index(alg)][id]);
  }

  // algorithms is our OSSL_ALGORITHM array for |operation_id| (null for other operations).
  const OSSL_ALGORITHM* algorithms(int operation_id) const;

  // driver is the standalone driver (started on first use), or null when it cannot run; then
  // ops are computed inline. Thread-safe.
  StandaloneDriver* driver();

 private:
  struct Offer {
    Operation op;
    Algorithm alg;
    const char* name;  // the first name of the default provider's entry
  };
  static constexpr size_t index(Operation op) { return static_cast<size_t>(op); }
  static constexpr size_t index(Algorithm alg) { return static_cast<size_t>(alg); }

  Backend() = default;
  Status init();

  OSSL_LIB_CTX* libctx_ = nullptr;
  OSSL_PROVIDER* default_provider_ = nullptr;
  void* default_provctx_ = nullptr;
  std::string crypto_;
  using Function = void (*)();
  std::array<std::array<std::array<Function, kMaxFunctionId>, kAlgorithmCount>, kOperationCount>
      functions_{};
  // Ours, per operation: the names and descriptions copied from the default entries, the
  // dispatch tables, and the OSSL_ALGORITHM arrays (null-terminated) pointing into them.
  std::vector<std::unique_ptr<std::string>> strings_;
  std::vector<std::vector<OSSL_DISPATCH>> dispatch_tables_;
  std::array<std::vector<OSSL_ALGORITHM>, kOperationCount> algorithms_;

  std::mutex driver_mutex_;
  bool driver_tried_ = false;
  std::unique_ptr<StandaloneDriver> driver_;
};

// The dispatch tables of our implementations, one builder per operation (keymgmt.cc,
// signature.cc, asym_cipher.cc, keyexch.cc); each lists only the functions the default provider
// has for |alg| (see Backend::has).
std::vector<OSSL_DISPATCH> keymgmt_dispatch(const Backend& backend, Algorithm alg);
std::vector<OSSL_DISPATCH> signature_dispatch(const Backend& backend, Algorithm alg);
std::vector<OSSL_DISPATCH> asym_cipher_dispatch(const Backend& backend, Algorithm alg);
std::vector<OSSL_DISPATCH> keyexch_dispatch(const Backend& backend, Algorithm alg);

// kdf_algorithms is our OSSL_ALGORITHM array for OSSL_OP_KDF (tls13_kdf.cc): TLS13-KDF, computed
// by us rather than forwarded.
const OSSL_ALGORITHM* kdf_algorithms();
// tls13_kdf_delegations counts the TLS13-KDF derivations passed to the default provider (digests
// other than SHA-2, or a digest given with properties); SHA-2 ones are ours.
uint64_t tls13_kdf_delegations();

// DispatchEntry is one candidate function of ours: added to a table when the default provider
// has |id| (or when |always| is set: functions we implement ourselves).
struct DispatchEntry {
  int id;
  void (*function)();
  bool always = false;
};
std::vector<OSSL_DISPATCH> build_dispatch(const Backend& backend, Operation op, Algorithm alg,
                                          std::initializer_list<DispatchEntry> entries);

// as_function turns a function pointer into the type OSSL_DISPATCH holds.
template <typename F>
void (*as_function(F* f))() {
  return reinterpret_cast<void (*)()>(f);
}

}  // namespace accelgate::provider
