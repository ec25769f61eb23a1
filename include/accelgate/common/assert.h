#pragma once

// AG_ASSERT checks an impossible state in debug builds; AG_RELEASE_ASSERT in every build. Both
// abort with the file, line and expression: an impossible state is never handled as an error.

#include <cstdio>
#include <cstdlib>

#define AG_RELEASE_ASSERT(cond)                                                              \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "accelgate: assertion failed at %s:%d: %s\n", __FILE__, __LINE__, \
                   #cond);                                                                   \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

#ifdef NDEBUG
#define AG_ASSERT(cond) \
  do {                  \
  } while (0)
#else
#define AG_ASSERT(cond) AG_RELEASE_ASSERT(cond)
#endif
