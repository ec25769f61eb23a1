#pragma once

// Parsers for the value syntaxes nginx directives share: numbers, sizes, times, on/off flags.
// Each returns nullopt for text it does not accept (including on overflow); the caller names
// the directive in the error.

#include <cstdint>
#include <optional>
#include <string_view>

#include "accelgate/config/config.h"

namespace accelgate::config {

// parse_number accepts decimal digits only ("0" .. "18446744073709551615").
std::optional<uint64_t> parse_number(std::string_view text);

// parse_size accepts a number of bytes with an optional unit: k/K (KiB), m/M (MiB), g/G (GiB).
std::optional<uint64_t> parse_size(std::string_view text);

// kMaxTime is the longest time a directive takes: 2^31 - 1 seconds, about 68 years.
inline constexpr int64_t kMaxTimeSeconds = 0x7fffffff;

// parse_time accepts nginx's time syntax: one or more NUMBER UNIT parts, units in decreasing
// order among y (365 days), M (30 days), w, d, h, m, s, ms, optionally separated by spaces
// ("1h 30m", "1h30m"); a last part without a unit is seconds ("90" = 90s).
std::optional<Millis> parse_time(std::string_view text);

// parse_flag accepts "on" and "off".
std::optional<bool> parse_flag(std::string_view text);

}  // namespace accelgate::config
