// TLS13-KDF: the key derivation of TLS 1.3's key schedule (RFC 8446 §7.1) with the interface
// of OpenSSL 3.0's implementation of that name, which libssl fetches for every step of a
// handshake: EXPAND_ONLY is HKDF-Expand-Label, EXTRACT_ONLY expands the previous secret with the
// label ("derived") and the hash of nothing, then runs HKDF-Extract with it as the salt.
//
// Why ours: a TLS 1.3 handshake derives about 19 times. The default provider's derivation with
// SHA-384 takes about 4.5 µs (it fetches the digest and HMAC by name, parses parameters and
// allocates contexts for every HMAC) around four SHA-384 block computations (about 1.3 µs); that
// is more CPU per handshake than the X25519 and P-256 operations the mb engine offloads. Here
// HMAC runs on OpenSSL's SHA-2 block functions directly, with the key's inner and outer states
// prepared once per derivation. Digests other than SHA-2 (TLS 1.3 uses SHA-256 and SHA-384 only),
// and a digest asked for with properties, go to the default provider's TLS13-KDF in the backend's
// library context, unchanged (the properties are resolved there, among the default provider's
// algorithms).

// SHA224_Init & co. are deprecated in OpenSSL 3.0 in favour of EVP_Digest*, whose per-call
// fetch and dispatch is the cost this file removes; they remain part of 3.x's API.
#define OPENSSL_SUPPRESS_DEPRECATED

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/proverr.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "backend.h"

namespace accelgate::provider {
namespace {

using ByteSpan = std::span<const uint8_t>;

// ParamBytes is a byte-string parameter of a context (a key, a salt, a prefix, a label, a
// context hash): inline up to kInline bytes, which holds every secret, label and transcript hash
// of TLS 1.3 with the SHA-2 digests, so libssl's derivations allocate nothing for them; longer
// ones (an FFDHE secret, an external PSK) go to the heap. Cleansed when replaced or freed.
class ParamBytes {
 public:
  static constexpr size_t kInline = 64;

  ParamBytes() = default;
  ParamBytes(const ParamBytes& other) {
    if (other.set_) assign(other.view().data(), other.size_);
  }
  ParamBytes& operator=(const ParamBytes&) = delete;
  ~ParamBytes() { clear(); }

  void assign(const void* data, size_t size) {
    clear();
    const auto* p = static_cast<const uint8_t*>(data);
    if (size > kInline) {
      heap_.assign(p, p + size);
    } else if (size != 0) {
      std::memcpy(inline_, p, size);
    }
    size_ = size;
    set_ = true;
  }
  void clear() {
    if (size_ > kInline) {
      OPENSSL_cleanse(heap_.data(), heap_.size());
      heap_.clear();
    } else if (size_ != 0) {
      OPENSSL_cleanse(inline_, size_);
    }
    size_ = 0;
    set_ = false;
  }
  bool set() const { return set_; }
  ByteSpan view() const { return {size_ > kInline ? heap_.data() : inline_, size_}; }

