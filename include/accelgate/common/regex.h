#pragma once

// Regex: a compiled PCRE2 pattern (the syntax nginx's regular expressions use), for directives
// that match request headers (`gzip_disable`). Compiled once when the configuration loads and
// shared read-only by every worker thread; matching is thread-safe and allocates nothing after a
// thread's first match.

#include <memory>
#include <string>
#include <string_view>

#include "accelgate/common/result.h"

namespace accelgate {

class Regex {
 public:
  // compile returns the pattern compiled (JIT where available), or an Error whose message
  // says what is wrong and at which offset.
  static Result<std::shared_ptr<const Regex>> compile(std::string_view pattern, bool caseless);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // search says whether the pattern matches anywhere in |subject|. A match that runs into
  // PCRE2's match limit (a pathological pattern on a long header) counts as no match.
  bool search(std::string_view subject) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex(std::string pattern, void* code) : pattern_(std::move(pattern)), code_(code) {}
  std::string pattern_;
  void* code_;  // pcre2_code_8*
};

}  // namespace accelgate
