// Our RSA asymmetric cipher. Decryption inside an async job is an offload op (kRsaDecrypt: the
// TLS 1.2 RSA key exchange); encryption and parameters forward to the default provider.

#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/rsa.h>

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
  return Backend::get().fn<Fn>(Operation::kAsymCipher, A, id);
}

struct CipherCtx {
  void* inner = nullptr;  // the default asymmetric cipher context
  int bits = 0;           // of the key given to the last init
  // key is the key given to the last init; the EVP_PKEY_CTX that owns this context holds it.
  KeyData* key = nullptr;
};

CipherCtx* cipher_ctx(void* ctx) { return static_cast<CipherCtx*>(ctx); }
void* inner_of(void* ctx) { return ctx == nullptr ? nullptr : cipher_ctx(ctx)->inner; }

template <Algorithm A>
void* ac_newctx(void*) {
  void* inner = def<A, OSSL_FUNC_asym_cipher_newctx_fn>(OSSL_FUNC_ASYM_CIPHER_NEWCTX)(
      Backend::get().default_provctx());
  if (inner == nullptr) return nullptr;
  auto* ctx = new CipherCtx();
  ctx->inner = inner;
  return ctx;
}

template <Algorithm A>
void ac_freectx(void* vctx) {
  CipherCtx* ctx = cipher_ctx(vctx);
  if (ctx == nullptr) return;
  def<A, OSSL_FUNC_asym_cipher_freectx_fn>(OSSL_FUNC_ASYM_CIPHER_FREECTX)(ctx->inner);
  delete ctx;
}

template <Algorithm A>
void* ac_dupctx(void* vctx) {
  CipherCtx* from = cipher_ctx(vctx);
  void* inner = def<A, OSSL_FUNC_asym_cipher_dupctx_fn>(OSSL_FUNC_ASYM_CIPHER_DUPCTX)(from->inner);
  if (inner == nullptr) return nullptr;
  auto* to = new CipherCtx(*from);
  to->inner = inner;
  return to;
}

void remember_key(CipherCtx* ctx, void* key) {
  if (key == nullptr) return;
  ctx->key = static_cast<KeyData*>(key);
  ctx->bits = key_bits(ctx->key);
}

// kNameSize bounds the digest names read from a context.
constexpr size_t kNameSize = 64;

// decrypt_params snapshots the parameters of the default RSA cipher context |inner| that a
// decryption depends on, as EVP_PKEY_decrypt_init_ex takes them: the padding (as a number: the
// TLS padding of the RSA key exchange has no name), with OAEP its digest, MGF1 digest and label,
// and the TLS versions the RSA key exchange compares (RFC 5246 §7.4.7.1). Null on failure.
template <Algorithm A>
OwnedParams decrypt_params(void* inner) {
  auto* get = def<A, OSSL_FUNC_asym_cipher_get_ctx_params_fn>(OSSL_FUNC_ASYM_CIPHER_GET_CTX_PARAMS);
  if (get == nullptr) return nullptr;
  int pad = 0;
  char digest[kNameSize] = "";
  char mgf1[kNameSize] = "";
  void* label = nullptr;
  unsigned int client_version = 0;
  unsigned int negotiated_version = 0;
  OSSL_PARAM want[] = {
      OSSL_PARAM_construct_int(OSSL_ASYM_CIPHER_PARAM_PAD_MODE, &pad),
      OSSL_PARAM_construct_utf8_string(OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, digest, sizeof(digest)),
      OSSL_PARAM_construct_utf8_string(OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, mgf1, sizeof(mgf1)),
      OSSL_PARAM_construct_octet_ptr(OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, &label, 0),
      OSSL_PARAM_construct_uint(OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION, &client_version),
      OSSL_PARAM_construct_uint(OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION, &negotiated_version),
      OSSL_PARAM_construct_end()};
  if (get(inner, want) != 1 || OSSL_PARAM_modified(&want[0]) != 1) return nullptr;
  ParamsBuilder params;
  params.push_int(OSSL_ASYM_CIPHER_PARAM_PAD_MODE, pad);
  if (pad == RSA_PKCS1_OAEP_PADDING) {
    if (digest[0] != '\0') params.push_utf8(OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST, digest);
    if (mgf1[0] != '\0') params.push_utf8(OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST, mgf1);
    // The label points into |inner|; the builder copies it before we return.
    if (label != nullptr && want[3].return_size > 0) {
      params.push_octets(OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL, label, want[3].return_size);
    }
  }
  if (client_version != 0) {
    params.push_uint(OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION, client_version);
  }
  if (negotiated_version != 0) {
    params.push_uint(OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION, negotiated_version);
  }
  return params.build();
}

