// Our ECDH and X25519 key exchanges. Deriving a secret inside an async job is an offload op
// (kEcdhDerive, kX25519Derive); the rest forwards to the default provider. Such an op also
// carries the raw form of the derivation (op.h), made only if an engine asks for it.

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>

#include <algorithm>

#include "key_data.h"
#include "library_op.h"
#include "private_op.h"
#include "run_op.h"
#include "stats.h"

namespace accelgate::provider {
namespace {

using offload::kX25519Bytes;  // op.h

template <Algorithm A, typename Fn>
Fn* def(int id) {
  return Backend::get().fn<Fn>(Operation::kKeyexch, A, id);
}

struct ExchangeCtx {
  void* inner = nullptr;  // the default key exchange context
  int bits = 0;           // of our key
  // key is our key (the EVP_PKEY_CTX that owns this context holds it); peer the default key
  // inside the last peer, shared so that a LibraryFn can export it after the caller is done.
  KeyData* key = nullptr;
  std::shared_ptr<void> peer;
  std::shared_ptr<PublicCache> peer_public;  // the last peer's
};

ExchangeCtx* exchange_ctx(void* ctx) { return static_cast<ExchangeCtx*>(ctx); }
void* inner_of(void* ctx) { return ctx == nullptr ? nullptr : exchange_ctx(ctx)->inner; }

template <Algorithm A>
void* kx_newctx(void*) {
  void* inner = def<A, OSSL_FUNC_keyexch_newctx_fn>(OSSL_FUNC_KEYEXCH_NEWCTX)(
      Backend::get().default_provctx());
  if (inner == nullptr) return nullptr;
  auto* ctx = new ExchangeCtx();
  ctx->inner = inner;
  return ctx;
}

template <Algorithm A>
void kx_freectx(void* vctx) {
  ExchangeCtx* ctx = exchange_ctx(vctx);
  if (ctx == nullptr) return;
  def<A, OSSL_FUNC_keyexch_freectx_fn>(OSSL_FUNC_KEYEXCH_FREECTX)(ctx->inner);
  delete ctx;
}

template <Algorithm A>
void* kx_dupctx(void* vctx) {
  ExchangeCtx* from = exchange_ctx(vctx);
  void* inner = def<A, OSSL_FUNC_keyexch_dupctx_fn>(OSSL_FUNC_KEYEXCH_DUPCTX)(from->inner);
  if (inner == nullptr) return nullptr;
  auto* to = new ExchangeCtx(*from);
  to->inner = inner;
  return to;
}

template <Algorithm A>
int kx_init(void* vctx, void* key, const OSSL_PARAM params[]) {
  ExchangeCtx* ctx = exchange_ctx(vctx);
  if (key != nullptr) {
    // X25519 keys count as 256 bits (op.h); the default provider says 253.
    ctx->key = static_cast<KeyData*>(key);
    ctx->bits = A == Algorithm::kX25519 ? 256 : key_bits(ctx->key);
  }
  return def<A, OSSL_FUNC_keyexch_init_fn>(OSSL_FUNC_KEYEXCH_INIT)(ctx->inner, unwrap(key), params);
}

template <Algorithm A>
int kx_set_peer(void* vctx, void* peer) {
  int ok = def<A, OSSL_FUNC_keyexch_set_peer_fn>(OSSL_FUNC_KEYEXCH_SET_PEER)(inner_of(vctx),
                                                                             unwrap(peer));
  if (ok == 1) {
    exchange_ctx(vctx)->peer = static_cast<KeyData*>(peer)->inner;
    exchange_ctx(vctx)->peer_public = static_cast<KeyData*>(peer)->public_cache;
  }
  return ok;
}

// kNameSize bounds the KDF name read from a context.
constexpr size_t kNameSize = 64;

// uses_kdf says whether the default exchange context |inner| derives through a KDF (ECDH with
// X9.63), or cannot tell. TLS never sets one (RFC 8446 §7.4.2: the raw shared secret), so a
// LibraryFn does not carry KDF parameters and is not made for such a context.
template <Algorithm A>
bool uses_kdf(void* inner) {
  auto* get = def<A, OSSL_FUNC_keyexch_get_ctx_params_fn>(OSSL_FUNC_KEYEXCH_GET_CTX_PARAMS);
  if (get == nullptr) return A != Algorithm::kX25519;  // X25519 has no KDF parameters at all
  char kdf[kNameSize] = "";
  OSSL_PARAM want[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_EXCHANGE_PARAM_KDF_TYPE, kdf, sizeof(kdf)),
      OSSL_PARAM_construct_end()};
  if (get(inner, want) != 1) return A != Algorithm::kX25519;
  return kdf[0] != '\0';
}

// derive_library_fn is the LibraryFn of a derivation on |ctx| (empty when it cannot be made: the
// op then has none, and an engine that needs one passes it on; and when no engine would use it).
template <Algorithm A>
offload::LibraryFn derive_library_fn(ExchangeCtx* ctx, size_t outlen, bool kdf) {
  if (ctx->key == nullptr || ctx->peer == nullptr || kdf || !library_fn_wanted()) return {};
  auto recipe = std::make_shared<LibraryRecipe>();
  recipe->operation = LibraryRecipe::Operation::kDerive;
  recipe->alg = A;
  recipe->key = key_export(ctx->key);
  recipe->peer = ctx->peer;
  recipe->outsize = outlen;
  return library_fn(std::move(recipe));
}

// key_octets reads the octet-string parameter |name| of the default key |inner| into |out|
// (at most |max| bytes).
template <Algorithm A>
bool key_octets(void* inner, const char* name, size_t max, std::vector<uint8_t>* out) {
  auto* get = Backend::get().fn<OSSL_FUNC_keymgmt_get_params_fn>(Operation::kKeymgmt, A,
                                                                 OSSL_FUNC_KEYMGMT_GET_PARAMS);
  if (get == nullptr || inner == nullptr) return false;
  out->resize(max);
  OSSL_PARAM want[] = {OSSL_PARAM_construct_octet_string(name, out->data(), max),
                       OSSL_PARAM_construct_end()};
  if (get(inner, want) != 1 || !OSSL_PARAM_modified(&want[0]) || want[0].return_size > max) {
    OPENSSL_cleanse(out->data(), out->size());
    out->clear();
    return false;
  }
  out->resize(want[0].return_size);
  return true;
}

// kMaxPointBytes bounds an encoded P-384 point (04 || x || y).
constexpr size_t kMaxPointBytes = 1 + 2 * 48;

// set_raw_derive gives a derivation's op its raw form (op.h, RawInputFn): for X25519 our raw
// private key and the peer's raw public key; for ECDH our key (imported only if an engine asks)
// and the peer's encoded point. Not for a KDF's derivation, nor for an output shorter than the
// secret (the default provider truncates; the raw form does not).
template <Algorithm A>
void set_raw_derive(offload::Op* op, ExchangeCtx* ctx, size_t outlen, bool kdf) {
  if (ctx->key == nullptr || ctx->peer == nullptr || kdf) return;
  std::shared_ptr<void> ours = ctx->key->inner;
  std::shared_ptr<void> peer = ctx->peer;
  if constexpr (A == Algorithm::kX25519) {
    if (outlen < kX25519Bytes) return;
    op->set_private_key(offload::PrivateKeyFn{}, [ours, peer](std::vector<uint8_t>* data) {
      std::vector<uint8_t> priv;
      std::vector<uint8_t> pub;
      bool ok = key_octets<A>(ours.get(), OSSL_PKEY_PARAM_PRIV_KEY, kX25519Bytes, &priv) &&
                priv.size() == kX25519Bytes &&
                key_octets<A>(peer.get(), OSSL_PKEY_PARAM_PUB_KEY, kX25519Bytes, &pub) &&
                pub.size() == kX25519Bytes;
      if (ok) {
        data->assign(priv.begin(), priv.end());
        data->insert(data->end(), pub.begin(), pub.end());
      }
      OPENSSL_cleanse(priv.data(), priv.size());
      return ok;
    });
  } else {
    if (outlen < static_cast<size_t>((ctx->bits + 7) / 8)) return;
    std::shared_ptr<KeyExport> exported = key_export(ctx->key);
    op->set_private_key([exported] { return exported->private_key(); },
                        [peer, cache = ctx->peer_public](std::vector<uint8_t>* data) {
                          std::lock_guard lock(cache->mutex);
                          if (cache->encoded.empty() &&
                              !key_octets<A>(peer.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY,
                                             kMaxPointBytes, &cache->encoded)) {
                            return false;
                          }
                          *data = cache->encoded;
                          return true;
                        });
  }
}

template <Algorithm A>
int kx_derive(void* vctx, unsigned char* secret, size_t* secretlen, size_t outlen) {
  constexpr offload::OpKind kKind =
      A == Algorithm::kX25519 ? offload::OpKind::kX25519Derive : offload::OpKind::kEcdhDerive;
  ExchangeCtx* ctx = exchange_ctx(vctx);
  auto* derive = def<A, OSSL_FUNC_keyexch_derive_fn>(OSSL_FUNC_KEYEXCH_DERIVE);
  if (secret == nullptr || !in_async_job()) {
    if (secret != nullptr) count_op(kKind, "inline");
    return derive(ctx->inner, secret, secretlen, outlen);
  }
  auto compute = [derive, outlen](void* c, std::vector<uint8_t>* bytes) {
    size_t len = 0;
    if (derive(c, nullptr, &len, 0) != 1) return false;
    len = std::min(len, outlen);
    bytes->resize(len);
    if (derive(c, bytes->data(), &len, len) != 1) return false;
    bytes->resize(len);
    return true;
  };
  const bool kdf = uses_kdf<A>(ctx->inner);
  return offload_to_buffer(
      kKind, ctx->bits, ctx->inner, def<A, OSSL_FUNC_keyexch_dupctx_fn>(OSSL_FUNC_KEYEXCH_DUPCTX),
      def<A, OSSL_FUNC_keyexch_freectx_fn>(OSSL_FUNC_KEYEXCH_FREECTX), std::move(compute),
      derive_library_fn<A>(ctx, outlen, kdf), secret, secretlen, outlen,
      [ctx, outlen, kdf](offload::Op* op) { set_raw_derive<A>(op, ctx, outlen, kdf); });
}

template <Algorithm A>
int kx_get_ctx_params(void* vctx, OSSL_PARAM params[]) {
  return def<A, OSSL_FUNC_keyexch_get_ctx_params_fn>(OSSL_FUNC_KEYEXCH_GET_CTX_PARAMS)(
      inner_of(vctx), params);
}

template <Algorithm A>
const OSSL_PARAM* kx_gettable_ctx_params(void* vctx, void*) {
  return def<A, OSSL_FUNC_keyexch_gettable_ctx_params_fn>(OSSL_FUNC_KEYEXCH_GETTABLE_CTX_PARAMS)(
      inner_of(vctx), Backend::get().default_provctx());
}

template <Algorithm A>
int kx_set_ctx_params(void* vctx, const OSSL_PARAM params[]) {
  return def<A, OSSL_FUNC_keyexch_set_ctx_params_fn>(OSSL_FUNC_KEYEXCH_SET_CTX_PARAMS)(
      inner_of(vctx), params);
}

template <Algorithm A>
const OSSL_PARAM* kx_settable_ctx_params(void* vctx, void*) {
  return def<A, OSSL_FUNC_keyexch_settable_ctx_params_fn>(OSSL_FUNC_KEYEXCH_SETTABLE_CTX_PARAMS)(
      inner_of(vctx), Backend::get().default_provctx());
}

template <Algorithm A>
std::vector<OSSL_DISPATCH> dispatch(const Backend& backend) {
  return build_dispatch(
      backend, Operation::kKeyexch, A,
      {
          {OSSL_FUNC_KEYEXCH_NEWCTX, as_function(kx_newctx<A>)},
          {OSSL_FUNC_KEYEXCH_FREECTX, as_function(kx_freectx<A>)},
          {OSSL_FUNC_KEYEXCH_DUPCTX, as_function(kx_dupctx<A>)},
          {OSSL_FUNC_KEYEXCH_INIT, as_function(kx_init<A>)},
          {OSSL_FUNC_KEYEXCH_SET_PEER, as_function(kx_set_peer<A>)},
          {OSSL_FUNC_KEYEXCH_DERIVE, as_function(kx_derive<A>)},
          {OSSL_FUNC_KEYEXCH_GET_CTX_PARAMS, as_function(kx_get_ctx_params<A>)},
          {OSSL_FUNC_KEYEXCH_GETTABLE_CTX_PARAMS, as_function(kx_gettable_ctx_params<A>)},
          {OSSL_FUNC_KEYEXCH_SET_CTX_PARAMS, as_function(kx_set_ctx_params<A>)},
          {OSSL_FUNC_KEYEXCH_SETTABLE_CTX_PARAMS, as_function(kx_settable_ctx_params<A>)},
      });
}

}  // namespace

std::vector<OSSL_DISPATCH> keyexch_dispatch(const Backend& backend, Algorithm alg) {
  switch (alg) {
    case Algorithm::kEc:
      return dispatch<Algorithm::kEc>(backend);
    case Algorithm::kX25519:
      return dispatch<Algorithm::kX25519>(backend);
    case Algorithm::kRsa:
      break;
  }
  return {{0, nullptr}};
}

}  // namespace accelgate::provider