 private:
  uint8_t inline_[kInline];  // only the first size_ bytes are ever read
  std::vector<uint8_t> heap_;
  size_t size_ = 0;
  bool set_ = false;  // given, possibly empty
};

// The SHA-2 functions, one type per digest, for Sha2Hmac.
struct Sha224 {
  using State = SHA256_CTX;
  static constexpr size_t kBlock = 64, kSize = SHA224_DIGEST_LENGTH;
  static void init(State* s) { SHA224_Init(s); }
  static void update(State* s, ByteSpan b) { SHA224_Update(s, b.data(), b.size()); }
  static void final(uint8_t* out, State* s) { SHA224_Final(out, s); }
};
struct Sha256 {
  using State = SHA256_CTX;
  static constexpr size_t kBlock = 64, kSize = SHA256_DIGEST_LENGTH;
  static void init(State* s) { SHA256_Init(s); }
  static void update(State* s, ByteSpan b) { SHA256_Update(s, b.data(), b.size()); }
  static void final(uint8_t* out, State* s) { SHA256_Final(out, s); }
};
struct Sha384 {
  using State = SHA512_CTX;
  static constexpr size_t kBlock = 128, kSize = SHA384_DIGEST_LENGTH;
  static void init(State* s) { SHA384_Init(s); }
  static void update(State* s, ByteSpan b) { SHA384_Update(s, b.data(), b.size()); }
  static void final(uint8_t* out, State* s) { SHA384_Final(out, s); }
};
struct Sha512 {
  using State = SHA512_CTX;
  static constexpr size_t kBlock = 128, kSize = SHA512_DIGEST_LENGTH;
  static void init(State* s) { SHA512_Init(s); }
  static void update(State* s, ByteSpan b) { SHA512_Update(s, b.data(), b.size()); }
  static void final(uint8_t* out, State* s) { SHA512_Final(out, s); }
};

// Sha2Hmac is HMAC (RFC 2104) with the SHA-2 digest H and one key, whose inner and outer states
// are computed once by the constructor and copied for every MAC.
template <class H>
class Sha2Hmac {
 public:
  explicit Sha2Hmac(ByteSpan key) {
    uint8_t block[H::kBlock] = {};
    if (key.size() > H::kBlock) {
      typename H::State s;
      H::init(&s);
      H::update(&s, key);
      H::final(block, &s);
      OPENSSL_cleanse(&s, sizeof(s));
    } else if (!key.empty()) {
      std::memcpy(block, key.data(), key.size());
    }
    for (uint8_t& b : block) b ^= 0x36;
    H::init(&inner_);
    H::update(&inner_, block);
    for (uint8_t& b : block) b ^= 0x36 ^ 0x5c;
    H::init(&outer_);
    H::update(&outer_, block);
    OPENSSL_cleanse(block, sizeof(block));
  }
  Sha2Hmac(const Sha2Hmac&) = delete;
  Sha2Hmac& operator=(const Sha2Hmac&) = delete;
  ~Sha2Hmac() {
    OPENSSL_cleanse(&inner_, sizeof(inner_));
    OPENSSL_cleanse(&outer_, sizeof(outer_));
  }

  // mac writes HMAC(key, the concatenation of |parts|), H::kSize bytes, to |out|.
  void mac(std::initializer_list<ByteSpan> parts, uint8_t* out) const {
    typename H::State s = inner_;
    for (ByteSpan p : parts) H::update(&s, p);
    uint8_t inner[H::kSize];
    H::final(inner, &s);
    s = outer_;
    H::update(&s, inner);
    H::final(out, &s);
    OPENSSL_cleanse(inner, sizeof(inner));
    OPENSSL_cleanse(&s, sizeof(s));
  }

 private:
  typename H::State inner_;
  typename H::State outer_;
};

// empty_hash is H of the empty string (RFC 8446 §7.1: Derive-Secret(., "derived", "")).
template <class H>
ByteSpan empty_hash() {
  static const std::array<uint8_t, H::kSize> kHash = [] {
    std::array<uint8_t, H::kSize> h{};
    typename H::State s;
    H::init(&s);
    H::final(h.data(), &s);
    return h;
  }();
  return kHash;
}

enum class Digest : uint8_t { kNone, kSha224, kSha256, kSha384, kSha512, kOther };

// digest_of recognises the names OpenSSL 3.0 gives the SHA-2 digests we compute (libssl passes
// the first, e.g. "SHA2-384"), ignoring case as OpenSSL does; any other name is kOther.
Digest digest_of(const char* name) {
  struct Name {
    const char* name;
    Digest digest;
  };
  static constexpr Name kNames[] = {
      {"SHA2-256", Digest::kSha256},
      {"SHA2-384", Digest::kSha384},
      {"SHA256", Digest::kSha256},
      {"SHA384", Digest::kSha384},
      {"SHA-256", Digest::kSha256},
      {"SHA-384", Digest::kSha384},
      {"2.16.840.1.101.3.4.2.1", Digest::kSha256},
      {"2.16.840.1.101.3.4.2.2", Digest::kSha384},
      {"SHA2-224", Digest::kSha224},
      {"SHA224", Digest::kSha224},
      {"SHA-224", Digest::kSha224},
      {"2.16.840.1.101.3.4.2.4", Digest::kSha224},
      {"SHA2-512", Digest::kSha512},
      {"SHA512", Digest::kSha512},
      {"SHA-512", Digest::kSha512},
      {"2.16.840.1.101.3.4.2.3", Digest::kSha512},
  };
  for (const Name& n : kNames) {
    if (OPENSSL_strcasecmp(name, n.name) == 0) return n.digest;
  }
  return Digest::kOther;
}

// KdfCtx is one TLS13-KDF context: the parameters as OpenSSL's implementation keeps them.
struct KdfCtx {
  int mode = EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND;  // refused, as OpenSSL refuses it
  Digest digest = Digest::kNone;
  std::string digest_name;
  std::string properties;  // given with the digest (then it is computed by the default provider)
  ParamBytes key;
  ParamBytes salt;
  ParamBytes data;
  ParamBytes prefix;
  ParamBytes label;

