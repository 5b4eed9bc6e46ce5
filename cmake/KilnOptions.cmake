# Compile options shared by every Kiln target.
#
# kiln_core_target(T): the core library rule — C++20, warnings (errors under
# KILN_WERROR), no exceptions, no RTTI needs, hidden visibility. Code that
# talks to a throwing dependency (protobuf) opts back into exceptions with
# kiln_allow_exceptions(T) and catches at its boundary.
set(KILN_WARNINGS -Wall -Wextra -Wpedantic $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local> -Wno-missing-field-initializers -Wno-unused-parameter)
if(KILN_WERROR)
  list(APPEND KILN_WARNINGS -Werror)
endif()

if(KILN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# The ThreadSanitizer build (tests/tsan/): every target instrumented, so a
# race between two of Kiln's threads is reported wherever it is.
if(KILN_TSAN)
  if(KILN_SANITIZE OR KILN_BUILD_FUZZERS)
    message(FATAL_ERROR "KILN_TSAN cannot be combined with KILN_SANITIZE or KILN_BUILD_FUZZERS (one sanitizer runtime per process)")
  endif()
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# The fuzz build (fuzz/): everything compiled with ASan+UBSan and libFuzzer's
# coverage instrumentation; only the fuzz executables link the fuzzer main.
if(KILN_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "KILN_BUILD_FUZZERS needs clang (CC=clang CXX=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

function(kiln_core_target target)
  target_compile_options(${target} PRIVATE ${KILN_WARNINGS} -fno-exceptions)
  set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
endfunction()

function(kiln_allow_exceptions target)
  target_compile_options(${target} PRIVATE -fexceptions)
endfunction()

# kiln_test(NAME SOURCES... LIBS ...): a GoogleTest binary registered with ctest.
function(kiln_test name)
  cmake_parse_arguments(KT "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${KT_SOURCES})
  target_compile_options(${name} PRIVATE ${KILN_WARNINGS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${name} PRIVATE ${KT_LIBS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
endfunction()
