#define PCRE2_CODE_UNIT_WIDTH 8
#include "accelgate/common/regex.h"

#include <pcre2.h>

namespace accelgate {
namespace {

// kMatchLimit bounds the backtracking of one match (PCRE2's default is ten million), so a
// pathological pattern cannot spend a worker's time on a long User-Agent.
constexpr uint32_t kMatchLimit = 100000;

// ThreadMatchState is what pcre2_match needs per call, made once per thread.
struct ThreadMatchState {
  ThreadMatchState()
      : data(pcre2_match_data_create(1, nullptr)), context(pcre2_match_context_create(nullptr)) {
    if (context != nullptr) pcre2_set_match_limit(context, kMatchLimit);
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
  pcre2_match_data* data;
  pcre2_match_context* context;
};

}  // namespace

Result<std::shared_ptr<const Regex>> Regex::compile(std::string_view pattern, bool caseless) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  uint32_t options = caseless ? PCRE2_CASELESS : 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR text[256];
    pcre2_get_error_message(error, text, sizeof(text));
    return Error{std::string(reinterpret_cast<const char*>(text)) + " at offset " +
                 std::to_string(offset)};
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // failure just means the interpreter is used
  return std::shared_ptr<const Regex>(new Regex(std::string(pattern), code));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

bool Regex::search(std::string_view subject) const {
  thread_local ThreadMatchState state;
  if (state.data == nullptr) return false;
  int rc = pcre2_match(static_cast<const pcre2_code*>(code_),
                       reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                       state.data, state.context);
  return rc >= 0;
}

}  // namespace accelgate
