#include "library_op.h"

#include <openssl/core_dispatch.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>

#include "engine_op.h"

namespace accelgate::provider {
namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;

const char* key_type(Algorithm alg) {
  switch (alg) {
    case Algorithm::kRsa:
      return "RSA";
    case Algorithm::kEc:
      return "EC";
    case Algorithm::kX25519:
      return "X25519";
  }
  return "";
}

// collect_params is the export callback: it adds |params| (valid only during the call) to the
// OwnedParams at |arg|. The default provider calls it once; merging keeps a second call right.
int collect_params(const OSSL_PARAM params[], void* arg) {
  auto* collected = static_cast<OwnedParams*>(arg);
  OwnedParams copy(OSSL_PARAM_dup(params));
  if (copy == nullptr) return 0;
  if (*collected == nullptr) {
    *collected = std::move(copy);
    return 1;
  }
  // OSSL_PARAM_merge copies no values: duplicate the merged array before freeing its parts.
  OSSL_PARAM* merged = OSSL_PARAM_merge(collected->get(), copy.get());
  if (merged == nullptr) return 0;
  OwnedParams both(OSSL_PARAM_dup(merged));
  OSSL_PARAM_free(merged);
  if (both == nullptr) return 0;
  *collected = std::move(both);
  return 1;
}

// import_key makes |params| a key of |alg| in |libctx|, with |propq| choosing the key manager.
Pkey import_key(OSSL_LIB_CTX* libctx, const char* propq, Algorithm alg, const OSSL_PARAM* params,
                int selection) {
  if (params == nullptr) return nullptr;
  PkeyCtx ctx(EVP_PKEY_CTX_new_from_name(libctx, key_type(alg), propq));
  EVP_PKEY* key = nullptr;
  if (ctx == nullptr || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &key, selection, const_cast<OSSL_PARAM*>(params)) != 1) {
    return nullptr;
  }
  return Pkey(key);
}

bool run_library_op(const LibraryRecipe& r, const offload::LibraryTarget& target,
                    offload::OpOutput* out) {
  if (r.key == nullptr) return false;
  if (target.engine != nullptr) return run_engine_op(r, target.engine, out);
  OSSL_LIB_CTX* libctx = target.libctx;
  const char* propq = target.propq;
  Pkey key = import_key(libctx, propq, r.alg, r.key->params(), EVP_PKEY_KEYPAIR);
  if (key == nullptr) return false;
  PkeyCtx ctx(EVP_PKEY_CTX_new_from_pkey(libctx, key.get(), propq));
  if (ctx == nullptr) return false;
  EVP_PKEY_CTX* c = ctx.get();
  const std::vector<uint8_t>& in = r.input;
  switch (r.operation) {
    case LibraryRecipe::Operation::kSign:
      if (EVP_PKEY_sign_init_ex(c, r.params.get()) != 1) return false;
      return output_twice(
          [&](unsigned char* o, size_t* len) {
            return EVP_PKEY_sign(c, o, len, in.data(), in.size());
          },
          r.outsize, &out->bytes);
    case LibraryRecipe::Operation::kDecrypt:
      if (EVP_PKEY_decrypt_init_ex(c, r.params.get()) != 1) return false;
      return output_twice(
          [&](unsigned char* o, size_t* len) {
            return EVP_PKEY_decrypt(c, o, len, in.data(), in.size());
          },
          r.outsize, &out->bytes);
    case LibraryRecipe::Operation::kDerive: {
      if (r.peer == nullptr || EVP_PKEY_derive_init_ex(c, r.params.get()) != 1) return false;
      OwnedParams peer_params = export_key(
          r.alg, r.peer.get(), OSSL_KEYMGMT_SELECT_ALL_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY);
      Pkey peer = import_key(libctx, propq, r.alg, peer_params.get(), EVP_PKEY_PUBLIC_KEY);
      // The caller's EVP_PKEY_derive_set_peer validated this peer already; not twice.
      if (peer == nullptr || EVP_PKEY_derive_set_peer_ex(c, peer.get(), 0) != 1) return false;
      return output_twice([&](unsigned char* o, size_t* len) { return EVP_PKEY_derive(c, o, len); },
                          r.outsize, &out->bytes);
    }
  }
  return false;
}

}  // namespace