// decrypt_library_fn is the LibraryFn of a decryption of |in| on |ctx| (empty when it cannot be
// made: the op then has none, and an engine that needs one passes it on; and when no engine
// would use it).
template <Algorithm A>
offload::LibraryFn decrypt_library_fn(CipherCtx* ctx, const unsigned char* in, size_t inlen,
                                      size_t outsize) {
  if (ctx->key == nullptr || !library_fn_wanted()) return {};
  auto recipe = std::make_shared<LibraryRecipe>();
  recipe->operation = LibraryRecipe::Operation::kDecrypt;
  recipe->alg = A;
  recipe->params = decrypt_params<A>(ctx->inner);
  if (recipe->params == nullptr) return {};
  recipe->key = key_export(ctx->key);
  recipe->input.assign(in, in + inlen);
  recipe->outsize = outsize;
  return library_fn(std::move(recipe));
}

template <Algorithm A>
int ac_encrypt_init(void* vctx, void* key, const OSSL_PARAM params[]) {
  CipherCtx* ctx = cipher_ctx(vctx);
  remember_key(ctx, key);
  return def<A, OSSL_FUNC_asym_cipher_encrypt_init_fn>(OSSL_FUNC_ASYM_CIPHER_ENCRYPT_INIT)(
      ctx->inner, unwrap(key), params);
}

template <Algorithm A>
int ac_encrypt(void* vctx, unsigned char* out, size_t* outlen, size_t outsize,
               const unsigned char* in, size_t inlen) {
  return def<A, OSSL_FUNC_asym_cipher_encrypt_fn>(OSSL_FUNC_ASYM_CIPHER_ENCRYPT)(
      inner_of(vctx), out, outlen, outsize, in, inlen);
}

template <Algorithm A>
int ac_decrypt_init(void* vctx, void* key, const OSSL_PARAM params[]) {
  CipherCtx* ctx = cipher_ctx(vctx);
  remember_key(ctx, key);
  return def<A, OSSL_FUNC_asym_cipher_decrypt_init_fn>(OSSL_FUNC_ASYM_CIPHER_DECRYPT_INIT)(
      ctx->inner, unwrap(key), params);
}

template <Algorithm A>
int ac_decrypt(void* vctx, unsigned char* out, size_t* outlen, size_t outsize,
               const unsigned char* in, size_t inlen) {
  CipherCtx* ctx = cipher_ctx(vctx);
  auto* decrypt = def<A, OSSL_FUNC_asym_cipher_decrypt_fn>(OSSL_FUNC_ASYM_CIPHER_DECRYPT);
  if (out == nullptr || !in_async_job()) {
    if (out != nullptr) count_op(offload::OpKind::kRsaDecrypt, "inline");
    return decrypt(ctx->inner, out, outlen, outsize, in, inlen);
  }
  auto compute = [decrypt, input = std::vector<uint8_t>(in, in + inlen), outsize](
                     void* c, std::vector<uint8_t>* bytes) {
    size_t len = 0;
    if (decrypt(c, nullptr, &len, 0, input.data(), input.size()) != 1) return false;
    len = std::min(len, outsize);
    bytes->resize(len);
    if (decrypt(c, bytes->data(), &len, len, input.data(), input.size()) != 1) return false;
    bytes->resize(len);
    return true;
  };
  return offload_to_buffer(offload::OpKind::kRsaDecrypt, ctx->bits, ctx->inner,
                           def<A, OSSL_FUNC_asym_cipher_dupctx_fn>(OSSL_FUNC_ASYM_CIPHER_DUPCTX),
                           def<A, OSSL_FUNC_asym_cipher_freectx_fn>(OSSL_FUNC_ASYM_CIPHER_FREECTX),
                           std::move(compute), decrypt_library_fn<A>(ctx, in, inlen, outsize), out,
                           outlen, outsize);
}

