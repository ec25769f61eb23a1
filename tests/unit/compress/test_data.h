#pragma once

// Test inputs for the codecs: web-like text (HTML, CSS, JS, JSON) and binary bytes, generated
// deterministically (no fixtures), and gunzip through zlib's inflate for checking outputs.

#include <zlib.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace accelgate::compress::testing {

enum class Kind { kHtml, kCss, kJs, kJson, kBinary };
inline constexpr Kind kKinds[] = {Kind::kHtml, Kind::kCss, Kind::kJs, Kind::kJson, Kind::kBinary};

inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kHtml:
      return "html";
    case Kind::kCss:
      return "css";
    case Kind::kJs:
      return "js";
    case Kind::kJson:
      return "json";
    case Kind::kBinary:
      return "binary";
  }
  return "?";
}

// make_input returns |size| bytes of kind |k|, the same for the same (k, size, seed).
inline std::vector<uint8_t> make_input(Kind k, size_t size, uint32_t seed = 1) {
  std::mt19937 rng(seed * 7919 + static_cast<uint32_t>(k));
  std::vector<uint8_t> out;
  out.reserve(size + 64);
  if (k == Kind::kBinary) {
    while (out.size() < size) out.push_back(static_cast<uint8_t>(rng()));
    return out;
  }
  static const char* const kWords[] = {"alpha", "beta",   "gamma",  "delta", "header", "footer",
                                       "main",  "button", "active", "value", "item",   "list",
                                       "title", "color",  "margin", "0px",   "true",   "null"};
  auto word = [&] { return std::string(kWords[rng() % std::size(kWords)]); };
  auto number = [&] { return std::to_string(rng() % 100000); };
  while (out.size() < size) {
    std::string piece;
    switch (k) {
      case Kind::kHtml:
        piece = "<div class=\"" + word() + " " + word() + "\"><a href=\"/" + word() + "/" +
                number() + ".html\">" + word() + " " + word() + "</a></div>\n";
        break;
      case Kind::kCss:
        piece = "." + word() + "-" + word() + " { " + word() + ": " + number() + "px; color: #" +
                number() + "; }\n";
        break;
      case Kind::kJs:
        piece = "function " + word() + number() + "(a, b) { return a." + word() + " + b[" +
                number() + "]; }\n";
        break;
      case Kind::kJson:
        piece = "{\"" + word() + "\": " + number() + ", \"" + word() + "\": \"" + word() +
                "\", \"list\": [" + number() + ", " + number() + "]},\n";
        break;
      case Kind::kBinary:
        break;
    }
    out.insert(out.end(), piece.begin(), piece.end());
  }
  out.resize(size);
  return out;
}

// gunzip decompresses exactly one gzip member that must fill |data| completely; false when the
// stream is malformed, truncated, has a bad CRC or length, or has bytes after it.
inline bool gunzip(const uint8_t* data, size_t size, std::vector<uint8_t>* out) {
  z_stream z{};
  if (inflateInit2(&z, 16 + 15) != Z_OK) return false;
  out->clear();
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  uint8_t buf[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = buf;
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    out->insert(out->end(), buf, buf + (sizeof(buf) - z.avail_out));
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // truncated
  }
  bool ok = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  return ok;
}

inline bool gunzip(const std::vector<uint8_t>& data, std::vector<uint8_t>* out) {
  return gunzip(data.data(), data.size(), out);
}

}  // namespace accelgate::compress::testing
