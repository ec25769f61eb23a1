// Our RSA and ECDSA signatures. Signing inside an async job is an offload op (kRsaSign,
// kEcdsaSign) over a digest: `sign` receives one, and digest_sign_* are ours (the digest is
// computed here with the private library context's digest, then signed as `sign` does).
// Everything else (verification, parameters) forwards to the default provider.

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rsa.h>

#include <algorithm>
#include <optional>

#include "key_data.h"
#include "library_op.h"
#include "private_op.h"
#include "rsa_encoding.h"
#include "run_op.h"
#include "stats.h"

namespace accelgate::provider {
namespace {

template <Algorithm A, typename Fn>
Fn* def(int id) {
  return Backend::get().fn<Fn>(Operation::kSignature, A, id);
}

struct SigCtx {
  void* inner = nullptr;  // the default signature context
  int bits = 0;           // of the key given to the last init
  // key is the key given to the last init; the EVP_PKEY_CTX that owns this context holds it.
  KeyData* key = nullptr;
  // Ours for digest_sign_*: the digest and its running context.
  EVP_MD* md = nullptr;
  EVP_MD_CTX* mdctx = nullptr;
  bool digest_signing = false;  // digest_sign_init was the last init

  ~SigCtx() {
    EVP_MD_CTX_free(mdctx);
    EVP_MD_free(md);
  }
};

SigCtx* sig_ctx(void* ctx) { return static_cast<SigCtx*>(ctx); }
void* inner_of(void* ctx) { return ctx == nullptr ? nullptr : sig_ctx(ctx)->inner; }

template <Algorithm A>
void* sig_newctx(void*, const char*) {
  // The caller's property query is about its own library context; digests in ours come from
  // the default provider, the only one there.
  void* inner = def<A, OSSL_FUNC_signature_newctx_fn>(OSSL_FUNC_SIGNATURE_NEWCTX)(
      Backend::get().default_provctx(), nullptr);
  if (inner == nullptr) return nullptr;
  auto* ctx = new SigCtx();
  ctx->inner = inner;
  return ctx;
}

template <Algorithm A>
void sig_freectx(void* vctx) {
  SigCtx* ctx = sig_ctx(vctx);
  if (ctx == nullptr) return;
  def<A, OSSL_FUNC_signature_freectx_fn>(OSSL_FUNC_SIGNATURE_FREECTX)(ctx->inner);
  delete ctx;
}

template <Algorithm A>
void* sig_dupctx(void* vctx) {
  SigCtx* from = sig_ctx(vctx);
  auto to = std::make_unique<SigCtx>();
  to->bits = from->bits;
  to->key = from->key;
  to->digest_signing = from->digest_signing;
  if (from->md != nullptr) {
    if (EVP_MD_up_ref(from->md) != 1) return nullptr;
    to->md = from->md;
  }
  if (from->mdctx != nullptr) {
    to->mdctx = EVP_MD_CTX_new();
    if (to->mdctx == nullptr || EVP_MD_CTX_copy_ex(to->mdctx, from->mdctx) != 1) return nullptr;
  }
  to->inner = def<A, OSSL_FUNC_signature_dupctx_fn>(OSSL_FUNC_SIGNATURE_DUPCTX)(from->inner);
  if (to->inner == nullptr) return nullptr;
  return to.release();
}

void remember_key(SigCtx* ctx, void* key) {
  if (key == nullptr) return;
  ctx->key = static_cast<KeyData*>(key);
  ctx->bits = key_bits(ctx->key);
}

// kNameSize bounds the names read from a context (digests, "auto", a salt length).
constexpr size_t kNameSize = 64;

// signature_params snapshots the parameters of the default signature context |inner| that a
// sign depends on, as EVP_PKEY_sign_init_ex takes them: the digest; for RSA the padding and,
// with PSS, the MGF1 digest and the salt length (as text, so that "digest", "max" and "auto"
// stay what they mean instead of the number they stand for now). Null on failure.
template <Algorithm A>
OwnedParams signature_params(void* inner) {
  auto* get = def<A, OSSL_FUNC_signature_get_ctx_params_fn>(OSSL_FUNC_SIGNATURE_GET_CTX_PARAMS);
  if (get == nullptr) return nullptr;
  char digest[kNameSize] = "";
  char mgf1[kNameSize] = "";
  char saltlen[kNameSize] = "";
  int pad = 0;
  OSSL_PARAM want[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, digest, sizeof(digest)),
      OSSL_PARAM_construct_int(OSSL_SIGNATURE_PARAM_PAD_MODE, &pad),
      OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_DIGEST, mgf1, sizeof(mgf1)),
      OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, saltlen, sizeof(saltlen)),
      OSSL_PARAM_construct_end()};
  if constexpr (A != Algorithm::kRsa) want[1] = OSSL_PARAM_construct_end();  // ECDSA: digest
  if (get(inner, want) != 1) return nullptr;
  ParamsBuilder params;
  if (digest[0] != '\0') params.push_utf8(OSSL_SIGNATURE_PARAM_DIGEST, digest);
  if constexpr (A == Algorithm::kRsa) {
    if (OSSL_PARAM_modified(&want[1]) == 1) params.push_int(OSSL_SIGNATURE_PARAM_PAD_MODE, pad);
    // The default provider refuses an MGF1 digest or a salt length without PSS.
    if (pad == RSA_PKCS1_PSS_PADDING) {
      if (mgf1[0] != '\0') params.push_utf8(OSSL_SIGNATURE_PARAM_MGF1_DIGEST, mgf1);
      if (saltlen[0] != '\0') params.push_utf8(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, saltlen);
    }
  }
  return params.build();
}

