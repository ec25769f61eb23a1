// Our key managers for RSA, EC and X25519: each function forwards to the default provider's,
// on the default key inside our KeyData. X25519 key generation with a private key, inside an
// async job, is an offload op (kX25519Keygen).

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "key_data.h"
#include "library_op.h"
#include "run_op.h"
#include "stats.h"

namespace accelgate::provider {
namespace {

using offload::kX25519Bytes;  // op.h

template <Algorithm A, typename Fn>
Fn* def(int id) {
  return Backend::get().fn<Fn>(Operation::kKeymgmt, A, id);
}

// DefaultKeyFree frees a default key object with the default key manager's free function.
struct DefaultKeyFree {
  OSSL_FUNC_keymgmt_free_fn* free;
  void operator()(void* key) const {
    if (key != nullptr) free(key);
  }
};

template <Algorithm A>
KeyData* wrap_key(void* inner) {
  if (inner == nullptr) return nullptr;
  auto* free = def<A, OSSL_FUNC_keymgmt_free_fn>(OSSL_FUNC_KEYMGMT_FREE);
  return new KeyData(A, std::shared_ptr<void>(inner, DefaultKeyFree{free}));
}

// ParamsCopy owns a deep copy of an OSSL_PARAM array (OSSL_PARAM_dup).
using ParamsCopy = std::unique_ptr<OSSL_PARAM, decltype(&OSSL_PARAM_free)>;
ParamsCopy copy_params(const OSSL_PARAM* params) {
  return {params == nullptr ? nullptr : OSSL_PARAM_dup(params), &OSSL_PARAM_free};
}

// GenRecipe is what a key generation was set up with, so that the software function of an op
// can make a fresh default generation context on any thread (the default provider has no way
// to copy one).
struct GenRecipe {
  int selection = 0;
  ParamsCopy init_params{nullptr, &OSSL_PARAM_free};
  std::vector<ParamsCopy> set_params;
};

struct GenCtx {
  void* inner = nullptr;  // the default generation context
  std::shared_ptr<GenRecipe> recipe = std::make_shared<GenRecipe>();
  bool has_template = false;
};

template <Algorithm A>
void* km_new(void*) {
  return wrap_key<A>(
      def<A, OSSL_FUNC_keymgmt_new_fn>(OSSL_FUNC_KEYMGMT_NEW)(Backend::get().default_provctx()));
}

template <Algorithm A>
void km_free(void* keydata) {
  delete static_cast<KeyData*>(keydata);
}

template <Algorithm A>
void* km_gen_init(void*, int selection, const OSSL_PARAM params[]) {
  void* inner = def<A, OSSL_FUNC_keymgmt_gen_init_fn>(OSSL_FUNC_KEYMGMT_GEN_INIT)(
      Backend::get().default_provctx(), selection, params);
  if (inner == nullptr) return nullptr;
  auto* gen = new GenCtx();
  gen->inner = inner;
  gen->recipe->selection = selection;
  gen->recipe->init_params = copy_params(params);
  return gen;
}

template <Algorithm A>
int km_gen_set_template(void* genctx, void* templ) {
  auto* gen = static_cast<GenCtx*>(genctx);
  gen->has_template = true;
  return def<A, OSSL_FUNC_keymgmt_gen_set_template_fn>(OSSL_FUNC_KEYMGMT_GEN_SET_TEMPLATE)(
      gen->inner, unwrap(templ));
}

template <Algorithm A>
int km_gen_set_params(void* genctx, const OSSL_PARAM params[]) {
  auto* gen = static_cast<GenCtx*>(genctx);
  int ok = def<A, OSSL_FUNC_keymgmt_gen_set_params_fn>(OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS)(gen->inner,
                                                                                         params);
  if (ok == 1 && params != nullptr) gen->recipe->set_params.push_back(copy_params(params));
  return ok;
}

template <Algorithm A>
const OSSL_PARAM* km_gen_settable_params(void* genctx, void*) {
  void* inner = genctx == nullptr ? nullptr : static_cast<GenCtx*>(genctx)->inner;
  return def<A, OSSL_FUNC_keymgmt_gen_settable_params_fn>(OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS)(
      inner, Backend::get().default_provctx());
}

// x25519_keygen_op makes the op that generates a key as |recipe| says.
offload::OpRef x25519_keygen_op(std::shared_ptr<GenRecipe> recipe) {
  constexpr Algorithm A = Algorithm::kX25519;
  struct Functions {
    void* provctx;
    OSSL_FUNC_keymgmt_gen_init_fn* init;
    OSSL_FUNC_keymgmt_gen_set_params_fn* set_params;
    OSSL_FUNC_keymgmt_gen_fn* gen;
    OSSL_FUNC_keymgmt_gen_cleanup_fn* cleanup;
    OSSL_FUNC_keymgmt_free_fn* free;
  };
  Functions f{Backend::get().default_provctx(),
              def<A, OSSL_FUNC_keymgmt_gen_init_fn>(OSSL_FUNC_KEYMGMT_GEN_INIT),
              def<A, OSSL_FUNC_keymgmt_gen_set_params_fn>(OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS),
              def<A, OSSL_FUNC_keymgmt_gen_fn>(OSSL_FUNC_KEYMGMT_GEN),
              def<A, OSSL_FUNC_keymgmt_gen_cleanup_fn>(OSSL_FUNC_KEYMGMT_GEN_CLEANUP),
              def<A, OSSL_FUNC_keymgmt_free_fn>(OSSL_FUNC_KEYMGMT_FREE)};
  auto software = [f, recipe = std::move(recipe)](offload::OpOutput* out) {
    void* gen = f.init(f.provctx, recipe->selection, recipe->init_params.get());
    if (gen == nullptr) return false;
    bool ok = true;
    for (const ParamsCopy& p : recipe->set_params) {
      if (f.set_params == nullptr || f.set_params(gen, p.get()) != 1) ok = false;
    }
    void* key = ok ? f.gen(gen, nullptr, nullptr) : nullptr;
    if (f.cleanup != nullptr) f.cleanup(gen);
    if (key == nullptr) return false;
    out->key = std::shared_ptr<void>(key, DefaultKeyFree{f.free});
    return true;
  };
  // X25519 keys count as 256 bits (op.h).
  return std::make_shared<offload::Op>(offload::OpKind::kX25519Keygen, 256, std::move(software));
}

// RawKeygen is the raw private key of a key generation whose arithmetic an engine does itself
// (op.h, kX25519Keygen): drawn when the engine asks for the op's raw input, kept to make the
// key from it and the engine's public key.
struct RawKeygen {
  std::array<uint8_t, kX25519Bytes> priv{};
  bool drawn = false;
  RawKeygen() = default;
  RawKeygen(const RawKeygen&) = delete;
  RawKeygen& operator=(const RawKeygen&) = delete;
  ~RawKeygen() { OPENSSL_cleanse(priv.data(), priv.size()); }
};

// plain_params says whether |params| (may be null) hold only what does not change how an X25519
// key is made from random bytes: the group's name (libssl sets it) and a property query.
bool plain_params(const OSSL_PARAM* params) {
  for (const OSSL_PARAM* p = params; p != nullptr && p->key != nullptr; ++p) {
    if (std::strcmp(p->key, OSSL_PKEY_PARAM_GROUP_NAME) != 0 &&
        std::strcmp(p->key, OSSL_PKEY_PARAM_PROPERTIES) != 0) {
      return false;
    }
  }
  return true;
}

// set_raw_x25519_keygen gives a key generation's op its raw input: a private key drawn as the
// default provider draws it (its DRBG, then RFC 7748's clamping). Not for a generation with
// other parameters (a later OpenSSL's deterministic generation from input keying material).
void set_raw_x25519_keygen(offload::Op* op, const GenRecipe& recipe,
                           const std::shared_ptr<RawKeygen>& raw) {
  if (!plain_params(recipe.init_params.get())) return;
  for (const ParamsCopy& p : recipe.set_params) {
    if (!plain_params(p.get())) return;
  }
  op->set_private_key(offload::PrivateKeyFn{}, [raw](std::vector<uint8_t>* data) {
    if (!raw->drawn) {
      if (RAND_priv_bytes_ex(Backend::get().libctx(), raw->priv.data(), raw->priv.size(), 0) != 1) {
        return false;
      }
      offload::clamp_x25519_private(raw->priv.data());
      raw->drawn = true;
    }
    data->assign(raw->priv.begin(), raw->priv.end());
    return true;
  });
}

// x25519_from_raw makes a default X25519 key of |priv| and its public key |pub| (both
// kX25519Bytes), without computing the public key again.
void* x25519_from_raw(const uint8_t* priv, const uint8_t* pub) {
  constexpr Algorithm A = Algorithm::kX25519;
  void* key =
      def<A, OSSL_FUNC_keymgmt_new_fn>(OSSL_FUNC_KEYMGMT_NEW)(Backend::get().default_provctx());
  if (key == nullptr) return nullptr;
  OSSL_PARAM params[] = {OSSL_PARAM_construct_octet_string(
                             OSSL_PKEY_PARAM_PRIV_KEY, const_cast<uint8_t*>(priv), kX25519Bytes),
                         OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY,
                                                           const_cast<uint8_t*>(pub), kX25519Bytes),
                         OSSL_PARAM_construct_end()};
  if (def<A, OSSL_FUNC_keymgmt_import_fn>(OSSL_FUNC_KEYMGMT_IMPORT)(
          key, OSSL_KEYMGMT_SELECT_KEYPAIR, params) != 1) {
    def<A, OSSL_FUNC_keymgmt_free_fn>(OSSL_FUNC_KEYMGMT_FREE)(key);
    return nullptr;
  }
  return key;
}

template <Algorithm A>
void* km_gen(void* genctx, OSSL_CALLBACK* cb, void* cbarg) {
  auto* gen = static_cast<GenCtx*>(genctx);
  if constexpr (A == Algorithm::kX25519) {
    // A template (never used for X25519 by OpenSSL itself) cannot be carried into an op: the
    // caller may free it as soon as we return. Those generations stay inline.
    if ((gen->recipe->selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0 && !gen->has_template &&
        in_async_job()) {
      offload::OpRef op = x25519_keygen_op(gen->recipe);
      auto raw = std::make_shared<RawKeygen>();
      set_raw_x25519_keygen(op.get(), *gen->recipe, raw);
      OpResult r = run_op(op);
      if (!r.ok) return nullptr;
      if (r.output.key != nullptr) return new KeyData(A, std::move(r.output.key));
      // An engine that drew the key pair itself (op.h): the private key, then the public key.
      if (r.output.bytes.size() == 2 * kX25519Bytes) {
        void* key = x25519_from_raw(r.output.bytes.data(), r.output.bytes.data() + kX25519Bytes);
        OPENSSL_cleanse(r.output.bytes.data(), r.output.bytes.size());
        return wrap_key<A>(key);
      }
      // An engine that did the arithmetic (op.h): the public key of the private key it was given.
      if (!raw->drawn || r.output.bytes.size() != kX25519Bytes) return nullptr;
      return wrap_key<A>(x25519_from_raw(raw->priv.data(), r.output.bytes.data()));
    }
    if ((gen->recipe->selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0) {
      count_op(offload::OpKind::kX25519Keygen, "inline");
    }
  }
  return wrap_key<A>(
      def<A, OSSL_FUNC_keymgmt_gen_fn>(OSSL_FUNC_KEYMGMT_GEN)(gen->inner, cb, cbarg));
}

template <Algorithm A>
void km_gen_cleanup(void* genctx) {
  auto* gen = static_cast<GenCtx*>(genctx);
  if (gen == nullptr) return;
  if (auto* cleanup = def<A, OSSL_FUNC_keymgmt_gen_cleanup_fn>(OSSL_FUNC_KEYMGMT_GEN_CLEANUP)) {
    cleanup(gen->inner);
  }
  delete gen;
}

template <Algorithm A>
int km_get_params(void* keydata, OSSL_PARAM params[]) {
  return def<A, OSSL_FUNC_keymgmt_get_params_fn>(OSSL_FUNC_KEYMGMT_GET_PARAMS)(unwrap(keydata),
                                                                               params);
}

template <Algorithm A>
const OSSL_PARAM* km_gettable_params(void*) {
  return def<A, OSSL_FUNC_keymgmt_gettable_params_fn>(OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS)(
      Backend::get().default_provctx());
}

// uncompressed_point returns the EC point |name| of |params| when it is given uncompressed
// (04 || x || y, both coordinates of one size), else nothing. Called only after the default
// provider accepted the parameters: a point it decoded re-encodes to these very bytes.
template <Algorithm A>
std::vector<uint8_t> uncompressed_point(const OSSL_PARAM params[], const char* name) {
  if constexpr (A != Algorithm::kEc) return {};
  const OSSL_PARAM* p = params == nullptr ? nullptr : OSSL_PARAM_locate_const(params, name);
  const void* data = nullptr;
  size_t size = 0;
  if (p == nullptr || OSSL_PARAM_get_octet_string_ptr(p, &data, &size) != 1) return {};
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < 3 || size % 2 == 0 || bytes[0] != 0x04) return {};
  return {bytes, bytes + size};
}

template <Algorithm A>
int km_set_params(void* keydata, const OSSL_PARAM params[]) {
  int ok = def<A, OSSL_FUNC_keymgmt_set_params_fn>(OSSL_FUNC_KEYMGMT_SET_PARAMS)(unwrap(keydata),
                                                                                 params);
  key_changed(static_cast<KeyData*>(keydata),
              ok == 1 ? uncompressed_point<A>(params, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY)
                      : std::vector<uint8_t>{});
  return ok;
}

template <Algorithm A>
const OSSL_PARAM* km_settable_params(void*) {
  return def<A, OSSL_FUNC_keymgmt_settable_params_fn>(OSSL_FUNC_KEYMGMT_SETTABLE_PARAMS)(
      Backend::get().default_provctx());
}

template <Algorithm A>
const char* km_query_operation_name(int operation_id) {
  return def<A, OSSL_FUNC_keymgmt_query_operation_name_fn>(OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME)(
      operation_id);
}

template <Algorithm A>
int km_has(const void* keydata, int selection) {
  return def<A, OSSL_FUNC_keymgmt_has_fn>(OSSL_FUNC_KEYMGMT_HAS)(unwrap(keydata), selection);
}

template <Algorithm A>
int km_validate(const void* keydata, int selection, int checktype) {
  return def<A, OSSL_FUNC_keymgmt_validate_fn>(OSSL_FUNC_KEYMGMT_VALIDATE)(unwrap(keydata),
                                                                           selection, checktype);
}

template <Algorithm A>
int km_match(const void* keydata1, const void* keydata2, int selection) {
  return def<A, OSSL_FUNC_keymgmt_match_fn>(OSSL_FUNC_KEYMGMT_MATCH)(unwrap(keydata1),
                                                                     unwrap(keydata2), selection);
}

template <Algorithm A>
int km_import(void* keydata, int selection, const OSSL_PARAM params[]) {
  int ok = def<A, OSSL_FUNC_keymgmt_import_fn>(OSSL_FUNC_KEYMGMT_IMPORT)(unwrap(keydata), selection,
                                                                         params);
  const bool has_public = ok == 1 && (selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) != 0;
  key_changed(
      static_cast<KeyData*>(keydata),
      has_public ? uncompressed_point<A>(params, OSSL_PKEY_PARAM_PUB_KEY) : std::vector<uint8_t>{});
  return ok;
}

template <Algorithm A>
const OSSL_PARAM* km_import_types(int selection) {
  return def<A, OSSL_FUNC_keymgmt_import_types_fn>(OSSL_FUNC_KEYMGMT_IMPORT_TYPES)(selection);
}

template <Algorithm A>
int km_export(void* keydata, int selection, OSSL_CALLBACK* cb, void* cbarg) {
  return def<A, OSSL_FUNC_keymgmt_export_fn>(OSSL_FUNC_KEYMGMT_EXPORT)(unwrap(keydata), selection,
                                                                       cb, cbarg);
}

template <Algorithm A>
const OSSL_PARAM* km_export_types(int selection) {
  return def<A, OSSL_FUNC_keymgmt_export_types_fn>(OSSL_FUNC_KEYMGMT_EXPORT_TYPES)(selection);
}

template <Algorithm A>
void* km_dup(const void* keydata, int selection) {
  return wrap_key<A>(
      def<A, OSSL_FUNC_keymgmt_dup_fn>(OSSL_FUNC_KEYMGMT_DUP)(unwrap(keydata), selection));
}

template <Algorithm A>
std::vector<OSSL_DISPATCH> dispatch(const Backend& backend) {
  return build_dispatch(
      backend, Operation::kKeymgmt, A,
      {
          {OSSL_FUNC_KEYMGMT_NEW, as_function(km_new<A>)},
          {OSSL_FUNC_KEYMGMT_FREE, as_function(km_free<A>), true},
          {OSSL_FUNC_KEYMGMT_GEN_INIT, as_function(km_gen_init<A>)},
          {OSSL_FUNC_KEYMGMT_GEN_SET_TEMPLATE, as_function(km_gen_set_template<A>)},
          {OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS, as_function(km_gen_set_params<A>)},
          {OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS, as_function(km_gen_settable_params<A>)},
          {OSSL_FUNC_KEYMGMT_GEN, as_function(km_gen<A>)},
          {OSSL_FUNC_KEYMGMT_GEN_CLEANUP, as_function(km_gen_cleanup<A>), true},
          {OSSL_FUNC_KEYMGMT_GET_PARAMS, as_function(km_get_params<A>)},
          {OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, as_function(km_gettable_params<A>)},
          {OSSL_FUNC_KEYMGMT_SET_PARAMS, as_function(km_set_params<A>)},
          {OSSL_FUNC_KEYMGMT_SETTABLE_PARAMS, as_function(km_settable_params<A>)},
          {OSSL_FUNC_KEYMGMT_QUERY_OPERATION_NAME, as_function(km_query_operation_name<A>)},
          {OSSL_FUNC_KEYMGMT_HAS, as_function(km_has<A>)},
          {OSSL_FUNC_KEYMGMT_VALIDATE, as_function(km_validate<A>)},
          {OSSL_FUNC_KEYMGMT_MATCH, as_function(km_match<A>)},
          {OSSL_FUNC_KEYMGMT_IMPORT, as_function(km_import<A>)},
          {OSSL_FUNC_KEYMGMT_IMPORT_TYPES, as_function(km_import_types<A>)},
          {OSSL_FUNC_KEYMGMT_EXPORT, as_function(km_export<A>)},
          {OSSL_FUNC_KEYMGMT_EXPORT_TYPES, as_function(km_export_types<A>)},
          {OSSL_FUNC_KEYMGMT_DUP, as_function(km_dup<A>)},
      });
}

}  // namespace

void key_changed(KeyData* key, std::vector<uint8_t> encoded_public) {
  key->bits.store(-1, std::memory_order_relaxed);
  {
    std::lock_guard lock(key->export_mutex);
    key->exported.reset();
  }
  std::lock_guard lock(key->public_cache->mutex);
  key->public_cache->encoded = std::move(encoded_public);
}

int key_bits(KeyData* key) {
  int bits = key->bits.load(std::memory_order_relaxed);
  if (bits >= 0) return bits;
  bits = 0;
  OSSL_PARAM params[] = {OSSL_PARAM_construct_int(OSSL_PKEY_PARAM_BITS, &bits),
                         OSSL_PARAM_construct_end()};
  auto* get = Backend::get().fn<OSSL_FUNC_keymgmt_get_params_fn>(Operation::kKeymgmt, key->alg,
                                                                 OSSL_FUNC_KEYMGMT_GET_PARAMS);
  if (get == nullptr || get(key->inner.get(), params) != 1) bits = 0;
  key->bits.store(bits, std::memory_order_relaxed);
  return bits;
}

std::vector<OSSL_DISPATCH> keymgmt_dispatch(const Backend& backend, Algorithm alg) {
  switch (alg) {
    case Algorithm::kRsa:
      return dispatch<Algorithm::kRsa>(backend);
    case Algorithm::kEc:
      return dispatch<Algorithm::kEc>(backend);
    case Algorithm::kX25519:
      return dispatch<Algorithm::kX25519>(backend);
  }
  return {};
}

}  // namespace accelgate::provider
