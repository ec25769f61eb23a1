#pragma once

// Op: one unit of offloadable work (DESIGN.md, "The async contract"). The provider creates an op
// for a private-key operation of a TLS handshake (or of any application that loads the module),
// the compress layer one for a response body to gzip (OpKind::kGzip, on a dispatcher of its own,
// so the `crypto` setting never decides where compression runs), the Dispatcher routes it through
// an engine chain, and its completion runs on the submitting loop's thread.
//
// An op is shared (OpRef): the dispatcher, the engine working on it and the code waiting for it
// each hold a reference, so an engine that completes an op late (after its deadline, after a
// fallback, after the connection that wanted it closed) writes into memory that is still alive,
// and the dispatcher discards that completion.

#include <openssl/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

namespace accelgate::offload {

using Clock = std::chrono::steady_clock;

// OpKind is what an op computes. Names (op_kind_name) are the `op` label of the metrics.
enum class OpKind : uint8_t {
  kRsaSign,       // RSA private operation for a signature: PKCS#1 v1.5 or PSS (RFC 8017 §8)
  kRsaDecrypt,    // RSA private operation for decryption (TLS 1.2 RSA key exchange)
  kEcdsaSign,     // ECDSA signature, P-256 or P-384
  kEcdhDerive,    // ECDH shared secret, P-256 or P-384
  kX25519Derive,  // X25519 shared secret (RFC 7748)
  kX25519Keygen,  // X25519 key pair (the ephemeral key of a handshake)
  kGzip,          // a response body compressed into a gzip stream (src/compress; its own chain)
};
inline constexpr size_t kOpKindCount = 7;

// op_kind_name returns "rsa_sign", "rsa_decrypt", "ecdsa_sign", "ecdh_derive", "x25519_derive",
// "x25519_keygen" or "gzip".
std::string_view op_kind_name(OpKind kind);

// OpOutput is what an op produces: |bytes| (a signature, a plaintext, a shared secret) or, for
// a key generation, |key| (the key as OpenSSL's default provider holds it; its deleter frees
// it, so an output that is discarded cleans up after itself). An engine that computes a key
// generation's arithmetic itself (mb, kX25519Keygen) leaves |key| empty and gives the public key
// in |bytes| (see RawInputFn); the op's creator makes the key from its parts.
struct OpOutput {
  std::vector<uint8_t> bytes;
  std::shared_ptr<void> key;
};

// SoftwareFn computes an op with OpenSSL's default implementation. It must be safe to call from
// any thread and from two threads at once (an engine may still be computing an op whose
// deadline passed while the software fallback computes it again).
using SoftwareFn = std::function<bool(OpOutput* out)>;

// LibraryTarget is where a LibraryFn computes, for the `openssl` engine: a library context and
// property query (a card's provider), or an OpenSSL ENGINE (QAT_Engine, KAE; |engine| not null:
// the key is bound to the engine and the operation runs through it). Pointers are borrowed for
// the call.
struct LibraryTarget {
  OSSL_LIB_CTX* libctx = nullptr;
  const char* propq = nullptr;
  ENGINE* engine = nullptr;
};

// LibraryFn computes an op through another OpenSSL library context or an ENGINE: the key and the
// operation's parameters are handed to whatever |target| names. Same thread-safety as
// SoftwareFn; it may pause the calling ASYNC job.
using LibraryFn = std::function<bool(const LibraryTarget& target, OpOutput* out)>;

// OnceOnly runs a function the first time it is called, thread-safe, as std::call_once does,
// but without the futex wake that glibc's call_once makes (a system call) every time a flag is
// first run: an op's key and an ephemeral key's prepared form are each made once per op, so
// call_once cost every op a system call. A throwing function leaves it to run again, as
// call_once does.
class OnceOnly {
 public:
  template <typename F>
  void operator()(F&& f) {
    if (done_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(mutex_);
    if (done_.load(std::memory_order_relaxed)) return;
    std::forward<F>(f)();
    done_.store(true, std::memory_order_release);
  }

 private:
  std::atomic<bool> done_{false};
  std::mutex mutex_;
};

// PrivateKey is a private key in the form engines that do the arithmetic themselves (mb) need:
// an EVP_PKEY of OpenSSL's default provider, owned, to import the key's parts from and to
// recompute a result in software; and a slot where such an engine keeps its own prepared form of
// the key, made once per key rather than once per op. Shared, read-only, by every op of the key,
// on any thread.
class PrivateKey {
 public:
  explicit PrivateKey(EVP_PKEY* pkey) : pkey_(pkey) {}  // takes ownership of |pkey|
  ~PrivateKey();
  PrivateKey(const PrivateKey&) = delete;
  PrivateKey& operator=(const PrivateKey&) = delete;

  EVP_PKEY* pkey() const { return pkey_; }

  // PrepareFn makes an engine's form of a key, or returns null when the engine cannot use it.
  using PrepareFn = std::function<std::shared_ptr<const void>(EVP_PKEY* pkey)>;
  // prepared returns the engine's form of the key: the first call makes it with |make|, later
  // calls return the same (also a null answer). One slot: only the mb engine uses it.
  // Thread-safe.
  std::shared_ptr<const void> prepared(const PrepareFn& make) const;