// sign_library_fn is the LibraryFn of a sign of |tbs| on |ctx| (empty when it cannot be made:
// the op then has none, and an engine that needs one passes it on; and when no engine would use
// it: building one costs about 1 us, a sixth of an mb engine's P-256 signature).
template <Algorithm A>
offload::LibraryFn sign_library_fn(SigCtx* ctx, const unsigned char* tbs, size_t tbslen,
                                   size_t sigsize) {
  if (ctx->key == nullptr || !library_fn_wanted()) return {};
  auto recipe = std::make_shared<LibraryRecipe>();
  recipe->operation = LibraryRecipe::Operation::kSign;
  recipe->alg = A;
  recipe->params = signature_params<A>(ctx->inner);
  if (recipe->params == nullptr) return {};
  recipe->key = key_export(ctx->key);
  recipe->input.assign(tbs, tbs + tbslen);
  recipe->outsize = sigsize;
  return library_fn(std::move(recipe));
}

// rsa_sign_encoding reads how the default RSA signature context |inner| would encode a
// signature (rsa_encoding.h); nullopt for what we do not encode ourselves (X9.31, no padding).
std::optional<RsaSignEncoding> rsa_sign_encoding(void* inner) {
  auto* get = def<Algorithm::kRsa, OSSL_FUNC_signature_get_ctx_params_fn>(
      OSSL_FUNC_SIGNATURE_GET_CTX_PARAMS);
  if (get == nullptr) return std::nullopt;
  char digest[kNameSize] = "";
  char mgf1[kNameSize] = "";
  char saltlen[kNameSize] = "";
  int pad = 0;
  OSSL_PARAM want[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, digest, sizeof(digest)),
      OSSL_PARAM_construct_int(OSSL_SIGNATURE_PARAM_PAD_MODE, &pad), OSSL_PARAM_construct_end(),
      OSSL_PARAM_construct_end(), OSSL_PARAM_construct_end()};
  if (get(inner, want) != 1) return std::nullopt;
  RsaSignEncoding e;
  e.digest = digest;
  if (pad == RSA_PKCS1_PADDING) return e;
  if (pad != RSA_PKCS1_PSS_PADDING) return std::nullopt;
  // The default provider refuses the PSS parameters without PSS: ask for them only now.
  OSSL_PARAM pss[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_MGF1_DIGEST, mgf1, sizeof(mgf1)),
      OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_PSS_SALTLEN, saltlen, sizeof(saltlen)),
      OSSL_PARAM_construct_end()};
  if (get(inner, pss) != 1) return std::nullopt;
  e.scheme = RsaSignEncoding::Scheme::kPss;
  e.mgf1 = mgf1;
  e.saltlen = saltlen;
  return e;
}

