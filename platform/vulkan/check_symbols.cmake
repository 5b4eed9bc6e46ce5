# Fails when the shared library LIB exports a vk* or volk* symbol.
# Usage: cmake -DNM=<nm> -DLIB=<library> -P check_symbols.cmake
execute_process(COMMAND ${NM} -D --defined-only ${LIB} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${LIB}")
endif()
string(REGEX MATCHALL "[^\n]* (vk|volk)[A-Za-z0-9_]*\n" leaked "${symbols}")
if(leaked)
  message(FATAL_ERROR "${LIB} exports Vulkan symbols:\n${leaked}")
endif()
if(NOT symbols MATCHES "kiln_vulkan_symcheck")
  message(FATAL_ERROR "${LIB} does not export its marker symbol; the check saw the wrong library")
endif()
message(STATUS "${LIB}: no vk*/volk* symbols exported")
