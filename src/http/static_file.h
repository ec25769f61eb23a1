#pragma once

// Static files: maps a decoded path under a location's root to a file and decides the status
// (200, 206, 304, 301 to add a slash, 403, 404, 416) from the conditional and range headers.

#include <sys/types.h>

#include <string>

#include "accelgate/config/config.h"
#include "accelgate/http/parser.h"

namespace accelgate::http {

// StaticFile is the outcome of open_static_file. With status 200 or 206 |fd| is an open file the
// caller must close; |offset| and |length| give the bytes to send.
struct StaticFile {
  int status = 0;
  int fd = -1;
  off_t offset = 0;
  off_t length = 0;
  off_t file_size = 0;
  time_t mtime = 0;
  std::string etag;  // nginx's form: "<mtime hex>-<size hex>"
  std::string content_type;
  std::string redirect;  // with 301: the path with a trailing slash
  // With 200, 206, 304: the file opened (the index file for a directory) and its identity, which
  // the gzip cache keys on.
  std::string file_path;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  uint64_t device = 0;
};

// open_static_file resolves |path| (decoded and normalised, starting with '/') against the
// location's root and index list. |head| supplies If-None-Match, If-Modified-Since, Range and
// If-Range. Never follows a path outside the root: the path has no dot segments by construction.
// |suffix| is appended to the file name opened (".gz" for gzip_static), while the content type
// still comes from |path|; a path ending in '/' takes no suffix.
StaticFile open_static_file(const config::LocationSettings& settings, const std::string& path,
                            const RequestHead& head, std::string_view suffix = {});

}  // namespace accelgate::http