// set_raw_rsa_sign gives an RSA sign op its key and encoded message for engines that compute
// the private operation themselves (mb). The encoding (a hash or two and the salt for PSS) is
// made only when such an engine asks.
void set_raw_rsa_sign(offload::Op* op, SigCtx* ctx, const unsigned char* tbs, size_t tbslen) {
  if (ctx->key == nullptr) return;
  std::optional<RsaSignEncoding> encoding = rsa_sign_encoding(ctx->inner);
  if (!encoding) return;
  std::shared_ptr<const offload::PrivateKey> key = key_export(ctx->key)->private_key();
  if (key == nullptr) return;
  op->set_private_key(std::move(key), [encoding = std::move(*encoding),
                                       tbs = std::vector<uint8_t>(tbs, tbs + tbslen),
                                       bits = ctx->bits](std::vector<uint8_t>* data) {
    auto em = encode_rsa_signature(Backend::get().libctx(), encoding, tbs.data(), tbs.size(), bits);
    if (!em) return false;
    *data = std::move(*em);
    return true;
  });
}

// set_raw_ecdsa_sign gives an ECDSA sign op its key and, as its raw input, the digest (the mb
// engine's kernels take the digest and draw the nonce).
void set_raw_ecdsa_sign(offload::Op* op, SigCtx* ctx, const unsigned char* tbs, size_t tbslen) {
  if (ctx->key == nullptr) return;
  std::shared_ptr<const offload::PrivateKey> key = key_export(ctx->key)->private_key();
  if (key == nullptr) return;
  op->set_private_key(std::move(key), [digest = std::vector<uint8_t>(tbs, tbs + tbslen)](
                                          std::vector<uint8_t>* data) {
    *data = digest;
    return true;
  });
}

template <Algorithm A>
int sig_sign_init(void* vctx, void* key, const OSSL_PARAM params[]) {
  SigCtx* ctx = sig_ctx(vctx);
  remember_key(ctx, key);
  ctx->digest_signing = false;
  return def<A, OSSL_FUNC_signature_sign_init_fn>(OSSL_FUNC_SIGNATURE_SIGN_INIT)(
      ctx->inner, unwrap(key), params);
}

template <Algorithm A>
int sig_sign(void* vctx, unsigned char* sig, size_t* siglen, size_t sigsize,
             const unsigned char* tbs, size_t tbslen) {
  SigCtx* ctx = sig_ctx(vctx);
  auto* sign = def<A, OSSL_FUNC_signature_sign_fn>(OSSL_FUNC_SIGNATURE_SIGN);
  if (sig == nullptr || !in_async_job()) {
    if (sig != nullptr)
      count_op(A == Algorithm::kRsa ? offload::OpKind::kRsaSign : offload::OpKind::kEcdsaSign,
               "inline");
    return sign(ctx->inner, sig, siglen, sigsize, tbs, tbslen);
  }
  auto compute = [sign, tbs = std::vector<uint8_t>(tbs, tbs + tbslen), sigsize](
                     void* c, std::vector<uint8_t>* bytes) {
    size_t len = 0;
    if (sign(c, nullptr, &len, 0, tbs.data(), tbs.size()) != 1) return false;
    len = std::min(len, sigsize);
    bytes->resize(len);
    if (sign(c, bytes->data(), &len, len, tbs.data(), tbs.size()) != 1) return false;
    bytes->resize(len);
    return true;
  };
  return offload_to_buffer(
      A == Algorithm::kRsa ? offload::OpKind::kRsaSign : offload::OpKind::kEcdsaSign, ctx->bits,
      ctx->inner, def<A, OSSL_FUNC_signature_dupctx_fn>(OSSL_FUNC_SIGNATURE_DUPCTX),
      def<A, OSSL_FUNC_signature_freectx_fn>(OSSL_FUNC_SIGNATURE_FREECTX), std::move(compute),
      sign_library_fn<A>(ctx, tbs, tbslen, sigsize), sig, siglen, sigsize, [&](offload::Op* op) {
        if constexpr (A == Algorithm::kRsa) set_raw_rsa_sign(op, ctx, tbs, tbslen);
        if constexpr (A == Algorithm::kEc) set_raw_ecdsa_sign(op, ctx, tbs, tbslen);
      });
}

