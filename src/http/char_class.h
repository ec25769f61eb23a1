#pragma once

// Character classes shared by the HTTP/1.x parser files (parser.cc, chunked.cc, path.cc). Private
// to src/http: not part of the public interface. One 256-entry table of bit flags, built at compile
// time, so each class test is one load and one AND on the hot path.

#include <array>
#include <cstdint>
#include <string_view>

namespace accelgate::http::internal {

enum CharClass : uint8_t {
  kTokenChar = 1 << 0,   // tchar, RFC 9110 §5.6.2
  kTargetChar = 1 << 1,  // bytes accepted in a request-target (see make_char_table)
  kValueChar = 1 << 2,   // field-vchar, SP, HTAB, obs-text (RFC 9110 §5.5)
  kHostChar = 1 << 3,    // reg-name, IPv4, IP-literal and ":" port (RFC 3986 §3.2.2)
  kHexChar = 1 << 4,     // HEXDIG
  kDigitChar = 1 << 5,   // DIGIT
  kCtlChar = 1 << 6,     // CTL other than HTAB, and DEL
};

constexpr std::array<uint8_t, 256> make_char_table() {
  std::array<uint8_t, 256> t{};
  constexpr std::string_view kTokenPunct = "!#$%&'*+-.^_`|~";
  constexpr std::string_view kHostPunct = "-._~!$&'()*+,;=%:[]";
  for (unsigned c = 0; c < 256; ++c) {
    const bool digit = c >= '0' && c <= '9';
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool vchar = c >= 0x21 && c <= 0x7e;
    uint8_t f = 0;
    if (digit || alpha || kTokenPunct.find(static_cast<char>(c)) != std::string_view::npos) {
      f |= kTokenChar;
    }
    // RFC 9112 §3.2: a request-target is a URI reference, so no whitespace or CTLs. '#' is refused
    // because a fragment is never sent (RFC 9110 §7.1). Bytes >= 0x80 are refused too, where nginx
    // passes them through; they are not valid in a URI and a client must percent-encode them.
    // Like nginx we accept the other ASCII printables that RFC 3986 leaves out ("<>\^`{|}):
    // clients send '|' and '{}' unencoded in query strings and refusing them breaks real traffic.
    if (vchar && c != '#') f |= kTargetChar;
    if (vchar || c == ' ' || c == '\t' || c >= 0x80) f |= kValueChar;
    if (digit || alpha || kHostPunct.find(static_cast<char>(c)) != std::string_view::npos) {
      f |= kHostChar;
    }
    if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) f |= kHexChar;
    if (digit) f |= kDigitChar;
    if ((c < 0x20 && c != '\t') || c == 0x7f) f |= kCtlChar;
    t[c] = f;
  }
  return t;
}

inline constexpr std::array<uint8_t, 256> kCharTable = make_char_table();

inline bool has_class(char c, uint8_t cls) {
  return (kCharTable[static_cast<unsigned char>(c)] & cls) != 0;
}

// hex_value is the value of a HEXDIG; |c| must be one.
inline unsigned hex_value(char c) {
  const unsigned u = static_cast<unsigned char>(c);
  return u <= '9' ? u - '0' : (u | 0x20) - 'a' + 10;
}

}  // namespace accelgate::http::internal
