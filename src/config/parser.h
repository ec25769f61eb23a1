#pragma once

// Parser turns nginx-syntax text into a Directive tree, reading `include`d files as it meets them
// and splicing their directives in place of the `include` (so `include` works in every block).

#include <string>
#include <string_view>
#include <vector>

#include "ast.h"

namespace accelgate::config {

// kMaxIncludeDepth bounds nested includes, kMaxBlockDepth nested blocks, kMaxIncludedFiles the
// files one configuration may read, kMaxFileSize one file: a loop or a runaway glob is an error,
// not a hang.
inline constexpr int kMaxIncludeDepth = 16;
inline constexpr int kMaxBlockDepth = 32;
inline constexpr int kMaxIncludedFiles = 1024;
inline constexpr size_t kMaxFileSize = 16u << 20;

// read_config_file returns the contents of the regular file |path|; on failure it throws a
// ConfigError naming |what| ("included file") and |path|, prefixed by |from| when it is set.
std::string read_config_file(const std::string& path, const std::string& what,
                             const SourceLocation* from);

class Parser {
 public:
  // |base_dir| is the absolute directory relative include paths resolve against.
  explicit Parser(std::string base_dir) : base_dir_(std::move(base_dir)) {}

  // parse reads the main file |text|. |display_name| names it in messages; |identity| is its
  // absolute path, used to catch a file that includes itself.
  std::vector<Directive> parse(std::string_view text, const std::string& display_name,
                               const std::string& identity);

 private:
  void parse_file(std::string_view text, const std::string& name, int block_depth,
                  std::vector<Directive>& out);
  // parse_block reads directives into |out| until the '}' closing |open| (or the end of the file
  // when |open| is null).
  void parse_block(class Lexer& lexer, int block_depth, const Directive* open,
                   std::vector<Directive>& out);
  void expand_include(const Directive& include, int block_depth, std::vector<Directive>& out);

  std::string base_dir_;
  std::vector<std::string> include_stack_;  // absolute paths of the files being read
  int files_read_ = 0;
};

}  // namespace accelgate::config