  void reset() {
    mode = EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND;
    digest = Digest::kNone;
    digest_name.clear();
    properties.clear();
    key.clear();
    salt.clear();
    data.clear();
    prefix.clear();
    label.clear();
  }
};

// fail raises |reason| on OpenSSL's error queue and returns 0, the failure of a provider call.
int fail(int reason) {
  ERR_raise(ERR_LIB_PROV, reason);
  return 0;
}

// get_octets reads an octet string parameter; as OSSL_PARAM_get_octet_string, it refuses one
// without data.
bool get_octets(const OSSL_PARAM* p, const void** data, size_t* size) {
  if (p->data_type != OSSL_PARAM_OCTET_STRING || p->data == nullptr) return false;
  *data = p->data;
  *size = p->data_size;
  return true;
}

// set_mode reads the mode as a name or a number, as OpenSSL's HKDF does; false if unknown.
bool set_mode(KdfCtx* c, const OSSL_PARAM* p) {
  if (p->data_type == OSSL_PARAM_UTF8_STRING) {
    const char* s = static_cast<const char*>(p->data);
    if (s == nullptr) return false;
    if (OPENSSL_strcasecmp(s, "EXTRACT_AND_EXPAND") == 0) {
      c->mode = EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND;
    } else if (OPENSSL_strcasecmp(s, "EXTRACT_ONLY") == 0) {
      c->mode = EVP_KDF_HKDF_MODE_EXTRACT_ONLY;
    } else if (OPENSSL_strcasecmp(s, "EXPAND_ONLY") == 0) {
      c->mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
    } else {
      return false;
    }
    return true;
  }
  int n = 0;
  if (OSSL_PARAM_get_int(p, &n) != 1) return false;
  if (n != EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND && n != EVP_KDF_HKDF_MODE_EXTRACT_ONLY &&
      n != EVP_KDF_HKDF_MODE_EXPAND_ONLY) {
    return false;
  }
  c->mode = n;
  return true;
}

// md_size is the output size of the context's digest (0 when none is set or it is unknown).
size_t md_size(const KdfCtx& c) {
  switch (c.digest) {
    case Digest::kNone:
      return 0;
    case Digest::kSha224:
      return Sha224::kSize;
    case Digest::kSha256:
      return Sha256::kSize;
    case Digest::kSha384:
      return Sha384::kSize;
    case Digest::kSha512:
      return Sha512::kSize;
    case Digest::kOther:
      break;
  }
  EVP_MD* md = EVP_MD_fetch(Backend::get().libctx(), c.digest_name.c_str(),
                            c.properties.empty() ? nullptr : c.properties.c_str());
  int size = md == nullptr ? 0 : EVP_MD_get_size(md);
  EVP_MD_free(md);
  return size > 0 ? static_cast<size_t>(size) : 0;
}

// utf8_string reads a UTF8_STRING parameter (OpenSSL's KDFs refuse a UTF8_PTR); null if not one.
const char* utf8_string(const OSSL_PARAM* p) {
  if (p->data_type != OSSL_PARAM_UTF8_STRING) return nullptr;
  const char* s = nullptr;
  return OSSL_PARAM_get_utf8_string_ptr(p, &s) == 1 ? s : nullptr;
}

// set_params applies |params| as OpenSSL 3.0's TLS13-KDF does: a salt of no bytes is ignored,
// the data is dropped by every call, and EXTRACT_AND_EXPAND is refused. Properties count only
// with a digest in the same call, as OpenSSL fetches the digest with them; a digest with
// properties is left to the default provider, which honours them (ours would not). Returns 0
// with an error raised on a bad parameter.
int set_params(KdfCtx* c, const OSSL_PARAM params[]) {
  if (params == nullptr) return 1;
  const OSSL_PARAM* p = nullptr;
  if ((p = OSSL_PARAM_locate_const(params, OSSL_KDF_PARAM_DIGEST)) != nullptr) {
    const char* name = utf8_string(p);
    const char* properties = nullptr;
    const OSSL_PARAM* q = OSSL_PARAM_locate_const(params, OSSL_KDF_PARAM_PROPERTIES);
    if (name == nullptr || (q != nullptr && (properties = utf8_string(q)) == nullptr)) {
      return fail(PROV_R_INVALID_DIGEST);
    }
    c->digest_name = name;
    c->properties = properties == nullptr ? "" : properties;
    c->digest = c->properties.empty() ? digest_of(name) : Digest::kOther;
    if (md_size(*c) == 0) {
      c->digest = Digest::kNone;
      c->digest_name.clear();
      c->properties.clear();
      return fail(PROV_R_INVALID_DIGEST);
    }
  }
  if ((p = OSSL_PARAM_locate_const(params, OSSL_KDF_PARAM_MODE)) != nullptr && !set_mode(c, p)) {
    return fail(PROV_R_INVALID_MODE);
  }
  const void* data = nullptr;
  size_t size = 0;
  if ((p = OSSL_PARAM_locate_const(params, OSSL_KDF_PARAM_KEY)) != nullptr) {
    if (!get_octets(p, &data, &size)) return fail(PROV_R_INVALID_KEY);
    c->key.assign(data, size);
  }
  if ((p = OSSL_PARAM_locate_const(params, OSSL_KDF_PARAM_SALT)) != nullptr && p->data != nullptr &&
      p->data_size != 0) {
    if (!get_octets(p, &data, &size)) return fail(PROV_R_INVALID_SALT_LENGTH);
    c->salt.assign(data, size);
  }
  if (c->mode == EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND) return fail(PROV_R_INVALID_MODE);
  for (auto [name, field] :
       {std::pair{OSSL_KDF_PARAM_PREFIX, &c->prefix}, std::pair{OSSL_KDF_PARAM_LABEL, &c->label}}) {
    if ((p = OSSL_PARAM_locate_const(params, name)) != nullptr) {
      if (!get_octets(p, &data, &size)) return fail(PROV_R_INVALID_DATA);
      field->assign(data, size);
    }
  }
  c->data.clear();
  if ((p = OSSL_PARAM_locate_const(params, OSSL_KDF_PARAM_DATA)) != nullptr) {
    if (!get_octets(p, &data, &size)) return fail(PROV_R_INVALID_DATA);
    c->data.assign(data, size);
  }
  return 1;
}

// kMaxLabel bounds HkdfLabel (RFC 8446 §7.1): a 2-byte length, then a label and a context of
// at most 255 bytes each, each after its 1-byte length.
constexpr size_t kMaxLabel = 2 + 1 + 255 + 1 + 255;

// hkdf_label writes HkdfLabel for |out_size| bytes of output into |buf| and returns its size, or
// 0 when a part is too long for its length field.
size_t hkdf_label(size_t out_size, ByteSpan prefix, ByteSpan label, ByteSpan context,
                  uint8_t (&buf)[kMaxLabel]) {
  if (out_size > 0xffff || prefix.size() + label.size() > 255 || context.size() > 255) return 0;
  size_t n = 0;
  buf[n++] = static_cast<uint8_t>(out_size >> 8);
  buf[n++] = static_cast<uint8_t>(out_size);
  buf[n++] = static_cast<uint8_t>(prefix.size() + label.size());
  if (!prefix.empty()) std::memcpy(buf + n, prefix.data(), prefix.size());
  n += prefix.size();
  if (!label.empty()) std::memcpy(buf + n, label.data(), label.size());
  n += label.size();
  buf[n++] = static_cast<uint8_t>(context.size());
  if (!context.empty()) std::memcpy(buf + n, context.data(), context.size());
  return n + context.size();
}

// expand_label is HKDF-Expand(secret, HkdfLabel(out_size, prefix || label, context), out_size)
// (RFC 5869 §2.3, RFC 8446 §7.1).
template <class H>
bool expand_label(ByteSpan secret, ByteSpan prefix, ByteSpan label, ByteSpan context, uint8_t* out,
                  size_t out_size) {
  uint8_t info[kMaxLabel];
  size_t info_size = hkdf_label(out_size, prefix, label, context, info);
  if (info_size == 0 || out_size > 255 * H::kSize) return false;
  Sha2Hmac<H> hmac(secret);
  uint8_t t[H::kSize];
  size_t t_size = 0;
  for (size_t done = 0, i = 1; done < out_size; ++i) {
    const auto counter = static_cast<uint8_t>(i);
    hmac.mac({ByteSpan(t, t_size), ByteSpan(info, info_size), ByteSpan(&counter, 1)}, t);
    t_size = H::kSize;
    size_t n = std::min(out_size - done, H::kSize);
    std::memcpy(out + done, t, n);
    done += n;
  }
  OPENSSL_cleanse(t, sizeof(t));
  return true;
}

// derive_with runs the context's derivation with the SHA-2 digest H: HKDF-Expand-Label of the
// key in EXPAND_ONLY mode, the extraction of RFC 8446 §7.1 in EXTRACT_ONLY mode (the caller has
// checked the mode). Returns 0 with an error raised when a parameter does not fit.
template <class H>
int derive_with(const KdfCtx& c, uint8_t* out, size_t out_size) {
  if (c.mode == EVP_KDF_HKDF_MODE_EXPAND_ONLY) {
    if (!c.key.set()) return fail(PROV_R_MISSING_KEY);
    if (!expand_label<H>(c.key.view(), c.prefix.view(), c.label.view(), c.data.view(), out,
                         out_size)) {
      return fail(PROV_R_INVALID_DATA);
    }
    return 1;
  }
  // EXTRACT_ONLY: PRK = HKDF-Extract(salt, key), where the salt is the previous secret expanded
  // with the label and the hash of nothing (none: HashLen zeros), and the key HashLen zeros
  // when none is given (RFC 8446 §7.1).
  if (out_size != H::kSize) return fail(PROV_R_WRONG_OUTPUT_BUFFER_SIZE);
  uint8_t salt[H::kSize] = {};
  ByteSpan salt_view;  // none: HMAC with an empty key, the same as HashLen zeros
  if (c.salt.set()) {
    // OpenSSL reads HashLen bytes of the previous secret whatever its size; TLS always gives
    // HashLen bytes, and anything else is refused here.
    if (c.salt.view().size() != H::kSize) return fail(PROV_R_INVALID_SALT_LENGTH);
    if (!expand_label<H>(c.salt.view(), c.prefix.view(), c.label.view(), empty_hash<H>(), salt,
                         H::kSize)) {
      return fail(PROV_R_INVALID_DATA);
    }
    salt_view = ByteSpan(salt, H::kSize);
  }
  static constexpr uint8_t kZeros[H::kSize] = {};
  Sha2Hmac<H>(salt_view).mac({c.key.set() ? c.key.view() : ByteSpan(kZeros)}, out);
  OPENSSL_cleanse(salt, sizeof(salt));
  return 1;
}

// g_delegated counts derive_elsewhere's derivations (tls13_kdf_delegations).
std::atomic<uint64_t> g_delegated{0};

// derive_elsewhere runs the derivation with the default provider's TLS13-KDF (digests that are
// not SHA-2, or given with properties), from the parameters kept in |c|.
int derive_elsewhere(const KdfCtx& c, uint8_t* out, size_t out_size) {
  g_delegated.fetch_add(1, std::memory_order_relaxed);
  EVP_KDF* kdf = EVP_KDF_fetch(Backend::get().libctx(), OSSL_KDF_NAME_TLS1_3_KDF, nullptr);
  EVP_KDF_CTX* kctx = kdf == nullptr ? nullptr : EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (kctx == nullptr) return fail(ERR_R_FETCH_FAILED);
  int mode = c.mode;
  std::vector<OSSL_PARAM> params;
  params.push_back(OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode));
  params.push_back(OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                                    const_cast<char*>(c.digest_name.c_str()), 0));
  if (!c.properties.empty()) {
    params.push_back(OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_PROPERTIES,
                                                      const_cast<char*>(c.properties.c_str()), 0));
  }
  auto octets = [&params](const char* name, ByteSpan b) {
    static const uint8_t kEmpty = 0;  // a non-null pointer for an empty string
    params.push_back(OSSL_PARAM_construct_octet_string(
        name, const_cast<uint8_t*>(b.empty() ? &kEmpty : b.data()), b.size()));
  };
  if (c.key.set()) octets(OSSL_KDF_PARAM_KEY, c.key.view());
  if (c.salt.set()) octets(OSSL_KDF_PARAM_SALT, c.salt.view());
  if (c.prefix.set()) octets(OSSL_KDF_PARAM_PREFIX, c.prefix.view());
  if (c.label.set()) octets(OSSL_KDF_PARAM_LABEL, c.label.view());
  if (c.data.set()) octets(OSSL_KDF_PARAM_DATA, c.data.view());
  params.push_back(OSSL_PARAM_construct_end());
  int ok = EVP_KDF_derive(kctx, out, out_size, params.data());
  EVP_KDF_CTX_free(kctx);
  return ok == 1 ? 1 : 0;
}