template <Algorithm A>
int ac_get_ctx_params(void* vctx, OSSL_PARAM params[]) {
  return def<A, OSSL_FUNC_asym_cipher_get_ctx_params_fn>(OSSL_FUNC_ASYM_CIPHER_GET_CTX_PARAMS)(
      inner_of(vctx), params);
}

template <Algorithm A>
const OSSL_PARAM* ac_gettable_ctx_params(void* vctx, void*) {
  return def<A, OSSL_FUNC_asym_cipher_gettable_ctx_params_fn>(
      OSSL_FUNC_ASYM_CIPHER_GETTABLE_CTX_PARAMS)(inner_of(vctx), Backend::get().default_provctx());
}

template <Algorithm A>
int ac_set_ctx_params(void* vctx, const OSSL_PARAM params[]) {
  return def<A, OSSL_FUNC_asym_cipher_set_ctx_params_fn>(OSSL_FUNC_ASYM_CIPHER_SET_CTX_PARAMS)(
      inner_of(vctx), params);
}

template <Algorithm A>
const OSSL_PARAM* ac_settable_ctx_params(void* vctx, void*) {
  return def<A, OSSL_FUNC_asym_cipher_settable_ctx_params_fn>(
      OSSL_FUNC_ASYM_CIPHER_SETTABLE_CTX_PARAMS)(inner_of(vctx), Backend::get().default_provctx());
}

template <Algorithm A>
std::vector<OSSL_DISPATCH> dispatch(const Backend& backend) {
  return build_dispatch(
      backend, Operation::kAsymCipher, A,
      {
          {OSSL_FUNC_ASYM_CIPHER_NEWCTX, as_function(ac_newctx<A>)},
          {OSSL_FUNC_ASYM_CIPHER_FREECTX, as_function(ac_freectx<A>)},
          {OSSL_FUNC_ASYM_CIPHER_DUPCTX, as_function(ac_dupctx<A>)},
          {OSSL_FUNC_ASYM_CIPHER_ENCRYPT_INIT, as_function(ac_encrypt_init<A>)},
          {OSSL_FUNC_ASYM_CIPHER_ENCRYPT, as_function(ac_encrypt<A>)},
          {OSSL_FUNC_ASYM_CIPHER_DECRYPT_INIT, as_function(ac_decrypt_init<A>)},
          {OSSL_FUNC_ASYM_CIPHER_DECRYPT, as_function(ac_decrypt<A>)},
          {OSSL_FUNC_ASYM_CIPHER_GET_CTX_PARAMS, as_function(ac_get_ctx_params<A>)},
          {OSSL_FUNC_ASYM_CIPHER_GETTABLE_CTX_PARAMS, as_function(ac_gettable_ctx_params<A>)},
          {OSSL_FUNC_ASYM_CIPHER_SET_CTX_PARAMS, as_function(ac_set_ctx_params<A>)},
          {OSSL_FUNC_ASYM_CIPHER_SETTABLE_CTX_PARAMS, as_function(ac_settable_ctx_params<A>)},
      });
}

}  // namespace

std::vector<OSSL_DISPATCH> asym_cipher_dispatch(const Backend& backend, Algorithm alg) {
  if (alg == Algorithm::kRsa) return dispatch<Algorithm::kRsa>(backend);
  return {{0, nullptr}};
}

}  // namespace accelgate::provider
