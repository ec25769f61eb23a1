#pragma once

// Lexer splits nginx-syntax text into words and the three punctuation tokens ';', '{' and '}'.
// Comments (`#` at the start of a word, to the end of the line) and whitespace are skipped;
// quoted words lose their quotes and have \" \' \\ \n \r \t unescaped; `$var` and `${var}` stay
// verbatim in the word.

#include <string>
#include <string_view>

#include "ast.h"

namespace accelgate::config {

struct Token {
  enum class Kind { kWord, kSemicolon, kOpenBrace, kCloseBrace, kEnd };
  Kind kind = Kind::kEnd;
  std::string text;  // the word, unescaped (kWord only)
  int line = 0;
};

// Lexer reads |text| (not owned; must outlive the Lexer). |file| names it in error messages.
class Lexer {
 public:
  Lexer(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  // next returns the next token; throws ConfigError on an unterminated quoted string or a
  // character glued to a closing quote.
  Token next();

  const std::string& file() const { return file_; }
  int line() const { return line_; }

 private:
  Token read_quoted(char quote);
  Token read_word();
  // append_escape consumes the character after a backslash and appends what it stands for.
  void append_escape(std::string* text);
  [[noreturn]] void fail_at(int line, const std::string& message) const;

  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
  int line_ = 1;
};

// unescape_char maps the character after a backslash to what it stands for, or returns 0 when
// the pair is kept verbatim (as nginx keeps `\.` in a regex).
char unescape_char(char c);

}  // namespace accelgate::config