void ParamsClearFree::operator()(OSSL_PARAM* params) const {
  if (params == nullptr) return;
  for (OSSL_PARAM* p = params; p->key != nullptr; ++p) {
    if (p->data != nullptr) OPENSSL_cleanse(p->data, p->data_size);
  }
  OSSL_PARAM_free(params);
}

ParamsBuilder::ParamsBuilder() : bld_(OSSL_PARAM_BLD_new()), ok_(bld_ != nullptr) {}

ParamsBuilder::~ParamsBuilder() { OSSL_PARAM_BLD_free(bld_); }

void ParamsBuilder::push_utf8(const char* key, const char* value) {
  ok_ = ok_ && OSSL_PARAM_BLD_push_utf8_string(bld_, key, value, 0) == 1;
}

void ParamsBuilder::push_int(const char* key, int value) {
  ok_ = ok_ && OSSL_PARAM_BLD_push_int(bld_, key, value) == 1;
}

void ParamsBuilder::push_uint(const char* key, unsigned int value) {
  ok_ = ok_ && OSSL_PARAM_BLD_push_uint(bld_, key, value) == 1;
}

void ParamsBuilder::push_octets(const char* key, const void* value, size_t size) {
  ok_ = ok_ && OSSL_PARAM_BLD_push_octet_string(bld_, key, value, size) == 1;
}

OwnedParams ParamsBuilder::build() {
  if (!ok_) return nullptr;
  return OwnedParams(OSSL_PARAM_BLD_to_param(bld_));
}

OwnedParams export_key(Algorithm alg, const void* inner, int selection) {
  auto* export_fn = Backend::get().fn<OSSL_FUNC_keymgmt_export_fn>(Operation::kKeymgmt, alg,
                                                                   OSSL_FUNC_KEYMGMT_EXPORT);
  if (export_fn == nullptr || inner == nullptr) return nullptr;
  OwnedParams collected;
  if (export_fn(const_cast<void*>(inner), selection, collect_params, &collected) != 1) {
    return nullptr;
  }
  return collected;
}

const OSSL_PARAM* KeyExport::params() const {
  std::call_once(once_,
                 [this] { params_ = export_key(alg_, inner_.get(), OSSL_KEYMGMT_SELECT_ALL); });
  return params_.get();
}

std::shared_ptr<const offload::PrivateKey> KeyExport::private_key() const {
  std::call_once(pkey_once_, [this] {
    Pkey pkey = import_key(Backend::get().libctx(), nullptr, alg_, params(), EVP_PKEY_KEYPAIR);
    if (pkey != nullptr) private_key_ = std::make_shared<offload::PrivateKey>(pkey.release());
  });
  return private_key_;
}

std::shared_ptr<EVP_PKEY> KeyExport::engine_key(ENGINE* engine) const {
  std::lock_guard lock(engine_keys_mutex_);
  for (const auto& [e, key] : engine_keys_) {
    if (e == engine) return key;
  }
  std::shared_ptr<EVP_PKEY> key = make_engine_key(alg_, params(), engine);
  if (key != nullptr) engine_keys_.emplace_back(engine, key);
  return key;
}

std::shared_ptr<KeyExport> key_export(KeyData* key) {
  std::lock_guard lock(key->export_mutex);
  if (key->exported == nullptr) key->exported = std::make_shared<KeyExport>(key->alg, key->inner);
  return key->exported;
}

offload::LibraryFn library_fn(std::shared_ptr<const LibraryRecipe> recipe) {
  return
      [recipe = std::move(recipe)](const offload::LibraryTarget& target, offload::OpOutput* out) {
        return run_library_op(*recipe, target, out);
      };
}

}  // namespace accelgate::provider
