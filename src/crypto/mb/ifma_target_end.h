// ifma_target_end.h: closes what ifma_target_begin.h opened (see there).

#pragma GCC diagnostic pop
#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