void* kdf_new(void*) { return new KdfCtx(); }

void* kdf_dup(void* ctx) { return new KdfCtx(*static_cast<const KdfCtx*>(ctx)); }

void kdf_free(void* ctx) { delete static_cast<KdfCtx*>(ctx); }

void kdf_reset(void* ctx) { static_cast<KdfCtx*>(ctx)->reset(); }

int kdf_derive(void* ctx, unsigned char* out, size_t out_size, const OSSL_PARAM params[]) {
  auto* c = static_cast<KdfCtx*>(ctx);
  if (set_params(c, params) != 1) return 0;
  if (out == nullptr) return 0;
  if (c->mode != EVP_KDF_HKDF_MODE_EXTRACT_ONLY && c->mode != EVP_KDF_HKDF_MODE_EXPAND_ONLY) {
    return fail(PROV_R_INVALID_MODE);
  }
  switch (c->digest) {
    case Digest::kNone:
      return fail(PROV_R_MISSING_MESSAGE_DIGEST);
    case Digest::kSha224:
      return derive_with<Sha224>(*c, out, out_size);
    case Digest::kSha256:
      return derive_with<Sha256>(*c, out, out_size);
    case Digest::kSha384:
      return derive_with<Sha384>(*c, out, out_size);
    case Digest::kSha512:
      return derive_with<Sha512>(*c, out, out_size);
    case Digest::kOther:
      break;
  }
  return derive_elsewhere(*c, out, out_size);
}

