#pragma once

// Result<T>: the value of a call that can fail, or an Error saying why. Used on every path where
// exceptions are not allowed (see STYLE.md, "Errors"). A small stand-in for C++23 std::expected.

#include <string>
#include <utility>
#include <variant>

namespace accelgate {

// Error is a human-readable message plus, where it applies, the errno that caused it.
struct Error {
  std::string message;
  int sys_errno = 0;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Status is Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

// sys_error builds an Error from |what| and errno, as "what: strerror(errno)".
Error sys_error(const std::string& what, int err);

}  // namespace accelgate
