// Engine ops (engine_op.h): the key bound to an OpenSSL ENGINE and the legacy EVP_PKEY
// operation through it.
//
// OPENSSL_SUPPRESS_DEPRECATED, before any OpenSSL header: the ENGINE API and the legacy RSA and
// EC_KEY objects that carry an engine's methods are deprecated in OpenSSL 3.0 (and gone in 4.0),
// and they are the only way to drive an ENGINE. This file and the openssl engine's
// vendor_engine.cc are the only ones that use them (CMake builds them only where OpenSSL has the
// ENGINE API); everywhere else deprecation warnings stay errors.
#define OPENSSL_SUPPRESS_DEPRECATED

#include "engine_op.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/engine.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/params.h>
#include <openssl/rsa.h>

#include <charconv>
#include <string>
#include <vector>

namespace accelgate::provider {
namespace {

struct BnFree {
  void operator()(BIGNUM* bn) const { BN_clear_free(bn); }
};
using Bn = std::unique_ptr<BIGNUM, BnFree>;
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;
struct RsaFree {
  void operator()(RSA* rsa) const { RSA_free(rsa); }
};
struct EcKeyFree {
  void operator()(EC_KEY* ec) const { EC_KEY_free(ec); }
};
struct EcGroupFree {
  void operator()(EC_GROUP* g) const { EC_GROUP_free(g); }
};
struct EcPointFree {
  void operator()(EC_POINT* p) const { EC_POINT_free(p); }
};

const OSSL_PARAM* find(const OSSL_PARAM* params, const char* key) {
  return params == nullptr ? nullptr : OSSL_PARAM_locate_const(params, key);
}

Bn param_bn(const OSSL_PARAM* params, const char* key) {
  const OSSL_PARAM* p = find(params, key);
  BIGNUM* bn = nullptr;
  if (p == nullptr || OSSL_PARAM_get_BN(p, &bn) != 1) return nullptr;
  return Bn(bn);
}

std::string param_utf8(const OSSL_PARAM* params, const char* key) {
  const OSSL_PARAM* p = find(params, key);
  const char* s = nullptr;
  if (p == nullptr || OSSL_PARAM_get_utf8_string_ptr(p, &s) != 1 || s == nullptr) return {};
  return s;
}

// wrap makes |key| (owned) a legacy EVP_PKEY of |type|; null on failure, |key| freed.
template <typename T, typename Free>
Pkey wrap(std::unique_ptr<T, Free> key, int type) {
  Pkey pkey(EVP_PKEY_new());
  if (pkey == nullptr || key == nullptr || EVP_PKEY_assign(pkey.get(), type, key.get()) != 1) {
    return nullptr;
  }
  (void)key.release();  // owned by |pkey| now
  return pkey;
}

// rsa_key is the RSA key |params| (OSSL_PKEY_PARAM_RSA_*) bound to |engine|.
Pkey rsa_key(const OSSL_PARAM* params, ENGINE* engine) {
  // A multi-prime key (RFC 8017 §3.2) has a third factor; engines take two-prime keys only.
  if (find(params, OSSL_PKEY_PARAM_RSA_FACTOR3) != nullptr) return nullptr;
  Bn n = param_bn(params, OSSL_PKEY_PARAM_RSA_N);
  Bn e = param_bn(params, OSSL_PKEY_PARAM_RSA_E);
  Bn d = param_bn(params, OSSL_PKEY_PARAM_RSA_D);
  Bn p = param_bn(params, OSSL_PKEY_PARAM_RSA_FACTOR1);
  Bn q = param_bn(params, OSSL_PKEY_PARAM_RSA_FACTOR2);
  Bn dp = param_bn(params, OSSL_PKEY_PARAM_RSA_EXPONENT1);
  Bn dq = param_bn(params, OSSL_PKEY_PARAM_RSA_EXPONENT2);
  Bn qinv = param_bn(params, OSSL_PKEY_PARAM_RSA_COEFFICIENT1);
  if (!n || !e || !d || !p || !q || !dp || !dq || !qinv) return nullptr;
  std::unique_ptr<RSA, RsaFree> rsa(RSA_new_method(engine));
  if (rsa == nullptr) return nullptr;
  // The set0 calls take the numbers on success only.
  if (RSA_set0_key(rsa.get(), n.get(), e.get(), d.get()) != 1) return nullptr;
  (void)n.release(), (void)e.release(), (void)d.release();
  if (RSA_set0_factors(rsa.get(), p.get(), q.get()) != 1) return nullptr;
  (void)p.release(), (void)q.release();
  if (RSA_set0_crt_params(rsa.get(), dp.get(), dq.get(), qinv.get()) != 1) return nullptr;
  (void)dp.release(), (void)dq.release(), (void)qinv.release();
  return wrap(std::move(rsa), EVP_PKEY_RSA);
}

// curve_nid reads a group name as OpenSSL's exports spell it ("prime256v1") or as NIST does
// ("P-256").
int curve_nid(const std::string& name) {
  int nid = OBJ_sn2nid(name.c_str());
  if (nid == NID_undef) nid = EC_curve_nist2nid(name.c_str());
  if (nid == NID_undef) nid = OBJ_ln2nid(name.c_str());
  return nid;
}

// ec_key is the EC key |params| (a named group, the public point and, with |with_private|, the
// private scalar) bound to |engine| (null: OpenSSL's own method).
Pkey ec_key(const OSSL_PARAM* params, ENGINE* engine, bool with_private) {
  int nid = curve_nid(param_utf8(params, OSSL_PKEY_PARAM_GROUP_NAME));
  if (nid == NID_undef) return nullptr;
  std::unique_ptr<EC_KEY, EcKeyFree> ec(EC_KEY_new_method(engine));
  std::unique_ptr<EC_GROUP, EcGroupFree> group(EC_GROUP_new_by_curve_name(nid));
  if (ec == nullptr || group == nullptr || EC_KEY_set_group(ec.get(), group.get()) != 1) {
    return nullptr;
  }
  const OSSL_PARAM* pub = find(params, OSSL_PKEY_PARAM_PUB_KEY);
  const void* octets = nullptr;
  size_t size = 0;
  if (pub == nullptr || OSSL_PARAM_get_octet_string_ptr(pub, &octets, &size) != 1) return nullptr;
  std::unique_ptr<EC_POINT, EcPointFree> point(EC_POINT_new(group.get()));
  if (point == nullptr ||
      EC_POINT_oct2point(group.get(), point.get(), static_cast<const unsigned char*>(octets), size,
                         nullptr) != 1 ||
      EC_KEY_set_public_key(ec.get(), point.get()) != 1) {
    return nullptr;
  }
  if (with_private) {
    Bn priv = param_bn(params, OSSL_PKEY_PARAM_PRIV_KEY);
    if (priv == nullptr || EC_KEY_set_private_key(ec.get(), priv.get()) != 1) return nullptr;
  }
  return wrap(std::move(ec), EVP_PKEY_EC);
}

// pkey_method_engine is |engine| when it has an EVP_PKEY_METHOD for keys of |type| (then the
// operation must be given the engine), else null: the key's own methods, the engine's RSA_METHOD
// or EC_KEY_METHOD, compute. EVP_PKEY_CTX_new refuses an engine without such a method.
ENGINE* pkey_method_engine(ENGINE* engine, int type) {
  ENGINE_PKEY_METHS_PTR methods = ENGINE_get_pkey_meths(engine);
  if (methods == nullptr) return nullptr;
  const int* nids = nullptr;
  int n = methods(engine, nullptr, &nids, 0);
  for (int i = 0; i < n && nids != nullptr; ++i) {
    if (nids[i] == type) return engine;
  }
  return nullptr;
}

const EVP_MD* digest_named(const std::string& name) {
  return name.empty() ? nullptr : EVP_get_digestbyname(name.c_str());
}

// pss_saltlen turns the provider's text form of a PSS salt length into the legacy number.
bool pss_saltlen(const std::string& text, int* out) {
  if (text == "digest") {
    *out = RSA_PSS_SALTLEN_DIGEST;
  } else if (text == "max") {
    *out = RSA_PSS_SALTLEN_MAX;
  } else if (text == "auto") {
    *out = RSA_PSS_SALTLEN_AUTO;  // for signing, the maximum (RFC 8017 §9.1.1 allows any)
  } else {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
    return ec == std::errc() && end == text.data() + text.size() && *out >= 0;
  }
  return true;
}

// set_sign_params applies a signature recipe's parameters (signature.cc, signature_params) to
// the legacy context |c|: digest, then for RSA padding, MGF1 digest and salt length.
bool set_sign_params(EVP_PKEY_CTX* c, const LibraryRecipe& r) {
  const OSSL_PARAM* params = r.params.get();
  std::string digest = param_utf8(params, OSSL_SIGNATURE_PARAM_DIGEST);
  if (!digest.empty()) {
    const EVP_MD* md = digest_named(digest);
    if (md == nullptr || EVP_PKEY_CTX_set_signature_md(c, md) <= 0) return false;
  }
  if (r.alg != Algorithm::kRsa) return true;
  int pad = 0;
  const OSSL_PARAM* p = find(params, OSSL_SIGNATURE_PARAM_PAD_MODE);
  if (p != nullptr &&
      (OSSL_PARAM_get_int(p, &pad) != 1 || EVP_PKEY_CTX_set_rsa_padding(c, pad) <= 0)) {
    return false;
  }
  std::string mgf1 = param_utf8(params, OSSL_SIGNATURE_PARAM_MGF1_DIGEST);
  if (!mgf1.empty()) {
    const EVP_MD* md = digest_named(mgf1);
    if (md == nullptr || EVP_PKEY_CTX_set_rsa_mgf1_md(c, md) <= 0) return false;
  }
  std::string saltlen = param_utf8(params, OSSL_SIGNATURE_PARAM_PSS_SALTLEN);
  int n = 0;
  if (!saltlen.empty() &&
      (!pss_saltlen(saltlen, &n) || EVP_PKEY_CTX_set_rsa_pss_saltlen(c, n) <= 0)) {
    return false;
  }
  return true;
}

// set_oaep_params applies OAEP's digest, MGF1 digest and label (asym_cipher.cc,
// decrypt_params).
bool set_oaep_params(EVP_PKEY_CTX* c, const OSSL_PARAM* params) {
  std::string digest = param_utf8(params, OSSL_ASYM_CIPHER_PARAM_OAEP_DIGEST);
  if (!digest.empty()) {
    const EVP_MD* md = digest_named(digest);
    if (md == nullptr || EVP_PKEY_CTX_set_rsa_oaep_md(c, md) <= 0) return false;
  }
  std::string mgf1 = param_utf8(params, OSSL_ASYM_CIPHER_PARAM_MGF1_DIGEST);
  if (!mgf1.empty()) {
    const EVP_MD* md = digest_named(mgf1);
    if (md == nullptr || EVP_PKEY_CTX_set_rsa_mgf1_md(c, md) <= 0) return false;
  }
  const OSSL_PARAM* label = find(params, OSSL_ASYM_CIPHER_PARAM_OAEP_LABEL);
  const void* bytes = nullptr;
  size_t size = 0;
  if (label != nullptr && OSSL_PARAM_get_octet_string_ptr(label, &bytes, &size) == 1 && size > 0) {
    // set0 takes the copy on success only.
    void* copy = OPENSSL_memdup(bytes, size);
    if (copy == nullptr) return false;
    if (EVP_PKEY_CTX_set0_rsa_oaep_label(c, copy, static_cast<int>(size)) <= 0) {
      OPENSSL_free(copy);
      return false;
    }
  }
  return true;
}

// tls_decrypt is the RSA key exchange of TLS 1.2: the engine decrypts without padding, the
// premaster secret is checked here (tls_premaster.cc), as the default provider does it for
// RSA_PKCS1_WITH_TLS_PADDING.
bool tls_decrypt(EVP_PKEY_CTX* c, const LibraryRecipe& r, offload::OpOutput* out) {
  unsigned int client_version = 0;
  unsigned int alt_version = 0;
  const OSSL_PARAM* p = find(r.params.get(), OSSL_ASYM_CIPHER_PARAM_TLS_CLIENT_VERSION);
  if (p == nullptr || OSSL_PARAM_get_uint(p, &client_version) != 1 || client_version == 0) {
    return false;  // the default provider refuses the TLS padding without a client version too
  }
  p = find(r.params.get(), OSSL_ASYM_CIPHER_PARAM_TLS_NEGOTIATED_VERSION);
  if (p != nullptr && OSSL_PARAM_get_uint(p, &alt_version) != 1) return false;
  if (r.outsize < 48) return false;
  if (EVP_PKEY_decrypt_init(c) != 1 || EVP_PKEY_CTX_set_rsa_padding(c, RSA_NO_PADDING) <= 0) {
    return false;
  }
  std::vector<uint8_t> block;
  const std::vector<uint8_t>& in = r.input;
  bool ok =
      output_twice([&](unsigned char* o,
                       size_t* len) { return EVP_PKEY_decrypt(c, o, len, in.data(), in.size()); },
                   SIZE_MAX, &block);
  if (ok) {
    out->bytes.resize(48);
    ok = tls_premaster_from_block(block.data(), block.size(), client_version, alt_version,
                                  out->bytes.data());
  }
  OPENSSL_cleanse(block.data(), block.size());
  return ok;
}

}  // namespace

std::shared_ptr<EVP_PKEY> make_engine_key(Algorithm alg, const OSSL_PARAM* params, ENGINE* engine) {
  if (params == nullptr || engine == nullptr) return nullptr;
  Pkey key;
  switch (alg) {
    case Algorithm::kRsa:
      key = rsa_key(params, engine);
      break;
    case Algorithm::kEc:
      key = ec_key(params, engine, true);
      break;
    case Algorithm::kX25519:
      break;  // engines serve X25519 through EVP_PKEY_METHODs only, which are not used
  }
  return {key.release(), PkeyFree()};
}

bool run_engine_op(const LibraryRecipe& r, ENGINE* engine, offload::OpOutput* out) {
  if (r.key == nullptr || engine == nullptr) return false;
  std::shared_ptr<EVP_PKEY> key = r.key->engine_key(engine);
  if (key == nullptr) return false;
  PkeyCtx ctx(
      EVP_PKEY_CTX_new(key.get(), pkey_method_engine(engine, EVP_PKEY_get_base_id(key.get()))));
  if (ctx == nullptr) return false;
  EVP_PKEY_CTX* c = ctx.get();
  const std::vector<uint8_t>& in = r.input;
  switch (r.operation) {
    case LibraryRecipe::Operation::kSign:
      if (EVP_PKEY_sign_init(c) != 1 || !set_sign_params(c, r)) return false;
      return output_twice(
          [&](unsigned char* o, size_t* len) {
            return EVP_PKEY_sign(c, o, len, in.data(), in.size());
          },
          r.outsize, &out->bytes);
    case LibraryRecipe::Operation::kDecrypt: {
      int pad = RSA_PKCS1_PADDING;
      const OSSL_PARAM* p = find(r.params.get(), OSSL_ASYM_CIPHER_PARAM_PAD_MODE);
      if (p != nullptr && OSSL_PARAM_get_int(p, &pad) != 1) return false;
      if (pad == RSA_PKCS1_WITH_TLS_PADDING) return tls_decrypt(c, r, out);
      if (EVP_PKEY_decrypt_init(c) != 1 || EVP_PKEY_CTX_set_rsa_padding(c, pad) <= 0) return false;
      if (pad == RSA_PKCS1_OAEP_PADDING && !set_oaep_params(c, r.params.get())) return false;
      return output_twice(
          [&](unsigned char* o, size_t* len) {
            return EVP_PKEY_decrypt(c, o, len, in.data(), in.size());
          },
          r.outsize, &out->bytes);
    }
    case LibraryRecipe::Operation::kDerive: {
      if (r.alg != Algorithm::kEc || r.peer == nullptr) return false;
      OwnedParams peer_params = export_key(
          r.alg, r.peer.get(), OSSL_KEYMGMT_SELECT_ALL_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY);
      Pkey peer = ec_key(peer_params.get(), nullptr, false);
      // The caller's EVP_PKEY_derive_set_peer validated this peer already; not twice.
      if (peer == nullptr || EVP_PKEY_derive_init(c) != 1 ||
          EVP_PKEY_derive_set_peer_ex(c, peer.get(), 0) != 1) {
        return false;
      }
      return output_twice([&](unsigned char* o, size_t* len) { return EVP_PKEY_derive(c, o, len); },
                          r.outsize, &out->bytes);
    }
  }
  return false;
}

}  // namespace accelgate::provider
