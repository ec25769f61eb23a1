// load_config and parse_config_text: read, parse, build; every failure becomes an Error.

#include "accelgate/config/config.h"

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <new>

#include "builder.h"
#include "parser.h"

namespace accelgate::config {
namespace {

std::string current_dir() {
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec) throw ConfigError{"cannot get the current directory: " + ec.message()};
  return cwd.string();
}

// absolute_path makes |path| absolute against |base| and normalises it ("a/../b" -> "b").
std::string absolute_path(const std::string& path, const std::string& base) {
  std::filesystem::path p(path);
  if (p.is_relative()) p = std::filesystem::path(base) / p;
  std::string out = p.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string parent_dir(const std::string& file) {
  std::string dir = std::filesystem::path(file).parent_path().string();
  return dir.empty() ? "/" : dir;
}

std::shared_ptr<const Config> build(const std::string& text, const std::string& display_name,
                                    const std::string& file, const std::string& base_dir,
                                    const std::string& prefix) {
  Parser parser(base_dir);
  std::vector<Directive> top = parser.parse(text, display_name, file);
  Builder builder(prefix, base_dir);
  builder.build(top);
  std::shared_ptr<Config> config = builder.finish();
  config->file = file;
  return config;
}

// guarded runs |body| and turns anything it throws into an Error: load_config and
// parse_config_text never throw (the server calls them on reload).
template <typename Body>
Result<std::shared_ptr<const Config>> guarded(Body body) {
  try {
    return body();
  } catch (const ConfigError& e) {
    return Error{e.message};
  } catch (const std::bad_alloc&) {
    return Error{"out of memory while loading the configuration"};
  } catch (const std::exception& e) {
    return Error{std::string("cannot load the configuration: ") + e.what()};
  } catch (...) {
    return Error{"cannot load the configuration: unknown error"};
  }
}

}  // namespace

Result<std::shared_ptr<const Config>> load_config(const LoadOptions& options) {
  return guarded([&] {
    std::string cwd = current_dir();
    std::string prefix = options.prefix.empty() ? cwd : absolute_path(options.prefix, cwd);
    if (options.file.empty()) throw ConfigError{"no configuration file given"};
    std::string file = absolute_path(options.file, cwd);
    std::string text = read_config_file(file, "configuration file", nullptr);
    return build(text, file, file, parent_dir(file), prefix);
  });
}

Result<std::shared_ptr<const Config>> parse_config_text(const std::string& text,
                                                        const std::string& name,
                                                        const std::string& base_dir) {
  return guarded([&] {
    std::string cwd = current_dir();
    std::string dir = absolute_path(base_dir.empty() ? "." : base_dir, cwd);
    std::string file = absolute_path(name, dir);
    return build(text, name, file, dir, cwd);
  });
}

}  // namespace accelgate::config
