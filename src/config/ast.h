#pragma once

// The untyped syntax tree of an nginx-syntax configuration: directives with their words and
// blocks, `include`s already spliced in. Private to src/config.

#include <string>
#include <vector>

#include "accelgate/config/config.h"

namespace accelgate::config {

// ConfigError carries one "file:line: message" line. It is thrown while a configuration is read
// and built, and caught by load_config() / parse_config_text(), which turn it into an Error.
struct ConfigError {
  std::string message;
};

// fail throws a ConfigError whose message is "|where.file|:|where.line|: |message|".
[[noreturn]] void fail(const SourceLocation& where, const std::string& message);

// Directive is one `name arg...;` or `name arg... { children }`. |where| is the line of its name;
// |block_where| the line of its '{' (only when |has_block|).
struct Directive {
  std::string name;
  std::vector<std::string> args;
  SourceLocation where;
  bool has_block = false;
  SourceLocation block_where;
  std::vector<Directive> children;
};

}  // namespace accelgate::config
