#include "parser.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "lexer.h"

namespace accelgate::config {
namespace {

// FileCloser closes a descriptor on every way out of read_config_file.
struct FileCloser {
  int fd;
  ~FileCloser() { ::close(fd); }
};

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// escape_glob protects the characters glob(3) treats specially in a directory name that is
// prefixed to an operator's pattern.
std::string escape_glob(const std::string& dir) {
  std::string out;
  for (char c : dir) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// canonical_path resolves links so that two spellings of one file compare equal; a path that
// cannot be resolved is compared as written.
std::string canonical_path(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) != nullptr) return buf;
  return path;
}

}  // namespace

std::string read_config_file(const std::string& path, const std::string& what,
                             const SourceLocation* from) {
  auto failed = [&](const std::string& why) -> std::string {
    std::string message = "cannot open " + what + " " + quoted(path) + ": " + why;
    if (from != nullptr) fail(*from, message);
    throw ConfigError{message};
  };
  // O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read anyway.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) failed(std::strerror(errno));
  FileCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) failed(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) failed("is a directory");
  if (!S_ISREG(st.st_mode)) failed("not a regular file");
  std::string text;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      failed(std::strerror(errno));
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > kMaxFileSize) {
      failed("larger than " + std::to_string(kMaxFileSize >> 20) + " MiB");
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

std::vector<Directive> Parser::parse(std::string_view text, const std::string& display_name,
                                     const std::string& identity) {
  std::vector<Directive> out;
  include_stack_.push_back(canonical_path(identity));
  parse_file(text, display_name, 0, out);
  include_stack_.pop_back();
  return out;
}

void Parser::parse_file(std::string_view text, const std::string& name, int block_depth,
                        std::vector<Directive>& out) {
  Lexer lexer(text, name);
  parse_block(lexer, block_depth, nullptr, out);
}

void Parser::parse_block(Lexer& lexer, int block_depth, const Directive* open,
                         std::vector<Directive>& out) {
  std::vector<Token> words;
  auto here = [&](int line) { return SourceLocation{lexer.file(), line}; };
  auto make_directive = [&]() {
    Directive d;
    d.name = std::move(words.front().text);
    d.where = here(words.front().line);
    for (size_t i = 1; i < words.size(); ++i) d.args.push_back(std::move(words[i].text));
    words.clear();
    return d;
  };
  for (;;) {
    Token token = lexer.next();
    switch (token.kind) {
      case Token::Kind::kWord:
        words.push_back(std::move(token));
        break;
      case Token::Kind::kSemicolon: {
        if (words.empty()) fail(here(token.line), "unexpected ';'");
        Directive d = make_directive();
        if (d.name == "include") {
          expand_include(d, block_depth, out);
        } else {
          out.push_back(std::move(d));
        }
        break;
      }
      case Token::Kind::kOpenBrace: {
        if (words.empty()) fail(here(token.line), "unexpected '{'");
        Directive d = make_directive();
        d.has_block = true;
        d.block_where = here(token.line);
        if (d.name == "include") {
          fail(d.block_where, "directive \"include\" is not terminated by ';'");
        }
        if (block_depth + 1 > kMaxBlockDepth) {
          fail(d.block_where, "blocks nested deeper than " + std::to_string(kMaxBlockDepth));
        }
        parse_block(lexer, block_depth + 1, &d, d.children);
        out.push_back(std::move(d));
        break;
      }
      case Token::Kind::kCloseBrace:
        if (!words.empty() || open == nullptr) fail(here(token.line), "unexpected '}'");
        return;
      case Token::Kind::kEnd:
        if (!words.empty()) {
          fail(here(token.line), "unexpected end of file, expecting ';' or '}'");
        }
        if (open != nullptr) {
          fail(here(token.line), "unexpected end of file, expecting '}' to close \"" + open->name +
                                     "\" opened on line " + std::to_string(open->block_where.line));
        }
        return;
    }
  }
}

void Parser::expand_include(const Directive& include, int block_depth,
                            std::vector<Directive>& out) {
  if (include.args.size() != 1) {
    fail(include.where, "invalid number of arguments in \"include\" directive");
  }
  const std::string& pattern = include.args[0];
  if (pattern.empty()) fail(include.where, "empty path in \"include\" directive");
  bool absolute = pattern[0] == '/';
  std::vector<std::string> files;
  if (pattern.find_first_of("*?[") != std::string::npos) {
    std::string full = absolute ? pattern : escape_glob(base_dir_) + "/" + pattern;
    glob_t g{};
    int rc = ::glob(full.c_str(), 0, nullptr, &g);
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) files.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
    if (rc != 0 && rc != GLOB_NOMATCH) {
      fail(include.where, "glob(" + quoted(full) + ") failed");
    }
  } else {
    files.push_back(absolute ? pattern : base_dir_ + "/" + pattern);
  }
  if (include_stack_.size() >= static_cast<size_t>(kMaxIncludeDepth)) {
    fail(include.where, "includes nested deeper than " + std::to_string(kMaxIncludeDepth));
  }
  for (const std::string& file : files) {
    if (++files_read_ > kMaxIncludedFiles) {
      fail(include.where, "more than " + std::to_string(kMaxIncludedFiles) + " included files");
    }
    std::string identity = canonical_path(file);
    if (std::find(include_stack_.begin(), include_stack_.end(), identity) != include_stack_.end()) {
      fail(include.where, "recursive include of " + quoted(file));
    }
    std::string text = read_config_file(file, "included file", &include.where);
    include_stack_.push_back(std::move(identity));
    parse_file(text, file, block_depth, out);
    include_stack_.pop_back();
  }
}

}  // namespace accelgate::config
