# The pool, emu and mb engines (included from tests/unit/offload/CMakeLists.txt). The tests reach the
# engines' private headers (the submission queue, engines.h) under src/offload.
ag_unit_test(pool_engine_test SOURCES pool_engine_test.cc LIBS ag_offload)
target_include_directories(pool_engine_test PRIVATE ${PROJECT_SOURCE_DIR}/src/offload)
ag_unit_test(emu_engine_test SOURCES emu_engine_test.cc LIBS ag_offload)
target_include_directories(emu_engine_test PRIVATE ${PROJECT_SOURCE_DIR}/src/offload)
ag_unit_test(mb_engine_test SOURCES mb_engine_test.cc LIBS ag_offload)
target_include_directories(mb_engine_test PRIVATE ${PROJECT_SOURCE_DIR}/src/offload)
