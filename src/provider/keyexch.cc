// Our ECDH and X25519 key exchanges. Deriving a secret inside an async job is an offload op
// (kEcdhDerive, kX25519Derive); the rest forwards to the default provider.

#include <openssl/core_names.h>
#include <openssl/params.h>

#include <algorithm>

#include "key_data.h"
#include "library_op.h"
#include "private_op.h"
#include "run_op.h"
#include "stats.h"

namespace accelgate::provider {
namespace {

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
  if (ok == 1) exchange_ctx(vctx)->peer = static_cast<KeyData*>(peer)->inner;
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
// op then has none, and an engine that needs one passes it on).
template <Algorithm A>
offload::LibraryFn derive_library_fn(ExchangeCtx* ctx, size_t outlen) {
  if (ctx->key == nullptr || ctx->peer == nullptr || uses_kdf<A>(ctx->inner)) return {};
  auto recipe = std::make_shared<LibraryRecipe>();
  recipe->operation = LibraryRecipe::Operation::kDerive;
  recipe->alg = A;
  recipe->key = key_export(ctx->key);
  recipe->peer = ctx->peer;
  recipe->outsize = outlen;
  return library_fn(std::move(recipe));
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
  return offload_to_buffer(
      kKind, ctx->bits, ctx->inner, def<A, OSSL_FUNC_keyexch_dupctx_fn>(OSSL_FUNC_KEYEXCH_DUPCTX),
      def<A, OSSL_FUNC_keyexch_freectx_fn>(OSSL_FUNC_KEYEXCH_FREECTX), std::move(compute),
      derive_library_fn<A>(ctx, outlen), secret, secretlen, outlen);
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
