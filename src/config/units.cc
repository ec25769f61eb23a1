#include "units.h"

namespace accelgate::config {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// read_digits consumes the digits at |text|[|pos|...] into |value|; false when there are none or
// the value does not fit.
bool read_digits(std::string_view text, size_t& pos, uint64_t& value) {
  size_t start = pos;
  value = 0;
  while (pos < text.size() && is_digit(text[pos])) {
    if (__builtin_mul_overflow(value, 10u, &value) ||
        __builtin_add_overflow(value, static_cast<uint64_t>(text[pos] - '0'), &value)) {
      return false;
    }
    ++pos;
  }
  return pos > start;
}

}  // namespace

std::optional<uint64_t> parse_number(std::string_view text) {
  size_t pos = 0;
  uint64_t value = 0;
  if (!read_digits(text, pos, value) || pos != text.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> parse_size(std::string_view text) {
  size_t pos = 0;
  uint64_t value = 0;
  if (!read_digits(text, pos, value)) return std::nullopt;
  uint64_t scale = 1;
  if (pos + 1 == text.size()) {
    switch (text[pos]) {
      case 'k':
      case 'K':
        scale = uint64_t{1} << 10;
        break;
      case 'm':
      case 'M':
        scale = uint64_t{1} << 20;
        break;
      case 'g':
      case 'G':
        scale = uint64_t{1} << 30;
        break;
      default:
        return std::nullopt;
    }
  } else if (pos != text.size()) {
    return std::nullopt;
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(value, scale, &bytes)) return std::nullopt;
  return bytes;
}

std::optional<Millis> parse_time(std::string_view text) {
  // Units from the largest down; a part must use a smaller unit than the part before it.
  struct Unit {
    std::string_view name;
    uint64_t ms;
  };
  static constexpr Unit kUnits[] = {
      {"y", 365ull * 86'400'000},
      {"M", 30ull * 86'400'000},
      {"w", 7ull * 86'400'000},
      {"d", 86'400'000},
      {"h", 3'600'000},
      {"ms", 1},
      {"m", 60'000},
      {"s", 1000},
  };
  // Rank of each unit in decreasing size; "ms" is listed before "m" above only so that the
  // longer name is tried first.
  auto rank = [](std::string_view name) {
    static constexpr std::string_view kOrder[] = {"y", "M", "w", "d", "h", "m", "s", "ms"};
    for (size_t i = 0; i < std::size(kOrder); ++i) {
      if (kOrder[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  constexpr uint64_t kMaxMs = static_cast<uint64_t>(kMaxTimeSeconds) * 1000;
  size_t pos = 0;
  uint64_t total = 0;
  int last_rank = -1;
  bool any = false;
  while (pos < text.size()) {
    uint64_t value = 0;
    if (!read_digits(text, pos, value)) return std::nullopt;
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.substr(pos, u.name.size()) == u.name) {
        unit = &u;
        break;
      }
    }
    int this_rank = 0;
    uint64_t scale = 1000;  // a part without a unit is seconds
    if (unit != nullptr) {
      pos += unit->name.size();
      this_rank = rank(unit->name);
      scale = unit->ms;
    } else {
      this_rank = rank("s");
    }
    if (this_rank <= last_rank) return std::nullopt;
    last_rank = this_rank;
    uint64_t part = 0;
    if (__builtin_mul_overflow(value, scale, &part) ||
        __builtin_add_overflow(total, part, &total) || total > kMaxMs) {
      return std::nullopt;
    }
    any = true;
    if (unit == nullptr && pos != text.size()) return std::nullopt;
    while (pos < text.size() && text[pos] == ' ') ++pos;
  }
  if (!any) return std::nullopt;
  return Millis(static_cast<int64_t>(total));
}

std::optional<bool> parse_flag(std::string_view text) {
  if (text == "on") return true;
  if (text == "off") return false;
  return std::nullopt;
}

}  // namespace accelgate::config
