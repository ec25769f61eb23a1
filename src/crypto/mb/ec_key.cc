// ec_key.cc: turns a private scalar into the words the EC kernels read, with the range check
// 1 <= d < n computed in constant time (a borrow chain and an OR of the words) and returned
// without a branch on it.

#include "accelgate/crypto/mb/ec_key.h"

#include <cstring>  // explicit_bzero (glibc, declared by string.h)

#include "ec_curves.h"

namespace accelgate::crypto::mb {
namespace {

constexpr detail::BigWords<kMaxEcWords> kP256Order =
    detail::words_from_hex<kMaxEcWords>(detail::kP256Hex.n);
constexpr detail::BigWords<kMaxEcWords> kP384Order =
    detail::words_from_hex<kMaxEcWords>(detail::kP384Hex.n);

}  // namespace

int ec_field_bytes(EcCurve curve) { return curve == EcCurve::kP256 ? 32 : 48; }

const char* ec_curve_name(EcCurve curve) { return curve == EcCurve::kP256 ? "P-256" : "P-384"; }

const char* ec_key_status_text(EcKeyStatus status) {
  switch (status) {
    case EcKeyStatus::kOk:
      return "ok";
    case EcKeyStatus::kBadLength:
      return "private scalar longer than the field";
    case EcKeyStatus::kOutOfRange:
      return "private scalar not in [1, n-1]";
  }
  return "unknown";
}

EcKey::~EcKey() { explicit_bzero(&material_, sizeof(material_)); }

EcKeyStatus prepare_ec_key(EcCurve curve, std::span<const uint8_t> d_be, EcKey* out) {
  const auto field = static_cast<size_t>(ec_field_bytes(curve));
  if (d_be.size() > field) return EcKeyStatus::kBadLength;
  detail::EcKeyMaterial m;
  m.curve = curve;
  const size_t len = d_be.size();
  for (size_t i = 0; i < len; ++i) {
    const size_t bit = 8 * (len - 1 - i);
    m.d[bit / 64] |= uint64_t{d_be[i]} << (bit % 64);
  }
  const uint64_t* n = curve == EcCurve::kP256 ? kP256Order.w : kP384Order.w;
  const int words = static_cast<int>(field / 8);
  uint64_t borrow = 0;
  uint64_t any = 0;
  for (int i = 0; i < words; ++i) {
    // The borrow out of d - n, by a 128-bit subtraction (sub/sbb, no branch).
    const uint64_t x = m.d[i];
    const unsigned __int128 t = static_cast<unsigned __int128>(x) - n[i] - borrow;
    borrow = static_cast<uint64_t>(t >> 64) & 1;
    any |= x;
  }
  // ok is 1 iff d < n and d != 0. No branch on it here: the verdict is public (a key is valid or
  // not), but it is the caller who branches on the returned status, after the secret work.
  const uint64_t ok = borrow & ((any | (0 - any)) >> 63);
  const uint64_t keep = 0 - ok;
  for (uint64_t& w : m.d) w &= keep;  // an invalid key leaves an all-zero scalar behind
  out->material_ = m;
  explicit_bzero(&m, sizeof(m));
  constexpr auto kOk = static_cast<uint64_t>(EcKeyStatus::kOk);
  constexpr auto kBad = static_cast<uint64_t>(EcKeyStatus::kOutOfRange);
  return static_cast<EcKeyStatus>((kOk & keep) | (kBad & ~keep));
}

}  // namespace accelgate::crypto::mb
