// fuzz_config feeds arbitrary text to parse_config_text. Includes resolve against a directory
// that does not exist, so relative ones fail cleanly; inputs that could include an absolute path
// are skipped, so a run never reads (or globs) the real file system.

#include <cstddef>
#include <cstdint>
#include <string>

#include "accelgate/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find("include") != std::string::npos && text.find('/') != std::string::npos) return 0;
  auto result =
      accelgate::config::parse_config_text(text, "fuzz.conf", "/nonexistent-accelgate-fuzz-dir");
  // Every failure is a message that names a line.
  if (!result.ok() && result.error().message.empty()) __builtin_trap();
  return 0;
}