 private:
  EVP_PKEY* pkey_;
  mutable OnceOnly once_;
  mutable std::shared_ptr<const void> prepared_;
};

// RawInputFn computes the input of an op's private-key arithmetic into |data|:
// - kRsaSign: the encoded message (EMSA-PKCS1-v1_5 or EMSA-PSS, RFC 8017 §9), as many bytes as
//   the modulus, so that the signature is data^d mod n (private_key() is the RSA key);
// - kEcdsaSign: the digest (private_key() is the EC key; the engine draws the nonce);
// - kEcdhDerive: the peer's public point, encoded (SEC 1 §2.3.3; private_key() is ours); the
//   output is the x-coordinate, as many bytes as the field;
// - kX25519Derive: 64 bytes, our raw private key then the peer's raw public key (RFC 7748), no
//   private_key(); the output is the 32-byte shared secret;
// - kX25519Keygen: the new raw private key, 32 bytes drawn by the op's creator, no
//   private_key(); the output is the raw public key in |bytes| (OpOutput). An engine may
//   instead give a key pair it made itself, without asking for the raw input: 64 bytes, the
//   private key (drawn from OpenSSL's private DRBG and clamped, RFC 7748 §5) then the public
//   key; the op's creator then wipes them once it made the key.
// Secret inputs are the engine's to wipe once used. Called on the submitting loop's thread, at
// most once per submission; false when it cannot be made (the engine then passes the op on).
using RawInputFn = std::function<bool(std::vector<uint8_t>* data)>;

// kX25519Bytes is the length of a raw X25519 key, private or public (RFC 7748 §5), and of a
// shared secret.
inline constexpr size_t kX25519Bytes = 32;

// clamp_x25519_private clamps a 32-byte raw X25519 private key in place as RFC 7748 §5's
// decodeScalar25519 does, which is how OpenSSL's key generation stores it: the raw private key
// of a kX25519Keygen op, whether its creator or the engine drew it, is clamped this way.
inline void clamp_x25519_private(uint8_t* key) {
  key[0] &= 248;
  key[31] &= 127;
  key[31] |= 64;
}

// PrivateKeyFn returns an op's PrivateKey, made only when an engine asks (an ephemeral ECDH key
// is imported only if an engine will compute with it).
using PrivateKeyFn = std::function<std::shared_ptr<const PrivateKey>()>;

class Dispatcher;

class Op {
 public:
  // Completion runs once, on the thread of the loop that submitted the op.
  using Completion = std::function<void(Op& op)>;

  // |key_bits| is the key size (2048 for RSA-2048, 256 for P-256 and X25519): engines that
  // accelerate only some sizes route on it.
  Op(OpKind kind, int key_bits, SoftwareFn software)
      : kind_(kind), key_bits_(key_bits), software_(std::move(software)) {}
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  OpKind kind() const { return kind_; }
  int key_bits() const { return key_bits_; }

  // compute_in_software runs OpenSSL's default implementation into |out| (thread-safe, see
  // SoftwareFn). Every engine may use it: sw inline, pool on its threads, emu on its device.
  bool compute_in_software(OpOutput* out) const { return software_(out); }

  // compute_with_library runs the op through |target| (see LibraryFn); false when the op's
  // creator gave no LibraryFn.
  bool compute_with_library(const LibraryTarget& target, OpOutput* out) const {
    return library_ && library_(target, out);
  }
  bool has_library_fn() const { return static_cast<bool>(library_); }
  // set_library_fn is called by the op's creator before submitting.
  void set_library_fn(LibraryFn fn) { library_ = std::move(fn); }

  // set_private_key gives the op its key (made on first use by |key|; empty for an op without
  // one) and raw input, for engines that compute the arithmetic themselves (the creator calls
  // it before submitting, when it can describe the op that way).
  void set_private_key(PrivateKeyFn key, RawInputFn raw_input) {
    key_fn_ = std::move(key);
    raw_input_ = std::move(raw_input);
  }
  void set_private_key(std::shared_ptr<const PrivateKey> key, RawInputFn raw_input) {
    set_private_key(PrivateKeyFn([key = std::move(key)] { return key; }), std::move(raw_input));
  }
  // private_key is null for an op without one. The first call makes it; thread-safe.
  const std::shared_ptr<const PrivateKey>& private_key() const {
    key_once_([this] {
      if (key_fn_) key_ = key_fn_();
    });
    return key_;
  }
  // raw_input computes the raw input (see RawInputFn); false when the op has none.
  bool raw_input(std::vector<uint8_t>* data) const { return raw_input_ && raw_input_(data); }
  bool has_raw_input() const { return static_cast<bool>(raw_input_); }

  // set_on_complete sets the callback the dispatcher calls when the op has ended (set it before
  // submitting).
  void set_on_complete(Completion completion) { on_complete_ = std::move(completion); }

  // done says the op has ended; ok() whether it produced an output; engine() names the engine
  // that produced it. Read on the submitting thread only.
  bool done() const { return done_; }
  bool ok() const { return ok_; }
  std::string_view engine() const { return engine_; }
  OpOutput& output() { return output_; }

 private:
  friend class Dispatcher;

  const OpKind kind_;
  const int key_bits_;
  const SoftwareFn software_;
  LibraryFn library_;
  PrivateKeyFn key_fn_;
  mutable OnceOnly key_once_;
  mutable std::shared_ptr<const PrivateKey> key_;
  RawInputFn raw_input_;
  Completion on_complete_;

  // Owned by the dispatcher, on the submitting thread.
  bool done_ = false;
  bool ok_ = false;
  std::string_view engine_;
  OpOutput output_;
  uint64_t ticket_ = 0;      // the current attempt; a completion with another ticket is stale
  size_t chain_pos_ = 0;     // index of the engine of the current attempt in the chain
  bool fell_back_ = false;   // an earlier engine of the chain did not serve it
  uint32_t generation_ = 0;  // the dispatcher chain the op started on (see Dispatcher::build)
  Clock::time_point attempt_start_{};
  Clock::time_point deadline_{};
};

using OpRef = std::shared_ptr<Op>;

}  // namespace accelgate::offload
