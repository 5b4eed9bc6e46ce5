# `cmake --install <build> --prefix P`: what an installed Kiln consists of and
# how other projects find it.
#
#   P/include/kiln/             kiln.h, kiln.hpp (C API), kiln_plugin.h(pp) (plugin ABI)
#   P/lib/libkiln.so*           the C API library
#   P/bin/kiln                  the command-line tool (RPATH $ORIGIN/../lib)
#   P/lib/kiln/plugins/         in-tree plugins as loadable files; `kiln` also
#                               loads third-party plugins dropped here
#   P/lib/cmake/kiln/           find_package(kiln): kiln::kiln, kiln::plugin_headers
#   P/lib/pkgconfig/            kiln.pc (C API), kiln-plugin.pc (plugin headers only)
#
# Everything is relative to the prefix chosen at install time, so the same
# build installs anywhere (the .pc files use ${pcfiledir}, the CMake config
# its own location). Included from the top-level CMakeLists.txt after the
# targets exist; the per-target install() rules are next to the targets.
include(CMakePackageConfigHelpers)

# The plugin ABI as an interface target: a plugin needs only these headers,
# never libkiln (the host hands it a function table).
add_library(kiln_plugin_headers INTERFACE)
target_include_directories(kiln_plugin_headers INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                                         $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(kiln_plugin_headers PROPERTIES EXPORT_NAME plugin_headers)
add_library(kiln::plugin_headers ALIAS kiln_plugin_headers)
install(TARGETS kiln_plugin_headers EXPORT kilnTargets)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

# The loader finds installed plugins relative to the running executable (and
# libkiln relative to itself: engine/registry/in_tree_plugins.cc).
target_compile_definitions(kiln_registry PRIVATE KILN_PLUGIN_DIR_FROM_BINDIR="${KILN_PLUGIN_DIR_FROM_BINDIR}")
if(TARGET kiln_registry_test)
  target_compile_definitions(kiln_registry_test PRIVATE
                             KILN_PLUGIN_DIR_FROM_BINDIR_FOR_TEST="${KILN_PLUGIN_DIR_FROM_BINDIR}")
endif()

set(_kiln_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${_kiln_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/kilnConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake
                              INSTALL_DESTINATION ${_kiln_cmake_dir}
                              PATH_VARS KILN_INSTALL_PLUGINDIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x: the C API may still change between minor versions (the plugin ABI has
# its own version check at load time).
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kilnConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION ${_kiln_cmake_dir})

# pkg-config: the prefix is found from the .pc file's own directory.
set(_kiln_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH KILN_PC_TO_PREFIX /${_kiln_pc_dir} /)
string(REGEX REPLACE "/$" "" KILN_PC_TO_PREFIX "${KILN_PC_TO_PREFIX}")
foreach(_pc IN ITEMS kiln kiln-plugin)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${_pc}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${_pc}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${_pc}.pc DESTINATION ${_kiln_pc_dir})
endforeach()
