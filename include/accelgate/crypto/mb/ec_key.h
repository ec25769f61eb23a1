#pragma once

// EcKey: a P-256 or P-384 private key prepared once for the multi-buffer EC kernels (issue 6):
// the private scalar d as little-endian 64-bit words, range-checked. Preparation is constant
// time in d (the valgrind test covers it), so it may run on the data path; it is cheap (a byte
// conversion and a comparison with n), but callers should still cache it per key.

#include <cstddef>
#include <cstdint>
#include <span>

namespace accelgate::crypto::mb {

// EcCurve is a short-Weierstrass curve the kernels support (FIPS 186-5 / SP 800-186).
enum class EcCurve {
  kP256,  // secp256r1, prime256v1
  kP384,  // secp384r1
};

// ec_field_bytes is the length in bytes of a field element, of a scalar and of each half (r, s)
// of a signature on |curve|: 32 or 48.
int ec_field_bytes(EcCurve curve);

// ec_curve_name is "P-256" or "P-384".
const char* ec_curve_name(EcCurve curve);

inline constexpr int kMaxEcFieldBytes = 48;
inline constexpr int kMaxEcWords = 6;  // 384 bits / 64

namespace detail {

// EcKeyMaterial is what the kernels read; plain data.
struct EcKeyMaterial {
  EcCurve curve = EcCurve::kP256;
  uint64_t d[kMaxEcWords] = {};  // private scalar, 1 <= d < n, little-endian words
};

}  // namespace detail

// EcKeyStatus says why prepare_ec_key refused a key; refused keys belong in software.
enum class EcKeyStatus {
  kOk,
  kBadLength,   // more bytes than ec_field_bytes(curve)
  kOutOfRange,  // d == 0 or d >= n
};

// ec_key_status_text is a short static description of |status|.
const char* ec_key_status_text(EcKeyStatus status);

// EcKey is immutable once prepared and may be shared by threads. It holds a secret: its
// destructor wipes it.
class EcKey {
 public:
  EcKey() = default;
  EcKey(const EcKey&) = default;
  EcKey& operator=(const EcKey&) = default;
  ~EcKey();

  EcCurve curve() const { return material_.curve; }
  const detail::EcKeyMaterial& material() const { return material_; }

  // prepare_ec_key fills |out| from the big-endian private scalar |d_be| (any length up to
  // ec_field_bytes(curve); leading zeros are fine). The range check 1 <= d < n is computed
  // without a secret-dependent branch; only its verdict (public: a key is valid or not) is
  // branched on. The caller may wipe |d_be| afterwards.
  friend EcKeyStatus prepare_ec_key(EcCurve curve, std::span<const uint8_t> d_be, EcKey* out);

 private:
  detail::EcKeyMaterial material_{};
};

EcKeyStatus prepare_ec_key(EcCurve curve, std::span<const uint8_t> d_be, EcKey* out);

}  // namespace accelgate::crypto::mb