template <Algorithm A>
int sig_verify_init(void* vctx, void* key, const OSSL_PARAM params[]) {
  SigCtx* ctx = sig_ctx(vctx);
  remember_key(ctx, key);
  ctx->digest_signing = false;
  return def<A, OSSL_FUNC_signature_verify_init_fn>(OSSL_FUNC_SIGNATURE_VERIFY_INIT)(
      ctx->inner, unwrap(key), params);
}

template <Algorithm A>
int sig_verify(void* vctx, const unsigned char* sig, size_t siglen, const unsigned char* tbs,
               size_t tbslen) {
  return def<A, OSSL_FUNC_signature_verify_fn>(OSSL_FUNC_SIGNATURE_VERIFY)(inner_of(vctx), sig,
                                                                           siglen, tbs, tbslen);
}

template <Algorithm A>
int sig_verify_recover_init(void* vctx, void* key, const OSSL_PARAM params[]) {
  SigCtx* ctx = sig_ctx(vctx);
  remember_key(ctx, key);
  ctx->digest_signing = false;
  return def<A, OSSL_FUNC_signature_verify_recover_init_fn>(
      OSSL_FUNC_SIGNATURE_VERIFY_RECOVER_INIT)(ctx->inner, unwrap(key), params);
}

template <Algorithm A>
int sig_verify_recover(void* vctx, unsigned char* rout, size_t* routlen, size_t routsize,
                       const unsigned char* sig, size_t siglen) {
  return def<A, OSSL_FUNC_signature_verify_recover_fn>(OSSL_FUNC_SIGNATURE_VERIFY_RECOVER)(
      inner_of(vctx), rout, routlen, routsize, sig, siglen);
}

template <Algorithm A>
int sig_digest_sign_init(void* vctx, const char* mdname, void* key, const OSSL_PARAM params[]) {
  SigCtx* ctx = sig_ctx(vctx);
  ctx->digest_signing = false;
  remember_key(ctx, key);
  if (sig_sign_init<A>(vctx, key, params) != 1) return 0;
  if (mdname != nullptr && *mdname != '\0') {
    EVP_MD* md = EVP_MD_fetch(Backend::get().libctx(), mdname, nullptr);
    if (md == nullptr) return 0;
    EVP_MD_free(ctx->md);
    ctx->md = md;
    OSSL_PARAM set[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_SIGNATURE_PARAM_DIGEST, const_cast<char*>(mdname), 0),
        OSSL_PARAM_construct_end()};
    auto* set_params =
        def<A, OSSL_FUNC_signature_set_ctx_params_fn>(OSSL_FUNC_SIGNATURE_SET_CTX_PARAMS);
    if (set_params == nullptr || set_params(ctx->inner, set) != 1) return 0;
  } else if (ctx->md == nullptr) {
    return 0;  // a re-initialisation keeps the digest; a first one needs one
  }
  if (ctx->mdctx == nullptr && (ctx->mdctx = EVP_MD_CTX_new()) == nullptr) return 0;
  if (EVP_DigestInit_ex(ctx->mdctx, ctx->md, nullptr) != 1) return 0;
  ctx->digest_signing = true;
  return 1;
}

template <Algorithm A>
int sig_digest_sign_update(void* vctx, const unsigned char* data, size_t datalen) {
  SigCtx* ctx = sig_ctx(vctx);
  if (!ctx->digest_signing) return 0;
  return EVP_DigestUpdate(ctx->mdctx, data, datalen);
}

