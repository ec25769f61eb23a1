#include "lexer.h"

namespace accelgate::config {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// ends_word says whether |c| ends an unquoted word. As in nginx, '}' does not: `${var}` and
// `a}` are single words, and "a}" before the end of a block is then an error the parser reports.
bool ends_word(char c) { return is_space(c) || c == ';' || c == '{'; }

}  // namespace

void fail(const SourceLocation& where, const std::string& message) {
  throw ConfigError{where.file + ":" + std::to_string(where.line) + ": " + message};
}

char unescape_char(char c) {
  switch (c) {
    case '"':
    case '\'':
    case '\\':
      return c;
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    default:
      return 0;
  }
}

void Lexer::fail_at(int line, const std::string& message) const {
  fail(SourceLocation{file_, line}, message);
}

Token Lexer::next() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '\n') {
      ++line_;
      ++pos_;
    } else if (is_space(c)) {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
  if (pos_ >= text_.size()) return Token{Token::Kind::kEnd, {}, line_};
  char c = text_[pos_];
  switch (c) {
    case ';':
      ++pos_;
      return Token{Token::Kind::kSemicolon, {}, line_};
    case '{':
      ++pos_;
      return Token{Token::Kind::kOpenBrace, {}, line_};
    case '}':
      ++pos_;
      return Token{Token::Kind::kCloseBrace, {}, line_};
    case '"':
    case '\'':
      ++pos_;
      return read_quoted(c);
    default:
      return read_word();
  }
}

void Lexer::append_escape(std::string* text) {
  char next = text_[pos_++];
  if (next == '\n') ++line_;
  if (char plain = unescape_char(next)) {
    *text += plain;
  } else {
    *text += '\\';
    *text += next;
  }
}

Token Lexer::read_quoted(char quote) {
  Token token{Token::Kind::kWord, {}, line_};
  for (;;) {
    if (pos_ >= text_.size()) fail_at(token.line, "unterminated quoted string");
    char c = text_[pos_++];
    if (c == quote) break;
    if (c == '\n') ++line_;
    if (c == '\\' && pos_ < text_.size()) {
      append_escape(&token.text);
      continue;
    }
    token.text += c;
  }
  // nginx wants a separator after a closing quote: `"a"b` is a mistake, not the word "ab".
  if (pos_ < text_.size()) {
    char c = text_[pos_];
    if (!is_space(c) && c != ';' && c != '{' && c != '}') {
      fail_at(line_, std::string("unexpected '") + c + "' after a quoted string");
    }
  }
  return token;
}

Token Lexer::read_word() {
  Token token{Token::Kind::kWord, {}, line_};
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (ends_word(c)) break;
    ++pos_;
    if (c == '\\' && pos_ < text_.size()) {
      // A backslash keeps the next character in the word, even a separator.
      append_escape(&token.text);
      continue;
    }
    token.text += c;
    // `${` keeps the brace in the word instead of opening a block.
    if (c == '$' && pos_ < text_.size() && text_[pos_] == '{') {
      token.text += '{';
      ++pos_;
    }
  }
  return token;
}

}  // namespace accelgate::config
