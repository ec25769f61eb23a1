#pragma once

// The error log: one process-wide sink shared by all threads, nginx's levels, one write(2) per line
// (O_APPEND keeps lines whole across threads). The level is checked before formatting, so a
// disabled level costs one relaxed load.

#include <atomic>
#include <cstdarg>
#include <optional>
#include <string>
#include <string_view>

#include "accelgate/common/result.h"

namespace accelgate {

// nginx's error_log levels, from most to least verbose.
enum class LogLevel { kDebug, kInfo, kNotice, kWarn, kError, kCrit, kAlert, kEmerg };

// parse_log_level maps "debug" ... "emerg" to a level.
std::optional<LogLevel> parse_log_level(std::string_view name);
const char* log_level_name(LogLevel level);

namespace log {

// open_error_log points the log at |path| ("stderr" for standard error) with |level|. Safe to call
// while other threads log (reload): the old file is closed after the switch.
Status open_error_log(const std::string& path, LogLevel level);

// reopen_error_log reopens the current file (SIGUSR1, after logrotate moved it).
Status reopen_error_log();

bool enabled(LogLevel level);

// write formats one line: "2026/11/30 02:31:40 [error] 1234#5: message".
void write(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void vwrite(LogLevel level, const char* fmt, va_list args);

}  // namespace log
}  // namespace accelgate

#define AG_LOG(level, ...)                                                             \
  do {                                                                                 \
    if (::accelgate::log::enabled(level)) ::accelgate::log::write(level, __VA_ARGS__); \
  } while (0)
#define AG_LOG_DEBUG(...) AG_LOG(::accelgate::LogLevel::kDebug, __VA_ARGS__)
#define AG_LOG_INFO(...) AG_LOG(::accelgate::LogLevel::kInfo, __VA_ARGS__)
#define AG_LOG_NOTICE(...) AG_LOG(::accelgate::LogLevel::kNotice, __VA_ARGS__)
#define AG_LOG_WARN(...) AG_LOG(::accelgate::LogLevel::kWarn, __VA_ARGS__)
#define AG_LOG_ERROR(...) AG_LOG(::accelgate::LogLevel::kError, __VA_ARGS__)
#define AG_LOG_CRIT(...) AG_LOG(::accelgate::LogLevel::kCrit, __VA_ARGS__)
#define AG_LOG_ALERT(...) AG_LOG(::accelgate::LogLevel::kAlert, __VA_ARGS__)