int kdf_set_ctx_params(void* ctx, const OSSL_PARAM params[]) {
  return set_params(static_cast<KdfCtx*>(ctx), params);
}

const OSSL_PARAM* kdf_settable_ctx_params(void*, void*) {
  static const OSSL_PARAM kSettable[] = {
      OSSL_PARAM_utf8_string(OSSL_KDF_PARAM_MODE, nullptr, 0),
      OSSL_PARAM_int(OSSL_KDF_PARAM_MODE, nullptr),
      OSSL_PARAM_utf8_string(OSSL_KDF_PARAM_PROPERTIES, nullptr, 0),
      OSSL_PARAM_utf8_string(OSSL_KDF_PARAM_DIGEST, nullptr, 0),
      OSSL_PARAM_octet_string(OSSL_KDF_PARAM_KEY, nullptr, 0),
      OSSL_PARAM_octet_string(OSSL_KDF_PARAM_SALT, nullptr, 0),
      OSSL_PARAM_octet_string(OSSL_KDF_PARAM_PREFIX, nullptr, 0),
      OSSL_PARAM_octet_string(OSSL_KDF_PARAM_LABEL, nullptr, 0),
      OSSL_PARAM_octet_string(OSSL_KDF_PARAM_DATA, nullptr, 0),
      OSSL_PARAM_END,
  };
  return kSettable;
}