template <Algorithm A>
int sig_digest_sign_final(void* vctx, unsigned char* sig, size_t* siglen, size_t sigsize) {
  SigCtx* ctx = sig_ctx(vctx);
  if (!ctx->digest_signing) return 0;
  if (sig == nullptr) {
    return def<A, OSSL_FUNC_signature_sign_fn>(OSSL_FUNC_SIGNATURE_SIGN)(ctx->inner, nullptr,
                                                                         siglen, 0, nullptr, 0);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  if (EVP_DigestFinal_ex(ctx->mdctx, digest, &digest_len) != 1) return 0;
  return sig_sign<A>(vctx, sig, siglen, sigsize, digest, digest_len);
}

template <Algorithm A>
int sig_digest_verify_init(void* vctx, const char* mdname, void* key, const OSSL_PARAM params[]) {
  SigCtx* ctx = sig_ctx(vctx);
  remember_key(ctx, key);
  ctx->digest_signing = false;
  return def<A, OSSL_FUNC_signature_digest_verify_init_fn>(OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_INIT)(
      ctx->inner, mdname, unwrap(key), params);
}

template <Algorithm A>
int sig_digest_verify_update(void* vctx, const unsigned char* data, size_t datalen) {
  return def<A, OSSL_FUNC_signature_digest_verify_update_fn>(
      OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_UPDATE)(inner_of(vctx), data, datalen);
}

template <Algorithm A>
int sig_digest_verify_final(void* vctx, const unsigned char* sig, size_t siglen) {
  return def<A, OSSL_FUNC_signature_digest_verify_final_fn>(
      OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_FINAL)(inner_of(vctx), sig, siglen);
}

template <Algorithm A>
int sig_get_ctx_params(void* vctx, OSSL_PARAM params[]) {
  return def<A, OSSL_FUNC_signature_get_ctx_params_fn>(OSSL_FUNC_SIGNATURE_GET_CTX_PARAMS)(
      inner_of(vctx), params);
}

template <Algorithm A>
const OSSL_PARAM* sig_gettable_ctx_params(void* vctx, void*) {
  return def<A, OSSL_FUNC_signature_gettable_ctx_params_fn>(
      OSSL_FUNC_SIGNATURE_GETTABLE_CTX_PARAMS)(inner_of(vctx), Backend::get().default_provctx());
}

template <Algorithm A>
int sig_set_ctx_params(void* vctx, const OSSL_PARAM params[]) {
  return def<A, OSSL_FUNC_signature_set_ctx_params_fn>(OSSL_FUNC_SIGNATURE_SET_CTX_PARAMS)(
      inner_of(vctx), params);
}

template <Algorithm A>
const OSSL_PARAM* sig_settable_ctx_params(void* vctx, void*) {
  return def<A, OSSL_FUNC_signature_settable_ctx_params_fn>(
      OSSL_FUNC_SIGNATURE_SETTABLE_CTX_PARAMS)(inner_of(vctx), Backend::get().default_provctx());
}

// The digest parameters go to the digest that runs: ours while digest signing, the default
// context's otherwise (digest verification).
template <Algorithm A>
int sig_get_ctx_md_params(void* vctx, OSSL_PARAM params[]) {
  SigCtx* ctx = sig_ctx(vctx);
  if (ctx->digest_signing) return EVP_MD_CTX_get_params(ctx->mdctx, params);
  return def<A, OSSL_FUNC_signature_get_ctx_md_params_fn>(OSSL_FUNC_SIGNATURE_GET_CTX_MD_PARAMS)(
      ctx->inner, params);
}

template <Algorithm A>
const OSSL_PARAM* sig_gettable_ctx_md_params(void* vctx) {
  SigCtx* ctx = sig_ctx(vctx);
  if (ctx == nullptr) return nullptr;
  if (ctx->digest_signing) return EVP_MD_CTX_gettable_params(ctx->mdctx);
  return def<A, OSSL_FUNC_signature_gettable_ctx_md_params_fn>(
      OSSL_FUNC_SIGNATURE_GETTABLE_CTX_MD_PARAMS)(ctx->inner);
}

template <Algorithm A>
int sig_set_ctx_md_params(void* vctx, const OSSL_PARAM params[]) {
  SigCtx* ctx = sig_ctx(vctx);
  if (ctx->digest_signing) return EVP_MD_CTX_set_params(ctx->mdctx, params);
  return def<A, OSSL_FUNC_signature_set_ctx_md_params_fn>(OSSL_FUNC_SIGNATURE_SET_CTX_MD_PARAMS)(
      ctx->inner, params);
}

template <Algorithm A>
const OSSL_PARAM* sig_settable_ctx_md_params(void* vctx) {
  SigCtx* ctx = sig_ctx(vctx);
  if (ctx == nullptr) return nullptr;
  if (ctx->digest_signing) return EVP_MD_CTX_settable_params(ctx->mdctx);
  return def<A, OSSL_FUNC_signature_settable_ctx_md_params_fn>(
      OSSL_FUNC_SIGNATURE_SETTABLE_CTX_MD_PARAMS)(ctx->inner);
}

template <Algorithm A>
std::vector<OSSL_DISPATCH> dispatch(const Backend& backend) {
  // digest_sign_* are ours, built on the default `sign`; offered when that exists.
  bool signs = backend.has(Operation::kSignature, A, OSSL_FUNC_SIGNATURE_SIGN);
  return build_dispatch(
      backend, Operation::kSignature, A,
      {
          {OSSL_FUNC_SIGNATURE_NEWCTX, as_function(sig_newctx<A>)},
          {OSSL_FUNC_SIGNATURE_FREECTX, as_function(sig_freectx<A>)},
          {OSSL_FUNC_SIGNATURE_DUPCTX, as_function(sig_dupctx<A>)},
          {OSSL_FUNC_SIGNATURE_SIGN_INIT, as_function(sig_sign_init<A>)},
          {OSSL_FUNC_SIGNATURE_SIGN, as_function(sig_sign<A>)},
          {OSSL_FUNC_SIGNATURE_VERIFY_INIT, as_function(sig_verify_init<A>)},
          {OSSL_FUNC_SIGNATURE_VERIFY, as_function(sig_verify<A>)},
          {OSSL_FUNC_SIGNATURE_VERIFY_RECOVER_INIT, as_function(sig_verify_recover_init<A>)},
          {OSSL_FUNC_SIGNATURE_VERIFY_RECOVER, as_function(sig_verify_recover<A>)},
          {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_INIT, as_function(sig_digest_sign_init<A>), signs},
          {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_UPDATE, as_function(sig_digest_sign_update<A>), signs},
          {OSSL_FUNC_SIGNATURE_DIGEST_SIGN_FINAL, as_function(sig_digest_sign_final<A>), signs},
          {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_INIT, as_function(sig_digest_verify_init<A>)},
          {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_UPDATE, as_function(sig_digest_verify_update<A>)},
          {OSSL_FUNC_SIGNATURE_DIGEST_VERIFY_FINAL, as_function(sig_digest_verify_final<A>)},
          {OSSL_FUNC_SIGNATURE_GET_CTX_PARAMS, as_function(sig_get_ctx_params<A>)},
          {OSSL_FUNC_SIGNATURE_GETTABLE_CTX_PARAMS, as_function(sig_gettable_ctx_params<A>)},
          {OSSL_FUNC_SIGNATURE_SET_CTX_PARAMS, as_function(sig_set_ctx_params<A>)},
          {OSSL_FUNC_SIGNATURE_SETTABLE_CTX_PARAMS, as_function(sig_settable_ctx_params<A>)},
          {OSSL_FUNC_SIGNATURE_GET_CTX_MD_PARAMS, as_function(sig_get_ctx_md_params<A>)},
          {OSSL_FUNC_SIGNATURE_GETTABLE_CTX_MD_PARAMS, as_function(sig_gettable_ctx_md_params<A>)},
          {OSSL_FUNC_SIGNATURE_SET_CTX_MD_PARAMS, as_function(sig_set_ctx_md_params<A>)},
          {OSSL_FUNC_SIGNATURE_SETTABLE_CTX_MD_PARAMS, as_function(sig_settable_ctx_md_params<A>)},
      });
}

}  // namespace

std::vector<OSSL_DISPATCH> signature_dispatch(const Backend& backend, Algorithm alg) {
  switch (alg) {
    case Algorithm::kRsa:
      return dispatch<Algorithm::kRsa>(backend);
    case Algorithm::kEc:
      return dispatch<Algorithm::kEc>(backend);
    case Algorithm::kX25519:
      break;  // X25519 does not sign
  }
  return {{0, nullptr}};
}

}  // namespace accelgate::provider