// kdf_get_ctx_params answers "size": the digest's size in EXTRACT_ONLY mode, otherwise
// unbounded (SIZE_MAX), as OpenSSL's does.
int kdf_get_ctx_params(void* ctx, OSSL_PARAM params[]) {
  const auto* c = static_cast<const KdfCtx*>(ctx);
  OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_KDF_PARAM_SIZE);
  if (p == nullptr) return 1;
  size_t size = std::numeric_limits<size_t>::max();
  if (c->mode == EVP_KDF_HKDF_MODE_EXTRACT_ONLY) {
    size = md_size(*c);
    if (size == 0) return fail(PROV_R_MISSING_MESSAGE_DIGEST);
  }
  return OSSL_PARAM_set_size_t(p, size);
}

const OSSL_PARAM* kdf_gettable_ctx_params(void*, void*) {
  static const OSSL_PARAM kGettable[] = {
      OSSL_PARAM_size_t(OSSL_KDF_PARAM_SIZE, nullptr),
      OSSL_PARAM_END,
  };
  return kGettable;
}

const OSSL_DISPATCH kTls13KdfFunctions[] = {
    {OSSL_FUNC_KDF_NEWCTX, as_function(kdf_new)},
    {OSSL_FUNC_KDF_DUPCTX, as_function(kdf_dup)},
    {OSSL_FUNC_KDF_FREECTX, as_function(kdf_free)},
    {OSSL_FUNC_KDF_RESET, as_function(kdf_reset)},
    {OSSL_FUNC_KDF_DERIVE, as_function(kdf_derive)},
    {OSSL_FUNC_KDF_SETTABLE_CTX_PARAMS, as_function(kdf_settable_ctx_params)},
    {OSSL_FUNC_KDF_SET_CTX_PARAMS, as_function(kdf_set_ctx_params)},
    {OSSL_FUNC_KDF_GETTABLE_CTX_PARAMS, as_function(kdf_gettable_ctx_params)},
    {OSSL_FUNC_KDF_GET_CTX_PARAMS, as_function(kdf_get_ctx_params)},
    {0, nullptr},
};

const OSSL_ALGORITHM kKdfAlgorithms[] = {
    {OSSL_KDF_NAME_TLS1_3_KDF, "provider=accelgate", kTls13KdfFunctions,
     "TLS 1.3 key schedule (HKDF-Expand-Label, Derive-Secret and Extract) on SHA-2 directly"},
    {nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

const OSSL_ALGORITHM* kdf_algorithms() { return kKdfAlgorithms; }

uint64_t tls13_kdf_delegations() { return g_delegated.load(std::memory_order_relaxed); }

}  // namespace accelgate::provider
